"""Convolution layers: ``Conv1D``, ``Conv2D``, ``Conv2DTranspose``, ``DepthwiseConv2D``,
``SeparableConv2D`` (and their ``Convolution*`` aliases), on ipu_gpu's convolution ops."""

from __future__ import annotations

from ...core.spec import TensorShape, as_shape
from ...ops import array as _array
from ...ops import conv as _conv
from ...ops import nn as _nn
from ...ops import shape as _shape
from .. import activations, regularizers
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from . import conv_utils
from ._graph_shapes import call_on_values, unknown_dims
from ._weight_args import set_weight_args, weight_args_config

__all__ = ["Conv1D", "Conv2D", "Conv2DTranspose", "Convolution1D", "Convolution2D",
           "Convolution2DTranspose", "DepthwiseConv2D", "SeparableConv2D",
           "SeparableConvolution2D"]


class Conv(Layer):
    """The N-D convolution layer (N = ``rank``): ``activation(conv(inputs, kernel) + bias)``.

    Raises (at construction):
      ValueError: non-positive filters, kernel sizes or strides; filters not divisible by
        ``groups``; strides and dilations both above 1; 'causal' padding outside Conv1D.
    """

    _shape_inference = True

    def __init__(self, rank, filters, kernel_size, strides=1, padding="valid", data_format=None,
                 dilation_rate=1, groups=1, activation=None, use_bias=True,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, trainable=True, name=None,
                 conv_op=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=regularizers.get(activity_regularizer), **kwargs)
        self.rank = rank
        if isinstance(filters, float):
            filters = int(filters)
        if filters is not None and filters <= 0:
            raise ValueError("Invalid value for argument `filters`. Expected a strictly "
                             f"positive value. Received filters={filters}.")
        self.filters = filters
        self.groups = groups or 1
        self.kernel_size = conv_utils.normalize_tuple(kernel_size, rank, "kernel_size")
        self.strides = conv_utils.normalize_tuple(strides, rank, "strides", allow_zero=True)
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.dilation_rate = conv_utils.normalize_tuple(dilation_rate, rank, "dilation_rate")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        set_weight_args(self, ("kernel", "bias"), locals())
        self.input_spec = InputSpec(min_ndim=self.rank + 2)
        self._validate_init()
        self._tf_data_format = conv_utils.tf_data_format(self.data_format, rank + 2)

    def _validate_init(self) -> None:
        if self.filters is not None and self.filters % self.groups != 0:
            raise ValueError("The number of filters must be evenly divisible by the number of "
                             f"groups. Received: groups={self.groups}, filters={self.filters}")
        if not all(self.kernel_size):
            raise ValueError("The argument `kernel_size` cannot contain 0(s). Received: "
                             f"{self.kernel_size}")
        if not all(self.strides):
            raise ValueError(f"The argument `strides` cannot contains 0(s). Received: "
                             f"{self.strides}")
        if self.padding == "causal" and not isinstance(self, Conv1D):
            raise ValueError("Causal padding is only supported for `Conv1D`and "
                             "`SeparableConv1D`.")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError("`strides > 1` not supported in conjunction with `dilation_rate > "
                             f"1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")

    def _channel_axis(self) -> int:
        return -1 - self.rank if self.data_format == "channels_first" else -1

    def _input_channel(self, input_shape, layer_name=None) -> int:
        """The inputs' channel count; Keras's error names ``layer_name`` where given (its
        Conv2DTranspose and DepthwiseConv do)."""
        axis = self._channel_axis()
        if input_shape[axis] is None:
            to = f" to `{layer_name}`" if layer_name else ""
            raise ValueError(f"The channel dimension of the inputs{to} should be defined. The "
                             f"input_shape received is {input_shape}, where axis {axis} "
                             "(0-based) is the channel dimension, which found to be `None`.")
        return int(input_shape[axis])

    def build(self, input_shape):
        input_shape = as_shape(input_shape)
        channels = self._input_channel(input_shape)
        if channels % self.groups != 0:
            raise ValueError("The number of input channels must be evenly divisible by the "
                             f"number of groups. Received groups={self.groups}, but the input "
                             f"has {channels} channels (full input shape is {input_shape}).")
        self.compute_output_shape(input_shape)
        self.kernel = self.add_weight(name="kernel",
                                      shape=self.kernel_size + (channels // self.groups,
                                                                self.filters),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True,
                                      dtype=self.dtype)
        self.bias = self._add_bias(self.filters)
        self.input_spec = InputSpec(min_ndim=self.rank + 2,
                                    axes={self._channel_axis(): channels})
        self.built = True

    def _set_output_padding(self, output_padding, rank) -> None:
        """A transposed convolution's ``output_padding`` (None, or an int or tuple of
        ``rank`` ints each smaller than its stride: Keras's ValueError otherwise)."""
        self.output_padding = output_padding
        if output_padding is None:
            return
        self.output_padding = conv_utils.normalize_tuple(output_padding, rank,
                                                         "output_padding", allow_zero=True)
        for stride, out_pad in zip(self.strides, self.output_padding):
            if out_pad >= stride:
                raise ValueError("Strides must be greater than output padding. Received "
                                 f"strides={self.strides}, "
                                 f"output_padding={self.output_padding}.")

    def _build_transposed(self, input_shape, ndim, layer_name) -> None:
        """A transposed convolution's weights: kernel ``kernel_size + (filters, channels)``
        and bias, for inputs of rank ``ndim`` (Keras's ValueError for another rank)."""
        input_shape = as_shape(input_shape)
        if len(input_shape) != ndim:
            raise ValueError(f"Inputs should have rank {ndim}. Received "
                             f"input_shape={input_shape}.")
        axis = self._channel_axis()
        channels = self._input_channel(input_shape, layer_name)
        self.input_spec = InputSpec(ndim=ndim, axes={axis: channels})
        self.kernel = self.add_weight(name="kernel",
                                      shape=self.kernel_size + (self.filters, channels),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint, trainable=True,
                                      dtype=self.dtype)
        self.bias = self._add_bias(self.filters)
        self.built = True

    def _add_bias(self, size):
        if not self.use_bias:
            return None
        return self.add_weight(name="bias", shape=(size,), initializer=self.bias_initializer,
                               regularizer=self.bias_regularizer,
                               constraint=self.bias_constraint, trainable=True,
                               dtype=self.dtype)

    def _finish(self, outputs):
        if self.use_bias:
            outputs = _nn.bias_add(outputs, self.bias, data_format=self._tf_data_format)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return outputs

    def _spatial_output_shape(self, spatial):
        return [conv_utils.conv_output_length(length, self.kernel_size[i], self.padding,
                                              self.strides[i], self.dilation_rate[i])
                for i, length in enumerate(spatial)]

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        batch_rank = len(dims) - self.rank - 1
        if self.data_format == "channels_last":
            out = (dims[:batch_rank] + self._spatial_output_shape(dims[batch_rank:-1])
                   + [self.filters])
        else:
            out = (dims[:batch_rank] + [self.filters]
                   + self._spatial_output_shape(dims[batch_rank + 1:]))
        if any(d is not None and d <= 0 for d in out):
            raise ValueError(f"One of the dimensions in the output is <= 0 due to downsampling "
                             f"in {self.name}. Consider increasing the input size. Received "
                             f"input shape {dims} which would produce output shape with a zero "
                             "or negative value in a dimension.")
        return TensorShape(out)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "filters": self.filters, "kernel_size": self.kernel_size,
            "strides": self.strides, "padding": self.padding,
            "data_format": self.data_format, "dilation_rate": self.dilation_rate,
            "groups": self.groups, "activation": activations.serialize(self.activation),
            "use_bias": self.use_bias,
        })
        config.update(weight_args_config(self, ("kernel", "bias"), activity_regularizer=True))
        return config


