"""GEMMs on the GPU through cuBLAS, called directly (ctypes) rather than through cupy.

Why not ``cupy.matmul``: cupy refuses every cuBLAS call while a stream is capturing a CUDA
graph ("calling cuBLAS API during stream capture is currently unsupported"), and a loop body
without its GEMMs is not worth capturing (``emulation/graph_replay.py``). cuBLAS itself
captures GEMMs once the handle has a workspace of its own (``cublasSetWorkspace``; cuBLAS
then allocates nothing inside the capture). The matmul op takes this path on the GPU eagerly
and in captures alike, so a replayed loop computes with the same algorithm, bit for bit.

Each thread has one handle per device (cuBLAS handles are not shared between threads; each
replica runs on its own thread and stream), with a 32 MiB workspace (cuBLAS's figure for
Hopper). Row-major C = A @ B is the column-major product C^T = B^T A^T; an operand that is
the transpose of a C-contiguous matrix (``swapaxes`` of the last two axes, as the matmul op's
``transpose_a/b`` give) is passed transposed without a copy. float16 multiplies in float32
(cuBLAS's COMPUTE_32F, as TF's GPU kernel and the IPU's float partials), float32 in float32
without TF32, float64 in float64. Other dtypes return None: the caller uses ``cupy.matmul``.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading

import cupy
import numpy as np

__all__ = ["matmul"]

_OP_N, _OP_T = 0, 1
_CUDA_R_32F, _CUDA_R_64F, _CUDA_R_16F = 0, 1, 2
_COMPUTE_32F, _COMPUTE_64F = 68, 70
_GEMM_DEFAULT = -1
_WORKSPACE_BYTES = 32 << 20
_INT_MAX = 2**31 - 1

_TYPES = {  # dtype -> (cuda data type, compute type, scalar ctype)
    np.dtype(np.float16): (_CUDA_R_16F, _COMPUTE_32F, ctypes.c_float),
    np.dtype(np.float32): (_CUDA_R_32F, _COMPUTE_32F, ctypes.c_float),
    np.dtype(np.float64): (_CUDA_R_64F, _COMPUTE_64F, ctypes.c_double),
}

_lib = None
_lib_lock = threading.Lock()
_local = threading.local()


def _library_path() -> str | None:
    """The libcublas that cupy loaded (so both use one library), from /proc/self/maps."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.rsplit(None, 1)[-1]
                if os.path.basename(path).startswith("libcublas.so"):
                    return path
    except OSError:
        return None
    return None


def _library():
    global _lib
    if _lib is not None:
        return _lib
    with _lib_lock:
        if _lib is None:
            cupy.cuda.device.get_cublas_handle()  # makes cupy load libcublas
            path = _library_path()
            names = [path] if path else []
            major = cupy.cuda.runtime.runtimeGetVersion() // 1000
            names += [f"libcublas.so.{major}", "libcublas.so"]
            lib = None
            for name in names:
                try:
                    lib = ctypes.CDLL(name)
                    break
                except OSError:
                    continue
            if lib is None:
                raise OSError(f"cannot load cuBLAS (tried {names})")
            vp, i, ll = ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
            lib.cublasCreate_v2.argtypes = [ctypes.POINTER(vp)]
            lib.cublasSetStream_v2.argtypes = [vp, vp]
            lib.cublasSetWorkspace_v2.argtypes = [vp, vp, ctypes.c_size_t]
            lib.cublasGemmEx.argtypes = [vp, i, i, i, i, i, vp, vp, i, i, vp, i, i, vp, vp, i,
                                         i, i, i]
            lib.cublasGemmStridedBatchedEx.argtypes = [
                vp, i, i, i, i, i, vp, vp, i, i, ll, vp, i, i, ll, vp, vp, i, i, ll, i, i, i]
            _lib = lib
    return _lib


def _check(status: int, what: str) -> None:
    if status != 0:
        raise RuntimeError(f"cuBLAS {what} failed with status {status}")


