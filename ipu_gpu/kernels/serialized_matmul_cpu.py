"""Serialized matmul on the CPU: the slice GEMMs of ``serialized_matmul`` through numpy's BLAS
(OpenBLAS), each written into its place in the preallocated output; twin of
serialized_matmul_gpu.

No full-size copies: slices are views (BLAS takes their strides and transposes), m- and
n-slices are written straight into row/column blocks of ``out``.

k-split, ((p0 + p1) + p2) + ...: p0 is written into ``out``; each later slice product is
added by one CBLAS GEMM with beta = 1 (``out += x_i @ y_i``, ``_blas_gemm``) when that is
bitwise ``out + p_i``: OpenBLAS adds a GEMM's register sums into C once per k-block of at
most GEMM_Q (320 for float32, 256 for float64 on this AMD EPYC's Haswell/Zen kernels), so
beta = 1 rounds exactly as the separate add when the slice length s is one k-block,
measured once per (dtype, s) by ``_blas_gemm.one_k_block``, for float32/float64 products of
at least BLOCKED_MIN_MNK multiply-adds. Otherwise (longer slices, small products, CBLAS not
found, int32, float16, a batch reduction) each later p_i goes through one reused
output-sized buffer and a separate ``np.add``, as before. The beta = 1 path saves per slice
OpenBLAS's zeroing pass over the buffer and the add's three output-sized passes: 2048^3
float32 split 8 ways along k went from 1.22 to 1.08 times one np.matmul on the 2-core EPYC.

float16, which numpy multiplies without BLAS (about 20x slower than float32 at 512^3): its
operands are converted to float32 once and each slice product is rounded to float16 as it
is stored, i.e. float32 accumulation as the IPU's default float partials, and a k-split's
partial products are still added in float16.
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
    """out[..., m, n] = x[..., m, k] @ y[..., k, n] (batch axes broadcasting, any strides) as
    ``factor`` GEMMs split along m (``'a_columns'``), k (``'a_rows_b_columns'``: partial
    products added into ``out`` in slice order, ((p0 + p1) + p2) + ...) or n (``'b_rows'``).
    ``out``: C-contiguous, dtype of x, not zeroed, shape = broadcast batch + (m, n) with the
    axes in ``reduce_axes`` (batch axes) kept as 1: each slice's product is summed over them
    before it is placed or added. Deterministic. Returns ``out``."""
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
    if dimension == "a_columns":
        s = m // factor
        staged = np.empty(batch + (s, n), x.dtype) if stage else None
        for i in range(factor):
            cut = slice(i * s, (i + 1) * s)
            _product(x[..., cut, :], y, out[..., cut, :], staged, reduce_axes)
        return out
    if dimension == "b_rows":
        s = n // factor
        staged = np.empty(batch + (m, s), x.dtype) if stage else None
        for i in range(factor):
            cut = slice(i * s, (i + 1) * s)
            _product(x, y[..., :, cut], out[..., :, cut], staged, reduce_axes)
        return out
    raise ValueError(f"serialized_matmul: dimension must be 'a_columns', 'a_rows_b_columns' "
                     f"or 'b_rows', got {dimension!r}")
