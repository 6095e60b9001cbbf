"""The projective image transform behind ``RandomRotation``, ``RandomZoom`` and
``RandomTranslation`` (TF's ``ImageProjectiveTransformV3``): each output pixel (x, y) reads
the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k), k = c0 x + c1 y + 1, mapped
into the image by ``fill_mode`` and sampled by ``interpolation``.

The sampling positions and weights come from the (concrete) transforms on the host in
float32, as TF's kernel computes them; the image is read with gathers, so gradients reach
it."""

from __future__ import annotations

import numpy as np

from ....core import backend as _backend
from ....core.tensor import Tensor, wrap
from ....ops import indexing as _indexing
from ....ops import math as _m
from ....ops import reduction as _r
from ....ops import shape as _shape

__all__ = ["FILL_MODES", "INTERPOLATIONS", "check_fill_mode_and_interpolation",
           "rotation_matrix", "transform", "translation_matrix", "zoom_matrix"]

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("nearest", "bilinear")


def check_fill_mode_and_interpolation(fill_mode, interpolation) -> None:
    """tf-keras's check of the two arguments.

    Raises:
      NotImplementedError: an unknown ``fill_mode`` or ``interpolation`` (tf-keras's
        exception and message).
    """
    if fill_mode not in FILL_MODES:
        raise NotImplementedError(f"Unknown `fill_mode` {fill_mode}. Only `reflect`, `wrap`, "
                                  "`constant` and `nearest` are supported.")
    if interpolation not in INTERPOLATIONS:
        raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Only `nearest` "
                                  "and `bilinear` are supported.")


def _trunc(x):
    return np.trunc(x).astype(np.float32)


def _map_coord(c: np.ndarray, length: int, fill_mode: str) -> np.ndarray:
    """Input coordinates mapped into [0, length - 1] as TF's MapCoordinate for each mode
    (``constant`` leaves them, reading outside gives the fill value)."""
    f32 = np.float32
    if fill_mode == "constant":
        return c
    if fill_mode == "nearest":
        return np.clip(c, f32(0), f32(length - 1))
    out = c.copy()
    neg, pos = c < 0, c > length - 1
    if length <= 1:
        out[neg | pos] = 0
    elif fill_mode == "reflect":
        sz2 = f32(2 * length)
        v = c[neg]
        far = v < -sz2
        v[far] = sz2 * _trunc(-v[far] / sz2) + v[far]
        out[neg] = np.where(v < -length, v + sz2, -v - f32(1))
        v = c[pos]
        v = v - sz2 * _trunc(v / sz2)
        out[pos] = np.where(v >= length, sz2 - v - f32(1), v)
    else:  # wrap
        sz = f32(length - 1)
        v = c[neg]
        out[neg] = v + f32(length) * (_trunc(-v / sz) + f32(1))
        v = c[pos]
        out[pos] = v - f32(length) * _trunc(v / sz)
    return np.clip(out, f32(0), f32(length - 1))


def _round_half_away(c: np.ndarray) -> np.ndarray:
    """C's ``round`` (halves away from zero; numpy rounds them to even)."""
    c = c.astype(np.float64)
    return np.where(c >= 0, np.floor(c + 0.5), np.ceil(c - 0.5)).astype(np.float32)


def _sample_points(transforms, height, width, out_h, out_w, fill_mode, interpolation):
    """(indices, weights, in_bounds) per output pixel and tap: flat indices into a
    ``[batch * height * width]`` image, their interpolation weights, and whether each tap
    lies inside the image (else it reads the fill value). Shapes [batch, out_h, out_w, taps];
    a zero projection makes the pixel all fill value (no tap inside)."""
    f32 = np.float32
    t = np.asarray(transforms, np.float32).reshape(-1, 8)[:, :, None, None]
    y, x = np.meshgrid(np.arange(out_h, dtype=f32), np.arange(out_w, dtype=f32),
                       indexing="ij")
    projection = t[:, 6] * x + t[:, 7] * y + f32(1)
    safe = np.where(projection == 0, f32(1), projection)
    in_x = _map_coord((t[:, 0] * x + t[:, 1] * y + t[:, 2]) / safe, width, fill_mode)
    in_y = _map_coord((t[:, 3] * x + t[:, 4] * y + t[:, 5]) / safe, height, fill_mode)
    if interpolation == "nearest":
        rows, cols = _round_half_away(in_y)[..., None], _round_half_away(in_x)[..., None]
        weights = np.ones_like(rows)
    else:
        y0, x0 = np.floor(in_y), np.floor(in_x)
        wy = np.stack([y0 + 1 - in_y, in_y - y0, y0 + 1 - in_y, in_y - y0], -1)
        wx = np.stack([x0 + 1 - in_x, x0 + 1 - in_x, in_x - x0, in_x - x0], -1)
        rows = np.stack([y0, y0 + 1, y0, y0 + 1], -1)
        cols = np.stack([x0, x0, x0 + 1, x0 + 1], -1)
        weights = wy * wx
    inside = ((rows >= 0) & (rows < height) & (cols >= 0) & (cols < width)
              & (projection != 0)[..., None])
    batch = np.arange(t.shape[0]).reshape(-1, 1, 1, 1)
    flat = (batch * height + np.clip(rows, 0, height - 1).astype(np.int64)) * width
    flat = flat + np.clip(cols, 0, width - 1).astype(np.int64)
    return flat, weights.astype(f32), inside


