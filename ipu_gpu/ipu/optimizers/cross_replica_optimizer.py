"""``ipu.optimizers.CrossReplicaOptimizer``: an optimizer that averages gradients across IPU
replicas (``cross_replica_mean`` of every gradient before the wrapped optimizer applies it,
as Graphcore's implementation does, whatever older docstrings say about summing)."""

from __future__ import annotations

from ...ops.collectives import cross_replica_mean

__all__ = ["CrossReplicaOptimizer"]


class CrossReplicaOptimizer:
    """An optimizer that averages gradients across IPU replicas.

    Args:
      opt: An existing Optimizer to encapsulate (a ``tf.compat.v1.train`` optimizer).
      name: Optional name prefix for the operations created when applying gradients.
    """

    def __init__(self, opt, name="CrossReplicaOptimizer"):
        self._opt = opt
        self._name = name

    def compute_gradients(self, loss, var_list=None, **kwargs):
        """The wrapped optimizer's (gradient, variable) pairs, each gradient averaged across
        the replicas."""
        pairs = self._opt.compute_gradients(loss, var_list=var_list, **kwargs)
        return [(None if g is None else cross_replica_mean(g), v) for g, v in pairs]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        return self._opt.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def minimize(self, loss, global_step=None, var_list=None, name=None, **kwargs):
        return self.apply_gradients(self.compute_gradients(loss, var_list=var_list, **kwargs),
                                    global_step=global_step, name=name)

    def get_slot(self, var, name):
        return self._opt.get_slot(var, name)

    def get_slot_names(self):
        return self._opt.get_slot_names()
