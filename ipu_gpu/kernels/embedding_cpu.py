"""Embedding gather and scatter-add on the CPU (Numba); twin of embedding_gpu.

Rows are copied as raw machine words (the widest of 8/4/2 bytes that divides a row), so one
gather serves float16, float32, float64 and int32; large outputs are written with streaming
(non-temporal) stores. The scatter-add is deterministic and lock-free: every output row is
owned by exactly one thread (a block of contiguous rows after a counting sort of the ids,
taken by whichever thread comes free first, or every nthreads-th row block when the table is
much larger than the id list) and receives its
contributions in index order, so the result is bitwise the same for any thread count, serial
or parallel, and equal to the GPU twin's default (sort-based) path. float16 sums are rounded
to float16 after every addition (float32 arithmetic, then round-to-nearest-even), as a
sequence of float16 additions would be.
"""

from __future__ import annotations

import os

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from ._threads import num_threads

# Below this many elements a serial loop wins: an OpenMP launch costs more, and its spinning
# threads stall the BLAS calls that follow in a training step (docs/architecture.md).
PARALLEL_MIN_ELEMENTS = 1 << 20
# Ownership in _scatter_add_owned: row r belongs to thread (r // block) % nthreads, with
# `block` rows spanning at least this many bytes, so two threads never write the same cache
# line or page while hot rows (small ids under Zipf-like distributions) still spread out.
_OWNER_BYTES = 4096


