"""Sparse softmax cross-entropy, forward + backward: the mean loss over the batch and its
gradient with respect to the logits.

* ipu_gpu: GradientTape around nn.sparse_softmax_cross_entropy_with_logits + reduce_mean.
* numpy / cupy: a hand-written forward and backward (max-shift, exp, sum, log; softmax - 1).
* torch: F.cross_entropy + backward. tensorflow: the same ops as ipu_gpu under tf's tape.

A second group per size, ``xent_kernel-*``, times the CPU kernel the op runs
(``ipu_gpu/kernels/softmax_cpu.py``: loss and dlogits written in place into preallocated
outputs) against the same computation as plain numpy array expressions with temporaries.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import as_impl, check_close, impl_params, require, rng

import ipu_gpu

SIZES = {"256x1000": (256, 1000), "4096x100": (4096, 100)}


def _inputs(n, c):
    g = rng(2)
    logits = (3.0 * g.standard_normal((n, c))).astype(np.float32)
    labels = g.integers(0, c, n).astype(np.int32)
    return logits, labels


def _reference(logits, labels):
    """float64 mean loss and d(mean loss)/d logits, cast to float32."""
    x = logits.astype(np.float64)
    n = x.shape[0]
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    loss = np.mean(np.log(s[:, 0]) + m[:, 0] - x[np.arange(n), labels])
    d = e / s
    d[np.arange(n), labels] -= 1
    return np.float32(loss), (d / n).astype(np.float32)


def _array_fwd_bwd(xp, x, labels):
    """The hand-written numpy (or cupy) forward and backward, in x's dtype."""
    n = x.shape[0]
    rows = xp.arange(n)
    m = x.max(axis=1, keepdims=True)
    e = xp.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    loss = (xp.log(s[:, 0]) + m[:, 0] - x[rows, labels]).mean()
    d = e / s
    d[rows, labels] -= 1
    d *= x.dtype.type(1.0 / n)
    return loss, d


def _fwd_bwd_fn(impl, p, logits, labels):
    if impl in ("ipu_gpu", "ipu_gpu_cupy", "tensorflow"):
        tf = p.tf if impl == "tensorflow" else ipu_gpu

        def step():
            with tf.GradientTape() as tape:
                tape.watch(logits)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=labels, logits=logits))
            return loss, tape.gradient(loss, logits)
        return step
    if impl in ("torch", "torch_cuda"):
        torch = p.torch
        x = logits.clone().requires_grad_(True)
        y = labels.long()  # torch wants int64 class ids; converted once, untimed
        F = torch.nn.functional

        def step():
            x.grad = None
            loss = F.cross_entropy(x, y)
            loss.backward()
            return loss, x.grad
        return step
    if impl == "numpy":
        return lambda: _array_fwd_bwd(np, logits, labels)
    if impl == "cupy":
        return lambda: _array_fwd_bwd(p.cupy, logits, labels)
    raise ValueError(impl)


@pytest.mark.parametrize("impl", impl_params())
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"sparse_softmax_xent_fwd_bwd-{s}")) for s in SIZES])
def test_sparse_softmax_xent_fwd_bwd(run, ipu_backend, size, impl):
    p = require(impl)
    n, c = SIZES[size]
    logits, labels = _inputs(n, c)
    want_loss, want_grad = _reference(logits, labels)
    fn = _fwd_bwd_fn(impl, p, as_impl(impl, logits), as_impl(impl, labels))
    loss, grad = fn()
    check_close(f"xent loss {size} {impl}", loss, want_loss, rtol=1e-5, atol=1e-6)
    check_close(f"xent grad {size} {impl}", grad, want_grad, rtol=1e-4, atol=1e-8)
    run(fn, impl=impl, sizes={"batch": n, "classes": c, "dtype": "float32",
                              "labels": "int32 (int64 for torch)", "reduction": "mean"})


# ---- the CPU kernel against plain numpy array expressions -----------------------------------
def _kernel_fn(impl, logits, labels):
    """Per-row loss and dlogits = softmax - onehot (what the op's forward computes),
    output allocation included on both sides."""
    if impl == "kernel":
        from ipu_gpu.kernels import softmax_cpu

        def fwd():
            loss = np.empty(logits.shape[0], logits.dtype)
            dlogits = np.empty(logits.shape, logits.dtype)
            return softmax_cpu.sparse_softmax_xent_fwd(logits, labels, loss, dlogits)
        return fwd
    if impl == "numpy":
        rows = np.arange(logits.shape[0])

        def fwd():
            if labels.min() < 0 or labels.max() >= logits.shape[1]:  # the kernel checks too
                raise ValueError("labels out of range")
            m = logits.max(axis=1, keepdims=True)
            e = np.exp(logits - m)
            s = e.sum(axis=1, keepdims=True)
            loss = np.log(s[:, 0]) + m[:, 0] - logits[rows, labels]
            d = e / s
            d[rows, labels] -= 1
            return loss, d
        return fwd
    raise ValueError(impl)


@pytest.mark.parametrize("impl", ["kernel", "numpy"])
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"xent_kernel-{s}")) for s in SIZES])
def test_sparse_softmax_xent_kernel(run, size, impl):
    n, c = SIZES[size]
    logits, labels = _inputs(n, c)
    x = logits.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    want_loss = (np.log(s[:, 0]) + m[:, 0] - x[np.arange(n), labels]).astype(np.float32)
    want_d = e / s
    want_d[np.arange(n), labels] -= 1
    fn = _kernel_fn(impl, logits, labels)
    loss, d = fn()
    check_close(f"kernel loss {size} {impl}", loss, want_loss, rtol=1e-5, atol=1e-5)
    check_close(f"kernel dlogits {size} {impl}", d, want_d.astype(np.float32), rtol=1e-4,
                atol=1e-7)
    run(fn, impl=impl, sizes={"batch": n, "classes": c, "dtype": "float32",
                              "what": "per-row loss + dlogits, outputs allocated"})
