"""``out = ((out + p_1) + p_2) + ...``, elementwise in that order, for C-contiguous arrays of
one shape and dtype, in one pass over memory: the arrays are cut into chunks of CHUNK_BYTES
of ``out`` and each chunk of ``out`` takes every addend while it stays in the core's L2
cache (read ``out`` and each p_i once, write ``out`` once: G + 2 passes for G addends,
against 3 G for G whole-array ``np.add`` calls). Chunks are shared out over up to
``num_threads()`` Python threads (``np.add`` releases the GIL), as memory bandwidth grows
with cores; every thread uses the caller's numpy error state (``np.errstate``). Each element
gets the same additions in the same order as with whole-array adds, so the result is
bitwise ``np.add``'s for any thread count and chunking.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._threads import num_threads

# half of a Zen 2/3 core's 512 KiB L2: a chunk of out plus the streaming addend chunk fit
CHUNK_BYTES = 256 << 10
# below this many bytes of out, one thread and whole-array adds (thread hand-off costs more)
THREADED_MIN_BYTES = 4 << 20

_POOL = None
_pool_lock = threading.Lock()


def _forget_pool():
    global _POOL, _pool_lock
    _POOL = None  # a forked child has none of the parent's threads
    _pool_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def _pool(workers):
    global _POOL
    with _pool_lock:
        if _POOL is None or _POOL._max_workers < workers:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ipu_gpu_add")
        return _POOL


def add_in_order(out, addends, threads=None):
    """``out = ((out + addends[0]) + addends[1]) + ...`` in place; every array C-contiguous,
    of ``out``'s shape and dtype. ``threads``: at most this many threads (default
    ``num_threads()``). Returns ``out``."""
    if not addends or out.size == 0:
        return out
    flat_out = out.reshape(-1)
    flat = [p.reshape(-1) for p in addends]
    if out.nbytes < THREADED_MIN_BYTES:
        for p in flat:
            np.add(flat_out, p, out=flat_out)
        return out
    step = max(1, CHUNK_BYTES // out.itemsize)
    nchunks = -(-flat_out.size // step)
    nt = max(1, min(num_threads() if threads is None else threads, nchunks))
    ticket = itertools.count()  # next() on it is atomic under the GIL
    errors = np.geterr()  # numpy's error state is per thread: the pool takes the caller's

    def loop():
        with np.errstate(**errors):
            c = next(ticket)
            while c < nchunks:
                lo = c * step
                o = flat_out[lo:lo + step]
                for p in flat:
                    np.add(o, p[lo:lo + step], out=o)
                c = next(ticket)

    if nt == 1:
        loop()
        return out
    futures = [_pool(nt - 1).submit(loop) for _ in range(nt - 1)]
    try:
        loop()
    finally:
        for f in futures:
            f.result()
    return out
