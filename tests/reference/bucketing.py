"""unique, searchsorted and histogram_fixed_width (issue 17), written from their definitions
with loops."""

from __future__ import annotations

import math

import numpy as np


def _same(a, b):
    return a == b  # NaN equals nothing, -0.0 equals 0.0


def unique(x, out_idx="int32"):
    ys, idx = [], []
    for v in np.asarray(x).tolist():
        for i, y in enumerate(ys):
            if _same(v, y):
                idx.append(i)
                break
        else:
            idx.append(len(ys))
            ys.append(v)
    x = np.asarray(x)
    return np.asarray(ys, x.dtype).reshape(-1), np.asarray(idx, np.dtype(out_idx))


def searchsorted(seq, values, side="left", out_type="int32"):
    seq, values = np.asarray(seq), np.asarray(values)
    out = np.zeros(values.shape, np.dtype(out_type))
    for pos in np.ndindex(values.shape):
        row = seq[pos[:-1]].tolist()
        v = values[pos].item()
        if side == "left":
            out[pos] = sum(1 for s in row if s < v)
        else:
            out[pos] = sum(1 for s in row if not v < s)
    return out


def histogram_fixed_width(values, value_range, nbins=100, dtype="int32"):
    lo, hi = (float(v) for v in np.asarray(value_range).tolist())
    counts = [0] * nbins
    for v in np.asarray(values).reshape(-1).tolist():
        if v <= lo:
            b = 0
        elif v >= hi:
            b = nbins - 1
        else:
            b = min(int(math.floor((v - lo) / (hi - lo) * nbins)), nbins - 1)
        counts[b] += 1
    return np.asarray(counts, np.dtype(dtype))
