"""2-D convolution on the CPU: BLAS GEMMs (the OpenBLAS numpy links, called through its CBLAS
interface) for ordinary and grouped convolutions, Numba kernels for depthwise ones.

Every function works on NHWC arrays (the op layer transposes NCHW), float32 or float64,
C-contiguous, filters in TF's HWIO layout ``[kh, kw, in_channels / groups, out_channels]``,
and writes into outputs the caller preallocates. ``pads`` is ``((top, bottom), (left, right))``.

Two GEMM schemes and a direct loop, chosen per shape (``conv2d_plan``):

* ``shift`` (stride 1, at least SHIFT_MIN_CHANNELS input channels a group): the input is
  zero-padded once to ``[N, Hp, Wp, C]`` and seen as ``N*Hp*Wp`` rows of C values. For the
  filter tap (i, j) the rows the output needs are those rows shifted by ``i*dh*Wp + j*dw``: a
  contiguous view, so the output on the padded grid is the sum over taps of
  ``rows @ W[i, j]``: kh*kw GEMMs accumulating in place (beta = 1) with nothing copied, then a
  crop. The filter gradient is one GEMM per tap (``shifted rows^T @ dy on the grid``); the
  input gradient gathers ``dy on the grid, shifted back, @ W[i, j]^T`` the same way. Where
  the grid rows between two images' outputs are many (``_image_segments``: a 3x3 VALID filter
  on 13x13 images, the Keras MNIST CNN's second layer, feeds no output from 28 of each
  image's 169 rows), the forward and the filter gradient run their tap GEMMs image by image
  over the rows that do: about 15% less work there, and 4-9% less CPU time a Keras CNN
  epoch (batch 32 / 256, process CPU time, interleaved, on the loaded 2-core AMD EPYC).
* ``im2col`` (strided convolutions, few channels): the patches of a block of output rows are
  copied into a ``[rows, kh*kw*C]`` matrix and multiplied by the filter in one GEMM; the
  input gradient is the product with the transposed filter, added back tap by tap (col2im).
* ``direct`` (one group, a patch kh*kw*C of at most DIRECT_MAX_TAPS values: a 3x3 first
  layer on one channel): the forward pass and the filter gradient are Numba loops over the
  padded input (``_conv_direct``), no GEMM and no patch matrix; the input gradient as
  im2col's. On the 2-core AMD EPYC (one thread, CPU time) a 3x3 1->32 convolution of 256
  28x28 images took 7-10 ms forward and 8-11 ms for the filter gradient this way, 15-23 ms
  and 16-23 ms through im2col (a GEMM with an inner dimension of 9, a patch copy and Python
  work per image); from about 18 values a patch the two are even.

Threading: the rows are cut into blocks (a few thousand rows, so a block's operands stay in
cache; the cut depends on the shapes only, and more than one block is rounded up to a multiple
of BLOCK_MULTIPLE: 7 blocks kept one of 2 threads idle for an eighth of the time) that the
threads take in turn; a block's tap GEMMs are issued by one Numba call that holds no GIL
(``tap_gemms``: the CBLAS function is passed to it as a ctypes pointer). One synchronisation a
GEMM phase instead of one a GEMM: on a loaded machine OpenBLAS's own threading of many small
GEMMs stalls at every call (6x slower here with other processes running). The grid copies run
in blocks over the threads too (Numba, no GIL: ``_grid_fill`` pads the input and places dy,
``_grid_crop`` crops a block's output rows right after its GEMMs), and the backward pass runs
its filter-gradient parts and input-gradient blocks as one set of tasks. On the 2-core AMD
EPYC (quiet, interleaved with torch/oneDNN, bench/test_bench_conv.py, 3x3 64->64 56x56 N8)
this took fwd+bwd from about 1.1-1.4x torch's time to about 1.0-1.1x (forward alone 1.4 ->
1.3x): single-threaded, the tap GEMMs run at OpenBLAS's 65-70 GFLOP/s a core for these
shapes, oneDNN's direct convolution at about 80.

Determinism: every GEMM of a convolution runs with OpenBLAS on one thread, for any number of
our threads, one included (``_blas.single_threaded_blas``): OpenBLAS's thread count is one
number for the whole process, and on some CPUs a GEMM's bits depend on it. Blocks have fixed
bounds, each output block is written by one GEMM sequence, and filter gradients sum a
shape-determined number of per-block partials in a fixed order, so results are bitwise
identical for any thread count and from run to run (tests/test_determinism.py). A
single-threaded OpenBLAS GEMM does not depend on the operands' alignment (it packs them
first), so fresh buffers change nothing.

Without CBLAS (another numpy build) the same GEMMs run through numpy.matmul on strided views.
"""

from __future__ import annotations

import ctypes
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange

from . import _conv_direct, _conv_epilogue
from ._blas import numpy_blas_library, single_threaded_blas
from ._blas_gemm import cblas_gemms
from ._threads import num_threads

SHIFT_MIN_CHANNELS = 16  # below this a per-tap GEMM is too thin: im2col wins
DIRECT_MAX_TAPS = 12  # patches of at most this many values: direct loops (one group)
DIRECT_BLOCK_BYTES = 256 << 10  # output of one block of direct rows, about
SHIFT_BLOCK_ROWS = 4096  # rows of the padded grid a block of tap GEMMs covers, about
BLOCK_MULTIPLE = 4  # a shift scheme's block count, when above 1, is a multiple of this
# the shift scheme runs one GEMM sequence an image when the grid rows between two images'
# outputs are at least this share of an image's grid rows (VALID on small images) and an
# image's tap GEMM has at least IMAGE_SEGMENT_MIN_MACS multiply-adds (smaller ones cost more
# in calls than they save: 7x7 SAME 16->16 channels ran 15% slower per image, 64->64 16%
# faster; break-even near 30-100 thousand)
IMAGE_SEGMENT_MIN_WASTE = 0.125
IMAGE_SEGMENT_MIN_MACS = 1 << 17
COPY_BLOCK_BYTES = 1 << 20  # the grid copies (padding, crops) go in blocks of about this
IM2COL_BLOCK_BYTES = 4 << 20  # the patch matrix of one block of output rows, at most (about)
FILTER_PARTIALS_BYTES = 64 << 20  # memory for per-block partial filter gradients, at most


# ---- GEMM through CBLAS ----------------------------------------------------------------------
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112


