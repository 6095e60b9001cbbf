"""3-D pooling layers: ``MaxPooling3D``, ``AveragePooling3D``, ``GlobalAveragePooling3D``,
``GlobalMaxPooling3D`` (and their ``MaxPool3D``-style aliases), on ``ops/conv3d.py`` and the
reductions."""

from __future__ import annotations

from ...ops import conv3d as _conv3d
from ...ops import reduction as _r
from .pooling import _GlobalPooling, _Pooling

__all__ = ["AveragePooling3D", "AvgPool3D", "GlobalAveragePooling3D", "GlobalAvgPool3D",
           "GlobalMaxPool3D", "GlobalMaxPooling3D", "MaxPool3D", "MaxPooling3D"]


class _Pooling3D(_Pooling):
    def call(self, inputs):
        return self.pool_function(inputs, list(self.pool_size), list(self.strides),
                                  self.padding.upper(),
                                  data_format="NCDHW" if self.data_format == "channels_first"
                                  else "NDHWC")


class MaxPooling3D(_Pooling3D):
    """Max over ``pool_size`` windows of volumes (``strides`` default to ``pool_size``)."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(3, _conv3d.max_pool3d, pool_size, strides, padding, data_format,
                         **kwargs)


class AveragePooling3D(_Pooling3D):
    """Mean over ``pool_size`` windows of volumes (SAME padding averages the valid cells)."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding="valid", data_format=None,
                 **kwargs):
        super().__init__(3, _conv3d.avg_pool3d, pool_size, strides, padding, data_format,
                         **kwargs)


class GlobalAveragePooling3D(_GlobalPooling):
    """Mean over the three spatial axes of volumes."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(3, data_format=data_format, keepdims=keepdims, **kwargs)

    def call(self, inputs):
        return _r.reduce_mean(inputs, axis=self._axes(), keepdims=self.keepdims)


class GlobalMaxPooling3D(_GlobalPooling):
    """Max over the three spatial axes of volumes."""

    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(3, data_format=data_format, keepdims=keepdims, **kwargs)

    def call(self, inputs):
        return _r.reduce_max(inputs, axis=self._axes(), keepdims=self.keepdims)


MaxPool3D, AvgPool3D = MaxPooling3D, AveragePooling3D
GlobalAvgPool3D, GlobalMaxPool3D = GlobalAveragePooling3D, GlobalMaxPooling3D
