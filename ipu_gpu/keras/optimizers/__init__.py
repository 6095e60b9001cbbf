"""``keras.optimizers``: Keras 2's optimizers (the OptimizerV2 family), learning-rate
schedules and the ``get``/``serialize``/``deserialize`` helpers.

How a step touches state is described in ``optimizer_v2.py``; the gradient transformations
(clipping, replica sums) are in ``utils.py``. ``legacy`` names the same classes (tf-keras
keeps Keras 2's arithmetic there); ``AdamW`` follows tf-keras's newer AdamW (``adamw.py``).
"""

from __future__ import annotations

from . import legacy, schedules
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam
from .adamax import Adamax
from .adamw import AdamW
from .nadam import Nadam
from .optimizer_v2 import Optimizer, OptimizerV2
from .rmsprop import RMSprop
from .sgd import SGD

_CLASSES = {"adadelta": Adadelta, "adagrad": Adagrad, "adam": Adam, "adamax": Adamax,
            "adamw": AdamW, "nadam": Nadam, "rmsprop": RMSprop, "sgd": SGD}


def serialize(optimizer) -> dict:
    """``{"class_name": ..., "config": ...}`` for an optimizer (Keras 2's form)."""
    if not isinstance(optimizer, OptimizerV2):
        raise ValueError(f"serialize: optimizer must be an Optimizer, got {optimizer!r}")
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def deserialize(config, custom_objects=None):
    """The optimizer a ``serialize`` dict describes; class names are matched without case
    for the built-in optimizers ("adam", "Adam", "ADAM").

    Raises:
      ValueError: an unknown class name ("Unknown optimizer: 'name'").
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret serialized optimizer: {config}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _CLASSES.get(str(name).lower())
    if cls is None and name == "LossScaleOptimizer":
        from ..mixed_precision import LossScaleOptimizer as cls
    if cls is None:
        raise ValueError(f"Unknown optimizer: '{name}'. Please ensure you are using a "
                         "`keras.utils.custom_object_scope` and that this object is included "
                         "in the scope.")
    return cls.from_config(dict(config.get("config") or {}), custom_objects=custom_objects) \
        if issubclass(cls, OptimizerV2) else cls(**(config.get("config") or {}))


def get(identifier):
    """An optimizer from an instance (returned as is), a name ("sgd", "adam", ...) or a
    ``serialize`` dict.

    Raises:
      ValueError: anything else ("Could not interpret optimizer identifier: ...").
    """
    if isinstance(identifier, OptimizerV2):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        return deserialize({"class_name": identifier, "config": {}})
    raise ValueError(f"Could not interpret optimizer identifier: {identifier}")


__all__ = ["Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Nadam", "Optimizer",
           "OptimizerV2", "RMSprop", "SGD", "deserialize", "get", "legacy", "schedules",
           "serialize"]
