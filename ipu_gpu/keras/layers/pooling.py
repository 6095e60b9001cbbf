"""Pooling layers: ``MaxPooling1D/2D``, ``AveragePooling1D/2D`` (and ``MaxPool2D``-style
aliases), ``GlobalAveragePooling1D/2D``, ``GlobalMaxPooling1D/2D``."""

from __future__ import annotations


from ...core.spec import TensorShape, as_shape
from ...ops import math as _m
from ...ops import pooling as _pooling
from ...ops import reduction as _r
from ...ops import shape as _shape
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from . import conv_utils

__all__ = ["AveragePooling1D", "AveragePooling2D", "AvgPool1D", "AvgPool2D",
           "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAvgPool1D",
           "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D", "MaxPool1D", "MaxPool2D", "MaxPooling1D", "MaxPooling2D"]


class _Pooling(Layer):
    """N-D pooling (N = ``rank``) with ``pool_function(input, ksize, strides, padding,
    data_format)``; ``strides`` default to ``pool_size``."""

    _shape_inference = True

    def __init__(self, rank, pool_function, pool_size, strides, padding="valid",
                 data_format=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        if data_format is None:
            data_format = conv_utils.normalize_data_format(None)
        if strides is None:
            strides = pool_size
        self.rank = rank
        self.pool_function = pool_function
        self.pool_size = conv_utils.normalize_tuple(pool_size, rank, "pool_size")
        self.strides = conv_utils.normalize_tuple(strides, rank, "strides", allow_zero=True)
        self.padding = conv_utils.normalize_padding(padding)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)

    def call(self, inputs):
        first = self.data_format == "channels_first"
        pool_size, strides = self.pool_size, self.strides
        if self.rank == 1:  # as Keras: a 2-D pooling over (steps, 1)
            axis = 3 if first else 2
            inputs = _shape.expand_dims(inputs, axis)
            pool_size, strides = pool_size + (1,), strides + (1,)
        outputs = self.pool_function(inputs, list(pool_size), list(strides),
                                     self.padding.upper(),
                                     data_format="NCHW" if first else "NHWC")
        if self.rank == 1:
            outputs = _shape.squeeze(outputs, [axis])
        return outputs

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        first = self.data_format == "channels_first"
        spatial = dims[2:] if first else dims[1:-1]
        out = [conv_utils.conv_output_length(n, self.pool_size[i], self.padding,
                                             self.strides[i])
               for i, n in enumerate(spatial)]
        if first:
            return TensorShape([dims[0], dims[1], *out])
        return TensorShape([dims[0], *out, dims[-1]])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(pool_size=self.pool_size, padding=self.padding, strides=self.strides,
                      data_format=self.data_format)
        return config


class MaxPooling1D(_Pooling):
    """Max over windows of ``pool_size`` steps of ``(batch, steps, features)``."""

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format="channels_last",
                 **kwargs):
        super().__init__(1, _pooling.max_pool2d, pool_size, strides, padding, data_format,
                         **kwargs)


class AveragePooling1D(_Pooling):
    """Mean over windows of ``pool_size`` steps (SAME padding averages the valid cells)."""

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format="channels_last",
                 **kwargs):
        super().__init__(1, _pooling.avg_pool2d, pool_size, strides, padding, data_format,
                         **kwargs)


class MaxPooling2D(_Pooling):
    """Max over ``pool_size`` windows of images."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(2, _pooling.max_pool2d, pool_size, strides, padding, data_format,
                         **kwargs)


class AveragePooling2D(_Pooling):
    """Mean over ``pool_size`` windows of images."""

    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(2, _pooling.avg_pool2d, pool_size, strides, padding, data_format,
                         **kwargs)


class _GlobalPooling(Layer):
    _shape_inference = True

    def __init__(self, rank, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        self.rank = rank
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=rank + 2)
        self.keepdims = keepdims

    def _axes(self):
        start = 2 if self.data_format == "channels_first" else 1
        return list(range(start, start + self.rank))

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        axes = self._axes()
        if self.keepdims:
            return TensorShape([1 if i in axes else d for i, d in enumerate(dims)])
        return TensorShape([d for i, d in enumerate(dims) if i not in axes])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(data_format=self.data_format, keepdims=self.keepdims)
        return config


class GlobalAveragePooling1D(_GlobalPooling):
    """Mean over the steps axis; masked steps (mask False) are left out of the mean."""

    def __init__(self, data_format="channels_last", **kwargs):
        super().__init__(1, data_format=data_format, **kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None):
        steps_axis = self._axes()[0]
        if mask is None:
            return _r.reduce_mean(inputs, axis=steps_axis, keepdims=self.keepdims)
        mask = _shape.expand_dims(_m.cast(mask, inputs.dtype),
                                  2 if self.data_format == "channels_last" else 1)
        inputs = inputs * mask
        return (_r.reduce_sum(inputs, axis=steps_axis, keepdims=self.keepdims)
                / _r.reduce_sum(mask, axis=steps_axis, keepdims=self.keepdims))

    def compute_mask(self, inputs, mask=None):
        return None


class GlobalAveragePooling2D(_GlobalPooling):
    """Mean over the spatial axes of images."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(2, data_format=data_format, keepdims=keepdims, **kwargs)

    def call(self, inputs):
        return _r.reduce_mean(inputs, axis=self._axes(), keepdims=self.keepdims)


class GlobalMaxPooling1D(_GlobalPooling):
    """Max over the steps axis."""

    def __init__(self, data_format="channels_last", keepdims=False, **kwargs):
        super().__init__(1, data_format=data_format, keepdims=keepdims, **kwargs)

    def call(self, inputs):
        return _r.reduce_max(inputs, axis=self._axes(), keepdims=self.keepdims)


class GlobalMaxPooling2D(_GlobalPooling):
    """Max over the spatial axes of images."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(2, data_format=data_format, keepdims=keepdims, **kwargs)

    def call(self, inputs):
        return _r.reduce_max(inputs, axis=self._axes(), keepdims=self.keepdims)


MaxPool1D, MaxPool2D, AvgPool1D, AvgPool2D = (MaxPooling1D, MaxPooling2D, AveragePooling1D,
                                              AveragePooling2D)
GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D

