"""Serialized matmul on the CPU through numpy's BLAS (OpenBLAS), written into the
preallocated output; twin of serialized_matmul_gpu.

* m-split (``'a_columns'``) and n-split (``'b_rows'``): one GEMM, as on the GPU. The F slice
  GEMMs tile the output and every output element is the same full-length dot product either
  way, so the result is numpy's unsplit matmul bit for bit. (F slice GEMMs would not give
  the same bits: OpenBLAS's Haswell/Zen sgemm computes rows and columns at the edge of a
  GEMM's register tiles with other kernels, so where the slice borders fall moves bits; and
  each slice GEMM repacks the whole other operand: 1.13 (m) and 1.10 (n) times one
  np.matmul at F = 8, 2048^3 float32 on this 2-core AMD EPYC, against 0.99 for both now.)
* k-split (``'a_rows_b_columns'``), ((p0 + p1) + p2) + ... with p_i the slice GEMMs: p0 is
  written into ``out``; each later p_i is added by one CBLAS GEMM with beta = 1
  (``out += x_i @ y_i``, ``_blas_gemm``) when that is bitwise ``out + p_i``. OpenBLAS adds a
  GEMM's register sums into C once per k-block of at most GEMM_Q (320 for float32, 256 for
  float64 on this EPYC), so beta = 1 rounds exactly as the separate add when the slice
  length s is one k-block; ``_blas_gemm.one_k_block`` measures that once per (dtype, s), for
  float32/float64 products of at least BLOCKED_MIN_MNK multiply-adds. Otherwise (longer
  slices, small products, CBLAS not found, int32, float16, a batch reduction) each later
  p_i goes through one reused output-sized buffer and a separate ``np.add``. The beta = 1
  path saves per slice OpenBLAS's zeroing pass over the buffer and the add's three
  output-sized passes: F = 8 (s = 256) went from 1.20-1.23 to 1.05-1.06 times one np.matmul.
  F = 4 and F = 2 (s = 512, 1024: two or more k-blocks) need p_i rounded on its own, so
  they keep the buffer: 1.08-1.11 and 1.04-1.05. Their slice GEMMs together cost what one
  GEMM does (4 x 0.25 of it at F = 4: the 256-long k-blocks are not the cost); most of the
  excess is the F - 1 adds, each three output-sized passes through DRAM (about 1.5 ms of one
  thread per add at 2048^2, about 4.5% of the 2-thread GEMM at F = 4). Measured and dropped
  for them: a buffer kept zeroed for beta = 1 GEMMs with a fused add-and-clear pass, no
  faster; a 2-thread Numba add, 1.3x, as its spinning OpenMP threads stall the next GEMM;
  the add as OpenBLAS's own threaded ``saxpy`` (alpha = 1 is bitwise ``np.add``, no second
  pool): its best times 1.5x faster than np.add's, but with the cores shared (load 7-9 on
  the 2-core EPYC) its worker often missed its turn and the whole call got 1.10x slower
  (median of 20 interleaved pairs); row or column panels of the output, so the buffer stays
  in cache: OpenBLAS's m/n blocking moves p_i's bits (the ordered sum of the slices' numpy
  products no longer holds) and the panels' repacking made them 1.05-2.6x slower; all F - 1
  products kept and summed in one fused pass (5 passes instead of 9 at F = 4: 2.6 instead of
  4.5 ms of thread time) needs F - 1 output-sized buffers, not one.

No full-size copies of the operands: slices are views (BLAS takes their strides and
transposes). A product that must be reduced over broadcast batch axes or rounded to float16
is staged whole in one unreduced buffer, as on the GPU. float16,
which numpy multiplies without BLAS (about 20x slower than float32 at 512^3), is converted
to float32 once, each product rounded to float16 as it is stored (float32 accumulation, as
the IPU's default float partials), and a k-split's partial products are added in float16.
"""

from __future__ import annotations

import numpy as np

from . import _blas_gemm

_BLAS_DTYPES = (np.float32, np.float64)
# k-slices shorter than this keep the buffered adds: measuring OpenBLAS's k-blocking for them
# would take a probe GEMM with an output of BLOCKED_MIN_MNK / s elements
ACCUMULATE_MIN_K = 32