class _Handle:
    """This thread's cuBLAS handle on one device, its workspace and its last stream."""

    def __init__(self, lib):
        h = ctypes.c_void_p()
        _check(lib.cublasCreate_v2(ctypes.byref(h)), "cublasCreate")
        self.handle = h
        self.workspace = cupy.empty(_WORKSPACE_BYTES, cupy.uint8)
        self.stream = None

    def bind(self, lib, stream_ptr: int):
        # cublasSetStream resets the workspace to cuBLAS's own pool: set ours again after it
        if stream_ptr != self.stream:
            _check(lib.cublasSetStream_v2(self.handle, stream_ptr), "cublasSetStream")
            _check(lib.cublasSetWorkspace_v2(self.handle, self.workspace.data.ptr,
                                             _WORKSPACE_BYTES), "cublasSetWorkspace")
            self.stream = stream_ptr
        return self.handle


def _handle(lib):
    handles = getattr(_local, "handles", None)
    if handles is None:
        handles = _local.handles = {}
    dev = cupy.cuda.runtime.getDevice()
    h = handles.get(dev)
    if h is None:
        h = handles[dev] = _Handle(lib)
    return h.bind(lib, cupy.cuda.get_current_stream().ptr)


def _layout(x, rows: int, cols: int):
    """(array, transposed, leading dimension, batch stride in elements) for ``x`` of shape
    (..., rows, cols) with a uniform batch stride, copying only when no such view exists."""
    item = x.itemsize
    s_r, s_c = x.strides[-2], x.strides[-1]
    batch = x.shape[:-2]
    if rows <= 1 or cols <= 1 or s_c == item and s_r == cols * item:
        if x.flags.c_contiguous:
            return x, False, max(cols, 1), rows * cols
    if s_r == item and s_c == rows * item and rows > 1 and cols > 1:
        # the transpose of a C-contiguous (..., cols, rows) array
        if _uniform_batch(x, batch, rows * cols * item):
            return x, True, rows, rows * cols
    c = cupy.ascontiguousarray(x)
    return c, False, max(cols, 1), rows * cols


def _uniform_batch(x, batch, matrix_bytes: int) -> bool:
    expected = matrix_bytes
    for size, stride in zip(reversed(batch), reversed(x.strides[:-2])):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def matmul(a, b):
    """``a @ b`` for cupy arrays of rank >= 2 with one float dtype (batch axes broadcast), or
    None where this path does not apply (other dtypes, sizes beyond cuBLAS's int range)."""
    dtype = a.dtype
    if dtype != b.dtype or dtype not in _TYPES:
        return None
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    nbatch = math.prod(batch)
    if max(m, n, k, nbatch) > _INT_MAX:
        return None
    out = cupy.empty((*batch, m, n), dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    operands = []
    for x, rows, cols in ((a, m, k), (b, k, n)):
        xb = x.shape[:-2]
        if math.prod(xb) == 1:
            x = x.reshape(rows, cols) if x.ndim != 2 else x
            arr, trans, ld, _ = _layout(x, rows, cols)
            operands.append((arr, trans, ld, 0))
            continue
        if tuple(xb) != tuple(batch):
            x = cupy.ascontiguousarray(cupy.broadcast_to(x, (*batch, rows, cols)))
        arr, trans, ld, stride = _layout(x, rows, cols)
        operands.append((arr, trans, ld, stride))
    (a_arr, a_t, lda, sa), (b_arr, b_t, ldb, sb) = operands
    lib = _library()
    handle = _handle(lib)
    dt, compute, scalar = _TYPES[dtype]
    alpha, beta = scalar(1.0), scalar(0.0)
    # column-major: C^T (n x m) = op(B)^T (n x k) @ op(A)^T (k x m)
    op_b = _OP_T if b_t else _OP_N
    op_a = _OP_T if a_t else _OP_N
    if nbatch == 1:
        status = lib.cublasGemmEx(handle, op_b, op_a, n, m, k, ctypes.byref(alpha),
                                  b_arr.data.ptr, dt, ldb, a_arr.data.ptr, dt, lda,
                                  ctypes.byref(beta), out.data.ptr, dt, n, compute,
                                  _GEMM_DEFAULT)
        _check(status, "cublasGemmEx")
    else:
        status = lib.cublasGemmStridedBatchedEx(
            handle, op_b, op_a, n, m, k, ctypes.byref(alpha), b_arr.data.ptr, dt, ldb, sb,
            a_arr.data.ptr, dt, lda, sa, ctypes.byref(beta), out.data.ptr, dt, n, m * n,
            nbatch, compute, _GEMM_DEFAULT)
        _check(status, "cublasGemmStridedBatchedEx")
    return out
