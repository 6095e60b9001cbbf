"""``tf.image`` ops that input pipelines use: resizing, flips, crops and pads, dtype
conversion, standardisation, brightness and contrast, grayscale.

Composites of ipu_gpu ops, so a GradientTape differentiates them and they run inside
``tf.data`` map functions. Images are ``[height, width, channels]`` or batches
``[batch, height, width, channels]``. The ``random_*`` ops draw with ``tf.random.uniform``
(``ipu_gpu.ops.random``) under TF's seed rules (global seed, op seed), so a program is
reproducible as in TF, though the drawn values are ipu_gpu's generator's, not TF's.
Errors are TF's: ValueError for a bad rank or a static size check, InvalidArgumentError for
a crop larger than its input. In a TF1 graph each call is one node run on each
``Session.run``'s values.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..core import backend, registry
from ..core.convert import convert_to_tensor
from ..core.dtypes import as_dtype
from ..core.tensor import Tensor, wrap
from ..errors import InvalidArgumentError
from ..ops import random as _random
from ..ops.array import pad, reverse, tile
from ..ops.array import slice as _slice
from ..ops.indexing import gather, where
from ..ops.math import (add, cast, clip_by_value, floordiv, floormod, less, maximum, multiply,
                        sqrt, subtract)
from ..ops.math_extra import einsum
from ..ops.reduction import reduce_mean, reduce_sum
from ..ops.shape import expand_dims, reshape, squeeze
from .resize_weights import METHODS, resize_matrix

__all__ = [
    "ResizeMethod", "adjust_brightness", "adjust_contrast", "central_crop",
    "convert_image_dtype", "crop_to_bounding_box", "flip_left_right", "flip_up_down",
    "grayscale_to_rgb", "pad_to_bounding_box", "per_image_standardization", "random_brightness",
    "random_contrast", "random_crop", "random_flip_left_right", "random_flip_up_down", "resize",
    "resize_with_crop_or_pad", "rgb_to_grayscale", "rot90", "transpose",
]


class ResizeMethod:
    """The ``method`` names of ``resize`` (``tf.image.ResizeMethod``)."""

    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"
    BICUBIC = "bicubic"
    AREA = "area"
    LANCZOS3 = "lanczos3"
    LANCZOS5 = "lanczos5"
    GAUSSIAN = "gaussian"
    MITCHELLCUBIC = "mitchellcubic"


def _tensor(image, name="image") -> Tensor:
    return image if isinstance(image, Tensor) else convert_to_tensor(image)


def _rank_3_or_4(image: Tensor, op: str = "image") -> bool:
    """Whether ``image`` is a batch; ValueError unless it has rank 3 or 4."""
    rank = len(image.shape)
    if rank not in (3, 4):
        raise ValueError(f"'image' (shape {tuple(image.shape)}) must have either 3 or 4 "
                         f"dimensions.")
    return rank == 4


def _batched(image):
    image = _tensor(image)
    batch = _rank_3_or_4(image)
    return (image if batch else expand_dims(image, 0)), batch


def _unbatched(image, batch: bool):
    return image if batch else squeeze(image, 0)


def _static_int(x, what: str) -> int:
    return int(np.asarray(x.numpy() if isinstance(x, Tensor) else x))


# ---- resizing ---------------------------------------------------------------------------
def _const(x: Tensor, value, dtype=None) -> Tensor:
    """``value`` as a Tensor on ``x``'s device (numpy or cupy)."""
    return wrap(backend.to_device(backend.xp_of(x._value), np.array(value, dtype)))


def _on_device_of(x: Tensor, t: Tensor) -> Tensor:
    """``t`` (a random draw, made on the default device) on ``x``'s device: tf.data hands its
    functions host Tensors even where the default device is a GPU."""
    xp = backend.xp_of(x._value)
    if backend.xp_of(t._value) is xp:
        return t
    return wrap(backend.to_device(xp, np.asarray(t.numpy())))


def _weights(x: Tensor, matrix: np.ndarray) -> Tensor:
    """A resize weight matrix as a Tensor on ``x``'s device."""
    return _const(x, matrix)


