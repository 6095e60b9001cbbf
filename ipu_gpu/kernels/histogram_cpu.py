"""Histogram counts on the CPU (Numba): Graphcore's ``IpuHistogram`` bins.

PopLibs counts, per level, ``c_i = #{x : f(x) < l_i}`` and returns
``[c_0, c_1 - c_0, ..., c_{N-1} - c_{N-2}, n - c_{N-1}]``. For sorted levels that is the
histogram of ``b(x) = #{i : not (x < l_i)}`` (numpy's ``searchsorted(levels, x, 'right')``:
a value equal to a level goes to the bin above, NaN to the top bin); for unsorted levels or
NaN levels it is not a histogram at all (counts can be negative). We sort the levels (NaN
levels as +inf, whose ``c`` is then forced to 0), count ``b(x)`` against the sorted levels,
and rebuild Graphcore's differences from the counts, so any levels give the device's answer.

Finding ``b(x)`` (perf_anchors.md section 3: a binary search per element is 4x slower than
np.histogram). A grid of ``ncell`` cells (a power of two) with a monotonic cell function
``f``, so that a level in an earlier cell is <= v and one in a later cell is > v, and a
table giving, per cell, ``start[c]``: the number of levels whose cell is below ``c``
(placed with the same ``f``). When cell ``c`` holds at most one level, ``b(v) = start[c] +
(lv[start[c]] <= v)``: one table load and one comparison, no branch (with no level in the
cell, ``lv[start[c]]`` lies in a later cell, so above ``v``). Two grids, the one that parts
more levels is taken (``_prepare``):

* linear: ``f(v) = int(clamp((v - lo) * scale + 1, 0, ncell - 1))`` in float32 over the
  finite range of the levels, monotonic because each rounding step is: for levels spread
  evenly or at random over a range;
* keyed: the float32 bits of ``v + 0`` (no -0) made an unsigned key in the order of the
  values, ``f(v) = clamp(((key - key_lo) >> shift) + 1, 0, ncell - 1)``: cells of 2**shift
  consecutive floats, a resolution relative to the magnitude, for levels over orders of
  magnitude (log-spaced, TensorBoard-style exponential buckets, clusters near zero), which
  crowd into a few cells of a linear grid.

Either way the levels lie from cell 1 to ncell - 2, a guard cell each side. The grid is
doubled until no cell holds two different finite levels (as far as MAX_CELLS, or for
clustered levels CLUSTERED_MAX_CELLS, and the input size allow); the cells that still do
are flagged in the table and their inputs bisected. NaN inputs land in the top cell (a NaN
fails both float clamps; its key is 2**32 - 1), whose start is ``m`` and whose padding level
is NaN, so they need no test of their own; when infinite or NaN levels sit in the top cell
it is flagged too. The result is exactly the binary search's, whatever the rounding
(tests/test_histogram.py checks adversarial levels on each grid, and coarse grids that crowd
them, against a searchsorted reference).

Speed: a block of BLOCK inputs at a time goes through passes that each stream over it --
decode (float16, |x|) and cell (vectorised, AVX2), bins by the table
(scalar loads: LLVM emits no gathers for AMD Zen, where they are slow), the rare flagged
inputs, then counting into four independent rows (consecutive inputs never wait on one
counter). The counting has a pass of its own: fused with the look-up, each increment's
address came late (three dependent loads) and the core, guessing younger increments
independent of older ones, kept replaying them when two hit one counter: 2.5x slower. On
this 2-core AMD EPYC (Zen 3, no AVX-512), about 1.5-2 ns an input on one core on either
grid (cells 0.3, table 1.0, counting 0.35), against 6.5-9 ns for np.histogram with 257
edges: 10M inputs over 256 random levels in 0.22-0.26x its time on one thread, 0.15-0.3x
on two (two threads gained 1.5-1.7x on this shared box, less when other processes hold a
core: the parallel region waits for a descheduled thread). It was 5-7 ns (0.45-0.9x) when
the indices of the first pass were signed (Numba's negative-index fix-ups kept it scalar)
and the grid coarse (up to four dependent branch-free steps an input), and 28-55 ns (3-6x
numpy) for clustered or exponential levels, whose inputs were all bisected; those now take
0.25-0.45x.

The sorted levels, grid and table are built in one jitted call and cached by the levels'
bytes (CACHED_LEVELS): the fixed cost of a call is a few microseconds. Counts are int64,
private to each thread, summed at the end: exact, so the result does not depend on which
thread took which chunk. float16 inputs are read as their bits and decoded through a
65536-entry table (Numba has no float16 loads); float16 -> float32 is exact, so comparing
in float32 is comparing in float16.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
from numba import njit, prange, types
from llvmlite import ir
from numba.extending import intrinsic, overload

from ._threads import num_threads

# Below this many inputs (about 2 ms of serial work) the serial kernel runs. Two threads
# win from about 32k inputs on an idle machine, but a parallel region waits for its slowest
# thread: with another process on the other core, 100k inputs took 0.5-3.6 ms in parallel
# against 0.43 ms serially. And an OpenMP launch's spinning threads would stall BLAS calls
# that follow in a training step (see indexing_cpu.py).
PARALLEL_MIN_ELEMENTS = 1 << 20
# The parallel kernel deals out this many chunks a thread, dynamically (Numba's parallel
# chunk size 1), so a core shared with another process does not hold the other thread up.
CHUNKS_PER_THREAD = 8
# Grid cells: a power of two, at least CELLS_PER_LEVEL a level, doubled while two distinct
# levels share a cell, up to MAX_CELLS and to about half the inputs (the table costs about
# 0.1 ns a cell to build). Beyond MAX_CELLS, up to CLUSTERED_MAX_CELLS, only while more than
# one pair of neighbouring levels in CLUSTERED_PAIRS shares a cell: clustered levels, where
# many inputs would land in crowded cells, are worth a table beyond L2; a pair or two of
# close random levels are not (few inputs fall between them). Two of the cells are guards:
# cell 0 below the lowest finite level, the top cell above the highest (and NaN).
CELLS_PER_LEVEL = 16
MIN_CELLS = 16  # at least 4
MAX_CELLS = 1 << 16  # 128 KiB of uint16 entries: in L2 next to the streamed block
CLUSTERED_MAX_CELLS = 1 << 18
CLUSTERED_PAIRS = 64
# Inputs a pass streams over (buffers of a few KiB, in L1).
BLOCK = 1024
# Which grid: the one that parts more levels ("auto"), or "linear" or "keyed" (tests).
GRID = "auto"
# Prepared levels (sorted, with their grid and table) kept for reuse, oldest dropped first.
CACHED_LEVELS = 16
_PREPARED: dict = {}
_PREPARED_LOCK = threading.Lock()  # replicas call from several Python threads

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_INF = np.float32(np.inf)
_NAN = np.float32(np.nan)
_SCALE_MAX = 2.0 ** 100  # finite, so (v - lo) * scale is never 0 * inf (NaN) for an input
_FLAG16 = np.uint16(1 << 15)
_FLAG32 = np.uint32(1 << 31)
_SIGN = np.uint32(1 << 31)
_EXP = np.uint32(0x7F800000)
_MAX32 = np.uint32(0xFFFFFFFF)
_HALF_TO_FLOAT = None  # float32 value of each float16 bit pattern, built on first use
_NO_TABLE = np.zeros(1, np.float32)


def _half_table():
    global _HALF_TO_FLOAT
    if _HALF_TO_FLOAT is None:
        _HALF_TO_FLOAT = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    return _HALF_TO_FLOAT


def histogram_fwd(x, levels, absolute_of_input, out, accumulate=False):
    """Graphcore's histogram of 1-D ``x`` over 1-D ``levels`` [N] (both float32, or both
    float16; C-contiguous) into float32 ``out`` [N + 1]: overwritten, or added to when
    ``accumulate`` (``histogram_update``). ``absolute_of_input`` bins ``|x|``. Counts are
    exact integers rounded once to float32; deterministic. Returns ``out``."""
    n = x.shape[0]
    lv, order, nan_sorted, grid, table, flag = _prepared(levels, n)
    m = order.shape[0]
    if x.dtype == np.float16:
        xs, half = x.view(np.uint16), _half_table()
    else:
        xs, half = x, _NO_TABLE
    absolute = bool(absolute_of_input)
    if n < PARALLEL_MIN_ELEMENTS:
        _histogram_serial(xs, half, lv, m, table, flag, grid, absolute, order, nan_sorted, out,
                          bool(accumulate))
        return out
    rows = numba.config.NUMBA_NUM_THREADS  # indexed by numba.get_thread_id()
    private = np.zeros((rows, 4, m + 1), np.int64)
    chunks = min(num_threads() * CHUNKS_PER_THREAD, max(1, n >> 14))
    previous = numba.set_parallel_chunksize(1)
    try:
        _count_parallel(xs, half, lv, m, table, flag, grid, absolute, chunks, private)
    finally:
        numba.set_parallel_chunksize(previous)
    _graphcore_bins(private, order, nan_sorted, n, out, bool(accumulate))
    return out


def _prepared(levels, n):
    """The sorted levels and their grid for ``levels`` and an input of ``n`` values, cached
    by the levels' bytes (a training loop passes the same levels every step)."""
    limit = max(MIN_CELLS, min(CLUSTERED_MAX_CELLS, 1 << max(0, (n >> 1).bit_length() - 1)))
    usual = max(MIN_CELLS, min(MAX_CELLS, limit))
    key = (levels.dtype.char, limit, usual, CELLS_PER_LEVEL, MIN_CELLS, CLUSTERED_PAIRS, GRID,
           levels.tobytes())
    prepared = _PREPARED.get(key)
    if prepared is None:
        m = levels.shape[0]
        flag = _FLAG16 if m < (1 << 15) else _FLAG32
        lv, order, nan_sorted, keyed, lo, scale, top, klo, shift, table = _prepare(
            levels.astype(np.float32), limit, usual, CELLS_PER_LEVEL, MIN_CELLS,
            CLUSTERED_PAIRS, ("auto", "linear", "keyed").index(GRID), flag)
        # Numba hands float32 scalars back as Python floats: the kernels must get float32
        # again, or they would place inputs in float64 and the levels were placed in float32
        grid = (keyed, np.float32(lo), np.float32(scale), np.float32(top), np.uint32(klo),
                np.uint32(shift))
        prepared = (lv, order, nan_sorted, grid, table, flag)
        with _PREPARED_LOCK:
            while len(_PREPARED) >= max(1, CACHED_LEVELS):
                del _PREPARED[next(iter(_PREPARED))]
            _PREPARED[key] = prepared
    return prepared


