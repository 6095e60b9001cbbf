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
  float32/float64 products of at least BLOCKED_MIN_MNK multiply-adds (F = 8, s = 256, at
  2048^3 float32 here: 1.05-1.08 times one np.matmul). Otherwise (longer slices, small
  products, CBLAS not found, int32) the later p_i are computed by numpy into up to GROUP (3)
  output-sized buffers at a time, and each group is added into ``out`` in slice order by
  ``ordered_add_cpu.add_in_order``: one pass over memory in L2-sized chunks (each chunk of
  ``out`` takes the group's addends while it is in cache: G + 2 output-sized passes for G
  products instead of 3 G for G whole-array adds), over Python threads, bitwise the
  whole-array adds. At F = 4 (s = 512: OpenBLAS runs it as two 256-long k-blocks, so beta =
  1 would round like an F = 8 split) that is 5 passes instead of 9; the cost left over one
  np.matmul is the slice GEMMs themselves (their k-blocks, one zeroing pass each) and that
  pass.
  Why not output tiles, each tile's F products summed while hot in cache (no full-size
  buffers): a product element computed by a GEMM over a block of rows or columns is not
  bitwise the same element of the whole slice GEMM. On this EPYC (OpenBLAS 0.3.31,
  Haswell kernels), every row- and column-block size tried (64 to 1024 of 2048) moved 3-7%
  of a slice product's elements by a few ulps, at F = 2, 4 and 8; even the whole slice
  GEMM gives other bits on 1 thread than on 2 (OpenBLAS's thread partition decides which
  edge kernels compute which rows). Tiles would make the result the sum of tile products,
  not of the slices' numpy products. Also measured and dropped before (quiet EPYC): a
  buffer kept zeroed for beta = 1 GEMMs with a fused add-and-clear pass, no faster; a
  2-thread Numba add, 1.3x, its spinning OpenMP threads stalling the next GEMM; OpenBLAS's
  threaded ``saxpy`` as the add, 1.10x slower with the cores shared.

No full-size copies of the operands: slices are views (BLAS takes their strides and
transposes). A product that must be reduced over broadcast batch axes or rounded to float16
is staged whole in one unreduced buffer, as on the GPU (a k split's later products then
share one more buffer and whole-array adds). float16,
which numpy multiplies without BLAS (about 20x slower than float32 at 512^3), is converted
to float32 once, each product rounded to float16 as it is stored (float32 accumulation, as
the IPU's default float partials), and a k-split's partial products are added in float16.
"""

from __future__ import annotations

import numpy as np

from . import _blas_gemm, ordered_add_cpu

_BLAS_DTYPES = (np.float32, np.float64)
# k-slices shorter than this keep the buffered adds: measuring OpenBLAS's k-blocking for them
# would take a probe GEMM with an output of BLOCKED_MIN_MNK / s elements
ACCUMULATE_MIN_K = 32
# slice products buffered at once (output-sized buffers) before their ordered add into out
GROUP = 3


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


def _buffered_slices(x, y, s, factor, out):
    """out = ((p0 + p1) + p2) + ... with p_i = x_i @ y_i, each p_i numpy's slice product: p0
    into ``out``, the later ones in groups of up to GROUP output-sized buffers, each group
    added into ``out`` in slice order in one chunked pass (``ordered_add_cpu``)."""
    _product(x[..., :, :s], y[..., :s, :], out, None, ())
    group = max(1, min(factor - 1, GROUP))
    parts = [np.empty_like(out) for _ in range(min(group, factor - 1))]
    for first in range(1, factor, group):
        count = min(group, factor - first)
        for j in range(count):
            cut = slice((first + j) * s, (first + j + 1) * s)
            _product(x[..., :, cut], y[..., cut, :], parts[j], None, ())
        ordered_add_cpu.add_in_order(out, parts[:count])


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
        if not stage:
            _buffered_slices(x, y, s, factor, out)
            return out
        staged = np.empty(batch + (m, n), x.dtype)
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
