"""``keras.mixed_precision.experimental``: Keras 2.6's deprecated API (``set_policy``,
``global_policy``, ``get_layer_policy``, a ``Policy`` with a ``loss_scale`` and a
``LossScaleOptimizer(optimizer, loss_scale)``), on the same machinery as the stable API."""

from __future__ import annotations

import logging

from ..engine.policy import PolicyV1 as Policy
from ..engine.policy import global_policy, set_policy
from .get_layer_policy import get_layer_policy
from .loss_scale_optimizer import LossScaleOptimizer as _LossScaleOptimizer

_log = logging.getLogger("ipu_gpu.keras")


class LossScaleOptimizer(_LossScaleOptimizer):
    """The deprecated ``LossScaleOptimizer(optimizer, loss_scale)``: ``"dynamic"`` is the
    stable class's default dynamic scale, a number a fixed scale.

    Raises:
      ValueError: another ``loss_scale``.
    """

    def __init__(self, optimizer, loss_scale):
        prefix = ("tf.keras.mixed_precision.experimental.LossScaleOptimizer is deprecated. "
                  "Please use tf.keras.mixed_precision.LossScaleOptimizer instead. ")
        if isinstance(loss_scale, (int, float)) and not isinstance(loss_scale, bool):
            _log.warning("%sFor example:\n  opt = tf.keras.mixed_precision."
                         "LossScaleOptimizer(opt, dynamic=False, initial_scale=%s)",
                         prefix, loss_scale)
            super().__init__(optimizer, dynamic=False, initial_scale=loss_scale)
        elif loss_scale == "dynamic":
            _log.warning("%sFor example:\n  opt = tf.keras.mixed_precision."
                         "LossScaleOptimizer(opt)", prefix)
            super().__init__(optimizer)
        else:
            raise ValueError(f'Invalid value passed to loss_scale. loss_scale must be the '
                             f'string "dynamic" (recommended), an int, a float, a '
                             f"FixedLossScale, or a DynamicLossScale. Got value: {loss_scale}")


__all__ = ["LossScaleOptimizer", "Policy", "get_layer_policy", "global_policy", "set_policy"]
