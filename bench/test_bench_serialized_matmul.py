"""serialized_matmul (``ipu.math_ops.serialized_matmul``), 2048^3 float32, factor 2/4/8 along
each of Graphcore's three dimensions, against ONE matmul of the whole problem.

* ipu_gpu: serialized_matmul(a, b, F, dimension): on the CPU one GEMM (m/n split: the
  unsplit product) or, for the k split at this size, row tiles of 512 output rows shared
  over threads, each tile's F slice GEMMs on one BLAS thread added into the tile in slice
  order while it is in cache (smaller k splits: F whole-slice GEMMs into the output, with
  beta = 1 or a buffer and ordered adds); on cupy, one GEMM (m/n split) or one batched GEMM
  plus F - 1 ordered adds (k split).
* numpy / cupy: one ``matmul(a, b)`` (the anchor: the issue's target is a ratio to it).
* torch / torch CUDA: one ``torch.matmul(a, b)``.

ipu_gpu's rows interleave one np.matmul (cupy.matmul on a GPU) between their timed calls
(``paired``), so the ratio in bench/README.md is not moved by load drifting between rows.
Every implementation allocates its output on each call, like for like.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from benchutil import as_impl, check_close, impl_params, paired_with, require, rng

from ipu_gpu.ops.serialized_matmul import serialized_matmul

N = 2048
DIMS = ("a_columns", "a_rows_b_columns", "b_rows")
FACTORS = (2, 4, 8)
# ~0.1 s calls: at least 21 rounds a side, alternating one call against one, so a row's ratio
# repeats run to run (with 7 rounds in blocks of two calls, the same np.matmul's median moved
# 94-111 ms between rows of one run)
MIN_ROUNDS = 21
PAIR_BLOCK_SECONDS = 0.1
CASES = [pytest.param(dim, f, marks=pytest.mark.benchmark(
    group=f"serialized_matmul-{dim}-F{f}-{N}x{N}x{N}"), id=f"{dim}-F{f}")
    for dim in DIMS for f in FACTORS]


@lru_cache(maxsize=1)
def _problem():
    g = rng(5)
    a = g.standard_normal((N, N), dtype=np.float32)
    b = g.standard_normal((N, N), dtype=np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    return a, b, want


def _fn(impl, p, a, b, dim, factor):
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        return lambda: serialized_matmul(a, b, factor, dim)
    if impl in ("numpy", "cupy"):
        xp = np if impl == "numpy" else p.cupy
        return lambda: xp.matmul(a, b)
    if impl in ("torch", "torch_cuda"):
        return lambda: p.torch.matmul(a, b)
    raise ValueError(impl)


@pytest.mark.parametrize("impl", impl_params(cpu=("ipu_gpu", "numpy", "torch")))
@pytest.mark.parametrize(("dim", "factor"), CASES)
def test_serialized_matmul(run, ipu_backend, dim, factor, impl):
    p = require(impl)
    a, b, want = _problem()
    fn = _fn(impl, p, as_impl(impl, a), as_impl(impl, b), dim, factor)
    check_close(f"serialized_matmul {dim} F={factor} {impl}", fn(), want, rtol=1e-4,
                atol=2e-5 * N)
    peer = "numpy" if impl == "ipu_gpu" else "cupy"
    paired = paired_with(impl, lambda q: _fn(q, p, as_impl(q, a), as_impl(q, b), dim, factor),
                         peer=peer)
    run(fn, impl=impl, paired=paired, min_rounds=MIN_ROUNDS, pair_block_seconds=PAIR_BLOCK_SECONDS,
        sizes={"m": N, "k": N, "n": N, "dtype": "float32", "serialization_dimension": dim,
               "serialization_factor": factor})
