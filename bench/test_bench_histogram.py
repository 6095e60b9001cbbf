"""Histograms over explicit levels (``ipu.statistics_ops.histogram``) and
``fixed_width_bins``.

Every row computes Graphcore's N + 1 bins for N levels (a value on a level goes to the bin
above): the data hold no NaN or inf, so numpy gets the same counts from explicit outer edges.

* ipu_gpu: statistics_ops.histogram (float32 counts); interleaved with np.histogram.
* numpy: ``np.histogram(x, bins=[-inf, *levels, inf])`` (the anchor: 257 edges; numpy sorts
  64k blocks of x and searches the edges in them).
* numpy_searchsorted: ``np.bincount(np.searchsorted(levels, x, 'right'))``.
* torch: ``torch.bincount(torch.bucketize(x, levels, right=True))``.
* GPU: ipu_gpu on cupy, ``cupy.histogram`` with the same edges (per-element binary search,
  global atomics), torch CUDA bucketize + bincount, and ``cupy_copy``, a device-to-device
  copy of the input: the issue's GPU goal is 80% of its bandwidth (the histogram reads the
  40 MB once; the copy reads and writes them).

fixed_width_bins (10M float32, 256 levels): ipu_gpu's composition of reduce_min, reduce_max
and TF's linspace arithmetic against ``np.linspace(x.min(), x.max(), 256)``,
``torch.linspace`` and ``tf.linspace`` of the same: two reading passes everywhere.

Levels: 256 of them, uniform over [-4, 4] (what fixed_width_bins makes), random normal (our
cell table needs 16x more cells to part them), or log-spaced, +-[1e-6, 100] (TensorBoard-
style exponential buckets, which crowd into a few cells of any linear grid: our kernel
switches to a grid on the float bits). Data: standard normal float32.

Cache policy: no flushing. This machine's L3 is 32 MiB (AMD EPYC, `lscpu`; not the 300 MiB
of the box perf_anchors.md measured), so the 40 MB input of the 10M rows does not fit and
every call streams it from DRAM, for every implementation alike; the levels, our cell table
and the counts (a few KiB) stay in L1/L2. The 100k rows (400 KB) are L2-resident: hot.
Outputs are allocated inside every call on every side.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import check_close, impl_params, paired_with, require, rng, to_numpy

import ipu_gpu
from ipu_gpu.ipu import statistics_ops

SIZES = {"10M": 10_000_000, "100k": 100_000}
N_LEVELS = 256
HIST_IMPLS = impl_params(cpu=("ipu_gpu", "numpy", "numpy_searchsorted", "torch"))


def _inputs(size, levels_kind):
    g = rng(11)
    x = g.standard_normal(SIZES[size], dtype=np.float32)
    if levels_kind == "uniform":
        levels = np.linspace(-4, 4, N_LEVELS, dtype=np.float32)
    elif levels_kind == "log":
        half = np.logspace(-6, 2, N_LEVELS // 2)
        levels = np.concatenate([-half[::-1], half]).astype(np.float32)
    else:
        levels = np.sort(g.standard_normal(N_LEVELS).astype(np.float32) * np.float32(1.5))
    return x, levels


def _expected(x, levels):
    return np.bincount(np.searchsorted(levels, x, side="right"),
                       minlength=len(levels) + 1).astype(np.float32)


def _hist_fn(impl, p, x, levels):
    edges = np.concatenate([[-np.inf], levels, [np.inf]]).astype(np.float32)
    m = len(levels) + 1
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        on = (lambda a: p.cupy.asarray(a)) if impl == "ipu_gpu_cupy" else (lambda a: a)
        xt, lt = ipu_gpu.constant(on(x)), ipu_gpu.constant(on(levels))
        return lambda: statistics_ops.histogram(xt, lt)
    if impl == "numpy":
        return lambda: np.histogram(x, bins=edges)[0]
    if impl == "numpy_searchsorted":
        return lambda: np.bincount(np.searchsorted(levels, x, side="right"), minlength=m)
    if impl in ("torch", "torch_cuda"):
        torch = p.torch
        dev = "cuda" if impl == "torch_cuda" else "cpu"
        xt, lt = torch.from_numpy(x).to(dev), torch.from_numpy(levels).to(dev)
        return lambda: torch.bincount(torch.bucketize(xt, lt, right=True), minlength=m)
    if impl == "cupy":
        cupy = p.cupy
        xc, ec = cupy.asarray(x), cupy.asarray(edges)
        return lambda: cupy.histogram(xc, bins=ec)[0]
    raise ValueError(impl)


CASES = [pytest.param(size, kind, id=f"{size}-{kind}", marks=pytest.mark.benchmark(
    group=f"histogram-{size}-{N_LEVELS}levels-{kind}"))
    for size in SIZES for kind in ("uniform", "random", "log")]


def _cache_note(size):
    return "input streamed from DRAM (40 MB > 32 MiB L3)" if size == "10M" else "L2-hot"


@pytest.mark.parametrize("impl", HIST_IMPLS)
@pytest.mark.parametrize(("size", "levels_kind"), CASES)
def test_histogram(run, ipu_backend, size, levels_kind, impl):
    p = require(impl)
    x, levels = _inputs(size, levels_kind)
    fn = _hist_fn(impl, p, x, levels)
    check_close(f"histogram {size} {levels_kind} {impl}",
                np.asarray(to_numpy(fn()), np.float32), _expected(x, levels), 0, 0)
    peer = "cupy" if impl == "ipu_gpu_cupy" else "numpy"
    run(fn, impl=impl, sizes={"n": SIZES[size], "levels": N_LEVELS, "levels_kind": levels_kind,
                              "dtype": "float32", "cache": _cache_note(size)},
        paired=paired_with(impl, lambda peer_impl: _hist_fn(peer_impl, p, x, levels), peer))


@pytest.mark.gpu
@pytest.mark.parametrize(("size", "levels_kind"), CASES)
def test_device_copy(run, size, levels_kind):
    """The issue's GPU yardstick, in each histogram group: a device-to-device copy of the
    input (``cupy_copy``; it reads and writes the bytes the histogram only reads)."""
    cupy = require("cupy").cupy
    x, _ = _inputs(size, levels_kind)
    xc = cupy.asarray(x)
    buf = cupy.empty_like(xc)
    stream = cupy.cuda.get_current_stream()

    def copy():
        cupy.copyto(buf, xc)
        stream.synchronize()
    copy()
    assert bool((buf == xc).all())
    run(copy, impl="cupy_copy", sizes={"n": x.size, "bytes_read": x.nbytes,
                                       "bytes_written": x.nbytes})


FWB_IMPLS = impl_params(cpu=("ipu_gpu", "numpy", "torch", "tensorflow"))


def _fwb_fn(impl, p, x, n_bins):
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        xt = ipu_gpu.constant(p.cupy.asarray(x) if impl == "ipu_gpu_cupy" else x)
        return lambda: statistics_ops.fixed_width_bins(xt, n_bins)
    if impl == "numpy":
        return lambda: np.linspace(x.min(), x.max(), n_bins, dtype=np.float32)
    if impl in ("torch", "torch_cuda"):
        torch = p.torch
        xt = torch.from_numpy(x).to("cuda" if impl == "torch_cuda" else "cpu")
        return lambda: torch.linspace(xt.min(), xt.max(), n_bins)
    if impl == "tensorflow":
        tf = p.tf
        xt = tf.constant(x)
        return lambda: tf.linspace(tf.reduce_min(xt), tf.reduce_max(xt), n_bins)
    if impl == "cupy":
        cupy = p.cupy
        xc = cupy.asarray(x)
        return lambda: cupy.linspace(xc.min(), xc.max(), n_bins, dtype=cupy.float32)
    raise ValueError(impl)


@pytest.mark.benchmark(group=f"fixed_width_bins-10M-{N_LEVELS}")
@pytest.mark.parametrize("impl", FWB_IMPLS)
def test_fixed_width_bins(run, ipu_backend, impl):
    p = require(impl)
    x, _ = _inputs("10M", "uniform")
    fn = _fwb_fn(impl, p, x, N_LEVELS)
    want = np.linspace(np.float64(x.min()), np.float64(x.max()), N_LEVELS)
    check_close(f"fixed_width_bins {impl}", np.asarray(to_numpy(fn()), np.float64), want,
                1e-6, 1e-6)
    run(fn, impl=impl, sizes={"n": x.size, "n_bins": N_LEVELS, "dtype": "float32",
                              "cache": _cache_note("10M")},
        paired=paired_with(impl, lambda peer_impl: _fwb_fn(peer_impl, p, x, N_LEVELS),
                           "cupy" if impl == "ipu_gpu_cupy" else "numpy"))
