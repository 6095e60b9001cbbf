"""A convolution's bias and ReLU, applied to output rows while a block of them is in cache
(forward), and their gradients in one pass (backward): the arithmetic of ``tf.nn.bias_add``
followed by ``tf.nn.relu``, element for element (Numba).

Forward: ``y = relu(conv + bias)``: the sum rounded to the dtype, then NaN kept and values
<= 0 set to 0, as TF's Relu. Backward: ``g * (y > 0)`` (TF's ReluGrad: a multiply, so NaN in
``g`` stays NaN) and the bias gradient, the sum of that over the rows. Arrays are 2-D
``[rows, channels]`` views of NHWC maps, C-contiguous.
"""

from __future__ import annotations

from numba import njit

from . import _cache_deps

_cache_deps.install()  # callers' cached kernels embed these helpers


@njit(cache=True, nogil=True)
def bias_act_rows(out, bias, r0, r1, relu):
    """out[r] = act(out[r] + bias) for the rows r0..r1 of ``out`` [rows, C], in place."""
    c = out.shape[1]
    zero = out.dtype.type(0)
    for r in range(r0, r1):
        row = out[r]
        for j in range(c):
            v = row[j] + bias[j]
            if relu and v <= 0:
                v = zero
            row[j] = v


@njit(cache=True, nogil=True)
def crop_bias_act(grid, dst, r0, r1, hp, wp, bias, relu):
    """dst[i, y, x] = act(grid[r] + bias) for the grid rows r0..r1 (r = (i*hp + y)*wp + x)
    that land inside ``dst`` [N, H, W, C] (a convolution's output computed on its padded
    input grid ``[rows, C]``)."""
    h, w = dst.shape[1], dst.shape[2]
    zero = dst.dtype.type(0)
    for r in range(r0, r1):
        i, rem = divmod(r, hp * wp)
        y, x = divmod(rem, wp)
        if y < h and x < w:
            row = grid[r]
            d = dst[i, y, x]
            for j in range(row.shape[0]):
                v = row[j] + bias[j]
                if relu and v <= 0:
                    v = zero
                d[j] = v


@njit(cache=True, nogil=True)
def grad_rows(g, y, gpre, db, r0, r1, relu):
    """With ``relu``, gpre[r] = g[r] * (y[r] > 0) for the rows r0..r1 (``gpre`` untouched
    without); db (zeroed here) = the sum of those rows of gpre (of g without ``relu``), in
    row order. All [rows, C] but ``db`` [C]."""
    c = g.shape[1]
    one, zero = g.dtype.type(1), g.dtype.type(0)
    for j in range(c):
        db[j] = zero
    for r in range(r0, r1):
        grow = g[r]
        if relu:
            yrow, out = y[r], gpre[r]
            for j in range(c):
                out[j] = grow[j] * (one if yrow[j] > 0 else zero)
            for j in range(c):
                db[j] += out[j]
        else:
            for j in range(c):
                db[j] += grow[j]

