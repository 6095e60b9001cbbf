"""Tensors made from shapes and values: zeros, ones, zeros_like, ones_like, fill, range."""

from __future__ import annotations

import numpy as np

from ..core import backend, dtypes
from ..core.convert import to_array
from ..core.allocation import AllocationGuard, check_allocation
from ..core.registry import register
from ..core.strings import filled_strings
from ..core.tensor import Tensor, wrap
from ._shape_args import shape_args
from ..errors import InvalidArgumentError


def _shape(op, shape, arg="shape"):
    if isinstance(shape, Tensor):
        shape = np.asarray(shape).tolist()
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TypeError(f"{op}: {arg} must be a list of ints, got {shape!r}") from None
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{op}: {arg} must be a list of ints, got {shape!r}")
        if d < 0:  # TF's Fill kernel: InvalidArgumentError "Dimension -1 must be >= 0"
            raise InvalidArgumentError(f"{op}: {arg} must not have negative sizes, got "
                                       f"{list(dims)}")
    return tuple(int(d) for d in dims)


def _filled(op, make, shape, dtype):
    """``make(shape, dtype)`` on the current backend; an output too large for memory raises
    ResourceExhaustedError naming ``op``, as TF."""
    if dtype is dtypes.string:  # host only; b"" is a string's zero, there is no one
        return wrap(filled_strings(op, make, shape))
    xp = backend.default_xp()
    check_allocation(op, xp, shape, dtype)
    with AllocationGuard(op, xp):
        return wrap(getattr(xp, make)(shape, dtype))


@shape_args("shape")
def zeros(shape, dtype=dtypes.float32, name=None) -> Tensor:
    """A Tensor of ``shape`` filled with 0, on the current backend. Raises
    ResourceExhaustedError when it cannot be allocated."""
    d = dtypes.as_dtype(dtype, "zeros: dtype")
    return _filled("zeros", "zeros", _shape("zeros", shape), d)


@shape_args("shape")
def ones(shape, dtype=dtypes.float32, name=None) -> Tensor:
    """A Tensor of ``shape`` filled with 1, on the current backend. Raises
    ResourceExhaustedError when it cannot be allocated."""
    d = dtypes.as_dtype(dtype, "ones: dtype")
    return _filled("ones", "ones", _shape("ones", shape), d)


def _check_like(x, *, dtype):
    pass


def _like(make):
    def forward(k, xp, x, dtype):
        d = dtype or x.dtype
        if d is dtypes.string:
            return filled_strings(f"{make}_like", make, x.shape), None
        return getattr(xp, make)(x.shape, d), None
    return forward


_ZEROS_LIKE = register("zeros_like", args=("input",), check=_check_like, forward=_like("zeros"))
_ONES_LIKE = register("ones_like", args=("input",), check=_check_like, forward=_like("ones"))


