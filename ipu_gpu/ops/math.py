"""Elementwise math: arithmetic, comparisons, logic, unary functions, cast, clip.

Binary ops follow TF: both operands have one dtype (a Python scalar adopts the
other operand's), shapes broadcast as numpy, and gradients are summed over the
broadcast axes.
"""

from __future__ import annotations

from ..core import dtypes
from ..core.registry import register
from ._util import (astype, broadcast_shape, quiet, require_bool, require_float, require_numeric,
                    require_same_dtype, unbroadcast)

_XY = ("x", "y")


def _check_binary(name, kinds):
    def check(x, y):
        require_same_dtype(name, _XY, x, y)
        if x.dtype.kind not in kinds:
            raise TypeError(f"{name}: x must have a dtype of kind {_KIND_NAMES[kinds]}, "
                            f"got {x.dtype}")
        broadcast_shape(name, _XY, x.shape, y.shape)
    return check


_KIND_NAMES = {"fiu": "number", "f": "float", "b": "bool", "fiub": "number or bool"}


def _binary(name, fn, grad=None, kinds="fiu", residuals="xy"):
    """Register a broadcasting binary op; ``grad(xp, g, x, y, z) -> (gx, gy)`` before reduction."""

    def forward(k, xp, x, y):
        with quiet(xp):
            z = fn(xp, x, y)
        if grad is None:
            return z, None
        return z, ((x, y, z) if residuals == "xyz" else (x, y))

    def backward(k, xp, res, g):
        x, y = res[0], res[1]
        z = res[2] if len(res) > 2 else None
        with quiet(xp):
            gx, gy = grad(xp, g, x, y, z)
        return (None if gx is None else unbroadcast(xp, gx, x.shape),
                None if gy is None else unbroadcast(xp, gy, y.shape))

    return register(name, args=_XY, check=_check_binary(name, kinds), forward=forward,
                    backward=backward if grad else None, twice_differentiable=True,
                    scalars_follow=True)


def _true_divide(xp, x, y):
    if x.dtype.kind in "iu":  # TF truediv: int8/16 -> float32, int32/64 -> float64
        target = dtypes.float32 if x.dtype.itemsize <= 2 else dtypes.float64
        x, y = x.astype(target), y.astype(target)
    return xp.divide(x, y)


_ADD = _binary("add", lambda xp, x, y: xp.add(x, y), lambda xp, g, x, y, z: (g, g))
_SUBTRACT = _binary("subtract", lambda xp, x, y: xp.subtract(x, y), lambda xp, g, x, y, z: (g, -g))
_MULTIPLY = _binary("multiply", lambda xp, x, y: xp.multiply(x, y),
                    lambda xp, g, x, y, z: (g * y, g * x))
_DIVIDE = _binary("divide", _true_divide, lambda xp, g, x, y, z: (g / y, -g * x / (y * y)))
def _power(xp, x, y):
    if y.dtype.kind in "iu" and bool((y < 0).any()):  # syncs device
        raise ValueError("pow: y must be non-negative for integer inputs (Integers to "
                         "negative integer powers are not allowed), got a negative exponent")
    return xp.power(x, y)


_POW = _binary(
    "pow", _power,
    lambda xp, g, x, y, z: (g * y * xp.power(x, y - 1),
                            g * z * xp.log(xp.where(x > 0, x, 1))),
    residuals="xyz")
_MAXIMUM = _binary("maximum", lambda xp, x, y: xp.maximum(x, y),
                   lambda xp, g, x, y, z: (xp.where(x >= y, g, 0), xp.where(x >= y, 0, g)))
_MINIMUM = _binary("minimum", lambda xp, x, y: xp.minimum(x, y),
                   lambda xp, g, x, y, z: (xp.where(x <= y, g, 0), xp.where(x <= y, 0, g)))


def _floor_divide(xp, x, y):
    # TF's FloorDiv on floats is floor(x / y): inf // 1 = inf and 1 // -inf = -0, where
    # numpy's floor_divide (Python's divmod) gives NaN and -1
    if x.dtype.kind == "f":
        return xp.floor(xp.divide(x, y))
    return xp.floor_divide(x, y)


_FLOORDIV = _binary("floordiv", _floor_divide)
_FLOORMOD = _binary("floormod", lambda xp, x, y: xp.mod(x, y),
                    lambda xp, g, x, y, z: (g, -g * xp.floor_divide(x, y)))


def add(x, y, name=None):
    """x + y elementwise, with broadcasting."""
    return _ADD(x, y)


def subtract(x, y, name=None):
    """x - y elementwise, with broadcasting."""
    return _SUBTRACT(x, y)


def multiply(x, y, name=None):
    """x * y elementwise, with broadcasting."""
    return _MULTIPLY(x, y)


def divide(x, y, name=None):
    """x / y elementwise (true division: integer inputs give float32/float64 as in TF)."""
    return _DIVIDE(x, y)


truediv = divide


def pow(x, y, name=None):  # noqa: A001 - TF's name
    """x ** y elementwise, with broadcasting."""
    return _POW(x, y)


