"""A float32/float64 GEMM on the CPU whose bits depend only on the operands' shapes: never on
OpenBLAS's or Numba's thread count, the machine's core count or what other threads do.

OpenBLAS's threaded GEMM (its Haswell/Zen kernels: every AMD CPU, Intel CPUs without
AVX-512) sums an output element's k products in an order set by the element's place within
each per-thread call, and the threaded driver moves those calls' borders with the thread
count: 256x784 @ 784x512 float32 gets other bits on 1, 2, 3 and 4 OpenBLAS threads. Here the
output is cut into tiles that depend only on (m, k, n) (``tiles``), each tile is one GEMM on
one BLAS thread, and the tiles are shared out over threads (``conv_cpu.run_blocks``). Row
tiles are multiples of 24 rows, where 1-thread OpenBLAS on this AMD EPYC gives the bits of
its whole-matrix GEMM; column tiles (multiples of 16) keep two threads evenly loaded where
row tiles would not (m = 256), and give other (still fixed) bits.

Products of at most ``THREADED_MIN_MNK`` multiply-adds, which OpenBLAS runs on one thread
anyway, and other dtypes go to numpy.matmul unchanged.

Not yet called by ops/matmul (tf.matmul, dense_bias), conv3d or the serialized matmul: on
this 2-core AMD EPYC it cost the MLP bench's training step (batch 256, 784-512-512-10)
1.19x wall and 1.09x CPU against numpy's threaded GEMMs (interleaved, medians of 30 blocks),
its 8 GEMMs 1.27x wall and 1.08x CPU, 512^3 1.16x wall, 1024^3 1.15x wall: each tile repacks
its operand panels (OpenBLAS's threads share them) and every call pays a thread hand-off
(``run_blocks`` about 0.1 ms), single-thread 1.3M multiply-add products 1.7x.
"""

from __future__ import annotations

import numpy as np

from ._blas import single_threaded_blas

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# OpenBLAS threads a GEMM above SMP_THRESHOLD_MIN * GEMM_MULTITHREAD_THRESHOLD = 65536 * 4
THREADED_MIN_MNK = 1 << 18
# products below this run as one tile (one BLAS thread): splitting costs more than it gains
SPLIT_MIN_MNK = 1 << 22
TILE_MNK = 1 << 25  # about this many multiply-adds a tile
MAX_TILES = 64  # per matrix
ROW_MULTIPLE = 24
COL_MULTIPLE = 16
# extra packing (one element of an operand copied once more per tile) priced in multiply-adds
PACK_COST = 4


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


def tiles(m, k, n):
    """(row borders, column borders) of the output tiles of one m x k @ k x n product: a
    function of the shape only. Targets about TILE_MNK multiply-adds a tile (an even count,
    two at least, at most MAX_TILES) and picks, among row, column and 2-D cuttings, the one
    with the least time on two threads plus packing (each tile repacks its operand panels)."""
    mnk = m * k * n
    if mnk < SPLIT_MIN_MNK:
        return [0, m], [0, n]
    want = min(MAX_TILES, max(2, -(-mnk // TILE_MNK)))
    want += want % 2
    best = None
    for tr in range(1, want + 1):
        if want % tr:
            continue
        rows = _cuts(m, tr, ROW_MULTIPLE)
        cols = _cuts(n, want // tr, COL_MULTIPLE)
        sizes = [(r1 - r0) * (c1 - c0) * k for r0, r1 in zip(rows, rows[1:])
                 for c0, c1 in zip(cols, cols[1:])]
        nr, nc = len(rows) - 1, len(cols) - 1
        cost = _makespan(sizes) + PACK_COST * ((nr - 1) * k * n + (nc - 1) * m * k) // 2
        if best is None or cost < best[0]:
            best = (cost, rows, cols)
    return best[1], best[2]


def deterministic(x, y) -> bool:
    """Whether ``matmul(x, y)`` tiles the product (float32/float64 of one dtype, above
    THREADED_MIN_MNK multiply-adds) rather than calling numpy.matmul."""
    if x.dtype != y.dtype or x.dtype not in _DTYPES or x.ndim < 2 or y.ndim < 2:
        return False
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    mats = int(np.prod(batch, dtype=np.int64))
    return mats * x.shape[-2] * x.shape[-1] * y.shape[-1] > THREADED_MIN_MNK


def matmul(x, y, out=None):
    """``np.matmul(x, y, out=out)`` for numpy arrays (batch axes broadcasting, any strides),
    with bits that depend only on the shapes where ``deterministic``: every tile of
    ``tiles(m, k, n)`` of every batch matrix (whole batch matrices in groups where one tile
    covers a matrix) is one GEMM on one BLAS thread. ``out``: x's dtype and the broadcast
    shape, written in place."""
    if not deterministic(x, y) or (out is not None and out.dtype != x.dtype):
        return np.matmul(x, y, out=out)
    from .conv_cpu import run_blocks  # imports Numba: only for products this big

    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    if out is None:
        out = np.empty(batch + (m, n), x.dtype)
    elif out.shape != batch + (m, n):
        return np.matmul(x, y, out=out)  # numpy's error
    if 0 in out.shape or k == 0:
        out[...] = 0
        return out
    x, y = _blasable(x), _blasable(y)
    rows, cols = tiles(m, k, n)
    mats = list(np.ndindex(*batch))
    blocks = [(r0, r1, c0, c1) for r0, r1 in zip(rows, rows[1:]) for c0, c1 in zip(cols, cols[1:])]
    # whole matrices of a batch go in groups of about TILE_MNK multiply-adds
    group = max(1, TILE_MNK // (m * k * n)) if len(blocks) == 1 else 1
    units = [(mats[i:i + group], b) for i in range(0, len(mats), group) for b in blocks]
    if len(units) == 1:
        with single_threaded_blas():
            np.matmul(x, y, out=out)
        return out
    xb = np.broadcast_to(x, batch + x.shape[-2:])
    yb = np.broadcast_to(y, batch + y.shape[-2:])

    def work(t):
        idxs, (r0, r1, c0, c1) = units[t]
        for idx in idxs:
            np.matmul(xb[idx][r0:r1], yb[idx][:, c0:c1], out=out[idx][r0:r1, c0:c1])

    run_blocks(len(units), work)
    return out


def _blasable(a):
    """``a``, or a C-contiguous copy where neither of its last two axes is unit-stride (BLAS
    takes a row- or column-major matrix; numpy would run its slow loop instead)."""
    s = a.strides[-2:]
    item = a.itemsize
    if (s[1] == item and s[0] % item == 0 and s[0] >= item * a.shape[-1]) or \
            (s[0] == item and s[1] % item == 0 and s[1] >= item * a.shape[-2]):
        return a
    return np.ascontiguousarray(a)

