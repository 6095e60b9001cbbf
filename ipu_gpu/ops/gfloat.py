"""Generic floating-point formats (PopFloat's gfloat): rounding values onto the grid of a
float with ``man`` mantissa bits, ``exp`` exponent bits and exponent ``bias``, and packing
them into integers.

The grid: normal values ``(1 + m / 2^man) * 2^e`` for ``1 - bias <= e <= max_e`` with
``max_e = 2^exp - 1 - bias`` (one less when the all-ones exponent is kept for Inf/NaN),
denormals ``m * 2^(1 - bias - man)`` when enabled (else only 0 below ``2^(1 - bias)``).
Rounding modes: RZ (toward zero), RN (nearest, ties to even), RA (nearest, ties away), RU
(toward +inf), RD (toward -inf), SR / SX (stochastic: a value with a dropped fraction ``f >
0`` of the step rounds up when ``f + n >= 1`` for its noise ``n`` in [0, 1], which
``gfloat_noise`` draws; a Bernoulli density rounds down with probability ``sr_prob``).
Overflow gives NaN when Inf/NaN are enabled and ``en_nanoo`` is set, else the largest value
of that sign; NaN and Inf inputs stay NaN and Inf, or become 0 when the format has no
Inf/NaN. The gradient of both casts passes straight through, as
Graphcore registers it.

Packed layout (``pack``): sign, exponent field, mantissa field from the high bit of the
``1 + exp + man`` used bits; Inf is the all-ones exponent with mantissa 0, NaN with all-ones
mantissa.
"""

from __future__ import annotations

import numpy as np

from ..core.registry import register
from ._util import quiet

ROUND_MODES = ("RZ", "RN", "RA", "RU", "RD", "SR", "SX")


class Format:
    """A gfloat format's numbers (mantissa bits, exponent bits, bias, denormals, Inf/NaN)."""

    def __init__(self, man: int, exp: int, bias: int, en_denorm: bool, en_inf: bool):
        self.man, self.exp, self.bias = int(man), int(exp), int(bias)
        self.en_denorm, self.en_inf = bool(en_denorm), bool(en_inf) and exp > 0
        self.min_e = 1 - self.bias
        self.max_e = (1 << self.exp) - 1 - (1 if self.en_inf else 0) - self.bias
        self.max_value = (2.0 - 2.0 ** -self.man) * 2.0 ** self.max_e
        self.min_normal = 2.0 ** self.min_e

    def key(self) -> tuple:
        return self.man, self.exp, self.bias, self.en_denorm, self.en_inf

    def __eq__(self, other) -> bool:
        return isinstance(other, Format) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return "Format(man={}, exp={}, bias={}, en_denorm={}, en_inf={})".format(*self.key())


def _round(xp, q, mode, positive, noise, sr_prob):
    """``q`` (non-negative multiples of the step, as floats) rounded to integers."""
    lo = xp.floor(q)
    if mode == "RZ":
        return lo
    if mode == "RN":
        return xp.rint(q)
    if mode == "RA":
        return xp.floor(q + 0.5)
    if mode in ("RU", "RD"):
        up = positive if mode == "RU" else ~positive
        return xp.where(up, xp.ceil(q), lo)
    frac = q - lo
    if noise is None:
        raise ValueError("gfloat: stochastic rounding needs noise")
    if sr_prob is not None:  # Bernoulli: round down with probability sr_prob
        return lo + ((frac > 0) & (noise >= sr_prob))
    return lo + ((frac > 0) & (frac + noise >= 1.0))


def quantise(xp, x, fmt: Format, mode: str, en_nanoo: bool, noise=None, sr_prob=None):
    """``x`` rounded onto ``fmt``'s grid, as float64."""
    a = xp.asarray(x, dtype=np.float64)
    mag = xp.abs(a)
    positive = ~xp.signbit(a)
    finite = xp.isfinite(a)
    safe = xp.where(finite & (mag > 0), mag, 1.0)
    _, k = xp.frexp(safe)
    e = xp.maximum(k.astype(np.float64) - 1.0, float(fmt.min_e))
    step = xp.exp2(e - fmt.man)
    y = _round(xp, xp.where(finite, mag, 0.0) / step, mode, positive, noise, sr_prob) * step
    if not fmt.en_denorm:  # below the smallest normal only 0 and the smallest normal exist
        tiny = mag < fmt.min_normal
        q = xp.where(tiny, mag, 0.0) / fmt.min_normal
        below = _round(xp, q, mode, positive, noise, sr_prob) * fmt.min_normal
        y = xp.where(tiny, below, y)
    over = y > fmt.max_value
    y = xp.where(over, np.nan if (fmt.en_inf and en_nanoo) else fmt.max_value, y)
    if fmt.en_inf:
        y = xp.where(finite, y, mag)
    else:
        y = xp.where(finite, y, 0.0)
    return xp.where(positive | xp.isnan(a), y, -y)


