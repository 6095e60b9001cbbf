"""RMSprop (Hinton, Coursera lecture 6e), plain, with momentum or centered (Keras 2's
``RMSprop``)."""

from __future__ import annotations

from ...core.tensor import Tensor
from ...ops.math import sqrt
from .optimizer_v2 import OptimizerV2


class RMSprop(OptimizerV2):
    """RMSprop with Keras 2's arithmetic, which differs by case::

        ms = ms + (g * g - ms) * (1 - rho)        # "rms"; without momentum:
                                                  #   ms = rho * ms + (1 - rho) * g * g
        mg = mg + (g - mg) * (1 - rho)            # centered only: "mg"
        denom = ms - mg * mg  (centered)  or  ms

    without momentum (Keras's own ops): ``w = w - lr * g / (sqrt(denom) + epsilon)``;
    with momentum (TF's ApplyRMSProp): ``mom = momentum * mom + lr * g / sqrt(denom +
    epsilon)``, ``w = w - mom``. Slots: "rms", "momentum" (momentum > 0), "mg" (centered).

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
        self._set_hyper("learning_rate", kwargs.get("lr", learning_rate))
        self._set_hyper("decay", self._initial_decay)
        self._set_hyper("rho", rho)
        self._momentum = isinstance(momentum, Tensor) or callable(momentum) or momentum > 0
        if isinstance(momentum, (int, float)) and (momentum < 0 or momentum > 1):
            raise ValueError("`momentum` must be between [0, 1]. Received: "
                             f"momentum={momentum} (of type {type(momentum)}).")
        self._set_hyper("momentum", momentum)
        self.epsilon = epsilon or 1e-7
        self.centered = centered

    def _create_slots(self, var_list):
        for var in var_list:
            self.add_slot(var, "rms")
        if self._momentum:
            for var in var_list:
                self.add_slot(var, "momentum")
        if self.centered:
            for var in var_list:
                self.add_slot(var, "mg")

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
        slots = self._slots[id(var)]
        rms = slots["rms"]
        lr = c["lr_t"]
        if self._momentum:
            rms.assign_add((grad * grad - rms) * c["one_minus_rho"])
            denom = rms
            if self.centered:
                mg = slots["mg"]
                mg.assign_add((grad - mg) * c["one_minus_rho"])
                denom = rms - mg * mg
            mom = slots["momentum"]
            mom.assign(mom * c["momentum"] + grad * lr / sqrt(denom + c["epsilon"]))
            return var.assign_sub(mom)
        rms.assign(rms * c["rho"] + grad * grad * c["one_minus_rho"])
        denom = rms
        if self.centered:
            mg = slots["mg"]
            mg.assign(mg * c["rho"] + grad * c["one_minus_rho"])
            denom = rms - mg * mg
        return var.assign_sub(grad * lr / (sqrt(denom) + c["epsilon"]))

    def set_weights(self, weights):
        # Keras 1 optimizers had no iterations first: prepend 0
        if len(self.weights) == len(weights) + 1:
            weights = [0, *weights]
        super().set_weights(weights)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"learning_rate": self._serialize_hyperparameter("learning_rate"),
                       "decay": self._initial_decay,
                       "rho": self._serialize_hyperparameter("rho"),
                       "momentum": self._serialize_hyperparameter("momentum"),
                       "epsilon": self.epsilon, "centered": self.centered})
        return config


RMSProp = RMSprop
