"""Reductions: reduce_sum, reduce_mean, reduce_max, reduce_min, argmax, argmin, reduce_prod,
reduce_any, reduce_all, reduce_logsumexp, reduce_variance, reduce_std, count_nonzero, moments
and norm."""

from __future__ import annotations

import math

import numpy as np

from ..core import dtypes
from ..core.registry import register
from ..kernels._blas import single_threaded_blas
from .matmul import cpu_matmul
from ._util import (astype, check_axis, normalize_axis, quiet, require_bool, require_float,
                    require_numeric)


def _reduced_shape(shape, axes):
    """``shape`` with the reduced axes kept as 1 (for broadcasting the gradient back)."""
    if axes is None:
        return (1,) * len(shape)
    return tuple(1 if i in axes else s for i, s in enumerate(shape))


def _reduction(name, fn, grad, require=require_numeric, twice=True):
    def check(x, *, axis, keepdims):
        require(name, "input_tensor", x)
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
                    backward=None if grad is None else backward, twice_differentiable=twice)


def _sum(xp, x, axes, keepdims):
    if x.dtype.kind in "iu" and x.dtype.itemsize < 4:
        return xp.sum(x, axis=axes, keepdims=keepdims).astype(x.dtype)
    return xp.sum(x, axis=axes, keepdims=keepdims, dtype=x.dtype)


def _count(shape, axes):
    if axes is None:
        return math.prod(shape)
    return math.prod(shape[a] for a in axes)


def _mean(xp, x, axes, keepdims):
    n = x.size if axes is None else _count(x.shape, axes)
    if x.dtype.kind in "iu":  # TF: integer mean is the C++ quotient, truncated toward zero
        s = xp.sum(x, axis=axes, keepdims=keepdims, dtype=np.int64)
        if not n:
            return s.astype(x.dtype)
        q = xp.abs(s) // n
        return xp.where(s < 0, -q, q).astype(x.dtype)
    acc = dtypes.float32 if x.dtype == dtypes.float16 else x.dtype
    if xp is np:  # np.sum's own call, without its Python wrapper (a loss's mean each step)
        s = np.add.reduce(x, axes, acc, None, keepdims)
    else:
        s = xp.sum(x, axis=axes, keepdims=keepdims, dtype=acc)
    if n:
        return (s / acc.type(n)).astype(x.dtype, copy=False)
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


def _spread(xp, g, shape):
    """``g`` (reduced axes kept as 1) broadcast to ``shape``: a contiguous array on numpy (the
    kernels downstream take contiguous inputs, and np.broadcast_to costs more than the copy at
    the sizes losses have), a broadcast view elsewhere."""
    if xp is np:
        out = np.empty(shape, g.dtype)
        np.copyto(out, g)
        return out
    return xp.broadcast_to(g, shape)


_REDUCE_SUM = _reduction("reduce_sum", _sum, lambda xp, g, x, y, axes: _spread(xp, g, x.shape))
_REDUCE_MEAN = _reduction(
    "reduce_mean", _mean,
    lambda xp, g, x, y, axes: _spread(xp, g / max(_count(x.shape, axes), 1), x.shape))
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


# ---- reduce_prod, reduce_any, reduce_all ---------------------------------------------------
def _acc(dtype):
    """float32 for float16 data (the sums and products of the reductions below accumulate in
    float32, as TF's reduce_mean does), else the dtype itself."""
    return dtypes.float32 if dtype == dtypes.float16 else dtype


def _prod(xp, x, axes, keepdims):
    # integer products wrap: modulo 2**bits the int64 product is the narrow one
    acc = _acc(x.dtype) if x.dtype.kind == "f" else np.int64
    with quiet(xp):  # a float16 product beyond 65504 is inf, as TF's
        return xp.prod(x, axis=axes, keepdims=keepdims, dtype=acc).astype(x.dtype)


