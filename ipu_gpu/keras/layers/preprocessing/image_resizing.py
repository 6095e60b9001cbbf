"""Image size layers: ``Resizing``, ``CenterCrop``, ``RandomCrop``, ``RandomHeight``,
``RandomWidth``, on ``[height, width, channels]`` images or batches of them, resizing with
``tf.image.resize`` (ipu_gpu.image) and tf-keras's ``smart_resize`` (a central crop to the
target's aspect ratio, then a resize)."""

from __future__ import annotations

import numpy as np

from ....core.spec import TensorShape, as_shape
from ....image import ops as _image
from ....ops import array as _array
from ....ops import math as _m
from ...engine.base_layer import Layer
from .._graph_shapes import call_on_values
from .random_base import BaseRandomLayer, as_compute_dtype, check_image

__all__ = ["CenterCrop", "RandomCrop", "RandomHeight", "RandomWidth", "Resizing",
           "get_interpolation", "smart_resize"]

INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5",
                  "gaussian", "mitchellcubic")


def get_interpolation(interpolation: str) -> str:
    """The resize method of an interpolation name (any case).

    Raises:
      NotImplementedError: an unknown name (tf-keras's exception and message).
    """
    name = interpolation.lower()
    if name not in INTERPOLATIONS:
        keys = "dict_keys([" + ", ".join(repr(k) for k in INTERPOLATIONS) + "])"
        raise NotImplementedError(f"Value not recognized for `interpolation`: {name}. "
                                  f"Supported values are: {keys}")
    return name


def smart_resize(x, size, interpolation="bilinear"):
    """``x`` (rank 3 or 4) cropped centrally to the aspect ratio of ``size`` and resized to it
    (``keras.preprocessing.image.smart_resize``); float32 but for ``nearest``.

    Raises:
      ValueError: ``size`` not two ints; ``x`` not of rank 3 or 4.
    """
    if len(size) != 2:
        raise ValueError(f"Expected `size` to be a tuple of 2 integers, but got: {size}.")
    rank = len(x.shape)
    if rank < 3 or rank > 4:
        raise ValueError("Expected an image array with shape `(height, width, channels)`, or "
                         "`(batch_size, height, width, channels)`, but got input with "
                         f"incorrect rank, of shape {tuple(x.shape)}.")
    height, width = int(x.shape[-3]), int(x.shape[-2])
    target_h, target_w = (int(s) for s in size)
    f32 = np.float32
    crop_h = min(height, int(f32(width * target_h) / f32(target_w)))
    crop_w = min(width, int(f32(height * target_w) / f32(target_h)))
    start_h = int(f32(height - crop_h) / f32(2))
    start_w = int(f32(width - crop_w) / f32(2))
    begin = [start_h, start_w, 0]
    extent = [crop_h, crop_w, -1]
    if rank == 4:
        begin, extent = [0, *begin], [-1, *extent]
    img = _array.slice(x, begin, extent)
    return _image.resize(img, [target_h, target_w], method=interpolation)


def _sized_shape(input_shape, height, width) -> TensorShape:
    dims = as_shape(input_shape).as_list()
    dims[-3], dims[-2] = height, width
    return TensorShape(dims)


class Resizing(Layer):
    """Resize images to ``height`` x ``width`` with ``interpolation``; with
    ``crop_to_aspect_ratio`` crop centrally to the target's aspect ratio first.

    Raises:
      NotImplementedError: an unknown ``interpolation`` (tf-keras's exception).
    """

    _shape_inference = True
    _float_output = True

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 **kwargs):
        self.height = height
        self.width = width
        self.interpolation = interpolation
        self.crop_to_aspect_ratio = crop_to_aspect_ratio
        self._interpolation_method = get_interpolation(interpolation)
        super().__init__(**kwargs)

    def call(self, inputs):
        check_image(self, inputs)
        return call_on_values(self._resize, inputs)  # sizes read at run time in a TF1 graph

    def _resize(self, inputs):
        dtype = self.compute_dtype if self._interpolation_method == "nearest" else "float32"
        x = inputs if inputs.dtype == np.dtype(dtype) else _m.cast(inputs, dtype)
        size = [self.height, self.width]
        if self.crop_to_aspect_ratio:
            out = smart_resize(x, size, self._interpolation_method)
        else:
            out = _image.resize(x, size, method=self._interpolation_method)
        return as_compute_dtype(self, out)

    def compute_output_shape(self, input_shape):
        return _sized_shape(input_shape, self.height, self.width)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height=self.height, width=self.width, interpolation=self.interpolation,
                      crop_to_aspect_ratio=self.crop_to_aspect_ratio)
        return config


