"""``keras.regularizers``: weight penalties added to a layer's losses
(``tf_keras/src/regularizers.py``). ``"l1"``, ``"l2"`` and ``"l1_l2"`` take Keras's default
factor 0.01."""

from __future__ import annotations

import math


from .. import ops as _ops  # noqa: F401  # registers every op
from ..ops import math as _m
from ..ops import nn as _nn
from ..ops import reduction as _r
from . import backend
from .engine.serialization import (deserialize_keras_object, get_keras_object,
                                   serialize_keras_object)

__all__ = ["L1", "L1L2", "L2", "Regularizer", "deserialize", "get", "l1", "l1_l2", "l2",
           "serialize"]


def _check_penalty_number(x) -> None:
    if not isinstance(x, (float, int)):
        raise ValueError(f"Value {x} is not a valid regularization penalty number, expected an "
                         "int or float value.")
    if math.isinf(x) or math.isnan(x):
        raise ValueError(f"Value {x} is not a valid regularization penalty number, an infinite "
                         "number or NaN are not valid values.")


def _single_factor(value, kwargs: dict):
    """The factor of ``L1`` or ``L2`` as floatx: Keras 2.x's older keyword ``l`` wins over
    ``value``; None means 0.01.

    Raises:
      TypeError: other keyword arguments.
      ValueError: not a finite int or float.
    """
    value = kwargs.pop("l", value)
    if kwargs:
        raise TypeError(f"Argument(s) not recognized: {kwargs}")
    value = 0.01 if value is None else value
    _check_penalty_number(value)
    return backend.cast_to_floatx(value)


def _factor(value, x):
    return backend._constant_like(value, x)


class Regularizer:
    """Base class: ``regularizer(weights)`` returns a scalar penalty."""

    def __call__(self, x):
        return 0.0

    def get_config(self) -> dict:
        raise NotImplementedError(f"{type(self).__name__} does not implement get_config()")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)``; both factors default to 0 here (0.01 for the
    ``l1_l2`` function and the ``"l1_l2"`` name)."""

    def __init__(self, l1=0.0, l2=0.0):
        l1 = 0.0 if l1 is None else l1
        l2 = 0.0 if l2 is None else l2
        _check_penalty_number(l1)
        _check_penalty_number(l2)
        self.l1 = backend.cast_to_floatx(l1)
        self.l2 = backend.cast_to_floatx(l2)

    def __call__(self, x):
        x = backend.as_tensor(x)
        regularization = backend._constant_like(0, x)
        if self.l1:
            regularization = regularization + _factor(self.l1, x) * _r.reduce_sum(_m.abs(x))
        if self.l2:
            regularization = regularization + _factor(2.0 * self.l2, x) * _nn.l2_loss(x)
        return regularization

    def get_config(self) -> dict:
        return {"l1": float(self.l1), "l2": float(self.l2)}


class L1(Regularizer):
    """``l1 * sum(|x|)`` (``l1`` defaults to 0.01)."""

    def __init__(self, l1=0.01, **kwargs):
        self.l1 = _single_factor(l1, kwargs)

    def __call__(self, x):
        x = backend.as_tensor(x)
        return _factor(self.l1, x) * _r.reduce_sum(_m.abs(x))

    def get_config(self) -> dict:
        return {"l1": float(self.l1)}


class L2(Regularizer):
    """``l2 * sum(x**2)`` (``l2`` defaults to 0.01)."""

    def __init__(self, l2=0.01, **kwargs):
        self.l2 = _single_factor(l2, kwargs)

    def __call__(self, x):
        x = backend.as_tensor(x)
        return _factor(2.0 * self.l2, x) * _nn.l2_loss(x)  # l2 * sum(x**2), as Keras computes it

    def get_config(self) -> dict:
        return {"l2": float(self.l2)}


def l1_l2(l1=0.01, l2=0.01) -> L1L2:
    """An L1L2 regularizer with both factors (0.01 by default)."""
    return L1L2(l1=l1, l2=l2)


l1 = L1
l2 = L2
_OBJECTS = {"Regularizer": Regularizer, "L1": L1, "L2": L2, "L1L2": L1L2, "l1": L1, "l2": L2,
            "l1_l2": l1_l2}


def serialize(regularizer):
    return serialize_keras_object(regularizer, "keras.regularizers")


def deserialize(config, custom_objects=None):
    """A regularizer from a config dict or a name (``"l1_l2"``: both factors 0.01)."""
    if config == "l1_l2":
        return L1L2(l1=0.01, l2=0.01)
    return deserialize_keras_object(config, _OBJECTS, custom_objects, "regularizer")


def get(identifier):
    """A regularizer from None (None), a name, a config dict or a callable.

    Raises:
      ValueError: anything else, or an unknown name.
    """
    return get_keras_object(identifier, deserialize, "regularizer")
