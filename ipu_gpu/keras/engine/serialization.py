"""Keras object configs: ``{"module", "class_name", "config", "registered_name"}`` dicts
(tf-keras 2.x's format; Keras 2.6's ``{"class_name", "config"}`` is read too), and the
snake_case names Keras derives layer names from."""

from __future__ import annotations

import inspect
import re


# Keras 2's global custom objects (``keras.utils.get_custom_objects``, ``custom_object_scope``)
# and the names ``register_keras_serializable`` gave classes ("package>name").
_GLOBAL_CUSTOM_OBJECTS: dict = {}
_GLOBAL_CUSTOM_NAMES: dict = {}


def get_registered_name(obj) -> str:
    """The name ``obj`` was registered under, else its ``__name__`` (Keras's)."""
    try:
        return _GLOBAL_CUSTOM_NAMES[obj]
    except (KeyError, TypeError):
        return obj.__name__


def to_snake_case(name: str) -> str:
    """``Conv2DTranspose`` -> ``conv2d_transpose``, as Keras's ``generic_utils.to_snake_case``."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    if insecure[0] != "_":
        return insecure
    return "private" + insecure


def serialize_keras_object(obj, module: str):
    """The config dict of an object with ``get_config``; None stays None."""
    if obj is None:
        return None
    return {"module": module, "class_name": get_registered_name(type(obj)),
            "config": obj.get_config(), "registered_name": None}


def get_keras_object(identifier, deserialize, printable_module_name: str,
                     instantiate_classes: bool = False):
    """What a Keras module's ``get`` returns: None for None, ``deserialize(identifier)`` for
    a name or config dict, a callable as is (a class instantiated when
    ``instantiate_classes``).

    Raises:
      ValueError: anything else ("Could not interpret <printable_module_name> identifier").
    """
    if identifier is None:
        return None
    if isinstance(identifier, (dict, str)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier() if instantiate_classes and isinstance(identifier, type) \
            else identifier
    raise ValueError(f"Could not interpret {printable_module_name} identifier: {identifier}")


def deserialize_keras_object(identifier, module_objects: dict, custom_objects=None,
                             printable_module_name: str = "object"):
    """An object from a config dict or a name: a class is built with ``from_config`` (or
    called with no arguments for a bare name); a function is returned as is.

    Raises:
      ValueError: an unknown name or a malformed config.
    """
    objects = dict(module_objects)
    objects.update(custom_objects or {})
    objects.update(_GLOBAL_CUSTOM_OBJECTS)  # Keras looks there first
    if isinstance(identifier, dict):
        if "class_name" not in identifier or "config" not in identifier:
            raise ValueError(f"Improper config format for {printable_module_name}: "
                             f"{identifier}. Expecting python dict contains `class_name` and "
                             "`config` as keys")
        name, config = identifier["class_name"], identifier["config"]
        if isinstance(config, str) and name == "function":  # tf-keras's function format
            name, config = config, None
    elif isinstance(identifier, str):
        name, config = identifier, None
    else:
        raise ValueError(f"Could not interpret {printable_module_name} identifier: "
                         f"{identifier}")
    obj = objects.get(name)
    if obj is None:
        raise ValueError(f"Unknown {printable_module_name}: '{name}'. Please ensure you are "
                         "using a `keras.utils.custom_object_scope` and that this object is "
                         "included in the scope.")
    if inspect.isclass(obj):
        if config is None:
            return obj()
        if hasattr(obj, "from_config"):
            if "custom_objects" in inspect.signature(obj.from_config).parameters:
                return obj.from_config(dict(config), custom_objects=dict(custom_objects or {}))
            return obj.from_config(dict(config))
        return obj(**config)
    return obj
