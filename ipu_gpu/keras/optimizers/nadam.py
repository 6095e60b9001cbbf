"""Nadam: Adam with Nesterov momentum (Dozat 2016) (Keras 2's ``Nadam``, with its momentum
schedule)."""

from __future__ import annotations

import numpy as np

from ...core.indexed_slices import IndexedSlices
from ...ops.indexing import gather
from ...ops.math import sqrt
from .optimizer_v2 import OptimizerV2
from .schedules import LearningRateSchedule


class Nadam(OptimizerV2):
    """Nadam with Keras 2's arithmetic: the momentum schedule
    ``mu_t = beta_1 * (1 - 0.5 * 0.96 ** (0.004 * t))`` and its running product, kept in
    the weight "momentum_cache"::

        m_schedule_new = momentum_cache * mu_t;  m_schedule_next = m_schedule_new * mu_{t+1}
        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g * g
        m_bar = (1 - mu_t) * g / (1 - m_schedule_new) + mu_{t+1} * m / (1 - m_schedule_next)
        w = w - learning_rate * m_bar / (sqrt(v / (1 - beta_2 ** t)) + epsilon)

    ``t`` is ``iterations + 1``; the learning rate is not decayed (Keras's ``decay`` is the
    schedule's 0.004, its ``schedule_decay``). Slots: "m", "v".

    A sparse gradient (IndexedSlices, repeated rows summed) takes Keras 2's sparse path:
    ``m`` and ``v`` of every row decay by ``beta_1`` and ``beta_2``, the batch rows'
    ``(1 - beta_1) * g`` and ``(1 - beta_2) * g * g`` are scatter-added, and only the batch
    rows of ``w`` move, by the formula above on their rows.

    Args:
      learning_rate: a float or a callable (not a schedule, as Keras).
      beta_1, beta_2: decay rates of the first and second moments.
      epsilon: small constant for stability (a falsy value means 1e-7).
      name: the optimizer's name.
      **kwargs: ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``lr``, ``schedule_decay``.

    Raises:
      ValueError: a ``LearningRateSchedule`` learning rate.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 name="Nadam", **kwargs):
        kwargs["decay"] = kwargs.pop("schedule_decay", 0.004)
        learning_rate = kwargs.get("lr", learning_rate)
        if isinstance(learning_rate, LearningRateSchedule):
            raise ValueError("The Nadam optimizer does not support "
                             "tf.keras.optimizers.LearningRateSchedules as the learning rate.")
        super().__init__(name, **kwargs)
        self._set_hypers(learning_rate, beta_1=beta_1, beta_2=beta_2)
        self.epsilon = epsilon or 1e-7
        self._m_cache = None

    def _create_slots(self, var_list):
        if self._m_cache is None:
            self._m_cache = self.add_weight("momentum_cache", shape=[],
                                            dtype=var_list[0].dtype, initializer="ones",
                                            trainable=False)
            self._weights.append(self._m_cache)
        self._add_slots(var_list, "m", "v")

    def _prepare(self, var_list):
        self._m_cache_read = float(self._m_cache)  # the cache before this step's update
        return super()._prepare(var_list)

    def _prepare_local(self, var_device, var_dtype, apply_state):
        t = var_dtype.type
        one = t(1)
        lr = t(self._hyper_float("learning_rate", var_dtype))
        beta_1 = t(self._hyper_float("beta_1", var_dtype))
        beta_2 = t(self._hyper_float("beta_2", var_dtype))
        iterations = int(self.iterations)  # syncs device
        local_step, next_step = t(iterations + 1), t(iterations + 2)
        decay_base = t(0.96)
        decay = t(self._initial_decay)  # Keras multiplies a Python float into the step
        half = t(0.5)
        m_t = beta_1 * (one - half * np.power(decay_base, decay * local_step))
        m_t_1 = beta_1 * (one - half * np.power(decay_base, decay * next_step))
        m_schedule_new = t(self._m_cache_read) * m_t
        if var_dtype == self._m_cache.dtype:
            self._m_cache.assign(float(m_schedule_new))
        m_schedule_next = m_schedule_new * m_t_1
        apply_state[(var_device, var_dtype)] = dict(
            lr_t=float(lr), neg_lr_t=float(-lr), epsilon=float(t(self.epsilon)),
            beta_1_t=float(beta_1), beta_2_t=float(beta_2), m_t=float(m_t), m_t_1=float(m_t_1),
            one_minus_beta_1_t=float(one - beta_1), one_minus_beta_2_t=float(one - beta_2),
            one_minus_m_t=float(one - m_t), one_minus_m_schedule_new=float(one - m_schedule_new),
            one_minus_m_schedule_next=float(one - m_schedule_next),
            v_t_prime_denominator=float(one - np.power(beta_2, local_step)))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        c = self._coefficients(var, apply_state)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        g_prime = grad / c["one_minus_m_schedule_new"]
        m.assign(m * c["beta_1_t"] + grad * c["one_minus_beta_1_t"])
        m_t_prime = m / c["one_minus_m_schedule_next"]
        v.assign(v * c["beta_2_t"] + grad * grad * c["one_minus_beta_2_t"])
        v_t_prime = v / c["v_t_prime_denominator"]
        m_t_bar = g_prime * c["one_minus_m_t"] + m_t_prime * c["m_t_1"]
        return var.assign_sub(m_t_bar * c["lr_t"] / (sqrt(v_t_prime) + c["epsilon"]))

    def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
        c = self._coefficients(var, apply_state)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        g_prime = grad / c["one_minus_m_schedule_new"]
        m.assign(m * c["beta_1_t"])
        m.scatter_add(IndexedSlices(grad * c["one_minus_beta_1_t"], indices))
        m_t_prime = gather(m, indices) / c["one_minus_m_schedule_next"]
        m_t_bar = g_prime * c["one_minus_m_t"] + m_t_prime * c["m_t_1"]
        v.assign(v * c["beta_2_t"])
        v.scatter_add(IndexedSlices((grad * grad) * c["one_minus_beta_2_t"], indices))
        v_t_prime = gather(v, indices) / c["v_t_prime_denominator"]
        step = m_t_bar * c["neg_lr_t"] / (sqrt(v_t_prime) + c["epsilon"])
        return var.scatter_add(IndexedSlices(step, indices))

    def get_config(self) -> dict:
        return {**super().get_config(), **self._hyper_config("beta_1", "beta_2"),
                "epsilon": self.epsilon}