def maximum(x, y, name=None):
    """The elementwise larger of x and y (the gradient goes to x where x >= y)."""
    return _MAXIMUM(x, y)


def minimum(x, y, name=None):
    """The elementwise smaller of x and y (the gradient goes to x where x <= y)."""
    return _MINIMUM(x, y)


def floordiv(x, y, name=None):
    """floor(x / y) elementwise; no gradient, as in TF."""
    return _FLOORDIV(x, y)


def floormod(x, y, name=None):
    """x - floor(x / y) * y elementwise (Python's %), with TF's gradient."""
    return _FLOORMOD(x, y)


# ---- comparisons and logic (no gradients) ------------------------------------------------
def _comparison(name, fn, kinds="fiub"):
    def forward(k, xp, x, y):
        return fn(xp, x, y), None

    return register(name, args=_XY, check=_check_binary(name, kinds), forward=forward,
                    scalars_follow=True)


_EQUAL = _comparison("equal", lambda xp, x, y: xp.equal(x, y))
_NOT_EQUAL = _comparison("not_equal", lambda xp, x, y: xp.not_equal(x, y))
_LESS = _comparison("less", lambda xp, x, y: xp.less(x, y), "fiu")
_LESS_EQUAL = _comparison("less_equal", lambda xp, x, y: xp.less_equal(x, y), "fiu")
_GREATER = _comparison("greater", lambda xp, x, y: xp.greater(x, y), "fiu")
_GREATER_EQUAL = _comparison("greater_equal", lambda xp, x, y: xp.greater_equal(x, y), "fiu")
_LOGICAL_AND = _comparison("logical_and", lambda xp, x, y: xp.logical_and(x, y), "b")
_LOGICAL_OR = _comparison("logical_or", lambda xp, x, y: xp.logical_or(x, y), "b")


def equal(x, y, name=None):
    """x == y elementwise (bool)."""
    return _EQUAL(x, y)


def not_equal(x, y, name=None):
    """x != y elementwise (bool)."""
    return _NOT_EQUAL(x, y)


def less(x, y, name=None):
    """x < y elementwise (bool)."""
    return _LESS(x, y)


def less_equal(x, y, name=None):
    """x <= y elementwise (bool)."""
    return _LESS_EQUAL(x, y)


def greater(x, y, name=None):
    """x > y elementwise (bool)."""
    return _GREATER(x, y)


def greater_equal(x, y, name=None):
    """x >= y elementwise (bool)."""
    return _GREATER_EQUAL(x, y)


def logical_and(x, y, name=None):
    """x AND y elementwise; both bool."""
    return _LOGICAL_AND(x, y)


def logical_or(x, y, name=None):
    """x OR y elementwise; both bool."""
    return _LOGICAL_OR(x, y)


def _check_logical_not(x):
    require_bool("logical_not", "x", x)


_LOGICAL_NOT = register("logical_not", args=("x",), check=_check_logical_not,
                        forward=lambda k, xp, x: (xp.logical_not(x), None))


def logical_not(x, name=None):
    """NOT x elementwise; x is bool."""
    return _LOGICAL_NOT(x)


# ---- unary functions ---------------------------------------------------------------------
def _unary(name, fn, grad, require=require_float):
    """Register an elementwise unary op; ``grad(xp, g, x, y)`` is the input gradient."""

    def check(x):
        require(name, "x", x)

    def forward(k, xp, x):
        with quiet(xp):
            y = fn(xp, x)
        return y, (x, y)

    def backward(k, xp, res, g):
        x, y = res
        with quiet(xp):
            return (grad(xp, g, x, y),)

    return register(name, args=("x",), check=check, forward=forward, backward=backward,
                    twice_differentiable=True)


def _sigmoid(xp, x):
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e))


_NEGATIVE = _unary("negative", lambda xp, x: xp.negative(x), lambda xp, g, x, y: -g,
                   require_numeric)
_SQUARE = _unary("square", lambda xp, x: xp.multiply(x, x), lambda xp, g, x, y: g * 2 * x,
                 require_numeric)
_SQRT = _unary("sqrt", lambda xp, x: xp.sqrt(x), lambda xp, g, x, y: g * 0.5 / y)
_RSQRT = _unary("rsqrt", lambda xp, x: 1 / xp.sqrt(x), lambda xp, g, x, y: g * -0.5 * y * y * y)
_EXP = _unary("exp", lambda xp, x: xp.exp(x), lambda xp, g, x, y: g * y)
_LOG = _unary("log", lambda xp, x: xp.log(x), lambda xp, g, x, y: g / x)
_ABS = _unary("abs", lambda xp, x: xp.abs(x), lambda xp, g, x, y: g * xp.sign(x),
              require_numeric)
_SIGN = _unary("sign", lambda xp, x: xp.sign(x), lambda xp, g, x, y: g * 0, require_numeric)
_TANH = _unary("tanh", lambda xp, x: xp.tanh(x), lambda xp, g, x, y: g * (1 - y * y))
_SIGMOID = _unary("sigmoid", _sigmoid, lambda xp, g, x, y: g * y * (1 - y))


