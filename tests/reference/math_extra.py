"""The math ops of issue 14 in float64: more unary functions, reductions, norms, cumsum,
unsorted_segment_sum and einsum, written from the definitions (loops where a loop is the
definition) and TensorFlow's documented semantics."""

from __future__ import annotations

import itertools
import math

import numpy as np


def _f(x):
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def _elementwise(fn, x):
    x = np.asarray(x, np.float64)
    return np.asarray(np.frompyfunc(fn, 1, 1)(x), np.float64).reshape(x.shape)


# ---- unary -----------------------------------------------------------------------------------
def log1p(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log1p(np.asarray(x, np.float64))


def expm1(x):
    with np.errstate(over="ignore"):
        return np.expm1(np.asarray(x, np.float64))


def softplus(features):
    x = np.asarray(features, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _erf(v):
    return math.erf(v) if not math.isnan(v) else math.nan


def _erfc(v):
    return math.erfc(v) if not math.isnan(v) else math.nan


def erf(x):
    return _elementwise(_erf, x)


def erfc(x):
    return _elementwise(_erfc, x)


def reciprocal(x):
    with np.errstate(divide="ignore"):
        return 1.0 / np.asarray(x, np.float64)


def floor(x):
    return np.floor(np.asarray(x, np.float64))


def ceil(x):
    return np.ceil(np.asarray(x, np.float64))


def _half_even(v):
    if not math.isfinite(v):
        return v
    r = math.floor(v)
    diff = v - r
    if diff > 0.5 or (diff == 0.5 and r % 2 == 1):
        r += 1
    return math.copysign(float(r), v) if r == 0 else float(r)


def round(x):  # noqa: A001 - TF's name
    x = np.asarray(x)
    if x.dtype.kind in "iu":
        return x.copy()
    return _elementwise(_half_even, x)


def is_nan(x):
    return np.isnan(np.asarray(x, np.float64))


def is_finite(x):
    return np.isfinite(np.asarray(x, np.float64))


def is_inf(x):
    return np.isinf(np.asarray(x, np.float64))


# ---- reductions ----------------------------------------------------------------------------------
def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    items = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).reshape(-1))
    return tuple(sorted(int(a) % max(ndim, 1) for a in items))


def _reduce(x, axis, keepdims, fn, dtype=np.float64):
    """``fn`` of the 1-D run of values over ``axis`` at every other index."""
    x = _f(x)
    axes = _axes(axis, x.ndim)
    keep = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, keep + list(axes))
    out = np.empty(tuple(x.shape[i] for i in keep), dtype)
    for pos in np.ndindex(out.shape):
        out[pos] = fn(moved[pos].reshape(-1))
    if keepdims:
        out = out.reshape(tuple(1 if i in axes else s for i, s in enumerate(x.shape)))
    return out


def _wrap(value, dtype):
    """An integer reduced modulo 2**bits into ``dtype``'s range, as fixed-width arithmetic."""
    bits = 8 * dtype.itemsize
    value %= 2 ** bits
    if dtype.kind == "i" and value >= 2 ** (bits - 1):
        value -= 2 ** bits
    return value


def reduce_prod(input_tensor, axis=None, keepdims=False):
    x = np.asarray(input_tensor)
    if x.dtype.kind in "iu":
        return _reduce(x, axis, keepdims, lambda v: _wrap(math.prod(int(e) for e in v), x.dtype),
                       x.dtype)
    return _reduce(x, axis, keepdims, lambda v: math.prod(float(e) for e in v))


def reduce_any(input_tensor, axis=None, keepdims=False):
    return _reduce(input_tensor, axis, keepdims, lambda v: any(bool(e) for e in v), bool)


def reduce_all(input_tensor, axis=None, keepdims=False):
    return _reduce(input_tensor, axis, keepdims, lambda v: all(bool(e) for e in v), bool)


def _logsumexp(v):
    v = [float(e) for e in v]
    if any(math.isnan(e) for e in v):
        return math.nan
    if math.inf in v:
        return math.inf
    finite = [e for e in v if e != -math.inf]
    if not finite:
        return -math.inf
    m = max(finite)
    return m + math.log(math.fsum(math.exp(e - m) for e in finite))


def reduce_logsumexp(input_tensor, axis=None, keepdims=False):
    return _reduce(input_tensor, axis, keepdims, _logsumexp)


def _variance(v):
    v = [float(e) for e in v]
    if not v:
        return math.nan
    mean = math.fsum(v) / len(v)
    return math.fsum((e - mean) ** 2 for e in v) / len(v)


def reduce_variance(input_tensor, axis=None, keepdims=False):
    return _reduce(input_tensor, axis, keepdims, _variance)


def reduce_std(input_tensor, axis=None, keepdims=False):
    return np.sqrt(reduce_variance(input_tensor, axis, keepdims))


def count_nonzero(input, axis=None, keepdims=None, dtype=np.int64):  # noqa: A002
    # NaN is not zero
    return _reduce(input, axis, bool(keepdims), lambda v: sum(1 for e in v if e != 0),
                   np.int64).astype(dtype)


