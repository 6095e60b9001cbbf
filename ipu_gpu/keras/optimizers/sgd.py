"""Stochastic gradient descent, with optional (Nesterov) momentum (Keras 2's ``SGD``)."""

from __future__ import annotations

from ...core.indexed_slices import IndexedSlices
from ...ops.indexing import gather
from .optimizer_v2 import OptimizerV2, fused_cpu_update, uses_momentum


class SGD(OptimizerV2):
    """Gradient descent with momentum (TF's ApplyKerasMomentum arithmetic)::

        velocity = momentum * velocity - learning_rate * g
        w = w + velocity                                   # nesterov=False
        w = w + momentum * velocity - learning_rate * g    # nesterov=True

    Without momentum: ``w = w - learning_rate * g``, and no slot.

    A sparse gradient (IndexedSlices) updates only its rows: without momentum each row is
    added in turn, repeated indices included (TF's ResourceScatterAdd); with momentum the
    repeated rows are summed first and the rows' velocities and weights follow the formulas
    above (TF's ResourceSparseApplyKerasMomentum), the other rows keeping theirs.

    Args:
      learning_rate: a float, a ``LearningRateSchedule`` or a callable returning the rate.
      momentum: a float in [0, 1]; > 0 adds the slot "momentum".
      nesterov: Nesterov momentum.
      name: the optimizer's name.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``decay``, ``lr``.

    Raises:
      ValueError: ``momentum`` outside [0, 1].
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        super().__init__(name, **kwargs)
        self._momentum = uses_momentum(momentum)
        self._set_hypers(kwargs.get("lr", learning_rate), momentum=momentum)
        self.nesterov = nesterov

    def _create_slots(self, var_list):
        if self._momentum:
            self._add_slots(var_list, "momentum")

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        apply_state[(var_device, var_dtype)]["momentum"] = self._hyper_float("momentum",
                                                                             var_dtype)

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        lr = c["lr_t"]
        if not self._momentum:
            if fused_cpu_update("sgd", grad, (var,), (lr,)):
                return var
            return var.assign_sub(grad * lr)
        accum = self.get_slot(var, "momentum")
        momentum = c["momentum"]
        if fused_cpu_update("momentum", grad, (var, accum), (lr, momentum),
                            bool(self.nesterov)):
            return var
        accum.assign(accum * momentum - grad * lr)
        if self.nesterov:
            return var.assign_add(accum * momentum - grad * lr)
        return var.assign_add(accum)

    def _resource_apply_sparse_duplicate_indices(self, grad, var, indices, **kwargs):
        if self._momentum:
            return super()._resource_apply_sparse_duplicate_indices(grad, var, indices,
                                                                    **kwargs)
        c = self._coefficients(var, kwargs.get("apply_state"))
        return var.scatter_add(IndexedSlices(-grad * c["lr_t"], indices))

    def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
        c = self._coefficients(var, apply_state)
        lr, momentum = c["lr_t"], c["momentum"]
        accum = self.get_slot(var, "momentum")
        a = gather(accum, indices) * momentum - grad * lr
        accum.scatter_update(IndexedSlices(a, indices))
        step = a * momentum - grad * lr if self.nesterov else a
        return var.scatter_add(IndexedSlices(step, indices))

    def get_config(self) -> dict:
        return {**super().get_config(), **self._hyper_config("momentum"),
                "nesterov": self.nesterov}
