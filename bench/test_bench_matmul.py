"""matmul: ipu_gpu vs numpy, torch and tensorflow (CPU); ipu_gpu on cupy vs torch CUDA and cupy.

One group per size. 64x64 shows the per-call overhead, the large sizes the BLAS engine;
ipu_gpu's CPU rows run its tiled GEMM (``kernels/matmul_cpu``: fixed tiles on one BLAS thread
each, bits independent of the thread count), numpy's its threaded BLAS call. ipu_gpu's rows
interleave the same product through numpy (cupy on a GPU) between their timed calls
(``paired``), so their ratio to it is not moved by load drifting between rows.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import as_impl, check_close, impl_params, paired_with, require, rng

import ipu_gpu

SIZES = {  # name -> (a shape, b shape)
    "64x64x64": ((64, 64), (64, 64)),
    "512x512x512": ((512, 512), (512, 512)),
    "1024x1024x1024": ((1024, 1024), (1024, 1024)),
    "batched-64x(128x256)@(256x128)": ((64, 128, 256), (64, 256, 128)),
}


def _matmul_fn(impl, p, a, b):
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        return lambda: ipu_gpu.matmul(a, b)
    if impl == "numpy":
        return lambda: np.matmul(a, b)
    if impl in ("torch", "torch_cuda"):
        return lambda: p.torch.matmul(a, b)
    if impl == "tensorflow":
        return lambda: p.tf.linalg.matmul(a, b)
    if impl == "cupy":
        return lambda: p.cupy.matmul(a, b)
    raise ValueError(impl)


@pytest.mark.parametrize("impl", impl_params())
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(group=f"matmul-{s}"))
                                  for s in SIZES])
def test_matmul(run, ipu_backend, size, impl):
    p = require(impl)
    sa, sb = SIZES[size]
    g = rng(1)
    a = g.standard_normal(sa, dtype=np.float32)
    b = g.standard_normal(sb, dtype=np.float32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    fn = _matmul_fn(impl, p, as_impl(impl, a), as_impl(impl, b))
    k = sa[-1]
    check_close(f"matmul {size} {impl}", fn(), want, rtol=1e-4, atol=2e-5 * k)
    paired = paired_with(impl, lambda q: _matmul_fn(q, p, as_impl(q, a), as_impl(q, b)),
                         peer="numpy" if impl == "ipu_gpu" else "cupy")
    run(fn, impl=impl, paired=paired, sizes={"a": list(sa), "b": list(sb), "dtype": "float32"})


# ---- a Dense layer: matmul + bias + relu, forward and backward ------------------------------
DENSE = {"b256-512x512": (256, 512, 512)}  # the MLP bench's hidden layer (bench/test_bench_mlp)


def _dense_fn(impl, p, x, w, b):
    """One dense layer's forward and backward (the input, kernel and bias gradients of a
    sum): ipu_gpu's fused ``dense_bias`` (what Keras's Dense calls), ipu_gpu's three ops
    (tf.matmul, tf.nn.bias_add, tf.nn.relu), torch's F.linear + relu."""
    if impl in ("ipu_gpu", "three_ops"):
        from ipu_gpu.ops.matmul import dense_bias

        xt, wt, bt = ipu_gpu.constant(x), ipu_gpu.Variable(w), ipu_gpu.Variable(b)

        def layer():
            if impl == "ipu_gpu":
                return dense_bias(xt, wt, bt, relu=True)
            return ipu_gpu.nn.relu(ipu_gpu.nn.bias_add(ipu_gpu.matmul(xt, wt), bt))

        def step():
            with ipu_gpu.GradientTape() as tape:
                tape.watch(xt)
                y = layer()
            return [g.numpy() for g in tape.gradient(y, [xt, wt, bt])]
        return step
    torch = p.torch
    xt = torch.from_numpy(x).requires_grad_(True)
    wt = torch.from_numpy(np.ascontiguousarray(w.T)).requires_grad_(True)
    bt = torch.from_numpy(b).requires_grad_(True)

    def step():
        y = torch.relu(torch.nn.functional.linear(xt, wt, bt))
        dx, dw, db = torch.autograd.grad(y, [xt, wt, bt], torch.ones_like(y))
        return [dx.numpy(), dw.T.numpy(), db.numpy()]
    return step


@pytest.mark.parametrize("impl", ["ipu_gpu", "three_ops", "torch"])
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"dense_bias_relu-fwd-bwd-{s}")) for s in DENSE])
def test_dense_bias_relu(run, ipu_backend, size, impl):
    p = require("torch" if impl == "torch" else "ipu_gpu")
    n, k, u = DENSE[size]
    g = rng(2)
    x = g.standard_normal((n, k), dtype=np.float32)
    w = (g.standard_normal((k, u)) / np.sqrt(k)).astype(np.float32)
    b = (0.1 * g.standard_normal(u)).astype(np.float32)
    z = x.astype(np.float64) @ w + b
    mask = (z > 0).astype(np.float64)
    want = [mask @ w.T.astype(np.float64), x.T.astype(np.float64) @ mask, mask.sum(0)]
    fn = _dense_fn(impl, p, x, w, b)
    for name, got, ref in zip(("dx", "dw", "db"), fn(), want):
        check_close(f"dense {name} {size} {impl}", got, ref.astype(np.float32), rtol=1e-4,
                    atol=1e-4 * n)
    paired = None if impl != "ipu_gpu" else ("three_ops", _dense_fn("three_ops", p, x, w, b))
    run(fn, impl=impl, paired=paired,
        sizes={"batch": n, "in": k, "units": u, "dtype": "float32", "activation": "relu"})
