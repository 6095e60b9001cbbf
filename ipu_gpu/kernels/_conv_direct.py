"""Direct 2-D convolution loops (Numba) for filters with few taps: a network's first layer
on one channel and other convolutions whose patch ``kh * kw * C`` is short.

There a GEMM's inner dimension would be the patch length (9 for a 3x3 filter on one
channel): BLAS runs such products far below its speed, and the patch matrix im2col builds
costs as much memory traffic as the product. These loops read the zero-padded input in
place instead, one output row (image, output line) at a time: the row's ``Wo x K``
accumulators stay in the L1 cache while every tap adds ``x * w[tap]`` across the output
channels (the vectorised loop). The patch is summed tap by tap in (row, column, channel)
order from zero, so each result is one fixed sequence of float operations, whatever rows a
call covers: callers may split the rows among threads freely (the filter gradient's
partial sums are the caller's to order).

Arrays: ``xg`` [N, Hp, Wp, C] (the input, already padded), ``w`` / ``dw`` [kh, kw, C, K],
``out`` / ``dy`` [N, Ho, Wo, K]; C-contiguous, one float dtype.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import _cache_deps

_cache_deps.install()  # callers' cached kernels embed these helpers


@njit(cache=True, nogil=True, fastmath={"contract"})
def forward_rows(xg, w, out, r0, r1, sh, sw, dh, dw):
    """out rows r0..r1 (row = image * Ho + output line) of the convolution of ``xg``."""
    kh, kw, c, k = w.shape
    ho, wo = out.shape[1], out.shape[2]
    acc = np.empty((wo, k), out.dtype)
    for r in range(r0, r1):
        b = r // ho
        oh = r - b * ho
        for o in range(wo):
            for q in range(k):
                acc[o, q] = 0
        for i in range(kh):
            xrow = xg[b, oh * sh + i * dh]
            for j in range(kw):
                for ci in range(c):
                    wv = w[i, j, ci]
                    for o in range(wo):
                        v = xrow[o * sw + j * dw, ci]
                        for q in range(k):
                            acc[o, q] += v * wv[q]
        orow = out[b, oh]
        for o in range(wo):
            for q in range(k):
                orow[o, q] = acc[o, q]


@njit(cache=True, nogil=True, fastmath={"contract"})
def filter_grad_rows(xg, dy, acc, r0, r1, sh, sw, dh, dw):
    """acc [kh, kw, C, K] += the filter gradient's terms of the output rows r0..r1, row by
    row in order, each row's outputs left to right."""
    kh, kw, c, k = acc.shape
    ho, wo = dy.shape[1], dy.shape[2]
    for r in range(r0, r1):
        b = r // ho
        oh = r - b * ho
        dyrow = dy[b, oh]
        for i in range(kh):
            xrow = xg[b, oh * sh + i * dh]
            for j in range(kw):
                for ci in range(c):
                    a = acc[i, j, ci]
                    for o in range(wo):
                        v = xrow[o * sw + j * dw, ci]
                        g = dyrow[o]
                        for q in range(k):
                            a[q] += v * g[q]