class Conv1D(Conv):
    """1-D convolution over ``(batch, steps, channels)`` (``channels_last``, the default);
    ``padding="causal"`` pads on the left only."""

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, groups=1, **kwargs):
        super().__init__(1, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         **kwargs)

    def call(self, inputs):
        padding = self.padding.upper()
        if self.padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            pads = [[0, 0]] * (inputs.ndim - 2)
            pads += [[left, 0], [0, 0]] if self.data_format == "channels_last" else \
                [[0, 0], [left, 0]]
            inputs = _array.pad(inputs, pads)
            padding = "VALID"
        outputs = _conv.conv1d(inputs, self.kernel, self.strides[0], padding,
                               data_format=self._tf_data_format,
                               dilations=self.dilation_rate[0])
        if self.use_bias and self.data_format == "channels_first":
            outputs = outputs + _shape.reshape(self.bias, (1, self.filters, 1))
            return self.activation(outputs) if self.activation is not None else outputs
        return self._finish(outputs)


def _dtype_name(x) -> str:
    dtype = getattr(x, "dtype", None)
    return getattr(dtype, "name", str(dtype))


class Conv2D(Conv):
    """2-D convolution over images (``(batch, rows, cols, channels)`` by default)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), groups=1, **kwargs):
        super().__init__(2, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         **kwargs)

    def call(self, inputs):
        if self._fuses_bias(inputs):  # conv, bias and relu in one op (the same arithmetic)
            relu = self.activation is activations.relu
            outputs = _conv.conv2d_bias(inputs, self.kernel, self.bias, list(self.strides),
                                        self.padding.upper(), list(self.dilation_rate),
                                        relu=relu)
            return outputs if relu or self.activation is None else self.activation(outputs)
        outputs = _conv.conv2d(inputs, self.kernel, list(self.strides), self.padding.upper(),
                               data_format=self._tf_data_format,
                               dilations=list(self.dilation_rate))
        return self._finish(outputs)

    def _fuses_bias(self, inputs) -> bool:
        dtype = _dtype_name(inputs)
        return (self.use_bias and self.data_format == "channels_last"
                and getattr(inputs, "ndim", 0) == 4 and dtype in ("float32", "float64")
                and _dtype_name(self.kernel) == dtype == _dtype_name(self.bias))


class Conv2DTranspose(Conv2D):
    """The transposed 2-D convolution (the gradient of Conv2D with respect to its input);
    kernel shape ``(rows, cols, filters, in_channels)``.

    Raises:
      ValueError: an ``output_padding`` not smaller than the stride.
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1), **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, **kwargs)
        self._set_output_padding(output_padding, 2)

    def build(self, input_shape):
        self._build_transposed(input_shape, 4, "Conv2DTranspose")

    def _out_sizes(self, height, width):
        pads = (None, None) if self.output_padding is None else self.output_padding
        return [conv_utils.deconv_output_length(size, self.kernel_size[i], self.padding,
                                                pads[i], self.strides[i],
                                                self.dilation_rate[i])
                for i, size in enumerate((height, width))]

    def call(self, inputs):
        if unknown_dims(inputs):  # conv2d_transpose takes the run's batch size
            return call_on_values(self.call, inputs, reads=self.weights)
        first = self.data_format == "channels_first"
        h_axis, w_axis = (2, 3) if first else (1, 2)
        out_h, out_w = self._out_sizes(inputs.shape[h_axis], inputs.shape[w_axis])
        batch = inputs.shape[0]
        output_shape = ((batch, self.filters, out_h, out_w) if first
                        else (batch, out_h, out_w, self.filters))
        outputs = _conv.conv2d_transpose(inputs, self.kernel, list(output_shape),
                                         list(self.strides), self.padding.upper(),
                                         data_format=self._tf_data_format,
                                         dilations=list(self.dilation_rate))
        return self._finish(outputs)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        c_axis, h_axis, w_axis = (1, 2, 3) if self.data_format == "channels_first" else (3, 1, 2)
        dims[c_axis] = self.filters
        dims[h_axis], dims[w_axis] = self._out_sizes(dims[h_axis], dims[w_axis])
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config["output_padding"] = self.output_padding
        return config


