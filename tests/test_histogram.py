"""Statistics ops (ipu.statistics_ops): histogram, histogram_update, fixed_width_bins,
histogram_normalize. Against the float64 reference, np.histogram, searchsorted, torch and
TensorFlow; the CPU kernel's grid search on adversarial levels; the GPU twin through the CUDA
emulator; properties; Graphcore's documented cases. Error inputs are rows of
tests/opdb_histogram.py."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cuda_emulator import compiler_available, install_fake_cupy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference import histogram as ref

import ipu_gpu
from ipu_gpu.ipu import statistics_ops
from ipu_gpu.kernels import histogram_cpu

needs_gxx = pytest.mark.skipif(not compiler_available(), reason="no g++")
F16, F32 = np.float16, np.float32


def _hist(x, levels, absolute=False):
    out = statistics_ops.histogram(x, levels, absolute_of_input=absolute)
    assert out.dtype == np.float32 and tuple(out.shape) == (len(levels) + 1,)
    return out.numpy()


def _kernel(x, levels, absolute=False, out=None, accumulate=False):
    out = np.zeros(len(levels) + 1, np.float32) if out is None else out
    return histogram_cpu.histogram_fwd(np.ascontiguousarray(x), np.ascontiguousarray(levels),
                                       absolute, out, accumulate)


def _on_levels(rng, levels, n, dtype):
    """n values, a third of them exactly on a level, a third one ulp either side."""
    x = rng.standard_normal(n).astype(dtype) * np.abs(levels[np.isfinite(levels)]).max(
        initial=1).astype(dtype)
    finite = levels[np.isfinite(levels)]
    if finite.size:
        on = finite[rng.integers(0, finite.size, n)]
        x[0::3] = on[0::3]
        x[1::3] = np.nextafter(on[1::3], dtype(np.inf))
        x[2::6] = np.nextafter(on[2::6], dtype(-np.inf))
    return x


# ---- adversarial levels: the grid search is exactly a binary search -------------------------
def _adversarial_levels(name, dtype):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    return {
        "uniform": np.linspace(-3, 3, 256),
        "random sorted": np.sort(rng.standard_normal(100)),
        "clustered": np.sort(np.concatenate([rng.uniform(0, 1e-3, 60), [1000.0, -50.0]])),
        "log spaced": np.logspace(-20, 20, 41),
        "duplicates": np.repeat(np.linspace(-1, 1, 9), [1, 3, 1, 1, 4, 1, 1, 2, 1]),
        "with infinities": np.array([-np.inf, -1.0, 0.0, 1.0, np.inf, np.inf]),
        "only infinities": np.array([-np.inf, np.inf]),
        "signed zeros": np.array([-0.0, 0.0, 1e-30]),
        "subnormal range": np.array([1e-45, 3e-45, 5e-45, 7e-45]),
        "huge range": np.array([-3.4e38, -1.0, 0.0, 1.0, 3.4e38]),
        "single level": np.array([0.5]),
        "equal levels": np.array([2.0, 2.0, 2.0]),
        "no levels": np.zeros(0),
        "unsorted": rng.standard_normal(20),
        "NaN levels": np.array([np.nan, -1.0, np.nan, 0.5, 2.0]),
        "all NaN levels": np.array([np.nan, np.nan]),
    }[name].astype(dtype)


ADVERSARIAL = ["uniform", "random sorted", "clustered", "log spaced", "duplicates",
               "with infinities", "only infinities", "signed zeros", "subnormal range",
               "huge range", "single level", "equal levels", "no levels", "unsorted",
               "NaN levels", "all NaN levels"]


@pytest.mark.parametrize("dtype", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("name", ADVERSARIAL)
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("grid", ["auto", "linear", "keyed"])
def test_kernel_matches_reference_on_adversarial_levels(name, dtype, parallel, grid,
                                                        monkeypatch):
    monkeypatch.setattr(histogram_cpu, "GRID", grid)
    if parallel:
        monkeypatch.setattr(histogram_cpu, "PARALLEL_MIN_ELEMENTS", 0)
    with np.errstate(over="ignore", under="ignore"):  # float16 casts of the wide ranges
        levels = _adversarial_levels(name, dtype)
        rng = np.random.default_rng(7)
        x = _on_levels(rng, levels, 3000, dtype)
    x[:6] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan], dtype)
    for absolute in (False, True):
        np.testing.assert_array_equal(_kernel(x, levels, absolute),
                                      ref.histogram(x, levels, absolute), err_msg=name)


@pytest.mark.parametrize("max_cells", [4, 16, 1 << 16])
@pytest.mark.parametrize("cells_per_level", [1, 16], ids=["coarse", "fine"])
@pytest.mark.parametrize("grid", ["linear", "keyed"])
def test_grid_size_does_not_change_the_answer(max_cells, cells_per_level, grid, monkeypatch):
    # coarse grids crowd several levels into a cell (bisected); fine ones part them
    monkeypatch.setattr(histogram_cpu, "GRID", grid)
    monkeypatch.setattr(histogram_cpu, "MAX_CELLS", max_cells)
    monkeypatch.setattr(histogram_cpu, "CLUSTERED_MAX_CELLS", max_cells)
    monkeypatch.setattr(histogram_cpu, "MIN_CELLS", min(16, max_cells))
    monkeypatch.setattr(histogram_cpu, "CELLS_PER_LEVEL", cells_per_level)
    rng = np.random.default_rng(3)
    for name in ("random sorted", "clustered", "duplicates", "with infinities", "log spaced"):
        levels = _adversarial_levels(name, F32)
        x = _on_levels(rng, levels, 5000, F32)
        x[:4] = [np.nan, np.inf, -np.inf, -0.0]
        np.testing.assert_array_equal(_kernel(x, levels), ref.histogram(x, levels),
                                      err_msg=name)


@pytest.mark.parametrize(("levels", "keyed", "crowded"), [
    (np.linspace(-4, 4, 256), False, 0),
    (np.sort(np.random.default_rng(8).standard_normal(256)), False, 4),
    (np.logspace(-12, 20, 300), True, 0),
    (np.concatenate([-np.logspace(-6, 1, 128)[::-1], np.logspace(-6, 1, 128)]), True, 0),
    (np.sort(np.concatenate([np.random.default_rng(5).uniform(0, 1e-3, 200),
                             np.random.default_rng(6).standard_normal(56)])), True, 16),
], ids=["uniform", "random", "log spaced", "symmetric log spaced", "clustered"])
def test_grid_parts_the_levels(levels, keyed, crowded):
    # the speed of the kernel: a grid (linear, or keyed on the float bits for levels over
    # orders of magnitude) on which different levels seldom share a cell, so that few inputs
    # are bisected (a close pair of random levels may stay: few inputs fall between them)
    _, _, _, grid, table, flag = histogram_cpu._prepared(levels.astype(F32), 1 << 22)
    assert grid[0] == keyed
    assert np.count_nonzero(table & flag) <= crowded


def test_prepared_levels_follow_the_levels_values(monkeypatch):
    # levels are prepared once and cached by their bytes: changing them in place is seen;
    # the cache keeps the last CACHED_LEVELS of them
    monkeypatch.setattr(histogram_cpu, "CACHED_LEVELS", 2)
    rng = np.random.default_rng(9)
    levels = np.linspace(-1, 1, 17).astype(F32)
    x = _on_levels(rng, levels, 4000, F32)
    for _ in range(2):
        np.testing.assert_array_equal(_kernel(x, levels), ref.histogram(x, levels))
        levels[3] = 5.0
    np.testing.assert_array_equal(_kernel(x.astype(F16), levels.astype(F16)),
                                  ref.histogram(x.astype(F16), levels.astype(F16)))
    assert len(histogram_cpu._PREPARED) <= 2


def test_sorted_levels_give_searchsorted_right_bins():
    rng = np.random.default_rng(4)
    levels = np.sort(rng.uniform(-2, 2, 64)).astype(F32)
    x = _on_levels(rng, levels, 50000, F32)
    x[::97] = np.nan
    want = np.bincount(ref.bins_of(x, levels), minlength=65)
    np.testing.assert_array_equal(_hist(x, levels), want)


def test_parallel_and_serial_paths_agree(monkeypatch):
    rng = np.random.default_rng(5)
    levels = np.sort(rng.standard_normal(255)).astype(F32)
    x = rng.standard_normal(1 << 18).astype(F32)
    parallel = _kernel(x, levels)
    monkeypatch.setattr(histogram_cpu, "PARALLEL_MIN_ELEMENTS", 1 << 62)
    np.testing.assert_array_equal(_kernel(x, levels), parallel)


def test_every_float16_value():
    x = np.arange(1 << 16, dtype=np.uint16).view(F16)
    levels = np.array([-np.inf, -65504, -1.0, -6e-8, -0.0, 6e-8, 1e-4, 1.0, 2048, np.inf], F16)
    for absolute in (False, True):
        np.testing.assert_array_equal(_hist(x, levels, absolute),
                                      ref.histogram(x, levels, absolute))
    np.testing.assert_array_equal(_hist(x, levels), _hist(x.astype(F32), levels.astype(F32)))


# ---- against numpy, torch, TensorFlow --------------------------------------------------------
@pytest.mark.parametrize("duplicates", [False, True])
def test_matches_np_histogram_with_infinite_outer_edges(duplicates):
    # np.histogram's bins [-inf, l0), [l0, l1), ..., [l_last, inf] are Graphcore's bins for
    # data without NaN and +inf; NaN goes to Graphcore's top bin and nowhere in numpy's
    rng = np.random.default_rng(6)
    levels = np.sort(rng.uniform(-2, 2, 30)).astype(F32)
    if duplicates:
        levels[10:13] = levels[10]
    x = _on_levels(rng, levels, 10000, F32)
    x[::50] = np.nan
    got = _hist(x, levels)
    want, _ = np.histogram(x, bins=np.concatenate([[-np.inf], levels, [np.inf]]))
    np.testing.assert_array_equal(got[:-1], want[:-1])
    assert got[-1] == want[-1] + np.isnan(x).sum()


def test_matches_torch_bucketize():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    levels = np.sort(rng.standard_normal(100)).astype(F32)
    x = _on_levels(rng, levels, 20000, F32)
    b = torch.bucketize(torch.from_numpy(x), torch.from_numpy(levels), right=True)
    want = torch.bincount(b, minlength=101).numpy()
    np.testing.assert_array_equal(_hist(x, levels), want)


@pytest.mark.parametrize("dtype", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("n_bins", [0, 1, 2, 3, 7, 100, 1000])
def test_fixed_width_bins_bit_exact_with_tf_linspace(real_tf, dtype, n_bins):
    x = np.random.default_rng(n_bins).uniform(-0.3, 7.1, 50).astype(dtype)
    want = real_tf.linspace(real_tf.reduce_min(x), real_tf.reduce_max(x), n_bins).numpy()
    got = statistics_ops.fixed_width_bins(x, n_bins)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want)


def test_fixed_width_bins_of_nothing_as_tf(real_tf):
    x = np.zeros(0, F32)
    want = real_tf.linspace(real_tf.reduce_min(x), real_tf.reduce_max(x), 4).numpy()
    np.testing.assert_array_equal(statistics_ops.fixed_width_bins(x, 4).numpy(), want)


def test_histogram_normalize_of_integers_is_float64_as_tf_truediv():
    out = statistics_ops.histogram_normalize(np.array([1, 3], np.int32))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.numpy(), [0.25, 0.75])


# ---- Graphcore's documented cases and the API --------------------------------------------------
def test_value_equal_to_a_level_goes_to_the_bin_above():
    # Graphcore's AllPositive case: 1.0 with level 1.0 lands in the last bin
    levels = np.array([0.25, 0.5, 1.0], F32)
    np.testing.assert_array_equal(_hist(np.array([1.0], F32), levels), [0, 0, 0, 1])
    np.testing.assert_array_equal(_hist(np.array([0.25, 0.5], F32), levels), [0, 1, 1, 0])


def test_three_updates_give_three_times_the_histogram():
    rng = np.random.default_rng(9)
    x = rng.standard_normal(1000).astype(F32)
    levels = np.linspace(-2, 2, 9).astype(F32)
    hist = ipu_gpu.Variable(np.zeros(10, F32))
    for _ in range(3):
        hist.assign(statistics_ops.histogram_update(hist, x, levels))
    np.testing.assert_array_equal(hist.numpy(), 3 * _hist(x, levels))


def test_nan_goes_to_the_top_bin():
    np.testing.assert_array_equal(_hist(np.full(5, np.nan, F32), np.array([0.0, 1.0], F32)),
                                  [0, 0, 5])


def test_unsorted_levels_give_the_ipus_per_level_differences():
    x = np.array([0.0, 1.0, 2.0, 3.0], F32)
    # c = #{x < 2.5}, #{x < 0.5} = 3, 1: [3, 1 - 3, 4 - 1]
    np.testing.assert_array_equal(_hist(x, np.array([2.5, 0.5], F32)), [3, -2, 3])


def test_inputs_as_tensors_lists_and_strided_arrays():
    x = np.arange(20, dtype=F32)[::2]  # not contiguous
    levels = [4.0, 10.0]  # a Python list becomes float32, as in TF
    np.testing.assert_array_equal(_hist(x, levels), [2, 3, 5])
    np.testing.assert_array_equal(_hist(ipu_gpu.constant(x), ipu_gpu.constant(levels)),
                                  [2, 3, 5])
    with pytest.raises(TypeError, match="levels must have the dtype of inputs"):
        statistics_ops.histogram(x.astype(F16), levels)


def test_float16_inputs_give_float32_counts():
    x = np.array([0.5, 1.0, np.inf], F16)
    out = statistics_ops.histogram(x, np.array([1.0], F16))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [1, 2])


@pytest.mark.parametrize("fn", ["histogram", "histogram_update"])
def test_no_gradient_raises_lookup_error_as_tf(fn):
    x = ipu_gpu.constant(np.array([0.5, 2.0], F32))
    levels = np.array([1.0], F32)
    with ipu_gpu.GradientTape() as tape:
        tape.watch(x)
        if fn == "histogram":
            out = statistics_ops.histogram(x, levels)
        else:
            out = statistics_ops.histogram_update(np.zeros(2, F32), x, levels)
    with pytest.raises(LookupError, match=f"^{fn}: no gradient is defined"):
        tape.gradient(out, x)


def test_fixed_width_bins_gradient_flows_to_min_and_max():
    x = ipu_gpu.Variable(np.array([3.0, -1.0, 2.0]))
    with ipu_gpu.GradientTape() as tape:
        levels = statistics_ops.fixed_width_bins(x, 5)
    # d(sum of levels)/d(min) = d/d(max) = 5/2, the interior elements get nothing
    np.testing.assert_allclose(tape.gradient(levels, x).numpy(), [2.5, 2.5, 0.0])


# ---- properties -------------------------------------------------------------------------------
_floats = st.floats(allow_nan=True, allow_infinity=True, width=32)


@given(x=hnp.arrays(F32, st.integers(0, 60), elements=_floats),
       levels=hnp.arrays(F32, st.integers(0, 8), elements=_floats),
       absolute=st.booleans())
def test_property_matches_reference_and_counts_sum_to_n(x, levels, absolute):
    got = _hist(x, levels, absolute)
    np.testing.assert_array_equal(got, ref.histogram(x, levels, absolute))
    assert got.sum() == x.size  # the per-level differences telescope, sorted or not


@given(x=hnp.arrays(F32, st.integers(0, 80), elements=st.floats(-4, 4, width=32)),
       levels=hnp.arrays(F32, st.integers(1, 6), elements=st.floats(-3, 3, width=32)),
       split=st.integers(0, 80))
def test_property_histograms_add_over_concatenation(x, levels, split):
    levels = np.sort(levels)
    a, b = x[:split], x[split:]
    np.testing.assert_array_equal(_hist(x, levels), _hist(a, levels) + _hist(b, levels))
    updated = statistics_ops.histogram_update(_hist(a, levels), b, levels)
    np.testing.assert_array_equal(updated.numpy(), _hist(x, levels))
    assert (_hist(x, levels) >= 0).all()  # sorted levels: a true histogram


@settings(suppress_health_check=[HealthCheck.filter_too_much])  # float16 draws filter inside
@given(x=hnp.arrays(F16, st.integers(0, 60), elements=st.floats(width=16)),
       levels=hnp.arrays(F16, st.integers(0, 6), elements=st.floats(width=16)))
def test_property_float16_is_float32_of_the_same_values(x, levels):
    np.testing.assert_array_equal(_hist(x, levels, True),
                                  _hist(x.astype(F32), levels.astype(F32), True))


@given(x=hnp.arrays(F32, st.integers(1, 40), elements=st.floats(-1e6, 1e6, width=32)),
       n_bins=st.integers(2, 50))
def test_property_fixed_width_bins_span_the_data(x, n_bins):
    levels = statistics_ops.fixed_width_bins(x, n_bins).numpy()
    assert levels[0] == x.min() and levels[-1] == x.max() and len(levels) == n_bins
    hist = _hist(x, levels)
    assert hist[0] == 0 and hist.sum() == x.size  # nothing below the minimum


# ---- the GPU twin through the CUDA emulator ------------------------------------------------------
@pytest.fixture
def gpu(monkeypatch):
    k = install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.histogram_gpu"]).histogram_gpu
    monkeypatch.setattr(k, "THREADS", 64)
    monkeypatch.setattr(k, "MAX_BLOCKS", 3)
    return k


@needs_gxx
@pytest.mark.parametrize("privatise", [True, False], ids=["shared", "global"])
@pytest.mark.parametrize("dtype", [F32, F16], ids=["float32", "float16"])
def test_gpu_twin_matches_cpu_twin(gpu, monkeypatch, privatise, dtype):
    if not privatise:
        monkeypatch.setattr(gpu, "SHARED_BYTES", 0)
    rng = np.random.default_rng(10)
    for name in ("random sorted", "duplicates", "with infinities", "unsorted", "NaN levels",
                 "no levels", "single level"):
        with np.errstate(over="ignore"):
            levels = _adversarial_levels(name, dtype)
        x = _on_levels(rng, levels, 500, dtype)
        x[:5] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype)
        for absolute, accumulate in ((False, False), (True, True)):
            start = rng.integers(0, 5, len(levels) + 1).astype(F32)
            got = gpu.histogram_fwd(x, levels, absolute, start.copy(), accumulate)
            want = _kernel(x, levels, absolute, start.copy(), accumulate)
            np.testing.assert_array_equal(got, want, err_msg=name)


@needs_gxx
def test_gpu_twin_decodes_every_float16_value(gpu, monkeypatch):
    monkeypatch.setattr(gpu, "THREADS", 128)
    monkeypatch.setattr(gpu, "MAX_BLOCKS", 2)
    x = np.arange(1 << 16, dtype=np.uint16).view(F16)
    levels = np.array([-np.inf, -65504, -1.0, -6e-8, -0.0, 6e-8, 1e-4, 1.0, 2048, np.inf], F16)
    got = gpu.histogram_fwd(x, levels, False, np.zeros(11, F32))
    np.testing.assert_array_equal(got, _kernel(x, levels))


@needs_gxx
def test_gpu_twin_with_empty_inputs(gpu):
    got = gpu.histogram_fwd(np.zeros(0, F32), np.array([1.0], F32), False, np.ones(2, F32))
    np.testing.assert_array_equal(got, [0, 0])


# ---- on a real GPU -------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("n_levels", [255, 7000], ids=["shared", "global"])
@pytest.mark.parametrize("dtype", [F32, F16], ids=["float32", "float16"])
def test_cupy_matches_numpy(n_levels, dtype):
    from conftest import require_gpu

    cupy = require_gpu()
    rng = np.random.default_rng(11)
    levels = np.sort(rng.standard_normal(n_levels)).astype(dtype)
    levels[5] = np.nan
    x = _on_levels(rng, levels, 1 << 20, dtype)
    x[::1001] = np.nan
    for absolute in (False, True):
        want = statistics_ops.histogram(x, levels, absolute_of_input=absolute)
        got = statistics_ops.histogram(cupy.asarray(x), cupy.asarray(levels),
                                       absolute_of_input=absolute)
        assert got.device == "/device:GPU:0"
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        hist = cupy.arange(n_levels + 1, dtype=cupy.float32)
        upd = statistics_ops.histogram_update(hist, cupy.asarray(x), cupy.asarray(levels),
                                              absolute_of_input=absolute)
        np.testing.assert_array_equal(upd.numpy(), np.arange(n_levels + 1) + want.numpy())
