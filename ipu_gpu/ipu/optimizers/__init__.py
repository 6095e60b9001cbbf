"""``ipu.optimizers`` (Graphcore's ``tensorflow/python/ipu/optimizers``): so far only
``GradientAccumulationReductionMethod``, the enum its gradient-accumulation optimizers take.
The optimizer wrappers themselves (``GradientAccumulationOptimizerV2``,
``CrossReplicaOptimizer``, ...) are not provided yet."""

from ..gradient_accumulation import GradientAccumulationReductionMethod

__all__ = ["GradientAccumulationReductionMethod"]
