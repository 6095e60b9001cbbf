"""Trigonometric and hyperbolic functions: tf.math's sin, cos, tan, asin, acos, atan, atan2,
sinh, cosh, asinh, acosh, atanh (floats only, as TF's CPU kernels).

Outside an inverse function's domain the result is NaN (asin, acos of |x| > 1; acosh of
x < 1; atanh of |x| > 1), and the poles give +-inf, as TF. Gradients are TF's rules.
"""

from __future__ import annotations

from ..core.registry import register
from ._util import broadcast_shape, quiet, require_float, require_same_dtype, unbroadcast
from .math import _unary

_SIN = _unary("sin", lambda xp, x: xp.sin(x), lambda xp, g, x, y: g * xp.cos(x))
_COS = _unary("cos", lambda xp, x: xp.cos(x), lambda xp, g, x, y: -(g * xp.sin(x)))
_TAN = _unary("tan", lambda xp, x: xp.tan(x), lambda xp, g, x, y: g * (1 + y * y))
_ASIN = _unary("asin", lambda xp, x: xp.arcsin(x), lambda xp, g, x, y: g / xp.sqrt(1 - x * x))
_ACOS = _unary("acos", lambda xp, x: xp.arccos(x),
               lambda xp, g, x, y: -(g / xp.sqrt(1 - x * x)))
_ATAN = _unary("atan", lambda xp, x: xp.arctan(x), lambda xp, g, x, y: g / (1 + x * x))
_SINH = _unary("sinh", lambda xp, x: xp.sinh(x), lambda xp, g, x, y: g * xp.cosh(x))
_COSH = _unary("cosh", lambda xp, x: xp.cosh(x), lambda xp, g, x, y: g * xp.sinh(x))
_ASINH = _unary("asinh", lambda xp, x: xp.arcsinh(x), lambda xp, g, x, y: g / xp.cosh(y))
_ACOSH = _unary("acosh", lambda xp, x: xp.arccosh(x), lambda xp, g, x, y: g / xp.sinh(y))
_ATANH = _unary("atanh", lambda xp, x: xp.arctanh(x), lambda xp, g, x, y: g / (1 - x * x))

_YX = ("y", "x")


def _check_atan2(y, x):
    require_float("atan2", "y", y)
    require_same_dtype("atan2", _YX, y, x)
    broadcast_shape("atan2", _YX, y.shape, x.shape)


def _atan2_forward(k, xp, y, x):
    with quiet(xp):
        return xp.arctan2(y, x), (y, x)


def _atan2_backward(k, xp, res, g):
    y, x = res
    with quiet(xp):
        scale = g / (x * x + y * y)
        return unbroadcast(xp, scale * x, y.shape), unbroadcast(xp, -(scale * y), x.shape)


_ATAN2 = register("atan2", args=_YX, check=_check_atan2, forward=_atan2_forward,
                  backward=_atan2_backward, twice_differentiable=True, scalars_follow=True)


def sin(x, name=None):
    """Sine of x (radians) elementwise."""
    return _SIN(x)


def cos(x, name=None):
    """Cosine of x (radians) elementwise."""
    return _COS(x)


def tan(x, name=None):
    """Tangent of x (radians) elementwise."""
    return _TAN(x)


def asin(x, name=None):
    """Arcsine elementwise, in [-pi/2, pi/2]; NaN where |x| > 1."""
    return _ASIN(x)


def acos(x, name=None):
    """Arccosine elementwise, in [0, pi]; NaN where |x| > 1."""
    return _ACOS(x)


def atan(x, name=None):
    """Arctangent elementwise, in (-pi/2, pi/2)."""
    return _ATAN(x)


def atan2(y, x, name=None):
    """The angle of the point (x, y) elementwise, in [-pi, pi] (the quadrant from both
    signs), with broadcasting; y and x have one float dtype."""
    return _ATAN2(y, x)


def sinh(x, name=None):
    """Hyperbolic sine elementwise."""
    return _SINH(x)


def cosh(x, name=None):
    """Hyperbolic cosine elementwise."""
    return _COSH(x)


def asinh(x, name=None):
    """Inverse hyperbolic sine elementwise."""
    return _ASINH(x)


def acosh(x, name=None):
    """Inverse hyperbolic cosine elementwise; NaN where x < 1."""
    return _ACOSH(x)


def atanh(x, name=None):
    """Inverse hyperbolic tangent elementwise; +-inf at +-1, NaN where |x| > 1."""
    return _ATANH(x)


__all__ = ["acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "sin",
           "sinh", "tan"]