def zeros_like(input, dtype=None, name=None) -> Tensor:  # noqa: A002
    """Zeros with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    return _ZEROS_LIKE(input, dtype=None if dtype is None
                       else dtypes.as_dtype(dtype, "zeros_like: dtype"))


def ones_like(input, dtype=None, name=None) -> Tensor:  # noqa: A002
    """Ones with the shape (and, unless ``dtype`` is given, the dtype) of ``input``."""
    return _ONES_LIKE(input, dtype=None if dtype is None
                      else dtypes.as_dtype(dtype, "ones_like: dtype"))


def _check_fill(value, *, dims):
    if value.ndim != 0:
        raise ValueError(f"fill: value must be a scalar, got shape {list(value.shape)}")


def _fill_forward(k, xp, value, *, dims):
    check_allocation("fill", xp, dims, value.dtype)
    return xp.full(dims, value, dtype=value.dtype), ()


def _fill_backward(k, xp, res, g, *, dims):
    return (xp.sum(g, axis=None),)


_FILL = register("fill", args=("value",), check=_check_fill, forward=_fill_forward,
                 backward=_fill_backward, twice_differentiable=True)


@shape_args("dims")
def fill(dims, value, name=None) -> Tensor:
    """A Tensor of shape ``dims`` with every element ``value`` (a scalar); the gradient with
    respect to ``value`` is the sum of the output gradient."""
    return _FILL(value, dims=_shape("fill", dims, "dims"))


# TF's dtype_hierarchy for range's inferred dtype (less bfloat16)
_RANGE_ORDER = (dtypes.int32, dtypes.int64, dtypes.float16, dtypes.float32, dtypes.float64)
_INT64_MAX = 2**63 - 1


def _range_arg(arg, v, dtype):
    """One range argument as a 0-d numpy array, converted as TF converts it: a Tensor keeps
    its dtype, a Python int is int32 (int64 if it needs it), a float float32; a Python value
    is converted to ``dtype`` when it is given (ints wrap, floats refuse an integer dtype)."""
    if isinstance(v, Tensor):
        a = v._value
        if a.dtype.kind not in "iuf":
            raise TypeError(f"range: {arg} must be a number, got a {a.dtype} Tensor")
        if a.ndim != 0:
            raise ValueError(f"range: {arg} must be a scalar, got shape {list(a.shape)}")
        return np.asarray(a.get() if backend.is_cupy_array(a) else a)  # syncs device
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"range: {arg} must be a number, got {v!r}")
    return to_array(v, dtype, arg=arg, op="range", xp=np)


def _range_size(start, limit, delta, d):
    """The element count, TF's formula in the output dtype: ceil(|(limit - start) / delta|)
    for floats, exact for ints. Raises InvalidArgumentError for the inputs TF's Range kernel
    refuses, naming the argument."""
    names = ("start", "limit", "delta")
    vals = [a.item() for a in (start, limit, delta)]
    for arg, v in zip(names, vals):
        if v != v:
            raise InvalidArgumentError(f"range: {arg} must not be NaN, got {v}")
    s, lim, dl = vals
    if dl == 0:
        raise InvalidArgumentError("range: delta must not be 0")
    if dl > 0 and s > lim:  # TF's Range kernel: "Requires start <= limit when delta > 0"
        raise InvalidArgumentError(f"range: limit must be >= start when delta > 0, got start "
                                   f"{s} and limit {lim}")
    if dl < 0 and s < lim:
        raise InvalidArgumentError(f"range: limit must be <= start when delta < 0, got start "
                                   f"{s} and limit {lim}")
    if s == lim:
        return 0
    for arg, v in zip(names[:2], vals[:2]):
        if v in (float("inf"), float("-inf")):
            raise InvalidArgumentError(f"range: {arg} must be finite, got {v}")
    if d.kind == "f":
        with np.errstate(all="ignore"):  # float16 (limit - start) may overflow, as in TF
            size = float(np.ceil(np.abs((limit - start) / delta)))
        if not size <= _INT64_MAX:
            raise InvalidArgumentError(
                f"range: (limit - start) / delta must be at most {_INT64_MAX} elements in "
                f"{d.name}, got {size} (start {s}, limit {lim}, delta {dl})")
        return int(size)
    size = (abs(lim - s) + abs(dl) - 1) // abs(dl)
    if size > _INT64_MAX:
        raise InvalidArgumentError(
            f"range: (limit - start) / delta must be at most {_INT64_MAX} elements, got "
            f"{size} (start {s}, limit {lim}, delta {dl})")
    return size


@shape_args("start", "limit", "delta")
def range(start, limit=None, delta=1, dtype=None, name="range") -> Tensor:  # noqa: A001
    """[start, start+delta, ...) up to ``limit`` (``range(n)`` counts from 0).

    The dtype, unless ``dtype`` says otherwise, is TF's: the widest of the arguments' dtypes
    in int32 < int64 < float16 < float32 < float64, where a Python int is int32 (int64 if it
    does not fit) and a Python float float32.

    Raises:
      TypeError: a non-number argument, or a float argument with an integer ``dtype``.
      ValueError: a Python int beyond int64.
      InvalidArgumentError (a ValueError, as TF's Range kernel): ``delta`` 0, a NaN argument,
        an infinite ``start``/``limit``, more than 2**63 - 1 elements.
      ResourceExhaustedError: the output cannot be allocated.

    Deliberate difference: ``limit`` on the wrong side of ``start`` (``range(-4)``) gives an
    empty Tensor where TF raises InvalidArgumentError.
    """
    if limit is None:
        start, limit = 0, start
    given = None if dtype is None else dtypes.as_dtype(dtype, "range: dtype")
    args = [_range_arg(arg, v, given)
            for arg, v in zip(("start", "limit", "delta"), (start, limit, delta))]
    if given is not None:
        d = given
    else:
        d = max((a.dtype if a.dtype in _RANGE_ORDER else dtypes.int32 for a in args),
                key=_RANGE_ORDER.index)
    with np.errstate(all="ignore"):  # a Tensor cast to the given dtype wraps, as TF casts
        start, limit, delta = (a.astype(d) for a in args)
    size = _range_size(start, limit, delta, d)
    xp = backend.default_xp()
    check_allocation("range", xp, (size,), d)
    with AllocationGuard("range", xp):
        if d.kind == "f":  # start + i * delta in the output dtype, as TF's kernel
            out = xp.arange(size, dtype=d)
            out *= delta.item()  # a Python float holding the d value exactly
            out += start.item()
        else:
            out = xp.arange(start.item(), limit.item(), delta.item(), dtype=d)
    return wrap(out)
