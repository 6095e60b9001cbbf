"""``tf.compat.v1.image``: TF 2's ``tf.image`` plus TF 1's resize functions, whose default
sampling is TF 1's (source pixel ``o * in/out``, no half-pixel centres; ``align_corners``
maps corner to corner), computed with the weights of ``resize_weights.legacy_resize_matrix``.

As TF 1: ``resize_images`` takes ``ResizeMethod`` integers (or TF 2's names), returns an
image already of the target size unchanged, else float32 (``NEAREST_NEIGHBOR``: the input
dtype); ``half_pixel_centers`` selects TF 2's sampling; ``align_corners`` with
``half_pixel_centers`` raises InvalidArgumentError.
"""

from __future__ import annotations

import numpy as np

from ..core.tensor import Tensor
from ..errors import InvalidArgumentError
from ..ops.indexing import gather
from ..ops.math import cast
from ..ops.math_extra import einsum
from . import color as _color
from . import ops as _ops
from .ops import __all__ as _V2_NAMES
from .resize_weights import legacy_resize_matrix, resize_matrix

from .jpeg import decode_and_crop_jpeg, decode_jpeg, extract_jpeg_shape  # noqa: E402, F401

__all__ = sorted({*_V2_NAMES, *_color.__all__, "decode_and_crop_jpeg", "decode_jpeg",
                  "extract_jpeg_shape", "resize_area", "resize_bicubic", "resize_bilinear",
                  "resize_image_with_crop_or_pad", "resize_images", "resize_nearest_neighbor"})
globals().update({n: getattr(_ops, n) for n in _V2_NAMES if n != "ResizeMethod"})
globals().update({n: getattr(_color, n) for n in _color.__all__})
resize_image_with_crop_or_pad = _ops.resize_with_crop_or_pad


class ResizeMethod:
    """TF 1's ``tf.image.ResizeMethod``: integers."""

    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


_BY_NUMBER = {0: "bilinear", 1: "nearest", 2: "bicubic", 3: "area"}


def _resize(images, size, method: str, align_corners: bool, half_pixel_centers: bool):
    if align_corners and half_pixel_centers:
        raise InvalidArgumentError("If half_pixel_centers is True, align_corners must be False.")
    images, batch = _ops._batched(images)
    sz = np.asarray(size.numpy() if isinstance(size, Tensor) else size)
    if sz.shape != (2,) or sz.dtype.kind not in "iu":
        raise ValueError(f"'size' must be a 1-D int32 Tensor of 2 elements: new_height, "
                         f"new_width, got {sz!r}")
    new_h, new_w = int(sz[0]), int(sz[1])
    h, w = int(images.shape[1]), int(images.shape[2])

    def matrix(n_in, n_out):
        if half_pixel_centers:
            return resize_matrix(method, n_in, n_out)
        return legacy_resize_matrix(method, n_in, n_out, bool(align_corners))
    if method == "nearest":
        out = gather(gather(images, np.argmax(matrix(h, new_h), 1), axis=1),
                     np.argmax(matrix(w, new_w), 1), axis=2)
        return _ops._unbatched(out, batch)
    x = images if images.dtype == np.float32 else cast(images, np.float32)
    rows = _ops._weights(x, matrix(h, new_h))
    cols = _ops._weights(x, matrix(w, new_w))
    return _ops._unbatched(einsum("pw,bowc->bopc", cols, einsum("oh,bhwc->bowc", rows, x)),
                           batch)


def resize_bilinear(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """``tf.compat.v1.image.resize_bilinear``: float32."""
    return _resize(images, size, "bilinear", align_corners, half_pixel_centers)


def resize_nearest_neighbor(images, size, align_corners=False, name=None,
                            half_pixel_centers=False):
    """``tf.compat.v1.image.resize_nearest_neighbor``: the input dtype."""
    return _resize(images, size, "nearest", align_corners, half_pixel_centers)


def resize_bicubic(images, size, align_corners=False, name=None, half_pixel_centers=False):
    """``tf.compat.v1.image.resize_bicubic``: float32."""
    return _resize(images, size, "bicubic", align_corners, half_pixel_centers)


def resize_area(images, size, align_corners=False, name=None):
    """``tf.compat.v1.image.resize_area``: float32."""
    return _resize(images, size, "area", align_corners, False)


def resize_images(images, size, method=ResizeMethod.BILINEAR, align_corners=False,
                  preserve_aspect_ratio=False, name=None):
    """``tf.compat.v1.image.resize_images`` (``tf.image.resize`` in TF 1)."""
    name_of = _BY_NUMBER.get(method, method) if isinstance(method, int) else method
    if name_of not in _BY_NUMBER.values():
        raise ValueError(f"Resize method is not implemented: [{method}]")
    t, batch = _ops._batched(images)
    sz = [int(s) for s in np.asarray(size.numpy() if isinstance(size, Tensor) else size)]
    h, w = int(t.shape[1]), int(t.shape[2])
    if preserve_aspect_ratio:
        f32 = np.float32
        scale = min(f32(sz[0]) / f32(h), f32(sz[1]) / f32(w))
        sz = [int(np.round(f32(scale) * f32(h))), int(np.round(f32(scale) * f32(w)))]
    if sz == [h, w]:
        return _ops._unbatched(t, batch)
    return _resize(t if batch else _ops._unbatched(t, batch), np.array(sz, np.int32), name_of,
                   align_corners, False)


for _name in ("resize_area", "resize_bicubic", "resize_bilinear", "resize_images",
              "resize_nearest_neighbor"):
    globals()[_name] = _ops._as_graph_node(globals()[_name])
del _name