class _Cblas:
    """``?gemm`` of the BLAS numpy was built against, or nothing when it cannot be found
    (then numpy.matmul does the GEMMs)."""

    def __init__(self):
        self.fns = {}
        self.numba_fns = {}
        self.numba_checked = {}
        lib = numpy_blas_library()
        for dtype, (fn, limit, name, int_t) in cblas_gemms().items():
            self.fns[dtype] = (fn, limit)
            # the same function for Numba, its pointers typed as integer addresses (the same
            # registers in the C calling convention)
            real = ctypes.c_float if dtype == np.float32 else ctypes.c_double
            nb = lib[name]
            nb.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, int_t, int_t, int_t, real,
                           ctypes.c_int64, int_t, ctypes.c_int64, int_t, real, ctypes.c_int64,
                           int_t]
            nb.restype = None
            self.numba_fns[dtype] = nb


_CBLAS = None


def _cblas():
    global _CBLAS
    if _CBLAS is None:
        _CBLAS = _Cblas()
    return _CBLAS


def use_blas(enabled: bool) -> None:
    """Call CBLAS directly (default, when found) or only numpy.matmul (tests compare both)."""
    global _CBLAS
    _CBLAS = None
    if not enabled:
        _CBLAS = _Cblas.__new__(_Cblas)
        _CBLAS.fns = {}
        _CBLAS.numba_fns = {}
        _CBLAS.numba_checked = {}


class Gemm:
    """GEMMs on matrices inside three flat buffers a, b, c (1-D, C-contiguous, one float
    dtype): ``g(a_off, lda, trans_a, b_off, ldb, trans_b, c_off, ldc, m, n, k, beta)`` sets
    ``C[m, n] = op(A) @ op(B) + beta * C`` for the matrices at element offsets ``*_off`` with
    row strides ``ld*`` (row-major; a transposed operand is stored ``[k, m]`` / ``[n, k]``);
    beta is 0 or 1. Rows of A and B may overlap (shifted views of one buffer); C's must not.
    Every call checks the matrices lie inside their buffers."""

    __slots__ = ("a", "b", "c", "fn", "limit", "pa", "pb", "pc", "isz")

    def __init__(self, a, b, c):
        self.a, self.b, self.c = a, b, c
        entry = _cblas().fns.get(c.dtype)
        self.fn, self.limit = entry if entry is not None else (None, 0)
        self.isz = c.itemsize
        if self.fn is not None:
            self.pa, self.pb, self.pc = a.ctypes.data, b.ctypes.data, c.ctypes.data

    def __call__(self, a_off, lda, trans_a, b_off, ldb, trans_b, c_off, ldc, m, n, k, beta):
        if m == 0 or n == 0:
            return
        rows_a, cols_a = (k, m) if trans_a else (m, k)
        rows_b, cols_b = (n, k) if trans_b else (k, n)
        if k and (a_off < 0 or lda < cols_a or a_off + (rows_a - 1) * lda + cols_a > self.a.size
                  or b_off < 0 or ldb < cols_b
                  or b_off + (rows_b - 1) * ldb + cols_b > self.b.size):
            raise RuntimeError("conv gemm: an operand lies outside its buffer")  # a bug
        if c_off < 0 or ldc < n or c_off + (m - 1) * ldc + n > self.c.size:
            raise RuntimeError("conv gemm: the output lies outside its buffer")
        if self.fn is not None and k > 0 and max(m, n, k, lda, ldb, ldc) <= self.limit:
            isz = self.isz
            self.fn(_ROW_MAJOR, _TRANS if trans_a else _NO_TRANS,
                    _TRANS if trans_b else _NO_TRANS, m, n, k, 1.0, self.pa + a_off * isz, lda,
                    self.pb + b_off * isz, ldb, 1.0 if beta else 0.0, self.pc + c_off * isz, ldc)
            return
        cv = _view(self.c, c_off, m, n, ldc)
        if k == 0:
            if not beta:
                cv[...] = 0
            return
        av = _view(self.a, a_off, rows_a, cols_a, lda)
        bv = _view(self.b, b_off, rows_b, cols_b, ldb)
        prod = np.matmul(av.T if trans_a else av, bv.T if trans_b else bv)
        if beta:
            cv += prod
        else:
            cv[...] = prod


def gemm(a, a_off, lda, trans_a, b, b_off, ldb, trans_b, c, c_off, ldc, m, n, k, beta):
    """One ``Gemm(a, b, c)`` call (see there)."""
    Gemm(a, b, c)(a_off, lda, trans_a, b_off, ldb, trans_b, c_off, ldc, m, n, k, beta)


def tap_gemms(a, b, c, trans_a, trans_b, m, n, k, lda, ldb, ldc, a_offs, b_offs, c_offs,
              betas):
    """A sequence of same-shaped GEMMs (one a filter tap) on the flat buffers a, b, c, as
    ``Gemm`` but with per-GEMM element offsets and betas (int64 / float arrays), run in
    order in one Numba call that holds no GIL when CBLAS is available."""
    if m == 0 or n == 0 or not len(a_offs):
        return
    rows_a, cols_a = (k, m) if trans_a else (m, k)
    rows_b, cols_b = (n, k) if trans_b else (k, n)
    if k and (a_offs.min() < 0 or lda < cols_a or a_offs.max() + (rows_a - 1) * lda + cols_a
              > a.size or b_offs.min() < 0 or ldb < cols_b
              or b_offs.max() + (rows_b - 1) * ldb + cols_b > b.size):
        raise RuntimeError("conv gemm: an operand lies outside its buffer")  # a bug
    if c_offs.min() < 0 or ldc < n or c_offs.max() + (m - 1) * ldc + n > c.size:
        raise RuntimeError("conv gemm: the output lies outside its buffer")
    cb = _cblas()
    fn = cb.numba_fns.get(c.dtype)
    if fn is not None and not _numba_gemm_works(cb, c.dtype):
        fn = None
    if fn is None or k == 0 or max(m, n, k, lda, ldb, ldc) > cb.fns[c.dtype][1]:
        mm = Gemm(a, b, c)
        for ao, bo, co, beta in zip(a_offs.tolist(), b_offs.tolist(), c_offs.tolist(),
                                    betas.tolist()):
            mm(ao, lda, trans_a, bo, ldb, trans_b, co, ldc, m, n, k, beta)
        return
    isz = c.itemsize
    _tap_gemms(fn, _TRANS if trans_a else _NO_TRANS, _TRANS if trans_b else _NO_TRANS, m, n, k,
               a.ctypes.data, a_offs * isz, lda, b.ctypes.data, b_offs * isz, ldb,
               c.ctypes.data, c_offs * isz, ldc, betas.astype(c.dtype))


