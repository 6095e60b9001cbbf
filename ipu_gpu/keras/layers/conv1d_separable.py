"""``DepthwiseConv1D`` and ``SeparableConv1D`` (alias ``SeparableConvolution1D``): the 1-D
depthwise and depthwise-then-pointwise convolutions, computed as the 2-D ones over a unit
height, as tf-keras does."""

from __future__ import annotations

from ...core.spec import TensorShape, as_shape
from ...ops import array as _array
from ...ops import conv as _conv
from ...ops import nn as _nn
from ...ops import shape as _shape
from .. import constraints, initializers, regularizers
from ..engine.input_spec import InputSpec
from ._weight_args import set_weight_args, weight_args_config
from .convolutional import Conv, Conv1D

__all__ = ["DepthwiseConv1D", "SeparableConv1D", "SeparableConvolution1D"]


def _planar(layer):
    """(spatial axis to expand, 2-D data format, 4-long strides) of a 1-D layer."""
    s = layer.strides[0]
    if layer.data_format == "channels_last":
        return 1, "NHWC", [1, 1, s, 1]
    return 2, "NCHW", [1, 1, 1, s]


def _depthwise(layer, inputs, padding):
    axis, fmt, strides = _planar(layer)
    y = _conv.depthwise_conv2d(_shape.expand_dims(inputs, axis),
                               _shape.expand_dims(layer.depthwise_kernel, 0), strides,
                               padding, data_format=fmt,
                               dilations=[1, layer.dilation_rate[0]])
    return y, axis, fmt


def _out(layer, outputs, axis, fmt):
    if layer.use_bias:
        outputs = _nn.bias_add(outputs, layer.bias, data_format=fmt)
    outputs = _shape.squeeze(outputs, [axis])
    return layer.activation(outputs) if layer.activation is not None else outputs


def _add_depthwise(layer, channels):
    layer.depthwise_kernel = layer.add_weight(
        name="depthwise_kernel", shape=layer.kernel_size + (channels, layer.depth_multiplier),
        initializer=layer.depthwise_initializer, regularizer=layer.depthwise_regularizer,
        constraint=layer.depthwise_constraint, trainable=True, dtype=layer.dtype)


class DepthwiseConv1D(Conv):
    """Each input channel of ``(batch, steps, channels)`` convolved with its own
    ``depth_multiplier`` filters (kernel ``(kernel_size, channels, depth_multiplier)``).

    Raises:
      ValueError: an input that is not 3-D or has no channel count (at build).
    """

    def __init__(self, kernel_size, strides=1, padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(1, None, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = depth_multiplier
        set_weight_args(self, ("depthwise",), locals(), initializers_only=("bias",))

    def build(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"Inputs to `DepthwiseConv` should have rank 3. Received "
                             f"input_shape={input_shape}.")
        input_shape = as_shape(input_shape)
        channels = self._input_channel(input_shape, "DepthwiseConv")
        _add_depthwise(self, channels)
        self.bias = self._add_bias(channels * self.depth_multiplier)
        self.input_spec = InputSpec(min_ndim=3, axes={self._channel_axis(): channels})
        self.built = True

    def call(self, inputs):
        return _out(self, *_depthwise(self, inputs, self.padding.upper()))

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        c_axis, t_axis = (1, 2) if self.data_format == "channels_first" else (2, 1)
        dims[t_axis] = self._spatial_output_shape([dims[t_axis]])[0]
        dims[c_axis] = None if dims[c_axis] is None else dims[c_axis] * self.depth_multiplier
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            config.pop(key)
        config["depth_multiplier"] = self.depth_multiplier
        config.update(weight_args_config(self, ("depthwise",)))
        return config


class SeparableConv1D(Conv1D):
    """A depthwise 1-D convolution followed by a pointwise (kernel size 1) one mixing the
    channels; ``padding="causal"`` pads on the left only."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, depth_multiplier=1, activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", pointwise_initializer="glorot_uniform",
                 bias_initializer="zeros", depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = depth_multiplier
        set_weight_args(self, ("depthwise", "pointwise"), locals())

    def build(self, input_shape):
        input_shape = as_shape(input_shape)
        channels = self._input_channel(input_shape)
        self.input_spec = InputSpec(ndim=3, axes={self._channel_axis(): channels})
        _add_depthwise(self, channels)
        self.pointwise_kernel = self.add_weight(
            name="pointwise_kernel", shape=(1, self.depth_multiplier * channels, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, trainable=True, dtype=self.dtype)
        self.bias = self._add_bias(self.filters)
        self.built = True

    def call(self, inputs):
        padding = self.padding.upper()
        if self.padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            pads = [[0, 0], [left, 0], [0, 0]] if self.data_format == "channels_last" else \
                [[0, 0], [0, 0], [left, 0]]
            inputs = _array.pad(inputs, pads)
            padding = "VALID"
        y, axis, fmt = _depthwise(self, inputs, padding)
        y = _conv.conv2d(y, _shape.expand_dims(self.pointwise_kernel, 0), [1, 1], "VALID",
                         data_format=fmt)
        return _out(self, y, axis, fmt)

    def get_config(self) -> dict:
        config = super().get_config()  # tf-keras keeps Conv's keys (groups, kernel_*) too

        config.update({
            "depth_multiplier": self.depth_multiplier,
            "depthwise_initializer": initializers.serialize(self.depthwise_initializer),
            "pointwise_initializer": initializers.serialize(self.pointwise_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "depthwise_regularizer": regularizers.serialize(self.depthwise_regularizer),
            "pointwise_regularizer": regularizers.serialize(self.pointwise_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "activity_regularizer": regularizers.serialize(self.activity_regularizer),
            "depthwise_constraint": constraints.serialize(self.depthwise_constraint),
            "pointwise_constraint": constraints.serialize(self.pointwise_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
        })
        return config


SeparableConvolution1D = SeparableConv1D