def negative(x, name=None):
    """-x elementwise."""
    return _NEGATIVE(x)


def square(x, name=None):
    """x * x elementwise."""
    return _SQUARE(x)


def sqrt(x, name=None):
    """Square root elementwise (NaN for negative x, as TF)."""
    return _SQRT(x)


def rsqrt(x, name=None):
    """1 / sqrt(x) elementwise."""
    return _RSQRT(x)


def exp(x, name=None):
    """e ** x elementwise."""
    return _EXP(x)


def log(x, name=None):
    """Natural logarithm elementwise (-inf at 0, NaN below, as TF)."""
    return _LOG(x)


def abs(x, name=None):  # noqa: A001 - TF's name
    """|x| elementwise."""
    return _ABS(x)


def sign(x, name=None):
    """-1, 0 or 1 elementwise; its gradient is zero."""
    return _SIGN(x)


def tanh(x, name=None):
    """Hyperbolic tangent elementwise."""
    return _TANH(x)


def sigmoid(x, name=None):
    """1 / (1 + exp(-x)) elementwise, computed without overflow."""
    return _SIGMOID(x)


# ---- cast, identity, stop_gradient, clip ------------------------------------------------
def _check_any(x, **static):
    pass


def _cast_forward(k, xp, x, *, dtype):
    with quiet(xp):  # out-of-range values wrap or saturate silently, as TF's cast
        return x.astype(dtype, copy=False), (x.dtype,)


def _cast_backward(k, xp, res, g, *, dtype):
    (src_dtype,) = res
    if src_dtype.kind != "f" or dtype.kind != "f":
        return (None,)
    return (astype(xp, g, src_dtype),)


_CAST = register("cast", args=("x",), check=_check_any, forward=_cast_forward,
                 backward=_cast_backward, twice_differentiable=True)


def cast(x, dtype, name=None):
    """``x`` converted to ``dtype`` (floats to ints truncate toward zero, as TF);
    the gradient flows between floating dtypes only."""
    return _CAST(x, dtype=dtypes.as_dtype(dtype, "cast: dtype"))


_IDENTITY = register("identity", args=("input",), check=_check_any,
                     forward=lambda k, xp, x: (x, ()),
                     backward=lambda k, xp, res, g: (g,), twice_differentiable=True)
_STOP_GRADIENT = register("stop_gradient", args=("input",), check=_check_any,
                          forward=lambda k, xp, x: (x, None))


def identity(input, name=None):  # noqa: A002 - TF's name
    """A Tensor with the same value as ``input``; gradients pass through unchanged."""
    return _IDENTITY(input)


def stop_gradient(input, name=None):  # noqa: A002 - TF's name
    """The value of ``input``, with no gradient flowing back through it."""
    return _STOP_GRADIENT(input)


_TLH = ("t", "clip_value_min", "clip_value_max")


def _check_clip(t, lo, hi):
    require_numeric("clip_by_value", "t", t)
    require_same_dtype("clip_by_value", _TLH, t, lo, hi)
    for name, a in zip(_TLH[1:], (lo, hi)):
        if broadcast_shape("clip_by_value", ("t", name), t.shape, a.shape) != tuple(t.shape):
            raise ValueError(f"clip_by_value: {name} must broadcast to the shape of t "
                             f"{list(t.shape)}, got {list(a.shape)}")


def _clip_forward(k, xp, t, lo, hi):
    # TF's order: where clip_value_min > clip_value_max the result is clip_value_min
    return xp.maximum(xp.minimum(t, hi), lo), (t, lo, hi)


def _clip_backward(k, xp, res, g):
    # TF's gradients of maximum(minimum(t, hi), lo): each step keeps the gradient for its
    # first operand where x <= hi (then x >= lo) holds, so a NaN sends it to a bound
    t, lo, hi = res
    under_hi = t <= hi
    above_lo = xp.minimum(t, hi) >= lo
    inner = xp.where(above_lo, g, 0)
    return (xp.where(under_hi, inner, 0), unbroadcast(xp, xp.where(above_lo, 0, g), lo.shape),
            unbroadcast(xp, xp.where(under_hi, 0, inner), hi.shape))


_CLIP = register("clip_by_value", args=_TLH, check=_check_clip, forward=_clip_forward,
                 backward=_clip_backward, twice_differentiable=True, scalars_follow=True)


def clip_by_value(t, clip_value_min, clip_value_max, name=None):
    """``t`` with values below ``clip_value_min`` / above ``clip_value_max`` replaced by them;
    the bounds broadcast to ``t``'s shape. Gradients go to ``t`` inside the range and to
    the bound that clipped elsewhere. As TF, this is ``maximum(minimum(t, max), min)``: a
    ``clip_value_min`` above ``clip_value_max`` wins, and NaN propagates (its gradient goes
    to ``clip_value_min``)."""
    return _CLIP(t, clip_value_min, clip_value_max)
