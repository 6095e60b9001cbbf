"""``ipu.optimizers.IpuOptimizer`` (the forwarding base class), ``MapGradientOptimizer``,
``ShardedOptimizer`` and the V1 accumulation optimizers ``GradientAccumulationOptimizer`` /
``CrossReplicaGradientAccumulationOptimizer`` (SUM accumulation, as Graphcore's
``ipu_stateful_gradient_accumulate``), for the TF1 graph optimizers."""

from __future__ import annotations

from ...graph import optimizers as _tf1
from ..gradient_accumulation import GradientAccumulationReductionMethod
from .cross_replica_optimizer import CrossReplicaOptimizer
from .gradient_accumulation_optimizer import GradientAccumulationOptimizerV2

__all__ = ["CrossReplicaGradientAccumulationOptimizer", "GradientAccumulationOptimizer",
           "IpuOptimizer", "MapGradientOptimizer", "ShardedOptimizer"]


class IpuOptimizer:
    """The wrapper interface for optimizers: everything not overridden is the wrapped
    optimizer's."""

    def __init__(self, opt, name=None):
        self._opt = opt
        self._name = name or type(self).__name__

    def compute_gradients(self, loss, var_list=None, **kwargs):
        return self._opt.compute_gradients(loss, var_list=var_list, **kwargs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list, **kwargs),
                                    global_step=global_step, name=name)

    def get_slot(self, var, name):
        return self._opt.get_slot(var, name)

    def get_slot_names(self):
        return self._opt.get_slot_names()

    def _eager_update(self, v, g):
        self._opt._eager_update(v, g)

    def __getattr__(self, name):
        if name == "_opt":
            raise AttributeError(name)
        return getattr(self._opt, name)


class MapGradientOptimizer(IpuOptimizer):
    """Passes every gradient through ``gradient_mapping_function(grad, var)`` (for example a
    weight decay ``grad + decay * var``) before the wrapped optimizer applies it."""

    def __init__(self, wrapped_optimizer, gradient_mapping_function,
                 name="MapGradientOptimizer"):
        super().__init__(wrapped_optimizer, name)
        self._map = gradient_mapping_function

    def compute_gradients(self, loss, var_list=None, **kwargs):
        pairs = self._opt.compute_gradients(loss, var_list=var_list, **kwargs)
        return [(None if g is None else self._map(g, v), v) for g, v in pairs]


class ShardedOptimizer(IpuOptimizer):
    """Numerically the wrapped optimizer (Graphcore places its update ops on the shards of
    their variables; the emulator runs unsharded)."""

    def __init__(self, optimizer):
        super().__init__(optimizer, "ShardedOptimizer")


class GradientAccumulationOptimizer(GradientAccumulationOptimizerV2):
    """Accumulates (sums) gradients over ``num_mini_batches`` batches and applies them once;
    Graphcore supports GradientDescent and Momentum here (``verify_usage`` checks it).

    Raises:
      ValueError: ``verify_usage`` and another optimizer (Graphcore's message)."""

    def __init__(self, opt, num_mini_batches, verify_usage=True,
                 name="GradientAccumulationOptimizer"):
        inner = opt._opt if isinstance(opt, CrossReplicaOptimizer) else opt
        if verify_usage and not isinstance(inner, (_tf1.GradientDescentOptimizer,
                                                   _tf1.MomentumOptimizer)):
            raise ValueError("Only GradientDescentOptimizer and MomentumOptimizer can be used "
                             "with the GradientAccumulationOptimizer.")
        super().__init__(opt, num_mini_batches,
                         reduction_method=GradientAccumulationReductionMethod.SUM, name=name)


class CrossReplicaGradientAccumulationOptimizer(GradientAccumulationOptimizer):
    """``CrossReplicaOptimizer(GradientAccumulationOptimizer(opt, ...))``: the accumulated
    gradients are averaged across the replicas at the update."""

    def __init__(self, opt, num_mini_batches, verify_usage=True,
                 name="CrossReplicaGradientAccumulationOptimizer"):
        super().__init__(CrossReplicaOptimizer(opt), num_mini_batches, verify_usage, name)