def resize(images, size, method=ResizeMethod.BILINEAR, preserve_aspect_ratio=False,
           antialias=False, name=None):
    """``images`` resized to ``size`` = [new_height, new_width] (``tf.image.resize``, TF2's
    half-pixel centres). Returns float32, except ``nearest`` which keeps the input dtype (as
    TF 2, an image already of the target size is resized too: float32)."""
    images, batch = _batched(images)
    method = getattr(method, "value", method)
    if method not in METHODS:
        raise ValueError(f"Resize method is not implemented: [{method}]")
    sz = np.asarray(size.numpy() if isinstance(size, Tensor) else size)
    if sz.shape != (2,):
        raise ValueError(f"'size' must be a 1-D Tensor of 2 elements: new_height, new_width, "
                         f"got shape {sz.shape}")
    if sz.dtype.kind not in "iu":
        raise TypeError(f"'size' must be an integer Tensor, got {sz.dtype.name}")
    new_h, new_w = int(sz[0]), int(sz[1])
    h, w = int(images.shape[1]), int(images.shape[2])
    if preserve_aspect_ratio:
        f32 = np.float32
        scale = min(f32(new_h) / f32(h), f32(new_w) / f32(w))
        new_h = int(np.round(f32(scale) * f32(h)))
        new_w = int(np.round(f32(scale) * f32(w)))
    if new_h <= 0 or new_w <= 0:
        raise ValueError("'size' must be positive")
    if method == ResizeMethod.NEAREST_NEIGHBOR:
        rows = np.argmax(resize_matrix("nearest", h, new_h), axis=1)
        cols = np.argmax(resize_matrix("nearest", w, new_w), axis=1)
        out = gather(gather(images, rows, axis=1), cols, axis=2)
        return _unbatched(out, batch)
    x = images if images.dtype == np.float32 else cast(images, np.float32)
    rows = _weights(x, resize_matrix(method, h, new_h, bool(antialias)))
    cols = _weights(x, resize_matrix(method, w, new_w, bool(antialias)))
    out = einsum("pw,bowc->bopc", cols, einsum("oh,bhwc->bowc", rows, x))
    return _unbatched(out, batch)


# ---- flips and transposes ---------------------------------------------------------------
def flip_left_right(image):
    """``image`` mirrored along its width (``tf.image.flip_left_right``)."""
    image = _tensor(image)
    _rank_3_or_4(image)
    return reverse(image, [-2])


def flip_up_down(image):
    """``image`` mirrored along its height (``tf.image.flip_up_down``)."""
    image = _tensor(image)
    _rank_3_or_4(image)
    return reverse(image, [-3])


def _random_flip(image, axis: int, seed):
    image, batch = _batched(image)
    n = int(image.shape[0])
    u = _on_device_of(image, _random.uniform([n] if batch else [], 0, 1.0, seed=seed))
    flip = reshape(less(u, 0.5), [n, 1, 1, 1])
    return _unbatched(where(flip, reverse(image, [axis]), image), batch)


def random_flip_left_right(image, seed=None):
    """``image`` (each image of a batch independently) mirrored along its width with
    probability 1/2 (``tf.image.random_flip_left_right``)."""
    return _random_flip(image, 2, seed)


def random_flip_up_down(image, seed=None):
    """``image`` (each image of a batch independently) mirrored along its height with
    probability 1/2 (``tf.image.random_flip_up_down``)."""
    return _random_flip(image, 1, seed)


def transpose(image, name=None):
    """Height and width swapped (``tf.image.transpose``)."""
    image, batch = _batched(image)
    from ..ops.shape import transpose as _transpose

    return _unbatched(_transpose(image, [0, 2, 1, 3]), batch)


def rot90(image, k=1, name=None):
    """``image`` rotated counter-clockwise by ``k`` quarter turns (``tf.image.rot90``)."""
    image, batch = _batched(image)
    k = _static_int(k, "k") % 4
    for _ in range(k):
        image = reverse(transpose(image), [1])
    return _unbatched(image, batch)


# ---- crops and pads ---------------------------------------------------------------------
def _box(image, offset_height, offset_width, target_height, target_width) -> tuple:
    """The box's offsets and targets as ints, then the (batched) image's height and width."""
    return (_static_int(offset_height, ""), _static_int(offset_width, ""),
            _static_int(target_height, ""), _static_int(target_width, ""),
            int(image.shape[1]), int(image.shape[2]))


def _check_all(checks) -> None:
    """ValueError with the message of the first (ok, message) check that fails."""
    for ok, msg in checks:
        if not ok:
            raise ValueError(msg)


