"""lgamma and digamma in float64, element by element with Python's math module: lgamma is
math.lgamma; digamma the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 40 (summed with
fsum), the asymptotic series there and the reflection psi(x) = psi(1 - x) - pi / tan(pi x)
below 0. TF's answers at poles and infinities."""

from __future__ import annotations

import math

import numpy as np


def _lgamma(v):
    if math.isnan(v):
        return math.nan
    if math.isinf(v) or (v <= 0 and v == math.floor(v)):
        return math.inf
    return math.lgamma(v)


_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6)


def _digamma(v):
    if math.isnan(v) or v == -math.inf or (v <= 0 and v == math.floor(v)):
        return math.nan
    if v == math.inf:
        return math.inf
    if v < 0:
        return _digamma(1 - v) - math.pi / math.tan(math.pi * (v - round(v)))
    steps = []
    while v < 40:
        steps.append(1 / v)
        v += 1
    series = [math.log(v), -0.5 / v]
    series += [-b / (2 * k * v ** (2 * k)) for k, b in enumerate(_BERNOULLI, start=1)]
    return math.fsum(series + [-s for s in steps])


def _elementwise(fn, x):
    x = np.asarray(x, np.float64)
    return np.asarray(np.frompyfunc(fn, 1, 1)(x), np.float64).reshape(x.shape)


def lgamma(x):
    return _elementwise(_lgamma, x)


def digamma(x):
    return _elementwise(_digamma, x)
