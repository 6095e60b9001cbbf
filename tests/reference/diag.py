"""linalg.diag, diag_part, band_part and TF 1's tensor diag/diag_part (issue 17), written from
their definitions with loops."""

from __future__ import annotations

import numpy as np
from reference.math_extra import _f


def diag(d, k=0, num_rows=-1, num_cols=-1, padding_value=0):
    d = _f(d)
    n = d.shape[-1]
    min_rows, min_cols = n + max(-k, 0), n + max(k, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    num_rows = min_rows if num_rows == -1 else num_rows
    num_cols = min_cols if num_cols == -1 else num_cols
    out = np.full(d.shape[:-1] + (num_rows, num_cols), padding_value, d.dtype)
    for pos in np.ndindex(d.shape[:-1]):
        for i in range(num_rows):
            for j in range(num_cols):
                if j - i == k:
                    out[pos + (i, j)] = d[pos + (min(i, j),)]
    return out


def diag_part(x, k=0):
    x = _f(x)
    rows, cols = x.shape[-2:]
    entries = [(i, i + k) for i in range(rows) if 0 <= i + k < cols]
    out = np.zeros(x.shape[:-2] + (len(entries),), x.dtype)
    for pos in np.ndindex(x.shape[:-2]):
        for n, (i, j) in enumerate(entries):
            out[pos + (n,)] = x[pos + (i, j)]
    return out


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
