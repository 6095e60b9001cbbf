"""``tf.math.cumprod``: the running product along an axis (exclusive, reversed), with TF's
gradient."""

from __future__ import annotations

from ..core.registry import register
from ._util import check_axis, quiet, require_numeric
from .math_extra import _scan, _static_int


def _check(x, *, axis, exclusive, reverse):
    require_numeric("cumprod", "x", x)
    check_axis("cumprod", axis, x.ndim)


def _forward(k, xp, x, *, axis, exclusive, reverse):
    y = _scan(xp, x, axis % x.ndim, exclusive, reverse, product=True)
    return y, (x, y)


def _backward(k, xp, res, g, *, axis, exclusive, reverse):
    # TF's rule: the running sum of g * y the other way, divided by x with TF's div_no_nan
    # (0 where x is 0, though the true derivative there need not be 0)
    x, y = res
    axis %= x.ndim
    with quiet(xp):
        out = _scan(xp, g * y, axis, exclusive, not reverse)
        return (xp.where(x == 0, 0, out / xp.where(x == 0, 1, x)).astype(x.dtype),)


_CUMPROD = register("cumprod", args=("x",), check=_check, forward=_forward, backward=_backward)


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """The running product of ``x`` along ``axis`` (an int, default 0): ``[a, a * b,
    a * b * c]``; ``exclusive`` leaves each entry out of its own product (``[1, a, a * b]``),
    ``reverse`` multiplies from the end. Integers wrap; float16 multiplies in float32. The
    gradient is TF's, ``cumsum(g * y, reverse=not reverse) / x`` with 0 where x is 0 (TF's
    div_no_nan: not the true derivative there)."""
    return _CUMPROD(x, axis=_static_int("cumprod", "axis", axis), exclusive=bool(exclusive),
                    reverse=bool(reverse))


__all__ = ["cumprod"]
