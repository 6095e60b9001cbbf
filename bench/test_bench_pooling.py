"""2-D pooling, 3x3 window, stride 2, TF "SAME" padding, on an NHWC float32 batch: forward
alone and forward + backward (the input gradient for a fixed random cotangent).

* ipu_gpu: ``ops.pooling.max_pool2d`` / ``avg_pool2d`` (+ GradientTape for fwd+bwd).
* torch: ``F.max_pool2d`` / ``F.avg_pool2d`` on the same NHWC memory (a channels_last
  tensor), ``padding=0, ceil_mode=True``: for 112 -> 56 these are TF's SAME windows (TF pads
  one row/column at the bottom/right only), and ``count_include_pad=False`` divides by the
  in-bounds count as TF does (+ ``backward``).
* tensorflow: ``tf.nn.max_pool2d`` / ``avg_pool2d`` (+ GradientTape).

Max pooling over channels (TF's CPU depthwise max pooling, ksize = strides = [1, 1, 1, 4]),
forward only (TF has no gradient for it): ipu_gpu's ``max_pool2d``, numpy (the anchor,
interleaved: ``np.maximum`` of the runs' 4 strided channel views into a copy of the first;
``x.max(-1)`` over the runs is 10x slower), tensorflow's ``tf.nn.max_pool2d``.

The ipu_gpu rows are timed interleaved with torch (``paired``; numpy for the depth row).
Every implementation is first checked against a float64 numpy reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import as_impl, check_close, impl_params, paired_with, require, rng, to_numpy

import ipu_gpu
from ipu_gpu.ops import pooling

SIZES = {"b8_112x112x64_3x3s2_SAME": ((8, 112, 112, 64), 3, 2)}
IMPLS = impl_params(cpu=("ipu_gpu", "torch", "tensorflow"), gpu=("ipu_gpu_cupy", "torch_cuda"))


def _inputs(shape, k, s):
    g = rng(5)
    x = g.standard_normal(shape).astype(np.float32)
    n, h, w, c = shape
    out = (n, -(-h // s), -(-w // s), c)
    return x, g.standard_normal(out).astype(np.float32)


def _fn(impl, p, kind, backward, x, dy, k, s):
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        op = pooling.max_pool2d if kind == "max" else pooling.avg_pool2d
        xt, gt = as_impl(impl, x), as_impl(impl, dy)

        def fwd():
            return op(xt, k, s, "SAME"), None

        def fwd_bwd():
            with ipu_gpu.GradientTape() as tape:
                tape.watch(xt)
                y = op(xt, k, s, "SAME")
            return y, tape.gradient(y, xt, output_gradients=gt)
        return fwd_bwd if backward else fwd
    if impl in ("torch", "torch_cuda"):
        torch = p.torch
        F = torch.nn.functional
        dev = "cuda" if impl == "torch_cuda" else "cpu"
        # NHWC memory seen as NCHW: a channels_last tensor, no copy
        xt = torch.from_numpy(x.copy()).to(dev).permute(0, 3, 1, 2).requires_grad_(True)
        gt = torch.from_numpy(dy.copy()).to(dev).permute(0, 3, 1, 2)

        def pool(a):
            if kind == "max":
                return F.max_pool2d(a, k, s, padding=0, ceil_mode=True)
            return F.avg_pool2d(a, k, s, padding=0, ceil_mode=True, count_include_pad=False)

        def fwd():
            with torch.no_grad():
                return pool(xt).permute(0, 2, 3, 1), None

        def fwd_bwd():
            xt.grad = None
            y = pool(xt)
            y.backward(gt)
            return y.detach().permute(0, 2, 3, 1), xt.grad.permute(0, 2, 3, 1)
        return fwd_bwd if backward else fwd
    if impl == "tensorflow":
        tf = p.tf
        op = tf.nn.max_pool2d if kind == "max" else tf.nn.avg_pool2d
        xt, gt = tf.constant(x), tf.constant(dy)

        def fwd():
            return op(xt, k, s, "SAME"), None

        def fwd_bwd():
            with tf.GradientTape() as tape:
                tape.watch(xt)
                y = op(xt, k, s, "SAME")
            return y, tape.gradient(y, xt, output_gradients=gt)
        return fwd_bwd if backward else fwd
    raise ValueError(impl)


_REF = {}


def _reference(size, kind):
    """float64 numpy: windows of TF's SAME padding (bottom/right here), max with the first
    maximum in row-major window order taking the gradient, average over in-bounds elements."""
    if (size, kind) not in _REF:
        shape, k, s = SIZES[size]
        x, dy = _inputs(shape, k, s)
        x, dy = x.astype(np.float64), dy.astype(np.float64)
        n, h, w, c = shape
        oh, ow = dy.shape[1], dy.shape[2]
        pad_h, pad_w = max(0, (oh - 1) * s + k - h), max(0, (ow - 1) * s + k - w)
        pads = ((0, 0), (pad_h // 2, pad_h - pad_h // 2), (pad_w // 2, pad_w - pad_w // 2),
                (0, 0))
        view = np.lib.stride_tricks.sliding_window_view
        fill = -np.inf if kind == "max" else 0.0
        win = view(np.pad(x, pads, constant_values=fill), (k, k), axis=(1, 2))[:, ::s, ::s]
        win = win.reshape(n, oh, ow, c, k * k)
        if kind == "max":
            y = win.max(-1)
            first = win.argmax(-1)  # the first maximum in row-major order
            hh = np.arange(oh)[None, :, None, None] * s - pads[1][0] + first // k
            ww = np.arange(ow)[None, None, :, None] * s - pads[2][0] + first % k
            dx = np.zeros_like(x)
            np.add.at(dx, (np.arange(n)[:, None, None, None], hh, ww,
                           np.arange(c)[None, None, None, :]), dy)
        else:
            ones = view(np.pad(np.ones((1, h, w, 1)), pads), (k, k), axis=(1, 2))[:, ::s, ::s]
            count = ones.reshape(1, oh, ow, 1, k * k).sum(-1)
            y = win.sum(-1) / count
            scaled = dy / count
            dx_pad = np.zeros(np.pad(x, pads).shape)
            for i in range(k):
                for j in range(k):
                    dx_pad[:, i:i + s * oh:s, j:j + s * ow:s] += scaled
            dx = dx_pad[:, pads[1][0]:pads[1][0] + h, pads[2][0]:pads[2][0] + w]
        _REF[size, kind] = y.astype(np.float32), dx.astype(np.float32)
    return _REF[size, kind]


def _bench(run, size, impl, kind, backward):
    p = require(impl)
    shape, k, s = SIZES[size]
    x, dy = _inputs(shape, k, s)
    fn = _fn(impl, p, kind, backward, x, dy, k, s)
    y, dx = fn()
    want_y, want_dx = _reference(size, kind)
    tol = 0.0 if kind == "max" else 1e-5
    check_close(f"{kind}_pool2d {size} {impl}", to_numpy(y), want_y, rtol=tol, atol=tol)
    if backward:
        check_close(f"{kind}_pool2d grad {size} {impl}", to_numpy(dx), want_dx, rtol=1e-5,
                    atol=1e-6)
    paired = paired_with(impl, lambda peer: _fn(peer, require(peer), kind, backward, x, dy, k,
                                                s))
    run(fn, impl=impl, paired=paired,
        sizes={"input": list(shape), "ksize": k, "strides": s, "padding": "SAME",
               "layout": "NHWC", "dtype": "float32", "op": f"{kind}_pool2d"})


def _groups(name):
    return [pytest.param(s, marks=pytest.mark.benchmark(group=f"{name}-{s}")) for s in SIZES]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", _groups("max_pool2d_fwd"))
def test_max_pool2d_fwd(run, ipu_backend, size, impl):
    _bench(run, size, impl, "max", backward=False)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", _groups("max_pool2d_fwd_bwd"))
def test_max_pool2d_fwd_bwd(run, ipu_backend, size, impl):
    _bench(run, size, impl, "max", backward=True)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", _groups("avg_pool2d_fwd"))
def test_avg_pool2d_fwd(run, ipu_backend, size, impl):
    _bench(run, size, impl, "avg", backward=False)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("size", _groups("avg_pool2d_fwd_bwd"))
def test_avg_pool2d_fwd_bwd(run, ipu_backend, size, impl):
    _bench(run, size, impl, "avg", backward=True)


# ---- max pooling over channels (TF's CPU "depthwise max pooling": ksize/strides [1,1,1,k]) --
DEPTH_SIZES = {"b8_112x112x64_depth4": ((8, 112, 112, 64), 4)}


def _depth_inputs(shape):
    return rng(7).standard_normal(shape).astype(np.float32)


def _depth_fn(impl, p, x, k):
    if impl in ("ipu_gpu", "ipu_gpu_cupy"):
        xt = as_impl(impl, x)
        return lambda: pooling.max_pool2d(xt, [1, 1, 1, k], [1, 1, 1, k], "VALID")
    if impl == "numpy":  # the anchor: np.maximum over the runs' k strided views, in place
        runs = x.reshape(x.shape[:3] + (x.shape[3] // k, k))

        def fwd():
            out = runs[..., 0].copy()
            for i in range(1, k):
                np.maximum(out, runs[..., i], out=out)
            return out
        return fwd
    if impl == "tensorflow":
        xt = p.tf.constant(x)
        return lambda: p.tf.nn.max_pool2d(xt, [1, 1, 1, k], [1, 1, 1, k], "VALID")
    raise ValueError(impl)


@pytest.mark.parametrize("impl", impl_params(cpu=("ipu_gpu", "numpy", "tensorflow"),
                                             gpu=("ipu_gpu_cupy",)))
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.benchmark(
    group=f"max_pool_depth_fwd-{s}")) for s in DEPTH_SIZES])
def test_max_pool_depth_fwd(run, ipu_backend, size, impl):
    """Forward only (TF has no gradient for it); checked against the float64 maximum."""
    p = require(impl)
    shape, k = DEPTH_SIZES[size]
    x = _depth_inputs(shape)
    fn = _depth_fn(impl, p, x, k)
    want = x.astype(np.float64).reshape(shape[:3] + (shape[3] // k, k)).max(-1)
    check_close(f"max_pool depth {size} {impl}", to_numpy(fn()), want.astype(np.float32),
                rtol=0, atol=0)
    peer = "numpy" if impl == "ipu_gpu" else None
    paired = paired_with(impl, lambda q: _depth_fn(q, require(q), x, k), peer=peer)
    run(fn, impl=impl, paired=paired,
        sizes={"input": list(shape), "ksize": [1, 1, 1, k], "strides": [1, 1, 1, k],
               "padding": "VALID", "layout": "NHWC", "dtype": "float32",
               "op": "max_pool2d (depth)"})