def _grad_prod(xp, g, x, y, axes):
    # TF's rule: each entry's gradient is the product of the others, built from exclusive
    # cumulative products in both directions, so zeros in the input need no division
    if x.size == 0:
        return xp.zeros(x.shape, g.dtype)
    reduced = tuple(range(x.ndim)) if axes is None else axes
    perm = reduced + tuple(i for i in range(x.ndim) if i not in reduced)
    t = xp.transpose(x, perm).astype(_acc(x.dtype))
    flat = t.reshape(_count(x.shape, reduced), -1)
    ones = xp.ones((1, flat.shape[1]), flat.dtype)
    left = xp.cumprod(xp.concatenate([ones, flat[:-1]]), axis=0)
    right = xp.cumprod(xp.concatenate([ones, flat[:0:-1]]), axis=0)[::-1]
    others = xp.transpose((left * right).reshape(t.shape), tuple(np.argsort(perm)))
    return g * others.astype(g.dtype)


def _any(xp, x, axes, keepdims):
    return xp.any(x, axis=axes, keepdims=keepdims)


def _all(xp, x, axes, keepdims):
    return xp.all(x, axis=axes, keepdims=keepdims)


_REDUCE_PROD = _reduction("reduce_prod", _prod, _grad_prod, twice=False)
_REDUCE_ANY = _reduction("reduce_any", _any, None, require_bool)
_REDUCE_ALL = _reduction("reduce_all", _all, None, require_bool)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Product over ``axis`` (1 over nothing); integers wrap, float16 multiplies in float32.
    The gradient is the product of the other entries (exact where the input has zeros)."""
    return _REDUCE_PROD(input_tensor, axis=axis, keepdims=bool(keepdims))


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    """Logical OR over ``axis`` of a bool tensor (False over nothing)."""
    return _REDUCE_ANY(input_tensor, axis=axis, keepdims=bool(keepdims))


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    """Logical AND over ``axis`` of a bool tensor (True over nothing)."""
    return _REDUCE_ALL(input_tensor, axis=axis, keepdims=bool(keepdims))


# ---- reduce_logsumexp, reduce_variance, reduce_std ------------------------------------------
def _logsumexp_shift(xp, a, axes):
    """TF's shift: the maximum over ``axes`` (kept), or 0 where it is not finite."""
    m = _extreme(lambda xp: xp.max, _lowest)(xp, a, axes, True)
    return xp.where(xp.isfinite(m), m, 0)


def _logsumexp(xp, x, axes, keepdims):
    a = x.astype(_acc(x.dtype), copy=False)
    c = _logsumexp_shift(xp, a, axes)
    with quiet(xp):  # log(0) = -inf over nothing or all -inf, as TF
        y = xp.log(xp.sum(xp.exp(a - c), axis=axes, keepdims=keepdims))
    return (y + (c if keepdims else xp.reshape(c, y.shape))).astype(x.dtype)


def _grad_logsumexp(xp, g, x, y, axes):
    a = x.astype(_acc(x.dtype), copy=False)
    with quiet(xp):  # TF's gradient of its own formula: NaN where the sum is 0 or inf
        e = xp.exp(a - _logsumexp_shift(xp, a, axes))
        return (g.astype(a.dtype) * e / xp.sum(e, axis=axes, keepdims=True)).astype(g.dtype)


def _deviations(xp, x, axes):
    """(x - mean(x), mean(x) kept, the count reduced over), in the accumulation dtype."""
    a = x.astype(_acc(x.dtype), copy=False)
    n = _count(x.shape, axes)
    with quiet(xp):  # the mean of nothing is NaN
        mean = xp.sum(a, axis=axes, keepdims=True) / a.dtype.type(n)
    return a - mean, mean, n


def _mean_square(xp, d, n, axes, keepdims):
    with quiet(xp):
        return xp.sum(d * d, axis=axes, keepdims=keepdims) / d.dtype.type(n)


def _variance(xp, x, axes, keepdims):
    d, _, n = _deviations(xp, x, axes)
    return _mean_square(xp, d, n, axes, keepdims).astype(x.dtype)


def _std(xp, x, axes, keepdims):
    with quiet(xp):
        return xp.sqrt(_variance(xp, x, axes, keepdims))


def _grad_variance(xp, g, x, y, axes):
    d, _, n = _deviations(xp, x, axes)
    return (g.astype(d.dtype) * (2 * d / max(n, 1))).astype(g.dtype)


def _grad_std(xp, g, x, y, axes):
    d, _, n = _deviations(xp, x, axes)
    with quiet(xp):  # NaN where the deviation is 0, as TF's sqrt gradient gives
        return (g.astype(d.dtype) * d / (max(n, 1) * y.astype(d.dtype))).astype(g.dtype)


