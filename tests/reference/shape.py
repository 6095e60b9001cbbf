"""Shape ops: pure data movement, so the references only rearrange float64 copies."""

from __future__ import annotations

import numpy as np


def _f(x):
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def reshape(tensor, shape):
    return np.reshape(_f(tensor), tuple(int(s) for s in np.asarray(shape).reshape(-1)))


def transpose(a, perm=None):
    a = _f(a)
    perm = tuple(reversed(range(a.ndim))) if perm is None else tuple(perm)
    return np.transpose(a, perm)


def expand_dims(input, axis):  # noqa: A002 - TF's name
    x = _f(input)
    a = axis % (x.ndim + 1)
    return x.reshape(x.shape[:a] + (1,) + x.shape[a:])


def squeeze(input, axis=None):  # noqa: A002 - TF's name
    x = _f(input)
    if axis is None:
        return x.reshape(tuple(s for s in x.shape if s != 1))
    axes = {int(a) % x.ndim for a in ([axis] if np.ndim(axis) == 0 else axis)}
    return x.reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))


def concat(values, axis):
    values = [_f(v) for v in values]
    return np.concatenate(values, axis=axis % values[0].ndim)


def stack(values, axis=0):
    values = [_f(v) for v in values]
    return np.stack(values, axis=axis % (values[0].ndim + 1))


def split(value, num_or_size_splits, axis=0):
    x = _f(value)
    a = axis % x.ndim
    n = x.shape[a]
    if np.ndim(num_or_size_splits) == 0:
        k = int(num_or_size_splits)
        sizes = [n // k] * k
    else:
        sizes = [int(s) for s in num_or_size_splits]
        if -1 in sizes:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
    out, start = [], 0
    for s in sizes:
        index = [slice(None)] * x.ndim
        index[a] = slice(start, start + s)
        out.append(x[tuple(index)].copy())
        start += s
    return out
