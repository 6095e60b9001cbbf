"""Fused softmax cross-entropy on the CPU (Numba): one pass per row gives the loss and the
logits gradient (softmax - labels), parallel over rows. float32 or float64 rows; float16
callers convert to float32 first (Numba has no float16 arithmetic)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


def softmax_xent_fwd(logits, labels, loss, dlogits):
    """loss[i] = -sum_j labels[i,j] * log_softmax(logits[i])_j and dlogits = softmax - labels,
    for C-contiguous 2-D ``logits``/``labels`` [N, C] of one float dtype; ``loss`` [N] and
    ``dlogits`` [N, C] preallocated, fully overwritten. Deterministic."""
    _softmax_xent_rows(logits, labels, loss, dlogits, logits.dtype.type(0))
    return loss, dlogits


def sparse_softmax_xent_fwd(logits, labels, loss, dlogits):
    """As softmax_xent_fwd with integer class ids ``labels`` [N]; raises ValueError naming
    the first id outside [0, C)."""
    bad = _sparse_softmax_xent_rows(logits, labels, loss, dlogits, logits.dtype.type(0))
    if bad >= 0:
        raise ValueError(f"sparse_softmax_cross_entropy_with_logits: labels must be in "
                         f"[0, {logits.shape[1]}), got {labels[bad]} at position {bad}")
    return loss, dlogits


@njit(cache=True, nogil=True, parallel=True)
def _softmax_xent_rows(logits, labels, loss, dlogits, zero):
    n, c = logits.shape
    for i in prange(n):
        x = logits[i]
        z = labels[i]
        d = dlogits[i]
        m = x[0]
        for j in range(1, c):
            if x[j] > m:
                m = x[j]
        s = zero
        for j in range(c):
            e = np.exp(x[j] - m)
            d[j] = e
            s += e
        lse = m + np.log(s)
        acc = zero
        inv = (zero + 1) / s
        for j in range(c):
            acc += z[j] * (lse - x[j])
            d[j] = d[j] * inv - z[j]
        loss[i] = acc


@njit(cache=True, nogil=True, parallel=True)
def _sparse_softmax_xent_rows(logits, labels, loss, dlogits, zero):
    n, c = logits.shape
    for i in range(n):
        if labels[i] < 0 or labels[i] >= c:
            return i
    for i in prange(n):
        x = logits[i]
        d = dlogits[i]
        m = x[0]
        for j in range(1, c):
            if x[j] > m:
                m = x[j]
        s = zero
        for j in range(c):
            e = np.exp(x[j] - m)
            d[j] = e
            s += e
        inv = (zero + 1) / s
        for j in range(c):
            d[j] *= inv
        t = labels[i]
        loss[i] = m + np.log(s) - x[t]
        d[t] -= 1
    return -1
