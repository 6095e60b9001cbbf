"""Adam (Kingma & Ba 2015), with the AMSGrad variant (Reddi et al. 2018) (Keras 2's
``Adam``)."""

from __future__ import annotations

import numpy as np

from ...core.indexed_slices import IndexedSlices
from ...ops.math import maximum, sqrt
from .optimizer_v2 import OptimizerV2, fused_cpu_update


class Adam(OptimizerV2):
    """Adam, with TF's ApplyAdam arithmetic (epsilon added to sqrt(v), "epsilon hat")::

        alpha = learning_rate * sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        m = m + (g - m) * (1 - beta_1)
        v = v + (g * g - v) * (1 - beta_2)
        vhat = max(vhat, v)                               # amsgrad only
        w = w - m * alpha / (sqrt(v or vhat) + epsilon)

    ``t`` is ``iterations + 1``. Slots: "m", "v" (and "vhat" with ``amsgrad``).

    A sparse gradient (IndexedSlices, repeated rows summed) takes Keras 2's sparse path:
    the moments of every row decay (``m = beta_1 * m``, ``v = beta_2 * v``), the batch
    rows' ``(1 - beta_1) * g`` and ``(1 - beta_2) * g * g`` are scatter-added, and every
    row moves by ``lr * sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t) * m / (sqrt(v) +
    epsilon)`` (``vhat`` for ``v`` with ``amsgrad``).

    Args:
      learning_rate: a float, a ``LearningRateSchedule`` or a callable.
      beta_1, beta_2: decay rates of the first and second moments.
      epsilon: added to the denominator (a falsy value means Keras's 1e-7).
      amsgrad: keep the maximum of the second moments.
      name: the optimizer's name.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``decay``, ``lr``.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", **kwargs):
        super().__init__(name, **kwargs)
        self._set_hypers(kwargs.get("lr", learning_rate), beta_1=beta_1, beta_2=beta_2)
        self.epsilon = epsilon or 1e-7
        self.amsgrad = amsgrad

    def _create_slots(self, var_list):
        self._add_slots(var_list, "m", "v")
        if self.amsgrad:
            self._add_slots(var_list, "vhat")

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        c = apply_state[(var_device, var_dtype)]
        t = var_dtype.type
        one = t(1)
        step = t(int(self.iterations) + 1)  # syncs device
        beta_1 = t(self._hyper_float("beta_1", var_dtype))
        beta_2 = t(self._hyper_float("beta_2", var_dtype))
        beta_1_power = np.power(beta_1, step)
        beta_2_power = np.power(beta_2, step)
        lr = t(c["lr_t"])
        c.update(alpha=float(lr * np.sqrt(one - beta_2_power) / (one - beta_1_power)),
                 lr=float(lr * (np.sqrt(one - beta_2_power) / (one - beta_1_power))),
                 epsilon=float(t(self.epsilon)), beta_1_t=float(beta_1),
                 beta_2_t=float(beta_2), beta_1_power=float(beta_1_power),
                 beta_2_power=float(beta_2_power), one_minus_beta_1_t=float(one - beta_1),
                 one_minus_beta_2_t=float(one - beta_2))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        if not self.amsgrad and fused_cpu_update(
                "adam", grad, (var, m, v),
                (c["alpha"], c["epsilon"], c["one_minus_beta_1_t"], c["one_minus_beta_2_t"])):
            return var
        m.assign_add((grad - m) * c["one_minus_beta_1_t"])
        v.assign_add((grad * grad - v) * c["one_minus_beta_2_t"])
        if self.amsgrad:
            vhat = self.get_slot(var, "vhat")
            vhat.assign(maximum(vhat, v))
            v = vhat
        return var.assign_sub(m * c["alpha"] / (sqrt(v) + c["epsilon"]))

    def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
        c = self._coefficients(var, apply_state)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        m.assign(m * c["beta_1_t"])
        m.scatter_add(IndexedSlices(grad * c["one_minus_beta_1_t"], indices))
        v.assign(v * c["beta_2_t"])
        v.scatter_add(IndexedSlices((grad * grad) * c["one_minus_beta_2_t"], indices))
        if self.amsgrad:
            vhat = self.get_slot(var, "vhat")
            vhat.assign(maximum(vhat, v))
            v = vhat
        return var.assign_sub(c["lr"] * m / (sqrt(v) + c["epsilon"]))

    def set_weights(self, weights):
        # weights of a Keras 1 optimizer hold vhat even without amsgrad: 3n + 1 of them
        params = self.weights
        num_vars = int((len(params) - 1) / 2)
        if len(weights) == 3 * num_vars + 1:
            weights = weights[:len(params)]
        super().set_weights(weights)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._hyper_config("beta_1", "beta_2"),
                "epsilon": self.epsilon, "amsgrad": self.amsgrad}
