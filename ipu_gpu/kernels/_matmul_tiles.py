"""The jitted tile loops of ``matmul_cpu`` (imported by it on first use: this imports Numba).

``sgemm_tiles``/``dgemm_tiles(ta, tb, a, lda, b, ldb, c, ldc, k, rows, cols, a_offs,
b_offs, c_offs, beta)``: for every matrix ``i`` of a batch (byte offsets ``*_offs[i]`` from
the first elements of ``a``, ``b``, ``c``: one-element views of the operands, so one
specialization serves every layout and rank) and every output tile ``rows[r]:rows[r+1]`` x
``cols[c]:cols[c+1]``, one row-major CBLAS GEMM ``C = op(A) @ op(B) + beta * C`` with the
transpose flags ``ta``/``tb`` (111 or 112) and leading dimensions ``ld*`` in elements. The
tiles go over Numba's threads (``prange``), each GEMM whole on one thread; the ``*_serial``
twins run them in order on the calling thread (the same GEMMs, so the same bits), for a
forked child of a process that started GNU OpenMP's threads (which would abort it). The CBLAS
functions are the symbols ``matmul_cpu.register_cblas`` registers with LLVM.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, types

from . import _threads  # Numba's threading layer, before the first parallel kernel
from .matmul_cpu import register_cblas

register_cblas()  # the CBLAS symbols the loops below call, before any of them links

_I32, _I64 = types.int32, types.int64


def _signature(real):
    return types.void(_I32, _I32, _I32, _I64, _I64, _I64, real, _I64, _I64, _I64, _I64, real,
                      _I64, _I64)


_SGEMM = types.ExternalFunction("ipu_gpu_cblas_sgemm64", _signature(types.float32))
_DGEMM = types.ExternalFunction("ipu_gpu_cblas_dgemm64", _signature(types.float64))
_ROW_MAJOR, _TRANS = 101, 112


@njit(inline="always")
def _tile(t, ta, tb, pa, lda, pb, ldb, pc, ldc, rows, cols, a_offs, b_offs, c_offs, isz):
    nr = rows.shape[0] - 1
    nc = cols.shape[0] - 1
    mat = t // (nr * nc)
    rc = t - mat * nr * nc
    r = rc // nc
    c = rc - r * nc
    r0 = rows[r]
    c0 = cols[c]
    a = pa + a_offs[mat] + (r0 * isz if ta == _TRANS else r0 * lda * isz)
    b = pb + b_offs[mat] + (c0 * ldb * isz if tb == _TRANS else c0 * isz)
    cp = pc + c_offs[mat] + (r0 * ldc + c0) * isz
    return a, b, cp, rows[r + 1] - r0, cols[c + 1] - c0


@njit(cache=True, nogil=True, parallel=True)
def sgemm_tiles(ta, tb, a1, lda, b1, ldb, c1, ldc, k, rows, cols, a_offs, b_offs, c_offs, beta):
    pa, pb, pc = a1.ctypes.data, b1.ctypes.data, c1.ctypes.data
    count = c_offs.shape[0] * (rows.shape[0] - 1) * (cols.shape[0] - 1)
    one = np.float32(1.0)
    bf = np.float32(beta)
    for t in prange(count):
        a, b, c, mt, nt = _tile(t, ta, tb, pa, lda, pb, ldb, pc, ldc, rows, cols, a_offs,
                                b_offs, c_offs, 4)
        _SGEMM(_ROW_MAJOR, ta, tb, mt, nt, k, one, a, lda, b, ldb, bf, c, ldc)


@njit(cache=True, nogil=True, parallel=True)
def dgemm_tiles(ta, tb, a1, lda, b1, ldb, c1, ldc, k, rows, cols, a_offs, b_offs, c_offs, beta):
    pa, pb, pc = a1.ctypes.data, b1.ctypes.data, c1.ctypes.data
    count = c_offs.shape[0] * (rows.shape[0] - 1) * (cols.shape[0] - 1)
    one = np.float64(1.0)
    bf = np.float64(beta)
    for t in prange(count):
        a, b, c, mt, nt = _tile(t, ta, tb, pa, lda, pb, ldb, pc, ldc, rows, cols, a_offs,
                                b_offs, c_offs, 8)
        _DGEMM(_ROW_MAJOR, ta, tb, mt, nt, k, one, a, lda, b, ldb, bf, c, ldc)


@njit(cache=True, nogil=True)
def sgemm_tiles_serial(ta, tb, a1, lda, b1, ldb, c1, ldc, k, rows, cols, a_offs, b_offs, c_offs,
                       beta):
    pa, pb, pc = a1.ctypes.data, b1.ctypes.data, c1.ctypes.data
    count = c_offs.shape[0] * (rows.shape[0] - 1) * (cols.shape[0] - 1)
    one = np.float32(1.0)
    bf = np.float32(beta)
    for t in range(count):
        a, b, c, mt, nt = _tile(t, ta, tb, pa, lda, pb, ldb, pc, ldc, rows, cols, a_offs,
                                b_offs, c_offs, 4)
        _SGEMM(_ROW_MAJOR, ta, tb, mt, nt, k, one, a, lda, b, ldb, bf, c, ldc)


@njit(cache=True, nogil=True)
def dgemm_tiles_serial(ta, tb, a1, lda, b1, ldb, c1, ldc, k, rows, cols, a_offs, b_offs, c_offs,
                       beta):
    pa, pb, pc = a1.ctypes.data, b1.ctypes.data, c1.ctypes.data
    count = c_offs.shape[0] * (rows.shape[0] - 1) * (cols.shape[0] - 1)
    one = np.float64(1.0)
    bf = np.float64(beta)
    for t in range(count):
        a, b, c, mt, nt = _tile(t, ta, tb, pa, lda, pb, ldb, pc, ldc, rows, cols, a_offs,
                                b_offs, c_offs, 8)
        _DGEMM(_ROW_MAJOR, ta, tb, mt, nt, k, one, a, lda, b, ldb, bf, c, ldc)


# ---- one planned 2-D product (``matmul_cpu._PLANS``): its fixed arguments in one array -------
# ``plan`` (int64): ta, tb, lda, ldb, ldc, k, the tile rows nr and columns nc, then the nr + 1
# row borders and the nc + 1 column borders. Four arguments instead of fifteen: the product a
# training step repeats pays less Python and Numba dispatch. The same GEMMs as the loops above
# with beta 0 and one matrix, so the same bits.
PLAN_HEAD = 8
_NO_OFFSETS = np.zeros(1, np.int64)


@njit(inline="always")
def _plan_fields(plan):
    nr, nc = plan[6], plan[7]
    rows = plan[PLAN_HEAD:PLAN_HEAD + nr + 1]
    cols = plan[PLAN_HEAD + nr + 1:PLAN_HEAD + nr + nc + 2]
    return plan[0], plan[1], plan[2], plan[3], plan[4], plan[5], nr * nc, rows, cols


@njit(cache=True, nogil=True, parallel=True)
def gemm_plan(a1, b1, c1, plan):
    """The planned product's tiles, float32 (SGEMM) or float64 (DGEMM) by the operands."""
    ta, tb, lda, ldb, ldc, k, count, rows, cols = _plan_fields(plan)
    pa, pb, pc = a1.ctypes.data, b1.ctypes.data, c1.ctypes.data
    isz = a1.itemsize
    for t in prange(count):
        a, b, c, mt, nt = _tile(t, ta, tb, pa, lda, pb, ldb, pc, ldc, rows, cols, _NO_OFFSETS,
                                _NO_OFFSETS, _NO_OFFSETS, isz)
        if isz == 4:
            _SGEMM(_ROW_MAJOR, ta, tb, mt, nt, k, np.float32(1.0), a, lda, b, ldb,
                   np.float32(0.0), c, ldc)
        else:
            _DGEMM(_ROW_MAJOR, ta, tb, mt, nt, k, 1.0, a, lda, b, ldb, 0.0, c, ldc)


# the plan loop run in order on the calling thread (a forked child, an open BLAS section)
gemm_plan_serial = _threads.serial_twin(gemm_plan)
