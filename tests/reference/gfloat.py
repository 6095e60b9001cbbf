"""numpy float64 reference for generic float formats: every representable value of a format
enumerated from its codes, and rounding by search in that sorted table."""

from __future__ import annotations

import numpy as np


def representable(man, exp, bias, en_denorm, en_inf):
    """The sorted non-negative finite values of the format, and their codes (biased exponent
    and mantissa fields together, so an even code has an even last mantissa bit)."""
    values, codes = [0.0], [0]
    top = (1 << exp) - 1 - (1 if en_inf else 0)
    for biased in range(0, top + 1):
        for m in range(1 << man):
            if biased == 0:
                if en_denorm and m:
                    values.append(m / (1 << man) * 2.0 ** (1 - bias))
                    codes.append(m)
            else:
                values.append((1 + m / (1 << man)) * 2.0 ** (biased - bias))
                codes.append((biased << man) | m)
    order = np.argsort(values)
    return np.array(values)[order], np.array(codes)[order]


def round_to(x, table, mode):
    """``x`` rounded to the values of ``table`` (``representable``'s pair; magnitudes, signs
    kept) by ``mode``: RZ, RN (ties to the even code; the lower value when both codes are
    even: 0 and the smallest normal without denormals), RA, RU, RD. Values above the largest
    become +-inf (the caller decides what overflow gives)."""
    table, codes = table
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    for i, v in enumerate(x.ravel()):
        a = abs(v)
        j = np.searchsorted(table, a, side="right") - 1  # table[j] <= a
        lo = table[j]
        hi = table[j + 1] if j + 1 < len(table) else np.inf
        if a == lo:
            r = lo
        else:
            up = {"RZ": False, "RU": v > 0, "RD": v < 0,
                  "RN": a - lo > hi - a or (a - lo == hi - a and codes[j] % 2 == 1),
                  "RA": a - lo >= hi - a}[mode]
            r = hi if up else lo
        out.ravel()[i] = np.copysign(r, v)
    return out
