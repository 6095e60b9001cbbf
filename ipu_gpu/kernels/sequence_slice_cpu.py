"""Sequence-slice row copies on the CPU (Numba): the one kernel behind sequence_slice, its
pack/unpack forms and all their gradients.

The copy is written as a gather: a first pass records, for every destination row, the source
row of the last entry that writes it (a row-sized int64 table, not a copy of the data), then
every destination row is written exactly once, from that source row or from the fill. So
overlapping entries resolve "later entry wins" whatever the thread count, and the output
pages are first touched by the thread that fills them.

Threads: each takes one contiguous block of output rows (static), fill rows included, and
copies it in one call of ``_gather_range``. A fresh output's first-touch page faults (the
kernel zeroes each 2 MiB huge page numpy madvises) then happen in each thread's own block,
and the zeroed lines are still cached when the thread overwrites them, so ordinary stores
beat streaming ones here. On the 2-core AMD EPYC, 64 slices of 4096 x 256 float32 into a
fresh output take 1.0x the time of a 2-thread copy of the same bytes into a fresh np.empty
(bench/test_bench_sequence_slice.py; 1.2-1.3x when each row was a separate call). Dynamic
schedules were measured and lost 3-10%: 1-4 MiB chunks from a shared atomic counter, and
per-thread blocks with the idle thread stealing from the others' ends; threads faulting
neighbouring huge pages cost more than the imbalance they remove.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._threads import num_threads

# Below this many output bytes the serial loop wins: an OpenMP launch costs more, and its
# spinning threads stall BLAS calls that follow (indexing_cpu.py, bench/README.md).
PARALLEL_MIN_BYTES = 1 << 22

_WORDS = {8: np.uint64, 4: np.uint32, 2: np.uint16, 1: np.uint8}


def sequence_slice_copy(out, fill, src, num_elems, src_offsets, dst_offsets):
    """Entry i copies rows src[s:s+m] to out[d:d+m] (s, d its offsets, m its count clipped so
    neither tensor overflows; a negative count or offset copies nothing); a row written by
    several entries keeps the last; every other row of ``out`` is ``fill``'s row (zeros when
    ``fill`` is None). ``out``/``fill`` [R, D] and ``src`` [S, D] C-contiguous, one dtype
    (copied bitwise); int32 index vectors of one length. Deterministic; returns ``out``.

    Any count or offset is safe (the clipping above is the rule, not a precondition); shapes
    and dtypes that do not match raise ValueError/TypeError naming ``sequence_slice_copy``."""
    check_args("sequence_slice_copy", out, fill, src, num_elems, src_offsets, dst_offsets)
    if out.size == 0:
        return out
    rows = np.empty(out.shape[0], np.int64)
    _source_rows(num_elems, src_offsets, dst_offsets, src.shape[0], rows)
    zero = fill is None
    o, f, s = _word_views(out, out if zero else fill, src)
    if out.nbytes >= PARALLEL_MIN_BYTES:
        _gather_rows_parallel(o, f, zero, s, rows, num_threads())
    else:
        _gather_rows_serial(o, f, zero, s, rows)
    return out


_I32 = np.dtype(np.int32)


def check_args(name, out, fill, src, num_elems, src_offsets, dst_offsets):
    """Raise ValueError/TypeError unless the shapes and dtypes are those the kernels index
    with (shared with the GPU twin; O(1), reads no data)."""
    n = num_elems.shape
    if (out.ndim == 2 and src.ndim == 2 and src.shape[1] == out.shape[1] and len(n) == 1
            and src_offsets.shape == n and dst_offsets.shape == n and src.dtype == out.dtype
            and num_elems.dtype == _I32 and src_offsets.dtype == _I32
            and dst_offsets.dtype == _I32
            and (fill is None or (fill.shape == out.shape and fill.dtype == out.dtype))):
        return  # the common case in one expression: this runs on every call
    if (out.ndim != 2 or src.ndim != 2 or src.shape[1] != out.shape[1]
            or (fill is not None and fill.shape != out.shape)):
        got = f"out {list(out.shape)}, src {list(src.shape)}"
        if fill is not None:
            got += f", fill {list(fill.shape)}"
        raise ValueError(f"{name}: out (and fill) must be [R, D] and src [S, D], got {got}")
    for arg, a in (("src", src), ("fill", fill)):
        if a is not None and a.dtype != out.dtype:
            raise TypeError(f"{name}: {arg} must have out's dtype {out.dtype}, got {a.dtype}")
    vectors = (("num_elems", num_elems), ("src_offsets", src_offsets),
               ("dst_offsets", dst_offsets))
    if len(n) != 1 or any(a.shape != n for _, a in vectors):
        raise ValueError(f"{name}: num_elems, src_offsets and dst_offsets must be 1-D of one "
                         f"length, got shapes "
                         f"{', '.join(str(list(a.shape)) for _, a in vectors)}")
    for arg, a in vectors:
        if a.dtype != _I32:
            raise TypeError(f"{name}: {arg} must be int32, got {a.dtype}")


def _word_views(*arrays):
    """The 2-D arrays viewed as the widest unsigned words that divide every row and every
    base address (the copy is bitwise, so float16 rows move 8 bytes at a time)."""
    row_bytes = arrays[0].shape[1] * arrays[0].itemsize
    width = next(w for w in (8, 4, 2, 1)
                 if row_bytes % w == 0 and all(a.ctypes.data % w == 0 for a in arrays))
    return tuple(a.view(_WORDS[width]) for a in arrays)


@njit(cache=True, nogil=True)
def _source_rows(num_elems, src_offsets, dst_offsets, n_src, rows):
    rows[:] = -1
    n_dst = rows.shape[0]
    for i in range(num_elems.shape[0]):
        m = np.int64(num_elems[i])
        s = np.int64(src_offsets[i])
        d = np.int64(dst_offsets[i])
        if m <= 0 or s < 0 or d < 0:
            continue
        m = min(m, n_src - s, n_dst - d)
        for j in range(m):
            rows[d + j] = s + j


@njit(cache=True, nogil=True)
def _gather_range(out, fill, zero, src, rows, lo, hi):
    """Rows lo..hi-1 of ``out``, each from its source row or from the fill. One call per
    thread: the row loop and its copy loops compile together into vector loads and stores
    (called once per row, the same copy ran about 25% slower)."""
    for r in range(lo, hi):
        o = out[r]
        s = rows[r]
        if s >= 0:
            x = src[s]
            for j in range(o.shape[0]):
                o[j] = x[j]
        elif zero:
            for j in range(o.shape[0]):
                o[j] = 0
        else:
            x = fill[r]
            for j in range(o.shape[0]):
                o[j] = x[j]


@njit(cache=True, nogil=True)
def _gather_rows_serial(out, fill, zero, src, rows):
    _gather_range(out, fill, zero, src, rows, 0, out.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def _gather_rows_parallel(out, fill, zero, src, rows, nthreads):
    # one contiguous block of output rows per thread: streaming writes, no shared lines, and
    # each thread first-touches (page-faults) only its own block of a fresh output
    n = out.shape[0]
    chunk = (n + nthreads - 1) // nthreads
    for t in prange(nthreads):
        _gather_range(out, fill, zero, src, rows, t * chunk, min(n, (t + 1) * chunk))
