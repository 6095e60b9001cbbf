"""``AdamIpuOptimizer``: Adam with moments of chosen dtypes and an optional debiasing."""

from __future__ import annotations

import numpy as np

from ipu_gpu.keras.optimizers.adam import Adam
from ipu_gpu.ops import math as _m

from .ipu_optimizer_base import IpuOptimizerBase

__all__ = ["AdamIpuOptimizer"]


def adam_coefficients(optimizer) -> dict:
    """The step's Adam coefficients in ``optimizer``'s compute dtype: epsilon, the betas,
    one minus them, and their powers at ``t = iterations + 1``."""
    compute = optimizer._compute_dtype()
    t = compute.type
    step = t(int(optimizer.iterations) + 1)
    beta_1 = t(optimizer._hyper_float("beta_1", compute))
    beta_2 = t(optimizer._hyper_float("beta_2", compute))
    return dict(epsilon=t(optimizer.epsilon), beta_1_t=beta_1, beta_2_t=beta_2,
                one_minus_beta_1_t=t(1) - beta_1, one_minus_beta_2_t=t(1) - beta_2,
                beta_1_power=np.power(beta_1, step), beta_2_power=np.power(beta_2, step))


def adam_moments(c, grad, m, v, compute, debiasing):
    """The next moments ``m``, ``v`` from ``grad`` and the coefficients ``c``, in
    ``compute``, and their estimates ``m_hat``, ``v_hat`` (debiased with ``debiasing``)."""
    t = compute.type
    g = _m.cast(grad, compute)
    next_m = _m.cast(m, compute) * c["beta_1_t"] + g * c["one_minus_beta_1_t"]
    next_v = _m.cast(v, compute) * c["beta_2_t"] + _m.square(g) * c["one_minus_beta_2_t"]
    if not debiasing:
        return next_m, next_v, next_m, next_v
    return (next_m, next_v, next_m / (t(1) - c["beta_1_power"]),
            next_v / (t(1) - c["beta_2_power"]))


class AdamIpuOptimizer(Adam, IpuOptimizerBase):
    """Adam (Kingma & Ba 2015) computed in ``optimizer_compute_precisions[0]`` (default
    float32)::

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        m_hat = m / (1 - beta_1 ** t),  v_hat = v / (1 - beta_2 ** t)   # debiasing
        vhat = max(vhat, v_hat)                                         # amsgrad
        w = w - learning_rate * m_hat / (sqrt(v_hat or vhat) + epsilon)

    with ``t = iterations + 1``. Unlike Keras's Adam, epsilon is added after debiasing and
    AMSGrad keeps the maximum of the debiased second moment. ``m``, ``v`` and ``vhat`` are
    stored in ``m_dtype``, ``v_dtype``, ``vhat_dtype`` (None: the variable's dtype).

    Args (beyond Keras's Adam and ``IpuOptimizerBase``):
      m_dtype, v_dtype, vhat_dtype: the slots' dtypes.
      debiasing: divide the moments by ``1 - beta ** t``.

    Sparse gradients raise NotImplementedError, as Graphcore's optimizer.
    """

    _sparse_name = "Adam"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="Adam", m_dtype=None, v_dtype=None, vhat_dtype=None,
                 debiasing=True, **kwargs):
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, amsgrad=amsgrad, name=name, **kwargs)
        self.m_dtype = m_dtype
        self.v_dtype = v_dtype
        self.vhat_dtype = vhat_dtype
        self.debiasing = debiasing

    def get_slot_dtype(self, var, slot_name):
        if slot_name == "m":
            return self.m_dtype
        if slot_name == "v":
            return self.v_dtype
        return self.vhat_dtype

    def _create_slots(self, var_list):
        for slot_name in ("m", "v") + (("vhat",) if self.amsgrad else ()):
            for var in var_list:
                self.add_slot(var, slot_name, dtype=self.get_slot_dtype(var, slot_name))

    def _prepare_local(self, var_device, var_dtype, apply_state):
        IpuOptimizerBase._prepare_local(self, var_device, var_dtype, apply_state)
        apply_state[(var_device, var_dtype)].update(adam_coefficients(self))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        vhat = self.get_slot(var, "vhat") if self.amsgrad else None
        compute = self._compute_dtype()
        t = compute.type
        lr = t(c["lr_t"])

        def grad_fn(grad, var, m, v, vhat=None):
            next_m, next_v, m_hat, v_hat = adam_moments(c, grad, m, v, compute,
                                                        self.debiasing)
            next_vhat = None
            if vhat is not None:
                v_hat = next_vhat = _m.maximum(_m.cast(vhat, compute), v_hat)
                next_vhat = _m.cast(next_vhat, vhat.dtype)
            update = m_hat / (_m.sqrt(v_hat) + c["epsilon"])
            next_var = var - _m.cast(update * lr, var.dtype)
            return next_var, _m.cast(next_m, m.dtype), _m.cast(next_v, v.dtype), next_vhat

        next_var, next_m, next_v, next_vhat = self._maybe_outline(grad_fn)(
            grad, var, m, v, *(() if vhat is None else (vhat,)))
        if vhat is not None:
            vhat.assign(next_vhat)
        var.assign(next_var)
        m.assign(next_m)
        v.assign(next_v)
        return var

    _resource_apply_sparse = IpuOptimizerBase._resource_apply_sparse

    def get_config(self) -> dict:
        config = Adam.get_config(self)
        config.update(optimizer_compute_precisions=self.opt_dtypes,
                      outline_apply_gradients=self.outline_apply_gradients,
                      outline_apply_gradients_kwargs=self.outline_apply_gradients_kwargs,
                      m_dtype=self.m_dtype, v_dtype=self.v_dtype, vhat_dtype=self.vhat_dtype,
                      debiasing=self.debiasing)
        return config