_REDUCE_LOGSUMEXP = _reduction("reduce_logsumexp", _logsumexp, _grad_logsumexp, require_float,
                               twice=False)
_REDUCE_VARIANCE = _reduction("reduce_variance", _variance, _grad_variance, require_float,
                              twice=False)
_REDUCE_STD = _reduction("reduce_std", _std, _grad_std, require_float, twice=False)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(input_tensor))) over ``axis``, computed as TF: shifted by the maximum where
    it is finite (so large values do not overflow), -inf over nothing. float16 is computed
    in float32. The gradient is the softmax over ``axis``."""
    return _REDUCE_LOGSUMEXP(input_tensor, axis=axis, keepdims=bool(keepdims))


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The population variance (mean squared deviation from the mean) over ``axis``; NaN over
    nothing. Floats only (TF raises for integers too); float16 accumulates in float32."""
    return _REDUCE_VARIANCE(input_tensor, axis=axis, keepdims=bool(keepdims))


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(reduce_variance(...)) over ``axis``; its gradient is NaN where the deviation is 0
    (TF's sqrt gradient at 0)."""
    return _REDUCE_STD(input_tensor, axis=axis, keepdims=bool(keepdims))


# ---- count_nonzero ---------------------------------------------------------------------------
def _check_count_nonzero(x, *, axis, keepdims, dtype):
    if x.dtype.kind not in "biuf":
        raise TypeError(f"count_nonzero: input must be a numeric or bool tensor, got {x.dtype}")
    normalize_axis("count_nonzero", axis, x.ndim)


def _count_nonzero_forward(k, xp, x, *, axis, keepdims, dtype):
    hit = x if x.dtype.kind == "b" else x != 0  # NaN counts, as TF's not_equal(x, 0)
    axes = normalize_axis("count_nonzero", axis, x.ndim)
    return xp.sum(hit, axis=axes, keepdims=keepdims, dtype=np.int64).astype(dtype), None


_COUNT_NONZERO = register("count_nonzero", args=("input",), check=_check_count_nonzero,
                          forward=_count_nonzero_forward)


def count_nonzero(input, axis=None, keepdims=None, dtype=dtypes.int64, name=None):  # noqa: A002
    """The number of non-zero (True) entries over ``axis``, as ``dtype`` (default int64)."""
    d = dtypes.as_dtype(dtype, "count_nonzero: dtype")
    if d.kind not in "iuf":
        raise TypeError(f"count_nonzero: dtype must be a numeric dtype, got {d}")
    return _COUNT_NONZERO(input, axis=axis, keepdims=bool(keepdims), dtype=d)


# ---- moments ----------------------------------------------------------------------------------
def _check_moments(x, *, axes, keepdims):
    require_numeric("moments", "x", x)
    normalize_axis("moments", axes, x.ndim, "axes")


def _moments_forward(k, xp, x, *, axes, keepdims):
    ax = normalize_axis("moments", axes, x.ndim, "axes")
    if x.dtype.kind in "iu":  # TF: truncated integer means, as reduce_mean's
        mean = _mean(xp, x, ax, True)
        d = x.astype(np.int64) - mean
        var = _mean(xp, d * d, ax, keepdims).astype(x.dtype)
        return (mean if keepdims else xp.reshape(mean, var.shape), var), None
    d, mean, n = _deviations(xp, x, ax)
    var = _mean_square(xp, d, n, ax, keepdims)
    if not keepdims:
        mean = xp.reshape(mean, var.shape)
    return (mean.astype(x.dtype), var.astype(x.dtype)), (d, n, ax, x.dtype)


def _moments_backward(k, xp, res, g_mean, g_var, *, axes, keepdims):
    if res is None:  # integer moments have no gradient
        return (None,)
    d, n, ax, dtype = res
    kshape = _reduced_shape(d.shape, ax)
    g_mean = xp.reshape(g_mean, kshape).astype(d.dtype)
    g_var = xp.reshape(g_var, kshape).astype(d.dtype)
    n = max(n, 1)
    return ((g_mean / n + g_var * (2 * d / n)).astype(dtype),)


_MOMENTS = register("moments", args=("x",), check=_check_moments, forward=_moments_forward,
                    backward=_moments_backward)


def moments(x, axes, shift=None, keepdims=False, name=None):
    """The mean and variance of ``x`` over ``axes`` (``tf.nn.moments``), as two Tensors of
    x's dtype; float16 is computed in float32, integers give truncated means (TF's
    reduce_mean). ``shift`` is unused, as in TF."""
    return _MOMENTS(x, axes=axes, keepdims=bool(keepdims))


# ---- norm --------------------------------------------------------------------------------------
_VECTOR_NORMS = ("euclidean", 1, 2, np.inf)
_MATRIX_NORMS = ("euclidean", "fro", 1, 2, np.inf)


def _is_int(a) -> bool:
    return isinstance(a, (int, np.integer)) and not isinstance(a, bool)


def _norm_static(ord, axis):  # noqa: A002 - TF's name
    """TF's checks of ``ord`` and ``axis``, before any conversion: ('vector' or 'matrix',
    ord, axis as a tuple or None)."""
    if isinstance(axis, (list, tuple)) and len(axis) == 2:
        if not (_is_int(axis[0]) and _is_int(axis[1])) or axis[0] == axis[1]:
            raise ValueError(f"norm: axis must be None, an integer, or a tuple of 2 unique "
                             f"integers, got {axis}")
        if not any(ord == o and type(ord) is not bool for o in _MATRIX_NORMS
                   if isinstance(ord, str) == isinstance(o, str)):
            raise ValueError(f"norm: ord must be a supported matrix norm in ['euclidean', 'fro', "
                             f"1, 2, inf], got {ord}")
        return "matrix", ord, (int(axis[0]), int(axis[1]))
    if not (axis is None or _is_int(axis)):
        raise ValueError(f"norm: axis must be None, an integer, or a tuple of 2 unique integers, "
                         f"got {axis}")
    if isinstance(ord, str):
        if ord != "euclidean":
            raise ValueError(f"norm: ord must be a supported vector norm, got {ord}")
    elif (isinstance(ord, bool) or not isinstance(ord, (int, float, np.integer, np.floating))
          or not ord > 0):
        raise ValueError(f"norm: ord must be a supported vector norm, got {ord}")
    return "vector", ord, None if axis is None else (int(axis),)


def _norm_axes(kind, axis, ndim):
    """``axis`` as non-negative ints in the caller's order (None: all axes, as a vector)."""
    if axis is None:
        return None
    out = tuple(check_axis("norm", a, ndim) for a in axis)
    if len(set(out)) != len(out):
        raise ValueError(f"norm: axis must name 2 different axes, got {list(axis)} for rank "
                         f"{ndim}")
    return out


def _check_norm(x, *, kind, ord, axis, keepdims):  # noqa: A002
    require_float("norm", "tensor", x)
    _norm_axes(kind, axis, x.ndim)


def _spectral(xp, a, rows, cols, compute_uv):
    """The 2-D slices over (rows, cols) moved last, and their SVD. On the CPU LAPACK runs on
    one OpenBLAS thread: its blocked steps are threaded GEMMs, whose bits (U's, at 300 x 300)
    change with the thread count."""
    m = xp.moveaxis(a, (rows, cols), (-2, -1))
    if xp is not np:
        return m, (xp.linalg.svd(m, full_matrices=False) if compute_uv
                   else xp.linalg.svd(m, compute_uv=False))
    with single_threaded_blas():
        if compute_uv:
            return m, np.linalg.svd(m, full_matrices=False)
        return m, np.linalg.svd(m, compute_uv=False)


def _norm_forward(k, xp, x, *, kind, ord, axis, keepdims):  # noqa: A002
    axes = _norm_axes(kind, axis, x.ndim)
    a = x.astype(_acc(x.dtype), copy=False)
    top = _extreme(lambda xp: xp.max, _lowest)  # TF's reduce_max: -inf over nothing
    with quiet(xp):
        if ord in ("euclidean", "fro") or (ord == 2 and kind == "vector"):
            y = xp.sqrt(xp.sum(a * a, axis=axes, keepdims=True))
        elif kind == "matrix" and ord == 2:
            m, s = _spectral(xp, a, *axes, compute_uv=False)
            y = xp.reshape(top(xp, s, (s.ndim - 1,), False), _reduced_shape(x.shape, axes))
        elif kind == "matrix":  # 1: the largest column sum; inf: the largest row sum
            inner, outer = axes if ord == 1 else axes[::-1]
            y = top(xp, xp.sum(xp.abs(a), axis=inner, keepdims=True), (outer,), True)
        elif ord == 1:
            y = xp.sum(xp.abs(a), axis=axes, keepdims=True)
        elif ord == np.inf:
            y = top(xp, xp.abs(a), axes, True)
        else:
            y = xp.sum(xp.abs(a) ** ord, axis=axes, keepdims=True) ** (1.0 / ord)
    out = y if keepdims else xp.reshape(y, tuple(
        s for i, s in enumerate(x.shape) if axes is not None and i not in axes))
    return out.astype(x.dtype), (a, y, x.dtype)


def _share_ties(xp, v, top, axes):
    """1/count where ``v`` equals its maximum ``top`` over ``axes``, else 0 (TF's reduce_max
    gradient)."""
    hit = (v == top).astype(v.dtype)
    return hit / xp.sum(hit, axis=axes, keepdims=True)


def _norm_backward(k, xp, res, g, *, kind, ord, axis, keepdims):  # noqa: A002
    a, y, dtype = res
    axes = _norm_axes(kind, axis, a.ndim)
    g = xp.reshape(g, y.shape).astype(a.dtype)
    with quiet(xp):  # 0/0 at a zero vector is NaN, as TF's sqrt gradient gives
        if ord in ("euclidean", "fro") or (ord == 2 and kind == "vector"):
            grad = g * a / y
        elif kind == "matrix" and ord == 2:
            m, (u, s, vh) = _spectral(xp, a, *axes, compute_uv=True)
            w = _share_ties(xp, s, s[..., :1], (s.ndim - 1,)) if s.shape[-1] else s
            gm = xp.reshape(g, y.shape)
            gm = xp.moveaxis(gm, axes, (-2, -1))  # [..., 1, 1]
            uw = u * (w[..., None, :] * gm)
            prod = cpu_matmul(uw, vh) if xp is np else xp.matmul(uw, vh)
            grad = xp.moveaxis(prod, (-2, -1), axes)
        elif kind == "matrix":
            inner, outer = axes if ord == 1 else axes[::-1]
            sums = xp.sum(xp.abs(a), axis=inner, keepdims=True)
            grad = g * _share_ties(xp, sums, y, (outer,)) * xp.sign(a)
        elif ord == 1:
            grad = g * xp.sign(a)
        elif ord == np.inf:
            v = xp.abs(a)
            grad = g * _share_ties(xp, v, y, axes) * xp.sign(a)
        else:
            grad = g * y ** (1 - ord) * xp.abs(a) ** (ord - 1) * xp.sign(a)
    return (grad.astype(dtype),)


_NORM = register("norm", args=("tensor",), check=_check_norm, forward=_norm_forward,
                 backward=_norm_backward)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name=None):  # noqa: A002
    """Vector and matrix norms (``tf.norm``, ``tf.linalg.norm``).

    Args:
      tensor: A float tensor.
      ord: For vectors (``axis`` None or an int): 'euclidean' (= 2), 1, ``np.inf`` or any
        p > 0. For matrices (``axis`` a pair): 'euclidean' or 'fro' (Frobenius), 1 (the
        largest column sum), ``np.inf`` (the largest row sum) or 2 (the largest singular
        value).
      axis: None (the whole tensor as one vector, whatever its rank), an int, or a pair of
        ints (rows, columns).
      keepdims: Keep the reduced axes with length 1.
      name: Ignored.

    Returns:
      The norms, of ``tensor``'s dtype (float16 is computed in float32, so it overflows only
      where the norm itself does; TF squares in float16).

    Gradients are TF's: NaN at a zero vector for 'euclidean', shared evenly among tied
    maxima for ``np.inf`` and the matrix norms, u v^T of the top singular pair for ord 2.

    Raises:
      ValueError: an unsupported ``ord`` for the kind of norm, a malformed ``axis``, or an
        axis out of range.
      TypeError: a non-float tensor.
    """
    kind, ord, axis = _norm_static(ord, axis)
    return _NORM(tensor, kind=kind, ord=ord, axis=axis, keepdims=bool(keepdims))
