"""Stochastic rounding's ``sr_density`` noise (``GenericFloat.cast_native_to_gfloat``): each
density's empirical noise CDF against its definition (a Kolmogorov-Smirnov distance with a
bound far beyond sampling error), the probability of rounding up against the noise CDF,
unbiasedness where the density implies it, results always one of the two neighbouring
representable values (a float64 enumerated table), truncation bounds, ``sr_bits``, seeding,
graphs and the errors naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu.ipu.popfloat_cast_to_gfloat import GenericFloat
from ipu_gpu.ops import gfloat_noise
from tests.reference import gfloat as ref

CENTRED = dict(sr_norm_offset=0.1, sr_norm_scale=0.3, sr_norm_min=-0.4, sr_norm_max=0.45)
LOGIT = dict(sr_norm_offset=0.2, sr_norm_scale=0.8, sr_norm_min=0.1, sr_norm_max=0.95)
STOCHASTIC = [d for d in gfloat_noise.DENSITIES if d != "Bernoulli"]


def _params(density):
    return LOGIT if density in gfloat_noise.LOGIT else CENTRED


# ---- the float64 reference: the CDF of the noise n as each density defines it -------------
def _std_cdf(kind, s):
    s = np.asarray(s, np.float64)
    if kind == "Normal":
        return np.array([0.5 * math.erfc(-v / math.sqrt(2.0)) for v in s.ravel()]).reshape(
            s.shape)
    if kind == "Laplace":
        return np.where(s < 0, 0.5 * np.exp(np.minimum(s, 0)), 1 - 0.5 * np.exp(-np.maximum(s, 0)))
    return 1.0 / (1.0 + np.exp(-s))  # logistic


def _noise_cdf(density, t, p):
    """P(n <= t) for the density with parameters ``p``."""
    t = np.asarray(t, np.float64)
    off, scale, lo, hi = (p["sr_norm_offset"], p["sr_norm_scale"], p["sr_norm_min"],
                          p["sr_norm_max"])
    if density == "Invalid":
        return np.clip(t, 0, 1)
    if density == "Uniform":
        return np.clip((t - 0.5 - lo) / (hi - lo), 0, 1)
    if density in gfloat_noise.LOGIT:
        with np.errstate(divide="ignore"):
            z = (np.log(t) - np.log1p(-t) - off) / scale
        if density == "LogitNormal":  # clipped: the mass outside sits on the bounds
            return np.where(t < lo, 0.0, np.where(t >= hi, 1.0, _std_cdf("Normal", z)))
        za, zb = [(math.log(v / (1 - v)) - off) / scale for v in (lo, hi)]
        fa, fb = _std_cdf("Normal", [za, zb])
        return np.clip((_std_cdf("Normal", z) - fa) / (fb - fa), 0, 1)
    kind = density.replace("Truncated", "")
    s = (t - 0.5 - off) / scale
    if density.startswith("Truncated"):
        a, b = (lo - off) / scale, (hi - off) / scale
        if a + b > 0:  # right of the mean: by the survival function, which keeps precision
            sa, sb = _std_cdf(kind, -a), _std_cdf(kind, -b)
            return np.clip((sa - _std_cdf(kind, -s)) / (sa - sb), 0, 1)
        fa, fb = _std_cdf(kind, [a, b])
        return np.clip((_std_cdf(kind, s) - fa) / (fb - fa), 0, 1)
    return np.where(t < lo + 0.5, 0.0, np.where(t >= hi + 0.5, 1.0, _std_cdf(kind, s)))


def _bounds(density, p):
    if density == "Invalid":
        return 0.0, 1.0
    shift = 0.0 if density in gfloat_noise.LOGIT else 0.5
    return p["sr_norm_min"] + shift, p["sr_norm_max"] + shift


# ---- the noise itself ------------------------------------------------------------------------
N = 40000
KS_BOUND = 0.015  # the KS distance exceeds 0.0136 with probability 1e-6 for 40000 samples


@pytest.mark.parametrize("density", STOCHASTIC)
def test_noise_follows_its_definition(density):
    ig.random.set_seed(11)
    p = _params(density)
    g = GenericFloat(12, 8, 127)  # fp32 calculation: the noise keeps 23 bits
    n, prob = g._noise(np.zeros(N, np.float32), "SR", density, 23, p["sr_norm_offset"],
                       p["sr_norm_scale"], p["sr_norm_min"], p["sr_norm_max"], 1.0)
    assert prob is None
    n = np.sort(np.asarray(n, np.float64))
    quantum = 2.0 ** -23  # the noise is resolved down to 23 bits
    exact_lo, exact_hi = _bounds(density, p)
    lo, hi = (np.floor(b / quantum) * quantum for b in (exact_lo, exact_hi))
    assert n[0] >= lo and n[-1] <= hi  # truncation / clipping bounds respected
    grid = np.linspace(exact_lo, exact_hi - 2.0 ** -20, 401)
    empirical = np.searchsorted(n, grid + quantum, side="right") / N
    ks = np.max(np.abs(empirical - _noise_cdf(density, grid, p)))
    assert ks < KS_BOUND, ks
    if density.startswith("Truncated") or density in ("Invalid", "Uniform"):
        assert np.mean(n == lo) < 1e-3 and np.mean(n == hi) < 1e-3  # no mass on the bounds
    elif density != "LogitNormal":  # clipped: the tails' mass sits on the bounds
        assert abs(np.mean(n == lo) - _noise_cdf(density, exact_lo, p)) < 0.01
        assert abs(np.mean(n == hi) - (1 - _noise_cdf(density, exact_hi - 1e-9, p))) < 0.01


def test_sr_bits_resolve_the_noise_down():
    ig.random.set_seed(5)
    g = GenericFloat(12, 8, 127)
    n, _ = g._noise(np.zeros(4000, np.float32), "SR", "Laplace", 3, 0.0, 0.2, -0.5, 0.5, 1.0)
    n = np.asarray(n, np.float64)
    np.testing.assert_array_equal(n * 8, np.floor(n * 8))
    assert len(np.unique(n)) == 9  # 0, 1/8, ..., 1 (the clipped upper tail is exactly 1)
    half = GenericFloat(4, 5, 15)  # fp16 calculation: at most 10 noise bits
    n, _ = half._noise(np.zeros(4000, np.float16), "SR", "Uniform", 23, 0.0, 1.0, -0.5, 0.5,
                       1.0)
    n = np.asarray(n, np.float64)
    np.testing.assert_array_equal(n * 1024, np.floor(n * 1024))
    assert len(np.unique(n)) > 900


# ---- the casts -------------------------------------------------------------------------------
FRACTIONS = np.array([0.125, 0.375, 0.625, 0.875])


def _cast(g, x, density, **kw):
    out = g.cast_native_to_gfloat(x, round_mode="SR", sr_density=density, **kw)
    return np.asarray(g.cast_gfloat_to_native(out), np.float64)


@pytest.mark.parametrize("density", STOCHASTIC + ["Bernoulli"])
def test_probability_of_rounding_up_follows_the_noise(density):
    ig.random.set_seed(2)
    g = GenericFloat(3, 4, 7, calc_type="fp32")  # steps of 1/8 in [1, 2)
    per = 8000
    x = np.repeat(1.0 + FRACTIONS / 8, per).astype(np.float32)
    kw = dict(sr_prob=0.3) if density == "Bernoulli" else _params(density)
    out = _cast(g, x, density, **kw).reshape(len(FRACTIONS), per)
    lower = 1.0 + 0.0 * FRACTIONS
    assert np.isin(out, [1.0, 1.125]).all()
    up = (out > lower[:, None]).mean(axis=1)
    # up when frac + n >= 1; the noise is continuous at 1 - frac for these parameters
    want = (np.full(len(FRACTIONS), 0.7) if density == "Bernoulli"
            else 1.0 - _noise_cdf(density, 1.0 - FRACTIONS, kw))
    np.testing.assert_allclose(up, want, atol=0.03)  # 5 binomial standard deviations


@pytest.mark.parametrize("density, kw", [
    ("Invalid", {}), ("Uniform", {}),
    ("Normal", dict(sr_norm_scale=0.2)), ("Laplace", dict(sr_norm_scale=0.2)),
    ("Logistic", dict(sr_norm_scale=0.2)), ("TruncatedNormal", dict(sr_norm_scale=0.4)),
    ("TruncatedLaplace", {}), ("TruncatedLogistic", {}),
    ("LogitNormal", dict(sr_norm_min=0.0, sr_norm_max=1.0)),
    ("TruncatedLogitNormal", dict(sr_norm_min=0.0, sr_norm_max=1.0, sr_norm_scale=2.0))])
def test_unbiased_where_the_density_implies_it(density, kw):
    """Uniform noise over [0, 1) is unbiased for every input; a density symmetric about 1/2
    is unbiased for inputs halfway between two values."""
    ig.random.set_seed(7)
    g = GenericFloat(2, 5, 15)
    half = np.full(20000, 1.125, np.float16)  # halfway between 1.0 and 1.25
    assert abs(_cast(g, half, density, **kw).mean() - 1.125) < 0.005  # 5.7 sd
    if density in ("Invalid", "Uniform"):
        rng = np.random.default_rng(0)
        x = (1.0 + rng.uniform(0, 1, 20000)).astype(np.float16)
        err = _cast(g, x, density, **kw) - x.astype(np.float64)
        assert abs(err.mean()) < 0.003  # per-value error sd <= 0.125; 0.003 is 3.4 sd


@pytest.mark.parametrize("density", STOCHASTIC + ["Bernoulli"])
@pytest.mark.parametrize("man, exp, bias, en_denorm, calc", [
    (3, 4, 7, True, "fp32"), (2, 5, 15, False, "auto"), (9, 6, 31, True, "auto")])
def test_always_one_of_the_two_neighbours(density, man, exp, bias, en_denorm, calc):
    ig.random.set_seed(4)
    g = GenericFloat(man, exp, bias, en_denorm=en_denorm, calc_type=calc)
    values, _ = ref.representable(man, exp, bias, en_denorm, True)
    native = np.float16 if g.get_gfloat_calc_dtype() == ig.float16 else np.float32
    rng = np.random.default_rng(1)
    x = rng.standard_normal(3000) * np.exp2(rng.integers(1 - bias - man, 4, 3000))
    x = np.concatenate([x, values[1:200], -values[1:200]]).astype(native)
    x = x[np.abs(x.astype(np.float64)) < values[-1]]
    if density == "Bernoulli":
        kw = dict(sr_prob=0.4)
    elif density in gfloat_noise.LOGIT:
        kw = dict(sr_norm_min=0.0, sr_norm_max=1.0, sr_norm_scale=3.0)
    else:  # wide enough that the noise is often exactly 0 or 1
        kw = dict(sr_norm_scale=5.0)
    out = _cast(g, x, density, **kw)
    a = np.abs(x.astype(np.float64))
    j = np.searchsorted(values, a, side="right") - 1  # values[j] <= |x| < values[j + 1]
    exact = values[j] == a
    down = np.copysign(values[j], x)
    up = np.copysign(np.where(exact, values[j], values[np.minimum(j + 1, len(values) - 1)]), x)
    assert ((out == down) | (out == up)).all()
    np.testing.assert_array_equal(out[exact], x[exact].astype(np.float64))  # never moved
    assert (out != down).any() and (out != up).any()  # both neighbours occur


def test_seeded_and_drawn_afresh_each_call_and_in_graphs():
    g = GenericFloat(2, 5, 15)
    x = np.full(2000, 1.1, np.float16)
    kw = dict(round_mode="SR", sr_density="TruncatedLaplace", sr_norm_scale=0.3)
    ig.random.set_seed(9)
    a, b = (np.asarray(g.cast_native_to_gfloat(x, **kw)) for _ in range(2))
    ig.random.set_seed(9)
    np.testing.assert_array_equal(np.asarray(g.cast_native_to_gfloat(x, **kw)), a)
    assert (a != b).any()
    g = GenericFloat(4, 5, 15)  # stored as float16: 1.1 lies between 1.0625 and 1.125
    with v1.Graph().as_default():
        v1.set_random_seed(3)
        p = v1.placeholder(np.float16, [None])  # the noise takes the fed shape
        out = g.cast_native_to_gfloat(p, round_mode="SR", sr_density="TruncatedNormal",
                                      sr_norm_scale=0.5)
        with v1.Session() as sess:
            r1, r2 = sess.run(out, {p: x}), sess.run(out, {p: x})
    assert set(np.unique(r1)) == {1.0625, 1.125} and (r1 != r2).any()


@pytest.mark.parametrize("density, kw, match", [
    ("Gaussian", {}, "sr_density must be one of .*Laplace.* got 'Gaussian'"),
    ("Uniform", dict(sr_bits=-1), "sr_bits must be a non-negative integer, got -1"),
    ("Bernoulli", dict(sr_prob=1.5), r"sr_prob must be in \[0, 1\], got 1.5"),
    ("Normal", dict(sr_norm_scale=0.0), "sr_norm_scale must be positive"),
    ("TruncatedNormal", dict(sr_norm_offset=float("nan")), "sr_norm_offset must be finite"),
    ("Laplace", dict(sr_norm_min=-0.7), r"sr_norm_min must be in \[-0.5, 0.5\] for "
                                        "sr_density 'Laplace', got -0.7"),
    ("TruncatedLogistic", dict(sr_norm_max=0.6), r"sr_norm_max must be in \[-0.5, 0.5\]"),
    ("LogitNormal", {}, r"sr_norm_min must be in \[0.0, 1.0\] for sr_density 'LogitNormal'"),
    ("Uniform", dict(sr_norm_min=0.3, sr_norm_max=0.1),
     r"sr_norm_min \(0.3\) must not exceed sr_norm_max \(0.1\)")])
def test_bad_parameters_name_the_argument(density, kw, match):
    g = GenericFloat(4, 5, 15)
    with pytest.raises(ValueError, match=match):
        g.cast_native_to_gfloat(np.ones(2, np.float16), round_mode="SR", sr_density=density,
                                **kw)


def test_deterministic_modes_ignore_the_noise_parameters():
    g = GenericFloat(4, 5, 15)
    x = np.array([1.03, -2.2], np.float16)
    want = np.asarray(g.cast_native_to_gfloat(x))
    got = g.cast_native_to_gfloat(x, sr_density="LogitNormal", sr_bits=-3, sr_norm_scale=-1.0)
    np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(ValueError, match="sr_density must be one of"):
        g.cast_native_to_gfloat(x, sr_density="uniform")


@pytest.mark.parametrize("density", ["TruncatedNormal", "TruncatedLogitNormal", "Laplace"])
def test_equal_bounds_give_constant_noise(density):
    ig.random.set_seed(1)
    g = GenericFloat(12, 8, 127)
    lo_hi = 0.3 if density in gfloat_noise.LOGIT else -0.2
    n, _ = g._noise(np.zeros(500, np.float32), "SR", density, 23, 0.05, 0.5, lo_hi, lo_hi, 1.0)
    n = np.asarray(n, np.float64)
    want = lo_hi if density in gfloat_noise.LOGIT else lo_hi + 0.5
    np.testing.assert_allclose(n, want, atol=2.0 ** -22)


def test_stochastic_gradient_passes_straight_through():
    ig.random.set_seed(0)
    g = GenericFloat(3, 4, 7, calc_type="fp32")
    x = ig.Variable(np.linspace(-3, 3, 64).astype(np.float32))
    with ig.GradientTape() as tape:
        y = g.cast_native_to_gfloat(x, round_mode="SR", sr_density="TruncatedLaplace",
                                    storage_type="fp32")
        loss = ig.reduce_sum(y * np.arange(64, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(tape.gradient(loss, x)),
                                  np.arange(64, dtype=np.float32))


@pytest.mark.parametrize("offset", [6.0, -6.0])
def test_truncated_normal_deep_in_a_tail(offset):
    """The window [-0.5, 0.5] lies 11 to 13 standard deviations from the mean: the noise
    still follows the truncated density (piled towards the bound nearer the mean)."""
    ig.random.set_seed(8)
    p = dict(sr_norm_offset=offset, sr_norm_scale=0.5, sr_norm_min=-0.5, sr_norm_max=0.5)
    g = GenericFloat(12, 8, 127)
    n, _ = g._noise(np.zeros(N, np.float32), "SR", "TruncatedNormal", 23, offset, 0.5, -0.5,
                    0.5, 1.0)
    n = np.sort(np.asarray(n, np.float64))
    assert n[0] >= 0.0 and n[-1] <= 1.0
    grid = np.linspace(0.0, 1.0 - 2.0 ** -20, 401)
    empirical = np.searchsorted(n, grid + 2.0 ** -23, side="right") / N
    assert np.max(np.abs(empirical - _noise_cdf("TruncatedNormal", grid, p))) < KS_BOUND
    assert (np.median(n) > 0.9) if offset > 0 else (np.median(n) < 0.1)