@njit(cache=True, nogil=True)
def _prepare(levels, limit, usual, cells_per_level, min_cells, clustered_pairs, grid, flag):
    """(sorted levels + NaN padding, order, NaN-ness in sorted order, keyed, lo, scale, top,
    key_lo, shift, table): NaN levels sort as +inf; the cell grid over the finite range of
    the levels (linear: lo, scale; keyed: key_lo, shift; top = ncell - 1 as float32) and its
    look-up table. ``grid``: 0 the grid with fewer crowded cells, 1 linear, 2 keyed."""
    m = levels.shape[0]
    keys = np.empty(m, np.float32)
    for i in range(m):
        keys[i] = _INF if np.isnan(levels[i]) else levels[i]
    order = np.argsort(keys, kind="mergesort")  # stable
    lv = np.empty(m + 1, np.float32)  # NaN padding: lv[m] <= v is always false
    nan_sorted = np.empty(m, np.bool_)
    for j in range(m):
        lv[j] = keys[order[j]]
        nan_sorted[j] = np.isnan(levels[order[j]])
    lv[m] = _NAN
    lo, span = _ZERO, 0.0
    first, last = 0, m - 1
    while first < m and not np.isfinite(lv[first]):
        first += 1
    while last >= first and not np.isfinite(lv[last]):
        last -= 1
    if first <= last:
        lo = lv[first]
        span = np.float64(lv[last]) - np.float64(lv[first])
    # the float32 bits of the finite levels as ordered keys, for the keyed grid
    klo, khi = np.uint32(0), np.uint32(0)
    if first <= last:
        klo = _key(_bits(lv[first]))
        khi = _key(_bits(lv[last]))
    ncell = min_cells
    while ncell < cells_per_level * m and 2 * ncell <= usual:
        ncell *= 2
    while True:
        # the levels' range spans cells 1 .. ncell - 2 (up to rounding): a guard cell each side
        scale = np.float32(min((ncell - 3) / span, _SCALE_MAX) if span > 0 else 1.0)
        top = np.float32(ncell - 1)
        shift = 0
        while (np.int64(khi) - np.int64(klo)) >> shift > ncell - 3:
            shift += 1
        cells = np.empty(m, np.uint32)
        kcells = np.empty(m, np.uint32)
        for j in range(m):
            cells[j] = _cell(lv[j], lo, scale, top)
            kcells[j] = _key_cell(_bits(lv[j]), klo, np.uint32(shift), np.uint32(ncell - 1))
        crowded = _crowded(lv, cells, m, ncell - 1)
        kcrowded = _crowded(lv, kcells, m, ncell - 1)
        if grid == 1:
            kcrowded = crowded + 1
        elif grid == 2:
            crowded = kcrowded + 1
        fewest = min(crowded, kcrowded)
        if (2 * ncell > limit or fewest == 0
                or 2 * ncell > usual and fewest * clustered_pairs <= m):
            break
        ncell *= 2
    keyed = kcrowded < crowded
    table = _table(kcells if keyed else cells, m, ncell, flag)
    return lv, order, nan_sorted, keyed, lo, scale, top, klo, shift, table