def _product(x, y, out, staged, reduce_axes):
    """out = x @ y, through ``staged`` (x's dtype, unreduced) when ``out`` differs from it in
    dtype or, by ``reduce_axes`` (kept as 1), in shape."""
    if staged is None:
        np.matmul(x, y, out=out)
        return
    np.matmul(x, y, out=staged)
    if reduce_axes:
        np.sum(staged, axis=reduce_axes, keepdims=True, out=out)
    else:
        np.copyto(out, staged)  # float32 -> float16, rounded to nearest


def _accumulates_exactly(x, y, s):
    """Whether BLAS's beta = 1 GEMM adds each slice product into ``out`` bitwise as
    ``out + p_i`` would: float32/float64 with CBLAS found, each slice GEMM big enough to take
    OpenBLAS's blocked path (m, n >= 2, m*n*s >= BLOCKED_MIN_MNK) and s one k-block there."""
    m, n = x.shape[-2], y.shape[-1]
    return (x.dtype == y.dtype and x.dtype in _BLAS_DTYPES and m >= 2 and n >= 2
            and s >= ACCUMULATE_MIN_K and m * n * s >= _blas_gemm.BLOCKED_MIN_MNK
            and _blas_gemm.available(x.dtype) and _blas_gemm.one_k_block(x.dtype, s))


def _accumulate_slices(x, y, s, factor, out, batch):
    """out = ((p0 + p1) + p2) + ... with p_i = x_i @ y_i: p0 by numpy.matmul into ``out``,
    each later p_i added by one CBLAS GEMM with beta = 1 (no partial-product buffer, no
    separate add), matrix by matrix over the broadcast batch."""
    xb = np.broadcast_to(x, batch + x.shape[-2:])
    yb = np.broadcast_to(y, batch + y.shape[-2:])
    for idx in np.ndindex(*batch):
        xm, ym, om = xb[idx], yb[idx], out[idx]
        _product(xm[:, :s], ym[:s], om, None, ())
        for i in range(1, factor):
            cut = slice(i * s, (i + 1) * s)
            if not _gemm_accumulate(xm[:, cut], ym[cut], om):
                np.add(om, np.matmul(xm[:, cut], ym[cut]), out=om)  # strides CBLAS refused


def _gemm_accumulate(x, y, out):
    """out += x @ y in one CBLAS GEMM (beta = 1); False when CBLAS refuses the strides."""
    return _blas_gemm.gemm(x, y, out, 1)


def serialized_matmul(x, y, dimension, factor, out, reduce_axes=()):
    """out[..., m, n] = x[..., m, k] @ y[..., k, n] (batch axes broadcasting, any strides),
    serialized along k (``'a_rows_b_columns'``: ``factor`` slice GEMMs whose products are
    added into ``out`` in slice order, ((p0 + p1) + p2) + ...) or along m (``'a_columns'``)
    or n (``'b_rows'``), which change no element's arithmetic: one GEMM. ``out``:
    C-contiguous, dtype of x, not zeroed, shape = broadcast batch + (m, n) with the axes in
    ``reduce_axes`` (batch axes) kept as 1: each product is summed over them before it is
    placed or added. Deterministic. Returns ``out``."""
    if x.dtype == np.float16:
        x, y = x.astype(np.float32), y.astype(np.float32)
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    stage = bool(reduce_axes) or out.dtype != x.dtype
    if dimension == "a_rows_b_columns":
        s = k // factor
        if not stage and _accumulates_exactly(x, y, s):
            _accumulate_slices(x, y, s, factor, out, batch)
            return out
        staged = np.empty(batch + (m, n), x.dtype) if stage else None
        part = None
        for i in range(factor):
            cut = slice(i * s, (i + 1) * s)
            xi, yi = x[..., :, cut], y[..., cut, :]
            if i == 0:
                _product(xi, yi, out, staged, reduce_axes)
                continue
            if part is None:
                part = np.empty_like(out)
            _product(xi, yi, part, staged, reduce_axes)
            np.add(out, part, out=out)
        return out
    if dimension in ("a_columns", "b_rows"):
        # the F slice GEMMs tile the output and each element is the same full-length dot
        # product either way: one GEMM (see the module docstring)
        staged = np.empty(batch + (m, n), x.dtype) if stage else None
        _product(x, y, out, staged, reduce_axes)
        return out
    raise ValueError(f"serialized_matmul: dimension must be 'a_columns', 'a_rows_b_columns' "
                     f"or 'b_rows', got {dimension!r}")