def _on_device(x: Tensor, value: np.ndarray) -> Tensor:
    return wrap(_backend.to_device(_backend.xp_of(x._value), value))


def transform(images: Tensor, transforms, fill_mode="reflect", fill_value=0.0,
              interpolation="bilinear", output_shape=None) -> Tensor:
    """``images`` [batch, height, width, channels] (float) transformed by ``transforms``
    ([batch, 8] or [8], a numpy array): the output [batch, out_h, out_w, channels], out_h
    and out_w the input's unless ``output_shape`` says."""
    n, h, w, c = (int(d) for d in images.shape)
    out_h, out_w = (h, w) if output_shape is None else (int(s) for s in output_shape)
    t = np.asarray(transforms, np.float32).reshape(-1, 8)
    if t.shape[0] == 1 and n != 1:
        t = np.repeat(t, n, axis=0)
    flat, weights, inside = _sample_points(t, h, w, out_h, out_w, fill_mode, interpolation)
    dtype = np.dtype(images.dtype)
    taps = flat.shape[-1]
    tap_major = (3, 0, 1, 2)  # taps first: their sum adds whole contiguous slabs
    values = _indexing.gather(_shape.reshape(images, [n * h * w, c]),
                              _on_device(images, flat.transpose(tap_major).reshape(-1)))
    values = _shape.reshape(values, [taps, n, out_h, out_w, c])
    tap_weights = (weights * inside).astype(dtype).transpose(tap_major)[..., None]
    out = _r.reduce_sum(values * _on_device(images, tap_weights), axis=0)
    if fill_value != 0 and not inside.all():
        fill = (weights * ~inside).sum(-1, dtype=np.float32) * np.float32(fill_value)
        out = out + _on_device(images, fill.astype(dtype)[..., None])
    return out if out.dtype == dtype else _m.cast(out, dtype)


def translation_matrix(translations: np.ndarray) -> np.ndarray:
    """[n, 8] transforms shifting by ``translations`` [n, 2] = (dx, dy) pixels."""
    tr = np.asarray(translations, np.float32)
    n = tr.shape[0]
    one, zero = np.ones(n, np.float32), np.zeros(n, np.float32)
    return np.stack([one, zero, -tr[:, 0], zero, one, -tr[:, 1], zero, zero], axis=1)


def rotation_matrix(angles: np.ndarray, height, width) -> np.ndarray:
    """[n, 8] transforms rotating by ``angles`` (radians, counter-clockwise) about the
    image centre."""
    a = np.asarray(angles, np.float32)
    h, w = np.float32(height), np.float32(width)
    cos, sin = np.cos(a), np.sin(a)
    x_offset = (w - 1 - (cos * (w - 1) - sin * (h - 1))) / np.float32(2)
    y_offset = (h - 1 - (sin * (w - 1) + cos * (h - 1))) / np.float32(2)
    zero = np.zeros_like(a)
    return np.stack([cos, -sin, x_offset, sin, cos, y_offset, zero, zero], axis=1)


def zoom_matrix(zooms: np.ndarray, height, width) -> np.ndarray:
    """[n, 8] transforms scaling the sampling grid by ``zooms`` [n, 2] = (zx, zy) about the
    image centre (a zoom above 1 zooms out)."""
    z = np.asarray(zooms, np.float32)
    h, w = np.float32(height), np.float32(width)
    x_offset = (w - np.float32(1)) / np.float32(2) * (np.float32(1) - z[:, 0])
    y_offset = (h - np.float32(1)) / np.float32(2) * (np.float32(1) - z[:, 1])
    zero = np.zeros(z.shape[0], np.float32)
    return np.stack([z[:, 0], zero, x_offset, zero, z[:, 1], y_offset, zero, zero], axis=1)
