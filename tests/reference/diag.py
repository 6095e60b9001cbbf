"""linalg.diag, diag_part, band_part and TF 1's tensor diag/diag_part (issue 17), written from
their definitions with loops."""

from __future__ import annotations

import numpy as np
from .math_extra import _f


def _pair(k):
    return (k, k) if isinstance(k, int) else (k[0], k[-1])


def _offset(d, length, width, align):
    super_left, sub_left = (w == "LEFT" for w in align.split("_"))
    return 0 if (super_left if d >= 0 else sub_left) else width - length


def _length(rows, cols, d):
    return max(min(rows - max(-d, 0), cols - max(d, 0)), 0)


def diag(d, k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    d = _f(d)
    k0, k1 = _pair(k)
    packed = d if k0 != k1 else d[..., None, :]
    width = packed.shape[-1]
    min_rows, min_cols = width - min(k1, 0), width + max(k0, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    num_rows = min_rows if num_rows == -1 else num_rows
    num_cols = min_cols if num_cols == -1 else num_cols
    out = np.full(packed.shape[:-2] + (num_rows, num_cols), padding_value, d.dtype)
    for pos in np.ndindex(packed.shape[:-2]):
        for i in range(num_rows):
            for j in range(num_cols):
                dd = j - i
                if k0 <= dd <= k1:
                    n = min(i, j) + _offset(dd, _length(num_rows, num_cols, dd), width, align)
                    out[pos + (i, j)] = packed[pos + (k1 - dd, n)]
    return out


def diag_part(x, k=0, padding_value=0, align="RIGHT_LEFT"):
    x = _f(x)
    k0, k1 = _pair(k)
    rows, cols = x.shape[-2:]
    width = max(_length(rows, cols, dd) for dd in range(k0, k1 + 1))
    out = np.full(x.shape[:-2] + (k1 - k0 + 1, width), padding_value, x.dtype)
    for pos in np.ndindex(x.shape[:-2]):
        for dd in range(k0, k1 + 1):
            length = _length(rows, cols, dd)
            for n in range(length):
                out[pos + (k1 - dd, n + _offset(dd, length, width, align))] = \
                    x[pos + (n + max(-dd, 0), n + max(dd, 0))]
    return out if k0 != k1 else out[..., 0, :]


def band_part(x, num_lower, num_upper):
    x = _f(x)
    out = np.zeros_like(x)
    for pos in np.ndindex(x.shape):
        i, j = pos[-2:]
        if (num_lower < 0 or i - j <= num_lower) and (num_upper < 0 or j - i <= num_upper):
            out[pos] = x[pos]
    return out


def tensor_diag(d):
    d = _f(d)
    out = np.zeros(d.shape + d.shape, d.dtype)
    for pos in np.ndindex(d.shape):
        out[pos + pos] = d[pos]
    return out


def tensor_diag_part(x):
    x = _f(x)
    half = x.shape[: x.ndim // 2]
    out = np.zeros(half, x.dtype)
    for pos in np.ndindex(half):
        out[pos] = x[pos + pos]
    return out
