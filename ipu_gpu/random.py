"""``ipu_gpu.random``: the ``tf.random`` namespace (seeds, stateful and stateless ops,
``Generator``) and ``tf.random.experimental``. The ops live in ``ipu_gpu/ops/random.py``,
whose docstring describes the generator, the seed rules and the IPU replicas' streams."""

from __future__ import annotations

import sys
import types

from .ops.random import (Algorithm, Generator, categorical, create_rng_state, fold_in,
                         get_global_generator, normal, set_global_generator, set_seed, shuffle,
                         split, stateless_categorical, stateless_normal,
                         stateless_truncated_normal, stateless_uniform, truncated_normal,
                         uniform)

experimental = types.ModuleType(
    f"{__name__}.experimental",
    "``tf.random.experimental``: Generator, Algorithm and the stateless seed helpers.")
experimental.Algorithm = Algorithm
experimental.Generator = Generator
experimental.create_rng_state = create_rng_state
experimental.get_global_generator = get_global_generator
experimental.set_global_generator = set_global_generator
experimental.stateless_fold_in = fold_in
experimental.stateless_split = split
experimental.__all__ = ["Algorithm", "Generator", "create_rng_state", "get_global_generator",
                        "set_global_generator", "stateless_fold_in", "stateless_split"]
sys.modules[experimental.__name__] = experimental  # `from ipu_gpu.random.experimental import`

__all__ = ["Algorithm", "Generator", "categorical", "create_rng_state", "experimental",
           "fold_in", "get_global_generator", "normal", "set_global_generator", "set_seed",
           "shuffle", "split", "stateless_categorical", "stateless_normal",
           "stateless_truncated_normal", "stateless_uniform", "truncated_normal", "uniform"]