class DepthwiseConv2D(Conv2D):
    """Depthwise 2-D convolution: each input channel convolved with its own
    ``depth_multiplier`` filters (kernel ``(rows, cols, channels, depth_multiplier)``)."""

    def __init__(self, kernel_size, strides=(1, 1), padding="valid", depth_multiplier=1,
                 data_format=None, dilation_rate=(1, 1), activation=None, use_bias=True,
                 depthwise_initializer="glorot_uniform", bias_initializer="zeros",
                 depthwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, bias_constraint=None, **kwargs):
        super().__init__(None, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, **kwargs)
        self.depth_multiplier = depth_multiplier
        set_weight_args(self, ("depthwise",), locals(), initializers_only=("bias",))

    def build(self, input_shape):
        if len(input_shape) != self.rank + 2:
            raise ValueError(f"Inputs to `DepthwiseConv` should have rank {self.rank + 2}. "
                             f"Received input_shape={input_shape}.")
        input_shape = as_shape(input_shape)
        axis = self._channel_axis()
        channels = self._input_channel(input_shape, "DepthwiseConv")
        self.depthwise_kernel = self.add_weight(
            shape=self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, name="depthwise_kernel",
            regularizer=self.depthwise_regularizer, constraint=self.depthwise_constraint)
        self.bias = self._add_bias(channels * self.depth_multiplier)
        self.input_spec = InputSpec(min_ndim=self.rank + 2, axes={axis: channels})
        self.built = True

    def _strides4(self):
        return ([1, *self.strides, 1] if self.data_format == "channels_last"
                else [1, 1, *self.strides])

    def call(self, inputs):
        outputs = _conv.depthwise_conv2d(inputs, self.depthwise_kernel, self._strides4(),
                                         self.padding.upper(), data_format=self._tf_data_format,
                                         dilations=list(self.dilation_rate))
        return self._finish(outputs)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        if self.data_format == "channels_first":
            rows, cols, out_filters = dims[2], dims[3], _mul(dims[1], self.depth_multiplier)
        else:
            rows, cols, out_filters = dims[1], dims[2], _mul(dims[3], self.depth_multiplier)
        rows, cols = self._spatial_output_shape([rows, cols])
        if self.data_format == "channels_first":
            return TensorShape([dims[0], out_filters, rows, cols])
        return TensorShape([dims[0], rows, cols, out_filters])

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint"):
            config.pop(key)
        config["depth_multiplier"] = self.depth_multiplier
        config.update(weight_args_config(self, ("depthwise",)))
        return config


