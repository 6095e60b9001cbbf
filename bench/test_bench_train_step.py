"""An eager training step against its own GEMMs and convolutions (issue 15): how much the
tape, the elementwise ops, the reductions, allocation and Python dispatch add on top of the
arithmetic that cannot be avoided.

Groups (``step_vs_kernels-...``):
* ipu_gpu: one SGD step written against the TF API (GradientTape, ``v.assign_sub(lr * g)``).
* kernels: the same step's GEMMs (``kernels/matmul_cpu.matmul``: numpy's BLAS in fixed
  tiles on Numba's threads, the routine ipu_gpu's matmul and dense layers call) and
  convolutions (``kernels/conv_cpu`` forward and backward, as ipu_gpu's conv2d calls them),
  back to back on same-shaped arrays, outputs allocated per call as the step does: nothing
  else. ipu_gpu's row interleaves this one, so the ratio is the step's cost over the limit.

Models: the MLP of bench/test_bench_mlp.py at batch 256 (784-512-512-10), and a small CNN at
batch 32 on a 16x16x32 feature map: conv 3x3 32->64 SAME + bias + relu, conv 3x3 stride 2
64->64 SAME + bias + relu, flatten, dense 4096->10, mean sparse softmax cross-entropy.

Also ``dispatch-...``: the cost of one op call on a 1-element tensor (relu eager, and a
dense layer's matmul + bias_add + relu recorded on a tape and differentiated), the part of
every op that does not scale with the data; bench/README.md states it in µs per op.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import require, rng
from test_bench_mlp import _problem, _tape_step

import ipu_gpu as tf
from ipu_gpu.kernels import conv_cpu, matmul_cpu
from ipu_gpu.ops.conv import _geometry

LR = 0.01


# ---- the MLP --------------------------------------------------------------------------------
def _mlp_problem(batch=256, widths=(784, 512, 512, 10)):
    return _problem(batch, widths)  # test_bench_mlp's inputs and weights


def _mlp_step(x, y, init):
    """The SGD step of bench/test_bench_mlp.py (the same code users write)."""
    return _tape_step(tf, tf.constant(x), tf.constant(y), [tf.Variable(a) for a in init], LR)


def _mlp_gemms(x, init):
    """The step's 8 GEMMs, through the GEMM ipu_gpu's matmul calls (``matmul_cpu.matmul``):
    3 forward; per layer the weight gradient and, but for the first layer (the data batch is
    not differentiated), the input gradient."""
    w = init[::2]
    acts = [x]
    for wi in w[:-1]:
        acts.append(np.maximum(acts[-1] @ wi, 0))
    d_out = np.ones((x.shape[0], w[-1].shape[1]), np.float32) / x.shape[0]
    mm = matmul_cpu.matmul

    def gemms():
        h = x
        for wi in w:
            h = mm(h, wi)
        d = d_out
        for layer in reversed(range(len(w))):
            _ = mm(acts[layer].T, d)
            if layer:
                d = mm(d, w[layer].T)
    return gemms


# ---- the CNN --------------------------------------------------------------------------------
CNN = {"batch": 32, "hw": 16, "c_in": 32, "c1": 64, "c2": 64, "classes": 10}
_S1, _S2, _DIL = (1, 1), (2, 2), (1, 1)


def _cnn_problem():
    g = rng(12)
    n, hw, c0, c1, c2, k = (CNN[key] for key in ("batch", "hw", "c_in", "c1", "c2", "classes"))
    x = g.standard_normal((n, hw, hw, c0), dtype=np.float32)
    y = g.integers(0, k, n).astype(np.int32)
    flat = (hw // 2) * (hw // 2) * c2
    init = [
        (g.standard_normal((3, 3, c0, c1)) * np.sqrt(2.0 / (9 * c0))).astype(np.float32),
        (0.1 * g.standard_normal(c1)).astype(np.float32),
        (g.standard_normal((3, 3, c1, c2)) * np.sqrt(2.0 / (9 * c1))).astype(np.float32),
        (0.1 * g.standard_normal(c2)).astype(np.float32),
        (g.standard_normal((flat, k)) * np.sqrt(1.0 / flat)).astype(np.float32),
        (0.1 * g.standard_normal(k)).astype(np.float32),
    ]
    return x, y, init


def _cnn_step(x, y, init):
    xt, yt = tf.constant(x), tf.constant(y)
    w1, b1, w2, b2, wd, bd = params = [tf.Variable(a) for a in init]

    def step():
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(xt, w1, 1, "SAME"), b1))
            h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(h, w2, 2, "SAME"), b2))
            h = tf.reshape(h, (h.shape[0], -1))
            logits = tf.nn.bias_add(tf.matmul(h, wd), bd)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yt, logits=logits))
        grads = tape.gradient(loss, params)
        for v, g in zip(params, grads):
            v.assign_sub(LR * g)
        return loss
    return step


def _cnn_kernels(x, init):
    """The step's convolutions (forward, and backward: both gradients of conv 2, the filter's
    of conv 1) and its dense layer's 3 GEMMs, through the kernels ipu_gpu's ops call
    (``conv_cpu``, ``matmul_cpu.matmul``)."""
    w1, _, w2, _, wd, _ = init
    n, hw = x.shape[0], x.shape[1]
    pads1, (h1, _) = _geometry("conv2d", (hw, hw), (3, 3), _S1, _DIL, "SAME")
    pads2, (h2, _) = _geometry("conv2d", (h1, h1), (3, 3), _S2, _DIL, "SAME")
    a1 = np.empty((n, h1, h1, w1.shape[3]), np.float32)
    conv_cpu.conv2d_fwd(x, w1, _S1, _DIL, pads1, 1, a1)
    a2 = np.empty((n, h2, h2, w2.shape[3]), np.float32)
    conv_cpu.conv2d_fwd(a1, w2, _S2, _DIL, pads2, 1, a2)
    flat = a2.reshape(n, -1)
    d_out = np.ones((n, wd.shape[1]), np.float32) / n

    def kernels():
        keep1, keep2 = {}, {}
        o1 = np.empty(a1.shape, np.float32)
        conv_cpu.conv2d_fwd(x, w1, _S1, _DIL, pads1, 1, o1, keep1)
        o2 = np.empty(a2.shape, np.float32)
        conv_cpu.conv2d_fwd(a1, w2, _S2, _DIL, pads2, 1, o2, keep2)
        mm = matmul_cpu.matmul
        _ = mm(flat, wd)
        _ = mm(flat.T, d_out)
        d2 = mm(d_out, wd.T).reshape(a2.shape)
        dx2, dw2 = np.empty(a1.shape, np.float32), np.empty(w2.shape, np.float32)
        conv_cpu.conv2d_bwd(a1, w2, d2, _S2, _DIL, pads2, 1, dx2, dw2, keep2)
        dw1 = np.empty(w1.shape, np.float32)
        conv_cpu.conv2d_bwd(x, w1, dx2, _S1, _DIL, pads1, 1, None, dw1, keep1)
    return kernels


MODELS = {
    "mlp-b256-784-512-512-10": (_mlp_problem, _mlp_step, lambda x, init: _mlp_gemms(x, init)),
    "cnn-b32-16x16x32-c64-c64s2-d10": (_cnn_problem, _cnn_step, _cnn_kernels),
}


@pytest.mark.parametrize("impl", ["ipu_gpu", "kernels"])
@pytest.mark.parametrize("model", [pytest.param(m, marks=pytest.mark.benchmark(
    group=f"step_vs_kernels-{m}")) for m in MODELS])
def test_step_vs_kernels(run, ipu_backend, model, impl):
    problem, make_step, make_kernels = MODELS[model]
    x, y, init = problem()
    kernels = make_kernels(x, init)
    if impl == "kernels":
        run(kernels, impl=impl, sizes={"model": model})
        return
    step = make_step(x, y, init)
    loss = float(step())
    assert np.isfinite(loss), loss
    run(step, impl=impl, paired=("kernels", kernels),
        sizes={"model": model, "optimizer": f"SGD lr={LR}", "dtype": "float32"})


# ---- per-op dispatch ------------------------------------------------------------------------
def _dispatch_cases():
    one = tf.constant(np.ones((1, 1), np.float32))
    w = tf.Variable(np.ones((1, 1), np.float32))
    b = tf.Variable(np.ones(1, np.float32))

    def eager_relu():
        return tf.nn.relu(one)

    def dense_taped():  # 3 ops recorded, then differentiated: 3 forward + 3 backward rules
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.nn.bias_add(tf.matmul(one, w), b))
        return tape.gradient(h, [w, b])

    return {"relu-eager": (eager_relu, 1), "dense-taped-fwd-bwd": (dense_taped, 3)}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.benchmark(
    group=f"dispatch-{c}")) for c in ("relu-eager", "dense-taped-fwd-bwd")])
@pytest.mark.parametrize("impl", ["ipu_gpu", "numpy", "torch"])
def test_dispatch(run, ipu_backend, case, impl):
    p = require(impl)
    fn, ops = _dispatch_cases()[case]
    if impl == "numpy":
        a = np.ones((1, 1), np.float32)
        fn = (lambda: np.maximum(a, 0)) if case == "relu-eager" else (
            lambda: (np.maximum(a @ a + a[0], 0) > 0) * a)  # the same arithmetic by hand
    elif impl == "torch":
        torch = p.torch
        t = torch.ones((1, 1))
        wt = torch.ones((1, 1), requires_grad=True)
        bt = torch.ones(1, requires_grad=True)

        def torch_dense():
            h = torch.relu(torch.nn.functional.linear(t, wt, bt))
            return torch.autograd.grad(h.sum(), [wt, bt])
        fn = (lambda: torch.relu(t)) if case == "relu-eager" else torch_dense
    run(fn, impl=impl, sizes={"ops": ops})
