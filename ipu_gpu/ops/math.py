"""Elementwise math: arithmetic, comparisons, logic, unary functions, cast, clip.

Binary ops follow TF: both operands have one dtype (a Python scalar adopts the
other operand's), shapes broadcast as numpy, and gradients are summed over the
broadcast axes.
"""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.indexed_slices import IndexedSlices
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


_KIND_NAMES = {"fiu": "number", "f": "float", "b": "bool", "fiub": "number or bool",
               "fiuO": "number or string", "fiubO": "number, bool or string"}


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


_ADD = _binary("add", lambda xp, x, y: xp.add(x, y), lambda xp, g, x, y, z: (g, g),
               kinds="fiuO")  # strings: concatenation, as TF's AddV2
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


def _floor_mod(xp, x, y):
    r = xp.mod(x, y)
    if xp is np or x.dtype.kind != "f":
        return r
    # cupy gives NaN for a finite x over an infinite y; numpy and TF give x when x is zero or
    # has y's sign, else y (Python's float modulo)
    by_inf = xp.isinf(y) & xp.isfinite(x)
    return xp.where(by_inf, xp.where((x == 0) | (xp.signbit(x) == xp.signbit(y)), x, y), r)


_FLOORMOD = _binary("floormod", _floor_mod,
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


_EQUAL = _comparison("equal", lambda xp, x, y: xp.equal(x, y).astype(bool, copy=False),
                     "fiubO")
_NOT_EQUAL = _comparison("not_equal", lambda xp, x, y: xp.not_equal(x, y).astype(bool, copy=False),
                         "fiubO")
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
def _unary(name, fn, grad, require=require_float, arg="x"):
    """Register an elementwise unary op; ``grad(xp, g, x, y)`` is the input gradient."""

    def check(x):
        require(name, arg, x)

    def forward(k, xp, x):
        with quiet(xp):
            y = fn(xp, x)
        return y, (x, y)

    def backward(k, xp, res, g):
        x, y = res
        with quiet(xp):
            return (grad(xp, g, x, y),)

    return register(name, args=(arg,), check=check, forward=forward, backward=backward,
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
    with quiet(xp):  # a float32 gradient beyond float16's range becomes inf, as in TF
        return (astype(xp, g, src_dtype),)


_CAST = register("cast", args=("x",), check=_check_any, forward=_cast_forward,
                 backward=_cast_backward, twice_differentiable=True)


def cast(x, dtype, name=None):
    """``x`` converted to ``dtype`` (floats to ints truncate toward zero, as TF);
    the gradient flows between floating dtypes only. An IndexedSlices stays one (its values
    cast), as in TF."""
    if type(x) is IndexedSlices:
        return IndexedSlices(cast(x.values, dtype), x.indices, x.dense_shape)
    d = dtypes.as_dtype(dtype, "cast: dtype")
    if d is dtypes.string or getattr(x, "dtype", None) is dtypes.string:
        from ..core.strings import check_string_cast

        if check_string_cast(getattr(x, "dtype", None), d):
            return _IDENTITY(x)
    return _CAST(x, dtype=d)


_IDENTITY = register("identity", args=("input",), check=_check_any,
                     forward=lambda k, xp, x: (x, ()),
                     backward=lambda k, xp, res, g: (g,), twice_differentiable=True)
_STOP_GRADIENT = register("stop_gradient", args=("input",), check=_check_any,
                          forward=lambda k, xp, x: (x, None))


def identity(input, name=None):  # noqa: A002 - TF's name
    """A Tensor with the same value as ``input``; gradients pass through unchanged. An
    IndexedSlices stays one, as in TF."""
    if type(input) is IndexedSlices:
        return IndexedSlices(_IDENTITY(input.values), input.indices, input.dense_shape)
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
    to ``clip_value_min``). An IndexedSlices stays one, its values clipped, as in TF."""
    if type(t) is IndexedSlices:
        return IndexedSlices(_CLIP(t.values, clip_value_min, clip_value_max), t.indices,
                             t.dense_shape)
    return _CLIP(t, clip_value_min, clip_value_max)


# ---- more unary functions: log1p, expm1, softplus, erf, erfc, reciprocal --------------------
_LOG1P = _unary("log1p", lambda xp, x: xp.log1p(x), lambda xp, g, x, y: g / (1 + x))
_EXPM1 = _unary("expm1", lambda xp, x: xp.expm1(x), lambda xp, g, x, y: g * xp.exp(x))
_RECIPROCAL = _unary("reciprocal", lambda xp, x: 1 / x, lambda xp, g, x, y: -g * y * y)


def _softplus(xp, x):
    # TF's Softplus kernel: x above -t, exp(x) below t, log1p(exp(x)) between, with
    # t = log(eps) + 2 in the input's dtype (the other branch would round to the same value)
    t = x.dtype.type(np.log(np.finfo(x.dtype).eps) + 2)
    e = xp.exp(x)
    return xp.where(x > -t, x, xp.where(x < t, e, xp.log1p(e)))


_SOFTPLUS = _unary("softplus", _softplus, lambda xp, g, x, y: g * _sigmoid(xp, x),
                   arg="features")

# erf and erfc after fdlibm's s_erf.c (Sun Microsystems, 1993): rational approximations on
# |x| < 0.84375, [0.84375, 1.25), [1.25, 1/0.35), [1/0.35, 28), evaluated in float64 for
# float64 and in float32 for float16/32 (numpy has no erf of its own; numpy and cupy both run
# these expressions).
_ERX = 8.45062911510467529297e-01
_EFX = 1.28379167095512586316e-01
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)


def _poly(z, coefficients):
    """sum(c_i z**i) by Horner's rule, in place (one temporary)."""
    out = z * coefficients[-1]
    out += coefficients[-2]
    for c in coefficients[-3::-1]:
        out *= z
        out += c
    return out


def _erf_parts(xp, x):
    """(|x|; erf(|x|) - |x| for |x| < 0.84375; erf(|x|) - erx on [0.84375, 1.25); erfc(|x|) for
    |x| >= 1.25), each valid on its own interval, in x's dtype (float32 or float64)."""
    a = xp.abs(x)
    z = a * a
    small = a * (_poly(z, _PP) / _poly(z, _QQ))
    s = a - 1
    mid = _poly(s, _PA) / _poly(s, _QA)
    w = 1 / z
    ratio = xp.where(a < 1 / 0.35, _poly(w, _RA) / _poly(w, _SA), _poly(w, _RB) / _poly(w, _SB))
    if a.dtype == np.float64:
        # exp(-a*a) as exp(-h*h) * exp((h - a)(h + a)), h = a rounded to float32, whose square
        # is exact (fdlibm clears the low word for the same reason)
        h = a.astype(np.float32).astype(np.float64)
        tail = xp.exp(-h * h - 0.5625) * xp.exp((h - a) * (h + a) + ratio) / a
    else:  # float32: the exponent in float64, where rounding a*a costs float32 nothing
        a64 = a.astype(np.float64)
        tail = (xp.exp(ratio.astype(np.float64) - 0.5625 - a64 * a64) / a64).astype(a.dtype)
    return a, small, mid, tail


def _working(x):
    return x.astype(np.float64 if x.dtype == np.float64 else np.float32, copy=False)


def _erf(xp, x):
    w = _working(x)
    a, small, mid, tail = _erf_parts(xp, w)
    mag = xp.where(a < 0.84375, a + small,
                   xp.where(a < 1.25, _ERX + mid, xp.where(a < 6, 1 - tail, 1.0)))
    mag = xp.where(a < 2.0 ** -28, a + _EFX * a, mag)
    out = xp.where(xp.isnan(w), w, xp.copysign(mag, w))  # erf(-0) = -0
    return out.astype(x.dtype, copy=False)


def _erfc(xp, x):
    w = _working(x)
    a, small, mid, tail = _erf_parts(xp, w)
    neg = w < 0
    xy = xp.where(neg, -small, small)  # erf(x) = x + xy for |x| < 0.84375
    near = xp.where(a < 0.25, 1 - (w + xy), 0.5 - (xy + (w - 0.5)))
    one = xp.where(neg, 1 + (_ERX + mid), 1 - _ERX - mid)
    far = xp.where(neg, 2 - tail, tail)
    far = xp.where(a < 28, far, xp.where(neg, 2.0, 0.0))
    out = xp.where(a < 0.84375, near, xp.where(a < 1.25, one, far))
    return xp.where(xp.isnan(w), w, out).astype(x.dtype, copy=False)


_TWO_OVER_SQRT_PI = 1.1283791670955126


def _erf_grad(sign):
    def grad(xp, g, x, y):
        return g * (sign * _TWO_OVER_SQRT_PI) * xp.exp(-x * x)
    return grad


_ERF = _unary("erf", _erf, _erf_grad(1.0))
_ERFC = _unary("erfc", _erfc, _erf_grad(-1.0))


def log1p(x, name=None):
    """log(1 + x) elementwise, accurate for small x."""
    return _LOG1P(x)


def expm1(x, name=None):
    """exp(x) - 1 elementwise, accurate for small x."""
    return _EXPM1(x)


def softplus(features, name=None):
    """log(exp(features) + 1) elementwise, as TF's kernel: ``features`` itself above
    -log(eps) - 2 and exp(features) below log(eps) + 2 (eps of the dtype). The gradient is
    sigmoid(features)."""
    return _SOFTPLUS(features)


def erf(x, name=None):
    """The Gauss error function elementwise (fdlibm's rational approximations: within an ulp
    in float64, a few float32 ulps in float16/32)."""
    return _ERF(x)


def erfc(x, name=None):
    """1 - erf(x) elementwise, to a few float64 ulps also where erf(x) is close to 1 (down to
    the smallest normal numbers)."""
    return _ERFC(x)


def reciprocal(x, name=None):
    """1 / x elementwise (floats only: TF has no CPU kernel for integer reciprocals)."""
    return _RECIPROCAL(x)


# ---- floor, ceil, round, is_nan, is_finite, is_inf (no gradients, as TF) -------------------
def _unary_no_gradient(name, fn, require=require_float):
    def check(x):
        require(name, "x", x)

    return register(name, args=("x",), check=check, forward=lambda k, xp, x: (fn(xp, x), None))


def _round_half_even(xp, x):
    return xp.round(x) if x.dtype.kind == "f" else x  # TF: rounding an integer returns it


def _require_round(name, arg, x):
    if x.dtype.kind not in "fi":
        raise TypeError(f"{name}: {arg} must be a float or signed integer tensor, got {x.dtype}")


_FLOOR = _unary_no_gradient("floor", lambda xp, x: xp.floor(x))
_CEIL = _unary_no_gradient("ceil", lambda xp, x: xp.ceil(x))
_ROUND = _unary_no_gradient("round", _round_half_even, _require_round)
_IS_NAN = _unary_no_gradient("is_nan", lambda xp, x: xp.isnan(x))
_IS_FINITE = _unary_no_gradient("is_finite", lambda xp, x: xp.isfinite(x))
_IS_INF = _unary_no_gradient("is_inf", lambda xp, x: xp.isinf(x))


def floor(x, name=None):
    """The largest integer not greater than x, elementwise (floats; no gradient, as TF)."""
    return _FLOOR(x)


def ceil(x, name=None):
    """The smallest integer not less than x, elementwise (floats; no gradient, as TF)."""
    return _CEIL(x)


def round(x, name=None):  # noqa: A001 - TF's name
    """x rounded to the nearest integer, halves to even (banker's rounding, as TF:
    0.5 -> 0, 1.5 -> 2, -2.5 -> -2); integer tensors are returned unchanged. No gradient."""
    return _ROUND(x)


def is_nan(x, name=None):
    """Where x is NaN (bool)."""
    return _IS_NAN(x)


def is_finite(x, name=None):
    """Where x is neither NaN nor infinite (bool)."""
    return _IS_FINITE(x)


def is_inf(x, name=None):
    """Where x is +inf or -inf (bool)."""
    return _IS_INF(x)
