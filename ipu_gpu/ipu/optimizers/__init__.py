"""``ipu.optimizers`` (Graphcore's ``tensorflow/python/ipu/optimizers``): the
``GradientAccumulationReductionMethod`` enum, ``CrossReplicaOptimizer``,
``GradientAccumulationOptimizerV2`` and ``CrossReplicaGradientAccumulationOptimizerV2``
(wrapping the TF1 ``tf.compat.v1.train`` optimizers of ``ipu_gpu.graph``). Not provided
yet: the V1 accumulation optimizers, ``MapGradientOptimizer``, ``ShardedOptimizer``,
``IpuOptimizer``."""

from ..gradient_accumulation import GradientAccumulationReductionMethod
from .cross_replica_optimizer import CrossReplicaOptimizer
from .gradient_accumulation_optimizer import (CrossReplicaGradientAccumulationOptimizerV2,
                                              GradientAccumulationOptimizerV2)

__all__ = ["CrossReplicaGradientAccumulationOptimizerV2", "CrossReplicaOptimizer",
           "GradientAccumulationOptimizerV2", "GradientAccumulationReductionMethod"]
