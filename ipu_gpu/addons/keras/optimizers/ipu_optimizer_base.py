"""``IpuOptimizerBase``: the base of the add-on Keras optimizers: slot variables of a chosen
dtype, the compute precision(s) of the update, and the optional outlining of the update."""

from __future__ import annotations

from ipu_gpu.core import dtypes
from ipu_gpu.core.tensor import Variable
from ipu_gpu.ipu.functional_ops import outlined_function
from ipu_gpu.keras.optimizers.optimizer_v2 import OptimizerV2, _base_name, _initial_value

__all__ = ["IpuOptimizerBase"]


class IpuOptimizerBase(OptimizerV2):
    """A Keras ``OptimizerV2`` for the IPU.

    Args:
      name: the optimizer's name.
      optimizer_compute_precisions: the dtypes the update is computed in (Adam and SGD use
        the first; LAMB's second is the dtype of the final ``lr * ratio * update``).
      outline_apply_gradients: run each variable's update as an outlined function
        (``ipu.outlined_function``, one compiled body shared by equal shapes on the IPU;
        the same numbers).
      outline_apply_gradients_kwargs: keyword arguments of ``outlined_function``.
      **kwargs: the Keras optimizer arguments (``clipnorm``, ``decay``, ...).
    """

    def __init__(self, name, optimizer_compute_precisions=(dtypes.float32,),
                 outline_apply_gradients=False, outline_apply_gradients_kwargs=None, **kwargs):
        super().__init__(name, **kwargs)
        self.opt_dtypes = optimizer_compute_precisions
        self.outline_apply_gradients = outline_apply_gradients
        self.outline_apply_gradients_kwargs = dict(outline_apply_gradients_kwargs or {})

    def _compute_dtype(self, index=0):
        return dtypes.as_dtype(self.opt_dtypes[index])

    def _maybe_outline(self, fn):
        if self.outline_apply_gradients:
            return outlined_function(fn, **self.outline_apply_gradients_kwargs)
        return fn

    def get_slot_dtype(self, var, slot_name):
        """The dtype of slot ``slot_name`` of ``var`` (None: the variable's)."""
        return var.dtype

    def add_slot(self, var, slot_name, initializer="zeros", shape=None, dtype=None):
        """The slot variable ``slot_name`` of ``var`` in ``dtype`` (default
        ``get_slot_dtype``, then the variable's), made on first request."""
        dtype = dtype or self.get_slot_dtype(var, slot_name) or var.dtype
        dtype = dtypes.as_dtype(dtype)
        if dtype == var.dtype:
            return super().add_slot(var, slot_name, initializer, shape)
        if slot_name not in self._slot_names:
            self._slot_names.append(slot_name)
        slot_dict = self._slots.setdefault(id(var), {})
        self._slot_owners[id(var)] = var
        weight = slot_dict.get(slot_name)
        if weight is None:
            value = _initial_value(initializer, None, shape or tuple(var.shape), dtype)
            weight = Variable(value, trainable=False, dtype=dtype,
                              name=f"{_base_name(var)}/{slot_name}")
            slot_dict[slot_name] = weight
            self._weights.append(weight)
        return weight

    def add_slot_with_dtype(self, var, slot_name, dtype, initializer="zeros"):
        """``add_slot`` with an explicit dtype."""
        return self.add_slot(var, slot_name=slot_name, initializer=initializer, dtype=dtype)

    def _resource_apply_sparse(self, grad, handle, indices, apply_state=None):
        raise NotImplementedError("_resource_apply_sparse is not implemented for the IPU "
                                  f"Addons {self._sparse_name} optimizer.")

    _sparse_name = "IPU"

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(optimizer_compute_precisions=self.opt_dtypes,
                      outline_apply_gradients=self.outline_apply_gradients,
                      outline_apply_gradients_kwargs=self.outline_apply_gradients_kwargs)
        return config
