"""2-D max and average pooling on the CPU (Numba), forward and backward.

Every kernel takes C-contiguous arrays laid out [B, H, W, C] in float32 or float64 (an NCHW
tensor comes as [N*C, H, W, 1]), the window ``kh, kw``, the strides ``sh, sw`` and the
top/left padding ``pt, pl``; the output sizes come from the output arrays. Windows are
clipped to the input (padding is never read).

Semantics are TensorFlow's CPU kernels':
- max: the running maximum starts at ``floor`` (the dtype's lowest finite value) and takes
  an element only when it is strictly greater, so NaN is skipped and the first maximum in
  row-major window order wins; ``arg`` records its flat index ``h * W + w`` (the window's
  first element when nothing beat ``floor``). The result does not depend on the visiting
  order, so every loop nest here and on the GPU gives the same ``out`` and ``arg``;
- average: each window column is summed over the rows first, then the column sums left to
  right, and the total divided by the in-bounds count. That one association is used by
  every kernel (and the GPU twin), so the layouts and devices agree bit for bit.

The backward kernels give every input element the sum of its windows' terms in ascending
(oh, ow) order, as the GPU twin (one thread per input element): deterministic, and equal
bit for bit. With C > 1 one iteration owns an input row (b, h) and gathers from the windows
covering it; with C == 1 one iteration owns a plane b and scatters each output once.

Two forward loop nests: with C > 1 the loops run across channels (vectorised; whole 3x3 and
2x2 max and average windows unrolled inside the channel loop, see ``_max_3x3``); with C == 1
(NCHW planes) the window columns are reduced over the window rows for a whole output row at
once (vectorised across the row), then each window reduces its columns. A serial driver
takes all rows (or planes); the parallel one runs blocks of them, with one scratch buffer a
block, on the convolutions' host threads (``conv_cpu.run_blocks``), not in an OpenMP region:
OpenMP's threads keep spinning after the region ends, on the cores the convolution that
follows a pooling layer in a CNN step wants.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._threads import num_threads
from .conv_cpu import run_blocks

# Below this much work (output elements x window elements) the serial drivers win: handing
# blocks to the host threads costs more.
PARALLEL_MIN_WORK = 1 << 20
BLOCKS_PER_THREAD = 4  # the parallel drivers' blocks of rows (balance against Python work)

MAX, MAX_ARG, AVG = 0, 1, 2  # forward kinds
_NO_ARG = np.empty((0, 0, 0, 0), np.int32)


def _parallel(work):
    return work >= PARALLEL_MIN_WORK and num_threads() > 1


def max_pool_fwd(x, out, arg, kh, kw, sh, sw, pt, pl, floor):
    """Max pooling of ``x`` [B, H, W, C] into ``out`` [B, OH, OW, C] (same dtype) and, unless
    ``arg`` is None, the flat index h * W + w of each maximum into int32 ``arg`` (the shape
    of ``out``). ``floor``: the lowest finite value of the caller's dtype, as an ``x.dtype``
    scalar. Outputs preallocated, fully overwritten; deterministic."""
    kind = MAX if arg is None else MAX_ARG
    _forward(x, out, _NO_ARG if arg is None else arg, kind, kh, kw, sh, sw, pt, pl, floor)
    return out


def avg_pool_fwd(x, out, kh, kw, sh, sw, pt, pl):
    """Average pooling of ``x`` [B, H, W, C] into ``out`` [B, OH, OW, C] (same dtype),
    dividing each window's sum by its in-bounds count. ``out`` preallocated, fully
    overwritten; deterministic."""
    _forward(x, out, _NO_ARG, AVG, kh, kw, sh, sw, pt, pl, x.dtype.type(0))
    return out


def max_pool_bwd(g, arg, dx, kh, kw, sh, sw, pt, pl):
    """dx [B, H, W, C] = the sum of ``g`` [B, OH, OW, C] over the outputs whose ``arg`` (from
    max_pool_fwd) is that input element. ``dx`` preallocated, fully overwritten;
    deterministic."""
    _backward(g, arg, dx, True, kh, kw, sh, sw, pt, pl)
    return dx


def avg_pool_bwd(g, dx, kh, kw, sh, sw, pt, pl):
    """dx [B, H, W, C] = the sum over the windows covering each input element of
    g / (that window's in-bounds count), each quotient rounded to the dtype. ``dx``
    preallocated, fully overwritten; deterministic."""
    _backward(g, _NO_ARG, dx, False, kh, kw, sh, sw, pt, pl)
    return dx


def max_pool_depth_fwd(x, out, k):
    """TF's CPU depthwise max pooling: ``out[..., j]`` = the maximum of the run of ``k``
    channels ``x[..., j*k:(j+1)*k]``, starting from the run's first element and taking an
    element only when it is strictly greater (a NaN that opens a run stays, later NaN are
    skipped). ``x`` C-contiguous float32/float64, ``out`` its shape with C/k channels,
    preallocated, fully overwritten; deterministic."""
    if out.size == 0:
        return out
    x2 = x.reshape(-1, x.shape[-1])
    o2 = out.reshape(-1, out.shape[-1])
    rows = o2.shape[0]
    if _parallel(x.size):
        _in_blocks(rows, lambda r0, r1: _depth_rows(x2, o2, k, r0, r1))
    else:
        _depth_rows(x2, o2, k, 0, rows)
    return out


@njit(cache=True, nogil=True)
def _depth_rows(x, out, k, r0, r1):
    # run by run the running maxima of a row's outputs: the loops over a row's runs vectorise
    n = out.shape[1]
    acc = np.empty(n, x.dtype)
    for r in range(r0, r1):
        xr = x[r]
        for j in range(n):
            acc[j] = xr[j * k]
        for i in range(1, k):
            for j in range(n):
                v = xr[j * k + i]
                m = acc[j]
                acc[j] = v if v > m else m
        o = out[r]
        for j in range(n):
            o[j] = acc[j]


def _forward(x, out, arg, kind, kh, kw, sh, sw, pt, pl, floor):
    work = out.size * kh * kw
    if work == 0:
        return
    if _parallel(work):
        _forward_parallel(x, out, arg, kind, kh, kw, sh, sw, pt, pl, floor)
    else:
        _forward_serial(x, out, arg, kind, kh, kw, sh, sw, pt, pl, floor)


def _backward(g, arg, dx, is_max, kh, kw, sh, sw, pt, pl):
    if dx.size == 0:
        return
    if g.size == 0:  # no window covers anything (an empty output)
        dx[...] = 0
    elif _parallel(g.size * kh * kw):
        _backward_parallel(g, arg, dx, is_max, kh, kw, sh, sw, pt, pl)
    else:
        _backward_serial(g, arg, dx, is_max, kh, kw, sh, sw, pt, pl)


# ---- drivers: every row (b, oh), row (b, h) or plane b is written by one iteration ---------
@njit(cache=True, nogil=True)
def _scratch(dtype_like, n_c, n_w, kw):
    n = max(n_c, n_w + kw) + 1
    return np.empty(2 * n, dtype_like.dtype), np.empty(n, np.int32)


@njit(cache=True, nogil=True)
def _forward_rows(x, out, arg, kind, r0, r1, kh, kw, sh, sw, pt, pl, floor):
    fbuf, ibuf = _scratch(out, x.shape[3], x.shape[2], kw)
    n_oh = out.shape[1]
    planar = x.shape[3] == 1
    for r in range(r0, r1):
        b, oh = r // n_oh, r % n_oh
        if planar:
            if kind == AVG:
                _avg_row_planar(x, out, b, oh, kh, kw, sh, sw, pt, pl, fbuf)
            else:
                _max_row_planar(x, out, arg, kind == MAX_ARG, b, oh, kh, kw, sh, sw, pt, pl,
                                floor, fbuf, ibuf)
        elif kind == AVG:
            _avg_row(x, out, b, oh, kh, kw, sh, sw, pt, pl, fbuf)
        elif kind == MAX_ARG:
            _max_arg_row(x, out, arg, b, oh, kh, kw, sh, sw, pt, pl, floor, fbuf, ibuf)
        else:
            _max_row(x, out, b, oh, kh, kw, sh, sw, pt, pl, floor, fbuf)


@njit(cache=True, nogil=True)
def _backward_units(dx):
    """Planes (b) for C == 1, whose kernels scatter each output once; else rows (b, h)."""
    return dx.shape[0] if dx.shape[3] == 1 else dx.shape[0] * dx.shape[1]


@njit(cache=True, nogil=True)
def _backward_rows(g, arg, dx, is_max, r0, r1, kh, kw, sh, sw, pt, pl):
    fbuf, _ = _scratch(dx, dx.shape[3], dx.shape[2], kw)
    n_h = dx.shape[1]
    planar = dx.shape[3] == 1
    for r in range(r0, r1):
        if planar:
            if is_max:
                _max_bwd_plane(g, arg, dx, r)
            else:
                _avg_bwd_plane(g, dx, r, kh, kw, sh, sw, pt, pl, fbuf)
        elif is_max:
            _max_bwd_row(g, arg, dx, r // n_h, r % n_h, kh, kw, sh, sw, pt, pl)
        else:
            _avg_bwd_row(g, dx, r // n_h, r % n_h, kh, kw, sh, sw, pt, pl, fbuf)


@njit(cache=True, nogil=True)
def _forward_serial(x, out, arg, kind, kh, kw, sh, sw, pt, pl, floor):
    _forward_rows(x, out, arg, kind, 0, out.shape[0] * out.shape[1], kh, kw, sh, sw, pt, pl,
                  floor)


def _in_blocks(units, work):
    """work(u0, u1) for blocks of the units 0..units-1 over the host threads."""
    nblocks = min(units, BLOCKS_PER_THREAD * num_threads())
    if nblocks <= 0:
        return
    run_blocks(nblocks, lambda b: work(units * b // nblocks, units * (b + 1) // nblocks))


def _forward_parallel(x, out, arg, kind, kh, kw, sh, sw, pt, pl, floor):
    _in_blocks(out.shape[0] * out.shape[1], lambda r0, r1: _forward_rows(
        x, out, arg, kind, r0, r1, kh, kw, sh, sw, pt, pl, floor))


@njit(cache=True, nogil=True)
def _backward_serial(g, arg, dx, is_max, kh, kw, sh, sw, pt, pl):
    _backward_rows(g, arg, dx, is_max, 0, _backward_units(dx), kh, kw, sh, sw, pt, pl)


def _backward_parallel(g, arg, dx, is_max, kh, kw, sh, sw, pt, pl):
    _in_blocks(_backward_units(dx), lambda r0, r1: _backward_rows(
        g, arg, dx, is_max, r0, r1, kh, kw, sh, sw, pt, pl))


# ---- index helpers --------------------------------------------------------------------------
@njit(cache=True, nogil=True)
def _clip(o, k, s, p, n):
    """The in-bounds part [lo, hi) of window o (start o * s - p, size k) over n elements."""
    start = o * s - p
    return max(start, 0), min(start + k, n)


@njit(cache=True, nogil=True)
def _covering(i, k, s, p, n_out):
    """The output positions [lo, hi) whose windows (start o * s - p, size k) hold i."""
    lo = i + p - k + 1
    lo = 0 if lo <= 0 else (lo + s - 1) // s
    return lo, min((i + p) // s + 1, n_out)


# ---- channels innermost (C > 1) -------------------------------------------------------------
# Accumulators live in the scratch buffer: updating ``out`` in place would leave LLVM unable
# to prove that ``out`` and ``x`` do not overlap, and the channel loops would not vectorise.
@njit(cache=True, nogil=True)
def _max_row(x, out, b, oh, kh, kw, sh, sw, pt, pl, floor, fbuf):
    n_h, n_w, n_c = x.shape[1], x.shape[2], x.shape[3]
    h_lo, h_hi = _clip(oh, kh, sh, pt, n_h)
    acc = fbuf[:n_c]
    full_h = h_hi - h_lo == kh
    for ow in range(out.shape[2]):
        w_lo, w_hi = _clip(ow, kw, sw, pl, n_w)
        if full_h and w_hi - w_lo == kw and kh == kw and (kh == 3 or kh == 2):
            if kh == 3:
                _max_3x3(x, b, h_lo, w_lo, floor, acc)
            else:
                _max_2x2(x, b, h_lo, w_lo, floor, acc)
        else:
            for c in range(n_c):
                acc[c] = floor
            for h in range(h_lo, h_hi):
                for w in range(w_lo, w_hi):
                    for c in range(n_c):
                        v = x[b, h, w, c]
                        m = acc[c]
                        acc[c] = v if v > m else m  # strictly greater: NaN never enters
        for c in range(n_c):
            out[b, oh, ow, c] = acc[c]


@njit(cache=True, nogil=True)
def _max_arg_row(x, out, arg, b, oh, kh, kw, sh, sw, pt, pl, floor, fbuf, ibuf):
    n_h, n_w, n_c = x.shape[1], x.shape[2], x.shape[3]
    h_lo, h_hi = _clip(oh, kh, sh, pt, n_h)
    acc = fbuf[:n_c]
    at = ibuf[:n_c]
    full_h = h_hi - h_lo == kh
    for ow in range(out.shape[2]):
        w_lo, w_hi = _clip(ow, kw, sw, pl, n_w)
        if full_h and w_hi - w_lo == kw and kh == kw and (kh == 3 or kh == 2):
            if kh == 3:
                _max_arg_3x3(x, b, h_lo, w_lo, floor, acc, at)
            else:
                _max_arg_2x2(x, b, h_lo, w_lo, floor, acc, at)
        else:
            first = np.int32(h_lo * n_w + w_lo)
            for c in range(n_c):
                acc[c] = floor
                at[c] = first
            for h in range(h_lo, h_hi):
                for w in range(w_lo, w_hi):
                    idx = np.int32(h * n_w + w)
                    for c in range(n_c):
                        v = x[b, h, w, c]
                        m = acc[c]
                        better = v > m
                        acc[c] = v if better else m
                        at[c] = idx if better else at[c]
        for c in range(n_c):
            out[b, oh, ow, c] = acc[c]
            arg[b, oh, ow, c] = at[c]


# Whole 3x3 and 2x2 windows, the usual pooling layers: the window is unrolled inside the
# channel loop, so the running maximum (and its index) stays in vector registers instead of
# going through ``acc`` once per window element (about 5x faster for 3x3 over 64 channels).
# Same comparisons in the same row-major order as the general loop: same bits.
@njit(cache=True, nogil=True, inline="always")
def _take(v, m):
    return v if v > m else m


@njit(cache=True, nogil=True)
def _max_3x3(x, b, h, w, floor, acc):
    for c in range(acc.shape[0]):
        m = _take(x[b, h, w, c], floor)
        m = _take(x[b, h, w + 1, c], m)
        m = _take(x[b, h, w + 2, c], m)
        m = _take(x[b, h + 1, w, c], m)
        m = _take(x[b, h + 1, w + 1, c], m)
        m = _take(x[b, h + 1, w + 2, c], m)
        m = _take(x[b, h + 2, w, c], m)
        m = _take(x[b, h + 2, w + 1, c], m)
        acc[c] = _take(x[b, h + 2, w + 2, c], m)


@njit(cache=True, nogil=True)
def _max_2x2(x, b, h, w, floor, acc):
    for c in range(acc.shape[0]):
        m = _take(x[b, h, w, c], floor)
        m = _take(x[b, h, w + 1, c], m)
        m = _take(x[b, h + 1, w, c], m)
        acc[c] = _take(x[b, h + 1, w + 1, c], m)


@njit(cache=True, nogil=True, inline="always")
def _take_arg(v, i, m, a):
    better = v > m
    return (v if better else m), (i if better else a)


@njit(cache=True, nogil=True)
def _max_arg_3x3(x, b, h, w, floor, acc, at):
    n_w = x.shape[2]
    # int32 sums would widen to int64 in Numba, and the selects with them stop vectorising
    i00, i01, i02 = np.int32(h * n_w + w), np.int32(h * n_w + w + 1), np.int32(h * n_w + w + 2)
    r1, r2 = (h + 1) * n_w + w, (h + 2) * n_w + w
    i10, i11, i12 = np.int32(r1), np.int32(r1 + 1), np.int32(r1 + 2)
    i20, i21, i22 = np.int32(r2), np.int32(r2 + 1), np.int32(r2 + 2)
    for c in range(acc.shape[0]):
        m, a = _take_arg(x[b, h, w, c], i00, floor, i00)
        m, a = _take_arg(x[b, h, w + 1, c], i01, m, a)
        m, a = _take_arg(x[b, h, w + 2, c], i02, m, a)
        m, a = _take_arg(x[b, h + 1, w, c], i10, m, a)
        m, a = _take_arg(x[b, h + 1, w + 1, c], i11, m, a)
        m, a = _take_arg(x[b, h + 1, w + 2, c], i12, m, a)
        m, a = _take_arg(x[b, h + 2, w, c], i20, m, a)
        m, a = _take_arg(x[b, h + 2, w + 1, c], i21, m, a)
        m, a = _take_arg(x[b, h + 2, w + 2, c], i22, m, a)
        acc[c] = m
        at[c] = a


@njit(cache=True, nogil=True)
def _max_arg_2x2(x, b, h, w, floor, acc, at):
    n_w = x.shape[2]
    i00, i01 = np.int32(h * n_w + w), np.int32(h * n_w + w + 1)
    i10, i11 = np.int32((h + 1) * n_w + w), np.int32((h + 1) * n_w + w + 1)
    for c in range(acc.shape[0]):
        m, a = _take_arg(x[b, h, w, c], i00, floor, i00)
        m, a = _take_arg(x[b, h, w + 1, c], i01, m, a)
        m, a = _take_arg(x[b, h + 1, w, c], i10, m, a)
        m, a = _take_arg(x[b, h + 1, w + 1, c], i11, m, a)
        acc[c] = m
        at[c] = a


@njit(cache=True, nogil=True)
def _avg_row(x, out, b, oh, kh, kw, sh, sw, pt, pl, fbuf):
    n_h, n_w, n_c = x.shape[1], x.shape[2], x.shape[3]
    h_lo, h_hi = _clip(oh, kh, sh, pt, n_h)
    acc = fbuf[:n_c]
    col = fbuf[n_c:2 * n_c]
    full_h = h_hi - h_lo == kh
    for ow in range(out.shape[2]):
        w_lo, w_hi = _clip(ow, kw, sw, pl, n_w)
        if full_h and w_hi - w_lo == kw and kh == kw and (kh == 3 or kh == 2):
            if kh == 3:
                _sum_3x3(x, b, h_lo, w_lo, acc)
            else:
                _sum_2x2(x, b, h_lo, w_lo, acc)
        else:
            for c in range(n_c):
                acc[c] = 0
            for w in range(w_lo, w_hi):
                for c in range(n_c):
                    col[c] = 0
                for h in range(h_lo, h_hi):
                    for c in range(n_c):
                        col[c] += x[b, h, w, c]
                for c in range(n_c):
                    acc[c] += col[c]
        fbuf[2 * n_c] = (h_hi - h_lo) * (w_hi - w_lo)  # the count in the dtype, not float64
        cnt = fbuf[2 * n_c]
        for c in range(n_c):
            out[b, oh, ow, c] = acc[c] / cnt


@njit(cache=True, nogil=True)
def _sum_3x3(x, b, h, w, acc):
    # the general loop's association, unrolled: each column from zero down its rows, then
    # the columns from zero left to right (zero + v is not v for v = -0)
    zero = acc.dtype.type(0)
    for c in range(acc.shape[0]):
        c0 = zero + x[b, h, w, c]
        c0 += x[b, h + 1, w, c]
        c0 += x[b, h + 2, w, c]
        c1 = zero + x[b, h, w + 1, c]
        c1 += x[b, h + 1, w + 1, c]
        c1 += x[b, h + 2, w + 1, c]
        c2 = zero + x[b, h, w + 2, c]
        c2 += x[b, h + 1, w + 2, c]
        c2 += x[b, h + 2, w + 2, c]
        acc[c] = ((zero + c0) + c1) + c2


@njit(cache=True, nogil=True)
def _sum_2x2(x, b, h, w, acc):
    zero = acc.dtype.type(0)
    for c in range(acc.shape[0]):
        c0 = (zero + x[b, h, w, c]) + x[b, h + 1, w, c]
        c1 = (zero + x[b, h, w + 1, c]) + x[b, h + 1, w + 1, c]
        acc[c] = ((zero + c0) + c1)


@njit(cache=True, nogil=True)
def _max_bwd_row(g, arg, dx, b, h, kh, kw, sh, sw, pt, pl):
    n_w, n_c = dx.shape[2], dx.shape[3]
    zero = dx.dtype.type(0)
    for w in range(n_w):
        for c in range(n_c):
            dx[b, h, w, c] = 0
    oh_lo, oh_hi = _covering(h, kh, sh, pt, g.shape[1])
    for oh in range(oh_lo, oh_hi):
        for ow in range(g.shape[2]):
            w_lo, w_hi = _clip(ow, kw, sw, pl, n_w)
            for w in range(w_lo, w_hi):
                me = np.int32(h * n_w + w)
                for c in range(n_c):  # a select, not a branch: vectorises, never mispredicts
                    dx[b, h, w, c] += g[b, oh, ow, c] if arg[b, oh, ow, c] == me else zero


@njit(cache=True, nogil=True)
def _avg_bwd_row(g, dx, b, h, kh, kw, sh, sw, pt, pl, fbuf):
    n_h, n_w, n_c = dx.shape[1], dx.shape[2], dx.shape[3]
    scaled = fbuf[:n_c]
    for w in range(n_w):
        for c in range(n_c):
            dx[b, h, w, c] = 0
    oh_lo, oh_hi = _covering(h, kh, sh, pt, g.shape[1])
    for oh in range(oh_lo, oh_hi):
        h_lo, h_hi = _clip(oh, kh, sh, pt, n_h)
        for ow in range(g.shape[2]):
            w_lo, w_hi = _clip(ow, kw, sw, pl, n_w)
            fbuf[n_c] = (h_hi - h_lo) * (w_hi - w_lo)
            cnt = fbuf[n_c]
            for c in range(n_c):
                scaled[c] = g[b, oh, ow, c] / cnt  # rounded to the dtype before it is added
            for w in range(w_lo, w_hi):
                for c in range(n_c):
                    dx[b, h, w, c] += scaled[c]


# ---- planar (C == 1): columns reduced over the window rows first ----------------------------
@njit(cache=True, nogil=True)
def _max_row_planar(x, out, arg, want_arg, b, oh, kh, kw, sh, sw, pt, pl, floor, fbuf, ibuf):
    n_h, n_w, n_ow = x.shape[1], x.shape[2], out.shape[2]
    h_lo, h_hi = _clip(oh, kh, sh, pt, n_h)
    n_used = min(n_w, (n_ow - 1) * sw - pl + kw)  # columns some window reads
    col = fbuf[:n_used]
    col_h = ibuf[:n_used]  # the first row holding each column's maximum
    for w in range(n_used):
        col[w] = floor
        col_h[w] = h_lo
    for h in range(h_lo, h_hi):
        hh = np.int32(h)
        if want_arg:
            for w in range(n_used):
                v = x[b, h, w, 0]
                m = col[w]
                better = v > m
                col[w] = v if better else m
                col_h[w] = hh if better else col_h[w]
        else:
            for w in range(n_used):
                v = x[b, h, w, 0]
                m = col[w]
                col[w] = v if v > m else m
    for ow in range(n_ow):
        w_lo, w_hi = _clip(ow, kw, sw, pl, n_w)
        best = floor
        if want_arg:
            # the row-major first maximum: the largest value, then the smallest row, then
            # the smallest column
            bh, bw = np.int32(h_lo), np.int32(w_lo)
            for w in range(w_lo, w_hi):
                v, vh = col[w], col_h[w]
                better = (v > best) | ((v == best) & (vh < bh))  # no branches
                best = v if better else best
                bh = vh if better else bh
                bw = np.int32(w) if better else bw
            arg[b, oh, ow, 0] = bh * n_w + bw
        else:
            for w in range(w_lo, w_hi):
                v = col[w]
                best = v if v > best else best
        out[b, oh, ow, 0] = best


@njit(cache=True, nogil=True)
def _avg_row_planar(x, out, b, oh, kh, kw, sh, sw, pt, pl, fbuf):
    n_h, n_w, n_ow = x.shape[1], x.shape[2], out.shape[2]
    h_lo, h_hi = _clip(oh, kh, sh, pt, n_h)
    n_used = min(n_w, (n_ow - 1) * sw - pl + kw)
    col = fbuf[:n_used]
    for w in range(n_used):
        col[w] = 0
    for h in range(h_lo, h_hi):
        for w in range(n_used):
            col[w] += x[b, h, w, 0]
    zero = out.dtype.type(0)
    for ow in range(n_ow):
        w_lo, w_hi = _clip(ow, kw, sw, pl, n_w)
        acc = zero
        for w in range(w_lo, w_hi):
            acc += col[w]
        fbuf[n_used] = (h_hi - h_lo) * (w_hi - w_lo)
        out[b, oh, ow, 0] = acc / fbuf[n_used]


@njit(cache=True, nogil=True)
def _max_bwd_plane(g, arg, dx, b):
    n_w = dx.shape[2]
    for h in range(dx.shape[1]):
        for w in range(n_w):
            dx[b, h, w, 0] = 0
    for oh in range(g.shape[1]):  # ascending (oh, ow): each element's sum in that order
        for ow in range(g.shape[2]):
            a = arg[b, oh, ow, 0]
            dx[b, a // n_w, a % n_w, 0] += g[b, oh, ow, 0]


@njit(cache=True, nogil=True)
def _avg_bwd_plane(g, dx, b, kh, kw, sh, sw, pt, pl, fbuf):
    n_h, n_w, n_ow = dx.shape[1], dx.shape[2], g.shape[2]
    q = fbuf[:n_ow]
    for h in range(n_h):
        for w in range(n_w):
            dx[b, h, w, 0] = 0
    for oh in range(g.shape[1]):  # ascending (oh, ow): each element's sum in that order
        h_lo, h_hi = _clip(oh, kh, sh, pt, n_h)
        for ow in range(n_ow):
            w_lo, w_hi = _clip(ow, kw, sw, pl, n_w)
            fbuf[n_ow] = (h_hi - h_lo) * (w_hi - w_lo)
            q[ow] = g[b, oh, ow, 0] / fbuf[n_ow]  # rounded to the dtype before it is added
        for h in range(h_lo, h_hi):
            for j in range(kw - 1, -1, -1):  # for each column, its windows in ascending ow
                lo = max(0, (pl - j + sw - 1) // sw)
                hi = min(n_ow, (n_w - 1 + pl - j) // sw + 1)
                for ow in range(lo, hi):
                    dx[b, h, ow * sw - pl + j, 0] += q[ow]
