"""Serialized matmul on the CPU through numpy's BLAS (OpenBLAS), written into the
preallocated output; twin of serialized_matmul_gpu.

* m-split (``'a_columns'``) and n-split (``'b_rows'``): one GEMM, as on the GPU. The F slice
  GEMMs tile the output and every output element is the same full-length dot product either
  way, so the result is ipu_gpu's unsplit matmul (``matmul_cpu.matmul``) bit for bit.
  (F slice GEMMs would not give the same bits: OpenBLAS's Haswell/Zen sgemm computes rows
  and columns at the edge of a GEMM's register tiles with other kernels, so where the slice
  borders fall moves bits; and each slice GEMM repacks the whole other operand: 1.13 (m)
  and 1.10 (n) times one np.matmul at F = 8, 2048^3 float32 on this 2-core AMD EPYC,
  against 0.99 for both now.)
* k-split (``'a_rows_b_columns'``), ((p0 + p1) + p2) + ... with p_i the slice products, in
  the output dtype, as Graphcore's Python ``+=`` builds it. Three ways, by size:
  - Row tiles (float32/float64, at least TILED_MIN_MNK multiply-adds, two tiles or more):
    the output is cut into tiles of ``_tile_rows(n)`` rows (TILE_ROWS = 512, fewer for
    wide outputs) of each broadcast batch matrix; a tile's F slice products come from BLAS
    on one thread, one after the other into a tile-sized buffer, each added into the tile
    while both are in cache (or added by a beta = 1 GEMM, as below, where s is one
    k-block), and the tiles are shared out over Python threads (``conv_cpu.run_blocks``).
    No output-sized buffer, no pass over memory beyond the GEMMs'. p_i is then the slice
    product computed tile by tile: its bits are not those of numpy's whole-slice GEMM (on
    this EPYC, OpenBLAS 0.3.31 with its Haswell kernels, every row or column block size
    tried, 64 to 1024 of 2048, moved 3-7% of the elements by a few ulps; even the
    whole-slice GEMM gives other bits on 1 OpenBLAS thread than on 2, as its thread
    partition decides which edge kernels compute which rows), but they are the same for any
    OpenBLAS or Numba thread count, which the whole-slice GEMMs' are not. 2048^3 float32 on
    the 2-core EPYC with the cores shared (load 6-8; each call paired with one np.matmul,
    medians of 12-15 pairs, three runs): F = 2, 4, 8 at 0.95-0.99, 0.99, 0.96-1.00 times
    one np.matmul, the whole-slice ways below at 1.05-1.07, 1.04-1.14, 1.09-1.16.
  - Smaller problems, whole-slice GEMMs (``matmul_cpu.matmul``, except the beta = 1 ones):
    p0 is written into ``out``; each later p_i is added
    by one CBLAS GEMM with beta = 1 (``out += x_i @ y_i``, ``_blas_gemm``) when that is
    bitwise ``out + p_i``. OpenBLAS adds a GEMM's register sums into C once per k-block of
    at most GEMM_Q (320 for float32, 256 for float64 on this EPYC), so beta = 1 rounds
    exactly as the separate add when the slice length s is one k-block;
    ``_blas_gemm.one_k_block`` measures that once per (dtype, s), for float32/float64
    products of at least BLOCKED_MIN_MNK multiply-adds.
  - Otherwise (longer slices, small products, CBLAS not found, int32, float16, a batch
    reduction) each later p_i goes through one reused output-sized buffer and a separate
    ``np.add``.
  Measured and dropped for the whole-slice way's adds (each three output-sized passes): a
  buffer kept zeroed for beta = 1 GEMMs with a fused add-and-clear pass, no faster; a
  2-thread Numba add, 1.3x, its spinning OpenMP threads stalling the next GEMM; OpenBLAS's
  threaded ``saxpy``, 1.10x slower with the cores shared; up to three slice products kept
  and added in one L2-chunked pass over Python threads (5 passes instead of 9 at F = 4): no
  faster at best and about twice as slow under load (the products come back from DRAM,
  where each add right after its GEMM finds its buffer partly in L3).

No full-size copies of the operands: slices are views (BLAS takes their strides and
transposes). A product that must be reduced over broadcast batch axes or rounded to float16
is staged whole in one unreduced buffer, as on the GPU. float16,
which numpy multiplies without BLAS (about 20x slower than float32 at 512^3), is converted
to float32 once, each product rounded to float16 as it is stored (float32 accumulation, as
the IPU's default float partials), and a k-split's partial products are added in float16.
"""

from __future__ import annotations

import numpy as np

from . import _blas_gemm, matmul_cpu

_BLAS_DTYPES = (np.float32, np.float64)
# k-slices shorter than this keep the buffered adds: measuring OpenBLAS's k-blocking for them
# would take a probe GEMM with an output of BLOCKED_MIN_MNK / s elements
ACCUMULATE_MIN_K = 32
# k splits of at least this many multiply-adds (float32/float64) run as row tiles of the output
TILED_MIN_MNK = 1 << 28
TILE_ROWS = 512
TILE_ELEMENTS = 1 << 20  # at most this many output elements a tile (wide outputs: fewer rows)


