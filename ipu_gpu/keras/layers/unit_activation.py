"""``ThresholdedReLU`` (``x`` where ``x > theta``, else 0) and ``UnitNormalization`` (each
sample scaled to unit L2 norm over ``axis``), as tf-keras's layers."""

from __future__ import annotations

from ...core.spec import as_shape
from ...ops import math as _m
from ...ops import nn as _nn
from .. import backend
from ..engine.base_layer import Layer

__all__ = ["ThresholdedReLU", "UnitNormalization"]


class ThresholdedReLU(Layer):
    """``inputs * (inputs > theta)``.

    Raises:
      ValueError: ``theta`` None or negative (tf-keras's messages).
    """

    _shape_inference = True

    def __init__(self, theta=1.0, **kwargs):
        super().__init__(**kwargs)
        if theta is None:
            raise ValueError("Theta of a Thresholded ReLU layer cannot be None, expecting a "
                             f"float. Received: {theta}")
        if theta < 0:
            raise ValueError("The theta value of a Thresholded ReLU layer should be >=0. "
                             f"Received: {theta}")
        self.supports_masking = True
        self.theta = backend.cast_to_floatx(theta)

    def call(self, inputs):
        return inputs * _m.cast(_m.greater(inputs, float(self.theta)), inputs.dtype)

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape)

    def get_config(self) -> dict:
        config = super().get_config()
        config["theta"] = float(self.theta)
        return config


class UnitNormalization(Layer):
    """``tf.linalg.l2_normalize(inputs, axis)``: unit L2 norm over ``axis`` (an int or a
    list of ints).

    Raises:
      TypeError: an ``axis`` that is neither (at construction).
      ValueError: an axis outside the input's rank, or a repeated one (at build).
    """

    _shape_inference = True

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, (list, tuple)):
            self.axis = list(axis)
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise TypeError("Invalid value for `axis` argument: expected an int or a "
                            f"list/tuple of ints. Received: axis={axis}")
        self.supports_masking = True

    def build(self, input_shape):
        rank = len(as_shape(input_shape))
        axes = [a + rank if a < 0 else a for a in
                ([self.axis] if isinstance(self.axis, int) else self.axis)]
        if any(a < 0 or a >= rank for a in axes):
            raise ValueError("Invalid value for `axis` argument. Expected 0 <= axis < "
                             f"inputs.rank (with inputs.rank={rank}). Received: "
                             f"axis={tuple(axes)}")
        if len(axes) != len(set(axes)):
            raise ValueError(f"Duplicate axis: {tuple(axes)}")
        super().build(input_shape)

    def call(self, inputs):
        return _nn.l2_normalize(inputs, axis=self.axis)

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape)

    def get_config(self) -> dict:
        config = super().get_config()
        config["axis"] = self.axis
        return config
