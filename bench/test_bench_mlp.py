"""One training step of a 3-layer MLP: forward (dense-relu-dense-relu-dense), mean sparse
softmax cross-entropy, gradients of every weight and bias, SGD update.

* ipu_gpu: tf.matmul + tf.nn.bias_add + tf.nn.relu under GradientTape,
  ``v.assign_sub(lr * g)`` (as examples/train_mlp.py).
* tensorflow: the same program on real TF, eager (no tf.function).
* torch: eager F.linear + relu + F.cross_entropy, ``backward()``, ``torch.optim.SGD`` step
  (the weights are the same numbers, stored transposed as torch keeps them).
* numpy / cupy: a hand-written forward, backward and in-place update.

Every implementation starts from the same weights and batch. Before timing, one step with
lr = 1 is checked against a float64 numpy step (the loss and the updated weights).
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import as_impl, check_close, impl_params, paired_with, require, rng, to_numpy

import ipu_gpu

SIZES = {  # name -> (batch, layer widths)
    "b256-784-512-512-10": (256, (784, 512, 512, 10)),  # issue 15's row
    "b128-784-512-512-10": (128, (784, 512, 512, 10)),
    "b32-256-256-256-10": (32, (256, 256, 256, 10)),
}
LR = 0.01


def _problem(batch, widths):
    g = rng(3)
    x = g.standard_normal((batch, widths[0]), dtype=np.float32)
    y = g.integers(0, widths[-1], batch).astype(np.int32)
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        params.append((g.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in))
                      .astype(np.float32))
        params.append((0.1 * g.standard_normal(fan_out)).astype(np.float32))
    return x, y, params


def array_step(xp, params, x, y, lr):
    """The hand-written step on numpy/cupy arrays; updates ``params`` in place, returns loss."""
    n = x.shape[0]
    rows = xp.arange(n)
    acts = [x]  # inputs of each dense layer
    zs = []
    h = x
    for i in range(0, len(params), 2):
        z = h @ params[i]
        z += params[i + 1]
        zs.append(z)
        if i + 2 < len(params):
            h = xp.maximum(z, 0)
            acts.append(h)
    m = z.max(axis=1, keepdims=True)
    e = xp.exp(z - m)
    s = e.sum(axis=1, keepdims=True)
    loss = (xp.log(s[:, 0]) + m[:, 0] - z[rows, y]).mean()
    d = e / s
    d[rows, y] -= 1
    d *= d.dtype.type(1.0 / n)
    grads = [None] * len(params)
    for layer in reversed(range(len(params) // 2)):
        w = params[2 * layer]
        grads[2 * layer] = acts[layer].T @ d
        grads[2 * layer + 1] = d.sum(axis=0)
        if layer:
            d = d @ w.T
            d *= zs[layer - 1] > 0
    for p, g in zip(params, grads):
        g *= p.dtype.type(lr)
        p -= g
    return loss


def _tape_step(tf, xt, yt, params, lr):
    """One SGD step written against the TF API: the same code for ipu_gpu and tensorflow."""

    def step():
        with tf.GradientTape() as tape:
            h = xt
            for i in range(0, len(params), 2):
                h = tf.nn.bias_add(tf.matmul(h, params[i]), params[i + 1])
                if i + 2 < len(params):
                    h = tf.nn.relu(h)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yt, logits=h))
        grads = tape.gradient(loss, params)
        for v, g in zip(params, grads):
            v.assign_sub(lr * g)
        return loss
    return step


def _make_step(impl, p, x, y, init, lr):
    """(step, params_now): step() runs one training step and returns the loss; params_now()
    gives the current weights as numpy arrays in the [in, out] layout."""
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        tf = ipu_gpu
        xt, yt = as_impl(impl, x), as_impl(impl, y)
        params = [tf.Variable(as_impl(impl, a)) for a in init]

        step = _tape_step(tf, xt, yt, params, lr)
        return step, lambda: [to_numpy(v) for v in params]
    if impl == "tensorflow":
        tf = p.tf
        xt, yt = tf.constant(x), tf.constant(y)
        params = [tf.Variable(a) for a in init]

        step = _tape_step(tf, xt, yt, params, lr)
        return step, lambda: [v.numpy() for v in params]
    if impl in ("torch", "torch_cuda"):
        torch = p.torch
        F = torch.nn.functional
        dev = "cuda" if impl == "torch_cuda" else "cpu"
        xt = torch.from_numpy(x).to(dev)
        yt = torch.from_numpy(y).long().to(dev)  # torch wants int64 class ids; untimed
        params = []
        for i, a in enumerate(init):  # nn.Linear keeps weights as [out, in]
            t = torch.from_numpy(np.ascontiguousarray(a.T) if i % 2 == 0 else a.copy())
            params.append(t.to(dev).requires_grad_(True))
        opt = torch.optim.SGD(params, lr=lr)

        def step():
            opt.zero_grad(set_to_none=True)
            h = xt
            for i in range(0, len(params), 2):
                h = F.linear(h, params[i], params[i + 1])
                if i + 2 < len(params):
                    h = F.relu(h)
            loss = F.cross_entropy(h, yt)
            loss.backward()
            opt.step()
            return loss
        return step, lambda: [to_numpy(t).T.copy() if i % 2 == 0 else to_numpy(t)
                              for i, t in enumerate(params)]
    if impl in ("numpy", "cupy"):
        xp = np if impl == "numpy" else p.cupy
        xt, yt = as_impl(impl, x), as_impl(impl, y)
        params = [as_impl(impl, a.copy()) for a in init]
        return (lambda: array_step(xp, params, xt, yt, lr)), lambda: [to_numpy(a)
                                                                      for a in params]
    raise ValueError(impl)


@pytest.mark.parametrize("impl", impl_params())
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"mlp_train_step-{s}")) for s in SIZES])
def test_mlp_train_step(run, ipu_backend, size, impl):
    p = require(impl)
    batch, widths = SIZES[size]
    x, y, init = _problem(batch, widths)

    # correctness: one step with lr = 1 (so the update is the gradient) against float64 numpy
    ref = [a.astype(np.float64) for a in init]
    want_loss = array_step(np, ref, x.astype(np.float64), y, 1.0)
    step, params_now = _make_step(impl, p, x, y, init, 1.0)
    check_close(f"mlp loss {size} {impl}", step(), np.float32(want_loss), rtol=1e-5, atol=1e-6)
    for j, (got, want) in enumerate(zip(params_now(), ref)):
        check_close(f"mlp param {j} after one step, {size} {impl}", got, want.astype(np.float32),
                    rtol=1e-4, atol=1e-5)

    step, _ = _make_step(impl, p, x, y, init, LR)
    paired = paired_with(impl, lambda peer: _make_step(peer, p, x, y, init, LR)[0])
    run(step, impl=impl, paired=paired,
        sizes={"batch": batch, "widths": list(widths), "dtype": "float32",
               "activation": "relu", "loss": "mean sparse softmax xent",
               "optimizer": f"SGD lr={LR}"})
