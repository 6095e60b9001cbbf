"""One-pass elementwise kernels for the training step's activations on the CPU (Numba).

Each writes its output in one pass with no temporaries: numpy's ``maximum(x, 0)`` ran 5x
slower than a copy of the same bytes on an AMD EPYC (its NaN-propagating loop does not
vectorise there), ``g * (x > 0)`` builds a mask array first, and ``x + b`` with a broadcast
bias is a strided loop. The loops are serial on purpose: at activation sizes they take
tens of microseconds, less than an OpenMP launch and the spinning threads it leaves behind
to stall the next BLAS call (indexing_cpu.py). Arguments are C-contiguous float32/float64
arrays viewed as 1-D (``ravel``); callers fall back to numpy for anything else.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def fits(*arrays) -> bool:
    """Whether the kernels here take these arrays: C-contiguous, one float32/float64 dtype."""
    d = arrays[0].dtype
    if d != np.float32 and d != np.float64:
        return False
    for a in arrays:  # a loop, not all() over a generator: this runs on every op call
        if a.dtype != d or not a.flags.c_contiguous:
            return False
    return True


def fits2(a, b) -> bool:
    """``fits(a, b)``, unrolled (called on most activation and bias op calls)."""
    d = a.dtype
    return ((d == np.float32 or d == np.float64) and b.dtype == d and a.flags.c_contiguous
            and b.flags.c_contiguous)


@njit(cache=True, nogil=True)
def _relu(x, out):
    for i in range(x.size):
        v = x[i]
        out[i] = v if not v <= 0 else 0  # NaN stays NaN, as numpy's maximum and TF's Relu


def relu(x):
    """max(x, 0) elementwise, NaN propagated; x as ``fits`` requires."""
    out = np.empty_like(x)
    _relu(x.reshape(-1), out.reshape(-1))
    return out


@njit(cache=True, nogil=True)
def _relu_grad(g, x, out):
    one, zero = g.dtype.type(1), g.dtype.type(0)
    for i in range(g.size):
        out[i] = g[i] * (one if x[i] > 0 else zero)  # a multiply: NaN in g stays NaN, as TF


def relu_grad(g, x):
    """g * (x > 0) elementwise (TF's ReluGrad); g, x of one shape as ``fits`` requires."""
    out = np.empty_like(g)
    _relu_grad(g.reshape(-1), x.reshape(-1), out.reshape(-1))
    return out


@njit(cache=True, nogil=True)
def _relu_grad_into(g, x):
    # its own loop: given g as both input and output, _relu_grad's vectorised loop fails
    # LLVM's runtime overlap check and runs scalar (2.6x slower)
    one, zero = g.dtype.type(1), g.dtype.type(0)
    for i in range(g.size):
        g[i] = g[i] * (one if x[i] > 0 else zero)


def relu_grad_into(g, x):
    """``relu_grad(g, x)`` written into ``g`` (the same bits); returns ``g``."""
    _relu_grad_into(g.reshape(-1), x.reshape(-1))
    return g


@njit(cache=True, nogil=True)
def _add_rows(x, b, out):
    n, c = x.shape
    for r in range(n):
        for j in range(c):
            out[r, j] = x[r, j] + b[j]


def rows(a, c):
    """``a`` as rows of its last axis (of size ``c``): itself when 2-D (a dense layer's, no
    view to make), else a reshaped view."""
    return a if a.ndim == 2 else a.reshape(-1, c)


def bias_add_last(x, b):
    """x + b with the 1-D ``b`` added along x's last axis; as ``fits`` requires."""
    out = np.empty_like(x)
    if x.size:
        c = b.shape[0]
        _add_rows(rows(x, c), b, rows(out, c))
    return out


@njit(cache=True, nogil=True)
def _column_sums(g, out):
    n, c = g.shape
    for j in range(c):
        out[j] = g[0, j]
    for r in range(1, n):
        for j in range(c):
            out[j] += g[r, j]


def column_sums(g, c):
    """The sum of ``g`` over every axis but its last (of size ``c`` >= 2): a bias's gradient,
    rows added in order, as numpy's ``sum`` over the leading axes adds them (the same bits).
    numpy's strided reduction costs 4x this loop when ``c`` is a conv layer's 64 channels."""
    out = np.empty(c, g.dtype)
    g2 = rows(g, c)
    if g2.shape[0] == 0:
        out[:] = 0
    else:
        _column_sums(g2, out)
    return out


@njit(cache=True, nogil=True)
def _bias_relu_rows_to(x, b, out):
    n, c = x.shape
    for r in range(n):
        for j in range(c):
            v = x[r, j] + b[j]
            out[r, j] = v if not v <= 0 else 0


def bias_relu(x, b):
    """``relu(bias_add_last(x, b))`` in one pass into a new array, with no intermediate sum
    written out: the bits of the two kernels; as ``fits`` requires."""
    out = np.empty_like(x)
    if x.size:
        c = b.shape[0]
        _bias_relu_rows_to(rows(x, c), b, rows(out, c))
    return out


# ---- a dense layer's epilogue (ops/dense.py): bias and relu in one pass over the GEMM output
@njit(cache=True, nogil=True)
def _bias_relu_rows(z, b, relu):
    n, c = z.shape
    for r in range(n):
        if relu:
            for j in range(c):
                v = z[r, j] + b[j]
                z[r, j] = v if not v <= 0 else 0
        else:
            for j in range(c):
                z[r, j] = z[r, j] + b[j]


def bias_relu_into(z, b, relu):
    """``relu(z + b)`` (the relu only with ``relu``) written into the 2-D ``z``, ``b`` added
    along its last axis: one pass, the bits of ``bias_add_last`` then ``relu``; returns ``z``."""
    if z.size:
        _bias_relu_rows(z, b, relu)
    return z


@njit(cache=True, nogil=True)
def _relu_grad_column_sums(g, y, out, sums):
    n, c = g.shape
    one, zero = g.dtype.type(1), g.dtype.type(0)
    for j in range(c):
        v = g[0, j] * (one if y[0, j] > 0 else zero)
        out[0, j] = v
        sums[j] = v
    for r in range(1, n):
        for j in range(c):
            v = g[r, j] * (one if y[r, j] > 0 else zero)
            out[r, j] = v
            sums[j] += v


def relu_grad_column_sums(g, y):
    """``(relu_grad(g, y), column_sums(relu_grad(g, y)))`` for 2-D ``g``, ``y`` of one shape
    with at least one row, in one pass: the same bits as the two kernels."""
    out = np.empty_like(g)
    sums = np.empty(g.shape[1], g.dtype)
    _relu_grad_column_sums(g, y, out, sums)
    return out, sums


@njit(cache=True, nogil=True)
def _relu_grad_column_sums_into(g, y, sums):
    # its own loop, as _relu_grad_into: g is both input and output
    n, c = g.shape
    one, zero = g.dtype.type(1), g.dtype.type(0)
    for j in range(c):
        v = g[0, j] * (one if y[0, j] > 0 else zero)
        g[0, j] = v
        sums[j] = v
    for r in range(1, n):
        for j in range(c):
            v = g[r, j] * (one if y[r, j] > 0 else zero)
            g[r, j] = v
            sums[j] += v


def relu_grad_column_sums_into(g, y):
    """``relu_grad_column_sums(g, y)`` with the gradient written into ``g``: ``(g, sums)``,
    the same bits."""
    sums = np.empty(g.shape[1], g.dtype)
    _relu_grad_column_sums_into(g, y, sums)
    return g, sums