def _mul(a, b):
    return None if a is None else a * b


class SeparableConv2D(Conv2D):
    """A depthwise convolution followed by a 1x1 (pointwise) convolution mixing channels."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), depth_multiplier=1, activation=None, use_bias=True,
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
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis(): channels})
        self.depthwise_kernel = self.add_weight(
            name="depthwise_kernel", shape=self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint, trainable=True, dtype=self.dtype)
        self.pointwise_kernel = self.add_weight(
            name="pointwise_kernel",
            shape=(1,) * self.rank + (self.depth_multiplier * channels, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint, trainable=True, dtype=self.dtype)
        self.bias = self._add_bias(self.filters)
        self.built = True

    def call(self, inputs):
        strides = ([1, *self.strides, 1] if self.data_format == "channels_last"
                   else [1, 1, *self.strides])
        depthwise = _conv.depthwise_conv2d(inputs, self.depthwise_kernel, strides,
                                           self.padding.upper(),
                                           data_format=self._tf_data_format,
                                           dilations=list(self.dilation_rate))
        outputs = _conv.conv2d(depthwise, self.pointwise_kernel, [1, 1], "VALID",
                               data_format=self._tf_data_format)
        return self._finish(outputs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "depth_multiplier": self.depth_multiplier,
            **weight_args_config(self, ("depthwise", "pointwise")),
        })
        return config


Convolution1D, Convolution2D = Conv1D, Conv2D
Convolution2DTranspose, SeparableConvolution2D = Conv2DTranspose, SeparableConv2D
