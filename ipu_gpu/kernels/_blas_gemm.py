"""``C = A @ B + beta * C`` through the CBLAS ``?gemm`` of the BLAS numpy links (numpy's
bundled scipy-openblas: ``scipy_cblas_sgemm64_`` and friends, found at run time), for the
accumulating GEMMs numpy.matmul cannot issue (beta = 1). Imports only numpy and ctypes.

When no usable symbol is found (another numpy build, a BLAS without CBLAS), ``gemm`` returns
False and the caller takes its numpy path.

``one_k_block(dtype, k)`` answers whether OpenBLAS multiplies a GEMM of inner length k in a
single pass over C: its level-3 drivers cut k into blocks of at most GEMM_Q and add each
block's register sums into C in turn, so ``C += A @ B`` (beta = 1) rounds once, exactly as
``C + (A @ B)``, only when k is one block. GEMM_Q depends on the CPU kernel OpenBLAS picks
(320 for float32 and 256 for float64 with the Haswell/Zen kernels of this AMD EPYC; from
below 192 to over 512 under other OPENBLAS_CORETYPE values), so the answer is measured,
not looked up: a GEMM of that k accumulated with beta = 1 is compared bit for bit with the
two-step sum on random data (cached per dtype and k), in the size regime where OpenBLAS
takes its blocked drivers (no small-matrix or direct kernels, no GEMV forwarding: see
``BLOCKED_MIN_MNK``).
"""

from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

from ._blas import numpy_blas_library

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

# m * n * k at and above which OpenBLAS (0.3.2x-0.3.3x) runs a GEMM through its blocked
# level-3 drivers: its small-matrix kernels stop at 100^3 (x86-64) or 64^3 (arm64 SVE,
# POWER10) and the SkylakeX direct sgemm at 28 * 512^2; GEMV forwarding needs m or n of 1.
BLOCKED_MIN_MNK = 1 << 23

_FNS = None
_lock = threading.Lock()
_one_block = {}


def _find():
    fns = {}
    lib = numpy_blas_library()
    if lib is None:
        return fns
    for dtype, letter, real in ((np.float32, "s", ctypes.c_float),
                                (np.float64, "d", ctypes.c_double)):
        for name, int_t in ((f"scipy_cblas_{letter}gemm64_", ctypes.c_int64),
                            (f"cblas_{letter}gemm64_", ctypes.c_int64),
                            (f"scipy_cblas_{letter}gemm", ctypes.c_int),
                            (f"cblas_{letter}gemm", ctypes.c_int)):
            try:
                fn = getattr(lib, name)
            except AttributeError:
                continue
            p = ctypes.c_void_p
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_t, int_t, int_t, real,
                           p, int_t, p, int_t, real, p, int_t]
            fn.restype = None
            limit = np.iinfo(np.int64 if int_t is ctypes.c_int64 else np.int32).max
            if _self_test(fn, np.dtype(dtype)):
                fns[np.dtype(dtype)] = (fn, limit, name, int_t)
            break
    return fns


def _self_test(fn, dtype) -> bool:
    """Whether ``fn`` computes a small product right, beta = 1 included (a wrong integer
    width would not)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 3)).astype(dtype)
    b = rng.standard_normal((3, 4)).astype(dtype)
    c = rng.standard_normal((5, 4)).astype(dtype)
    want = c + a @ b
    try:
        fn(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, 5, 4, 3, 1.0, a.ctypes.data, 3, b.ctypes.data, 4,
           1.0, c.ctypes.data, 4)
    except Exception:  # a missing or mistyped symbol: numpy's path instead
        return False
    return bool(np.allclose(c, want, rtol=1e-4, atol=1e-5))


def _functions():
    global _FNS
    if _FNS is None:
        with _lock:
            if _FNS is None:
                _FNS = _find()
    return _FNS


def cblas_gemms() -> dict:
    """``{dtype: (fn, largest int argument, symbol name, ctypes int type)}``: the self-tested
    CBLAS ``?gemm`` of numpy's BLAS for float32/float64 (empty when none is found). Looked up
    once; conv_cpu builds its Numba-callable twins from the same symbols."""
    return _functions()


def available(dtype) -> bool:
    """Whether ``gemm`` can run for ``dtype`` (float32/float64 with CBLAS found)."""
    return np.dtype(dtype) in _functions()


def _operand(a):
    """(transpose flag, leading dimension) of a 2-D view for row-major CBLAS, or None when
    neither axis is unit-stride."""
    isz = a.itemsize
    s0, s1 = a.strides
    rows, cols = a.shape
    if (s1 == isz or cols == 1) and s0 % isz == 0 and s0 // isz >= max(1, cols):
        return _NO_TRANS, s0 // isz
    if (s0 == isz or rows == 1) and s1 % isz == 0 and s1 // isz >= max(1, rows):
        return _TRANS, s1 // isz
    return None


def gemm(x, y, out, beta) -> bool:
    """``out = x @ y + beta * out`` for 2-D arrays of one float dtype (beta 0 or 1), each
    with a unit stride along one axis and ``out`` row-major; True when done, False (nothing
    written) when CBLAS is missing or the strides or sizes do not suit it."""
    entry = _functions().get(out.dtype)
    if entry is None or x.dtype != out.dtype or y.dtype != out.dtype:
        return False
    fn, limit = entry[:2]
    m, k = x.shape
    n = y.shape[1]
    if m == 0 or n == 0 or k == 0:
        return False
    ox, oy = _operand(x), _operand(y)
    isz = out.itemsize
    if (ox is None or oy is None or out.strides[1] != isz or out.strides[0] % isz
            or out.strides[0] // isz < n or any(a.ctypes.data % isz for a in (x, y, out))):
        return False
    ldc = out.strides[0] // isz
    if max(m, n, k, ox[1], oy[1], ldc) > limit:
        return False
    fn(_ROW_MAJOR, ox[0], oy[0], m, n, k, 1.0, x.ctypes.data, ox[1], y.ctypes.data, oy[1],
       1.0 if beta else 0.0, out.ctypes.data, ldc)
    return True


def one_k_block(dtype, k) -> bool:
    """Whether a GEMM of inner length ``k`` (of at least BLOCKED_MIN_MNK multiply-adds, m and
    n at least 2) accumulated into C with beta = 1 gives bitwise ``C + (A @ B)``: OpenBLAS
    takes k in one block. Measured once per (dtype, k) on random data (see the module
    docstring); False without CBLAS."""
    key = (np.dtype(dtype), int(k))
    hit = _one_block.get(key)
    if hit is None:
        hit = _measure_one_block(*key)
        _one_block[key] = hit
    return hit


def _measure_one_block(dtype, k) -> bool:
    if k <= 0 or not available(dtype):
        return False
    side = max(16, math.isqrt(BLOCKED_MIN_MNK // k) + 1)  # m = n, past every small path
    rng = np.random.default_rng(k)
    a = rng.standard_normal((side, k), dtype=dtype)
    b = rng.standard_normal((k, side), dtype=dtype)
    c0 = rng.standard_normal((side, side), dtype=dtype)
    p = np.empty_like(c0)
    acc = c0.copy()
    if not (gemm(a, b, p, 0) and gemm(a, b, acc, 1)):
        return False
    return bool(np.array_equal(acc, c0 + p))
