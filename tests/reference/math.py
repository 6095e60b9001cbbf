"""Elementwise math, in float64 where the op is a float op (TF semantics)."""

from __future__ import annotations

import numpy as np


def _f(x):
    """Float inputs computed in float64; integer and bool inputs keep their dtype."""
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def add(x, y):
    return np.add(_f(x), _f(y))


def subtract(x, y):
    return np.subtract(_f(x), _f(y))


def multiply(x, y):
    return np.multiply(_f(x), _f(y))


def divide(x, y):
    # true division: integers are divided as float64 (TF casts int32/64 to float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(x, np.float64) / np.asarray(y, np.float64)


def negative(x):
    return -_f(x)


def pow(x, y):  # noqa: A001 - TF's name
    x, y = _f(x), _f(y)
    if x.dtype.kind in "iu" and np.any(y < 0):
        raise ValueError("integers to negative integer powers are not allowed")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(x, y)


def square(x):
    return _f(x) * _f(x)


def sqrt(x):
    with np.errstate(invalid="ignore"):
        return np.sqrt(np.asarray(x, np.float64))


def rsqrt(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / np.sqrt(np.asarray(x, np.float64))


def exp(x):
    with np.errstate(over="ignore"):
        return np.exp(np.asarray(x, np.float64))


def log(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.asarray(x, np.float64))


def abs(x):  # noqa: A001 - TF's name
    return np.abs(_f(x))


def sign(x):
    return np.sign(_f(x))


def maximum(x, y):
    return np.maximum(_f(x), _f(y))


def minimum(x, y):
    return np.minimum(_f(x), _f(y))


def tanh(x):
    return np.tanh(np.asarray(x, np.float64))


def sigmoid(x):
    x = np.asarray(x, np.float64)
    e = np.exp(-np.abs(x))  # never overflows
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def floordiv(x, y):
    x, y = _f(x), _f(y)
    if x.dtype.kind == "f":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.floor(x / y)
    return np.floor_divide(x, y)  # Python's rounding toward -inf, as TF FloorDiv


def floormod(x, y):
    x, y = _f(x), _f(y)
    if x.dtype.kind == "f":
        # TF's FloorMod (and Python's %): the truncated remainder moved by y when its sign
        # differs from y's, so the result takes the sign of y; exact, and right for an
        # infinite y (1 % inf = 1, 1 % -inf = -inf), where x - floor(x / y) * y gives NaN
        with np.errstate(invalid="ignore"):
            r = np.fmod(x, y)
            return np.where((r != 0) & ((y < 0) != (r < 0)), r + y, r)
    return np.mod(x, y)


def equal(x, y):
    return np.equal(_f(x), _f(y))


def not_equal(x, y):
    return np.not_equal(_f(x), _f(y))


def less(x, y):
    return np.less(_f(x), _f(y))


def less_equal(x, y):
    return np.less_equal(_f(x), _f(y))


def greater(x, y):
    return np.greater(_f(x), _f(y))


def greater_equal(x, y):
    return np.greater_equal(_f(x), _f(y))


def logical_and(x, y):
    return np.logical_and(x, y)


def logical_or(x, y):
    return np.logical_or(x, y)


def logical_not(x):
    return np.logical_not(x)


def clip_by_value(t, clip_value_min, clip_value_max):
    t = _f(t)
    # TF's order: clip_value_min wins where it is above clip_value_max
    out = np.maximum(np.minimum(t, _f(clip_value_max)), _f(clip_value_min))
    return np.broadcast_to(out, t.shape).copy()


def stop_gradient(input):  # noqa: A002 - TF's name
    return _f(input).copy()


def identity(input):  # noqa: A002 - TF's name
    return _f(input).copy()


def cast(x, dtype):
    """float -> int truncates toward zero; anything -> bool is ``!= 0``; the value is rounded
    to ``dtype`` (the one place a reference is not float64: rounding is the op)."""
    x = np.asarray(x)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return x != 0
    if dtype.kind in "iu" and x.dtype.kind == "f":
        return np.trunc(x).astype(dtype)
    return x.astype(dtype)
