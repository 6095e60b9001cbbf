"""A float32/float64 GEMM on the CPU whose bits depend only on the operands' shapes: never on
OpenBLAS's or Numba's thread count, the machine's core count or what other threads do.

OpenBLAS's threaded GEMM (its Haswell/Zen kernels: every AMD CPU, Intel CPUs without
AVX-512) sums an output element's k products in an order set by the element's place within
each per-thread call, and the threaded driver moves those calls' borders with the thread
count: 256x784 @ 784x512 float32 gets other bits on 1, 2, 3 and 4 OpenBLAS threads. Here the
output is cut into tiles that depend only on (m, k, n) (``tiles``); each tile is one CBLAS
GEMM on one BLAS thread, and a Numba ``prange`` over the tiles shares them out over Numba's
persistent OpenMP threads (a hand-off of microseconds). CBLAS (numpy's own OpenBLAS,
``_blas_gemm.cblas_gemms``) is reached from jitted code through symbols registered with
LLVM at import (``llvmlite.binding.add_symbol``), so the kernels stay cacheable on disk.
Transposed operands go to CBLAS with its transpose flag, not copied.

The tiles are few and large. Each tile's GEMM packs its own panels of A and B, where
OpenBLAS's threaded driver packs each panel once and shares it between its threads, so every
cut between tile rows packs B once more and every cut between tile columns A once more. The
first version cut about 2**24 multiply-adds a tile (8 x 8 tiles of 128 x 128 at 1024^3):
that repacking cost 11% more CPU time than one GEMM at 1024^3, 7% at 2048 x 1024 x 2048, and
was the whole gap to numpy's threaded GEMM on the quiet 2-core EPYC (1.10-1.17x at 1024^3,
2048 x 2048 x 1024 and 2048 x 2048 x 512; per-thread CPU time, not a fixed cost a call or
idle threads: the same tiles on one thread cost as much more). Now a product is cut into as
many tiles (a power of two) as ``PACK_BUDGET`` of repacking allows: 2 at 512^3 and 1024^3,
4 at 2048^3, 16 at 4096^3. On a machine with more cores than a product has tiles, the other
cores idle where numpy's OpenBLAS would use them: the price of bits that do not depend on the
thread count, kept small by the tiles' count growing with the product.

Measured on the 2-core EPYC, interleaved blocks (numpy.matmul on OpenBLAS's 2 threads, this
module, the first version's tiles through the same kernel; order rotated each block), kept
only when other processes used under 10% of the cores during the block (from /proc/stat),
medians of per-block wall ratios to numpy over 10-20 blocks, two or three runs (first
version's in brackets): 512^3 0.92-1.03 (0.95-1.07), 1024^3 0.93-1.03 (1.02-1.11), 2048 x
512 x 2048 1.00 (1.02), 2048 x 1024 x 2048 0.96 (0.99), 2048^3 1.01 (1.06); serialized_matmul
b_rows 2048^3 F = 2/4/8 through the op, 0.98/0.97/0.94; the MLP step 0.97x of its wall time
with the first version's tiles (its GEMMs: 2 tiles instead of 8, 0.97x). The main thread's
and the OpenMP worker's CPU times per 1024^3 call differ by under 5%: no load imbalance;
after a parallel call the worker spins about 1.5 ms (GNU OpenMP's default spin count).

Products of at most ``SMALL_MNK`` multiply-adds (OpenBLAS runs them on one thread anyway),
other dtypes, and every product when numpy's BLAS has no 64-bit-integer CBLAS go to
numpy.matmul unchanged.

Measured with the first version's tiles on the 2-core AMD EPYC (OpenBLAS 0.3.31 Haswell
kernels, Numba 0.68 omp layer), shared with other engineers' processes (load 2-5),
interleaved blocks, medians of per-block ratios against numpy.matmul on OpenBLAS's own 2
threads:
* entry cost: the jitted call of a 2-tile 16^3 product ~4 us on 1 or 2 threads at load ~2,
  19-58 us on 2 threads at load ~3 (the second OpenMP thread waits for a core); the Python
  entry adds ~7 us over numpy's; the Python thread pool of the first version
  (``conv_cpu.run_blocks``, efb7b9b) cost ~0.1 ms;
* the MLP step's GEMMs (256x784@784x512, 256x512@512x512, 256x512@512x10 and the backward
  ones with transposed operands): 0.43-0.96x wall each in most runs (the 784x256 @ 256x512
  weight gradient 0.75-1.5x, the noisiest), all eight back to back 0.62-0.96x wall and
  0.68-0.96x process CPU time; 512^3 0.51-0.89x, 1024^3 0.93-0.98x;
* the MLP 784-512-512-10 training step at batch 256: 0.57-0.85x the wall time of the same
  step on numpy's threaded GEMMs (bench/step_overhead-style interleaving of the two, 20-60
  blocks of 5 steps, six runs), 0.47-0.99x torch's eager step in the same runs.
The thread hand-offs of GNU OpenMP spin by default: on an oversubscribed machine the static
split waits for a descheduled thread (see SPLIT_MIN_MNK); OMP_WAIT_POLICY=PASSIVE made the
loaded step 2-3x faster (and torch's too), which is the user's setting to make, not ours.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from . import _blas
from ._blas import section_open, single_threaded_blas_cheap
from ._blas_gemm import cblas_gemms

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# OpenBLAS threads a GEMM above SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD = 65536 * 4, a
# GEMV above 2304 * 4 (numpy's product with one row or one column)
SMALL_MNK = 1 << 18
SMALL_MN_VECTOR = 2304 * 4
# products above this split into two tiles at least; smaller ones run as one tile on the
# calling thread. A 2-tile split of 256x512x10 (1.3M multiply-adds) took 1.3x numpy's
# threaded GEMM on a quiet 2-core EPYC and 2-32x (0.2-11 ms) with other processes on the
# cores: OpenMP's static split waits for a descheduled thread; one tile: 0.4-1.3x
SPLIT_MIN_MNK = 1 << 21
MAX_TILES = 64  # per matrix
ROW_MULTIPLE = 8
COL_MULTIPLE = 16
# Each tile's GEMM packs its own panels of A and B: a cut between tile rows packs B once
# more, one between tile columns A once more. Packing an element costs about PACK_COST
# multiply-adds in CPU time (float32, numpy's OpenBLAS 0.3.31 Haswell kernels on the 2-core
# AMD EPYC, one thread, tilings of one product interleaved: 1024^3 in 2x2/4x4/8x8/16x16 tiles
# took 2.5/6.3/11.5/24% more CPU time than in one, 2048x1024x2048 in 4x4/8x8 3.7/7.3% more).
PACK_COST = 10
# the repacking a product may pay for parallelism, as a share of its multiply-adds: tiles
# split a product in as many (a power of two) as this allows, two at least
PACK_BUDGET = 0.015

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_SYMBOLS = {np.dtype(np.float32): "ipu_gpu_cblas_sgemm64",
            np.dtype(np.float64): "ipu_gpu_cblas_dgemm64"}


@functools.cache
def register_cblas() -> frozenset:
    """Register numpy's 64-bit-integer CBLAS ?gemm with LLVM under the names the jitted tile
    loops call (``_matmul_tiles`` does it at its import, before any of them links); the
    dtypes done."""
    from llvmlite import binding

    done = set()
    for dtype, (fn, _limit, _name, int_t) in cblas_gemms().items():
        if int_t is ctypes.c_int64:
            binding.add_symbol(_SYMBOLS[dtype], ctypes.cast(fn, ctypes.c_void_p).value)
            done.add(dtype)
    return frozenset(done)


@functools.cache
def _kernels():
    """{dtype: (tile loop over Numba's threads, the same loop on the calling thread)}:
    compiled (or loaded from Numba's disk cache) on first use."""
    done = register_cblas()
    if not done:
        return {}
    from . import _matmul_tiles as t
    from ._threads import serial_only

    global _serial_only
    _serial_only = serial_only
    both = {np.dtype(np.float32): (t.sgemm_tiles, t.sgemm_tiles_serial),
            np.dtype(np.float64): (t.dgemm_tiles, t.dgemm_tiles_serial)}
    return {d: k for d, k in both.items() if d in done}


@functools.cache
def _plan_kernels():
    """{dtype: (parallel plan loop, serial plan loop)} (``_matmul_tiles.gemm_plan``) for the
    dtypes ``_kernels`` has."""
    from . import _matmul_tiles as t

    return {d: (t.gemm_plan, t.gemm_plan_serial) for d in _kernels()}


# ``_threads.serial_only`` once the kernels load: whether this is a forked child of a process
# whose GNU OpenMP threads ran (OpenMP would abort it), where the tiles run on the calling thread
_serial_only = None


def _kernel(dtype, count):
    """The tile loop for ``count`` GEMMs of ``dtype``: on the calling thread for one tile, in
    a forked child (above), and while a ``single_threaded_blas`` section is open elsewhere
    (replicas running concurrently, a convolution's blocks: they are the parallelism, and
    more OpenMP teams would oversubscribe the cores); else over Numba's threads."""
    return _pick(_kernels()[dtype], count)


def _pick(pair, count):
    """``_kernel``'s choice within ``pair`` (parallel loop, serial loop)."""
    return pair[1] if count == 1 or _serial_only() or section_open() else pair[0]


def _cuts(size, parts, multiple):
    """Borders cutting ``size`` into at most ``parts`` runs of a multiple of ``multiple``."""
    if parts <= 1 or size <= multiple:
        return [0, size]
    step = -(-size // parts)
    step = -(-step // multiple) * multiple
    return list(range(0, size, step)) + [size]


def _makespan(sizes, threads=2):
    """Time of sizes taken in order by the first free of ``threads`` workers."""
    loads = [0] * threads
    for s in sizes:
        loads[loads.index(min(loads))] += s
    return max(loads)


@functools.lru_cache(maxsize=256)
def tiles(m, k, n):
    """(row borders, column borders) of the output tiles of one m x k @ k x n product (int64
    arrays): a function of the shape only. One tile up to SPLIT_MIN_MNK multiply-adds; above,
    the largest power-of-two count of tiles (2 at least, at most MAX_TILES, about
    SPLIT_MIN_MNK multiply-adds a tile at least) whose repacking (``PACK_COST``) stays within
    ``PACK_BUDGET`` of the work, cut into rows and columns with the least time on two threads
    plus packing."""
    mnk = m * k * n
    one = np.array([0, m], np.int64), np.array([0, n], np.int64)
    if mnk <= SPLIT_MIN_MNK:
        return one
    cap = min(MAX_TILES, max(2, mnk // SPLIT_MIN_MNK))
    chosen, count = None, 2
    while count <= cap:
        best = None
        tr = count
        while tr >= 1:  # row cuts first: on a tie, whole rows of the output a tile
            rows = _cuts(m, tr, ROW_MULTIPLE)
            cols = _cuts(n, count // tr, COL_MULTIPLE)
            nr, nc = len(rows) - 1, len(cols) - 1
            tr //= 2
            if nr * nc != count:  # a side too short for that many cuts
                continue
            extra = PACK_COST * ((nr - 1) * k * n + (nc - 1) * m * k)
            sizes = [(r1 - r0) * (c1 - c0) * k for r0, r1 in zip(rows, rows[1:])
                     for c0, c1 in zip(cols, cols[1:])]
            cost = _makespan(sizes) + extra // 2
            if best is None or cost < best[0]:
                best = (cost, extra, rows, cols)
        if best is not None and (chosen is None or best[1] <= PACK_BUDGET * mnk):
            chosen = best
        elif chosen is not None:
            break
        count *= 2
    if chosen is None:
        return one
    return np.array(chosen[2], np.int64), np.array(chosen[3], np.int64)


def deterministic(x, y) -> bool:
    """Whether ``matmul(x, y)`` runs the tiled kernel (numpy arrays of one dtype, float32 or
    float64, rank 2 at least, a product OpenBLAS would thread) rather than numpy.matmul."""
    if (type(x) is not np.ndarray or type(y) is not np.ndarray or x.dtype != y.dtype
            or x.dtype not in _DTYPES or x.ndim < 2 or y.ndim < 2):
        return False
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    if x.ndim == 2 and y.ndim == 2:
        mats = 1
    else:
        try:
            mats = int(np.prod(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]), dtype=np.int64))
        except ValueError:
            return False
    if m == 1 or n == 1:
        return mats * m * k * n > SMALL_MN_VECTOR
    return mats * m * k * n > SMALL_MNK


def _operand(a):
    """(a, transpose flag, leading dimension in elements) for row-major CBLAS: a itself when
    one of its last two axes has unit stride and the other a usable one, else a C copy."""
    isz = a.itemsize
    s0, s1 = a.strides[-2:]
    rows, cols = a.shape[-2:]
    if a.flags.aligned:
        if (s1 == isz or cols == 1) and s0 % isz == 0 and s0 // isz >= max(1, cols):
            return a, _NO_TRANS, max(1, s0 // isz)
        if (s0 == isz or rows == 1) and s1 % isz == 0 and s1 // isz >= max(1, rows):
            return a, _TRANS, max(1, s1 // isz)
    a = np.ascontiguousarray(a)
    return a, _NO_TRANS, max(1, cols)


_ZERO = np.zeros(1, np.int64)
_SECTION = single_threaded_blas_cheap()


def _first(a):
    """A one-element 1-D view of ``a``'s first element (``a`` not empty): how the kernels get
    an operand's address (one Numba specialization for every rank and layout)."""
    while a.ndim > 1:
        a = a[0]
    return a[:1]


def _offsets(a, batch):
    """Byte offsets of the matrices of ``a`` broadcast to ``batch`` (int64, C order)."""
    if not batch:
        return _ZERO
    if a.ndim - 2 < len(batch):
        a = a.reshape((1,) * (len(batch) - a.ndim + 2) + a.shape)
    strides = np.array([0 if d == 1 else s for d, s in zip(a.shape[:-2], a.strides[:-2])],
                       np.int64)
    idx = np.indices(batch, dtype=np.int64).reshape(len(batch), -1)
    return np.ascontiguousarray(strides @ idx)


def matmul(x, y, out=None):
    """``np.matmul(x, y, out=out)`` for numpy arrays (batch axes broadcasting, any strides),
    with bits that depend only on the shapes where ``deterministic``. ``out``: x's dtype and
    the broadcast shape, written in place."""
    if out is None and type(x) is np.ndarray and type(y) is np.ndarray:
        plan = _PLANS.get((x.shape, x.strides, y.shape, y.strides, x.dtype, y.dtype))
        if plan is not None and x.flags.aligned and y.flags.aligned:  # a 2-D product seen
            shape, dtype, fields, kernel, parallel = plan
            out = np.empty(shape, dtype)
            # ``_pick``: ``section_open()`` read inline (a section's depth)
            if parallel is not None and not _blas._depth and not _serial_only():
                kernel = parallel
            with _SECTION:
                kernel(x[_FIRST], y[_FIRST], out[_FIRST], fields)
            return out
        if x.ndim == 2 and y.ndim == 2:  # the step's products: the checks below, in fewer steps
            m, k = x.shape
            n = y.shape[1]
            if (m * k * n > (SMALL_MN_VECTOR if m == 1 or n == 1 else SMALL_MNK)
                    and y.shape[0] == k and x.dtype == y.dtype):
                pair = _kernels().get(x.dtype)
                if pair is not None:
                    return _matmul_2d(x, y, m, k, n, pair)
    if not deterministic(x, y) or (out is not None and (type(out) is not np.ndarray
                                                        or out.dtype != x.dtype)):
        return np.matmul(x, y, out=out)
    if x.dtype not in _kernels():
        return np.matmul(x, y, out=out)
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    if y.shape[-2] != k:
        return np.matmul(x, y, out=out)  # numpy's error
    two_d = x.ndim == 2 and y.ndim == 2
    batch = () if two_d else np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    shape = batch + (m, n)
    if out is not None:
        if out.shape != shape:
            return np.matmul(x, y, out=out)  # numpy's error
        if (not out.flags.c_contiguous or not out.flags.aligned
                or np.may_share_memory(out, x) or np.may_share_memory(out, y)):
            out[...] = matmul(x, y)
            return out
    else:
        out = np.empty(shape, x.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out[...] = 0
        return out
    x, ta, lda = _operand(x)
    y, tb, ldb = _operand(y)
    rows, cols = tiles(m, k, n)
    if two_d:
        ao = bo = co = _ZERO
    else:
        ao, bo = _offsets(x, batch), _offsets(y, batch)
        co = np.arange(0, out.nbytes, m * n * out.itemsize, dtype=np.int64)
    kernel = _kernel(x.dtype, co.shape[0] * (rows.shape[0] - 1) * (cols.shape[0] - 1))
    with _SECTION:
        kernel(ta, tb, _first(x), lda, _first(y), ldb, _first(out), n, k, rows, cols, ao, bo,
               co, 0.0)
    return out


def _matmul_2d(x, y, m, k, n, pair):
    """``matmul`` of two 2-D operands of one tiled dtype above the size thresholds; remembers
    the call's plan (``_PLANS``) where neither operand needs a copy."""
    out = np.empty((m, n), x.dtype)
    key = (x.shape, x.strides, y.shape, y.strides, x.dtype, y.dtype)
    xo, ta, lda = _operand(x)
    yo, tb, ldb = _operand(y)
    rows, cols = tiles(m, k, n)
    count = (rows.shape[0] - 1) * (cols.shape[0] - 1)
    if xo is x and yo is y:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        fields = np.concatenate([np.array([ta, tb, lda, ldb, n, k, rows.shape[0] - 1,
                                           cols.shape[0] - 1], np.int64), rows, cols])
        fields.flags.writeable = False
        parallel, serial = _plan_kernels()[x.dtype]
        # one tile: the serial loop whatever the state (``_pick``), no parallel one
        _PLANS[key] = ((m, n), x.dtype, fields, serial, None if count == 1 else parallel)
    kernel = _pick(pair, count)
    with _SECTION:
        kernel(ta, tb, xo[0, :1], lda, yo[0, :1], ldb, out[0, :1], n, k, rows, cols, _ZERO,
               _ZERO, _ZERO, 0.0)
    return out


# (x.shape, x.strides, y.shape, y.strides, x.dtype, y.dtype) -> what ``_matmul_2d`` computed
# for such operands when both are aligned and usable as they are (no copy): the output shape
# and dtype, the plan kernels' fields (``_matmul_tiles.gemm_plan``: CBLAS transpose flags and
# leading dimensions, n, k, the tiles, in one read-only int64 array), the serial plan loop and
# the parallel one (None for one tile: ``_pick`` takes the serial one then). All functions of
# the key alone (alignment is checked at each use), so a repeated product skips
# ``_operand``, ``tiles`` and ``_pick`` (about 250 Python opcodes a call), and its kernel
# takes four arguments, not fifteen (about 0.5 us less Numba dispatch a call).
_PLANS = {}
_PLANS_MAX = 512
_FIRST = (0, slice(None, 1))  # a 2-D array's first element as a 1-D view (``_first``)


def gemm_accumulate(x, y, out) -> bool:
    """``out += x @ y`` for 2-D float32/float64 arrays of one dtype, ``out`` row-major (unit
    column stride) and apart from x and y: CBLAS GEMMs with beta = 1, one per tile of
    ``tiles(m, k, n)``, each on one BLAS thread: bits that depend only on the shapes. False
    (nothing written) where the tiled kernel is unavailable or ``out`` does not fit."""
    if (x.dtype != out.dtype or y.dtype != out.dtype or out.dtype not in _kernels()
            or x.ndim != 2 or y.ndim != 2 or out.shape != (x.shape[0], y.shape[1])
            or x.shape[1] != y.shape[0]):
        return False
    m, k, n = x.shape[0], x.shape[1], y.shape[1]
    isz = out.itemsize
    if (out.strides[1] != isz and n > 1) or out.strides[0] % isz or out.strides[0] < isz * n \
            or not out.flags.aligned or np.may_share_memory(out, x) \
            or np.may_share_memory(out, y):
        return False
    if m == 0 or n == 0 or k == 0:
        return True
    x, ta, lda = _operand(x)
    y, tb, ldb = _operand(y)
    rows, cols = tiles(m, k, n)
    kernel = _kernel(out.dtype, (rows.shape[0] - 1) * (cols.shape[0] - 1))
    with _SECTION:
        kernel(ta, tb, _first(x), lda, _first(y), ldb, _first(out), out.strides[0] // isz, k,
               rows, cols, _ZERO, _ZERO, _ZERO, 1.0)
    return True