@intrinsic
def _float_bits(typingctx, v):
    """The bits of a float32 as uint32 (a register move: the loops stay vectorised)."""
    if v != types.float32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.uint32(types.float32), codegen


@njit(cache=True, nogil=True, inline="always")
def _bits(v):
    """The bits of float32 ``v + 0`` (so -0 is +0) as uint32."""
    return _float_bits(v + _ZERO)


@njit(cache=True, nogil=True, inline="always")
def _key(b):
    """float32 bits -> uint32 in the order of the values; NaN -> 2**32 - 1 (no value's)."""
    key = np.uint32(~b) if b & _SIGN else np.uint32(b | _SIGN)
    if np.uint32(b & ~_SIGN) > _EXP:
        key = _MAX32
    return key


@njit(cache=True, nogil=True, inline="always")
def _key_cell(b, klo, shift, topu):
    """The keyed grid's cell of the value with bits ``b`` (of v + 0): cells of 2**shift
    consecutive floats from the lowest finite level's (cell 1) on; below: cell 0, above and
    NaN: the top cell. Monotonic, and resolution relative to the magnitude: for levels that
    span orders of magnitude (log-spaced levels, clusters near zero)."""
    key = _key(b)
    c = np.uint32(np.uint32(np.uint32(key - klo) >> shift) + np.uint32(1))
    c = np.uint32(0) if key < klo else min(c, topu)
    return topu if key == _MAX32 else c  # NaN: the top cell, as on the linear grid


