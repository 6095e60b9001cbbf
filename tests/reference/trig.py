"""sin, cos, ..., atan2 in float64 from Python's math module, element by element: NaN outside
an inverse function's domain, +-inf at poles and on overflow (TF's answers)."""

from __future__ import annotations

import math

import numpy as np


def _safe(fn):
    def one(*v):
        if any(math.isnan(a) for a in v):
            return math.nan
        try:
            return fn(*v)
        except OverflowError:
            return math.inf
        except ValueError:  # outside the domain, or a pole (atanh(+-1))
            if fn is math.atanh and abs(v[0]) == 1:
                return math.copysign(math.inf, v[0])
            return math.nan
    return one


def _elementwise(fn, *args):
    arrays = np.broadcast_arrays(*(np.asarray(a, np.float64) for a in args))
    out = np.frompyfunc(_safe(fn), len(arrays), 1)(*arrays)
    return np.asarray(out, np.float64).reshape(arrays[0].shape)


def _cosh(v):
    return math.inf if math.isinf(v) else math.cosh(v)


def _sinh(v):
    return v if math.isinf(v) else math.sinh(v)


def _sin(v):
    return math.nan if math.isinf(v) else math.sin(v)


def _cos(v):
    return math.nan if math.isinf(v) else math.cos(v)


def _tan(v):
    return math.nan if math.isinf(v) else math.tan(v)


_FUNCTIONS = {"sin": _sin, "cos": _cos, "tan": _tan, "asin": math.asin, "acos": math.acos,
              "atan": math.atan, "sinh": _sinh, "cosh": _cosh, "asinh": math.asinh,
              "acosh": math.acosh, "atanh": math.atanh}


def unary(name):
    fn = _FUNCTIONS[name]
    return lambda x: _elementwise(fn, x)


def atan2(y, x):
    return _elementwise(math.atan2, y, x)
