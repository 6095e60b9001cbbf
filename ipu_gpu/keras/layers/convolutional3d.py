"""3-D convolution layers: ``Conv3D`` and ``Conv3DTranspose`` (and their ``Convolution3D*``
aliases) on ``ops/conv3d.py``."""

from __future__ import annotations

from ...core.spec import TensorShape, as_shape
from ...ops import conv3d as _conv3d
from . import conv_utils
from ._graph_shapes import call_on_values, unknown_dims
from .convolutional import Conv

__all__ = ["Conv3D", "Conv3DTranspose", "Convolution3D", "Convolution3DTranspose"]


def _strides5(layer):
    return ([1, *layer.strides, 1] if layer.data_format == "channels_last"
            else [1, 1, *layer.strides])


class Conv3D(Conv):
    """3-D convolution over volumes (``(batch, depth, rows, cols, channels)`` by default):
    ``activation(conv3d(inputs, kernel) + bias)``, kernel ``kernel_size + (channels /
    groups, filters)``."""

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format=None, dilation_rate=(1, 1, 1), groups=1, **kwargs):
        super().__init__(3, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, groups=groups,
                         **kwargs)

    def call(self, inputs):
        dilations = [1, *self.dilation_rate, 1] if self.data_format == "channels_last" \
            else [1, 1, *self.dilation_rate]
        outputs = _conv3d.conv3d(inputs, self.kernel, _strides5(self), self.padding.upper(),
                                 data_format=self._tf_data_format, dilations=dilations)
        return self._finish(outputs)


class Conv3DTranspose(Conv3D):
    """The transposed 3-D convolution (the gradient of Conv3D with respect to its input);
    kernel shape ``kernel_size + (filters, in_channels)``. As Keras 2, ``dilation_rate`` is
    stored but not applied.

    Raises:
      ValueError: an ``output_padding`` not smaller than the stride; an input that is not
        5-D or has no channel count (at build).
    """

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 output_padding=None, data_format=None, dilation_rate=(1, 1, 1), **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, **kwargs)
        self._set_output_padding(output_padding, 3)

    def build(self, input_shape):
        self._build_transposed(input_shape, 5, "Conv3DTranspose")

    def _spatial_axes(self):
        return (2, 3, 4) if self.data_format == "channels_first" else (1, 2, 3)

    def _out_sizes(self, sizes):
        pads = (None,) * 3 if self.output_padding is None else self.output_padding
        return [conv_utils.deconv_output_length(size, self.kernel_size[i], self.padding,
                                                pads[i], self.strides[i])
                for i, size in enumerate(sizes)]

    def call(self, inputs):
        if unknown_dims(inputs):  # conv3d_transpose takes the run's batch size
            return call_on_values(self.call, inputs, reads=self.weights)
        dims = list(inputs.shape)
        axes = self._spatial_axes()
        spatial = self._out_sizes([dims[a] for a in axes])
        output_shape = ([dims[0], self.filters, *spatial]
                        if self.data_format == "channels_first"
                        else [dims[0], *spatial, self.filters])
        outputs = _conv3d.conv3d_transpose(inputs, self.kernel, output_shape, _strides5(self),
                                           self.padding.upper(),
                                           data_format=self._tf_data_format)
        return self._finish(outputs)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        axes = self._spatial_axes()
        c_axis = 1 if self.data_format == "channels_first" else 4
        dims[c_axis] = self.filters
        for a, size in zip(axes, self._out_sizes([dims[a] for a in axes])):
            dims[a] = size
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config.pop("dilation_rate")
        config["output_padding"] = self.output_padding
        return config


Convolution3D, Convolution3DTranspose = Conv3D, Conv3DTranspose
