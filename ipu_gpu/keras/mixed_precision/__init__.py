"""``keras.mixed_precision``: dtype policies and loss scaling (Keras 2's API).

``set_global_policy('mixed_float16')`` makes layers created afterwards keep float32 weights
(read as float16 inside their calls: ``engine/autocast_variable.py``) and compute in float16;
``Model.compile`` then wraps the optimizer in a ``LossScaleOptimizer``. ``mixed_bfloat16``
policies can be made but a layer refuses one (NotImplementedError): ipu_gpu, like the IPU,
has no bfloat16. Keras 2.6's module layout is kept (``policy``, ``loss_scale_optimizer``,
``get_layer_policy``) with its deprecated ``experimental`` API.
"""

from __future__ import annotations

from ..engine.policy import Policy, global_policy, set_global_policy
from . import experimental, get_layer_policy, loss_scale_optimizer, policy
from .loss_scale_optimizer import LossScaleOptimizer

__all__ = ["LossScaleOptimizer", "Policy", "experimental", "get_layer_policy", "global_policy",
           "loss_scale_optimizer", "policy", "set_global_policy"]
