"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter 2019).

Keras 2's legacy family has no AdamW (TF 2.6 programs took it from TensorFlow Addons); this
follows tf-keras's ``keras.optimizers.AdamW`` (the 2.11+ optimizer), whose arithmetic is::

    w = w - w * weight_decay * learning_rate     # first, for each variable not excluded
    (then the Adam step of ``Adam``)

on the OptimizerV2 machinery of the other optimizers here (slots "m", "v", "vhat"; clipping
in Keras 2's order: clipvalue before clipnorm).
"""

from __future__ import annotations

import re

from .adam import Adam


class AdamW(Adam):
    """Adam with decoupled weight decay.

    Args:
      learning_rate, beta_1, beta_2, epsilon, amsgrad, name, **kwargs: as ``Adam``.
      weight_decay: the decay rate; each step subtracts ``w * weight_decay *
        learning_rate`` from every variable not excluded by ``exclude_from_weight_decay``.

    Raises:
      ValueError: ``weight_decay`` is None.
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, name="AdamW", **kwargs):
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2,
                         epsilon=epsilon, amsgrad=amsgrad, name=name, **kwargs)
        if weight_decay is None:
            raise ValueError("Missing value of `weight_decay` which is required and must be a "
                             "float value.")
        self.weight_decay = weight_decay
        self._exclude_ids = set()
        self._exclude_names = []

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Leave variables out of the weight decay: those in ``var_list``, and those whose
        name contains a match of one of the regular expressions ``var_names``.

        Raises:
          ValueError: called after the optimizer made its slots.
        """
        if self._slots:
            raise ValueError("`exclude_from_weight_decay()` can only be configued before the "
                             "optimizer is built.")
        self._exclude_ids = {id(v) for v in var_list or ()}
        self._exclude_names = list(var_names or [])

    def _use_weight_decay(self, var) -> bool:
        if id(var) in self._exclude_ids:
            return False
        return not any(re.search(name, var.name) for name in self._exclude_names)

    def _prepare_local(self, var_device, var_dtype, apply_state):
        super()._prepare_local(var_device, var_dtype, apply_state)
        c = apply_state[(var_device, var_dtype)]
        c["weight_decay"] = float(var_dtype.type(self.weight_decay))

    def _resource_apply_dense(self, grad, var, apply_state=None):
        if self.weight_decay and self._use_weight_decay(var):
            c = self._coefficients(var, apply_state)
            var.assign_sub(var * c["weight_decay"] * c["lr_t"])
        return super()._resource_apply_dense(grad, var, apply_state)

    def _resource_apply_sparse(self, grad, var, indices, apply_state=None):
        if self.weight_decay and self._use_weight_decay(var):  # every row decays
            c = self._coefficients(var, apply_state)
            var.assign_sub(var * c["weight_decay"] * c["lr_t"])
        return super()._resource_apply_sparse(grad, var, indices, apply_state)

    def get_config(self) -> dict:
        config = super().get_config()
        config["weight_decay"] = self.weight_decay
        return config
