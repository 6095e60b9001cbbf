"""The BLAS numpy links, and control of its thread count (imports only numpy and ctypes).

OpenBLAS's thread count is one number for the whole process: in the pthreads builds numpy
ships, even ``openblas_set_num_threads_local`` sets it for every thread. On some CPUs (its
Haswell and Zen kernels: every AMD CPU and Intel CPUs without AVX-512) a GEMM's bits depend on
that count. Code that needs GEMM results independent of the thread count and of what other
threads are doing runs inside ``single_threaded_blas``: the convolution kernels (which thread
over blocks themselves) and the engine while a program's replicas run concurrently.

After a threaded call OpenBLAS's worker threads spin for ``2**OPENBLAS_THREAD_TIMEOUT`` clock
ticks (default 28: about 0.1 s) before they sleep, taking a core from whatever runs next (a
Numba kernel, the convolution threads, another process); asking for one thread does not stop
them. ``limit_thread_spin`` shortens that wait (see it).
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


class _SingleThreaded:
    """``single_threaded_blas`` as a plain object (no generator: about a microsecond a use);
    the same process-wide depth count and lock. Used only through
    ``single_threaded_blas_cheap``, which looks the setter up first."""

    __slots__ = ()

    def __enter__(self):
        global _depth, _saved
        if _SETTER is not None:
            with _lock:
                if _depth == 0:
                    _saved = _SETTER(1)
                _depth += 1

    def __exit__(self, *exc):
        global _depth
        if _SETTER is not None:
            with _lock:
                _depth -= 1
                if _depth == 0:
                    _SETTER(_saved)
        return False


_SINGLE = _SingleThreaded()


def section_open() -> bool:
    """Whether a ``single_threaded_blas`` section is open anywhere in the process: its opener
    (the engine while replicas run, a convolution's blocks) is already the parallelism."""
    return _depth > 0


def single_threaded_blas_cheap():
    """``single_threaded_blas``'s section for hot paths (``with single_threaded_blas_cheap():``):
    one shared object, no generator."""
    thread_setter()
    return _SINGLE


# OpenBLAS's worker threads sleep after 2**THREAD_TIMEOUT clock ticks without work (about 26 us
# at 2.5 GHz), so they do not outlive the chain of products of one op (a step's Python gap
# between two GEMMs is a few us). Measured on a loaded 2-core AMD EPYC: a 256x1600x10 float32
# product 1 ms after the last one took 15-23 ms at OpenBLAS's default of 28 (its spinning worker
# held the second core), 0.2-0.4 ms at 4 to 16.
THREAD_TIMEOUT = 16
_spin_limited = None


def _openblas_symbol(lib, stem):
    for suffix in ("64_", "_64_", ""):
        for prefix in ("scipy_openblas", "openblas"):
            fn = getattr(lib, f"{prefix}_{stem}{suffix}", None)
            if fn is not None:
                return fn
    return None


def limit_thread_spin() -> bool:
    """Make OpenBLAS's idle worker threads sleep after ``2**THREAD_TIMEOUT`` clock ticks instead
    of its default 2**28, in a pthreads OpenBLAS, once per process; True when done (now or by an
    earlier call). OpenBLAS reads OPENBLAS_THREAD_TIMEOUT once, when it loads (with numpy), and
    its threads keep that value: this sets the variable, has OpenBLAS read its environment again
    and restarts its idle threads (they start again on the next threaded call). A timeout the
    user set is left alone (returns False), and so is any other BLAS. Changes no result: the
    threads do the same work, they only stop waiting for it sooner. Call it while no other
    thread is inside BLAS."""
    global _spin_limited
    if _spin_limited is not None:
        return _spin_limited
    _spin_limited = False
    if "OPENBLAS_THREAD_TIMEOUT" in os.environ:
        return False
    lib = numpy_blas_library()
    if lib is None:
        return False
    parallel = _openblas_symbol(lib, "get_parallel")  # 0 serial, 1 pthreads, 2 OpenMP
    read_env = getattr(lib, "openblas_read_env", None)
    shutdown = getattr(lib, "blas_thread_shutdown_", None)
    if parallel is None or read_env is None or shutdown is None:
        return False
    parallel.restype, parallel.argtypes = ctypes.c_int, []
    if parallel() != 1:
        return False
    read_env.restype, read_env.argtypes = None, []
    shutdown.restype, shutdown.argtypes = ctypes.c_int, []
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(THREAD_TIMEOUT)
    with _lock:
        read_env()
        shutdown()  # the next threaded call starts the threads with the new timeout
    _spin_limited = True
    return True


def _after_fork_in_child():
    global _lock, _depth
    _lock = threading.Lock()  # the parent's holder does not exist here
    _depth = 0


os.register_at_fork(after_in_child=_after_fork_in_child)