def crop_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """The ``target_height`` x ``target_width`` window of ``image`` at the offsets
    (``tf.image.crop_to_bounding_box``)."""
    image, batch = _batched(image)
    oh, ow, th, tw, h, w = _box(image, offset_height, offset_width, target_height,
                                target_width)
    _check_all(((ow >= 0, "offset_width must be >= 0."),
                (oh >= 0, "offset_height must be >= 0."),
                (tw > 0, "target_width must be > 0."), (th > 0, "target_height must be > 0."),
                (w >= tw + ow, "width must be >= target + offset."),
                (h >= th + oh, "height must be >= target + offset.")))
    return _unbatched(image[:, oh:oh + th, ow:ow + tw, :], batch)


def pad_to_bounding_box(image, offset_height, offset_width, target_height, target_width):
    """``image`` placed at the offsets in a zero ``target_height`` x ``target_width`` canvas
    (``tf.image.pad_to_bounding_box``)."""
    image, batch = _batched(image)
    oh, ow, th, tw, h, w = _box(image, offset_height, offset_width, target_height,
                                target_width)
    after_h, after_w = th - oh - h, tw - ow - w
    _check_all(((oh >= 0, "offset_height must be >= 0"),
                (ow >= 0, "offset_width must be >= 0"),
                (after_w >= 0, "width must be <= target - offset"),
                (after_h >= 0, "height must be <= target - offset")))
    return _unbatched(pad(image, [[0, 0], [oh, after_h], [ow, after_w], [0, 0]]), batch)