def _numba_gemm_works(cb, dtype) -> bool:
    """Whether the Numba route to CBLAS compiles and computes a small product right (checked
    once a dtype; on failure that dtype's GEMMs go through ``Gemm``)."""
    ok = cb.numba_checked.get(dtype)
    if ok is None:
        rng = np.random.default_rng(1)
        a = rng.standard_normal(4 * 3).astype(dtype)
        b = rng.standard_normal(2 * 3 * 5).astype(dtype)
        c = np.zeros(4 * 5, dtype)
        offs = np.zeros(2, np.int64)
        try:
            _tap_gemms(cb.numba_fns[dtype], _NO_TRANS, _NO_TRANS, 4, 5, 3, a.ctypes.data, offs,
                       3, b.ctypes.data, np.array([0, 15 * dtype.itemsize], np.int64), 5,
                       c.ctypes.data, offs, 5, np.array([0, 1], dtype))
            want = a.reshape(4, 3) @ (b[:15].reshape(3, 5) + b[15:].reshape(3, 5))
            ok = bool(np.allclose(c.reshape(4, 5), want, rtol=1e-4, atol=1e-5))
        except Exception:  # Numba could not type the call (another BLAS integer width)
            ok = False
        cb.numba_checked[dtype] = ok
    return ok


@njit(cache=True, nogil=True)
def _tap_gemms(fn, ta, tb, m, n, k, pa, a_offs, lda, pb, b_offs, ldb, pc, c_offs, ldc, betas):
    one = betas.dtype.type(1)
    for t in range(a_offs.shape[0]):
        fn(_ROW_MAJOR, ta, tb, m, n, k, one, pa + a_offs[t], lda, pb + b_offs[t], ldb, betas[t],
           pc + c_offs[t], ldc)


def _view(buf, off, rows, cols, ld):
    isz = buf.itemsize
    return np.lib.stride_tricks.as_strided(buf[off:], (rows, cols), (ld * isz, isz))


# ---- threads -----------------------------------------------------------------------------------
_POOL = None


def _forget_pool():
    global _POOL
    _POOL = None  # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget_pool)


def _pool(workers):
    global _POOL
    if _POOL is None or _POOL._max_workers < workers:
        if _POOL is not None:
            _POOL.shutdown(wait=False)
        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ipu_gpu_conv")
    return _POOL


def run_blocks(nblocks, work):
    """``work(b)`` for b in 0..nblocks-1, each once, spread over up to ``num_threads()``
    threads (the caller is one), with BLAS on one thread throughout (``single_threaded_blas``)
    whatever the number of threads. Blocks must write disjoint outputs."""
    nt = min(num_threads(), nblocks)
    with single_threaded_blas():
        if nt <= 1:
            for b in range(nblocks):
                work(b)
            return
        ticket = itertools.count()  # next() on it is atomic under the GIL

        def loop():
            b = next(ticket)
            while b < nblocks:
                work(b)
                b = next(ticket)

        futures = [_pool(nt - 1).submit(loop) for _ in range(nt - 1)]
        try:
            loop()
        finally:
            for f in futures:  # every block is done before BLAS gets its threads back
                f.result()