class CenterCrop(Layer):
    """Crop the central ``height`` x ``width`` region; an image smaller than that in either
    dimension is instead ``smart_resize``d to it."""

    _shape_inference = True
    _float_output = True

    def __init__(self, height, width, **kwargs):
        self.height = height
        self.width = width
        super().__init__(**kwargs, autocast=False)

    def call(self, inputs):
        check_image(self, inputs)
        return call_on_values(self._crop, inputs)  # sizes read at run time in a TF1 graph

    def _crop(self, inputs):
        x = as_compute_dtype(self, inputs)
        h_diff = int(x.shape[-3]) - self.height
        w_diff = int(x.shape[-2]) - self.width
        if h_diff >= 0 and w_diff >= 0:
            return _image.crop_to_bounding_box(x, int(h_diff / 2), int(w_diff / 2),
                                               self.height, self.width)
        return as_compute_dtype(self, smart_resize(x, [self.height, self.width]))

    def compute_output_shape(self, input_shape):
        return _sized_shape(input_shape, self.height, self.width)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height=self.height, width=self.width)
        return config


class RandomCrop(BaseRandomLayer):
    """In training, crop a ``height`` x ``width`` region at a random offset (one offset for
    the whole batch, as tf-keras); at inference, or when the image is smaller than the
    region, ``smart_resize`` to it."""

    def __init__(self, height, width, seed=None, **kwargs):
        super().__init__(**kwargs, autocast=False, seed=seed)
        self.height = height
        self.width = width

    def _call(self, inputs, training):
        x = as_compute_dtype(self, inputs)
        h_diff = int(x.shape[-3]) - self.height
        w_diff = int(x.shape[-2]) - self.width
        if training and h_diff >= 0 and w_diff >= 0:
            rands = self._uniform([2], 0, np.iinfo(np.int32).max, dtype="int32")
            return _image.crop_to_bounding_box(x, int(rands[0]) % (h_diff + 1),
                                               int(rands[1]) % (w_diff + 1),
                                               self.height, self.width)
        return as_compute_dtype(self, smart_resize(x, [self.height, self.width]))

    def compute_output_shape(self, input_shape):
        return _sized_shape(input_shape, self.height, self.width)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height=self.height, width=self.width, seed=self.seed)
        return config


class _RandomSize(BaseRandomLayer):
    """RandomHeight and RandomWidth: in training, resize one axis by a factor drawn uniformly
    in [1 + lower, 1 + upper) (one factor per call)."""

    _axis = -3

    def __init__(self, factor, interpolation="bilinear", seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = factor
        if isinstance(factor, (tuple, list)):
            self._lower, self._upper = factor[0], factor[1]
        else:
            self._lower, self._upper = -factor, factor
        if self._upper < self._lower:
            raise ValueError(self._bound_message.format(factor=factor))
        if self._lower < -1.0 or self._upper < -1.0:
            raise ValueError("`factor` argument must have values larger than -1. Received: "
                             f"factor={factor}")
        self.interpolation = interpolation
        self._interpolation_method = get_interpolation(interpolation)

    def _call(self, inputs, training):
        if not training:
            return inputs
        f = self._uniform([], 1.0 + self._lower, 1.0 + self._upper)
        size = [int(inputs.shape[-3]), int(inputs.shape[-2])]
        axis = self._axis + 3
        size[axis] = int(np.float32(f) * np.float32(size[axis]))
        out = _image.resize(inputs, size, method=self._interpolation_method)
        return as_compute_dtype(self, out)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        dims[self._axis] = None
        return TensorShape(dims)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(factor=self.factor, interpolation=self.interpolation, seed=self.seed)
        return config


class RandomHeight(_RandomSize):
    """In training, resize the height by a random factor in [1 + lower, 1 + upper)
    (``factor`` a pair, or f for (-f, f)); the identity at inference.

    Raises:
      ValueError: upper < lower, or a bound below -1.
      NotImplementedError: an unknown ``interpolation``.
    """

    _axis = -3
    _bound_message = ("`factor` argument cannot have an upper bound lesser than the lower "
                      "bound. Received: factor={factor}")


class RandomWidth(_RandomSize):
    """In training, resize the width by a random factor in [1 + lower, 1 + upper)
    (``factor`` a pair, or f for (-f, f)); the identity at inference.

    Raises:
      ValueError: upper < lower, or a bound below -1.
      NotImplementedError: an unknown ``interpolation``.
    """

    _axis = -2
    _bound_message = ("`factor` argument cannot have an upper bound less than the lower "
                      "bound. Received: factor={factor}")
