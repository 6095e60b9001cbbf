"""Activation layers: ``ReLU``, ``LeakyReLU``, ``PReLU``, ``ELU``, ``Softmax``."""

from __future__ import annotations

import numpy as np

from ...ops import indexing as _idx
from ...ops import math as _m
from ...ops import reduction as _r
from ...core.spec import as_shape
from ...ops import nn as _nn
from .. import activations, backend
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from ._weight_args import set_weight_args, weight_args_config

__all__ = ["ELU", "LeakyReLU", "PReLU", "ReLU", "Softmax"]


class _Elementwise(Layer):
    _shape_inference = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_output_shape(self, input_shape):
        return input_shape


class ReLU(_Elementwise):
    """``relu(x, alpha=negative_slope, max_value, threshold)``.

    Raises:
      ValueError: a negative ``max_value``, ``negative_slope`` or ``threshold``.
    """

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0.0:
            raise ValueError(f"max_value of a ReLU layer cannot be a negative value. Received: "
                             f"{max_value}")
        if negative_slope is None or negative_slope < 0.0:
            raise ValueError("negative_slope of a ReLU layer cannot be a negative value. "
                             f"Received: {negative_slope}")
        if threshold is None or threshold < 0.0:
            raise ValueError(f"threshold of a ReLU layer cannot be a negative value. Received: "
                             f"{threshold}")
        self.max_value = None if max_value is None else float(max_value)
        self.negative_slope = float(negative_slope)
        self.threshold = float(threshold)

    def call(self, inputs):
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(max_value=self.max_value, negative_slope=self.negative_slope,
                      threshold=self.threshold)
        return config


class LeakyReLU(_Elementwise):
    """``x`` where positive, ``alpha * x`` elsewhere (Keras 2's default ``alpha`` is 0.3)."""

    def __init__(self, alpha=0.3, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError("The alpha value of a Leaky ReLU layer cannot be None, Expecting "
                             f"a float. Received: {alpha}")
        self.alpha = float(alpha)

    def call(self, inputs):
        return activations.relu(inputs, alpha=self.alpha)

    def get_config(self) -> dict:
        config = super().get_config()
        config["alpha"] = float(backend.cast_to_floatx(self.alpha))  # Keras 2 keeps floatx's
        return config


class ELU(_Elementwise):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError("Alpha of an ELU layer cannot be None, expecting a float. "
                             f"Received: {alpha}")
        self.alpha = float(alpha)

    def call(self, inputs):
        return activations.elu(inputs, self.alpha)

    def get_config(self) -> dict:
        config = super().get_config()
        config["alpha"] = self.alpha
        return config


def _large_negative(dtype):
    # float16 cannot hold -1e9: half its lowest value, so sums do not overflow (Keras's rule)
    return np.finfo(np.float16).min / 2.0 if dtype == np.float16 else -1e9


class Softmax(_Elementwise):
    """Softmax along ``axis`` (an int or a tuple); masked positions (mask False or 0) get a
    large negative logit first."""

    def __init__(self, axis=-1, robust_masking=False, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis
        self.robust_masking = robust_masking

    def call(self, inputs, mask=None):
        if mask is not None:
            negative = backend._constant_like(_large_negative(inputs.dtype), inputs)
            if self.robust_masking:
                if mask.dtype != np.bool_:
                    mask = _m.greater(mask, backend._constant_like(0.5, mask))
                inputs = _idx.where(mask, inputs, negative)
            else:
                one = backend._constant_like(1.0, inputs)
                inputs = inputs + (one - _m.cast(mask, inputs.dtype)) * negative
        if isinstance(self.axis, (tuple, list)):
            if len(self.axis) > 1:
                return _m.exp(inputs - _r.reduce_logsumexp(inputs, axis=list(self.axis),
                                                           keepdims=True))
            return activations.softmax(inputs, axis=self.axis[0])
        return activations.softmax(inputs, axis=self.axis)

    def get_config(self) -> dict:
        config = super().get_config()
        config["axis"] = self.axis
        if self.robust_masking:
            config["robust_masking"] = True
        return config


class PReLU(_Elementwise):
    """``x`` where positive, ``alpha * x`` elsewhere, with a learned ``alpha`` per input
    element (shared along ``shared_axes``)."""

    def __init__(self, alpha_initializer="zeros", alpha_regularizer=None,
                 alpha_constraint=None, shared_axes=None, **kwargs):
        super().__init__(**kwargs)
        set_weight_args(self, ("alpha",), locals())
        if shared_axes is None:
            self.shared_axes = None
        elif not isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [shared_axes]
        else:
            self.shared_axes = list(shared_axes)

    def build(self, input_shape):
        dims = as_shape(input_shape).as_list()
        param_shape = dims[1:]
        for i in self.shared_axes or ():
            param_shape[i - 1] = 1
        self.alpha = self.add_weight(shape=param_shape, name="alpha",
                                     initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        axes = {}
        if self.shared_axes:
            axes = {i: dims[i] for i in range(1, len(dims)) if i not in self.shared_axes}
        self.input_spec = InputSpec(ndim=len(dims), axes=axes)
        self.built = True

    def call(self, inputs):
        return _nn.relu(inputs) - self.alpha * _nn.relu(-inputs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(weight_args_config(self, ("alpha",)), shared_axes=self.shared_axes)
        return config
