"""tf.image.resize (TF2, ``antialias=False``) in float64, one output pixel at a time, from
the methods' continuous definitions (no lookup tables).

Half-pixel centres: output pixel o of an axis sized n_in -> n_out sits at source coordinate
(o + 0.5) * n_in / n_out (minus 0.5 for bilinear/bicubic, which index pixel centres).
``nearest`` takes floor of the unshifted coordinate; ``bilinear`` blends the two pixels
around the shifted one (clamped to the image); ``bicubic`` is Keys' cubic (a = -0.5) on the
four pixels around it, pixels outside the image dropped and the weights renormalised;
``area`` averages the input cells under the output cell; ``lanczos3``/``lanczos5``
(windowed sinc), ``gaussian`` (sigma 0.5, radius 1.5) and ``mitchellcubic`` (B = C = 1/3)
weigh every input pixel centre i + 0.5 by the kernel of its distance to the coordinate,
renormalised.
"""

from __future__ import annotations

import math

import numpy as np


def _keys(x, a=-0.5):
    x = abs(x)
    if x <= 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return 0.0


def _lanczos(radius):
    def kernel(x):
        x = abs(x)
        if x > radius:
            return 0.0
        if x < 1e-12:
            return 1.0
        return radius * math.sin(math.pi * x) * math.sin(math.pi * x / radius) / (
            math.pi * math.pi * x * x)
    return kernel


def _gaussian(x):
    return math.exp(-x * x / (2 * 0.25)) if abs(x) < 1.5 else 0.0


def _mitchell(x):
    x = abs(x)
    if x < 1:
        return (7 / 6 * x - 2) * x * x + 8 / 9
    if x < 2:
        return ((-7 / 18 * x + 2) * x - 10 / 3) * x + 16 / 9
    return 0.0


_KERNELS = {"lanczos3": _lanczos(3), "lanczos5": _lanczos(5), "gaussian": _gaussian,
            "mitchellcubic": _mitchell}


def axis_weights(method: str, n_in: int, n_out: int) -> np.ndarray:
    """The (n_out, n_in) float64 weights of one axis."""
    w = np.zeros((n_out, n_in))
    scale = n_in / n_out
    for o in range(n_out):
        centre = (o + 0.5) * scale
        if method == "nearest":
            w[o, min(int(math.floor(centre)), n_in - 1)] = 1
        elif method == "bilinear":
            src = centre - 0.5
            low = math.floor(src)
            frac = src - low
            w[o, min(max(low, 0), n_in - 1)] += 1 - frac
            w[o, min(max(low + 1, 0), n_in - 1)] += frac
        elif method == "bicubic":
            src = centre - 0.5
            low = math.floor(src)
            taps = {i: _keys(src - i) for i in range(low - 1, low + 3) if 0 <= i < n_in}
            total = sum(taps.values())
            for i, value in taps.items():
                w[o, i] = value / total
        elif method == "area":
            lo, hi = o * scale, (o + 1) * scale
            for i in range(n_in):
                w[o, i] = max(0.0, min(hi, i + 1) - max(lo, i)) / scale
        else:
            kernel = _KERNELS[method]
            values = np.array([kernel(i + 0.5 - centre) for i in range(n_in)])
            w[o] = values / values.sum()
    return w


def resize(images: np.ndarray, size, method: str) -> np.ndarray:
    """``images`` (batch, height, width, channels) resized to ``size`` (height, width)."""
    images = np.asarray(images, np.float64)
    rows = axis_weights(method, images.shape[1], size[0])
    cols = axis_weights(method, images.shape[2], size[1])
    return np.einsum("yh,xw,bhwc->byxc", rows, cols, images)
