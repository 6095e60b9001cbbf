"""``ipu.optimizers`` (Graphcore's ``tensorflow/python/ipu/optimizers``): the
``GradientAccumulationReductionMethod`` enum and ``CrossReplicaOptimizer`` (wrapping the TF1
``tf.compat.v1.train`` optimizers of ``ipu_gpu.graph``). Not provided yet: the gradient
accumulation optimizers, ``MapGradientOptimizer``, ``ShardedOptimizer``."""

from ..gradient_accumulation import GradientAccumulationReductionMethod
from .cross_replica_optimizer import CrossReplicaOptimizer

__all__ = ["CrossReplicaOptimizer", "GradientAccumulationReductionMethod"]
