"""``keras.constraints``: projections applied to a weight after each optimizer update
(``tf_keras/src/constraints.py``). ``Layer.add_weight(constraint=...)`` stores the
constraint on the variable (``variable.constraint``); optimizers apply it."""

from __future__ import annotations


from .. import ops as _ops  # noqa: F401  # registers every op
from ..core.convert import convert_to_tensor
from ..ops import math as _m
from ..ops import reduction as _r
from . import backend
from .engine.serialization import (deserialize_keras_object, get_keras_object,
                                   serialize_keras_object)

__all__ = ["Constraint", "MaxNorm", "MinMaxNorm", "NonNeg", "UnitNorm", "deserialize", "get",
           "max_norm", "min_max_norm", "non_neg", "serialize", "unit_norm"]


def _norms(w, axis):
    return backend.sqrt(_r.reduce_sum(_m.square(w), axis=axis, keepdims=True))


def _c(value, w):
    return backend._constant_like(value, w)


class Constraint:
    """Base class: ``constraint(w)`` returns the projected weights."""

    def __call__(self, w):
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class MaxNorm(Constraint):
    """Rescale the weights incident to each unit (norm over ``axis``) to norms at most
    ``max_value``."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = backend.clip(norms, _c(0, w), _c(self.max_value, w))
        return w * (desired / (_c(backend.epsilon(), w) + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Zero the negative weights."""

    def __call__(self, w):
        w = convert_to_tensor(w)
        return w * _m.cast(_m.greater_equal(w, _c(0, w)), w.dtype)


class UnitNorm(Constraint):
    """Rescale the weights incident to each unit to norm 1 (norm over ``axis``)."""

    def __init__(self, axis=0):
        self.axis = axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        return w / (_c(backend.epsilon(), w) + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Move the norms (over ``axis``) into [min_value, max_value]: rescale to
    ``rate * clip(norm) + (1 - rate) * norm``."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = axis

    def __call__(self, w):
        w = convert_to_tensor(w)
        norms = _norms(w, self.axis)
        desired = (_c(self.rate, w) * backend.clip(norms, _c(self.min_value, w),
                                                   _c(self.max_value, w))
                   + _c(1 - self.rate, w) * norms)
        return w * (desired / (_c(backend.epsilon(), w) + norms))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm, non_neg, unit_norm, min_max_norm = MaxNorm, NonNeg, UnitNorm, MinMaxNorm
_OBJECTS = {"Constraint": Constraint, "MaxNorm": MaxNorm, "NonNeg": NonNeg,
            "UnitNorm": UnitNorm, "MinMaxNorm": MinMaxNorm, "max_norm": MaxNorm,
            "non_neg": NonNeg, "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm}


def serialize(constraint):
    return serialize_keras_object(constraint, "keras.constraints")


def deserialize(config, custom_objects=None):
    return deserialize_keras_object(config, _OBJECTS, custom_objects, "constraint")


def get(identifier):
    """A constraint from None (None), a name, a config dict or a callable.

    Raises:
      ValueError: anything else, or an unknown name.
    """
    return get_keras_object(identifier, deserialize, "constraint function")
