"""Random numbers from their definitions, with Python integers: Philox4x32-10 (Salmon et al.,
SC 2011) one block at a time, TF's uniform-from-bits conversions, TF's dropout, and the
distributions' CDFs for the goodness-of-fit tests. Slow and simple on purpose."""

from __future__ import annotations

import math

import numpy as np

M = (0xD2511F53, 0xCD9E8D57)
W = (0x9E3779B9, 0xBB67AE85)
MASK32 = 0xFFFFFFFF


def philox_block(counter: int, key: tuple) -> list:
    """The four 32-bit words of Philox4x32-10 for a 128-bit ``counter`` and key (k0, k1)."""
    c = [(counter >> (32 * i)) & MASK32 for i in range(4)]
    k0, k1 = key
    for _ in range(10):
        p0, p1 = M[0] * c[0], M[1] * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & MASK32, (p0 >> 32) ^ c[3] ^ k1, p0 & MASK32]
        k0, k1 = (k0 + W[0]) & MASK32, (k1 + W[1]) & MASK32
    return c


def stream(key: tuple, counter: int, words: int) -> list:
    """The first ``words`` words from ``counter`` on, block after block (mod 2**128)."""
    out = []
    while len(out) < words:
        out += philox_block(counter & (2**128 - 1), key)
        counter += 1
    return out[:words]


def tf_seed_key_counter(seed: int, seed2: int):
    """A stateful TF kernel's Philox key and first counter for its (seed, seed2) attributes."""
    return (seed & MASK32, (seed >> 32) & MASK32), (seed2 & (2**64 - 1)) << 64


def uniform_float32(word: int) -> float:
    """TF's Uint32ToFloat: the low 23 bits as a fraction in [0, 1)."""
    return (word & 0x7FFFFF) / 2.0**23


def uniform_float64(w0: int, w1: int) -> float:
    """TF's Uint64ToDouble: 20 bits of w0 and all of w1 as a fraction in [0, 1)."""
    return ((w0 & 0xFFFFF) << 32 | w1) / 2.0**52


def dropout(x, keep, rate):
    """``x / (1 - rate)`` where ``keep``, else 0 (keep broadcasts against x)."""
    x = np.asarray(x, np.float64)
    return np.where(keep, x * (1.0 / (1.0 - rate)), 0.0)


def normal_cdf(z):
    return 0.5 * (1.0 + np.vectorize(math.erf)(np.asarray(z, np.float64) / math.sqrt(2.0)))


def truncated_normal_cdf(z):
    """CDF of the standard normal truncated to (-2, 2)."""
    lo, hi = normal_cdf(-2.0), normal_cdf(2.0)
    return np.clip((normal_cdf(z) - lo) / (hi - lo), 0.0, 1.0)


TRUNCATED_NORMAL_VARIANCE = 1.0 - 4.0 * math.exp(-2.0) / (
    math.sqrt(2.0 * math.pi) * (normal_cdf(2.0) - normal_cdf(-2.0)))


def ks_statistic(samples, cdf) -> float:
    """Kolmogorov-Smirnov D = sup |F_n - F| for continuous ``cdf``."""
    x = np.sort(np.asarray(samples, np.float64))
    n = x.size
    f = cdf(x)
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - f), np.max(f - (i - 1) / n)))


def chi_square(counts, expected) -> float:
    counts = np.asarray(counts, np.float64)
    expected = np.asarray(expected, np.float64)
    return float(np.sum((counts - expected) ** 2 / expected))
