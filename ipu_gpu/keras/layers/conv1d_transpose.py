"""``Conv1DTranspose`` (alias ``Convolution1DTranspose``): the transposed 1-D convolution,
computed as the 2-D one over a unit height (as TF's ``conv1d_transpose``)."""

from __future__ import annotations

from ...core.spec import TensorShape, as_shape
from ...ops import conv as _conv
from ...ops import shape as _shape
from . import conv_utils
from .convolutional import Conv

__all__ = ["Conv1DTranspose", "Convolution1DTranspose"]


class Conv1DTranspose(Conv):
    """The transposed 1-D convolution over ``(batch, steps, channels)`` (``channels_last``)
    or ``(batch, channels, steps)``; kernel ``(kernel_size, filters, in_channels)``.

    Raises:
      ValueError: an ``output_padding`` not smaller than the stride; an input that is not
        3-D or has no channel count (at build).
    """

    def __init__(self, filters, kernel_size, strides=1, padding="valid", output_padding=None,
                 data_format=None, dilation_rate=1, **kwargs):
        super().__init__(1, filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate, **kwargs)
        self._set_output_padding(output_padding, 1)

    def build(self, input_shape):
        self._build_transposed(input_shape, 3, "Conv1DTranspose")

    def _out_length(self, length):
        pad = None if self.output_padding is None else self.output_padding[0]
        return conv_utils.deconv_output_length(length, self.kernel_size[0], self.padding, pad,
                                               self.strides[0], self.dilation_rate[0])

    def call(self, inputs):
        first = self.data_format == "channels_first"
        t_axis = 2 if first else 1
        length = self._out_length(inputs.shape[t_axis])
        batch = inputs.shape[0]
        # a unit height: (batch, 1, steps, channels) or (batch, channels, 1, steps)
        x = _shape.expand_dims(inputs, 2 if first else 1)
        kernel = _shape.expand_dims(self.kernel, 0)
        output_shape = [batch, self.filters, 1, length] if first else \
            [batch, 1, length, self.filters]
        y = _conv.conv2d_transpose(x, kernel, output_shape, [1, self.strides[0]],
                                   self.padding.upper(),
                                   data_format="NCHW" if first else "NHWC",
                                   dilations=[1, self.dilation_rate[0]])
        return self._finish(_shape.squeeze(y, [2 if first else 1]))

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        c_axis, t_axis = (1, 2) if self.data_format == "channels_first" else (2, 1)
        dims[c_axis] = self.filters
        dims[t_axis] = self._out_length(dims[t_axis])
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config["output_padding"] = self.output_padding
        return config


Convolution1DTranspose = Conv1DTranspose
