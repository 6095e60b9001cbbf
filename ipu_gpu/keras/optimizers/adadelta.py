"""Adadelta (Zeiler 2012) (Keras 2's ``Adadelta``)."""

from __future__ import annotations

from ...core.indexed_slices import IndexedSlices
from ...ops.indexing import gather
from ...ops.math import rsqrt, sqrt
from .optimizer_v2 import OptimizerV2, with_iterations


class Adadelta(OptimizerV2):
    """Adadelta with TF's ApplyAdadelta arithmetic::

        accum_grad = accum_grad * rho + g * g * (1 - rho)
        update = sqrt(accum_var + epsilon) * rsqrt(accum_grad + epsilon) * g
        w = w - update * learning_rate
        accum_var = accum_var * rho + update * update * (1 - rho)

    Slots: "accum_grad", "accum_var". A sparse gradient (IndexedSlices, repeated rows
    summed) updates only its rows, with the same formulas (TF's
    ResourceSparseApplyAdadelta).

    Args:
      learning_rate: a float, a ``LearningRateSchedule`` or a callable.
      rho: the decay rate.
      epsilon: small constant for stability (a falsy value means 1e-7).
      name: the optimizer's name.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``decay``, ``lr``.
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta", **kwargs):
        super().__init__(name, **kwargs)
        self._set_hypers(kwargs.get("lr", learning_rate), rho=rho)
        self.epsilon = epsilon or 1e-7

    def _create_slots(self, var_list):
        self._add_slots(var_list, "accum_grad", "accum_var")

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        c = apply_state[(var_device, var_dtype)]
        rho = var_dtype.type(self._hyper_float("rho", var_dtype))
        c.update(epsilon=float(var_dtype.type(self.epsilon)), rho=float(rho),
                 one_minus_rho=float(var_dtype.type(1) - rho))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        accum = self.get_slot(var, "accum_grad")
        accum_update = self.get_slot(var, "accum_var")
        eps = c["epsilon"]
        accum.assign(accum * c["rho"] + grad * grad * c["one_minus_rho"])
        update = sqrt(accum_update + eps) * rsqrt(accum + eps) * grad
        var.assign_sub(update * c["lr_t"])
        return accum_update.assign(accum_update * c["rho"] + update * update * c["one_minus_rho"])

    def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
        c = self._coefficients(var, apply_state)
        accum = self.get_slot(var, "accum_grad")
        accum_update = self.get_slot(var, "accum_var")
        eps, rho, one_minus_rho = c["epsilon"], c["rho"], c["one_minus_rho"]
        accum_rows = gather(accum, indices) * rho + grad * grad * one_minus_rho
        accum.scatter_update(IndexedSlices(accum_rows, indices))
        update_rows = gather(accum_update, indices)
        update = sqrt(update_rows + eps) * rsqrt(accum_rows + eps) * grad
        var.scatter_sub(IndexedSlices(update * c["lr_t"], indices))
        update_rows = update_rows * rho + update * update * one_minus_rho
        return accum_update.scatter_update(IndexedSlices(update_rows, indices))

    def set_weights(self, weights):
        super().set_weights(with_iterations(self.weights, weights))

    def get_config(self) -> dict:
        return {**super().get_config(), **self._hyper_config("rho"), "epsilon": self.epsilon}