def moments(x, axes, shift=None, keepdims=False):
    x = np.asarray(x)
    if x.dtype.kind in "iu":
        def trunc_mean(v):  # C++ integer division truncates toward zero
            s = sum(int(e) for e in v)
            return (abs(s) // len(v)) * (1 if s >= 0 else -1) if len(v) else 0
        mean = _reduce(x, axes, True, trunc_mean, np.int64)
        var = _reduce((x.astype(np.int64) - mean) ** 2, axes, keepdims, trunc_mean, np.int64)
        if not keepdims:
            mean = mean.reshape(var.shape)
        return mean.astype(x.dtype), var.astype(x.dtype)
    mean = _reduce(x, axes, keepdims, lambda v: math.fsum(v) / len(v) if v.size else math.nan)
    return mean, reduce_variance(x, axes, keepdims)


# ---- norm --------------------------------------------------------------------------------------
def norm(tensor, ord="euclidean", axis=None, keepdims=None):  # noqa: A002
    x = _f(tensor)
    if isinstance(axis, (list, tuple)):
        rows, cols = (int(a) % x.ndim for a in axis)
        m = np.moveaxis(x, (rows, cols), (-2, -1))
        out = np.empty(m.shape[:-2])
        for pos in np.ndindex(out.shape):
            a = m[pos]
            if ord in ("euclidean", "fro"):
                v = math.sqrt(math.fsum(e * e for e in a.reshape(-1)))
            elif ord == 1:
                v = max((math.fsum(abs(a[:, j])) for j in range(a.shape[1])), default=-np.inf)
            elif ord == np.inf:
                v = max((math.fsum(abs(a[i, :])) for i in range(a.shape[0])), default=-np.inf)
            else:  # 2: the largest singular value, the root of the largest eigenvalue of a^T a
                v = math.sqrt(max(np.linalg.eigvalsh(a.T @ a).max(), 0.0)) if a.size else -np.inf
            out[pos] = v
        if keepdims:
            out = np.expand_dims(out, (rows, cols) if rows < cols else (cols, rows))
        return out
    axes = None if axis is None else int(axis)

    def vector(v):
        v = [abs(float(e)) for e in v]
        if ord in ("euclidean", 2):
            return math.sqrt(math.fsum(e * e for e in v))
        if ord == 1:
            return math.fsum(v)
        if ord == np.inf:
            return max(v, default=-math.inf)
        return math.fsum(e ** ord for e in v) ** (1.0 / ord)

    return _reduce(x, axes, bool(keepdims), vector)


# ---- cumsum, unsorted_segment_sum, einsum ---------------------------------------------------
def cumsum(x, axis=0, exclusive=False, reverse=False):
    x = _f(x)
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros(moved.shape, x.dtype)
    n = moved.shape[-1]
    for pos in np.ndindex(moved.shape[:-1]):
        for i in range(n):
            js = range(i + 1, n) if reverse else range(i)
            if not exclusive:
                js = list(js) + [i]
            total = 0
            for j in js:
                total = total + moved[pos + (j,)].item()
            out[pos + (i,)] = total if x.dtype.kind == "f" else _wrap(total, x.dtype)
    return np.moveaxis(out, -1, axis)


def unsorted_segment_sum(data, segment_ids, num_segments):
    data, ids = _f(data), np.asarray(segment_ids)
    rows = data.reshape((ids.size,) + data.shape[ids.ndim:])
    out = np.zeros((num_segments,) + data.shape[ids.ndim:], data.dtype)
    for j, i in enumerate(ids.reshape(-1)):
        if i >= num_segments:
            raise ValueError("segment id out of range")
        if i >= 0:  # negative ids are dropped
            out[i] += rows[j]
    return out


def einsum(equation, *inputs):
    """The sum, over every assignment of the labels, of the product of the entries they pick."""
    ops = [_f(a) for a in inputs]
    lhs, _, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if "->" not in equation:
        letters = lhs.replace(",", "").replace("...", "")
        out = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    # the ellipsis dimensions as digit labels, which cannot clash with letters
    ell = max((a.ndim - len(t.replace("...", "")) for t, a in zip(terms, ops) if "..." in t),
              default=0)
    marks = [str(d) for d in range(ell)]

    def expand(t, ndim):
        e = ndim - len(t.replace("...", ""))
        head, dots, tail = t.partition("...")
        return list(head) + (marks[ell - e:] if dots else []) + list(tail)

    terms = [expand(t, a.ndim) for t, a in zip(terms, ops)]
    out = expand(out, len(out.replace("...", "")) + ell if "..." in out else len(out))
    sizes = {}
    for t, a in zip(terms, ops):
        for c, d in zip(t, a.shape):
            if sizes.get(c, 1) == 1:  # a size-1 ellipsis dimension broadcasts
                sizes[c] = d
    labels = sorted(sizes)
    dtype = np.result_type(*ops)
    result = np.zeros([sizes[c] for c in out], dtype)
    for values in itertools.product(*(range(sizes[c]) for c in labels)):
        at = dict(zip(labels, values))
        prod = 1
        for t, a in zip(terms, ops):
            # a broadcast (size-1) ellipsis dimension reads index 0
            prod = prod * a[tuple(at[c] if d != 1 else 0 for c, d in zip(t, a.shape))]
        result[tuple(at[c] for c in out)] += prod
    return result