@njit(cache=True, nogil=True, inline="always")
def _cell(v, lo, scale, top):
    # float32 throughout, monotonic in v (every rounding step is); below lo: cell 0 (the
    # clamp catches -inf), above the range: the top cell, where NaN lands too (a NaN t fails
    # both comparisons) -- so neither needs a test of its own in the counting loop
    t = (v - lo) * scale + _ONE
    if t < _ZERO:
        t = _ZERO
    if not t <= top:
        t = top
    return np.uint32(np.int32(t))


@njit(cache=True, nogil=True)
def _crowded(sorted_levels, cells, m, top_cell):
    """How many pairs of neighbouring levels, different and finite, share an inner cell (a
    finer grid would part them)."""
    crowded = 0
    for j in range(m - 1):
        if (cells[j] == cells[j + 1] and sorted_levels[j] < sorted_levels[j + 1]
                and 0 < cells[j] < top_cell):
            crowded += 1
    return crowded


@njit(cache=True, nogil=True)
def _table(cells, m, ncell, flag):
    """table[c] = start[c], the number of levels in cells below c (table[ncell] = m), with
    ``flag`` set where the single comparison cannot finish the search: cells holding two
    levels or more, and the top cell (NaN's) when it holds any."""
    table = np.empty(ncell + 1, type(flag))
    c = 0
    for j in range(m):
        cj = cells[j]
        while c <= cj:
            table[c] = j
            c += 1
        if j > 0 and cells[j - 1] == cj or cj == ncell - 1:
            table[cj] |= flag
    while c <= ncell:
        table[c] = m
        c += 1
    return table


def _value(x, i, half):
    pass


@overload(_value, inline="always")
def _value_impl(x, i, half):
    if x.dtype == types.uint16:  # float16 bits
        return lambda x, i, half: half[x[i]]
    return lambda x, i, half: x[i]


def _float32_or(x, values):
    pass


@overload(_float32_or, inline="always")
def _float32_or_impl(x, values):
    if x.dtype == types.float32:
        return lambda x, values: x
    return lambda x, values: values


def _is_half(x):
    pass


@overload(_is_half, inline="always")
def _is_half_impl(x):
    half = x.dtype == types.uint16
    return lambda x: half


