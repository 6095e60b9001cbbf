"""PopFloat's stochastic-rounding noise densities (``sr_density``), drawn from ``tf.random``.

A cast rounds ``|x| / ulp = q`` up when ``frac(q) + n >= 1`` (never when ``q`` is whole), for
noise ``n`` in [0, 1] resolved down to ``sr_bits`` bits. The densities (PopFloat's
``SRDensityType``, ``CastToGfloat.hpp``), with ``offset``, ``scale``, ``lo``, ``hi`` the
``sr_norm_offset``, ``sr_norm_scale``, ``sr_norm_min`` and ``sr_norm_max`` arguments:

- 'Invalid': plain stochastic rounding, ``n`` uniform in [0, 1) (the bounds are unused).
- 'Uniform': ``n = 0.5 + U[lo, hi)``.
- 'Normal', 'Laplace', 'Logistic': ``n = 0.5 + clip(offset + scale * s, lo, hi)`` for ``s``
  standard normal, Laplace (``b = 1``) or logistic (``s = 1``): the mass beyond the bounds
  sits on them.
- 'TruncatedNormal', 'TruncatedLaplace', 'TruncatedLogistic': ``n = 0.5 + offset + scale *
  s`` with ``s`` drawn from the density restricted to ``[(lo - offset) / scale, (hi - offset)
  / scale]`` (by inverting its CDF, so no mass sits on the bounds).
- 'LogitNormal': ``n = clip(sigmoid(offset + scale * s), lo, hi)``, ``s`` standard normal.
- 'TruncatedLogitNormal': ``n = sigmoid(offset + scale * s)``, ``s`` normal restricted to
  where the result lies in [lo, hi].
- 'Bernoulli': no noise: round down with probability ``sr_prob`` (``bernoulli``).

The centred densities take bounds in [-0.5, 0.5], the logit-normal ones in [0, 1].
"""

from __future__ import annotations

import math

import numpy as np

from ..core import dtypes
from . import indexing
from . import math as math_ops
from . import random as random_ops

CENTRED = ("Uniform", "Normal", "TruncatedNormal", "Laplace", "TruncatedLaplace", "Logistic",
           "TruncatedLogistic")
LOGIT = ("LogitNormal", "TruncatedLogitNormal")
DENSITIES = ("Invalid", *CENTRED, "Bernoulli", *LOGIT)

_RESOLUTION_BITS = 32  # bisection stops when the noise is known to 2^-32, below any sr_bits
_TAIL = 40.0  # standard deviations: beyond, the normal CDF is 0 or 1 in float64


def check_density(density) -> None:
    """Raise ValueError for an ``sr_density`` that is not one of ``DENSITIES``."""
    if density not in DENSITIES:
        raise ValueError(f"cast_native_to_gfloat: sr_density must be one of "
                         f"{', '.join(DENSITIES)}, got {density!r}")


def check(density, sr_bits, offset, scale, lo, hi, prob) -> None:
    """Raise ValueError, naming the argument, for parameters the density cannot use."""
    check_density(density)
    if isinstance(sr_bits, bool) or not isinstance(sr_bits, (int, np.integer)) or sr_bits < 0:
        raise ValueError(f"cast_native_to_gfloat: sr_bits must be a non-negative integer, got "
                         f"{sr_bits!r}")
    if density == "Bernoulli":
        if not 0.0 <= float(prob) <= 1.0:
            raise ValueError(f"cast_native_to_gfloat: sr_prob must be in [0, 1], got {prob!r}")
        return
    if density == "Invalid":
        return
    if density != "Uniform":
        if not math.isfinite(float(offset)):
            raise ValueError(f"cast_native_to_gfloat: sr_norm_offset must be finite, got "
                             f"{offset!r}")
        if not (math.isfinite(float(scale)) and float(scale) > 0):
            raise ValueError(f"cast_native_to_gfloat: sr_norm_scale must be positive and "
                             f"finite, got {scale!r}")
    low, high = (-0.5, 0.5) if density in CENTRED else (0.0, 1.0)
    for name, v in (("sr_norm_min", lo), ("sr_norm_max", hi)):
        if not low <= float(v) <= high:
            raise ValueError(f"cast_native_to_gfloat: {name} must be in [{low}, {high}] for "
                             f"sr_density {density!r}, got {v!r}")
    if float(lo) > float(hi):
        raise ValueError(f"cast_native_to_gfloat: sr_norm_min ({lo!r}) must not exceed "
                         f"sr_norm_max ({hi!r})")


