"""``ipu.popfloat_cast_to_gfloat.GenericFloat``: rounding onto generic float formats against
an enumerated-table float64 reference (every rounding mode, denormals on and off, Inf on and
off), ml_dtypes' bfloat16 / float8 types and numpy's float16 (values and packed codes),
overflow, NaN/Inf, stochastic rounding statistics, straight-through gradients, TF1 graphs, the
format choice and Graphcore's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import ipu
from ipu_gpu.ipu.popfloat_cast_to_gfloat import GenericFloat
from tests.reference import gfloat as ref


def _inputs(limit, n=3000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * np.exp2(rng.integers(-14, 8, n))
    return x[np.abs(x) < limit]


@pytest.mark.parametrize("man, exp, bias, en_denorm, en_inf", [
    (3, 4, 7, True, True), (3, 4, 7, False, True), (2, 5, 15, True, False),
    (4, 3, 3, False, False), (1, 6, 31, True, True), (7, 8, 127, True, True),
    (9, 6, 40, False, True)])
@pytest.mark.parametrize("mode", ["RZ", "RN", "RA", "RU", "RD"])
def test_rounding_matches_the_enumerated_reference(man, exp, bias, en_denorm, en_inf, mode):
    g = GenericFloat(man, exp, bias, en_denorm=en_denorm, en_inf=en_inf)
    table, codes = ref.representable(man, exp, bias, en_denorm, en_inf)
    calc = np.float16 if g.get_gfloat_calc_dtype() == ig.float16 else np.float32
    x = _inputs(table[-1]).astype(calc)
    x = np.concatenate([x, table[1:40].astype(calc), (table[1:40] + table[2:41]) / 2])
    x = x.astype(calc)
    out = g.cast_native_to_gfloat(x, round_mode=mode, en_nanoo=en_inf)
    got = np.asarray(g.cast_gfloat_to_native(out), np.float64)
    want = ref.round_to(x.astype(np.float64), (table, codes), mode)
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[finite], want[finite])
    over = ~finite  # rounded past the largest value
    assert np.isnan(got[over]).all() if en_inf else (np.abs(got[over]) == table[-1]).all()


@pytest.mark.parametrize("man, exp, bias, dtype_name", [
    (7, 8, 127, "bfloat16"), (2, 5, 15, "float8_e5m2"), (3, 4, 7, "float8_e4m3")])
def test_codes_and_values_match_ml_dtypes(man, exp, bias, dtype_name):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    t = getattr(ml_dtypes, dtype_name)
    g = GenericFloat(man, exp, bias)
    assert g.is_packed_float()
    calc = np.float16 if g.get_gfloat_calc_dtype() == ig.float16 else np.float32
    x = _inputs(float(ml_dtypes.finfo(t).max) * 0.9).astype(calc)
    x = np.concatenate([x, [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(calc)
    codes = np.asarray(g.cast_native_to_gfloat(x))
    want = x.astype(t)
    unsigned = np.uint16 if codes.dtype == np.int16 else np.uint8
    finite = np.isfinite(x)
    np.testing.assert_array_equal(codes.view(unsigned)[finite], want.view(unsigned)[finite])
    back = np.asarray(g.cast_gfloat_to_native(codes), np.float64)
    np.testing.assert_array_equal(back[:-1], want.astype(np.float64)[:-1])
    assert np.isnan(back[-1])


def test_ieee_half_is_numpys_float16():
    g = GenericFloat(10, 5, 15)
    x = _inputs(60000).astype(np.float32)
    out = g.cast_native_to_gfloat(x)
    assert out.dtype == np.float16 and not g.is_packed_float()
    np.testing.assert_array_equal(np.asarray(out), x.astype(np.float16))
    assert g.cast_gfloat_to_native(out) is out


def test_overflow_nan_inf_inputs():
    g = GenericFloat(2, 5, 15)  # largest 57344, next binade 65536; 60000 rounds down
    x = np.array([62000.0, -65000.0, np.nan, np.inf, -np.inf, 60000.0], np.float16)
    out = np.asarray(g.cast_gfloat_to_native(g.cast_native_to_gfloat(x)), np.float64)
    assert np.isnan(out[:3]).all() and out[3] == np.inf and out[4] == -np.inf
    assert out[5] == 57344.0
    clipped = np.asarray(g.cast_gfloat_to_native(g.cast_native_to_gfloat(x, en_nanoo=False)))
    np.testing.assert_array_equal(clipped[:2], [57344.0, -57344.0])
    no_inf = GenericFloat(2, 5, 15, en_inf=False)  # the all-ones exponent holds values
    out = np.asarray(no_inf.cast_gfloat_to_native(no_inf.cast_native_to_gfloat(
        x, en_nanoo=False), storage_type="fp32"), np.float64)
    np.testing.assert_array_equal(out, [65536.0, -65536.0, 0, 0, 0, 57344.0])
    with pytest.raises(RuntimeWarning, match="Infs and Nans are not enabled"):
        no_inf.cast_native_to_gfloat(x)


def test_stochastic_rounding_is_unbiased_and_bernoulli_follows_sr_prob():
    ig.random.set_seed(3)
    g = GenericFloat(2, 5, 15)
    x = np.full(40000, 1.1, np.float16)  # between 1.0 and 1.25
    out = np.asarray(g.cast_gfloat_to_native(g.cast_native_to_gfloat(x, round_mode="SR")),
                     np.float64)
    assert set(np.unique(out)) == {1.0, 1.25}
    assert abs(out.mean() - float(np.float16(1.1))) < 0.005
    out_sx = np.asarray(g.cast_gfloat_to_native(g.cast_native_to_gfloat(
        x, round_mode="SX", sr_bits=2)), np.float64)
    assert set(np.unique(out_sx)) <= {1.0, 1.25}
    down = g.cast_native_to_gfloat(x, round_mode="SR", sr_density="Bernoulli", sr_prob=1.0)
    up = g.cast_native_to_gfloat(x, round_mode="SR", sr_density="Bernoulli", sr_prob=0.0)
    assert (np.asarray(g.cast_gfloat_to_native(down)) == 1.0).all()
    assert (np.asarray(g.cast_gfloat_to_native(up)) == 1.25).all()
    normal = np.asarray(g.cast_gfloat_to_native(g.cast_native_to_gfloat(
        x, round_mode="SR", sr_density="Normal", sr_norm_scale=0.2)), np.float64)
    assert set(np.unique(normal)) == {1.0, 1.25}
    exact = np.asarray(g.cast_native_to_gfloat(np.full(100, 1.25, np.float16),
                                               round_mode="SR"))
    assert len(np.unique(exact)) == 1  # representable values never move


def test_gradient_passes_straight_through_and_graphs_work():
    g = GenericFloat(3, 4, 7, calc_type="fp32")
    x = ig.Variable(np.array([0.3, -1.7, 2.2], np.float32))
    with ig.GradientTape() as tape:
        y = g.cast_native_to_gfloat(x, storage_type="fp32")
        loss = ig.reduce_sum(y * y)
    assert y.dtype == np.float32
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, x)), 2 * np.asarray(y))
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32, [3])
        codes = ipu.popfloat_cast_to_gfloat.GenericFloat(3, 4, 7).cast_native_to_gfloat(p)
        back = g.cast_gfloat_to_native(codes, storage_type="fp32")
        with v1.Session() as sess:
            got = sess.run(back, {p: [0.3, -1.7, 2.2]})
    np.testing.assert_array_equal(got, np.asarray(y))


def test_format_choice_as_graphcores():
    cases = [((10, 5, 15), "ieeeFp16", ig.float16, ig.float16, ig.float32, False),
             ((7, 8, 127), "bfloat16", ig.int16, ig.float32, ig.float32, True),
             ((4, 5, 15), "quantisedFp16", ig.float16, ig.float16, ig.float16, False),
             ((2, 5, 15), "oneFiveTwoGf8", ig.int8, ig.float16, ig.float16, True),
             ((3, 4, 7), "minNormAlignGf8", ig.int8, ig.float16, ig.float16, True),
             ((12, 8, 127), "quantisedFp32", ig.float32, ig.float32, ig.float32, False),
             ((9, 6, 31), "enDenormGf16", ig.int16, ig.float32, ig.float32, True)]
    for (man, exp, bias), fmt, storage, native, calc, packed in cases:
        g = GenericFloat(man, exp, bias)
        assert (g._format, g.get_gfloat_storage_dtype(), g.get_gfloat_native_dtype(),
                g.get_gfloat_calc_dtype(), g.is_packed_float()) == (fmt, storage, native, calc,
                                                                    packed), (man, exp)
    g = GenericFloat(9, 6, 31, en_denorm=False)
    assert g._format == "noDenormGf16"
    assert GenericFloat(2, 5, 15, en_inf=False)._format == "maxNormAlignGf8"
    assert g.get_gfloat_packed_params() == 9 | 6 << 8 | 31 << 16 | 2 << 24
    assert (g.get_mantissa_size(), g.get_exponent_size(), g.get_exponent_bias(),
            g.get_en_denorms(), g.get_en_inf()) == (9, 6, 31, False, True)


def test_errors():
    with pytest.raises(RuntimeError, match="cannot be generated using IEEE FP16"):
        GenericFloat(12, 8, 127, calc_type="fp16")
    with pytest.raises(RuntimeError, match="calculation type not supported"):
        GenericFloat(4, 5, 15, calc_type="fp64")
    g = GenericFloat(4, 5, 15)
    with pytest.raises(RuntimeError, match="storage format not supported"):
        g.cast_native_to_gfloat(np.ones(2, np.float16), storage_type="int4")
    with pytest.raises(ValueError, match="round_mode must be one of"):
        g.cast_native_to_gfloat(np.ones(2, np.float16), round_mode="RX")
    with pytest.raises(ValueError, match="sr_density must be one of .* got 'Gaussian'"):
        g.cast_native_to_gfloat(np.ones(2, np.float16), sr_density="Gaussian")
    with pytest.raises(ValueError, match="exp must be in"):
        GenericFloat(3, 0, 0)
