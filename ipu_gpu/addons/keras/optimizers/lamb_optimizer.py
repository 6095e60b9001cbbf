"""``LAMBIpuOptimizer``: LAMB (You et al. 2019), Adam moments with a per-variable trust
ratio."""

from __future__ import annotations

import re

import numpy as np

from ipu_gpu.core import dtypes
from ipu_gpu.ops import indexing as _indexing
from ipu_gpu.ops import math as _m
from ipu_gpu.ops import reduction as _r
from ipu_gpu.ops import shape as _shape

from .adam_optimizer import adam_coefficients, adam_moments
from .ipu_optimizer_base import IpuOptimizerBase

__all__ = ["LAMBIpuOptimizer"]


class LAMBIpuOptimizer(IpuOptimizerBase):
    """LAMB, computed in ``optimizer_compute_precisions[0]``::

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        u = m_hat / (sqrt(v_hat) + epsilon)    # m_hat, v_hat debiased as in Adam
        u = u + weight_decay_rate * w          # unless exclude_from_weight_decay matches
        ratio = |w| / |u|                      # 1 where either norm is 0, or where
                                               # exclude_from_layer_adaptation matches
        w = w - (learning_rate * ratio) * u    # in optimizer_compute_precisions[1]

    ``|w|`` is clipped at ``weight_norm_clip`` when given.

    ``|.|`` is the L2 norm over the whole variable; the names matched (``re.search``) are the
    variables' names without ``:0``. ``m`` and ``v`` are stored in ``m_dtype`` and
    ``v_dtype`` (None: the variable's dtype).

    Raises:
      ValueError: ``optimizer_compute_precisions`` not of two dtypes.
    """

    _sparse_name = "LAMB"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-6,
                 weight_decay_rate=0.0, exclude_from_weight_decay=None,
                 exclude_from_layer_adaptation=None, name="LAMB", debiasing=True, m_dtype=None,
                 v_dtype=None, weight_norm_clip=None,
                 optimizer_compute_precisions=(dtypes.float32, dtypes.float32), **kwargs):
        super().__init__(name, optimizer_compute_precisions=optimizer_compute_precisions,
                         **kwargs)
        self._set_hyper("weight_decay_rate", weight_decay_rate)
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))
        self._set_hyper("decay", self._initial_decay)
        self._set_hyper("beta_1", beta_1)
        self._set_hyper("beta_2", beta_2)
        self.epsilon = epsilon or 1e-7
        self.exclude_from_weight_decay = exclude_from_weight_decay
        self.exclude_from_layer_adaptation = exclude_from_layer_adaptation
        self.weight_norm_clip = weight_norm_clip
        self.m_dtype = m_dtype
        self.v_dtype = v_dtype
        self.debiasing = debiasing
        if len(self.opt_dtypes) != 2:
            raise ValueError("Must provide a list of two elements for the optimizer compute "
                             "precision. The final stage of the weight update can be done in "
                             "a different precision to the initial stage.")

    def get_slot_dtype(self, var, slot_name):
        return self.m_dtype if slot_name == "m" else self.v_dtype

    def _create_slots(self, var_list):
        for slot_name in ("m", "v"):
            for var in var_list:
                self.add_slot(var, slot_name, dtype=self.get_slot_dtype(var, slot_name))

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        compute = self._compute_dtype()
        apply_state[(var_device, var_dtype)].update(
            weight_decay_rate=compute.type(self._hyper_float("weight_decay_rate", compute)),
            **adam_coefficients(self))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        var_name = self._get_variable_name(var.name)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        compute = self._compute_dtype()
        ratio_dtype = self._compute_dtype(1)
        t = compute.type
        decay = self._do_use_weight_decay(var_name)
        adapt = self._do_layer_adaptation(var_name)

        def grad_fn(grad, var, m, v):
            next_m, next_v, m_hat, v_hat = adam_moments(c, grad, m, v, compute,
                                                        self.debiasing)
            update = m_hat / (_m.sqrt(v_hat) + c["epsilon"])
            if decay:
                update = update + _m.cast(var, update.dtype) * c["weight_decay_rate"]
            update = _shape.reshape(update, [-1])
            ratio = np.asarray(1, compute)
            if adapt:
                w_norm = _m.sqrt(_r.reduce_sum(_m.square(_m.cast(_shape.reshape(var, [-1]),
                                                                 compute))))
                u_norm = _m.sqrt(_r.reduce_sum(_m.square(update)))
                if self.weight_norm_clip is not None:
                    w_norm = _m.minimum(w_norm, t(self.weight_norm_clip))
                one = np.asarray(1, compute)
                ratio = _indexing.where(
                    _m.greater(w_norm, t(0)),
                    _indexing.where(_m.greater(u_norm, t(0)), w_norm / u_norm, one), one)
            ratio = _m.cast(ratio * t(c["lr_t"]), ratio_dtype)
            step = _shape.reshape(ratio * _m.cast(update, ratio_dtype), list(var.shape))
            next_var = var - _m.cast(step, var.dtype)
            return next_var, _m.cast(next_m, m.dtype), _m.cast(next_v, v.dtype)

        next_var, next_m, next_v = self._maybe_outline(grad_fn)(grad, var, m, v)
        var.assign(next_var)
        m.assign(next_m)
        v.assign(next_v)
        return var

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "learning_rate": self._serialize_hyperparameter("learning_rate"),
            "weight_decay_rate": self._serialize_hyperparameter("weight_decay_rate"),
            "decay": self._serialize_hyperparameter("decay"),
            "beta_1": self._serialize_hyperparameter("beta_1"),
            "beta_2": self._serialize_hyperparameter("beta_2"),
            "epsilon": self.epsilon, "m_dtype": self.m_dtype, "v_dtype": self.v_dtype,
            "debiasing": self.debiasing,
        })
        return config

    def _do_use_weight_decay(self, param_name) -> bool:
        """Whether weight decay applies to the variable named ``param_name``."""
        return not any(re.search(r, param_name) for r in self.exclude_from_weight_decay or ())

    def _do_layer_adaptation(self, param_name) -> bool:
        """Whether the trust ratio applies to the variable named ``param_name``."""
        return not any(re.search(r, param_name)
                       for r in self.exclude_from_layer_adaptation or ())

    @staticmethod
    def _get_variable_name(param_name) -> str:
        match = re.match("^(.*):\\d+$", param_name)
        return match.group(1) if match is not None else param_name