def resize_with_crop_or_pad(image, target_height, target_width):
    """``image`` centrally cropped and/or zero-padded to the target size
    (``tf.image.resize_with_crop_or_pad``)."""
    image, batch = _batched(image)
    th, tw = _static_int(target_height, ""), _static_int(target_width, "")
    if tw <= 0:
        raise ValueError("target_width must be > 0.")
    if th <= 0:
        raise ValueError("target_height must be > 0.")
    h, w = int(image.shape[1]), int(image.shape[2])
    dw, dh = tw - w, th - h
    cropped = crop_to_bounding_box(image, max(-dh // 2, 0), max(-dw // 2, 0), min(th, h),
                                   min(tw, w))
    out = pad_to_bounding_box(cropped, max(dh // 2, 0), max(dw // 2, 0), th, tw)
    return _unbatched(out, batch)


def central_crop(image, central_fraction):
    """The central ``central_fraction`` of ``image``'s height and width
    (``tf.image.central_crop``)."""
    image, batch = _batched(image)
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    if central_fraction == 1.0:
        return _unbatched(image, batch)
    h, w = int(image.shape[1]), int(image.shape[2])
    start_h = int((h - h * central_fraction) / 2)
    start_w = int((w - w * central_fraction) / 2)
    out = image[:, start_h:h - start_h, start_w:w - start_w, :]
    return _unbatched(out, batch)


def random_crop(value, size, seed=None, name=None):
    """A window of shape ``size`` at a uniformly random offset in ``value``
    (``tf.image.random_crop``)."""
    value = _tensor(value)
    size = [int(s) for s in np.asarray(size.numpy() if isinstance(size, Tensor) else size)]
    shape = list(value.shape)
    if len(size) != len(shape):
        raise ValueError(f"Shapes must be equal rank, but are {len(shape)} and {len(size)}")
    if any(s > d for s, d in zip(size, shape)):
        raise InvalidArgumentError(f"Need value.shape >= size, got {shape} vs {size}")
    bits = _on_device_of(value, _random.uniform([len(shape)], 0, np.iinfo(np.int32).max,
                                                dtype=np.int32, seed=seed))
    offsets = floormod(bits, _const(bits, [d - s + 1 for d, s in zip(shape, size)], np.int32))
    return _slice(value, offsets, size)


# ---- dtypes and pixel values ------------------------------------------------------------
def convert_image_dtype(image, dtype, saturate=False, name=None):
    """``image`` in ``dtype``, values rescaled as TF's: floats in [0, 1), integers over their
    full positive range (``tf.image.convert_image_dtype``)."""
    image = _tensor(image)
    dtype = as_dtype(dtype)
    src = image.dtype
    for d in (src, dtype):
        if d.kind not in "fiu":
            raise AttributeError("image dtype must be either floating point or integer")
    if src == dtype:
        return image
    if src.kind in "iu" and dtype.kind in "iu":
        scale_in, scale_out = int(np.iinfo(src).max), int(np.iinfo(dtype).max)
        if scale_in > scale_out:
            scale = (scale_in + 1) // (scale_out + 1)
            scaled = floordiv(image, _const(image, scale, src))
            if saturate:
                info = np.iinfo(dtype)
                scaled = clip_by_value(scaled, _const(image, max(info.min, np.iinfo(src).min), src),
                                       _const(image, info.max, src))
            return cast(scaled, dtype)
        scale = (scale_out + 1) // (scale_in + 1)
        return multiply(cast(image, dtype), _const(image, scale, dtype))
    if src.kind == "f" and dtype.kind == "f":
        return cast(image, dtype)
    if src.kind in "iu":
        return multiply(cast(image, dtype), _const(image, 1.0 / np.iinfo(src).max, dtype))
    scaled = multiply(image, _const(image, np.iinfo(dtype).max + 0.5, src))
    if saturate:
        info = np.iinfo(dtype)
        scaled = clip_by_value(scaled, _const(image, info.min, src), _const(image, info.max, src))
    return cast(scaled, dtype)


def _as_float(image):
    image = _tensor(image)
    return image, (image if image.dtype.kind == "f" else convert_image_dtype(image, np.float32))


def _back(result, original_dtype):
    return result if result.dtype == original_dtype else convert_image_dtype(
        result, original_dtype, saturate=True)


def adjust_brightness(image, delta):
    """``image + delta`` (integer images: in float, converted back with saturation)
    (``tf.image.adjust_brightness``)."""
    image, x = _as_float(image)
    return _back(add(x, _on_device_of(x, cast(delta, x.dtype))), image.dtype)


def adjust_contrast(images, contrast_factor):
    """Each channel of each image scaled about its mean by ``contrast_factor``
    (``tf.image.adjust_contrast``)."""
    images, x = _as_float(images)
    if len(images.shape) < 3:
        raise ValueError(f"'images' must have at least 3 dimensions, got shape "
                         f"{tuple(images.shape)}")
    mean = reduce_mean(x, axis=[-3, -2], keepdims=True)
    out = add(multiply(subtract(x, mean), _on_device_of(x, cast(contrast_factor, x.dtype))), mean)
    return _back(out, images.dtype)


def random_brightness(image, max_delta, seed=None):
    """``adjust_brightness`` by a delta uniform in [-max_delta, max_delta)
    (``tf.image.random_brightness``)."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = _random.uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image, lower, upper, seed=None):
    """``adjust_contrast`` by a factor uniform in [lower, upper)
    (``tf.image.random_contrast``)."""
    return adjust_contrast(image, _uniform_factor(lower, upper, seed))


def _uniform_factor(lower, upper, seed):
    """A scalar factor uniform in [lower, upper); ValueError unless 0 <= lower < upper."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return _random.uniform([], lower, upper, seed=seed)


def per_image_standardization(image):
    """Each image scaled to zero mean and unit variance: ``(x - mean) / max(stddev,
    1 / sqrt(num_elements))`` over one image's pixels and channels, in float32 unless the
    image is a float (``tf.image.per_image_standardization``)."""
    image = _tensor(image)
    _rank_3_or_4(image)
    x = image if image.dtype.kind == "f" else cast(image, np.float32)
    n = int(np.prod(image.shape[-3:]))
    axes = [-1, -2, -3]
    mean = reduce_mean(x, axis=axes, keepdims=True)
    centred = subtract(x, mean)
    stddev = sqrt(reduce_mean(multiply(centred, centred), axis=axes, keepdims=True))
    stddev = maximum(stddev, _const(x, 1.0 / math.sqrt(n), x.dtype))
    return centred / stddev


def rgb_to_grayscale(images, name=None):
    """The luma of RGB images, one channel (``tf.image.rgb_to_grayscale``)."""
    images, x = _as_float(images)
    weights = _const(x, [0.2989, 0.5870, 0.1140], x.dtype)
    gray = expand_dims(reduce_sum(multiply(x, weights), axis=-1), -1)
    return _back(gray, images.dtype)


def grayscale_to_rgb(images, name=None):
    """One-channel images repeated into three channels (``tf.image.grayscale_to_rgb``)."""
    images = _tensor(images)
    if len(images.shape) < 2 or int(images.shape[-1]) != 1:
        raise ValueError(f"Dimension must be 1 but is {images.shape[-1]}")
    return tile(images, [1] * (len(images.shape) - 1) + [3])


def _as_graph_node(fn):
    """``fn`` that, called with TF1 graph tensors, becomes one graph node running ``fn`` on
    each ``Session.run``'s values (random ops draw per run; ``tf.gradients`` differentiates
    the run's tape)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        node = registry.symbolic_call(call, args, kwargs)
        return fn(*args, **kwargs) if node is NotImplemented else node
    return call


for _name in __all__:
    if _name != "ResizeMethod":
        globals()[_name] = _as_graph_node(globals()[_name])
del _name
