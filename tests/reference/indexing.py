"""Indexing ops: gather, Tensor.__getitem__ (``getitem``), one_hot, where."""

from __future__ import annotations

import numpy as np


def _f(x):
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def gather(params, indices, axis=None):
    params, indices = _f(params), np.asarray(indices)
    a = 0 if axis is None else axis % params.ndim
    if indices.size and (indices.min() < 0 or indices.max() >= params.shape[a]):
        raise ValueError("gather: index out of range")
    # out[i..., j, k...] = params[i..., indices[j], k...]
    return np.take(params, indices, axis=a)


def getitem(tensor, key):
    """numpy basic and advanced indexing, which is what Tensor.__getitem__ promises."""
    return _f(tensor)[key].copy()


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None):
    indices = np.asarray(indices)
    on = 1.0 if on_value is None else np.asarray(on_value, np.float64)
    off = 0.0 if off_value is None else np.asarray(off_value, np.float64)
    out = np.full(indices.shape + (depth,), off, np.float64)
    for pos in np.ndindex(indices.shape):
        i = int(indices[pos])
        if 0 <= i < depth:  # other indices give an all-off row
            out[pos + (i,)] = on
    if axis is not None and axis != -1:
        out = np.moveaxis(out, -1, axis)
    return out


def where(condition, x=None, y=None):
    condition = np.asarray(condition, bool)
    if x is None and y is None:
        return np.argwhere(condition).astype(np.int64)
    x, y = _f(x), _f(y)
    cb, xb, yb = np.broadcast_arrays(condition, x, y)
    out = np.empty(cb.shape, np.result_type(x, y))
    for pos in np.ndindex(cb.shape):
        out[pos] = xb[pos] if cb[pos] else yb[pos]
    return out
