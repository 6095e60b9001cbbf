"""Reductions: reduce_sum, reduce_mean, reduce_max, reduce_min, argmax, argmin."""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.registry import register
from ._util import astype, check_axis, normalize_axis, require_numeric


def _reduced_shape(shape, axes):
    """``shape`` with the reduced axes kept as 1 (for broadcasting the gradient back)."""
    if axes is None:
        return (1,) * len(shape)
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _reduction(name, fn, grad):
    def check(x, *, axis, keepdims):
        require_numeric(name, "input_tensor", x)
        normalize_axis(name, axis, x.ndim)

    def forward(k, xp, x, *, axis, keepdims):
        axes = normalize_axis(name, axis, x.ndim)
        y = fn(xp, x, axes, keepdims)
        return y, (x, y, axes, keepdims)

    def backward(k, xp, res, g, *, axis, keepdims):
        x, y, axes, kept = res
        kshape = _reduced_shape(x.shape, axes)
        if not kept:
            g = xp.reshape(g, kshape)
            y = xp.reshape(y, kshape)
        return (grad(xp, g, x, y, axes),)

    return register(name, args=("input_tensor",), check=check, forward=forward,
                    backward=backward, twice_differentiable=True)


def _sum(xp, x, axes, keepdims):
    if x.dtype.kind in "iu" and x.dtype.itemsize < 4:
        return xp.sum(x, axis=axes, keepdims=keepdims).astype(x.dtype)
    return xp.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)


def _count(shape, axes):
    if axes is None:
        return int(np.prod(shape, dtype=np.int64))
    return int(np.prod([shape[a] for a in axes], dtype=np.int64))


def _mean(xp, x, axes, keepdims):
    n = _count(x.shape, axes)
    if x.dtype.kind in "iu":  # TF: integer mean is the C++ quotient, truncated toward zero
        s = xp.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
        if not n:
            return s.astype(x.dtype)
        q = xp.abs(s) // n
        return xp.where(s < 0, -q, q).astype(x.dtype)
    acc = dtypes.float32 if x.dtype == dtypes.float16 else x.dtype
    s = xp.sum(x, axis=axes, keepdims=keepdims, dtype=acc)
    with np.errstate(invalid="ignore", divide="ignore"):  # an empty mean is NaN, as TF
        return (s / acc.type(n)).astype(x.dtype, copy=False)


def _extreme(reducer, fill):
    """max/min that give TF's identity (-inf/+inf, or the integer limits) on empty ranges."""

    def fn(xp, x, axes, keepdims):
        if x.size == 0:
            out_shape = _reduced_shape(x.shape, axes)
            if not keepdims:
                out_shape = tuple(s for i, s in enumerate(x.shape)
                                  if axes is not None and i not in axes)
            return xp.full(out_shape, fill(x.dtype), dtype=x.dtype)
        return reducer(xp)(x, axis=axes, keepdims=keepdims)
    return fn


def _lowest(d):
    return -np.inf if d.kind == "f" else np.iinfo(d).min


def _highest(d):
    return np.inf if d.kind == "f" else np.iinfo(d).max


def _grad_extreme(xp, g, x, y, axes):
    # TF spreads the gradient evenly over ties.
    hit = astype(xp, x == y, g.dtype)
    count = xp.sum(hit, axis=axes, keepdims=True)
    return g * hit / count


_REDUCE_SUM = _reduction("reduce_sum", _sum, lambda xp, g, x, y, axes: xp.broadcast_to(g, x.shape))
_REDUCE_MEAN = _reduction(
    "reduce_mean", _mean,
    lambda xp, g, x, y, axes: xp.broadcast_to(g / max(_count(x.shape, axes), 1), x.shape))
_REDUCE_MAX = _reduction("reduce_max", _extreme(lambda xp: xp.max, _lowest), _grad_extreme)
_REDUCE_MIN = _reduction("reduce_min", _extreme(lambda xp: xp.min, _highest), _grad_extreme)


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over ``axis`` (None: all axes; an int or a list; negative counts from the end)."""
    return _REDUCE_SUM(input_tensor, axis=axis, keepdims=bool(keepdims))


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over ``axis``; integer inputs give the truncated integer mean, as TF."""
    return _REDUCE_MEAN(input_tensor, axis=axis, keepdims=bool(keepdims))


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over ``axis``; the gradient is shared evenly among tied maxima."""
    return _REDUCE_MAX(input_tensor, axis=axis, keepdims=bool(keepdims))


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over ``axis``; the gradient is shared evenly among tied minima."""
    return _REDUCE_MIN(input_tensor, axis=axis, keepdims=bool(keepdims))


def _arg_reduction(name, fn):
    def check(x, *, axis, output_type):
        require_numeric(name, "input", x)
        if x.ndim == 0:
            raise ValueError(f"{name}: input must have rank >= 1, got a scalar")
        a = check_axis(name, axis, x.ndim)
        if x.shape[a] == 0:
            raise ValueError(f"{name}: input must not be empty along axis {axis}, got shape "
                             f"{list(x.shape)}")
        if output_type not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"{name}: output_type must be int32 or int64, got {output_type}")

    def forward(k, xp, x, *, axis, output_type):
        return fn(xp)(x, axis=axis).astype(output_type), None

    return register(name, args=("input",), check=check, forward=forward)


_ARGMAX = _arg_reduction("argmax", lambda xp: xp.argmax)
_ARGMIN = _arg_reduction("argmin", lambda xp: xp.argmin)


def argmax(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002
    """Index of the largest value along ``axis`` (default 0), first one on ties; int64 unless
    ``output_type`` says int32."""
    return _ARGMAX(input, axis=0 if axis is None else axis,
                   output_type=dtypes.as_dtype(output_type, "argmax: output_type"))


def argmin(input, axis=None, output_type=dtypes.int64, name=None):  # noqa: A002
    """Index of the smallest value along ``axis`` (default 0), first one on ties."""
    return _ARGMIN(input, axis=0 if axis is None else axis,
                   output_type=dtypes.as_dtype(output_type, "argmin: output_type"))
