"""Adamax, Adam's infinity-norm variant (Kingma & Ba 2015, section 7) (Keras 2's
``Adamax``)."""

from __future__ import annotations

import numpy as np

from ...core.indexed_slices import IndexedSlices
from ...ops.indexing import gather
from ...ops.math import abs as abs_
from ...ops.math import maximum
from .optimizer_v2 import OptimizerV2


class Adamax(OptimizerV2):
    """Adamax with TF's ApplyAdaMax arithmetic::

        m = m + (g - m) * (1 - beta_1)
        v = max(beta_2 * v, |g|)
        w = w - learning_rate / (1 - beta_1 ** t) * (m / (v + epsilon))

    ``t`` is ``iterations + 1``. Slots: "m", "v". A sparse gradient (IndexedSlices,
    repeated rows summed) updates only its rows, with the same formulas (Keras 2's sparse
    path).

    Args:
      learning_rate: a float, a ``LearningRateSchedule`` or a callable.
      beta_1, beta_2: decay rates of the first moment and the weighted infinity norm.
      epsilon: small constant for stability (a falsy value means 1e-7).
      name: the optimizer's name.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``decay``, ``lr``.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Adamax", **kwargs):
        super().__init__(name, **kwargs)
        self._set_hypers(kwargs.get("lr", learning_rate), beta_1=beta_1, beta_2=beta_2)
        self.epsilon = epsilon or 1e-7

    def _create_slots(self, var_list):
        self._add_slots(var_list, "m", "v")

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        c = apply_state[(var_device, var_dtype)]
        t = var_dtype.type
        step = t(int(self.iterations) + 1)  # syncs device
        beta_1 = t(self._hyper_float("beta_1", var_dtype))
        beta_1_power = np.power(beta_1, step)
        c.update(scaled_lr=float(t(c["lr_t"]) / (t(1) - beta_1_power)),
                 epsilon=float(t(self.epsilon)), beta_1_t=float(beta_1),
                 beta_1_power=float(beta_1_power), one_minus_beta_1_t=float(t(1) - beta_1),
                 beta_2_t=self._hyper_float("beta_2", var_dtype))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m.assign_add((grad - m) * c["one_minus_beta_1_t"])
        v.assign(maximum(v * c["beta_2_t"], abs_(grad)))
        return var.assign_sub(c["scaled_lr"] * (m / (v + c["epsilon"])))

    def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
        c = self._coefficients(var, apply_state)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m_rows = gather(m, indices) * c["beta_1_t"] + grad * c["one_minus_beta_1_t"]
        m.scatter_update(IndexedSlices(m_rows, indices))
        v_rows = maximum(gather(v, indices) * c["beta_2_t"], abs_(grad))
        v.scatter_update(IndexedSlices(v_rows, indices))
        step = -c["scaled_lr"] * (m_rows / (v_rows + c["epsilon"]))
        return var.scatter_add(IndexedSlices(step, indices))

    def get_config(self) -> dict:
        return {**super().get_config(), **self._hyper_config("beta_1", "beta_2"),
                "epsilon": self.epsilon}
