"""Reshaping layers: ``Flatten``, ``Reshape``, ``Permute``, ``RepeatVector``,
``ZeroPadding1D/2D``, ``UpSampling1D/2D``, ``Cropping1D/2D``."""

from __future__ import annotations

import math

import numpy as np

from ...core.spec import TensorShape, as_shape
from ...ops import array as _array
from ...ops import math as _m
from ...ops import math_extra as _mx
from ...ops import shape as _shape
from .. import backend
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from . import _resize, conv_utils
from ._graph_shapes import call_on_values, reshape_dims

__all__ = ["Cropping1D", "Cropping2D", "Flatten", "Permute", "RepeatVector", "Reshape",
           "UpSampling1D", "UpSampling2D", "ZeroPadding1D", "ZeroPadding2D"]


class _ShapeLayer(Layer):
    _shape_inference = True


class Flatten(_ShapeLayer):
    """``(batch, ...) -> (batch, prod(...))``; ``channels_first`` inputs are moved to
    channels-last order first, so both layouts flatten alike."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def call(self, inputs):
        if self.data_format == "channels_first" and inputs.ndim > 1:
            inputs = _shape.transpose(inputs, [0, *range(2, inputs.ndim), 1])
        dims = tuple(inputs.shape)
        if dims[0] is None and None not in dims[1:]:  # a graph tensor's unknown batch
            return _shape.reshape(inputs, (-1, math.prod(dims[1:])))
        return call_on_values(lambda v: _shape.reshape(v, (v.shape[0], -1)), inputs)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        out = [dims[0]] if dims else [1]
        rest = dims[1:]
        out.append(math.prod(rest) if all(d is not None for d in rest) else None)
        return TensorShape(out)

    def get_config(self) -> dict:
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


class Reshape(_ShapeLayer):
    """``(batch, ...) -> (batch,) + target_shape``; one entry of ``target_shape`` may be -1."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def _fix_unknown_dimension(self, input_shape, output_shape):
        output_shape = list(output_shape)
        msg = (f"total size of new array must be unchanged, input_shape = {list(input_shape)}, "
               f"output_shape = {output_shape}")
        known, unknown = 1, None
        for index, dim in enumerate(output_shape):
            if dim < 0:
                if unknown is not None:
                    raise ValueError("There must be at most one unknown dimension in "
                                     f"output_shape. Received: output_shape={output_shape}.")
                unknown = index
            else:
                known *= dim
        original = math.prod(input_shape)
        if unknown is not None:
            if known == 0 or original % known != 0:
                raise ValueError(msg)
            output_shape[unknown] = original // known
        elif original != known:
            raise ValueError(msg)
        return output_shape

    def call(self, inputs):
        if None in tuple(inputs.shape)[1:]:  # a graph tensor's unknown sizes: in the run
            return call_on_values(self.call, inputs)
        target = self._fix_unknown_dimension(list(inputs.shape[1:]), self.target_shape)
        return _shape.reshape(inputs, reshape_dims((inputs.shape[0], *target)))

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        if None in dims[1:]:
            rest = [s if s != -1 else None for s in self.target_shape]
        else:
            rest = self._fix_unknown_dimension(dims[1:], self.target_shape)
        return TensorShape([dims[0], *rest])

    def get_config(self) -> dict:
        config = super().get_config()
        config["target_shape"] = self.target_shape
        return config