def _product(x, y, out, staged, reduce_axes, gemm=np.matmul):
    """out = x @ y, through ``staged`` (x's dtype, unreduced) when ``out`` differs from it in
    dtype or, by ``reduce_axes`` (kept as 1), in shape. ``gemm``: numpy.matmul inside a
    tile (BLAS on one thread already), else ``matmul_cpu.matmul`` (thread-count-free bits)."""
    if staged is None:
        gemm(x, y, out=out)
        return
    gemm(x, y, out=staged)
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
        _product(xm[:, :s], ym[:s], om, None, (), matmul_cpu.matmul)
        for i in range(1, factor):
            cut = slice(i * s, (i + 1) * s)
            if not _gemm_accumulate(xm[:, cut], ym[cut], om):  # strides CBLAS refused
                np.add(om, matmul_cpu.matmul(xm[:, cut], ym[cut]), out=om)


def _tile_rows(n):
    """Rows of a tile: TILE_ROWS, fewer for wide outputs (about TILE_ELEMENTS a tile), a
    multiple of 16 (OpenBLAS's register tiles)."""
    return max(16, min(TILE_ROWS, TILE_ELEMENTS // max(n, 1) // 16 * 16))


def _tiled(x, y, batch):
    """Whether a k split runs as row tiles: float32/float64, at least TILED_MIN_MNK
    multiply-adds, and at least two tiles."""
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    mats = int(np.prod(batch, dtype=np.int64))
    return (x.dtype == y.dtype and x.dtype in _BLAS_DTYPES
            and mats * m * k * n >= TILED_MIN_MNK and mats * -(-m // _tile_rows(n)) >= 2)


def _tiled_slices(x, y, s, factor, out, batch):
    """out = ((p0 + p1) + p2) + ... tile by tile: each tile of ``_tile_rows(n)`` output rows
    (of one matrix of the broadcast batch) gets its F slice products from BLAS on one thread,
    each added into the tile while it is in cache (by a beta = 1 GEMM where that is bitwise
    the same, ``_accumulates_exactly``); tiles are shared out over threads
    (``conv_cpu.run_blocks``)."""
    from .conv_cpu import run_blocks  # imports Numba: only for products this big

    m, n = out.shape[-2], out.shape[-1]
    rows = _tile_rows(n)
    xb = np.broadcast_to(x, batch + x.shape[-2:])
    yb = np.broadcast_to(y, batch + y.shape[-2:])
    mats = list(np.ndindex(*batch))
    per = -(-m // rows)

    def work(t):
        idx, r0 = mats[t // per], (t % per) * rows
        xm, ym = xb[idx], yb[idx]
        cut_rows = slice(r0, min(r0 + rows, m))
        tile, xt = out[idx][cut_rows], xm[cut_rows]
        _product(xt[:, :s], ym[:s], tile, None, ())
        accumulate, part = _accumulates_exactly(xt, ym, s), None
        for i in range(1, factor):
            cut = slice(i * s, (i + 1) * s)
            if accumulate and _tile_accumulate(xt[:, cut], ym[cut], tile):
                continue
            if part is None:
                part = np.empty_like(tile)
            _product(xt[:, cut], ym[cut], part, None, ())
            np.add(tile, part, out=tile)

    run_blocks(len(mats) * per, work)


def _gemm_accumulate(x, y, out):
    """out += x @ y by CBLAS GEMMs (beta = 1) in ``matmul_cpu``'s tiles, each on one BLAS
    thread; False when CBLAS refuses the strides."""
    return matmul_cpu.gemm_accumulate(x, y, out)


def _tile_accumulate(x, y, out):
    """out += x @ y in one CBLAS GEMM (beta = 1), inside a tile (BLAS on one thread already);
    False when CBLAS refuses the strides."""
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
        if not stage and _tiled(x, y, batch):
            _tiled_slices(x, y, s, factor, out, batch)
            return out
        if not stage and _accumulates_exactly(x, y, s):
            _accumulate_slices(x, y, s, factor, out, batch)
            return out
        staged = np.empty(batch + (m, n), x.dtype) if stage else None
        part = None
        for i in range(factor):
            cut = slice(i * s, (i + 1) * s)
            xi, yi = x[..., :, cut], y[..., cut, :]
            if i == 0:
                _product(xi, yi, out, staged, reduce_axes, matmul_cpu.matmul)
                continue
            if part is None:
                part = np.empty_like(out)
            _product(xi, yi, part, staged, reduce_axes, matmul_cpu.matmul)
            np.add(out, part, out=out)
        return out
    if dimension in ("a_columns", "b_rows"):
        # the F slice GEMMs tile the output and each element is the same full-length dot
        # product either way: one GEMM (see the module docstring)
        staged = np.empty(batch + (m, n), x.dtype) if stage else None
        _product(x, y, out, staged, reduce_axes, matmul_cpu.matmul)
        return out
    raise ValueError(f"serialized_matmul: dimension must be 'a_columns', 'a_rows_b_columns' "
                     f"or 'b_rows', got {dimension!r}")
