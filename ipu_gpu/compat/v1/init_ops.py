"""``tf.compat.v1.initializers`` and the ``*_initializer`` factories that are not in
``variable_scope.py``: TF 1.15's names and defaults (``random_normal``: stddev 1.0,
``random_uniform``: [0, 1), ``variance_scaling``: truncated normal, fan_in, scale 1.0),
made of the Keras 2 initializers (the draws are Keras's, the distributions TF1's), plus the
variable-initializer ops TF1 keeps in the same module (``global_variables``,
``local_variables``, ``variables``, ``tables_initializer``).
"""

from __future__ import annotations

import math
import sys
import types

import numpy as np

import importlib

_vs = importlib.import_module(f"{__package__}.variable_scope")  # the package's
# ``variable_scope`` attribute is the function

__all__ = ["initializers", "orthogonal_initializer", "tables_initializer",
           "uniform_unit_scaling_initializer"]


def _keras():
    from ...keras import initializers

    return initializers


def orthogonal_initializer(gain=1.0, seed=None, dtype=np.float32):
    """A random orthogonal matrix (of the flattened leading dimensions by the last one) times
    ``gain`` (TF1's ``Orthogonal``, Saxe et al. 2014)."""
    return _keras().Orthogonal(gain=gain, seed=seed)


def _identity(gain=1.0, dtype=np.float32):
    """``gain`` times the identity matrix (2-D shapes only)."""
    return _keras().Identity(gain=gain)


class _UniformUnitScaling:
    """TF1's deprecated ``UniformUnitScaling``: uniform on ``[-m, m]``, ``m = factor *
    sqrt(3 / input_size)``, ``input_size`` the product of every dimension but the last (1
    for a vector)."""

    def __init__(self, factor=1.0, seed=None, dtype=np.float32):
        self.factor, self.seed, self.dtype = float(factor), seed, dtype

    def __call__(self, shape, dtype=None, partition_info=None):
        from ...keras.initializers import RandomUniform

        shape = [int(d) for d in shape]
        input_size = math.prod(shape[:-1]) if len(shape) > 1 else 1
        limit = math.sqrt(3.0 / input_size) * self.factor
        return _vs._fresh(RandomUniform(-limit, limit, seed=self.seed))(
            shape, dtype=dtype or self.dtype)

    def get_config(self) -> dict:
        return {"factor": self.factor, "seed": self.seed, "dtype": np.dtype(self.dtype).name}


def uniform_unit_scaling_initializer(factor=1.0, seed=None, dtype=np.float32):
    return _UniformUnitScaling(factor, seed, dtype)


def _scaling(scale, mode, distribution):
    def make(seed=None):
        return _vs.variance_scaling_initializer(scale=scale, mode=mode,
                                                distribution=distribution, seed=seed)
    return make


def tables_initializer(name="init_all_tables"):
    """An operation initializing every lookup table: ipu_gpu has none, so a no-op (what TF
    returns for a graph without tables)."""
    from ... import graph

    return graph.no_op(name=name)


def _variables_ops():
    from . import global_variables_initializer, local_variables_initializer
    from ... import graph

    return global_variables_initializer, local_variables_initializer, \
        graph.variables_initializer


initializers = types.ModuleType(
    "ipu_gpu.compat.v1.initializers",
    "``tf.compat.v1.initializers``: TF 1.15's initializers and initializer ops.")
initializers.__dict__.update(
    constant=_vs.constant_initializer, glorot_normal=_vs.glorot_normal_initializer,
    glorot_uniform=_vs.glorot_uniform_initializer,
    he_normal=_scaling(2.0, "fan_in", "truncated_normal"),
    he_uniform=_scaling(2.0, "fan_in", "uniform"), identity=_identity,
    lecun_normal=_scaling(1.0, "fan_in", "truncated_normal"),
    lecun_uniform=_scaling(1.0, "fan_in", "uniform"), ones=_vs.ones_initializer,
    orthogonal=orthogonal_initializer, random_normal=_vs.random_normal_initializer,
    random_uniform=_vs.random_uniform_initializer, tables_initializer=tables_initializer,
    truncated_normal=_vs.truncated_normal_initializer,
    uniform_unit_scaling=uniform_unit_scaling_initializer,
    variance_scaling=_vs.variance_scaling_initializer, zeros=_vs.zeros_initializer)


def _install_variable_ops(module) -> None:
    """``initializers.global_variables``/``local_variables``/``variables`` (the package's
    functions, bound once it is loaded)."""
    g, loc, var = _variables_ops()
    module.global_variables, module.local_variables, module.variables = g, loc, var


initializers.__all__ = sorted([
    "constant", "global_variables", "glorot_normal", "glorot_uniform", "he_normal",
    "he_uniform", "identity", "lecun_normal", "lecun_uniform", "local_variables", "ones",
    "orthogonal", "random_normal", "random_uniform", "tables_initializer",
    "truncated_normal", "uniform_unit_scaling", "variables", "variance_scaling", "zeros"])
sys.modules[initializers.__name__] = initializers
