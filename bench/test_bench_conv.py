"""2-D convolution (``tf.nn.conv2d``), 3x3, 64 -> 64 channels, 56x56, batch 8, stride 1, SAME,
float32: forward alone and forward + backward (gradients of the input and the filters, from a
given output gradient).

* ipu_gpu: ``ipu_gpu.nn.conv2d`` on NHWC (its kernels' layout; the shift-GEMM scheme of
  kernels/conv_cpu.py), + GradientTape for fwd+bwd. Interleaved with torch (``paired``).
* torch: ``F.conv2d`` on NCHW tensors (oneDNN), + ``backward``.
* tensorflow: ``tf.nn.conv2d`` on NHWC (oneDNN), + GradientTape.
* ipu_gpu_cupy / torch_cuda (GPU rows, skipped without a device): cuDNN through cupy against
  torch's cuDNN, TF32 off on both sides; the ipu_gpu_cupy row is interleaved with torch_cuda.

Targets (issue 5): fwd+bwd <= 1.5x torch CPU; on a GPU <= 1.2x torch cuDNN.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import check_close, impl_params, paired_with, require, rng, to_numpy

import ipu_gpu
from ipu_gpu.ops.conv import conv2d, conv2d_bias

SIZES = {"N8_C64_56x56_K64_3x3": (8, 56, 56, 64, 64, 3)}
IMPLS = impl_params(cpu=("ipu_gpu", "torch", "tensorflow"), gpu=("ipu_gpu_cupy", "torch_cuda"))


def _inputs(n, h, w, c, k, ks):
    g = rng(5)
    x = g.standard_normal((n, h, w, c)).astype(np.float32)
    f = (g.standard_normal((ks, ks, c, k)) / np.sqrt(ks * ks * c)).astype(np.float32)
    dy = g.standard_normal((n, h, w, k)).astype(np.float32)
    return x, f, dy


def _fn(impl, p, backward, x, f, dy):
    """A no-argument call returning (y, dx, dfilters) in NHWC / HWIO (grads None for fwd)."""
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        tf = ipu_gpu
        move = p.cupy.asarray if impl == "ipu_gpu_cupy" else np.asarray
        xt, ft, g = (tf.constant(move(a)) for a in (x, f, dy))

        def fwd():
            return conv2d(xt, ft, 1, "SAME"), None, None

        def fwd_bwd():
            with tf.GradientTape() as tape:
                tape.watch([xt, ft])
                y = conv2d(xt, ft, 1, "SAME")
            dx, df = tape.gradient(y, [xt, ft], output_gradients=g)
            return y, dx, df
        return fwd_bwd if backward else fwd
    if impl in ("torch", "torch_cuda"):
        torch = p.torch
        F = torch.nn.functional
        dev = "cuda" if impl == "torch_cuda" else "cpu"
        if dev == "cuda":
            torch.backends.cudnn.allow_tf32 = False  # plain float32, as cupy's cuDNN calls
        xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy()).to(dev).requires_grad_(True)
        ft = torch.from_numpy(f.transpose(3, 2, 0, 1).copy()).to(dev).requires_grad_(True)
        g = torch.from_numpy(dy.transpose(0, 3, 1, 2).copy()).to(dev)

        def fwd():
            with torch.no_grad():
                return F.conv2d(xt, ft, padding=1), None, None

        def fwd_bwd():
            xt.grad = ft.grad = None
            y = F.conv2d(xt, ft, padding=1)
            y.backward(g)
            return y, xt.grad, ft.grad
        return fwd_bwd if backward else fwd
    if impl == "tensorflow":
        tf = p.tf
        xt, ft, g = tf.constant(x), tf.constant(f), tf.constant(dy)

        def fwd():
            return tf.nn.conv2d(xt, ft, 1, "SAME"), None, None

        def fwd_bwd():
            with tf.GradientTape() as tape:
                tape.watch([xt, ft])
                y = tf.nn.conv2d(xt, ft, 1, "SAME")
            dx, df = tape.gradient(y, [xt, ft], output_gradients=g)
            return y, dx, df
        return fwd_bwd if backward else fwd
    raise ValueError(impl)


def _as_nhwc(impl, y, dx, df):
    y, dx, df = (None if a is None else to_numpy(a) for a in (y, dx, df))
    if impl in ("torch", "torch_cuda"):
        y = y.transpose(0, 2, 3, 1)
        if dx is not None:
            dx, df = dx.transpose(0, 2, 3, 1), df.transpose(2, 3, 1, 0)
    return y, dx, df


_REF = {}


def _reference(size):
    """Output and gradients from torch in float64 (our float64 reference is too slow here)."""
    if size not in _REF:
        torch = require("torch").torch
        x, f, dy = _inputs(*SIZES[size])
        xt = torch.from_numpy(x.transpose(0, 3, 1, 2).astype(np.float64)).requires_grad_(True)
        ft = torch.from_numpy(f.transpose(3, 2, 0, 1).astype(np.float64)).requires_grad_(True)
        y = torch.nn.functional.conv2d(xt, ft, padding=1)
        y.backward(torch.from_numpy(dy.transpose(0, 3, 1, 2).astype(np.float64)))
        _REF[size] = tuple(a.astype(np.float32) for a in _as_nhwc(
            "torch", y.detach(), xt.grad, ft.grad))
    return _REF[size]


def _bench(run, size, impl, backward):
    p = require(impl)
    x, f, dy = _inputs(*SIZES[size])
    fn = _fn(impl, p, backward, x, f, dy)
    got = _as_nhwc(impl, *fn())
    want = _reference(size)
    # ours at 1e-3; a peer only has to compute the same thing (torch CUDA's cuDNN weight
    # gradient, summing 25088 products per element, lands about 2e-3 from float64)
    rtol, atol = (1e-3, 2e-3) if impl.startswith("ipu_gpu") else (5e-3, 1e-2)
    for name, a, b in zip(("output", "dx", "dfilters"), got, want):
        if a is not None:
            check_close(f"conv2d {name} {size} {impl}", a, b, rtol=rtol, atol=atol)
    n, h, w, c, k, ks = SIZES[size]
    run(fn, impl=impl, paired=paired_with(impl, lambda q: _fn(q, p, backward, x, f, dy)),
        sizes={"batch": n, "height": h, "width": w, "in_channels": c, "out_channels": k,
               "filter": f"{ks}x{ks}", "strides": 1, "padding": "SAME", "dtype": "float32",
               "layout": "NCHW" if impl in ("torch", "torch_cuda") else "NHWC"})


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"conv2d_fwd-{s}")) for s in SIZES])
def test_conv2d_fwd(run, ipu_backend, size, impl):
    _bench(run, size, impl, backward=False)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"conv2d_fwd_bwd-{s}")) for s in SIZES])
def test_conv2d_fwd_bwd(run, ipu_backend, size, impl):
    _bench(run, size, impl, backward=True)


# ---- conv2d + bias + relu (ops.conv.conv2d_bias: Keras's Conv2D in one op) ---------------------
# Rows of their own for the fused op and for the direct loops (kernels/_conv_direct.py) that
# take patches of at most DIRECT_MAX_TAPS values: the MNIST CNN's first layer (3x3 on one
# channel, 9 values, VALID as Keras's default) is such a convolution; its input is data, so
# fwd+bwd takes the filter and bias gradients only, as a Keras step does. The 64 -> 64 row
# is the GEMM scheme with the bias and relu in its epilogue.
# torch: F.relu(F.conv2d(x, w, b)) on NCHW, + backward. Targets: those of the conv rows.
# (size: (n, h, w, c, k, ks, padding, input gradient))
BIAS_SIZES = {"N8_C64_56x56_K64_3x3_SAME": (8, 56, 56, 64, 64, 3, "SAME", True),
              "N128_C1_28x28_K32_3x3_VALID_direct": (128, 28, 28, 1, 32, 3, "VALID", False)}
BIAS_IMPLS = impl_params(cpu=("ipu_gpu", "torch"), gpu=())


def _bias_inputs(size):
    n, h, w, c, k, ks, padding, _ = BIAS_SIZES[size]
    x, f, _ = _inputs(n, h, w, c, k, ks)
    b = rng(6).standard_normal(k).astype(np.float32) * np.float32(0.1)
    ho, wo = (h, w) if padding == "SAME" else (h - ks + 1, w - ks + 1)
    dy = rng(7).standard_normal((n, ho, wo, k)).astype(np.float32)
    return x, f, b, dy


def _bias_fn(impl, p, backward, size):
    """A no-argument call returning (y, dx, dfilters, dbias) in NHWC / HWIO (grads None for
    fwd; dx None for a data input)."""
    x, f, b, dy = _bias_inputs(size)
    padding, needs_dx = BIAS_SIZES[size][6:]
    if impl == "ipu_gpu":
        xt, ft, bt, g = (ipu_gpu.constant(a) for a in (x, f, b, dy))
        sources = [xt, ft, bt] if needs_dx else [ft, bt]

        def fwd():
            return conv2d_bias(xt, ft, bt, 1, padding, relu=True), None, None, None

        def fwd_bwd():
            with ipu_gpu.GradientTape() as tape:
                tape.watch(sources)
                y = conv2d_bias(xt, ft, bt, 1, padding, relu=True)
            grads = tape.gradient(y, sources, output_gradients=g)
            return (y, *grads) if needs_dx else (y, None, *grads)
        return fwd_bwd if backward else fwd
    if impl == "torch":
        torch = p.torch
        F = torch.nn.functional
        pad = f.shape[0] // 2 if padding == "SAME" else 0
        xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy()).requires_grad_(needs_dx)
        ft = torch.from_numpy(f.transpose(3, 2, 0, 1).copy()).requires_grad_(True)
        bt = torch.from_numpy(b.copy()).requires_grad_(True)
        g = torch.from_numpy(dy.transpose(0, 3, 1, 2).copy())

        def fwd():
            with torch.no_grad():
                return F.relu(F.conv2d(xt, ft, bt, padding=pad)), None, None, None

        def fwd_bwd():
            xt.grad = ft.grad = bt.grad = None
            y = F.relu(F.conv2d(xt, ft, bt, padding=pad))
            y.backward(g)
            return y, xt.grad, ft.grad, bt.grad
        return fwd_bwd if backward else fwd
    raise ValueError(impl)


_BIAS_REF = {}


def _bias_reference(size):
    """Output and gradients from torch in float64."""
    if size not in _BIAS_REF:
        torch = require("torch").torch
        x, f, b, dy = _bias_inputs(size)
        pad = f.shape[0] // 2 if BIAS_SIZES[size][6] == "SAME" else 0
        xt = torch.from_numpy(x.transpose(0, 3, 1, 2).astype(np.float64)).requires_grad_(True)
        ft = torch.from_numpy(f.transpose(3, 2, 0, 1).astype(np.float64)).requires_grad_(True)
        bt = torch.from_numpy(b.astype(np.float64)).requires_grad_(True)
        y = torch.nn.functional.relu(torch.nn.functional.conv2d(xt, ft, bt, padding=pad))
        y.backward(torch.from_numpy(dy.transpose(0, 3, 1, 2).astype(np.float64)))
        y, dx, df = _as_nhwc("torch", y.detach(), xt.grad, ft.grad)
        _BIAS_REF[size] = tuple(a.astype(np.float32) for a in (y, dx, df, bt.grad.numpy()))
    return _BIAS_REF[size]


def _bench_bias(run, size, impl, backward):
    p = require(impl)
    fn = _bias_fn(impl, p, backward, size)
    y, dx, df, db = (None if a is None else to_numpy(a) for a in fn())
    if impl == "torch":
        y, df = y.transpose(0, 2, 3, 1), None if df is None else df.transpose(2, 3, 1, 0)
        dx = None if dx is None else dx.transpose(0, 2, 3, 1)
    want = _bias_reference(size)
    rtol, atol = (1e-3, 2e-3) if impl == "ipu_gpu" else (5e-3, 1e-2)
    for name, a, ref in zip(("output", "dx", "dfilters", "dbias"), (y, dx, df, db), want):
        if a is not None:
            check_close(f"conv2d_bias {name} {size} {impl}", a, ref, rtol=rtol,
                        atol=atol * (10 if name == "dbias" else 1))
    n, h, w, c, k, ks, padding, needs_dx = BIAS_SIZES[size]
    run(fn, impl=impl, paired=paired_with(impl, lambda q: _bias_fn(q, p, backward, size)),
        sizes={"batch": n, "height": h, "width": w, "in_channels": c, "out_channels": k,
               "filter": f"{ks}x{ks}", "strides": 1, "padding": padding, "dtype": "float32",
               "bias": True, "relu": True, "input_gradient": needs_dx,
               "layout": "NCHW" if impl == "torch" else "NHWC"})


@pytest.mark.parametrize("impl", BIAS_IMPLS)
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"conv2d_bias_relu_fwd-{s}")) for s in BIAS_SIZES])
def test_conv2d_bias_relu_fwd(run, ipu_backend, size, impl):
    _bench_bias(run, size, impl, backward=False)


@pytest.mark.parametrize("impl", BIAS_IMPLS)
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"conv2d_bias_relu_fwd_bwd-{s}")) for s in BIAS_SIZES])
def test_conv2d_bias_relu_fwd_bwd(run, ipu_backend, size, impl):
    _bench_bias(run, size, impl, backward=True)
