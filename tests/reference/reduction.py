"""Reductions in float64, with TF's identities on empty ranges."""

from __future__ import annotations

import numpy as np


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    items = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).reshape(-1))
    return tuple(sorted(int(a) % max(ndim, 1) for a in items))


def _f(x):
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def reduce_sum(input_tensor, axis=None, keepdims=False):
    x = _f(input_tensor)
    return np.asarray(np.sum(x, axis=_axes(axis, x.ndim), keepdims=keepdims))


def reduce_mean(input_tensor, axis=None, keepdims=False):
    x = _f(input_tensor)
    axes = _axes(axis, x.ndim)
    n = int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    s = np.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64 if x.dtype.kind in "iub" else None)
    if x.dtype.kind in "iu":
        # TF divides integers as C++ does: the quotient is truncated toward zero; n == 0 gives 0
        if n == 0:
            return np.zeros_like(np.asarray(s))
        q = np.abs(s) // n
        return np.asarray(np.where(s < 0, -q, q))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(s / n) if n else np.full(np.shape(s), np.nan)


def _extreme(x, axis, keepdims, fn, identity):
    x = _f(x)
    axes = _axes(axis, x.ndim)
    if x.size == 0:
        shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else \
            tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return np.full(shape, identity(x.dtype), dtype=x.dtype)
    return np.asarray(fn(x, axis=axes, keepdims=keepdims))


def reduce_max(input_tensor, axis=None, keepdims=False):
    return _extreme(input_tensor, axis, keepdims, np.max,
                    lambda d: -np.inf if d.kind == "f" else np.iinfo(d).min)


def reduce_min(input_tensor, axis=None, keepdims=False):
    return _extreme(input_tensor, axis, keepdims, np.min,
                    lambda d: np.inf if d.kind == "f" else np.iinfo(d).max)


def argmax(input, axis=None, output_type=np.int64):  # noqa: A002 - TF's name
    return np.argmax(_f(input), axis=0 if axis is None else axis).astype(output_type)


def argmin(input, axis=None, output_type=np.int64):  # noqa: A002 - TF's name
    return np.argmin(_f(input), axis=0 if axis is None else axis).astype(output_type)
