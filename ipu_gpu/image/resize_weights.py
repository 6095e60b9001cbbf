"""One axis of TF2's ``tf.image.resize`` (``antialias=False``) as an (out, in) weight matrix:
every method is separable, so an image resizes as ``rows @ image @ cols.T``.

The weights follow TF's CPU kernels in float32, their rounding included: ``bilinear``
(``ResizeBilinear``, half-pixel centres), ``bicubic`` (``ResizeBicubic``, half-pixel centres:
Keys' cubic with a = -0.5 read from a 1024-entry table, taps outside the image dropped and
the rest renormalised), ``area`` (``ResizeArea``: the overlap of each input cell with the
output cell), and ``ScaleAndTranslate``'s ``lanczos3``, ``lanczos5``, ``gaussian`` and
``mitchellcubic`` kernels (weights renormalised over the taps inside the image).
``nearest`` is half-pixel nearest neighbour. With ``antialias`` (``resize_matrix(...,
antialias=True)``) every method but ``nearest`` and ``area`` is ``ScaleAndTranslate``'s, its
kernel stretched by the downscaling factor (``bilinear``: the triangle kernel, ``bicubic``:
Keys' cubic), as ``tf.image.resize(..., antialias=True)``.

Used by ``tf.image.resize`` (``ipu_gpu.image``) and Keras's UpSampling2D.
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["METHODS", "legacy_resize_matrix", "resize_matrix"]

_F = np.float32
_TABLE_SIZE = 1024


def _half_pixel_source(in_size, out_size):
    scale = _F(_F(in_size) / _F(out_size))
    return (np.arange(out_size, dtype=_F) + _F(0.5)) * scale - _F(0.5)


def _nearest(in_size, out_size):
    scale = _F(_F(in_size) / _F(out_size))
    src = np.floor((np.arange(out_size, dtype=_F) + _F(0.5)) * scale).astype(np.int64)
    m = np.zeros((out_size, in_size), _F)
    m[np.arange(out_size), np.minimum(src, in_size - 1)] = 1
    return m


def _bilinear(in_size, out_size):
    src = _half_pixel_source(in_size, out_size)
    low = np.floor(src)
    lerp = src - low
    top = np.clip(low, 0, in_size - 1).astype(np.int64)
    bottom = np.clip(np.ceil(src), 0, in_size - 1).astype(np.int64)
    m = np.zeros((out_size, in_size), _F)
    np.add.at(m, (np.arange(out_size), top), _F(1) - lerp)
    np.add.at(m, (np.arange(out_size), bottom), lerp)
    return m


def _keys_table(a=-0.5):
    """TF's bicubic coefficient table: [i, 0] weights distance i/1024, [i, 1] distance
    1 + i/1024 (computed in double from float x, stored as float)."""
    x = (np.arange(_TABLE_SIZE + 1) / _TABLE_SIZE).astype(_F).astype(np.float64)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    x = x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.stack([near, far], 1).astype(_F)


def _keys_taps(table, loc_f) -> list:
    """The four (source index, weight) taps of source position ``loc_f`` from ``table``."""
    loc = int(math.floor(loc_f))
    offset = int(np.rint(_F(loc_f - _F(loc)) * _F(_TABLE_SIZE)))
    return [(loc - 1, table[offset, 1]), (loc, table[offset, 0]),
            (loc + 1, table[_TABLE_SIZE - offset, 0]), (loc + 2, table[_TABLE_SIZE - offset, 1])]


def _bicubic(in_size, out_size):
    table = _keys_table()
    src = _half_pixel_source(in_size, out_size)
    m = np.zeros((out_size, in_size), _F)
    for o, loc_f in enumerate(src):
        taps = _keys_taps(table, loc_f)
        inside = [(i, w) for i, w in taps if 0 <= i < in_size]
        total = _F(sum(w for _, w in inside))
        norm = _F(1) / total if abs(total) >= 1000 * np.finfo(_F).tiny else _F(1)
        for i, w in inside:
            m[o, i] += w * norm
    return m


def _area(in_size, out_size):
    return _area_matrix(in_size, out_size, _F(_F(in_size) / _F(out_size)))


def _area_matrix(in_size, out_size, scale):
    """Each output pixel the mean of the source span [o * scale, (o + 1) * scale), partly
    covered pixels weighted by their coverage, indices clamped to the image."""
    inv = _F(1) / scale
    m = np.zeros((out_size, in_size), _F)
    for o in range(out_size):
        lo, hi = _F(o) * scale, _F(o + 1) * scale
        for i in range(int(math.floor(lo)), int(math.ceil(hi))):
            if i < lo:
                w = scale if i + 1 > hi else _F(i + 1) - lo
            else:
                w = hi - _F(i) if i + 1 > hi else _F(1)
            m[o, min(max(i, 0), in_size - 1)] += _F(w) * inv
    return m


def _lanczos(radius):
    def kernel(x):
        x = np.abs(x)
        pi = _F(3.14159265359)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = (_F(radius) * np.sin(pi * x) * np.sin(pi * x / _F(radius))
                     / (pi * pi * x * x))
        return np.where(x > radius, _F(0), np.where(x <= 1e-3, _F(1), value)).astype(_F)
    return kernel, float(radius)


def _gaussian():
    sigma = 1.5 / 3.0

    def kernel(x):
        x = np.abs(x).astype(np.float64)
        return np.where(x >= 1.5, 0.0, np.exp(-x * x / (2.0 * sigma * sigma))).astype(_F)
    return kernel, 1.5


def _mitchell():
    def kernel(x):
        x = np.abs(x)
        far = (((_F(-7 / 18) * x + _F(2)) * x - _F(10 / 3)) * x + _F(16 / 9))
        near = ((_F(7 / 6) * x - _F(2)) * x) * x + _F(8 / 9)
        return np.where(x >= 2, _F(0), np.where(x >= 1, far, near)).astype(_F)
    return kernel, 2.0


def _triangle():
    def kernel(x):
        x = np.abs(x)
        return np.where(x >= 1, _F(0), _F(1) - x).astype(_F)
    return kernel, 1.0


def _keys_cubic():
    def kernel(x):
        x = np.abs(x)
        far = ((_F(-0.5) * x + _F(2.5)) * x - _F(4)) * x + _F(2)
        near = ((_F(1.5) * x - _F(2.5)) * x) * x + _F(1)
        return np.where(x >= 2, _F(0), np.where(x >= 1, far, near)).astype(_F)
    return kernel, 2.0


def _scale_and_translate(kernel_and_radius, antialias=False):
    kernel, radius = kernel_and_radius

    def matrix(in_size, out_size):
        inv_scale = _F(1.0 / float(_F(out_size) / _F(in_size)))
        kernel_scale = max(inv_scale, _F(1)) if antialias else _F(1)
        reach = _F(radius) * kernel_scale
        inv_kernel_scale = _F(1) / kernel_scale
        m = np.zeros((out_size, in_size), _F)
        for o in range(out_size):
            sample = (_F(o) + _F(0.5)) * inv_scale
            if sample < 0 or sample > in_size:
                continue
            start = min(max(math.ceil(sample - reach - _F(0.5)), 0), in_size - 1)
            end = min(max(math.floor(sample + reach - _F(0.5)), 0), in_size - 1) + 1
            sources = np.arange(start, end)
            weights = kernel((sources.astype(_F) + _F(0.5) - sample) * inv_kernel_scale)
            total = _F(weights.sum(dtype=_F))
            if abs(total) >= 1000 * np.finfo(_F).tiny:
                m[o, start:end] = weights * (_F(1) / total)
        return m
    return matrix


_MATRICES = {
    "area": _area, "bicubic": _bicubic, "bilinear": _bilinear,
    "gaussian": _scale_and_translate(_gaussian()),
    "lanczos3": _scale_and_translate(_lanczos(3)),
    "lanczos5": _scale_and_translate(_lanczos(5)),
    "mitchellcubic": _scale_and_translate(_mitchell()), "nearest": _nearest,
}
METHODS = tuple(sorted(_MATRICES))
_ANTIALIASED = {
    "bilinear": _scale_and_translate(_triangle(), True),
    "bicubic": _scale_and_translate(_keys_cubic(), True),
    "gaussian": _scale_and_translate(_gaussian(), True),
    "lanczos3": _scale_and_translate(_lanczos(3), True),
    "lanczos5": _scale_and_translate(_lanczos(5), True),
    "mitchellcubic": _scale_and_translate(_mitchell(), True),
}


@functools.lru_cache(maxsize=64)
def resize_matrix(method: str, in_size: int, out_size: int,
                  antialias: bool = False) -> np.ndarray:
    """The float32 (out_size, in_size) matrix resizing one axis by ``method`` (cached,
    read-only)."""
    table = _ANTIALIASED if antialias and method in _ANTIALIASED else _MATRICES
    m = table[method](int(in_size), int(out_size))
    m.flags.writeable = False
    return m


def _legacy_scale(in_size, out_size, align_corners):
    if align_corners and out_size > 1:
        return _F(_F(in_size - 1) / _F(out_size - 1))
    return _F(_F(in_size) / _F(out_size))


def _legacy_nearest(in_size, out_size, align_corners):
    scale = _legacy_scale(in_size, out_size, align_corners)
    src = np.arange(out_size, dtype=_F) * scale
    src = np.floor(src + _F(0.5)) if align_corners else np.floor(src)  # C's roundf
    m = np.zeros((out_size, in_size), _F)
    m[np.arange(out_size), np.minimum(src.astype(np.int64), in_size - 1)] = 1
    return m


def _legacy_bilinear(in_size, out_size, align_corners):
    src = np.arange(out_size, dtype=_F) * _legacy_scale(in_size, out_size, align_corners)
    low = np.floor(src)
    lerp = src - low
    top = np.clip(low, 0, in_size - 1).astype(np.int64)
    bottom = np.minimum(np.ceil(src), in_size - 1).astype(np.int64)
    m = np.zeros((out_size, in_size), _F)
    np.add.at(m, (np.arange(out_size), top), _F(1) - lerp)
    np.add.at(m, (np.arange(out_size), bottom), lerp)
    return m


def _legacy_bicubic(in_size, out_size, align_corners):
    table = _keys_table(-0.75)
    src = np.arange(out_size, dtype=_F) * _legacy_scale(in_size, out_size, align_corners)
    m = np.zeros((out_size, in_size), _F)
    for o, loc_f in enumerate(src):
        for i, w in _keys_taps(table, loc_f):  # taps outside the image read the edge pixel
            m[o, min(max(i, 0), in_size - 1)] += w
    return m


def _legacy_area(in_size, out_size, align_corners):
    return _area_matrix(in_size, out_size, _legacy_scale(in_size, out_size, align_corners))


_LEGACY = {"area": _legacy_area, "bicubic": _legacy_bicubic, "bilinear": _legacy_bilinear,
           "nearest": _legacy_nearest}


@functools.lru_cache(maxsize=64)
def legacy_resize_matrix(method: str, in_size: int, out_size: int,
                         align_corners: bool) -> np.ndarray:
    """TF 1's resize weights (``ResizeBilinear``/``ResizeNearestNeighbor``/``ResizeBicubic``
    without half-pixel centres, ``ResizeArea``): source ``o * scale``, ``scale`` = in/out or,
    with ``align_corners``, (in - 1)/(out - 1); bicubic with Keys' a = -0.75 and edge taps
    clamped (read-only, cached)."""
    m = _LEGACY[method](int(in_size), int(out_size), bool(align_corners))
    m.flags.writeable = False
    return m
