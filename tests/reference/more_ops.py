"""selu, cumprod, sequence_mask, repeat and tensordot (issue 17) in float64, written from
their definitions with loops."""

from __future__ import annotations

import itertools
import math

import numpy as np
from .math_extra import _f, _wrap

SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(x):
    def one(v):
        if math.isnan(v):
            return v
        return SELU_SCALE * (v if v >= 0 else SELU_ALPHA * math.expm1(v))
    x = np.asarray(x, np.float64)
    return np.asarray(np.frompyfunc(one, 1, 1)(x), np.float64).reshape(x.shape)


def cumprod(x, axis=0, exclusive=False, reverse=False):
    x = _f(x)
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros(moved.shape, x.dtype)
    n = moved.shape[-1]
    for pos in np.ndindex(moved.shape[:-1]):
        for i in range(n):
            js = list(range(i + 1, n) if reverse else range(i))
            if not exclusive:
                js.append(i)
            total = 1
            for j in js:
                total = total * moved[pos + (j,)].item()
            out[pos + (i,)] = total if x.dtype.kind == "f" else _wrap(total, x.dtype)
    return np.moveaxis(out, -1, axis)


def sequence_mask(lengths, maxlen=None, dtype=None):
    """lengths are cast to maxlen's type first (an int maxlen truncates float lengths)."""
    lengths = np.asarray(lengths)
    if maxlen is None:
        maxlen = max([0] + lengths.reshape(-1).tolist())
    if isinstance(maxlen, (int, np.integer)) or np.asarray(maxlen).dtype.kind in "iu":
        lengths = lengths.astype(np.int64)
    n = int(math.ceil(maxlen))
    out = np.zeros(lengths.shape + (n,), bool)
    for pos in np.ndindex(lengths.shape):
        for j in range(n):
            out[pos + (j,)] = j < lengths[pos]
    return out if dtype is None else out.astype(np.dtype(dtype))


def repeat(x, repeats, axis=None):
    x = _f(x)
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis %= x.ndim
    counts = np.broadcast_to(np.asarray(repeats).reshape(-1), (x.shape[axis],))
    pieces = []
    for i, c in enumerate(counts):
        piece = np.take(x, [i], axis=axis)
        pieces += [piece] * max(int(c), 0)
    if not pieces:
        shape = list(x.shape)
        shape[axis] = 0
        return np.zeros(shape, x.dtype)
    return np.concatenate(pieces, axis=axis)


def tensordot(a, b, axes):
    a, b = _f(a), _f(b)
    if isinstance(axes, int):
        a_axes, b_axes = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        a_axes, b_axes = ([x] if isinstance(x, int) else list(x) for x in axes)
        a_axes = [i % a.ndim for i in a_axes]
        b_axes = [j % b.ndim for j in b_axes]
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [j for j in range(b.ndim) if j not in b_axes]
    out_shape = [a.shape[i] for i in a_free] + [b.shape[j] for j in b_free]
    out = np.zeros(out_shape, np.result_type(a, b))
    summed = [range(a.shape[i]) for i in a_axes]
    for pos in np.ndindex(*out_shape):
        pa, pb = pos[:len(a_free)], pos[len(a_free):]
        total = 0.0
        for ks in itertools.product(*summed):
            ia, ib = [0] * a.ndim, [0] * b.ndim
            for i, v in zip(a_free, pa):
                ia[i] = v
            for j, v in zip(b_free, pb):
                ib[j] = v
            for i, j, k in zip(a_axes, b_axes, ks):
                ia[i], ib[j] = k, k
            total += a[tuple(ia)] * b[tuple(ib)]
        out[pos] = total
    return out
