"""``keras.utils.generic_utils``: Keras 2's custom object registry (``CustomObjectScope``,
``custom_object_scope``, ``get_custom_objects``, ``register_keras_serializable``,
``get_registered_name``, ``get_registered_object``) and ``Progbar``.

Deserializing a layer, initializer, regularizer, constraint, activation, loss or metric looks a
class name up in the global custom objects first, then in ``custom_objects``, then among
Keras's own, as Keras 2 does; a registered class serializes under its ``"package>name"``."""

from __future__ import annotations

import inspect

from ..engine.serialization import _GLOBAL_CUSTOM_NAMES, _GLOBAL_CUSTOM_OBJECTS
from ..engine.serialization import get_registered_name
from .progbar import Progbar

__all__ = ["CustomObjectScope", "Progbar", "custom_object_scope", "get_custom_objects",
           "get_registered_name", "get_registered_object", "register_keras_serializable"]


class CustomObjectScope:
    """A ``with`` scope in which the given ``{name: object}`` dicts are custom objects that
    deserialization finds; the previous custom objects come back on exit."""

    def __init__(self, *args):
        self.custom_objects = args
        self.backup = None

    def __enter__(self):
        self.backup = _GLOBAL_CUSTOM_OBJECTS.copy()
        for objects in self.custom_objects:
            _GLOBAL_CUSTOM_OBJECTS.update(objects)
        return self

    def __exit__(self, *args, **kwargs):
        _GLOBAL_CUSTOM_OBJECTS.clear()
        _GLOBAL_CUSTOM_OBJECTS.update(self.backup)


custom_object_scope = CustomObjectScope


def get_custom_objects() -> dict:
    """The global custom objects dict itself (edit it to register objects)."""
    return _GLOBAL_CUSTOM_OBJECTS


def register_keras_serializable(package: str = "Custom", name: str | None = None):
    """A decorator registering a class or function as ``"<package>><name>"`` (``name``:
    its ``__name__``), under which it serializes and deserializes.

    Raises:
      ValueError: a class without ``get_config``; a name or object registered already
        (Keras's messages).
    """

    def decorator(arg):
        registered_name = f"{package}>{name if name is not None else arg.__name__}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() "
                             "method.")
        if registered_name in _GLOBAL_CUSTOM_OBJECTS:
            raise ValueError(f"{registered_name} has already been registered to "
                             f"{_GLOBAL_CUSTOM_OBJECTS[registered_name]}")
        if arg in _GLOBAL_CUSTOM_NAMES:
            raise ValueError(f"{arg} has already been registered to "
                             f"{_GLOBAL_CUSTOM_NAMES[arg]}")
        _GLOBAL_CUSTOM_OBJECTS[registered_name] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered_name
        return arg

    return decorator


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object registered as ``name``: the global custom objects first, then
    ``custom_objects``, then ``module_objects``; None when none has it."""
    if name in _GLOBAL_CUSTOM_OBJECTS:
        return _GLOBAL_CUSTOM_OBJECTS[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return None
