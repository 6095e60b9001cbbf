"""``tensorflow.python.ipu.ops``: the op modules. As in Graphcore's TF, ``ipu.nn_ops`` and
``ipu.ops.nn_ops`` are one module; each is registered under both names, so
``import ipu_gpu.ipu.ops.nn_ops`` works too."""

import sys
import types

from .. import (all_to_all_op, cross_replica_ops, embedding_ops, math_ops, nn_ops,
                pipelining_ops, reduce_scatter_op, replication_ops, slicing_ops, statistics_ops,
                within_replica_ops)
from .. import functional_ops, image_ops, normalization_ops, rand_ops
from .. import control_flow_ops, custom_ops, internal_ops, popfloat_cast_to_gfloat
from .. import application_compile_op, embedded_runtime

__all__ = ["all_to_all_op", "cross_replica_ops", "embedding_ops", "math_ops", "nn_ops",
           "pipelining_ops", "reduce_scatter_op", "replication_ops", "slicing_ops",
           "statistics_ops", "within_replica_ops"]
__all__ += ["functional_ops", "image_ops", "normalization_ops", "rand_ops"]
__all__ += ["control_flow_ops", "custom_ops", "internal_ops"]
__all__ += ["application_compile_op", "embedded_runtime"]

for _name in __all__:
    sys.modules[f"{__name__}.{_name}"] = globals()[_name]

# Graphcore keeps the gfloat casts under ipu.ops.experimental
experimental = types.ModuleType(f"{__name__}.experimental", "Graphcore's experimental ops.")
experimental.popfloat_cast_to_gfloat = popfloat_cast_to_gfloat
sys.modules[experimental.__name__] = experimental
sys.modules[f"{experimental.__name__}.popfloat_cast_to_gfloat"] = popfloat_cast_to_gfloat
