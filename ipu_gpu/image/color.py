"""``tf.image`` colour ops: RGB/HSV conversion, saturation, hue and gamma, and their random
variants, composed of ipu_gpu ops (differentiable where TF's are, usable in tf.data
functions).

HSV follows TF's kernels: hue and saturation in [0, 1], hue 0 for greys. Integer images are
converted to float32 and back with ``convert_image_dtype`` (saturating), as TF does. Random
factors are drawn with ``tf.random.uniform`` under TF's seed rules.
"""

from __future__ import annotations

import numpy as np

from ..ops import random as _random
from ..ops.indexing import where
from ..ops.math import (abs as _abs, add, clip_by_value, equal, floormod, greater, less, maximum,
                        minimum, multiply, pow as _pow, subtract)
from ..ops.array import unstack
from ..ops.shape import stack
from .ops import (_as_graph_node, _back, _const, _on_device_of, _tensor, _uniform_factor,
                  convert_image_dtype)

__all__ = ["adjust_gamma", "adjust_hue", "adjust_saturation", "hsv_to_rgb", "random_hue",
           "random_saturation", "rgb_to_hsv"]


def _channels(image, op: str):
    if len(image.shape) == 0 or int(image.shape[-1]) != 3:
        raise ValueError(f"{op}: the last dimension of images must be 3 (RGB), got shape "
                         f"{tuple(image.shape)}")
    return unstack(image, axis=-1)


def _float_channels(images, op: str):
    """(``images`` as a float Tensor, its three channels); TypeError for other dtypes."""
    images = _tensor(images)
    if images.dtype.kind != "f":
        raise TypeError(f"{op}: images must be float16, float32 or float64, got "
                        f"{images.dtype.name}")
    return images, _channels(images, op)


def rgb_to_hsv(images, name=None):
    """Float RGB images in [0, 1] as HSV (``tf.image.rgb_to_hsv``)."""
    images, (r, g, b) = _float_channels(images, "rgb_to_hsv")
    v = maximum(maximum(r, g), b)
    span = subtract(v, minimum(minimum(r, g), b))
    zero = _const(images, 0, images.dtype)
    positive_v = greater(v, zero)
    s = where(positive_v, span / where(positive_v, v, _const(images, 1, images.dtype)), zero)
    has_span = greater(span, zero)
    safe = where(has_span, span, _const(images, 1, images.dtype))
    norm = _const(images, 1 / 6, images.dtype) / safe
    h = where(equal(r, v), norm * (g - b),
              where(equal(g, v), norm * (b - r) + _const(images, 2 / 6, images.dtype),
                    norm * (r - g) + _const(images, 4 / 6, images.dtype)))
    h = where(has_span, h, zero)
    h = where(less(h, zero), h + _const(images, 1, images.dtype), h)
    return stack([h, s, v], axis=-1)


def hsv_to_rgb(images, name=None):
    """Float HSV images as RGB (``tf.image.hsv_to_rgb``)."""
    images, (h, s, v) = _float_channels(images, "hsv_to_rgb")
    one = _const(images, 1, images.dtype)
    zero = _const(images, 0, images.dtype)
    dh = h * _const(images, 6, images.dtype)
    dr = clip_by_value(_abs(dh - _const(images, 3, images.dtype)) - one, zero, one)
    dg = clip_by_value(_const(images, 2, images.dtype) - _abs(dh - _const(images, 2,
                                                                             images.dtype)),
                       zero, one)
    db = clip_by_value(_const(images, 2, images.dtype) - _abs(dh - _const(images, 4,
                                                                             images.dtype)),
                       zero, one)
    one_minus_s = one - s
    return stack([multiply(add(one_minus_s, s * c), v) for c in (dr, dg, db)], axis=-1)


def _as_f32(image):
    """(image, its float16/float32 value; others converted to float32), as TF's colour ops."""
    image = _tensor(image)
    if image.dtype in (np.dtype(np.float16), np.dtype(np.float32)):
        return image, image
    return image, convert_image_dtype(image, np.float32)


def _in_hsv(image, fn):
    """``image`` with ``fn(x, h, s, v) -> (h, s, v)`` applied to its HSV channels, computed
    as ``_as_f32`` says and cast back to ``image``'s dtype."""
    image, x = _as_f32(image)
    h, s, v = unstack(rgb_to_hsv(x), axis=-1)
    return _back(hsv_to_rgb(stack(list(fn(x, h, s, v)), axis=-1)), image.dtype)


def adjust_saturation(image, saturation_factor, name=None):
    """Saturation scaled by ``saturation_factor`` and clipped to [0, 1] in HSV
    (``tf.image.adjust_saturation``)."""
    def saturate(x, h, s, v):
        factor = _on_device_of(x, _cast(saturation_factor, x.dtype))
        return h, clip_by_value(s * factor, _const(x, 0, x.dtype), _const(x, 1, x.dtype)), v
    return _in_hsv(image, saturate)


def adjust_hue(image, delta, name=None):
    """Hue rotated by ``delta`` (in [-1, 1], a fraction of the colour circle)
    (``tf.image.adjust_hue``)."""
    def rotate(x, h, s, v):
        d = _on_device_of(x, _cast(delta, x.dtype))
        return floormod(h + d, _const(x, 1, x.dtype)), s, v
    return _in_hsv(image, rotate)


def _cast(value, dtype):
    from ..ops.math import cast

    return cast(value, dtype)


def random_saturation(image, lower, upper, seed=None):
    """``adjust_saturation`` by a factor uniform in [lower, upper)
    (``tf.image.random_saturation``)."""
    return adjust_saturation(image, _uniform_factor(lower, upper, seed))


def random_hue(image, max_delta, seed=None):
    """``adjust_hue`` by a delta uniform in [-max_delta, max_delta) (``tf.image.random_hue``;
    ``max_delta`` in [0, 0.5])."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_hue(image, _random.uniform([], -max_delta, max_delta, seed=seed))


def adjust_gamma(image, gamma=1, gain=1):
    """``gain * image ** gamma``; uint8/uint16 images through float32 in [0, 1]
    (``tf.image.adjust_gamma``)."""
    image = _tensor(image)
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number.")
    if image.dtype in (np.dtype(np.uint8), np.dtype(np.uint16)):
        x = convert_image_dtype(image, np.float32)
        out = multiply(_pow(x, _const(x, gamma, x.dtype)), _const(x, gain, x.dtype))
        return convert_image_dtype(out, image.dtype, saturate=True)
    return multiply(_pow(image, _const(image, gamma, image.dtype)),
                    _const(image, gain, image.dtype))


for _name in __all__:
    globals()[_name] = _as_graph_node(globals()[_name])
del _name
