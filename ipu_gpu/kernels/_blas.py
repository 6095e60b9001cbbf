"""The BLAS numpy links, and control of its thread count (imports only numpy and ctypes).

OpenBLAS's thread count is one number for the whole process: in the pthreads builds numpy
ships, even ``openblas_set_num_threads_local`` sets it for every thread. On some CPUs (its
Haswell and Zen kernels: every AMD CPU and Intel CPUs without AVX-512) a GEMM's bits depend on
that count. Code that needs GEMM results independent of the thread count and of what other
threads are doing runs inside ``single_threaded_blas``: the convolution kernels (which thread
over blocks themselves) and the engine while a program's replicas run concurrently.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import threading

_LIB = None
_SETTER = None
_looked_up = False
_lock = threading.Lock()
_depth = 0
_saved = 0


def numpy_blas_library():
    """A ctypes handle through which numpy's BLAS symbols resolve, or None."""
    global _LIB
    if _LIB is None:
        for mod in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
            try:
                # dlsym on the extension's handle also searches the libraries it links
                _LIB = ctypes.CDLL(importlib.import_module(mod).__file__)
                break
            except (ImportError, OSError):
                continue
    return _LIB


def thread_setter():
    """``set(n) -> previous`` for OpenBLAS's process-wide thread count, or None when numpy's
    BLAS is not an OpenBLAS that exports one."""
    global _SETTER, _looked_up
    if not _looked_up:
        _SETTER = _find_setter(numpy_blas_library())
        _looked_up = True
    return _SETTER


def _find_setter(lib):
    if lib is None:
        return None
    local = getattr(lib, "openblas_set_num_threads_local", None)  # returns the previous count
    if local is not None:
        local.argtypes = [ctypes.c_int]
        local.restype = ctypes.c_int
        return local
    for suffix in ("64_", "_64_", ""):  # older OpenBLAS: separate getter and setter
        for prefix in ("scipy_openblas", "openblas"):
            setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            if setter is None or getter is None:
                continue
            setter.argtypes, setter.restype = [ctypes.c_int], None
            getter.argtypes, getter.restype = [], ctypes.c_int

            def set_threads(n, setter=setter, getter=getter):
                previous = getter()
                setter(n)
                return previous

            return set_threads
    return None


@contextlib.contextmanager
def single_threaded_blas():
    """OpenBLAS runs every call on one thread while any such section is open in the process
    (sections nest and overlap across threads; the last to close restores the count). The
    count is process-wide, so a numpy matmul another thread makes meanwhile runs on one thread
    too. Does nothing when numpy's BLAS is not OpenBLAS."""
    global _depth, _saved
    set_threads = thread_setter()
    if set_threads is None:
        yield
        return
    with _lock:
        if _depth == 0:
            _saved = set_threads(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                set_threads(_saved)


def _after_fork_in_child():
    global _lock, _depth
    _lock = threading.Lock()  # the parent's holder does not exist here
    _depth = 0


os.register_at_fork(after_in_child=_after_fork_in_child)
