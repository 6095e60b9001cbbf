"""Special functions of ``tf.math``: ``lgamma`` (log |Gamma(x)|) and ``digamma`` (its
derivative), floats only, as TF's CPU kernels.

Both are computed in float64 (float16/32 inputs round once at the end) by formulas numpy and
cupy run alike: Lanczos's approximation (g = 7, nine terms) for lgamma, the recurrence
psi(x) = psi(x + 1) - 1/x up to x >= 10 and the asymptotic series for digamma, and the
reflection formulas below 1/2 (lgamma) and 0 (digamma). As TF: lgamma is +inf at 0, the
negative integers and +-inf; digamma is NaN at 0, the negative integers and -inf.
Gradients: digamma(x) for lgamma (differentiable again), trigamma(x) for digamma (not
differentiable again: second derivatives of digamma raise LookupError).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.registry import register
from ._util import quiet, require_float

_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_PI = math.log(math.pi)


def _sinpi_abs(xp, w):
    """|sin(pi w)| as |sin(pi r)|, r = w - round(w) in [-1/2, 1/2] exactly."""
    return xp.abs(xp.sin(math.pi * (w - xp.round(w))))


def _lgamma_positive(xp, z):
    """log Gamma(z) for z >= 1/2 (Lanczos)."""
    zm = z - 1
    a = xp.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        a += c / (zm + i)
    t = zm + (_LANCZOS_G + 0.5)
    return _HALF_LOG_2PI + (zm + 0.5) * xp.log(t) - t + xp.log(a)


def _lgamma(xp, x):
    w = x.astype(np.float64)
    small = w < 0.5
    z = xp.where(small, 1 - w, w)
    positive = _lgamma_positive(xp, xp.where(xp.isinf(z), 1.0, z))
    reflected = _LOG_PI - xp.log(_sinpi_abs(xp, w)) - positive
    out = xp.where(small, reflected, positive)
    pole = (w <= 0) & (w == xp.floor(w))
    out = xp.where(pole | xp.isinf(w), np.inf, xp.where((w == 1) | (w == 2), 0.0, out))
    return xp.where(xp.isnan(w), w, out).astype(x.dtype)


# psi(z) ~ log z - 1/(2z) - sum_k B_2k / (2k z^2k), and psi'(z) ~ 1/z + 1/(2z^2) +
# sum_k B_2k / z^(2k+1), for z >= 10
_PSI_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)
_TRIGAMMA_SERIES = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)
_SHIFT = 10


def _series(xp, z, coefficients):
    """sum_k c_k z^(-2k), k = 1.."""
    w = 1 / (z * z)
    out = xp.full_like(z, coefficients[-1])
    for c in coefficients[-2::-1]:
        out = out * w + c
    return out * w


def _shifted(xp, z, term):
    """(z moved up to at least _SHIFT by steps of 1, the sum of term(z) over the steps)."""
    acc = xp.zeros_like(z)
    for _ in range(_SHIFT):
        low = z < _SHIFT
        acc += xp.where(low, term(z), 0.0)
        z = xp.where(low, z + 1, z)
    return z, acc


def _digamma64(xp, w):
    negative = w < 0
    z = xp.where(negative, 1 - w, w)
    z = xp.where(xp.isfinite(z), z, 1.0)
    z, acc = _shifted(xp, z, lambda v: 1 / v)
    psi = xp.log(z) - 0.5 / z - _series(xp, z, _PSI_SERIES) - acc
    r = w - xp.round(w)  # tan has period pi: tan(pi w) = tan(pi r), r exact
    psi = xp.where(negative, psi - math.pi / xp.tan(math.pi * r), psi)
    pole = (w <= 0) & (w == xp.floor(w))  # -inf and 0 included
    psi = xp.where(pole, np.nan, xp.where(w == np.inf, np.inf, psi))
    return xp.where(xp.isnan(w), w, psi)


def _trigamma64(xp, w):
    negative = w < 0
    z = xp.where(negative, 1 - w, w)
    z = xp.where(xp.isfinite(z), z, 1.0)
    z, acc = _shifted(xp, z, lambda v: 1 / (v * v))
    psi1 = 1 / z + 0.5 / (z * z) + _series(xp, z, _TRIGAMMA_SERIES) / z + acc
    s = _sinpi_abs(xp, w)
    psi1 = xp.where(negative, -psi1 + (math.pi * math.pi) / (s * s), psi1)
    pole = (w <= 0) & (w == xp.floor(w))
    psi1 = xp.where(pole, np.inf, psi1)
    psi1 = xp.where(w == np.inf, 0.0, psi1)
    return xp.where(xp.isnan(w), w, psi1)


def _digamma(xp, x):
    return _digamma64(xp, x.astype(np.float64)).astype(x.dtype)


def _lgamma_derivative(xp, x):
    # on Tensors (second derivatives) the digamma op itself, so the tape records it
    return xp.digamma(x) if hasattr(xp, "digamma") else _digamma(xp, x)


def _trigamma(xp, x):
    return _trigamma64(xp, x.astype(np.float64)).astype(x.dtype)


def _unary(name, fn, derivative, twice):
    def check(x):
        require_float(name, "x", x)

    def forward(k, xp, x):
        with quiet(xp):
            return fn(xp, x), (x,)

    def backward(k, xp, res, g):
        (x,) = res
        with quiet(xp):
            return (g * derivative(xp, x),)

    return register(name, args=("x",), check=check, forward=forward, backward=backward,
                    twice_differentiable=twice)


_LGAMMA = _unary("lgamma", _lgamma, _lgamma_derivative, True)
_DIGAMMA = _unary("digamma", _digamma, _trigamma, False)


def lgamma(x, name=None):
    """log |Gamma(x)| elementwise; +inf at 0, the negative integers and +-inf. The gradient is
    digamma(x)."""
    return _LGAMMA(x)


def digamma(x, name=None):
    """psi(x), the derivative of lgamma, elementwise: NaN at 0, the negative integers and
    -inf; +inf at +inf. The gradient is trigamma(x) (+inf at the poles, as TF)."""
    return _DIGAMMA(x)


__all__ = ["digamma", "lgamma"]