def noise(shape, density, sr_bits, offset, scale, lo, hi, calc_dtype):
    """The float64 noise ``n`` in [0, 1] for a stochastic cast of ``shape`` (a list of ints or
    a shape tensor; module doc),
    resolved down to ``min(sr_bits, mantissa bits of calc_dtype)`` bits."""
    offset, scale, lo, hi = float(offset), float(scale), float(lo), float(hi)
    u = random_ops.uniform(shape, dtype=dtypes.float64)
    if density == "Invalid":
        n = u
    elif density == "Uniform":
        n = math_ops.add(math_ops.multiply(u, hi - lo), lo + 0.5)
    elif density in LOGIT:
        a, b = (_logit(lo) - offset) / scale, (_logit(hi) - offset) / scale
        s = (_truncated_normal(u, a, b, scale / 4) if density == "TruncatedLogitNormal"
             else random_ops.normal(shape, dtype=dtypes.float64))
        n = math_ops.sigmoid(math_ops.add(math_ops.multiply(s, scale), offset))
        n = math_ops.clip_by_value(n, lo, hi)
    else:
        a, b = (lo - offset) / scale, (hi - offset) / scale
        kind = density.replace("Truncated", "")
        if density.startswith("Truncated"):
            s = _truncated(kind, u, a, b, scale)
        elif kind == "Normal":
            s = random_ops.normal(shape, dtype=dtypes.float64)
        else:
            s = _inverse_cdf(kind, u)
        n = math_ops.add(math_ops.multiply(math_ops.clip_by_value(s, a, b), scale),
                         offset + 0.5)
        n = math_ops.clip_by_value(n, lo + 0.5, hi + 0.5)  # rounding of a bound's image
    bits = min(int(sr_bits), 10 if calc_dtype == dtypes.float16 else 23)
    resolution = float(2 ** bits)
    return math_ops.divide(math_ops.floor(math_ops.multiply(n, resolution)), resolution)


def _logit(p: float) -> float:
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return math.log(p) - math.log1p(-p)


def _cdf(kind: str, x: float) -> float:
    """The standard density's CDF at a bound."""
    if kind == "Laplace":
        return 0.5 * math.exp(x) if x < 0 else 1.0 - 0.5 * math.exp(-x)
    if x < 0:  # logistic
        return math.exp(x) / (1.0 + math.exp(x))
    return 1.0 / (1.0 + math.exp(-x))


def _inverse_cdf(kind: str, p):
    """Standard Laplace or logistic values at probabilities ``p`` in [0, 1)."""
    p = math_ops.clip_by_value(p, 1e-300, 1.0 - 2.0 ** -53)  # finite logarithms
    if kind == "Laplace":  # -sign(p - 1/2) log(1 - 2|p - 1/2|)
        left = math_ops.log(math_ops.multiply(p, 2.0))
        right = math_ops.negative(math_ops.log(math_ops.multiply(
            math_ops.subtract(1.0, p), 2.0)))
        return indexing.where(math_ops.less(p, 0.5), left, right)
    return math_ops.subtract(math_ops.log(p), math_ops.log1p(math_ops.negative(p)))


def _truncated(kind: str, u, a: float, b: float, scale: float):
    """Standard ``kind`` values restricted to [a, b], by inverting the CDF at ``u``."""
    if kind == "Normal":
        return _truncated_normal(u, a, b, scale)
    fa, fb = _cdf(kind, a), _cdf(kind, b)
    s = _inverse_cdf(kind, math_ops.add(math_ops.multiply(u, fb - fa), fa))
    return math_ops.clip_by_value(s, a, b)


def _truncated_normal(u, a: float, b: float, slope: float):
    """Standard normal values restricted to [a, b]: the normal CDF inverted at ``u``'s image
    in [Phi(a), Phi(b)] by bisection, on the side of the mean where erfc keeps precision,
    until the noise (changing at most ``slope`` times as fast as the value) is within
    ``2^-_RESOLUTION_BITS``."""
    flip = a + b > 0
    if flip:
        a, b = -b, -a
    a, b = max(a, -_TAIL), min(b, _TAIL)
    fa, fb = _phi(a), _phi(b)
    target = math_ops.add(math_ops.multiply(u, fb - fa), fa)
    low = math_ops.add(math_ops.multiply(u, 0.0), a)
    high = math_ops.add(math_ops.multiply(u, 0.0), b)
    width = (b - a) * max(slope, 1e-300)
    steps = min(64, max(1, math.ceil(math.log2(width)) + _RESOLUTION_BITS)) if width > 0 else 0
    for _ in range(steps):
        mid = math_ops.multiply(math_ops.add(low, high), 0.5)
        below = math_ops.less(_phi_tensor(mid), target)
        low = indexing.where(below, mid, low)
        high = indexing.where(below, high, mid)
    s = math_ops.multiply(math_ops.add(low, high), 0.5)
    return math_ops.negative(s) if flip else s


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _phi_tensor(x):
    return math_ops.multiply(math_ops.erfc(math_ops.multiply(x, -1.0 / math.sqrt(2.0))), 0.5)
