"""Adagrad (Duchi et al. 2011) (Keras 2's ``Adagrad``)."""

from __future__ import annotations

from ...core.indexed_slices import IndexedSlices
from ...ops.indexing import gather
from ...ops.math import sqrt
from .optimizer_v2 import OptimizerV2, with_iterations


class Adagrad(OptimizerV2):
    """Adagrad with TF's ApplyAdagradV2 arithmetic::

        accumulator = accumulator + g * g
        w = w - g * learning_rate / (sqrt(accumulator) + epsilon)

    Slot: "accumulator", starting at ``initial_accumulator_value``. A sparse gradient
    (IndexedSlices, repeated rows summed) updates only its rows, with the same formulas
    (TF's ResourceSparseApplyAdagradV2).

    Args:
      learning_rate: a float, a ``LearningRateSchedule`` or a callable.
      initial_accumulator_value: the accumulators' starting value (>= 0).
      epsilon: small constant for stability (None or 0 means 1e-7).
      name: the optimizer's name.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``decay``, ``lr``.

    Raises:
      ValueError: a negative ``initial_accumulator_value``.
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad", **kwargs):
        if initial_accumulator_value < 0.0:
            raise ValueError("initial_accumulator_value must be non-negative: "
                             f"{initial_accumulator_value}")
        super().__init__(name, **kwargs)
        self._set_hypers(kwargs.get("lr", learning_rate))
        self._initial_accumulator_value = initial_accumulator_value
        self.epsilon = epsilon or 1e-7

    def _create_slots(self, var_list):
        self._add_slots(var_list, "accumulator",
                        initializer=float(self._initial_accumulator_value))

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        c = apply_state[(var_device, var_dtype)]
        c.update(epsilon=float(var_dtype.type(self.epsilon)), neg_lr_t=-c["lr_t"])

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        acc = self.get_slot(var, "accumulator")
        acc.assign_add(grad * grad)
        return var.assign_sub(grad * c["lr_t"] / (sqrt(acc) + c["epsilon"]))

    def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
        c = self._coefficients(var, apply_state)
        acc = self.get_slot(var, "accumulator")
        acc_rows = gather(acc, indices) + grad * grad
        acc.scatter_update(IndexedSlices(acc_rows, indices))
        step = grad * c["lr_t"] / (sqrt(acc_rows) + c["epsilon"])
        return var.scatter_sub(IndexedSlices(step, indices))

    def set_weights(self, weights):
        super().set_weights(with_iterations(self.weights, weights))

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config.setdefault("initial_accumulator_value", 0.1)
        return super().from_config(config, custom_objects)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._hyper_config(),
                "initial_accumulator_value": self._initial_accumulator_value,
                "epsilon": self.epsilon}
