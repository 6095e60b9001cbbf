"""The eager MLP training step (bench/test_bench_mlp.py's ``_tape_step``: GradientTape,
matmul + bias_add + relu, mean sparse softmax cross-entropy, ``v.assign_sub(lr * g)``) gives
the bits of the same arithmetic written out in numpy, op by op: speed work on the dispatch,
the tape and the kernels (issue 15) must not change a step's numbers.

The reference's GEMMs are ipu_gpu's CPU GEMM (``kernels/matmul_cpu.matmul``: numpy's BLAS
in fixed tiles on one thread each, whose bits do not depend on the thread count; tested
against a tile-wise numpy reference in tests/test_matmul_determinism.py), TF's Relu and
ReluGrad (``x <= 0 -> 0``; ``g * (y > 0)``), rows summed in order for a
bias's gradient, ``w - g * lr`` in the variable's dtype, and ipu_gpu's cross-entropy kernel
for the softmax (its exp is libm's, not numpy's; tested against float64 in
tests/test_kernels_cpu.py)."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.kernels import matmul_cpu, softmax_cpu


def _problem(batch, widths, seed):
    g = np.random.default_rng(seed)
    x = g.standard_normal((batch, widths[0]), dtype=np.float32)
    y = g.integers(0, widths[-1], batch).astype(np.int32)
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        params.append((g.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in))
                      .astype(np.float32))
        params.append((0.1 * g.standard_normal(fan_out)).astype(np.float32))
    return x, y, params


def _tape_step(xt, yt, params, lr):
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


def _numpy_step(x, y, params, lr):
    """The step's arithmetic in numpy; updates ``params`` (a list of arrays) in place."""
    n = x.shape[0]
    acts, outs = [x], []
    h = x
    for i in range(0, len(params), 2):
        z = matmul_cpu.matmul(h, params[i]) + params[i + 1]
        if i + 2 < len(params):
            z = np.where(z <= 0, np.float32(0), z)  # TF's Relu: NaN stays, -0 gives 0
            acts.append(z)
        outs.append(z)
        h = z
    loss_rows = np.empty(n, np.float32)
    dlogits = np.empty(h.shape, np.float32)
    softmax_cpu.sparse_softmax_xent_fwd(h, y, loss_rows, dlogits)
    loss = np.float32(np.sum(loss_rows, dtype=np.float32) / np.float32(n))
    d = dlogits * (np.ones((1, 1), np.float32) / n)
    grads = [None] * len(params)
    for layer in reversed(range(len(params) // 2)):
        if layer + 1 < len(params) // 2:  # through the relu after this layer
            d = d * (outs[layer] > 0).astype(np.float32)
        grads[2 * layer + 1] = np.add.reduce(d, axis=0)  # rows in order
        grads[2 * layer] = matmul_cpu.matmul(acts[layer].swapaxes(0, 1), d)
        if layer:
            d = matmul_cpu.matmul(d, params[2 * layer].swapaxes(0, 1))
    lr32 = np.float32(lr)
    for j, g in enumerate(grads):
        params[j] = params[j] - g * lr32
    return loss


@pytest.mark.parametrize("batch,widths", [(256, (784, 512, 512, 10)), (7, (5, 3, 4, 2))])
def test_mlp_step_gives_the_numpy_steps_bits(batch, widths):
    x, y, init = _problem(batch, widths, seed=3)
    params = [tf.Variable(a) for a in init]
    ref = [a.copy() for a in init]
    xt, yt = tf.constant(x), tf.constant(y)
    for step in range(3):
        got = _tape_step(xt, yt, params, 0.01)
        want = _numpy_step(x, y, ref, 0.01)
        assert got.numpy().tobytes() == want.tobytes(), (step, got.numpy(), want)
        for j, (v, w) in enumerate(zip(params, ref)):
            np.testing.assert_array_equal(v.numpy(), w, err_msg=f"step {step}, param {j}")
        assert all(np.isfinite(w).all() for w in ref)
