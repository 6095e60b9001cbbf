"""3-D reshaping layers: ``ZeroPadding3D``, ``Cropping3D``, ``UpSampling3D``."""

from __future__ import annotations

from ...core.spec import TensorShape, as_shape
from ...ops import array as _array
from ..engine.input_spec import InputSpec
from . import conv_utils
from .reshaping import _repeat, _ShapeLayer

__all__ = ["Cropping3D", "UpSampling3D", "ZeroPadding3D"]

_ORDINALS = ("1st", "2nd", "3rd")


def _triple_pairs(value, name, what):
    """An int, 3 ints (symmetric) or 3 pairs, as three (before, after) pairs (Keras's
    parsing and messages)."""
    if isinstance(value, int):
        return ((value, value),) * 3
    if hasattr(value, "__len__"):
        if len(value) != 3:
            raise ValueError(f"`{name}` should have 3 elements. Received: {value}.")
        return tuple(conv_utils.normalize_tuple(v, 2, f"{_ORDINALS[i]} entry of {name}",
                                                allow_zero=True)
                     for i, v in enumerate(value))
    raise ValueError(f"`{name}` should be either an int, a tuple of 3 ints "
                     f"(symmetric_dim1_{what}, symmetric_dim2_{what}, symmetric_dim3_{what}), "
                     f"or a tuple of 3 tuples of 2 ints ((left_dim1_{what}, right_dim1_{what}),"
                     f" (left_dim2_{what}, right_dim2_{what}), (left_dim3_{what}, "
                     f"right_dim2_{what})). Received: {value}.")


class _Volume(_ShapeLayer):
    def _axes(self):
        return (2, 3, 4) if self.data_format == "channels_first" else (1, 2, 3)


class ZeroPadding3D(_Volume):
    """Zeros around the three spatial axes of volumes.

    Args:
      padding: an int, 3 ints (symmetric per axis) or 3 (before, after) pairs.
      data_format: ``channels_last`` (default) or ``channels_first``.

    Raises:
      ValueError: a malformed ``padding``.
    """

    def __init__(self, padding=(1, 1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.padding = _triple_pairs(padding, "padding", "pad")
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs):
        pads = [[0, 0]] * 5
        for axis, pair in zip(self._axes(), self.padding):
            pads[axis] = list(pair)
        return _array.pad(inputs, pads)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        for axis, pair in zip(self._axes(), self.padding):
            dims[axis] = None if dims[axis] is None else dims[axis] + sum(pair)
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(padding=self.padding, data_format=self.data_format)
        return config


class Cropping3D(_Volume):
    """Remove ``(start, end)`` slices at the borders of the three spatial axes of volumes.

    Args:
      cropping: an int, 3 ints (symmetric per axis) or 3 (start, end) pairs.
      data_format: ``channels_last`` (default) or ``channels_first``.

    Raises:
      ValueError: a malformed ``cropping``.
    """

    def __init__(self, cropping=((1, 1), (1, 1), (1, 1)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.cropping = _triple_pairs(cropping, "cropping", "crop")
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs):
        index = [slice(None)] * 5
        for axis, (start, end) in zip(self._axes(), self.cropping):
            index[axis] = slice(start, -end if end else None)
        return inputs[tuple(index)]

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        for axis, pair in zip(self._axes(), self.cropping):
            dims[axis] = None if dims[axis] is None else dims[axis] - sum(pair)
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(cropping=self.cropping, data_format=self.data_format)
        return config


class UpSampling3D(_Volume):
    """Repeat each voxel ``size = (d, h, w)`` times along the three spatial axes."""

    def __init__(self, size=(2, 2, 2), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.size = conv_utils.normalize_tuple(size, 3, "size")
        self.input_spec = InputSpec(ndim=5)

    def call(self, inputs):
        for axis, factor in zip(self._axes(), self.size):
            inputs = _repeat(inputs, axis, factor)
        return inputs

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        for axis, factor in zip(self._axes(), self.size):
            dims[axis] = None if dims[axis] is None else dims[axis] * factor
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(size=self.size, data_format=self.data_format)
        return config
