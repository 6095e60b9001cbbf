"""The IPU-specific API, mirroring ``tensorflow.python.ipu`` (``from tensorflow.python import
ipu``): configuration (``config``, ``utils``, ``scopes``), running programs
(``ipu_compiler``, ``loops``, the feeds, the replication ops) and the op modules
(``nn_ops``, ``math_ops``, ``pipelining_ops``, ...), ``gradient_accumulation`` and the
pipeline-stage API of Graphcore's Keras (``ipu.keras``, loaded on first use). Op modules are
also reachable as ``ipu.ops.<module>``."""

import importlib

from . import (all_to_all_op, config, cross_replica_ops, dataset_benchmark, embedding_ops,
               gradient_accumulation, ipu_compiler, ipu_estimator, ipu_infeed_queue,
               ipu_outfeed_queue, ipu_pipeline_estimator, ipu_run_config, ipu_session_run_hooks,
               ipu_strategy, loops, math_ops, nn_ops, optimizers, pipelining_ops,
               reduce_scatter_op, replication_ops, scopes, slicing_ops, statistics_ops, utils,
               within_replica_ops)
from . import functional_ops, image_ops, normalization_ops, rand_ops
from . import control_flow_ops, custom_ops, internal_ops, popfloat_cast_to_gfloat, sharding
from .functional_ops import outlined_function
from . import distributed, horovod
from . import application_compile_op, embedded_runtime, serving
from . import ops  # after the op modules: it registers them under ipu.ops

__all__ = ["all_to_all_op", "config", "cross_replica_ops", "dataset_benchmark", "embedding_ops",
           "gradient_accumulation", "ipu_compiler", "ipu_estimator", "ipu_infeed_queue",
           "ipu_outfeed_queue", "ipu_pipeline_estimator", "ipu_run_config",
           "ipu_session_run_hooks", "ipu_strategy", "keras", "loops", "math_ops", "nn_ops",
           "ops", "optimizers",
           "pipelining_ops", "reduce_scatter_op", "replication_ops", "scopes", "slicing_ops",
           "statistics_ops", "utils", "within_replica_ops"]
__all__ += ["functional_ops", "image_ops", "normalization_ops", "outlined_function", "rand_ops"]
__all__ += ["distributed", "horovod"]
__all__ += ["application_compile_op", "embedded_runtime", "serving"]
__all__ += ["control_flow_ops", "custom_ops", "internal_ops", "popfloat_cast_to_gfloat",
            "sharding"]


def __getattr__(name: str):
    # ipu.keras loads Keras: only on first use, so importing ipu stays light
    if name == "keras":
        return importlib.import_module(f"{__name__}.keras")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
