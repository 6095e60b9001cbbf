"""RMSprop (Hinton, Coursera lecture 6e), plain, with momentum or centered (Keras 2's
``RMSprop``)."""

from __future__ import annotations

from ...core.indexed_slices import IndexedSlices
from ...ops.indexing import gather
from ...ops.math import rsqrt, sqrt, square
from .optimizer_v2 import OptimizerV2, uses_momentum, with_iterations


class RMSprop(OptimizerV2):
    """RMSprop with Keras 2's arithmetic, which differs by case::

        ms = ms + (g * g - ms) * (1 - rho)        # "rms"; without momentum:
                                                  #   ms = rho * ms + (1 - rho) * g * g
        mg = mg + (g - mg) * (1 - rho)            # centered only: "mg"
        denom = ms - mg * mg  (centered)  or  ms

    without momentum (Keras's own ops): ``w = w - lr * g / (sqrt(denom) + epsilon)``;
    with momentum (TF's ApplyRMSProp): ``mom = momentum * mom + lr * g / sqrt(denom +
    epsilon)``, ``w = w - mom``. Slots: "rms", "momentum" (momentum > 0), "mg" (centered).

    A sparse gradient (IndexedSlices, repeated rows summed): with momentum only its rows
    change (TF's ResourceSparseApplyRMSProp / ResourceSparseApplyCenteredRMSProp: ``ms =
    ms * rho + g * g * (1 - rho)``, ``mom = mom * momentum + rsqrt(denom + epsilon) * lr *
    g``); without, Keras 2's sparse path decays "rms" (and "mg") of every row, scatter-adds
    the batch rows' terms and moves only the batch rows of ``w``.

    Args:
      learning_rate: a float, a ``LearningRateSchedule`` or a callable.
      rho: discounting factor of the squared-gradient average.
      momentum: a float in [0, 1].
      epsilon: small constant for stability (a falsy value means 1e-7).
      centered: normalise by the variance estimate instead of the second moment.
      name: the optimizer's name.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``decay``, ``lr``.

    Raises:
      ValueError: ``momentum`` outside [0, 1].
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, name="RMSprop", **kwargs):
        super().__init__(name, **kwargs)
        self._momentum = uses_momentum(momentum)
        self._set_hypers(kwargs.get("lr", learning_rate), rho=rho, momentum=momentum)
        self.epsilon = epsilon or 1e-7
        self.centered = centered

    def _create_slots(self, var_list):
        self._add_slots(var_list, "rms")
        if self._momentum:
            self._add_slots(var_list, "momentum")
        if self.centered:
            self._add_slots(var_list, "mg")

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        c = apply_state[(var_device, var_dtype)]
        t = var_dtype.type
        rho = t(self._hyper_float("rho", var_dtype))
        c.update(neg_lr_t=-c["lr_t"], epsilon=float(t(self.epsilon)), rho=float(rho),
                 momentum=self._hyper_float("momentum", var_dtype),
                 one_minus_rho=float(t(1) - rho))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        rms = self.get_slot(var, "rms")
        lr = c["lr_t"]
        if self._momentum:
            rms.assign_add((grad * grad - rms) * c["one_minus_rho"])
            denom = rms
            if self.centered:
                mg = self.get_slot(var, "mg")
                mg.assign_add((grad - mg) * c["one_minus_rho"])
                denom = rms - mg * mg
            mom = self.get_slot(var, "momentum")
            mom.assign(mom * c["momentum"] + grad * lr / sqrt(denom + c["epsilon"]))
            return var.assign_sub(mom)
        rms.assign(rms * c["rho"] + grad * grad * c["one_minus_rho"])
        denom = rms
        if self.centered:
            mg = self.get_slot(var, "mg")
            mg.assign(mg * c["rho"] + grad * c["one_minus_rho"])
            denom = rms - mg * mg
        return var.assign_sub(grad * lr / (sqrt(denom) + c["epsilon"]))

    def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
        c = self._coefficients(var, apply_state)
        rms = self.get_slot(var, "rms")
        rho, one_minus_rho, eps = c["rho"], c["one_minus_rho"], c["epsilon"]
        if self._momentum:
            ms = gather(rms, indices) * rho + grad * grad * one_minus_rho
            rms.scatter_update(IndexedSlices(ms, indices))
            denom = ms + eps
            if self.centered:
                mg = self.get_slot(var, "mg")
                mg_rows = gather(mg, indices) * rho + grad * one_minus_rho
                mg.scatter_update(IndexedSlices(mg_rows, indices))
                denom = denom - square(mg_rows)
            mom = self.get_slot(var, "momentum")
            mom_rows = gather(mom, indices) * c["momentum"] + rsqrt(denom) * c["lr_t"] * grad
            mom.scatter_update(IndexedSlices(mom_rows, indices))
            return var.scatter_sub(IndexedSlices(mom_rows, indices))
        rms.assign(rms * rho)
        rms.scatter_add(IndexedSlices((grad * grad) * one_minus_rho, indices))
        denom = gather(rms, indices)
        if self.centered:
            mg = self.get_slot(var, "mg")
            mg.assign(mg * rho)
            mg.scatter_add(IndexedSlices(grad * one_minus_rho, indices))
            denom = denom - square(gather(mg, indices))
        step = c["neg_lr_t"] * grad / (sqrt(denom) + eps)
        return var.scatter_add(IndexedSlices(step, indices))

    def set_weights(self, weights):
        super().set_weights(with_iterations(self.weights, weights))

    def get_config(self) -> dict:
        return {**super().get_config(), **self._hyper_config("rho", "momentum"),
                "epsilon": self.epsilon, "centered": self.centered}


RMSProp = RMSprop
