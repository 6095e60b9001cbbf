"""Fused softmax cross-entropy on the GPU (CuPy); twin of softmax_cpu."""

from __future__ import annotations

import cupy


def softmax_xent_fwd(logits, labels, loss, dlogits):
    """loss = -sum(labels * log_softmax(logits), -1); dlogits = softmax - labels."""
    m = logits.max(axis=1, keepdims=True)
    e = cupy.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    lse = m + cupy.log(s)
    cupy.sum(labels * (lse - logits), axis=1, out=loss)
    cupy.subtract(e / s, labels, out=dlogits)
    return loss, dlogits


def sparse_softmax_xent_fwd(logits, labels, loss, dlogits):
    """As softmax_xent_fwd with class ids; ids outside [0, C) give NaN loss rows, as TF's GPU
    kernel (no device sync to check them)."""
    n, c = logits.shape
    m = logits.max(axis=1, keepdims=True)
    e = cupy.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    valid = (labels >= 0) & (labels < c)
    safe = cupy.where(valid, labels, 0)
    rows = cupy.arange(n)
    picked = logits[rows, safe]
    loss[...] = cupy.where(valid, (m + cupy.log(s))[:, 0] - picked, cupy.nan)
    cupy.divide(e, s, out=dlogits)
    dlogits[rows, safe] -= valid.astype(dlogits.dtype)
    cupy.copyto(dlogits, cupy.nan, where=~valid[:, None])  # a mask store would sync
    return loss, dlogits
