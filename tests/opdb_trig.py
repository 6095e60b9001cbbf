"""Op-table rows for the trigonometric and hyperbolic functions of issue 17 (see tests/opdb.py)."""

from __future__ import annotations

import numpy as np
from opdb import (F32, F64, FLOATS, ErrorInput, OpInfo, binary_samples, make, unary_errors,
                  unary_samples)
from reference import trig as rtrig

from ipu_gpu.ops import trig


def _within(low, high):
    return lambda rng, shape, dtype: make(rng, shape, dtype, low, high)


def _unary(name, maker=make, extra=()):
    return OpInfo(name, getattr(trig, name), rtrig.unary(name), unary_samples(maker, extra),
                  unary_errors(name, "x", np.dtype("int32"), "must be a floating-point"),
                  dtypes=FLOATS, diff_args=(0,), elementwise=1, tf_name=f"math.{name}")


def atan2_errors():
    yield ErrorInput((np.zeros(2, np.int32), np.zeros(2, np.int32)), {}, TypeError,
                     r"^atan2: y must be a floating-point")
    yield ErrorInput((np.zeros(2, F32), np.zeros(2, F64)), {}, TypeError,
                     r"^atan2: x must have the dtype of y")
    yield ErrorInput((np.zeros((2, 3), F32), np.zeros(4, F32)), {}, ValueError,
                     r"^atan2: x must be broadcast-compatible with y")


def _away(rng, shape, dtype):  # off the origin, where atan2 is not smooth
    mag = make(rng, shape, dtype, 0.3, 2.0)
    return np.asarray(np.where(rng.random(shape) < 0.5, -mag, mag), dtype)


ROWS = [
    _unary("sin", extra=([0.0, 3.140625, -100.0, 1000.0],)),
    _unary("cos", extra=([0.0, 3.140625, -100.0, 1000.0],)),
    _unary("tan", _within(-1.2, 1.2)),
    _unary("asin", _within(-0.95, 0.95), extra=([0.0, 0.5, -0.5],)),
    _unary("acos", _within(-0.95, 0.95), extra=([0.0, 0.5, -0.5],)),
    _unary("atan", extra=([-1000.0, 0.0, 1000.0],)),
    _unary("sinh", _within(-3.0, 3.0), extra=([-10.0, 0.0, 10.0],)),
    _unary("cosh", _within(-3.0, 3.0), extra=([-10.0, 0.0, 10.0],)),
    _unary("asinh", _within(-5.0, 5.0), extra=([-1000.0, 0.0, 1000.0],)),
    _unary("acosh", _within(1.1, 5.0), extra=([1.5, 1000.0],)),
    _unary("atanh", _within(-0.9, 0.9), extra=([0.0, 0.5, -0.5],)),
    OpInfo("atan2", trig.atan2, rtrig.atan2, binary_samples(_away, _away), atan2_errors,
           dtypes=FLOATS, diff_args=(0, 1), elementwise=2, tf_name="math.atan2"),
]
