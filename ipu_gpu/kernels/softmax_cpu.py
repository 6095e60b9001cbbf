"""Softmax cross-entropy on the CPU: loss and logits gradient (softmax - labels) per row.

numpy's vectorised exp (AVX-512 where the CPU has it) beats a Numba row loop here: this
llvmlite has no SVML, so Numba calls exp one element at a time (bench/README.md,
xent_kernel groups: the Numba kernel was 1.7-2.7x slower). A prange kernel also left
OpenMP threads spinning that stalled the BLAS matmuls around it in a training step. So
the kernel is numpy, written in place into the preallocated outputs: one temporary of
one row-vector, none of the full size. The exception is a small sparse problem (a
classifier head: 256 rows of 10 classes), where numpy's per-call overhead is most of the
time: there a serial Numba pass does the whole op (SMALL_ELEMENTS).
"""

from __future__ import annotations

import numpy as np
from numba import njit


def _softmax_into(logits, dlogits):
    """dlogits = softmax(logits) row-wise; returns (row max, row sum of exp) as [N, 1]."""
    m = logits.max(axis=1, keepdims=True)
    np.subtract(logits, m, out=dlogits)
    np.exp(dlogits, out=dlogits)
    s = dlogits.sum(axis=1, keepdims=True)
    np.divide(dlogits, s, out=dlogits)
    return m, s


def softmax_xent_fwd(logits, labels, loss, dlogits):
    """loss[i] = -sum_j labels[i,j] * log_softmax(logits[i])_j and dlogits = softmax - labels,
    for 2-D ``logits``/``labels`` [N, C] (C >= 1) of one float dtype; ``loss`` [N] and
    ``dlogits`` [N, C] preallocated, fully overwritten. Deterministic."""
    m, s = _softmax_into(logits, dlogits)
    lse = m + np.log(s)
    np.sum(labels * (lse - logits), axis=1, out=loss)
    np.subtract(dlogits, labels, out=dlogits)
    return loss, dlogits


# Up to this many logits (and classes per row) one Numba pass does the whole op: at a
# classifier head's size (256 x 10) the dozen numpy calls below cost 40-50 us of call
# overhead for 10 us of arithmetic. Beyond, numpy's vectorised exp wins (Numba's is scalar).
SMALL_ELEMENTS = 1 << 16
SMALL_CLASSES = 128


@njit(cache=True, nogil=True)
def _sparse_xent_rows(logits, labels, loss, dlogits):
    """The whole op row by row; returns the first bad label's position (-1: none), having
    written nothing it should not (rows after a bad one are left)."""
    n, c = logits.shape
    for i in range(n):
        lab = labels[i]
        if lab < 0 or lab >= c:
            return i
        m = logits[i, 0]
        for j in range(1, c):
            v = logits[i, j]
            if v > m or v != v:  # NaN wins, as numpy's max
                m = v
        s = logits.dtype.type(0)
        for j in range(c):
            e = np.exp(logits[i, j] - m)
            dlogits[i, j] = e
            s += e
        loss[i] = (m + np.log(s)) - logits[i, lab]
        for j in range(c):
            dlogits[i, j] /= s
        dlogits[i, lab] -= 1
    return -1


def sparse_softmax_xent_fwd(logits, labels, loss, dlogits):
    """As softmax_xent_fwd with integer class ids ``labels`` [N]; raises ValueError naming
    the first id outside [0, C)."""
    n, c = logits.shape
    if logits.size <= SMALL_ELEMENTS and c <= SMALL_CLASSES and logits.dtype.kind == "f":
        bad = _sparse_xent_rows(logits, labels, loss, dlogits)
        if bad >= 0:
            _raise_bad_label(labels, c, bad)
        return loss, dlogits
    bad = np.flatnonzero((labels < 0) | (labels >= c))
    if bad.size:
        _raise_bad_label(labels, c, int(bad[0]))
    m, s = _softmax_into(logits, dlogits)
    rows = np.arange(n)
    np.subtract((m + np.log(s))[:, 0], logits[rows, labels], out=loss)
    dlogits[rows, labels] -= 1
    return loss, dlogits


def _raise_bad_label(labels, c, i):
    raise ValueError(f"sparse_softmax_cross_entropy_with_logits: labels must be in "
                     f"[0, {c}), got {labels[i]} at position {i}")
