"""``ipu.optimizers`` (Graphcore's ``tensorflow/python/ipu/optimizers``) for the TF1
``tf.compat.v1.train`` optimizers of ``ipu_gpu.graph``: ``CrossReplicaOptimizer``, the V1 and
V2 gradient-accumulation optimizers and their cross-replica forms, ``MapGradientOptimizer``,
``ShardedOptimizer``, ``IpuOptimizer``, and the ``GradientAccumulationReductionMethod`` enum
(tf_ipu_semantics.md section 13)."""

from ..gradient_accumulation import GradientAccumulationReductionMethod
from .cross_replica_optimizer import CrossReplicaOptimizer
from .gradient_accumulation_optimizer import (CrossReplicaGradientAccumulationOptimizerV2,
                                              GradientAccumulationOptimizerV2)
from .wrappers import (CrossReplicaGradientAccumulationOptimizer, GradientAccumulationOptimizer,
                       IpuOptimizer, MapGradientOptimizer, ShardedOptimizer)

__all__ = ["CrossReplicaGradientAccumulationOptimizer",
           "CrossReplicaGradientAccumulationOptimizerV2", "CrossReplicaOptimizer",
           "GradientAccumulationOptimizer", "GradientAccumulationOptimizerV2",
           "GradientAccumulationReductionMethod", "IpuOptimizer", "MapGradientOptimizer",
           "ShardedOptimizer"]