def _last_level_cache_bytes() -> int:
    """Size of the largest CPU cache (Linux sysfs), or 32 MiB when it cannot be read."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            best = max(best, int(text.rstrip("KMG")) * scale)
    except (OSError, ValueError):
        pass
    return best or 32 << 20


# A gather output at least this large cannot stay in the last-level cache next to the table,
# so it is written with non-temporal (streaming) stores: no read-for-ownership of each output
# line, about 1.5x less memory traffic (bench/test_bench_embedding.py). Smaller outputs use
# ordinary stores and stay cached for the op that consumes them.
STREAM_MIN_BYTES = _last_level_cache_bytes() // 2


def _words(a):
    """``a`` (C-contiguous, 2-D) viewed as rows of the widest unsigned word dividing a row."""
    row_bytes = a.shape[1] * a.itemsize
    for w, t in ((8, np.uint64), (4, np.uint32), (2, np.uint16)):
        if row_bytes % w == 0 and a.itemsize <= w:
            return a.view(t)
    return a.view(np.uint8)


def empty_rows(n: int, d: int, dtype):
    """An uninitialised C-contiguous [n, d] array whose data starts on a 64-byte boundary
    (so rows of a multiple of 32 bytes can take aligned vector stores)."""
    dtype = np.dtype(dtype)
    count = n * d
    buf = np.empty(count * dtype.itemsize + 64, np.uint8)
    start = -buf.ctypes.data % 64
    return buf[start:start + count * dtype.itemsize].view(dtype).reshape(n, d)


# ---- LLVM helpers for the streaming gather ---------------------------------------------------
_VEC4 = ir.VectorType(ir.IntType(64), 4)


@intrinsic
def _stream_store4(typingctx, dst, j, src):
    """dst[j:j+4] = src[j:j+4] for 1-D uint64 arrays as one 32-byte non-temporal store;
    ``&dst[j]`` must be 32-byte aligned (the caller checks)."""
    sig = types.void(dst, j, src)

    def codegen(context, builder, signature, args):
        d, jj, s = args
        dty, _, sty = signature.args
        da = context.make_array(dty)(context, builder, d)
        sa = context.make_array(sty)(context, builder, s)
        dp = cgutils.get_item_pointer(context, builder, dty, da, [jj], wraparound=False)
        sp = cgutils.get_item_pointer(context, builder, sty, sa, [jj], wraparound=False)
        v = builder.load(builder.bitcast(sp, _VEC4.as_pointer()), align=8)
        st = builder.store(v, builder.bitcast(dp, _VEC4.as_pointer()), align=32)
        st.set_metadata("nontemporal",
                        builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _store_fence(typingctx):
    """A full memory fence: orders the weakly-ordered streaming stores before what follows."""
    sig = types.void()

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _next_block(typingctx, counter):
    """Atomically take the next block number from ``counter[0]`` (1-D int64) and return it."""
    sig = types.int64(counter)

    def codegen(context, builder, signature, args):
        aty = signature.args[0]
        a = context.make_array(aty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aty, a, [ir.Constant(ir.IntType(64), 0)],
                                       wraparound=False)
        return builder.atomic_rmw("add", ptr, ir.Constant(ir.IntType(64), 1), "monotonic")

    return sig, codegen


# The parallel kernels hand out their work in this many blocks per thread, each taken by
# whichever thread is free (an atomic counter): a thread that shares its core (another
# process, a peer library's spinning OpenMP workers) takes fewer blocks instead of holding
# the others at the end of a static split. Every block is a disjoint set of output rows
# done in index order, so the bits do not depend on who takes which.
_BLOCKS_PER_THREAD = 16


# ---- gather --------------------------------------------------------------------------------
def embedding_fwd(params, ids, out):
    """out[i] = params[ids[i]] for C-contiguous 2-D ``params`` [R, D] (any 1/2/4/8-byte dtype),
    1-D int32 ``ids`` [N] and ``out`` [N, D] of params' dtype; ids outside [0, R) give zero
    rows. Writes every element of ``out``; deterministic. Outputs of STREAM_MIN_BYTES or more
    (32-byte rows, 32-byte aligned, as ``empty_rows`` gives) bypass the cache."""
    n, d = out.shape
    if n == 0 or d == 0:
        return out
    p, o = _words(params), _words(out)
    if out.size < PARALLEL_MIN_ELEMENTS:
        _gather_serial(p, ids, o)
    elif (out.nbytes >= STREAM_MIN_BYTES and o.dtype == np.uint64 and o.shape[1] % 4 == 0
          and o.ctypes.data % 32 == 0):
        _gather_stream(p, ids, o, num_threads())
    else:
        _gather_parallel(p, ids, o, num_threads())
    return out


@njit(cache=True, nogil=True)
def _gather_range(params, ids, out, lo, hi):
    """out[i] = params[ids[i]] (zeros for ids out of range) for i in [lo, hi)."""
    rows = params.shape[0]
    w = out.shape[1]
    for i in range(lo, hi):
        _prefetch_row(params, ids, i + _GATHER_AHEAD, hi)
        r = ids[i]
        dst = out[i]
        if 0 <= r < rows:
            src = params[r]
            for j in range(w):
                dst[j] = src[j]
        else:
            for j in range(w):
                dst[j] = 0


@njit(cache=True, nogil=True)
def _gather_serial(params, ids, out):
    _gather_range(params, ids, out, 0, ids.shape[0])


@njit(cache=True, nogil=True, parallel=True)
def _gather_parallel(params, ids, out, nthreads):
    n = ids.shape[0]
    blocks = nthreads * _BLOCKS_PER_THREAD
    size = (n + blocks - 1) // blocks
    counter = np.zeros(1, np.int64)
    for _ in prange(nthreads):  # contiguous output slabs, taken as threads come free
        while True:
            b = _next_block(counter)
            if b >= blocks:
                break
            _gather_range(params, ids, out, b * size, min(n, (b + 1) * size))


@njit(cache=True, nogil=True, parallel=True)
def _gather_stream(params, ids, out, nthreads):
    # as _gather_parallel, with 32-byte non-temporal stores (uint64 rows, w % 4 == 0, aligned)
    rows = params.shape[0]
    n = ids.shape[0]
    w = out.shape[1]
    blocks = nthreads * _BLOCKS_PER_THREAD
    size = (n + blocks - 1) // blocks
    counter = np.zeros(1, np.int64)
    for _ in prange(nthreads):
        while True:
            b = _next_block(counter)
            if b >= blocks:
                break
            hi = min(n, (b + 1) * size)
            for i in range(b * size, hi):
                _prefetch_row(params, ids, i + _GATHER_AHEAD, hi)
                r = ids[i]
                dst = out[i]
                if 0 <= r < rows:
                    src = params[r]
                    for j in range(0, w, 4):
                        _stream_store4(dst, j, src)
                else:
                    for j in range(w):
                        dst[j] = 0
        _store_fence()


# The gather's software prefetch: the first _GATHER_LINES 64-byte lines of the row wanted
# _GATHER_AHEAD ids ahead (random rows defeat the hardware prefetcher until a row has started;
# on the bench sizes this made the streaming gather 10-20% faster, bench/test_bench_embedding.py).
_GATHER_AHEAD = 4
_GATHER_LINES = 4


@njit(cache=True, nogil=True, inline="always")
def _prefetch_row(params, ids, i, hi):
    """Prefetch the start of row ``ids[i]`` of ``params`` when ``i < hi`` and the id is valid."""
    if i < hi:
        r = ids[i]
        if 0 <= r < params.shape[0]:
            step = max(1, 64 // params.itemsize)
            for c in range(0, min(params.shape[1], _GATHER_LINES * step), step):
                _prefetch_read(params, r, c)


def embedding_first_bad_id(ids, rows: int) -> int:
    """Position of the first id outside [0, rows) in 1-D ``ids``, or -1 (debug checks)."""
    return int(_first_bad(ids, rows))


@njit(cache=True, nogil=True)
def _first_bad(ids, rows):
    for i in range(ids.shape[0]):
        if ids[i] < 0 or ids[i] >= rows:
            return i
    return -1


# ---- scatter-add ---------------------------------------------------------------------------
def embedding_bwd(grad, ids, out, zero_out: bool):
    """out[ids[i]] += grad[i] for C-contiguous float16/32/64 ``grad`` [N, D], 1-D int32
    ``ids`` [N] and ``out`` [R, D] of grad's dtype; with ``zero_out`` the kernel first sets
    ``out`` to zero (``out`` may be uninitialised), else it accumulates into it. Ids outside
    [0, R) are dropped. Duplicate ids accumulate in index order; deterministic (see module)."""
    rows, d = out.shape
    if rows == 0 or d == 0:
        return out
    g, o, lut = grad, out, _NO_TABLE
    if out.dtype == np.float16:  # bits in, bits out; sums through a float32 table
        g, o, lut = grad.view(np.uint16), out.view(np.uint16), _half_to_float_table()
    if max(grad.size, out.size if zero_out else 0) < PARALLEL_MIN_ELEMENTS:
        _scatter_add_serial(g, ids, o, zero_out, lut)
    elif zero_out or rows <= _SORT_MAX_ROWS_PER_ID * ids.shape[0]:
        index = _INDEX32 if ids.shape[0] <= _INDEX32_MAX_IDS else _INDEX64
        _scatter_add_sorted(g, ids, o, zero_out, num_threads(), lut, max(1, 64 // o.itemsize),
                            index)
    else:  # a large table and few ids, accumulated: not worth an O(rows) counting sort
        block = max(1, -(-_OWNER_BYTES // (d * o.itemsize)))
        _scatter_add_owned(g, ids, o, block, num_threads(), lut)
    return out


# The counting sort costs O(rows); with more rows than this per id (and no zeroing, which is
# O(rows) anyway) the parallel path scans the ids per thread instead.
_SORT_MAX_ROWS_PER_ID = 4
# Software prefetch distance of the sorted path, in entries, and how many 64-byte lines of
# each upcoming row it touches (measured on the bench sizes; the hardware prefetcher follows
# the rest of a row once it has started).
_PREFETCH_AHEAD = 4
_PREFETCH_LINES = 8
# The sort's index type (its dtype): int32 unless there are more ids than int32 holds.
_INDEX32_MAX_IDS = 2**31 - 1
_INDEX32 = np.zeros(0, np.int32)
_INDEX64 = np.zeros(0, np.int64)


@njit(cache=True, nogil=True)
def _scatter_add_serial(grad, ids, out, zero_out, lut):
    rows = out.shape[0]
    fbuf = np.empty(1, np.float32)
    if zero_out:
        for r in range(rows):
            _zero_row(out[r])
    for i in range(ids.shape[0]):
        r = ids[i]
        if 0 <= r < rows:
            _add_row(out[r], grad[i], lut, fbuf)


@njit(cache=True, nogil=True)
def _cost_bound(starts, zero_cost, target):
    """The first row r with 2 * starts[r] + zero_cost * r >= target (binary search)."""
    lo, hi = 0, starts.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if 2 * starts[mid] + zero_cost * mid < target:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, parallel=True)
def _scatter_add_sorted(grad, ids, out, zero_out, nthreads, lut, line, index):
    # A stable counting sort of the ids groups each row's contributions (in index order);
    # the rows are then cut into contiguous blocks of about equal work, taken by threads as
    # they come free, so each output row is read and written once, in ascending order within
    # its block, while the gradient rows it needs are prefetched a few entries ahead. The
    # sort is serial: its arrays take the narrowest index type (``index``'s dtype) and no
    # copies, as it holds the other threads.
    rows = out.shape[0]
    n = ids.shape[0]
    starts = np.zeros(rows + 2, index.dtype)
    for i in range(n):
        r = ids[i]
        if 0 <= r < rows:
            starts[r + 2] += 1
    for r in range(rows):
        starts[r + 2] += starts[r + 1]
    order = np.empty(starts[rows + 1], index.dtype)
    for i in range(n):  # starts[r + 1] walks row r's slots; it ends as row r + 1's start
        r = ids[i]
        if 0 <= r < rows:
            order[starts[r + 1]] = i
            starts[r + 1] += 1
    zero_cost = 1 if zero_out else 0  # zeroing a row costs about half of adding one
    total = 2 * starts[rows] + zero_cost * rows
    lines = min(out.shape[1], _PREFETCH_LINES * line)
    starts = starts[:rows + 1]
    blocks = nthreads * _BLOCKS_PER_THREAD
    counter = np.zeros(1, np.int64)
    for _ in prange(nthreads):
        fbuf = np.empty(1, np.float32)
        while True:
            b = _next_block(counter)
            if b >= blocks:
                break
            r0 = _cost_bound(starts, zero_cost, total * b // blocks)
            r1 = rows if b == blocks - 1 else _cost_bound(starts, zero_cost,
                                                          total * (b + 1) // blocks)
            q_end = starts[r1]
            for r in range(r0, r1):
                dst = out[r]
                if zero_out:
                    _zero_row(dst)
                for q in range(starts[r], starts[r + 1]):
                    ahead = q + _PREFETCH_AHEAD
                    if ahead < q_end:
                        i_ahead = order[ahead]
                        for c in range(0, lines, line):
                            _prefetch_read(grad, i_ahead, c)
                            _prefetch_write(out, ids[i_ahead], c)
                    _add_row(dst, grad[order[q]], lut, fbuf)


@njit(cache=True, nogil=True, parallel=True)
def _scatter_add_owned(grad, ids, out, block, nthreads, lut):
    # Row r belongs to thread (r // block) % nthreads; each thread scans all ids and adds
    # those it owns, in index order (no sort: O(ids) whatever the number of rows).
    rows = out.shape[0]
    for t in prange(nthreads):
        fbuf = np.empty(1, np.float32)
        for i in range(ids.shape[0]):
            r = ids[i]
            if 0 <= r < rows and (r // block) % nthreads == t:
                _add_row(out[r], grad[i], lut, fbuf)


@njit(cache=True, nogil=True)
def _zero_row(dst):
    for j in range(dst.shape[0]):
        dst[j] = 0


def _add_row(dst, src, lut, fbuf):
    """dst += src elementwise (float rows; float16 rows as uint16 bits, through ``lut``)."""


@overload(_add_row, inline="always", jit_options={"cache": True, "nogil": True})
def _add_row_impl(dst, src, lut, fbuf):
    if dst.dtype == types.uint16:
        def add_half(dst, src, lut, fbuf):
            bits = fbuf.view(np.uint32)
            for j in range(src.shape[0]):
                fbuf[0] = lut[dst[j]] + lut[src[j]]  # exact: float32 holds any two halves' sum
                dst[j] = _float_bits_to_half(bits[0])  # rounding once: a float16 addition
        return add_half

    def add(dst, src, lut, fbuf):
        for j in range(src.shape[0]):
            dst[j] += src[j]
    return add


def _make_prefetch(write: int):
    @intrinsic
    def prefetch(typingctx, arr, i, j):
        """Hint that ``arr[i, j]`` (2-D C array) will be read (or written) soon."""
        sig = types.void(arr, i, j)

        def codegen(context, builder, signature, args):
            aty, ity, jty = signature.args
            a = context.make_array(aty)(context, builder, args[0])
            idx = [context.cast(builder, v, t, types.intp)
                   for v, t in zip(args[1:], (ity, jty))]
            ptr = cgutils.get_item_pointer(context, builder, aty, a, idx, wraparound=False)
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]),
                "llvm.prefetch.p0i8")
            # rw, locality 3 (keep in all cache levels), data cache
            builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, write),
                              ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return sig, codegen

    return prefetch


_prefetch_read = _make_prefetch(0)
_prefetch_write = _make_prefetch(1)


# ---- float16 (Numba has no float16 arithmetic: bits in, bits out) ----------------------------
_HALF_TABLE = None
_NO_TABLE = np.zeros(0, np.float32)


def _half_to_float_table():
    """float32 value of every float16 bit pattern (exact), built once."""
    global _HALF_TABLE
    if _HALF_TABLE is None:
        _HALF_TABLE = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(
            np.float16).astype(np.float32)
    return _HALF_TABLE


@njit(cache=True, nogil=True)
def _float_bits_to_half(f):
    """float16 bits nearest (ties to even) to the float32 with bits ``f``."""
    a = np.int64(f)
    sign = (a >> 16) & 0x8000
    a &= 0x7FFFFFFF
    if a >= 0x7F800000:  # inf, or NaN kept quiet with the payload's top bits
        if a == 0x7F800000:
            return sign | 0x7C00
        return sign | 0x7E00 | ((a >> 13) & 0x3FF)
    if a >= 0x477FF000:  # at or past 65520, halfway above the largest half: inf
        return sign | 0x7C00
    if a < 0x38800000:  # below 2**-14: a subnormal half (or zero)
        if a < 0x33000000:  # below 2**-25: rounds to zero
            return sign
        shift = 126 - (a >> 23)  # value / 2**-24 == m / 2**shift, shift in [14, 24]
        m = (a & 0x7FFFFF) | 0x800000
        h = m >> shift
        rem = m & ((1 << shift) - 1)
        half = 1 << (shift - 1)
        if rem > half or (rem == half and (h & 1) == 1):
            h += 1
        return sign | h
    h = (a >> 13) - (112 << 10)  # rebias the exponent from 127 to 15
    rem = a & 0x1FFF
    if rem > 0x1000 or (rem == 0x1000 and (h & 1) == 1):
        h += 1  # a carry into the exponent is the correct encoding
    return sign | h


# ---- host <-> device (the CPU backend's device memory is host memory) ------------------------
def to_host(a):
    """``a`` as a C-contiguous numpy array (no copy when it already is one)."""
    return np.ascontiguousarray(a)


def to_device(a):
    """Host array ``a`` on this backend's device (the CPU: ``a`` itself)."""
    return a
