"""Core layers: ``Dense``, ``Activation``, ``Lambda``, ``Masking``, ``Identity``,
``Rescaling``."""

from __future__ import annotations

import inspect

import numpy as np

from ...core.spec import TensorShape, as_shape
from ...ops import math as _m
from ...ops import matmul as _matmul
from ...ops import reduction as _r
from ...ops import nn as _nn
from ...ops import shape as _shape
from .. import activations, backend
from ..engine.call_context import set_mask
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from ._weight_args import set_weight_args, weight_args_config


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``, along the last axis of inputs of any rank >= 2.

    Args:
      units: the output size.
      activation, use_bias, kernel/bias initializer, regularizer, constraint: as Keras.
    """

    _shape_inference = True

    def __init__(self, units, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units) if not isinstance(units, int) else units
        if self.units < 0:
            raise ValueError("Received an invalid value for `units`, expected a positive "
                             f"integer. Received: units={units}")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_args(self, ("kernel", "bias"), locals())
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True

    def build(self, input_shape):
        if np.dtype(self.dtype).kind != "f":
            raise TypeError("A Dense layer can only be built with a floating-point dtype. "
                            f"Received: dtype={self.dtype}")
        input_shape = as_shape(input_shape)
        last_dim = input_shape[-1]
        if last_dim is None:
            raise ValueError("The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {input_shape}")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last_dim})
        self.kernel = self.add_weight("kernel", shape=[last_dim, self.units],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, dtype=self.dtype,
                                      trainable=True)
        if self.use_bias:
            self.bias = self.add_weight("bias", shape=[self.units],
                                        initializer=self.bias_initializer,
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint, dtype=self.dtype,
                                        trainable=True)
        else:
            self.bias = None
        self.built = True

    def call(self, inputs):
        if inputs.ndim == 2:
            outputs = _matmul.matmul(inputs, self.kernel)
        else:  # tensordot over the last axis
            lead = tuple(inputs.shape[:-1])
            flat = _shape.reshape(inputs, (-1, inputs.shape[-1]))
            outputs = _shape.reshape(_matmul.matmul(flat, self.kernel), lead + (self.units,))
        if self.use_bias:
            outputs = _nn.bias_add(outputs, self.bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def compute_output_shape(self, input_shape):
        input_shape = as_shape(input_shape).with_rank_at_least(2)
        if input_shape[-1] is None:
            raise ValueError("The last dimension of the input shape of a Dense layer should be "
                             f"defined. Found None. Received: input_shape={input_shape}")
        return input_shape[:-1].concatenate([self.units])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "units": self.units,
            "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
        })
        config.update(weight_args_config(self, ("kernel", "bias"), activity_regularizer=True))
        return config


class Activation(Layer):
    """Applies an activation function (a name or a callable) to its input."""

    _shape_inference = True

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config["activation"] = activations.serialize(self.activation)
        return config


class Lambda(Layer):
    """Wraps an arbitrary function of the inputs as a layer.

    Args:
      function: called as ``function(inputs, **arguments)``, with ``mask`` and ``training``
        too when it takes them.
      output_shape: the output shape without the batch dimension, or a function of the input
        shape; default: inferred by running the function.
      mask: a function ``(inputs, mask) -> mask``, or a fixed mask.
      arguments: extra keyword arguments for ``function``.
    """

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = arguments or {}
        self.mask = mask
        self._output_shape = output_shape
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._fn_expects_training_arg = "training" in params
        self._fn_expects_mask_arg = "mask" in params

    def call(self, inputs, mask=None, training=None):
        kwargs = dict(self.arguments)
        if self._fn_expects_mask_arg:
            kwargs["mask"] = mask
        if self._fn_expects_training_arg:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs, mask=None):
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape):
        if self._output_shape is None:
            return super().compute_output_shape(input_shape)
        if callable(self._output_shape):
            return as_shape(self._output_shape(input_shape))
        batch = as_shape(input_shape)[0] if not isinstance(input_shape, list) else \
            as_shape(input_shape[0])[0]
        return TensorShape([batch, *as_shape(self._output_shape).as_list()])

    def get_config(self) -> dict:
        name = getattr(self.function, "__name__", None)
        if name is None or name == "<lambda>":
            raise NotImplementedError("Lambda.get_config: only named functions serialize "
                                      "(Keras stores a lambda's bytecode; ipu_gpu does not)")
        config = super().get_config()
        config.update({"function": name, "function_type": "function",
                       "module": getattr(self.function, "__module__", None),
                       "output_shape": self._output_shape, "arguments": self.arguments})
        return config


class Masking(Layer):
    """Masks timesteps whose features all equal ``mask_value``: they are zeroed and the
    output's mask (``any(inputs != mask_value, axis=-1)``) skips them downstream."""

    _shape_inference = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value
        self._compute_output_and_mask_jointly = True

    def compute_mask(self, inputs, mask=None):
        return _r.reduce_any(_m.not_equal(inputs, backend._constant_like(self.mask_value,
                                                                         inputs)), axis=-1)

    def call(self, inputs):
        keep = _r.reduce_any(_m.not_equal(inputs, backend._constant_like(self.mask_value,
                                                                          inputs)),
                             axis=-1, keepdims=True)
        outputs = inputs * _m.cast(keep, inputs.dtype)
        set_mask(outputs, _shape.squeeze(keep, [-1]))
        return outputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config["mask_value"] = self.mask_value
        return config


class Identity(Layer):
    """Returns its input unchanged."""

    _shape_inference = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs):
        return inputs

    def compute_output_shape(self, input_shape):
        return input_shape


class Rescaling(Layer):
    """``inputs * scale + offset`` in the compute dtype (integer images become floats)."""

    _shape_inference = True
    _float_output = True

    def __init__(self, scale, offset=0.0, **kwargs):
        self.scale = scale
        self.offset = offset
        super().__init__(**kwargs)

    def call(self, inputs):
        dtype = self.compute_dtype
        x = inputs if inputs.dtype == np.dtype(dtype) else _m.cast(inputs, dtype)
        return x * backend._constant_like(self.scale, x) + backend._constant_like(self.offset,
                                                                                 x)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(scale=self.scale, offset=self.offset)
        return config