def _blocks(rows, target):
    """(number of blocks, rows a block) cutting ``rows`` into blocks of about ``target``; more
    than one block is rounded up to a multiple of BLOCK_MULTIPLE (7 blocks on 2 threads
    take 4 rounds where 8 take 4 too, with 12% less work a block)."""
    nblocks = max(1, -(-rows // max(target, 1)))
    if nblocks == 1:
        return 1, rows  # also for no rows: one empty block
    nblocks = -(-nblocks // BLOCK_MULTIPLE) * BLOCK_MULTIPLE
    blk = -(-rows // nblocks)
    return -(-rows // blk), blk


def _filter_partials(nblocks, filter_bytes):
    """How many partial filter gradients to sum (a function of the shapes only)."""
    return max(1, min(nblocks, 16, FILTER_PARTIALS_BYTES // max(filter_bytes, 1)))


def _sum_partials(nparts, dw, accumulate_part):
    """dw = sum over p of the partial gradient ``accumulate_part(p, out)`` writes into ``out``
    (parts computed in parallel, added in a fixed order)."""
    if nparts == 1:
        run_blocks(1, lambda p: accumulate_part(p, dw.reshape(-1)))
        return
    parts = np.empty((nparts, dw.size), dw.dtype)
    run_blocks(nparts, lambda p: accumulate_part(p, parts[p]))
    np.sum(parts, axis=0, out=dw.reshape(-1))


# ---- geometry --------------------------------------------------------------------------------
def conv2d_plan(x_shape, w_shape, strides, groups) -> str:
    """'shift', 'direct' or 'im2col': the scheme ``conv2d_fwd``/``conv2d_bwd`` use for a
    shape."""
    cg = w_shape[2]
    if tuple(strides) == (1, 1) and cg >= SHIFT_MIN_CHANNELS:
        return "shift"
    if groups == 1 and w_shape[0] * w_shape[1] * cg <= DIRECT_MAX_TAPS:
        return "direct"
    return "im2col"


@njit(cache=True, nogil=True)
def _grid_fill(src, grid, r0, r1, hp, wp, top, left):
    """grid[r] = src[i, y - top, x - left] for the grid rows r0..r1 (r = (i*hp + y)*wp + x),
    0 where that lies outside ``src`` [N, H, W, C]; ``grid`` is [rows, C]."""
    h, w = src.shape[1], src.shape[2]
    for r in range(r0, r1):
        i, rem = divmod(r, hp * wp)
        y, x = divmod(rem, wp)
        y -= top
        x -= left
        row = grid[r]
        if 0 <= y < h and 0 <= x < w:
            s = src[i, y, x]
            for c in range(row.shape[0]):
                row[c] = s[c]
        else:
            for c in range(row.shape[0]):
                row[c] = 0


@njit(cache=True, nogil=True)
def _grid_crop(grid, dst, r0, r1, hp, wp, top, left):
    """dst[i, y - top, x - left] = grid[r] for the grid rows r0..r1 that land inside ``dst``
    [N, H, W, C] (the inverse of ``_grid_fill``)."""
    h, w = dst.shape[1], dst.shape[2]
    for r in range(r0, r1):
        i, rem = divmod(r, hp * wp)
        y, x = divmod(rem, wp)
        y -= top
        x -= left
        if 0 <= y < h and 0 <= x < w:
            row = grid[r]
            d = dst[i, y, x]
            for c in range(row.shape[0]):
                d[c] = row[c]


def _padded_grid(x, pads, lead=0):
    """``x`` zero-padded to the grid, as ``[lead + N*Hp*Wp, C]`` rows with ``lead`` zero rows
    in front, filled in blocks over the threads."""
    (pt, pb), (pl, pr) = pads
    n, h, w, c = x.shape
    hp, wp = h + pt + pb, w + pl + pr
    rows = n * hp * wp
    g = np.empty((lead + rows, c), x.dtype)
    g[:lead] = 0
    body = g[lead:]
    nblocks, blk = _blocks(rows, COPY_BLOCK_BYTES // max(c * x.itemsize, 1))
    run_blocks(nblocks, lambda b: _grid_fill(x, body, b * blk, min(rows, (b + 1) * blk), hp, wp,
                                             pt, pl))
    return g


def _padded_4d(x, pads):
    """``_padded`` with the copy spread over the threads (``_padded_grid``)."""
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    n, h, w, c = x.shape
    return _padded_grid(x, pads).reshape(n, h + pt + pb, w + pl + pr, c)


def _padded(x, pads):
    """``x`` zero-padded to the grid ``[N, Hp, Wp, C]`` (``x`` itself without padding)."""
    (pt, pb), (pl, pr) = pads
    if not (pt or pb or pl or pr):
        return x
    n, h, w, c = x.shape
    g = np.zeros((n, h + pt + pb, w + pl + pr, c), x.dtype)
    g[:, pt:pt + h, pl:pl + w] = x
    return g


# ---- conv2d ----------------------------------------------------------------------------------
def conv2d_fwd(x, w, strides, dilations, pads, groups, out, keep=None, bias=None,
               relu=False):
    """out[N, Ho, Wo, K] = conv(x[N, H, W, C], w[kh, kw, C/groups, K]). ``keep`` (a dict or
    None) receives intermediates ``conv2d_bwd`` can reuse with the same ``keep``. With
    ``bias`` [K] (and ``relu``), out = relu(conv + bias) as ``tf.nn.bias_add`` then
    ``tf.nn.relu`` give it, applied to each block of output rows while it is in cache."""
    xg = _padded_4d(x, pads)
    if keep is not None:
        keep["padded"] = xg
    if out.size == 0:
        return out
    ep = None if bias is None else (np.ascontiguousarray(bias, out.dtype), bool(relu))
    plan = conv2d_plan(x.shape, w.shape, strides, groups)
    if plan == "shift":
        _shift_fwd(xg, w, dilations, groups, out, ep)
    elif plan == "direct":
        _direct_fwd(xg, w, strides, dilations, out, ep)
    else:
        _im2col_fwd(xg, w, strides, dilations, groups, out, ep)
    return out


def bias_relu_grad(g, y, relu):
    """(g * (y > 0) (g itself without ``relu``), its sum over every axis but the last): the
    gradients of ``relu(conv + bias)`` at the convolution's output and at the bias, from the
    gradient ``g`` and the output ``y`` (NHWC, C-contiguous), in blocks over the threads; the
    bias gradient sums a shape-determined set of partial sums in a fixed order."""
    c = g.shape[-1]
    rows = g.size // c if c else 0
    g2 = g.reshape(rows, c)
    gpre = np.empty_like(g) if relu else g
    if rows == 0 or c == 0:
        return gpre, np.zeros(c, g.dtype)
    nblocks, blk = _blocks(rows, COPY_BLOCK_BYTES // max(c * g.itemsize, 1))
    parts = np.empty((nblocks, c), g.dtype)
    p2 = gpre.reshape(rows, c)
    y2 = y.reshape(rows, c) if relu else p2  # (not read)
    run_blocks(nblocks, lambda b: _conv_epilogue.grad_rows(
        g2, y2, p2, parts[b], b * blk, min(rows, (b + 1) * blk), relu))
    return gpre, parts[0].copy() if nblocks == 1 else np.sum(parts, axis=0)


def conv2d_bwd(x, w, dy, strides, dilations, pads, groups, dx, dw, keep=None):
    """Gradients of ``conv2d_fwd``: dx[N, H, W, C] (the input's) and dw[kh, kw, C/groups, K]
    (the filter's) from dy[N, Ho, Wo, K], written in place; pass None for a gradient not
    wanted (then ``x``, or ``w``, may be None too)."""
    if dx is None and dw is None:
        return dx, dw
    if dy.size == 0:  # nothing flows back
        for g in (dx, dw):
            if g is not None:
                g[...] = 0
        return dx, dw
    x_shape = dx.shape if dx is not None else x.shape
    w_shape = dw.shape if dw is not None else w.shape
    xg = None
    if dw is not None:
        xg = keep.get("padded") if keep else None
        if xg is None:
            xg = _padded_4d(x, pads)
    plan = conv2d_plan(x_shape, w_shape, strides, groups)
    if plan == "shift":
        _shift_bwd(xg, w, dy, dilations, pads, groups, x_shape, w_shape, dx, dw)
        return dx, dw
    if plan == "direct" and dw is not None:
        _direct_bwd_filter(xg, np.ascontiguousarray(dy), strides, dilations, dw)
        dw = None  # done; the input gradient, if wanted, as im2col's
    if dx is not None or dw is not None:
        _im2col_bwd(xg, w, dy, strides, dilations, pads, groups, x_shape, w_shape, dx, dw)
    return dx, dw


def _grid_rows(n, hp, wp, ho, wo):
    """Rows of the padded grid up to the last valid output position."""
    return (n - 1) * hp * wp + (ho - 1) * wp + wo


def _image_segments(n, hp, wp, ho, wo, cg, kg):
    """(image segment rows, images a block, blocks) when the shift scheme's forward and
    filter gradient should run per image (``cg``/``kg``: a group's input/output channels),
    else None. The grid rows of one image's outputs
    end (ho - 1) * wp + wo rows into its hp * wp: the rest (the bottom kh - 1 lines, less the
    tail of the last) feeds no output, and a GEMM over all images' rows multiplies it too:
    28 of 169 rows a 13x13 image for a 3x3 VALID filter. Blocks hold whole images; their
    bounds depend on the shapes only."""
    per_image, seg = hp * wp, (ho - 1) * wp + wo
    if (n < 2 or per_image - seg < IMAGE_SEGMENT_MIN_WASTE * per_image
            or seg * cg * kg < IMAGE_SEGMENT_MIN_MACS):
        return None
    nblocks, per = _blocks(n, max(1, SHIFT_BLOCK_ROWS // per_image))
    return seg, per, nblocks


def _segment_offsets(i0, i1, per_image, offs, t_idx):
    """Per GEMM (image-major, then tap) of images i0..i1: (grid row of the image, row shift
    of the tap, tap index), int64 arrays."""
    ntap = len(t_idx)
    base = np.repeat(np.arange(i0, i1, dtype=np.int64) * per_image, ntap)
    return base, np.tile(offs, i1 - i0), np.tile(t_idx, i1 - i0)


def _taps(kh, kw, dilations, wp):
    """The filter taps' indices and row offsets on the padded grid (int64 arrays)."""
    t = np.arange(kh * kw, dtype=np.int64)
    return t, (t // kw) * dilations[0] * wp + (t % kw) * dilations[1]


def _shift_fwd(xg, w, dilations, groups, out, ep):
    n, hp, wp, c = xg.shape
    kh, kw, cg, kout = w.shape
    _, ho, wo, _ = out.shape
    kg = kout // groups
    direct = (hp, wp) == (ho, wo)  # the grid is the output: write it in place
    og = out if direct else np.empty((n, hp, wp, kout), out.dtype)
    a, b, cbuf = xg.reshape(-1), w.reshape(-1), og.reshape(-1)
    rows = _grid_rows(n, hp, wp, ho, wo)
    t_idx, offs = _taps(kh, kw, dilations, wp)
    betas = np.ones(len(t_idx))
    betas[0] = 0
    nblocks, blk = _blocks(rows, SHIFT_BLOCK_ROWS)

    grid = og.reshape(-1, kout)
    segments = None if direct else _image_segments(n, hp, wp, ho, wo, cg, kg)
    if segments is not None:
        seg, per, nblocks = segments

        def block(bi):  # images i0..i1: one GEMM a tap an image, then the crop
            i0, i1 = bi * per, min(n, (bi + 1) * per)
            base, toffs, tt = _segment_offsets(i0, i1, hp * wp, offs, t_idx)
            tbetas = np.ones(len(tt))
            tbetas[::len(t_idx)] = 0
            for g in range(groups):
                tap_gemms(a, b, cbuf, False, False, seg, kg, cg, c, kout, kout,
                          (base + toffs) * c + g * cg, tt * cg * kout + g * kg,
                          base * kout + g * kg, tbetas)
            r0, r1 = i0 * hp * wp, (i1 - 1) * hp * wp + seg
            if ep is not None:
                _conv_epilogue.crop_bias_act(grid, out, r0, r1, hp, wp, ep[0], ep[1])
            else:
                _grid_crop(grid, out, r0, r1, hp, wp, 0, 0)

        run_blocks(nblocks, block)
        return

    def block(bi):
        r0 = bi * blk
        m = min(blk, rows - r0)
        for g in range(groups):
            tap_gemms(a, b, cbuf, False, False, m, kg, cg, c, kout, kout,
                      (r0 + offs) * c + g * cg, t_idx * cg * kout + g * kg,
                      np.full_like(offs, r0 * kout + g * kg), betas)
        if direct and ep is not None:
            _conv_epilogue.bias_act_rows(grid, ep[0], r0, r0 + m, ep[1])
        elif ep is not None:  # the block's output rows while they are in cache
            _conv_epilogue.crop_bias_act(grid, out, r0, r0 + m, hp, wp, ep[0], ep[1])
        elif not direct:
            _grid_crop(grid, out, r0, r0 + m, hp, wp, 0, 0)

    run_blocks(nblocks, block)


def _shift_bwd(xg, w, dy, dilations, pads, groups, x_shape, w_shape, dx, dw):
    n, h, wdt, c = x_shape
    (pt, pb), (pl, pr) = pads
    hp, wp = h + pt + pb, wdt + pl + pr
    _, ho, wo, kout = dy.shape
    kh, kw, cg, _ = w_shape
    kg = kout // groups
    t_idx, offs = _taps(kh, kw, dilations, wp)
    lead = int(offs[-1])  # zero rows before the grid: the input gradient reads dy shifted back
    # dy on the grid (rows past ho, wo zero), filled over the threads
    dyf = _padded_grid(dy, ((0, hp - ho), (0, wp - wo)), lead).reshape(-1)
    tasks = []  # the filter-gradient parts and the input-gradient blocks: one run_blocks
    finish = None
    if dw is not None:
        xf = xg.reshape(-1)
        rows = _grid_rows(n, hp, wp, ho, wo)
        nblocks, blk = _blocks(rows, SHIFT_BLOCK_ROWS)
        segments = _image_segments(n, hp, wp, ho, wo, cg, kg)
        if segments is not None:
            seg, per, nblocks = segments
        nparts = _filter_partials(nblocks, dw.nbytes)

        parts = dw.reshape(1, -1) if nparts == 1 else np.empty((nparts, dw.size), dw.dtype)

        def part(p, rows=rows, nblocks=nblocks, blk=blk):
            acc = parts[p]  # blocks p, p + nparts, ... summed into parts[p] in order
            for bi in range(p, nblocks, nparts):
                if segments is not None:  # images i0..i1, image by image, tap by tap
                    i0, i1 = bi * per, min(n, (bi + 1) * per)
                    base, toffs, tt = _segment_offsets(i0, i1, hp * wp, offs, t_idx)
                    betas = np.ones(len(tt))
                    if bi == p:
                        betas[:len(t_idx)] = 0
                    for g in range(groups):
                        tap_gemms(xf, dyf, acc, True, False, cg, kg, seg, c, kout, kout,
                                  (base + toffs) * c + g * cg, (lead + base) * kout + g * kg,
                                  tt * cg * kout + g * kg, betas)
                    continue
                r0 = bi * blk
                m = min(blk, rows - r0)
                betas = np.full(len(t_idx), 0.0 if bi == p else 1.0)
                for g in range(groups):
                    tap_gemms(xf, dyf, acc, True, False, cg, kg, m, c, kout, kout,
                              (r0 + offs) * c + g * cg,
                              np.full_like(offs, (lead + r0) * kout + g * kg),
                              t_idx * cg * kout + g * kg, betas)

        tasks += [lambda p=p: part(p) for p in range(nparts)]
        if nparts > 1:
            def finish():
                np.sum(parts, axis=0, out=dw.reshape(-1))
    if dx is not None:
        direct = (hp, wp) == (h, wdt)
        dxg = dx if direct else np.empty((n, hp, wp, c), dx.dtype)
        wf, cf = w.reshape(-1), dxg.reshape(-1)
        rows = n * hp * wp
        nblocks, blk = _blocks(rows, SHIFT_BLOCK_ROWS)
        betas = np.ones(len(t_idx))
        betas[0] = 0

        grid = dxg.reshape(-1, c)

        def block(bi):  # dx row r gathers dy rows r - offset through each tap
            r0 = bi * blk
            m = min(blk, rows - r0)
            for g in range(groups):
                tap_gemms(dyf, wf, cf, False, True, m, cg, kg, kout, kout, c,
                          (lead + r0 - offs) * kout + g * kg, t_idx * cg * kout + g * kg,
                          np.full_like(offs, r0 * c + g * cg), betas)
            if not direct:  # the block's rows of dx while they are in cache
                _grid_crop(grid, dx, r0, r0 + m, hp, wp, pt, pl)

        tasks += [lambda bi=bi: block(bi) for bi in range(nblocks)]
    run_blocks(len(tasks), lambda i: tasks[i]())
    if finish is not None:
        finish()


def _direct_row_blocks(rows, row_bytes):
    return _blocks(rows, DIRECT_BLOCK_BYTES // max(row_bytes, 1))


def _direct_fwd(xg, w, strides, dilations, out, ep):
    n, ho, wo, k = out.shape
    rows = n * ho
    nblocks, blk = _direct_row_blocks(rows, wo * k * out.itemsize)
    (sh, sw), (dh, dw) = strides, dilations
    flat = out.reshape(-1, k)

    def block(b):
        r0, r1 = b * blk, min(rows, (b + 1) * blk)
        _conv_direct.forward_rows(xg, w, out, r0, r1, sh, sw, dh, dw)
        if ep is not None:
            _conv_epilogue.bias_act_rows(flat, ep[0], r0 * wo, r1 * wo, ep[1])

    run_blocks(nblocks, block)


def _direct_bwd_filter(xg, dy, strides, dilations, dw):
    n, ho, wo, k = dy.shape
    rows = n * ho
    nblocks, blk = _direct_row_blocks(rows, wo * k * dy.itemsize)
    nparts = _filter_partials(nblocks, dw.nbytes)
    (sh, sw), (dh, dw_) = strides, dilations

    def part(p, acc):  # blocks p, p + nparts, ... in order
        acc[:] = 0
        a = acc.reshape(dw.shape)
        for bi in range(p, nblocks, nparts):
            _conv_direct.filter_grad_rows(xg, dy, a, bi * blk, min(rows, (bi + 1) * blk), sh,
                                          sw, dh, dw_)

    _sum_partials(nparts, dw, part)


def _line_blocks(n, ho, wo, kk, itemsize):
    """Blocks of output lines (image, first row, end row) whose patch matrix is about
    IM2COL_BLOCK_BYTES."""
    lines = max(1, min(ho, IM2COL_BLOCK_BYTES // max(wo * kk * itemsize, 1)))
    return [(i, h0, min(h0 + lines, ho)) for i in range(n) for h0 in range(0, ho, lines)]


def _patches(xg, i, h0, h1, wo, kh, kw, strides, dilations):
    """The view ``[h1 - h0, wo, kh, kw, C]`` of the patches of output rows h0..h1 of image i."""
    _, sh_, sw_, sc = xg.strides
    (sh, sw), (dh, dw) = strides, dilations
    return np.lib.stride_tricks.as_strided(
        xg[i, h0 * sh:], (h1 - h0, wo, kh, kw, xg.shape[3]),
        (sh_ * sh, sw_ * sw, sh_ * dh, sw_ * dw, sc), writeable=False)


def _im2col_fwd(xg, w, strides, dilations, groups, out, ep):
    n, _, _, c = xg.shape
    kh, kw, cg, kout = w.shape
    _, ho, wo, _ = out.shape
    kg = kout // groups
    kk = kh * kw * cg
    wf, of = w.reshape(-1), out.reshape(-1)
    blocks = _line_blocks(n, ho, wo, kk, xg.itemsize)

    def block(bi):
        i, h0, h1 = blocks[bi]
        p = _patches(xg, i, h0, h1, wo, kh, kw, strides, dilations)
        cols = np.empty((h1 - h0, wo, kh, kw, cg), xg.dtype)
        for g in range(groups):
            cols[...] = p[..., g * cg:(g + 1) * cg]
            gemm(cols.reshape(-1), 0, kk, False, wf, g * kg, kout, False, of,
                 (i * ho + h0) * wo * kout + g * kg, kout, (h1 - h0) * wo, kg, kk, 0)
        if ep is not None:
            _conv_epilogue.bias_act_rows(of.reshape(-1, kout), ep[0], (i * ho + h0) * wo,
                                         (i * ho + h1) * wo, ep[1])

    run_blocks(len(blocks), block)


def _im2col_bwd(xg, w, dy, strides, dilations, pads, groups, x_shape, w_shape, dx, dw):
    n, h, wdt, c = x_shape
    (pt, pb), (pl, pr) = pads
    hp, wp = h + pt + pb, wdt + pl + pr
    kh, kw, cg, kout = w_shape
    _, ho, wo, _ = dy.shape
    kg = kout // groups
    kk = kh * kw * cg
    (sh, sw), (dh, dw_) = strides, dilations
    dyf = np.ascontiguousarray(dy).reshape(-1)
    blocks = _line_blocks(n, ho, wo, kk, dy.itemsize)
    if dw is not None:
        nparts = _filter_partials(len(blocks), dw.nbytes)

        def part(p, acc):
            for bi in range(p, len(blocks), nparts):
                i, h0, h1 = blocks[bi]
                patches = _patches(xg, i, h0, h1, wo, kh, kw, strides, dilations)
                cols = np.empty((h1 - h0, wo, kh, kw, cg), dy.dtype)
                for g in range(groups):
                    cols[...] = patches[..., g * cg:(g + 1) * cg]
                    gemm(cols.reshape(-1), 0, kk, True, dyf, (i * ho + h0) * wo * kout + g * kg,
                         kout, False, acc, g * kg, kout, kk, kg, (h1 - h0) * wo,
                         0 if bi == p else 1)

        _sum_partials(nparts, dw, part)
    if dx is not None:
        wf = w.reshape(-1)

        def image(i):  # col2im overlaps between rows of one image: an image is one task
            dxg = np.zeros((hp, wp, c), dx.dtype)
            for j, h0, h1 in blocks:
                if j != i:
                    continue
                cols = np.empty((h1 - h0, wo, kh, kw, cg), dy.dtype)
                for g in range(groups):
                    gemm(dyf, (i * ho + h0) * wo * kout + g * kg, kout, False, wf, g * kg, kout,
                         True, cols.reshape(-1), 0, kk, (h1 - h0) * wo, kk, kg, 0)
                    for a in range(kh):
                        for b in range(kw):
                            # one tap sends distinct outputs to distinct inputs: a plain add
                            y0, x0 = h0 * sh + a * dh, b * dw_
                            dxg[y0:y0 + sh * (h1 - h0 - 1) + 1:sh,
                                x0:x0 + sw * (wo - 1) + 1:sw,
                                g * cg:(g + 1) * cg] += cols[:, :, a, b]
            dx[i] = dxg[pt:pt + h, pl:pl + wdt]

        run_blocks(n, image)


# ---- depthwise -------------------------------------------------------------------------------
# Below this many multiply-adds the serial kernels win (an OpenMP launch costs more).
PARALLEL_MIN_WORK = 1 << 18


def depthwise_conv2d_fwd(x, f, strides, dilations, pads, out):
    """out[N, Ho, Wo, C*M] = depthwise conv of x[N, H, W, C] with f[kh, kw, C, M] (output
    channel c*M + m is input channel c through f[..., c, m]). The padding is not
    materialised: taps that fall outside ``x`` are skipped, unless the filter holds an Inf or
    NaN, whose product with the zero padding is NaN (as TF's and conv2d's)."""
    if out.size == 0:
        return out
    (sh, sw), (dh, dw) = strides, dilations
    pt, pl = pads[0][0], pads[1][0]
    if any(pads[0] + pads[1]) and not np.isfinite(f).all():
        x, pt, pl = _padded(x, pads), 0, 0
    work = out.size * f.shape[0] * f.shape[1]
    if work >= PARALLEL_MIN_WORK:
        _depthwise_fwd(x, f, sh, sw, dh, dw, pt, pl, out)
    else:
        _depthwise_fwd_serial(x, f, sh, sw, dh, dw, pt, pl, out)
    return out


def depthwise_conv2d_bwd(x, f, dy, strides, dilations, pads, dx, df):
    """Gradients of ``depthwise_conv2d_fwd``: dx[N, H, W, C] and df[kh, kw, C, M] from
    dy[N, Ho, Wo, C*M], in place; None for a gradient not wanted."""
    (pt, pb), (pl, pr) = pads
    (sh, sw), (dh, dw) = strides, dilations
    kh, kw, c, mult = f.shape
    n, ho, wo, _ = dy.shape
    work = dy.size * kh * kw
    parallel = work >= PARALLEL_MIN_WORK
    if dx is not None and dx.size:
        if parallel:
            _depthwise_bwd_input(dy, f, sh, sw, dh, dw, pt, pl, dx)
        else:
            _depthwise_bwd_input_serial(dy, f, sh, sw, dh, dw, pt, pl, dx)
    if df is not None:
        xg = _padded(x, pads)
        if dy.size == 0:
            df[...] = 0
        elif parallel:
            parts = np.empty((_FILTER_PARTS,) + df.shape, df.dtype)
            _depthwise_bwd_filter(xg, dy, sh, sw, dh, dw, parts)
            np.sum(parts, axis=0, out=df)
        else:
            _depthwise_bwd_filter_serial(xg, dy, sh, sw, dh, dw, df)
    return dx, df


_FILTER_PARTS = 8  # fixed, so the summation order does not depend on the thread count


# A 3x3 filter of multiplier 1 (MobileNet's) where all nine taps fall inside the input (or
# dy): the taps are unrolled inside the channel loop, so each output's sum stays in a vector
# register instead of going through memory once a tap. Same products added in the same tap
# order, from zero, as the general loops: same bits.
@njit(cache=True, nogil=True)
def _depthwise_fwd_row(x, f, sh, sw, dh, dw, pt, pl, out, n, y):
    # out[n, y] accumulated tap by tap (in tap order), channels innermost so the loop
    # vectorises; taps outside x (the zero padding) add nothing and are skipped
    kh, kw, c, mult = f.shape
    h, w = x.shape[1], x.shape[2]
    orow = out[n, y]
    y0 = y * sh - pt
    if kh == 3 and kw == 3 and mult == 1 and y0 >= 0 and y0 + 2 * dh < h:
        r0, r1, r2 = x[n, y0], x[n, y0 + dh], x[n, y0 + 2 * dh]
        for xo in range(orow.shape[0]):
            x0 = xo * sw - pl
            if x0 >= 0 and x0 + 2 * dw < w:
                _dw_3x3(r0, r1, r2, x0, x0 + dw, x0 + 2 * dw, f, orow[xo])
            else:
                _depthwise_fwd_pixel(x, f, sh, sw, dh, dw, pt, pl, orow[xo], n, y, xo)
        return
    for xo in range(orow.shape[0]):
        o = orow[xo]
        for k in range(o.shape[0]):
            o[k] = 0
    for i in range(kh):
        iy = y * sh + i * dh - pt
        if iy < 0 or iy >= h:
            continue
        xrow = x[n, iy]
        for j in range(kw):
            fij = f[i, j]
            for xo in range(orow.shape[0]):
                ix = xo * sw + j * dw - pl
                if ix < 0 or ix >= w:
                    continue
                px = xrow[ix]
                o = orow[xo]
                if mult == 1:
                    for ci in range(c):
                        o[ci] += px[ci] * fij[ci, 0]
                else:
                    for ci in range(c):
                        v = px[ci]
                        for m in range(mult):
                            o[ci * mult + m] += v * fij[ci, m]


@njit(cache=True, nogil=True)
def _depthwise_fwd_pixel(x, f, sh, sw, dh, dw, pt, pl, o, n, y, xo):
    # one output of multiplier 1, the general row's taps in its order
    kh, kw, c, _ = f.shape
    for k in range(c):
        o[k] = 0
    for i in range(kh):
        iy = y * sh + i * dh - pt
        if iy < 0 or iy >= x.shape[1]:
            continue
        for j in range(kw):
            ix = xo * sw + j * dw - pl
            if ix < 0 or ix >= x.shape[2]:
                continue
            px = x[n, iy, ix]
            for ci in range(c):
                o[ci] += px[ci] * f[i, j, ci, 0]


@njit(cache=True, nogil=True)
def _dw_3x3(r0, r1, r2, a, b, e, f, o):
    """o[ci] = the nine taps r_i[col_j, ci] * f[i, j, ci, 0] added from zero in tap order,
    col_0..2 = a, b, e."""
    zero = o.dtype.type(0)
    for ci in range(o.shape[0]):
        acc = zero
        acc += r0[a, ci] * f[0, 0, ci, 0]
        acc += r0[b, ci] * f[0, 1, ci, 0]
        acc += r0[e, ci] * f[0, 2, ci, 0]
        acc += r1[a, ci] * f[1, 0, ci, 0]
        acc += r1[b, ci] * f[1, 1, ci, 0]
        acc += r1[e, ci] * f[1, 2, ci, 0]
        acc += r2[a, ci] * f[2, 0, ci, 0]
        acc += r2[b, ci] * f[2, 1, ci, 0]
        acc += r2[e, ci] * f[2, 2, ci, 0]
        o[ci] = acc


@njit(cache=True, nogil=True)
def _depthwise_fwd_serial(x, f, sh, sw, dh, dw, pt, pl, out):
    for n in range(out.shape[0]):
        for y in range(out.shape[1]):
            _depthwise_fwd_row(x, f, sh, sw, dh, dw, pt, pl, out, n, y)


@njit(cache=True, nogil=True, parallel=True)
def _depthwise_fwd(x, f, sh, sw, dh, dw, pt, pl, out):
    ho = out.shape[1]
    for r in prange(out.shape[0] * ho):
        _depthwise_fwd_row(x, f, sh, sw, dh, dw, pt, pl, out, r // ho, r % ho)


@njit(cache=True, nogil=True)
def _depthwise_bwd_input_row(dy, f, sh, sw, dh, dw, pt, pl, dx, n, y):
    # gather: input row y (row yy = y + pt of the padded input) collects, tap by tap, the
    # outputs (ho, wo) the tap maps on it; only the unpadded columns are computed
    kh, kw, c, mult = f.shape
    ho_n, wo_n = dy.shape[1], dy.shape[2]
    orow = dx[n, y]
    yy = y + pt
    if (kh == 3 and kw == 3 and mult == 1 and sh == 1 and sw == 1 and yy - 2 * dh >= 0
            and yy < ho_n):
        d0, d1, d2 = dy[n, yy], dy[n, yy - dh], dy[n, yy - 2 * dh]
        for xo in range(orow.shape[0]):
            xx = xo + pl
            if xx - 2 * dw >= 0 and xx < wo_n:
                _dw_3x3(d0, d1, d2, xx, xx - dw, xx - 2 * dw, f, orow[xo])
            else:
                _depthwise_bwd_input_pixel(dy, f, sh, sw, dh, dw, yy, xx, orow[xo], n)
        return
    for xo in range(orow.shape[0]):
        o = orow[xo]
        for k in range(c):
            o[k] = 0
    for i in range(kh):
        ty = yy - i * dh
        if ty < 0 or ty % sh != 0 or ty // sh >= ho_n:
            continue
        drow = dy[n, ty // sh]
        for j in range(kw):
            fij = f[i, j]
            for xo in range(orow.shape[0]):
                tx = xo + pl - j * dw
                if tx < 0 or tx % sw != 0 or tx // sw >= wo_n:
                    continue
                g = drow[tx // sw]
                o = orow[xo]
                if mult == 1:
                    for ci in range(c):
                        o[ci] += g[ci] * fij[ci, 0]
                else:
                    for ci in range(c):
                        acc = o[ci]
                        for m in range(mult):
                            acc += g[ci * mult + m] * fij[ci, m]
                        o[ci] = acc


@njit(cache=True, nogil=True)
def _depthwise_bwd_input_pixel(dy, f, sh, sw, dh, dw, yy, xx, o, n):
    # one input of multiplier 1 (padded coordinates yy, xx), the general row's taps in order
    kh, kw, c, _ = f.shape
    for k in range(c):
        o[k] = 0
    for i in range(kh):
        ty = yy - i * dh
        if ty < 0 or ty % sh != 0 or ty // sh >= dy.shape[1]:
            continue
        for j in range(kw):
            tx = xx - j * dw
            if tx < 0 or tx % sw != 0 or tx // sw >= dy.shape[2]:
                continue
            g = dy[n, ty // sh, tx // sw]
            for ci in range(c):
                o[ci] += g[ci] * f[i, j, ci, 0]


@njit(cache=True, nogil=True)
def _depthwise_bwd_input_serial(dy, f, sh, sw, dh, dw, pt, pl, dx):
    for n in range(dx.shape[0]):
        for y in range(dx.shape[1]):
            _depthwise_bwd_input_row(dy, f, sh, sw, dh, dw, pt, pl, dx, n, y)


@njit(cache=True, nogil=True, parallel=True)
def _depthwise_bwd_input(dy, f, sh, sw, dh, dw, pt, pl, dx):
    h = dx.shape[1]
    for r in prange(dx.shape[0] * h):
        _depthwise_bwd_input_row(dy, f, sh, sw, dh, dw, pt, pl, dx, r // h, r % h)


@njit(cache=True, nogil=True)
def _depthwise_bwd_filter_rows(xg, dy, sh, sw, dh, dw, df, r0, r1):
    # df += the contributions of output rows r0..r1 (row = n * Ho + ho)
    kh, kw, c, mult = df.shape
    ho_n, wo_n = dy.shape[1], dy.shape[2]
    if mult == 1 and kw == 3:
        _depthwise_bwd_filter_rows_w3(xg, dy, sh, sw, dh, dw, df, r0, r1)
        return
    for r in range(r0, r1):
        n, y = r // ho_n, r % ho_n
        drow = dy[n, y]
        for i in range(kh):
            xrow = xg[n, y * sh + i * dh]
            for j in range(kw):
                dfij = df[i, j]
                for xo in range(wo_n):
                    px = xrow[xo * sw + j * dw]
                    g = drow[xo]
                    if mult == 1:
                        for ci in range(c):
                            dfij[ci, 0] += px[ci] * g[ci]
                    else:
                        for ci in range(c):
                            v = px[ci]
                            for m in range(mult):
                                dfij[ci, m] += v * g[ci * mult + m]


@njit(cache=True, nogil=True)
def _depthwise_bwd_filter_rows_w3(xg, dy, sh, sw, dh, dw, df, r0, r1):
    # multiplier 1, filter rows of three taps: the three taps of a row take their terms from
    # one load of dy; each filter value's terms still added in (row, xo) order
    kh, c = df.shape[0], df.shape[2]
    ho_n, wo_n = dy.shape[1], dy.shape[2]
    for r in range(r0, r1):
        n, y = r // ho_n, r % ho_n
        drow = dy[n, y]
        for i in range(kh):
            xrow = xg[n, y * sh + i * dh]
            d0, d1, d2 = df[i, 0], df[i, 1], df[i, 2]
            for xo in range(wo_n):
                b = xo * sw
                p0, p1, p2 = xrow[b], xrow[b + dw], xrow[b + 2 * dw]
                g = drow[xo]
                for ci in range(c):
                    gv = g[ci]
                    d0[ci, 0] += p0[ci] * gv
                    d1[ci, 0] += p1[ci] * gv
                    d2[ci, 0] += p2[ci] * gv


@njit(cache=True, nogil=True)
def _depthwise_bwd_filter_serial(xg, dy, sh, sw, dh, dw, df):
    df[...] = 0
    _depthwise_bwd_filter_rows(xg, dy, sh, sw, dh, dw, df, 0, dy.shape[0] * dy.shape[1])


@njit(cache=True, nogil=True, parallel=True)
def _depthwise_bwd_filter(xg, dy, sh, sw, dh, dw, parts):
    rows = dy.shape[0] * dy.shape[1]
    nparts = parts.shape[0]
    for p in prange(nparts):
        part = parts[p]
        part[...] = 0
        _depthwise_bwd_filter_rows(xg, dy, sh, sw, dh, dw, part, rows * p // nparts,
                                   rows * (p + 1) // nparts)