class Permute(_ShapeLayer):
    """Permute the non-batch axes: ``dims`` is a permutation of 1..n.

    Raises:
      ValueError: ``dims`` is not such a permutation.
    """

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)
        if sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError("Invalid permutation argument `dims` for Permute Layer. The set of "
                             "indices in `dims` must be consecutive and start from 1. Received "
                             f"dims={dims}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs):
        return _shape.transpose(inputs, [0, *self.dims])

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        return TensorShape([dims[0], *[dims[d] for d in self.dims]])

    def get_config(self) -> dict:
        config = super().get_config()
        config["dims"] = self.dims
        return config


class RepeatVector(_ShapeLayer):
    """``(batch, features) -> (batch, n, features)``."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(n, int):
            raise TypeError(f"Expected an integer value for `n`, got {type(n)}.")
        self.n = n
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs):
        return _array.tile(_shape.expand_dims(inputs, 1), [1, self.n, 1])

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        return TensorShape([dims[0], self.n, dims[1]])

    def get_config(self) -> dict:
        config = super().get_config()
        config["n"] = self.n
        return config


def _pairs(value, name, what):
    """An int, a pair of ints (symmetric) or a pair of pairs, as two (before, after) pairs."""
    if isinstance(value, int):
        return ((value, value), (value, value))
    if hasattr(value, "__len__"):
        if len(value) != 2:
            raise ValueError(f"`{name}` should have two elements. Received: {value}.")
        first = conv_utils.normalize_tuple(value[0], 2, f"1st entry of {name}", allow_zero=True)
        second = conv_utils.normalize_tuple(value[1], 2, f"2nd entry of {name}",
                                            allow_zero=True)
        return (first, second)
    raise ValueError(f"`{name}` should be either an int, a tuple of 2 ints "
                     f"(symmetric_height_{what}, symmetric_width_{what}), or a tuple of 2 "
                     f"tuples of 2 ints ((top_{what}, bottom_{what}), (left_{what}, "
                     f"right_{what})). Received: {value}.")


def _sym(value):
    if isinstance(value, int):
        return value, value
    if hasattr(value, "__len__") and len(value) == 2 and all(isinstance(v, int) for v in value):
        return (value[0], value[0]), (value[1], value[1])
    return None


def _add(d, extra):
    return None if d is None else d + extra


class ZeroPadding1D(_ShapeLayer):
    """Zeros before and after the steps axis of ``(batch, steps, features)``."""

    def __init__(self, padding=1, **kwargs):
        super().__init__(**kwargs)
        self.padding = conv_utils.normalize_tuple(padding, 2, "padding", allow_zero=True)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        return _array.pad(inputs, [[0, 0], list(self.padding), [0, 0]])

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        return TensorShape([dims[0], _add(dims[1], sum(self.padding)), dims[2]])

    def get_config(self) -> dict:
        config = super().get_config()
        config["padding"] = self.padding
        return config


class ZeroPadding2D(_ShapeLayer):
    """Zeros around the rows and columns of images.

    Args:
      padding: an int, (symmetric rows, symmetric cols) or ((top, bottom), (left, right)).
    """

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        sym = _sym(padding)
        if sym is not None and isinstance(padding, int):
            self.padding = ((padding, padding), (padding, padding))
        elif sym is not None:
            self.padding = sym
        else:
            self.padding = _pairs(padding, "padding", "pad")
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        spatial = [list(self.padding[0]), list(self.padding[1])]
        if self.data_format == "channels_first":
            return _array.pad(inputs, [[0, 0], [0, 0], *spatial])
        return _array.pad(inputs, [[0, 0], *spatial, [0, 0]])

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        h, w = (2, 3) if self.data_format == "channels_first" else (1, 2)
        dims[h] = _add(dims[h], sum(self.padding[0]))
        dims[w] = _add(dims[w], sum(self.padding[1]))
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(padding=self.padding, data_format=self.data_format)
        return config


def _stop(size, crop):
    """The end of a slice cropping ``crop`` from ``size`` (None: a graph tensor's unknown
    size, cropped from the end)."""
    if size is None:
        return -crop if crop else None
    return size - crop


class Cropping1D(_ShapeLayer):
    """Remove ``cropping = (start, end)`` steps from ``(batch, steps, features)``."""

    def __init__(self, cropping=(1, 1), **kwargs):
        super().__init__(**kwargs)
        self.cropping = conv_utils.normalize_tuple(cropping, 2, "cropping", allow_zero=True)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        start, end = self.cropping
        return inputs[:, start:_stop(inputs.shape[1], end), :]

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        length = None if dims[1] is None else dims[1] - sum(self.cropping)
        return TensorShape([dims[0], length, dims[2]])

    def get_config(self) -> dict:
        config = super().get_config()
        config["cropping"] = self.cropping
        return config


class Cropping2D(_ShapeLayer):
    """Remove rows and columns at the borders of images.

    Args:
      cropping: an int, (symmetric rows, symmetric cols) or ((top, bottom), (left, right)).

    Raises:
      ValueError: a malformed ``cropping``; cropping that leaves nothing (when called).
    """

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        sym = _sym(cropping)
        if sym is not None and isinstance(cropping, int):
            self.cropping = ((cropping, cropping), (cropping, cropping))
        elif sym is not None:
            self.cropping = sym
        else:
            self.cropping = _pairs(cropping, "cropping", "crop")
        self.input_spec = InputSpec(ndim=4)

    def _check(self, dims):
        h, w = (2, 3) if self.data_format == "channels_first" else (1, 2)
        if any(dims[axis] is not None and sum(crop) >= dims[axis]
               for axis, crop in ((h, self.cropping[0]), (w, self.cropping[1]))):
            raise ValueError("Argument `cropping` must be greater than the input shape. "
                             f"Received: inputs.shape={tuple(dims)}, and "
                             f"cropping={self.cropping}")
        return h, w

    def call(self, inputs):
        (top, bottom), (left, right) = self.cropping
        h, w = self._check(list(inputs.shape))
        rows = slice(top, _stop(inputs.shape[h], bottom))
        cols = slice(left, _stop(inputs.shape[w], right))
        if self.data_format == "channels_first":
            return inputs[:, :, rows, cols]
        return inputs[:, rows, cols, :]

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        h, w = self._check(dims)
        for axis, crop in ((h, self.cropping[0]), (w, self.cropping[1])):
            if dims[axis] is not None:
                dims[axis] -= sum(crop)
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(cropping=self.cropping, data_format=self.data_format)
        return config


def _repeat(x, axis, times):
    """``x`` with each index of ``axis`` repeated ``times`` times (nearest upsampling)."""
    if None in tuple(x.shape):  # a graph tensor's unknown size: reshaped in the run
        return call_on_values(lambda v: _repeat(v, axis, times), x)
    shape = list(x.shape)
    expanded = _shape.expand_dims(x, axis + 1)
    tiled = _array.broadcast_to(expanded, shape[:axis + 1] + [times] + shape[axis + 1:])
    return _shape.reshape(tiled, shape[:axis] + [shape[axis] * times] + shape[axis + 1:])


class UpSampling1D(_ShapeLayer):
    """Repeat each step ``size`` times."""

    def __init__(self, size=2, **kwargs):
        super().__init__(**kwargs)
        self.size = int(size)
        self.input_spec = InputSpec(ndim=3)

    def call(self, inputs):
        return _repeat(inputs, 1, self.size)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        return TensorShape([dims[0], None if dims[1] is None else dims[1] * self.size, dims[2]])

    def get_config(self) -> dict:
        config = super().get_config()
        config["size"] = self.size
        return config


class UpSampling2D(_ShapeLayer):
    """Upsample images by ``size`` (rows, cols) with TF2's ``tf.image.resize``:
    ``nearest`` repeats pixels; ``bilinear``, ``bicubic``, ``area``, ``gaussian``,
    ``lanczos3``, ``lanczos5`` and ``mitchellcubic`` weigh neighbouring pixels as TF's
    kernels do, in float32 whatever the input's dtype (Keras 2.6 itself takes only
    ``nearest`` and ``bilinear``; later Keras 2 takes all eight).

    Raises:
      ValueError: an unknown interpolation.
    """

    _METHODS = _resize.METHODS

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.size = conv_utils.normalize_tuple(size, 2, "size")
        if interpolation not in self._METHODS:
            raise ValueError(f"`interpolation` argument should be one of: "
                             f'{", ".join(map(repr, self._METHODS))}. Received: '
                             f'"{interpolation}".')
        self.interpolation = interpolation
        self.input_spec = InputSpec(ndim=4)

    def call(self, inputs):
        h, w = (2, 3) if self.data_format == "channels_first" else (1, 2)
        if self.interpolation == "nearest":
            return _repeat(_repeat(inputs, h, self.size[0]), w, self.size[1])
        if inputs.shape[h] is None or inputs.shape[w] is None:  # a graph tensor's: in the run
            return call_on_values(self.call, inputs)
        if inputs.dtype != np.float32:  # TF's resize kernels give float32 for any input
            inputs = _m.cast(inputs, "float32")
        rows, cols = (backend._constant_like(_resize.resize_matrix(
            self.interpolation, inputs.shape[axis], inputs.shape[axis] * factor), inputs)
            for axis, factor in ((h, self.size[0]), (w, self.size[1])))
        spec = "bchw" if self.data_format == "channels_first" else "bhwc"
        out = spec.replace("h", "y")
        x = _mx.einsum(f"yh,{spec}->{out}", rows, inputs)
        return _mx.einsum(f"xw,{out}->{out.replace('w', 'x')}", cols, x)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        h, w = (2, 3) if self.data_format == "channels_first" else (1, 2)
        dims[h] = None if dims[h] is None else dims[h] * self.size[0]
        dims[w] = None if dims[w] is None else dims[w] * self.size[1]
        return TensorShape(dims)

    def compute_output_signature(self, input_signature):
        """As Keras's traced ``call`` (a resize to a size computed at run time when the
        height or the width is unknown): both are then unknown, whatever
        ``compute_output_shape`` says of the known one."""
        from ...core.spec import TensorSpec

        spec = super().compute_output_signature(input_signature)
        h, w = (2, 3) if self.data_format == "channels_first" else (1, 2)
        dims = as_shape(input_signature.shape).as_list()
        if dims[h] is None or dims[w] is None:
            out = spec.shape.as_list()
            out[h] = out[w] = None
            spec = TensorSpec(TensorShape(out), spec.dtype)
        return spec

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(size=self.size, data_format=self.data_format,
                      interpolation=self.interpolation)
        return config
