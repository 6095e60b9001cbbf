"""``SGDIpuOptimizer``: SGD with a momentum accumulator of a chosen dtype."""

from __future__ import annotations

from ipu_gpu.keras.optimizers.sgd import SGD
from ipu_gpu.ops import math as _m

from .ipu_optimizer_base import IpuOptimizerBase

__all__ = ["SGDIpuOptimizer"]


class SGDIpuOptimizer(SGD, IpuOptimizerBase):
    """Keras's SGD; with momentum the update is computed in
    ``optimizer_compute_precisions[0]`` and the accumulator stored in
    ``momentum_accum_dtype`` (None: the variable's dtype)::

        accum = momentum * accum - learning_rate * g
        w = w + accum                                       # or, nesterov:
        w = w + momentum * accum - learning_rate * g

    Without momentum ``w = w - learning_rate * g``. Sparse gradients raise
    NotImplementedError, as Graphcore's optimizer.
    """

    _sparse_name = "SGD"

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD",
                 momentum_accum_dtype=None, **kwargs):
        super().__init__(learning_rate=learning_rate, momentum=momentum, nesterov=nesterov,
                         name=name, **kwargs)
        self.momentum_accum_dtype = momentum_accum_dtype

    def get_slot_dtype(self, var, slot_name):
        return self.momentum_accum_dtype

    def _create_slots(self, var_list):
        if self._momentum:
            for var in var_list:
                self.add_slot(var, "momentum", dtype=self.get_slot_dtype(var, "momentum"))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        t = self._compute_dtype().type
        lr = t(c["lr_t"])
        if not self._momentum:
            return var.assign_sub(grad * var.dtype.type(c["lr_t"]))
        accum = self.get_slot(var, "momentum")
        momentum = t(self._hyper_float("momentum", self._compute_dtype()))
        compute = self._compute_dtype()

        def grad_fn(grad, var, accum):
            g = _m.cast(grad, compute)
            next_accum = _m.cast(accum, compute) * momentum - g * lr
            if self.nesterov:
                step = next_accum * momentum - g * lr
            else:
                step = next_accum
            return var + _m.cast(step, var.dtype), _m.cast(next_accum, accum.dtype)

        next_var, next_accum = self._maybe_outline(grad_fn)(grad, var, accum)
        var.assign(next_var)
        accum.assign(next_accum)
        return var

    _resource_apply_sparse = IpuOptimizerBase._resource_apply_sparse

    def get_config(self) -> dict:
        config = SGD.get_config(self)
        config.update(optimizer_compute_precisions=self.opt_dtypes,
                      outline_apply_gradients=self.outline_apply_gradients,
                      outline_apply_gradients_kwargs=self.outline_apply_gradients_kwargs,
                      momentum_accum_dtype=self.momentum_accum_dtype)
        return config
