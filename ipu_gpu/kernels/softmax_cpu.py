"""Softmax cross-entropy on the CPU: loss and logits gradient (softmax - labels) per row.

numpy's vectorised exp (AVX-512 where the CPU has it) beats a Numba row loop here: this
llvmlite has no SVML, so Numba calls exp one element at a time (bench/README.md,
xent_kernel groups: the Numba kernel was 1.7-2.7x slower). A prange kernel also left
OpenMP threads spinning that stalled the BLAS matmuls around it in a training step. So
the kernel is numpy, written in place into the preallocated outputs: one temporary of
one row-vector, none of the full size.
"""

from __future__ import annotations

import numpy as np


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


def sparse_softmax_xent_fwd(logits, labels, loss, dlogits):
    """As softmax_xent_fwd with integer class ids ``labels`` [N]; raises ValueError naming
    the first id outside [0, C)."""
    n, c = logits.shape
    bad = np.flatnonzero((labels < 0) | (labels >= c))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: labels must be in "
                         f"[0, {c}), got {labels[i]} at position {i}")
    m, s = _softmax_into(logits, dlogits)
    rows = np.arange(n)
    np.subtract((m + np.log(s))[:, 0], logits[rows, labels], out=loss)
    dlogits[rows, labels] -= 1
    return loss, dlogits