def pack(xp, y, fmt: Format, dtype):
    """Quantised values ``y`` (float64) as the integer codes of ``fmt`` in ``dtype``."""
    mag = xp.abs(y)
    sign = (xp.signbit(y) & ~xp.isnan(y)).astype(np.int64)
    safe = xp.where(xp.isfinite(mag) & (mag > 0), mag, 1.0)
    _, k = xp.frexp(safe)
    e = k.astype(np.int64) - 1
    normal = mag >= fmt.min_normal
    biased = xp.where(normal, e + fmt.bias, 0)
    mant = xp.where(normal, safe / xp.exp2(e.astype(np.float64)) - 1.0,
                    mag / fmt.min_normal) * (1 << fmt.man)
    mant = xp.rint(xp.where(xp.isfinite(mag), mant, 0.0)).astype(np.int64)
    top = (1 << fmt.exp) - 1
    biased = xp.where(xp.isfinite(mag), biased, top)
    mant = xp.where(xp.isnan(mag), (1 << fmt.man) - 1, mant)
    width = 1 + fmt.exp + fmt.man
    code = (sign << (width - 1)) | (biased << fmt.man) | mant
    bits = np.dtype(dtype).itemsize * 8
    code = xp.where(code >= (1 << (bits - 1)), code - (1 << bits), code)  # two's complement
    return code.astype(dtype)


def unpack(xp, code, fmt: Format):
    """The values (float64) of ``fmt``'s integer codes."""
    width = 1 + fmt.exp + fmt.man
    c = xp.asarray(code).astype(np.int64) & ((1 << width) - 1)
    sign = (c >> (width - 1)) & 1
    biased = (c >> fmt.man) & ((1 << fmt.exp) - 1)
    mant = (c & ((1 << fmt.man) - 1)).astype(np.float64)
    frac = mant / (1 << fmt.man)
    value = xp.where(biased == 0, frac * fmt.min_normal,
                     (1.0 + frac) * xp.exp2((biased - fmt.bias).astype(np.float64)))
    if fmt.en_inf:
        top = biased == (1 << fmt.exp) - 1
        value = xp.where(top & (mant == 0), np.inf, value)
        value = xp.where(top & (mant != 0), np.nan, value)
    return xp.where(sign == 1, -value, value)


# ---- the registered casts -------------------------------------------------------------------
def _check_to(x, noise, *, fmt, mode, en_nanoo, sr_prob, out_dtype):
    if x.dtype not in (np.float16, np.float32):
        raise TypeError(f"cast_native_to_gfloat: input must be float16 or float32, got "
                        f"{x.dtype}")


def _to_forward(k, xp, x, noise, *, fmt, mode, en_nanoo, sr_prob, out_dtype):
    n = None if noise.size == 0 else noise.astype(np.float64)
    y = quantise(xp, x, fmt, mode, en_nanoo, n, sr_prob)
    out_dtype = np.dtype(out_dtype)
    with quiet(xp):
        out = pack(xp, y, fmt, out_dtype) if out_dtype.kind == "i" else y.astype(out_dtype)
    return out, x.dtype


def _straight_through(k, xp, dtype, g, **static):
    return g.astype(dtype), None


_TO = register("cast_native_to_gfloat", args=("input", "noise"), check=_check_to,
               forward=_to_forward, backward=_straight_through)


def _check_from(code, *, fmt, out_dtype):
    if code.dtype.kind not in "iu":
        raise TypeError(f"cast_gfloat_to_native: input must be packed integer codes, got "
                        f"{code.dtype}")


def _from_forward(k, xp, code, *, fmt, out_dtype):
    with quiet(xp):  # a format wider than float16 overflows to inf there, as a cast does
        return unpack(xp, code, fmt).astype(np.dtype(out_dtype)), code.dtype


def _from_backward(k, xp, dtype, g, **static):
    return (g.astype(dtype),)


_FROM = register("cast_gfloat_to_native", args=("input",), check=_check_from,
                 forward=_from_forward, backward=_from_backward)


def cast_to_gfloat(x, noise, fmt: Format, mode: str, en_nanoo: bool, sr_prob, out_dtype):
    """``x`` rounded onto ``fmt`` and stored as ``out_dtype`` (a float, or an integer type
    holding packed codes); ``noise`` (empty unless stochastic) in [0, 1)."""
    return _TO(x, noise, fmt=fmt, mode=mode, en_nanoo=en_nanoo, sr_prob=sr_prob,
               out_dtype=np.dtype(out_dtype).name)


def cast_from_gfloat(code, fmt: Format, out_dtype):
    """Packed ``fmt`` codes as ``out_dtype`` values."""
    return _FROM(code, fmt=fmt, out_dtype=np.dtype(out_dtype).name)
