"""Keras preprocessing layers in plain numpy float64, one value (or pixel) at a time.

``projective_transform``: TF's ``ImageProjectiveTransformV3`` as its documentation says:
output pixel (x, y) reads the input at ((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k),
k = c0 x + c1 y + 1 (k == 0: the fill value). A coordinate outside [0, n - 1] is folded back
by the fill mode: ``reflect`` (d c b a | a b c d | d c b a: the edge pixel repeated),
``wrap`` (a b c d | a b c d, TF's shifts; see ``_fold``),
``nearest`` (clamped), ``constant`` (kept outside: reads give the fill value).
``nearest`` interpolation reads the pixel at the coordinates rounded half away from zero;
``bilinear`` blends the four pixels around them, a pixel outside the image reading the
fill value.
"""

from __future__ import annotations

import math

import numpy as np


def normalize(x, axis, mean=None, variance=None, invert=False, epsilon=1e-7):
    """(x - mean) / max(sqrt(var), eps) with statistics over every axis but ``axis``."""
    x = np.asarray(x, np.float64)
    keep = [a % x.ndim for a in axis]
    reduce = tuple(a for a in range(x.ndim) if a not in keep)
    if mean is None:
        mean = x.mean(axis=reduce, keepdims=True)
        variance = x.var(axis=reduce, keepdims=True)
    std = np.maximum(np.sqrt(variance), epsilon)
    return mean + x * std if invert else (x - mean) / std


def _fold(c, n, mode):
    if mode == "constant":
        return c
    if mode == "nearest" or n == 1:
        return min(max(c, 0.0), n - 1.0)
    if mode == "reflect":  # period 2n: c and -1 - c are the same pixel
        c = math.fmod(c, 2 * n)
        if c < 0:
            c += 2 * n
        if c >= n:
            c = 2 * n - 1 - c
        return min(max(c, 0.0), n - 1.0)
    # wrap, as TF's kernel shifts: by n * (trunc(-c / (n - 1)) + 1) below 0, by
    # -n * trunc(c / (n - 1)) above n - 1 (period n near the image; far coordinates clamp)
    if c < 0:
        c += n * (int(-c / (n - 1)) + 1)
    elif c > n - 1:
        c -= n * int(c / (n - 1))
    return min(max(c, 0.0), n - 1.0)


def _round(c):
    return math.floor(c + 0.5) if c >= 0 else math.ceil(c - 0.5)


def projective_transform(images, transforms, fill_mode, fill_value, interpolation):
    images = np.asarray(images, np.float64)
    b, h, w, ch = images.shape
    out = np.empty_like(images)

    def read(i, y, x):
        if 0 <= y < h and 0 <= x < w:
            return images[i, y, x]
        return np.full(ch, float(fill_value))

    for i in range(b):
        a0, a1, a2, b0, b1, b2, c0, c1 = (float(v) for v in transforms[i])
        for y in range(h):
            for x in range(w):
                k = c0 * x + c1 * y + 1
                if k == 0:
                    out[i, y, x] = fill_value
                    continue
                sx = _fold((a0 * x + a1 * y + a2) / k, w, fill_mode)
                sy = _fold((b0 * x + b1 * y + b2) / k, h, fill_mode)
                if interpolation == "nearest":
                    out[i, y, x] = read(i, _round(sy), _round(sx))
                    continue
                y0, x0 = math.floor(sy), math.floor(sx)
                fy, fx = sy - y0, sx - x0
                out[i, y, x] = ((1 - fy) * ((1 - fx) * read(i, y0, x0) + fx * read(i, y0, x0 + 1))
                                + fy * ((1 - fx) * read(i, y0 + 1, x0)
                                        + fx * read(i, y0 + 1, x0 + 1)))
    return out


def bucketize(x, boundaries):
    """The number of boundaries <= each value."""
    return np.array([sum(1 for b in boundaries if b <= v) for v in np.ravel(x)],
                    np.int64).reshape(np.shape(x))


def encode(indices, depth, mode, weights=None):
    """one_hot / multi_hot / count per row of a rank-2 ``indices`` (rank 1: one row)."""
    idx = np.asarray(indices)
    if mode == "one_hot" and (idx.ndim == 0 or idx.shape[-1] != 1):
        idx = idx[..., None]
    rows = np.atleast_2d(idx)
    out = np.zeros((rows.shape[0], depth))
    for r, row in enumerate(rows):
        for j, v in enumerate(row):
            if 0 <= v < depth:
                out[r, v] += 1 if weights is None else np.atleast_2d(weights)[r, j]
    if mode in ("one_hot", "multi_hot"):
        out = (out > 0).astype(np.float64)
    return out if idx.ndim == 2 else out[0]


def lookup(values, vocabulary, num_oov, mask_token=None):
    """IntegerLookup's "int" mode: [mask] + OOV indices + the vocabulary."""
    start = (1 if mask_token is not None else 0)
    table = {t: i + start + num_oov for i, t in enumerate(vocabulary)}
    out = []
    for v in np.ravel(values):
        if mask_token is not None and v == mask_token:
            out.append(0)
        elif v in table:
            out.append(table[v])
        else:
            out.append(start + (v % num_oov if num_oov > 1 else 0))
    return np.array(out, np.int64).reshape(np.shape(values))