@njit(cache=True, nogil=True)
def _bisect(v, k, e, sorted_levels):
    """#{levels not greater than v} for a v known to lie after level k - 1 and before e."""
    while k < e:
        mid = (k + e) >> 1
        if v < sorted_levels[mid]:
            e = mid
        else:
            k = mid + 1
    return k


@njit(cache=True, nogil=True)
def _count_range(x, half, lv, m, table, flag, grid, absolute, first, stop, counts):
    """counts[r, b] += #{x[i], first <= i < stop, of bin b}, over four rows r.

    A block at a time, in passes that each stream through the block: values and cells
    (vectorised), bins by one table load and one comparison (scalar: no gathers on AMD),
    the rare flagged cells (crowded, or NaN's top cell) bisected, then the counting.
    Indices are unsigned where they can be, so Numba adds no negative-index fix-ups (they
    kept the first pass scalar)."""
    keyed, lo, scale, top, klo, shift = grid
    topu = np.uint32(top)
    values = np.empty(BLOCK, np.float32)
    cells = np.empty(BLOCK, np.uint32)
    bins = np.empty(BLOCK, table.dtype)
    mask = ~flag
    c0, c1, c2, c3 = counts[0], counts[1], counts[2], counts[3]
    for b0 in range(first, stop, BLOCK):
        size = min(BLOCK, stop - b0)
        xb = x[b0:b0 + size]
        vals = _float32_or(xb, values)  # float32 inputs are read where they are ...
        if absolute:
            for j in range(size):
                values[j] = abs(_value(xb, j, half))
            vals = values
        elif _is_half(xb):  # ... unless they need decoding
            for j in range(size):
                values[j] = _value(xb, j, half)
            vals = values
        if keyed:
            for j in range(size):
                cells[j] = _key_cell(_bits(vals[j]), klo, shift, topu)
        else:
            for j in range(size):
                cells[j] = _cell(vals[j], lo, scale, top)
        bad = flag & 0
        for j in range(size):
            e = table[cells[j]]
            k = e & mask
            bad |= e
            # a cell without levels has lv[k] above it; with one, the comparison places v
            bins[j] = k + (lv[k] <= vals[j])
        if bad & flag:
            for j in range(size):
                c = cells[j]
                e = table[c]
                if e & flag:
                    v = vals[j]
                    end = np.int64(table[c + 1] & mask)
                    bins[j] = m if np.isnan(v) else _bisect(v, np.int64(e & mask), end, lv)
        j = 0
        while j + 4 <= size:  # four count rows: consecutive inputs never wait on one counter
            c0[bins[j]] += 1
            c1[bins[j + 1]] += 1
            c2[bins[j + 2]] += 1
            c3[bins[j + 3]] += 1
            j += 4
        while j < size:
            c0[bins[j]] += 1
            j += 1


@njit(cache=True, nogil=True)
def _histogram_serial(x, half, lv, m, table, flag, grid, absolute, order, nan_sorted, out,
                      accumulate):
    counts = np.zeros((1, 4, m + 1), np.int64)
    _count_range(x, half, lv, m, table, flag, grid, absolute, 0, x.shape[0], counts[0])
    _graphcore_bins(counts, order, nan_sorted, x.shape[0], out, accumulate)


@njit(cache=True, nogil=True, parallel=True)
def _count_parallel(x, half, lv, m, table, flag, grid, absolute, chunks, private):
    n = x.shape[0]
    size = (n + chunks - 1) // chunks
    for c in prange(chunks):
        _count_range(x, half, lv, m, table, flag, grid, absolute, min(n, c * size),
                     min(n, (c + 1) * size), private[numba.get_thread_id()])


@njit(cache=True, nogil=True)
def _graphcore_bins(private, order, nan_sorted, n, out, accumulate):
    """out[i] (+)= c_i - c_{i-1} with c_i = #{x < levels[i]} (c_{-1} = 0, c_N = n), from the
    private counts of b(x) against the sorted levels; NaN levels have c = 0."""
    m = order.shape[0]
    below = np.empty(m, np.int64)
    run = 0
    for j in range(m):
        for t in range(private.shape[0]):
            for r in range(private.shape[1]):
                run += private[t, r, j]
        below[order[j]] = 0 if nan_sorted[j] else run
    prev = 0
    for i in range(m + 1):
        c = below[i] if i < m else n
        d = np.float32(c - prev)
        if accumulate:
            out[i] += d
        else:
            out[i] = d
        prev = c
