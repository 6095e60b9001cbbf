"""Convolutions (conv2d, depthwise_conv2d, conv2d_transpose, conv1d) against PyTorch and
TensorFlow on random shapes, gradients, the CPU kernels' two GEMM schemes and BLAS paths, the
GPU twin through the CUDA emulator, float16, and properties. The op table
(tests/opdb_conv.py) adds the float64 reference, finite-difference VJPs and every error."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import tf_or_skip
from cuda_emulator import install_fake_cupy
from hypothesis import given
from hypothesis import strategies as st
from reference import conv as rconv

import ipu_gpu
from ipu_gpu.kernels import conv_cpu
from ipu_gpu.ops import conv

SEEDS = range(24)


def _tf_pads(padding, hw, khw, strides, dilations):
    """[(before, after)] of TF's SAME/VALID (explicit pairs pass through)."""
    if not isinstance(padding, str):
        return [tuple(p) for p in padding]
    out = []
    for n, k, s, d in zip(hw, khw, strides, dilations):
        eff = (k - 1) * d + 1
        o = -(-n // s)
        total = max((o - 1) * s + eff - n, 0) if padding == "SAME" else 0
        out.append((total // 2, total - total // 2))
    return out


def _case(seed):
    """A random conv2d: shape, filter, strides, dilations, padding, layout, groups."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 2, 3]))
    groups = int(rng.choice([1, 1, 1, 2]))
    cg = int(rng.choice([1, 3, 16, 20]))
    kg = int(rng.integers(1, 6))
    kh, kw = (int(v) for v in rng.choice([1, 2, 3, 5], 2))
    sh, sw = (int(v) for v in rng.choice([1, 1, 2, 3], 2))
    dh, dw = (int(v) for v in rng.choice([1, 1, 2], 2))
    h, w = (int(v) for v in rng.integers(max(kh, kw) * 2, 13, 2))
    kind = rng.choice(["SAME", "VALID", "explicit"])
    padding = ([(int(a), int(b)) for a, b in rng.integers(0, 3, (2, 2))]
               if kind == "explicit" else str(kind))
    fmt = str(rng.choice(["NHWC", "NCHW"]))
    x = rng.standard_normal((n, h, w, cg * groups)).astype(np.float32)
    f = rng.standard_normal((kh, kw, cg, kg * groups)).astype(np.float32)
    return x, f, (sh, sw), (dh, dw), padding, fmt, groups


def _tf_padding_arg(padding, fmt):
    if isinstance(padding, str):
        return padding
    return ([[0, 0], [0, 0], list(padding[0]), list(padding[1])] if fmt == "NCHW"
            else [[0, 0], list(padding[0]), list(padding[1]), [0, 0]])


def _ours(fn, inputs, *args, dy=None, **kwargs):
    """Output and gradients (one per input) of ``fn(*inputs, *args, **kwargs)``."""
    ts = [ipu_gpu.constant(a) for a in inputs]
    with ipu_gpu.GradientTape() as tape:
        tape.watch(ts)
        y = fn(*ts, *args, **kwargs)
    grads = tape.gradient(y, ts, output_gradients=None if dy is None else ipu_gpu.constant(dy))
    return y.numpy(), [g.numpy() for g in grads]


# ---- against PyTorch -------------------------------------------------------------------------
@pytest.mark.parametrize("seed", SEEDS)
def test_conv2d_matches_torch(seed):
    torch = pytest.importorskip("torch")
    x, f, strides, dilations, padding, fmt, groups = _case(seed)
    pads = _tf_pads(padding, x.shape[1:3], f.shape[:2], strides, dilations)
    xt = torch.tensor(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), dtype=torch.float64,
                      requires_grad=True)
    ft = torch.tensor(np.ascontiguousarray(f.transpose(3, 2, 0, 1)), dtype=torch.float64,
                      requires_grad=True)
    xp = torch.nn.functional.pad(xt, (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))
    yt = torch.nn.functional.conv2d(xp, ft, stride=strides, dilation=dilations, groups=groups)
    dy = np.random.default_rng(seed + 100).standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(dy, dtype=torch.float64))
    want = [yt.detach().numpy(), xt.grad.numpy(), ft.grad.numpy().transpose(2, 3, 1, 0)]
    xin = x if fmt == "NHWC" else x.transpose(0, 3, 1, 2).copy()
    dy_in = dy if fmt == "NCHW" else dy.transpose(0, 2, 3, 1).copy()
    y, (gx, gf) = _ours(conv.conv2d, [xin, f], list(strides), _tf_padding_arg(padding, fmt),
                        dy=dy_in, data_format=fmt, dilations=list(dilations))
    if fmt == "NHWC":
        y, gx = y.transpose(0, 3, 1, 2), gx.transpose(0, 3, 1, 2)
    for got, exp, what in zip((y, gx, gf), want, ("output", "dx", "dfilters")):
        assert got.shape == exp.shape, what
        np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4, err_msg=what)


# ---- against TensorFlow ----------------------------------------------------------------------
# Each case checks ipu_gpu first against the float64 reference and torch, then against TF;
# where the installed TF cannot compute the case on this CPU, only the TF part is skipped.
def _tf_grads(tf, fn, inputs, dy):
    """TF's output and gradients (cotangent ``dy``) of ``fn(tf, *inputs)``."""
    ts = [tf.constant(a) for a in inputs]
    with tf.GradientTape() as tape:
        tape.watch(ts)
        y = fn(tf, *ts)
    return [y.numpy()] + [g.numpy() for g in tape.gradient(y, ts, output_gradients=dy)]


def _assert_all_close(got, want, peer, tol=1e-4):
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape, f"result {k} vs {peer}"
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"result {k} vs {peer}")


def _assert_matches_reference(ref, inputs, y, grads, dy, tol=1e-4):
    """ipu_gpu's output ``y`` and gradients (for the cotangent ``dy``) against the float64
    reference ``ref(*inputs)``: the output elementwise, each gradient through the adjoint
    identity <dy, ref(.., v, ..)> = <grad, v> for a random v, exact for a convolution because it
    is linear in each of its inputs."""
    want = ref(*inputs)
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=tol, atol=tol, err_msg="output vs float64 reference")
    rng = np.random.default_rng(1)
    for k, g in enumerate(grads):
        assert g.shape == inputs[k].shape, f"gradient {k}"
        v = rng.standard_normal(g.shape)
        lhs = np.vdot(dy.astype(np.float64), ref(*inputs[:k], v, *inputs[k + 1:]))
        rhs = np.vdot(g.astype(np.float64), v)
        assert abs(lhs - rhs) <= 1e-5 * np.vdot(np.abs(g), np.abs(v)), \
            f"gradient {k} vs float64 reference: <dy, ref(v)> = {lhs}, <grad, v> = {rhs}"


def _torch_conv2d(x, f, dy, strides, dilations, pads, groups=1):
    """torch's float64 output and gradients (cotangent ``dy``) of a grouped conv2d of x[NHWC]
    with f[HWIO] and explicit pads [(before, after)] per spatial axis, as NHWC / HWIO."""
    torch = pytest.importorskip("torch")
    xt = torch.tensor(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), dtype=torch.float64,
                      requires_grad=True)
    ft = torch.tensor(np.ascontiguousarray(f.transpose(3, 2, 0, 1)), dtype=torch.float64,
                      requires_grad=True)
    xp = torch.nn.functional.pad(xt, (*pads[1], *pads[0]))
    yt = torch.nn.functional.conv2d(xp, ft, stride=tuple(strides), dilation=tuple(dilations),
                                    groups=groups)
    yt.backward(torch.tensor(np.ascontiguousarray(dy.transpose(0, 3, 1, 2)), dtype=torch.float64))
    return [yt.detach().numpy().transpose(0, 2, 3, 1), xt.grad.numpy().transpose(0, 2, 3, 1),
            ft.grad.numpy().transpose(2, 3, 1, 0)]


def _torch_conv2d_transpose(x, f, dy, out_hw, strides, pads):
    """torch's float64 output and gradients of conv2d_transpose of x[NHWC] with f[kh, kw, out,
    in] to the spatial size ``out_hw``: conv_transpose2d onto the padded output, then cropped."""
    torch = pytest.importorskip("torch")
    xt = torch.tensor(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), dtype=torch.float64,
                      requires_grad=True)
    ft = torch.tensor(np.ascontiguousarray(f.transpose(3, 2, 0, 1)), dtype=torch.float64,
                      requires_grad=True)
    # trailing rows of the padded output that no tap reaches (VALID with a larger output_shape)
    extra = [out_hw[i] + sum(pads[i]) - ((x.shape[1 + i] - 1) * strides[i] + f.shape[i])
             for i in (0, 1)]
    yt = torch.nn.functional.conv_transpose2d(xt, ft, stride=tuple(strides),
                                              output_padding=tuple(extra))
    yt = yt[:, :, pads[0][0]:pads[0][0] + out_hw[0], pads[1][0]:pads[1][0] + out_hw[1]]
    yt.backward(torch.tensor(np.ascontiguousarray(dy.transpose(0, 3, 1, 2)), dtype=torch.float64))
    return [yt.detach().numpy().transpose(0, 2, 3, 1), xt.grad.numpy().transpose(0, 2, 3, 1),
            ft.grad.numpy().transpose(2, 3, 1, 0)]


@pytest.mark.parametrize("seed", SEEDS[::2])
def test_conv2d_matches_tensorflow(request, seed):
    x, f, strides, dilations, padding, fmt, groups = _case(seed)
    nchw = fmt == "NCHW"
    xin = x.transpose(0, 3, 1, 2).copy() if nchw else x

    def ref(a, b, fmt=fmt):
        return rconv.conv2d(a, b, list(strides), _tf_padding_arg(padding, fmt),
                            data_format=fmt, dilations=list(dilations))

    dy = np.random.default_rng(seed).standard_normal(ref(x, f, "NHWC").shape).astype(np.float32)
    dy_in = dy.transpose(0, 3, 1, 2).copy() if nchw else dy
    y, (gx, gf) = _ours(conv.conv2d, [xin, f], list(strides), _tf_padding_arg(padding, fmt),
                        dy=dy_in, data_format=fmt, dilations=list(dilations))
    _assert_matches_reference(ref, [xin, f], y, [gx, gf], dy_in)
    if nchw:
        y, gx = y.transpose(0, 2, 3, 1), gx.transpose(0, 2, 3, 1)
    pads = _tf_pads(padding, x.shape[1:3], f.shape[:2], strides, dilations)
    _assert_all_close([y, gx, gf], _torch_conv2d(x, f, dy, strides, dilations, pads, groups),
                      "torch")

    def tf_fn(tf, a, b):  # TF's CPU kernels take NHWC (NCHW gradients are GPU-only there)
        return tf.nn.conv2d(a, b, list(strides), _tf_padding_arg(padding, "NHWC"),
                            dilations=list(dilations))

    want = tf_or_skip(request, lambda tf: _tf_grads(tf, tf_fn, [x, f], dy))
    _assert_all_close([y, gx, gf], want, "TensorFlow")


@pytest.mark.parametrize(("strides", "dilations", "padding", "mult"), [
    ([1, 1, 1, 1], [1, 1], "SAME", 1), ([1, 2, 2, 1], None, "VALID", 2),
    ([1, 1, 1, 1], [2, 3], "SAME", 3), ([1, 3, 3, 1], None, [[0, 0], [1, 2], [2, 0], [0, 0]], 1),
])
def test_depthwise_matches_tensorflow(request, strides, dilations, padding, mult):
    rng = np.random.default_rng(len(strides) + mult)
    x = rng.standard_normal((2, 11, 9, 5)).astype(np.float32)
    f = rng.standard_normal((3, 3, 5, mult)).astype(np.float32)

    def ref(a, b):
        return rconv.depthwise_conv2d(a, b, strides, padding, dilations=dilations)

    dy = rng.standard_normal(ref(x, f).shape).astype(np.float32)
    y, grads = _ours(conv.depthwise_conv2d, [x, f], strides, padding, dy=dy, dilations=dilations)
    _assert_matches_reference(ref, [x, f], y, grads, dy)
    # depthwise = conv2d with one group per channel; output channel c * mult + m
    s, d = strides[1:3], dilations or (1, 1)
    spatial = padding if isinstance(padding, str) else padding[1:3]
    pads = _tf_pads(spatial, x.shape[1:3], f.shape[:2], s, d)
    want = _torch_conv2d(x, f.reshape(3, 3, 1, 5 * mult), dy, s, d, pads, groups=5)
    want[2] = want[2].reshape(f.shape)
    _assert_all_close([y] + grads, want, "torch")

    def tf_fn(tf, a, b):
        return tf.nn.depthwise_conv2d(a, b, strides, padding, dilations=dilations)

    want = tf_or_skip(request, lambda tf: _tf_grads(tf, tf_fn, [x, f], dy))
    _assert_all_close([y] + grads, want, "TensorFlow")


@pytest.mark.parametrize(("x_shape", "f_shape", "out", "strides", "padding", "fmt"), [
    ((2, 5, 4, 6), (3, 3, 3, 6), [2, 10, 8, 3], 2, "SAME", "NHWC"),
    ((2, 5, 4, 6), (3, 3, 3, 6), [2, 9, 7, 3], 2, "SAME", "NHWC"),
    ((1, 5, 4, 16), (2, 2, 16, 16), [1, 6, 5, 16], 1, "VALID", "NHWC"),
    ((2, 6, 5, 4), (3, 2, 2, 6), [2, 2, 11, 9], [1, 1, 2, 2], "VALID", "NCHW"),
])
def test_conv2d_transpose_matches_tensorflow(request, x_shape, f_shape, out, strides, padding,
                                             fmt):
    rng = np.random.default_rng(sum(x_shape))
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    nchw = fmt == "NCHW"
    to_nhwc = (0, 2, 3, 1)
    x_nhwc = x.transpose(to_nhwc).copy() if nchw else x
    out_nhwc = [out[i] for i in to_nhwc] if nchw else out
    strides_nhwc = [strides[i] for i in to_nhwc] if isinstance(strides, list) else strides

    def ref(a, b):
        return rconv.conv2d_transpose(a, b, out, strides, padding, data_format=fmt)

    dy = rng.standard_normal(out_nhwc).astype(np.float32)
    dy_in = dy.transpose(0, 3, 1, 2).copy() if nchw else dy
    y, (gx, gf) = _ours(conv.conv2d_transpose, [x, f], out, strides, padding, dy=dy_in,
                        data_format=fmt)
    _assert_matches_reference(ref, [x, f], y, [gx, gf], dy_in)
    if nchw:
        y, gx = y.transpose(to_nhwc), gx.transpose(to_nhwc)
    s = (strides, strides) if isinstance(strides, int) else tuple(strides_nhwc[1:3])
    pads = _tf_pads(padding, out_nhwc[1:3], f.shape[:2], s, (1, 1))
    _assert_all_close([y, gx, gf], _torch_conv2d_transpose(x_nhwc, f, dy, out_nhwc[1:3], s, pads),
                      "torch")

    def tf_fn(tf, a, b):  # NHWC: TF's CPU gradients of NCHW convolutions are GPU-only
        return tf.nn.conv2d_transpose(a, b, out_nhwc, strides_nhwc, padding)

    want = tf_or_skip(request, lambda tf: _tf_grads(tf, tf_fn, [x_nhwc, f], dy))
    _assert_all_close([y, gx, gf], want, "TensorFlow")


@pytest.mark.parametrize(("stride", "padding", "fmt", "dilations"), [
    (1, "SAME", "NWC", None), (2, "VALID", "NWC", 1), (1, "SAME", "NCW", 2),
    ([1, 3, 1], "SAME", "NWC", None)])
def test_conv1d_matches_tensorflow(request, stride, padding, fmt, dilations):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 13, 4) if fmt == "NWC" else (3, 4, 13)).astype(np.float32)
    f = rng.standard_normal((3, 4, 6)).astype(np.float32)

    def ref(a, b):
        return rconv.conv1d(a, b, stride, padding, data_format=fmt, dilations=dilations)

    dy = rng.standard_normal(ref(x, f).shape).astype(np.float32)
    y, grads = _ours(conv.conv1d, [x, f], stride, padding, dy=dy, data_format=fmt,
                     dilations=dilations)
    _assert_matches_reference(ref, [x, f], y, grads, dy)
    # torch: a conv2d over a height of 1, in NWC
    ncw = fmt == "NCW"
    x_nwc, dy_nwc = (x.transpose(0, 2, 1), dy.transpose(0, 2, 1)) if ncw else (x, dy)
    s = (1, stride if isinstance(stride, int) else stride[1])
    d = (1, dilations or 1)
    pads = _tf_pads(padding, (1, x_nwc.shape[1]), (1, f.shape[0]), s, d)
    want = _torch_conv2d(x_nwc[:, None], f[None], dy_nwc[:, None], s, d, pads)
    want = [want[0][:, 0], want[1][:, 0], want[2][0]]
    if ncw:
        want[:2] = [w.transpose(0, 2, 1) for w in want[:2]]
    _assert_all_close([y] + grads, want, "torch")

    def tf_fn(tf, a, b):
        return tf.nn.conv1d(a, b, stride, padding, data_format=fmt, dilations=dilations)

    want = tf_or_skip(request, lambda tf: _tf_grads(tf, tf_fn, [x, f], dy))
    _assert_all_close([y] + grads, want, "TensorFlow")


# ---- dtypes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("fn_args", [
    (conv.conv2d, (3, 3, 16, 4), (1, "SAME")),
    (conv.depthwise_conv2d, (3, 3, 16, 2), ([1, 1, 1, 1], "SAME")),
])
def test_float16_is_float32_rounded_once(fn_args):
    fn, f_shape, args = fn_args
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 6, 5, 16)).astype(np.float16)
    f = rng.standard_normal(f_shape).astype(np.float16)
    y16, (gx16, gf16) = _ours(fn, [x, f], *args)
    y32, (gx32, gf32) = _ours(fn, [x.astype(np.float32), f.astype(np.float32)], *args)
    assert y16.dtype == gx16.dtype == gf16.dtype == np.float16
    np.testing.assert_array_equal(y16, y32.astype(np.float16))
    np.testing.assert_array_equal(gx16, gx32.astype(np.float16))
    np.testing.assert_array_equal(gf16, gf32.astype(np.float16))


def test_float64_is_exact_to_float64_rounding():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 7, 7, 16))
    f = rng.standard_normal((3, 3, 16, 5))
    y = conv.conv2d(x, f, 1, "SAME").numpy()
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, rconv.conv2d(x, f, 1, "SAME"), rtol=1e-12, atol=1e-12)


# ---- the CPU kernels' schemes ------------------------------------------------------------------
def _run_cpu(x, f, strides, dilations, pads, groups):
    n, h, w, _ = x.shape
    ho = (h + sum(pads[0]) - (f.shape[0] - 1) * dilations[0] - 1) // strides[0] + 1
    wo = (w + sum(pads[1]) - (f.shape[1] - 1) * dilations[1] - 1) // strides[1] + 1
    out = np.empty((n, ho, wo, f.shape[3]), x.dtype)
    conv_cpu.conv2d_fwd(x, f, strides, dilations, pads, groups, out)
    dy = np.random.default_rng(0).standard_normal(out.shape).astype(x.dtype)
    dx, df = np.empty_like(x), np.empty_like(f)
    conv_cpu.conv2d_bwd(x, f, dy, strides, dilations, pads, groups, dx, df)
    return out, dx, df


CPU_CASES = [  # x shape, filter shape, strides, dilations, pads, groups
    ((2, 9, 8, 32), (3, 3, 32, 8), (1, 1), (1, 1), ((1, 1), (1, 1)), 1),
    ((1, 7, 9, 32), (3, 2, 16, 6), (1, 1), (2, 1), ((2, 0), (0, 3)), 2),
    ((3, 6, 6, 16), (1, 1, 16, 5), (1, 1), (1, 1), ((0, 0), (0, 0)), 1),
    ((2, 8, 7, 18), (3, 3, 18, 4), (1, 1), (1, 2), ((0, 0), (0, 0)), 1),
]


@pytest.mark.parametrize("case", CPU_CASES)
def test_shift_and_im2col_schemes_agree(case, monkeypatch):
    x_shape, f_shape, strides, dilations, pads, groups = case
    rng = np.random.default_rng(5)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    assert conv_cpu.conv2d_plan(x.shape, f.shape, strides, groups) == "shift"
    shift = _run_cpu(x, f, strides, dilations, pads, groups)
    monkeypatch.setattr(conv_cpu, "SHIFT_MIN_CHANNELS", 10**9)
    assert conv_cpu.conv2d_plan(x.shape, f.shape, strides, groups) == "im2col"
    im2col = _run_cpu(x, f, strides, dilations, pads, groups)
    monkeypatch.setattr(conv_cpu, "IM2COL_BLOCK_BYTES", 1)  # one image a block
    blocked = _run_cpu(x, f, strides, dilations, pads, groups)
    monkeypatch.setattr(conv_cpu, "SHIFT_MIN_CHANNELS", 16)
    monkeypatch.setattr(conv_cpu, "SHIFT_BLOCK_ROWS", 7)  # many row blocks
    small_blocks = _run_cpu(x, f, strides, dilations, pads, groups)
    for other in (im2col, blocked, small_blocks):
        for a, b in zip(shift, other):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("case", [  # x shape, filter shape, dilations, pads, groups
    ((9, 13, 13, 32), (3, 3, 32, 24), (1, 1), ((0, 0), (0, 0)), 1),  # the Keras CNN's 2nd
    ((5, 9, 11, 16), (3, 2, 8, 6), (2, 1), ((1, 0), (0, 1)), 2)])
def test_shift_scheme_per_image_segments(case, monkeypatch):
    """Where the grid rows between two images' outputs are many (3x3 VALID on 13x13: 28 of
    169), the forward and the filter gradient run a GEMM sequence an image over its 141
    rows: the results match the float64 reference and the whole-grid GEMMs to rounding, and
    do not depend on the block size or the thread count."""
    import numba

    x_shape, f_shape, dilations, pads, groups = case
    rng = np.random.default_rng(31)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    n, h, w, _ = x_shape
    hp, wp = h + sum(pads[0]), w + sum(pads[1])
    ho, wo = hp - (f_shape[0] - 1) * dilations[0], wp - (f_shape[1] - 1) * dilations[1]
    cg, kg = f_shape[2], f_shape[3] // groups
    monkeypatch.setattr(conv_cpu, "IMAGE_SEGMENT_MIN_MACS", 0)  # small shapes segmented too
    assert conv_cpu._image_segments(n, hp, wp, ho, wo, cg, kg) is not None
    seg = _run_cpu(x, f, (1, 1), dilations, pads, groups)
    xp = np.pad(x, ((0, 0), *pads, (0, 0))).astype(np.float64)
    for g in range(groups):  # the forward against float64
        cg, kg = f_shape[2], f_shape[3] // groups
        want = rconv.conv2d(xp[..., g * cg:(g + 1) * cg], f[..., g * kg:(g + 1) * kg]
                            .astype(np.float64), [1, 1, 1, 1], "VALID",
                            dilations=[1, *dilations, 1])
        np.testing.assert_allclose(seg[0][..., g * kg:(g + 1) * kg], want, rtol=1e-4,
                                   atol=1e-4)
    monkeypatch.setattr(conv_cpu, "SHIFT_BLOCK_ROWS", 200)  # an image or two a block
    previous = numba.get_num_threads()
    try:
        runs = []
        for nt in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(nt)
            runs.append(_run_cpu(x, f, (1, 1), dilations, pads, groups))
    finally:
        numba.set_num_threads(previous)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    monkeypatch.setattr(conv_cpu, "IMAGE_SEGMENT_MIN_WASTE", 2.0)  # the whole grid
    assert conv_cpu._image_segments(n, hp, wp, ho, wo, cg, kg) is None
    whole = _run_cpu(x, f, (1, 1), dilations, pads, groups)
    for a, b, c in zip(seg, runs[0], whole):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=2e-4)
        np.testing.assert_allclose(b, c, rtol=1e-5, atol=2e-4)


def test_per_image_segments_are_chosen_for_large_enough_gemms():
    """The Keras CNN's second conv (13x13x32 -> 64, 3x3 VALID) and a 7x7 SAME 64 -> 64 run
    per image; 16 -> 16 channels (too small a GEMM a call), a 56x56 SAME image (3.5% of its
    rows wasted) and a single image do not."""
    assert conv_cpu._image_segments(32, 13, 13, 11, 11, 32, 64) == (141, 8, 4)
    assert conv_cpu._image_segments(64, 9, 9, 7, 7, 64, 64) is not None
    assert conv_cpu._image_segments(64, 9, 9, 7, 7, 16, 16) is None
    assert conv_cpu._image_segments(8, 58, 58, 56, 56, 64, 64) is None
    assert conv_cpu._image_segments(1, 13, 13, 11, 11, 32, 64) is None


DIRECT_CASES = [  # patches of at most DIRECT_MAX_TAPS values, one group
    ((3, 11, 10, 1), (3, 3, 1, 8), (1, 1), (1, 1), ((1, 1), (1, 1)), 1),
    ((2, 9, 12, 1), (3, 3, 1, 5), (2, 1), (1, 2), ((1, 0), (0, 2)), 1),
    ((2, 7, 7, 3), (2, 2, 3, 4), (1, 2), (2, 1), ((0, 1), (1, 0)), 1),
    ((2, 6, 5, 12), (1, 1, 12, 7), (1, 1), (1, 1), ((0, 0), (0, 0)), 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", DIRECT_CASES)
def test_direct_and_im2col_schemes_agree(case, dtype, monkeypatch):
    x_shape, f_shape, strides, dilations, pads, groups = case
    rng = np.random.default_rng(7)
    x = rng.standard_normal(x_shape).astype(dtype)
    f = rng.standard_normal(f_shape).astype(dtype)
    assert conv_cpu.conv2d_plan(x.shape, f.shape, strides, groups) == "direct"
    direct = _run_cpu(x, f, strides, dilations, pads, groups)
    monkeypatch.setattr(conv_cpu, "DIRECT_BLOCK_BYTES", 1)  # a row a block, several partials
    small_blocks = _run_cpu(x, f, strides, dilations, pads, groups)
    monkeypatch.setattr(conv_cpu, "DIRECT_MAX_TAPS", 0)
    assert conv_cpu.conv2d_plan(x.shape, f.shape, strides, groups) == "im2col"
    im2col = _run_cpu(x, f, strides, dilations, pads, groups)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for other in (small_blocks, im2col):
        for a, b in zip(direct, other):
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)
    xg = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    dy = np.random.default_rng(0).standard_normal(direct[0].shape)  # _run_cpu's cotangent
    want = rconv.conv2d(xg, f.astype(np.float64), list(strides), "VALID",
                        dilations=list(dilations))
    np.testing.assert_allclose(direct[0], want, rtol=tol, atol=tol)
    v = rng.standard_normal(f.shape)  # <dy, conv(x, v)> = <dw, v>: the filter gradient
    lhs = np.vdot(dy.astype(dtype).astype(np.float64),
                  rconv.conv2d(xg, v, list(strides), "VALID", dilations=list(dilations)))
    assert abs(lhs - np.vdot(direct[2].astype(np.float64), v)) <= tol * np.vdot(
        np.abs(direct[2]), np.abs(v)) * 10


@pytest.mark.parametrize("case", CPU_CASES[:2] + [
    ((2, 9, 8, 3), (3, 3, 3, 4), (2, 1), (1, 1), ((1, 0), (1, 1)), 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cblas_and_numpy_gemm_agree(case, dtype):
    x_shape, f_shape, strides, dilations, pads, groups = case
    rng = np.random.default_rng(6)
    x = rng.standard_normal(x_shape).astype(dtype)
    f = rng.standard_normal(f_shape).astype(dtype)
    cb = conv_cpu._cblas()
    assert np.dtype(dtype) in cb.fns, "CBLAS not found: only numpy is tested"
    assert conv_cpu._numba_gemm_works(cb, np.dtype(dtype)), "the Numba route to CBLAS failed"
    with_blas = _run_cpu(x, f, strides, dilations, pads, groups)
    conv_cpu.use_blas(False)
    try:
        assert not conv_cpu._cblas().fns
        without = _run_cpu(x, f, strides, dilations, pads, groups)
    finally:
        conv_cpu.use_blas(True)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    for a, b in zip(with_blas, without):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_gemm_refuses_out_of_bounds_operands():
    a = np.zeros(10, np.float32)
    with pytest.raises(RuntimeError, match="outside its buffer"):
        conv_cpu.gemm(a, 5, 2, False, a, 0, 2, False, np.zeros(4, np.float32), 0, 2, 3, 2, 2, 0)
    with pytest.raises(RuntimeError, match="output lies outside"):
        conv_cpu.gemm(a, 0, 2, False, a, 0, 2, False, np.zeros(3, np.float32), 0, 2, 2, 2, 2, 0)
    offs, ones = np.array([0, 8]), np.ones(2)
    with pytest.raises(RuntimeError, match="an operand lies outside"):
        conv_cpu.tap_gemms(a, a, np.zeros(4, np.float32), False, False, 2, 2, 2, 2, 2, 2, offs,
                           np.zeros(2, np.int64), np.zeros(2, np.int64), ones)
    with pytest.raises(RuntimeError, match="output lies outside"):
        conv_cpu.tap_gemms(a, a, np.zeros(4, np.float32), False, False, 2, 2, 2, 2, 2, 2,
                           np.zeros(2, np.int64), np.zeros(2, np.int64), np.array([0, 1]), ones)


def test_results_are_deterministic():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 20, 20, 32)).astype(np.float32)
    f = rng.standard_normal((3, 3, 32, 32)).astype(np.float32)
    first = _ours(conv.conv2d, [x, f], 1, "SAME")
    for _ in range(2):
        again = _ours(conv.conv2d, [x, f], 1, "SAME")
        np.testing.assert_array_equal(again[0], first[0])
        for a, b in zip(again[1], first[1]):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", [  # several blocks each: shift, im2col (an image a block), direct
    ((8, 30, 30, 16), (3, 3, 16, 8), (1, 1), (1, 1), ((1, 1), (1, 1)), 1),
    ((3, 9, 8, 3), (3, 3, 3, 4), (2, 1), (1, 1), ((1, 0), (1, 1)), 1),
    ((16, 28, 28, 1), (3, 3, 1, 32), (1, 1), (1, 1), ((0, 0), (0, 0)), 1)])  # direct
def test_results_do_not_depend_on_the_thread_count(case):
    import numba

    x_shape, f_shape, strides, dilations, pads, groups = case
    rng = np.random.default_rng(12)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    previous = numba.get_num_threads()
    try:
        results = []
        for nt in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(nt)
            results.append(_run_cpu(x, f, strides, dilations, pads, groups))
    finally:
        numba.set_num_threads(previous)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


# ---- special values ----------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize(("shape", "tap"), [((1, 3, 3, 1), (0, 0, 0, 0)),
                                            ((2, 40, 40, 8), (2, 1, 3, 1))])
def test_depthwise_padding_times_a_non_finite_tap_is_nan(backend, shape, tap, bad):
    """0 * Inf at a SAME padding tap is NaN, as TF's, conv2d's and the float64 reference's:
    the kernel that skips the padding taps must not skip it (the larger shape takes the
    parallel kernel)."""
    rng = np.random.default_rng(5)
    x = np.ones(shape, np.float32) if shape[0] == 1 else rng.standard_normal(shape).astype(
        np.float32)
    f = rng.standard_normal((3, 3, shape[3], 2)).astype(np.float32)
    f[tap] = bad
    got = conv.depthwise_conv2d(backend.asarray(x), backend.asarray(f), [1, 1, 1, 1],
                                "SAME").numpy()
    with np.errstate(invalid="ignore", over="ignore"):
        want = rconv.depthwise_conv2d(x.astype(np.float64), f.astype(np.float64), [1, 1, 1, 1],
                                      "SAME")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).any()
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got[np.isinf(want)], want[np.isinf(want)])
    if shape[0] == 1 and bad == np.inf:  # the audit's case: NaN in the first row and column
        assert np.isnan(got[0, 0, :, 0]).all() and np.isnan(got[0, :, 0, 0]).all()


# ---- the tape ----------------------------------------------------------------------------------
def test_only_needed_gradients_are_computed(monkeypatch):
    calls = []
    real = conv_cpu.conv2d_bwd

    def spy(x, w, dy, strides, dilations, pads, groups, dx, dw, keep=None):
        calls.append((dx is not None, dw is not None))
        return real(x, w, dy, strides, dilations, pads, groups, dx, dw, keep)

    monkeypatch.setattr(conv_cpu, "conv2d_bwd", spy)
    x = ipu_gpu.constant(np.ones((1, 5, 5, 16), np.float32))
    w = ipu_gpu.Variable(np.ones((3, 3, 16, 2), np.float32))
    with ipu_gpu.GradientTape() as tape:
        y = conv.conv2d(x, w, 1, "SAME")
    (gw,) = tape.gradient(y, [w])
    assert calls == [(False, True)]
    assert gw.shape == (3, 3, 16, 2)


def test_second_derivatives_raise():
    x = ipu_gpu.constant(np.ones((1, 4, 4, 2), np.float32))
    w = ipu_gpu.constant(np.ones((2, 2, 2, 2), np.float32))
    with ipu_gpu.GradientTape() as outer:
        outer.watch(w)
        with ipu_gpu.GradientTape() as inner:
            inner.watch(w)
            y = ipu_gpu.reduce_sum(conv.conv2d(x, w, 1, "SAME"))
        with pytest.raises(LookupError, match="second derivatives of conv2d"):
            inner.gradient(y, w)


def test_static_arguments_from_tensors_and_arrays():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 5, 5, 6)).astype(np.float32)
    f = rng.standard_normal((3, 3, 2, 6)).astype(np.float32)
    a = conv.conv2d_transpose(x, f, ipu_gpu.constant([1, 10, 10, 2]), np.array([2, 2]),
                              padding=np.array([[0, 0], [1, 1], [1, 1], [0, 0]]))
    b = conv.conv2d_transpose(x, f, [1, 10, 10, 2], 2, [[0, 0], [1, 1], [1, 1], [0, 0]])
    np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---- properties ----------------------------------------------------------------------------------
@given(st.integers(1, 2), st.integers(3, 8), st.integers(3, 8), st.integers(1, 18),
       st.integers(1, 4), st.integers(1, 3), st.integers(1, 2), st.integers(1, 2),
       st.sampled_from(["SAME", "VALID"]), st.integers(0, 2**31 - 1))
def test_transpose_is_the_adjoint_of_conv2d(n, h, w, c, k, ks, s, d, padding, seed):
    """<conv2d(x, f), y> == <x, conv2d_transpose(y, f)> for every shape."""
    if (ks - 1) * d + 1 > min(h, w) and padding == "VALID":
        return
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, w, c))
    f = rng.standard_normal((ks, ks, c, k))
    yx = conv.conv2d(x, f, s, padding, dilations=d).numpy()
    y = rng.standard_normal(yx.shape)
    xt = conv.conv2d_transpose(y, f, list(x.shape), s, padding, dilations=d).numpy()
    assert np.vdot(yx, y) == pytest.approx(np.vdot(x, xt), rel=1e-9, abs=1e-9)


@given(st.integers(1, 3), st.integers(2, 9), st.integers(1, 20), st.integers(1, 3),
       st.integers(0, 2**31 - 1))
def test_depthwise_equals_grouped_conv2d(n, size, c, mult, seed):
    """depthwise_conv2d is conv2d with one group per input channel."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, size, size + 1, c))
    f = rng.standard_normal((3, 2, c, mult))
    grouped = f.reshape(3, 2, 1, c * mult)
    np.testing.assert_allclose(conv.depthwise_conv2d(x, f, [1, 1, 1, 1], "SAME").numpy(),
                               conv.conv2d(x, grouped, 1, "SAME").numpy(), rtol=1e-10,
                               atol=1e-10)


# ---- the GPU twin through the emulator ----------------------------------------------------------
@pytest.fixture
def gpu_conv(monkeypatch):
    return install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.conv_gpu"]).conv_gpu


GPU_CASES = CPU_CASES[:2] + [
    ((2, 9, 8, 3), (3, 3, 3, 4), (2, 1), (1, 1), ((1, 0), (1, 1)), 1),
    ((1, 6, 7, 4), (5, 5, 2, 4), (2, 2), (1, 1), ((2, 2), (2, 2)), 2),
]


@pytest.mark.parametrize("case", GPU_CASES)
def test_gpu_twin_matches_cpu_twin(gpu_conv, case):
    x_shape, f_shape, strides, dilations, pads, groups = case
    rng = np.random.default_rng(10)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    assert gpu_conv._cudnn() is None  # the im2col + GEMM path
    cpu = _run_cpu(x, f, strides, dilations, pads, groups)
    out = np.empty_like(cpu[0])
    gpu_conv.conv2d_fwd(x, f, strides, dilations, pads, groups, out)
    dy = np.random.default_rng(0).standard_normal(out.shape).astype(np.float32)
    dx, df = np.empty_like(x), np.empty_like(f)
    gpu_conv.conv2d_bwd(x, f, dy, strides, dilations, pads, groups, dx, df)
    for a, b in zip(cpu, (out, dx, df)):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-4)
    dx_only = np.empty_like(x)
    gpu_conv.conv2d_bwd(None, f, dy, strides, dilations, pads, groups, dx_only, None)
    np.testing.assert_array_equal(dx_only, dx)


@pytest.mark.parametrize(("strides", "dilations", "pads"), [
    ((1, 1), (1, 1), ((1, 1), (1, 1))), ((2, 1), (1, 1), ((0, 1), (1, 0))),
    ((1, 1), (2, 2), ((2, 2), (2, 2)))])
def test_gpu_depthwise_twin_matches_cpu_twin(gpu_conv, strides, dilations, pads):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    f = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
    n, h, w, c = x.shape
    ho = (h + sum(pads[0]) - 2 * dilations[0] - 1) // strides[0] + 1
    wo = (w + sum(pads[1]) - 2 * dilations[1] - 1) // strides[1] + 1
    outs = []
    for k in (conv_cpu, gpu_conv):
        out = np.empty((n, ho, wo, c * 2), np.float32)
        k.depthwise_conv2d_fwd(x, f, strides, dilations, pads, out)
        dy = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
        dx, df = np.empty_like(x), np.empty_like(f)
        k.depthwise_conv2d_bwd(x, f, dy, strides, dilations, pads, dx, df)
        outs.append((out, dx, df))
    for a, b in zip(*outs):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


# ---- on a real GPU --------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("seed", SEEDS[:8])
@pytest.mark.parametrize("cudnn", [True, False])
def test_public_api_gpu_matches_cpu(seed, cudnn):
    from conftest import require_gpu

    cupy = require_gpu()
    from ipu_gpu.kernels import conv_gpu

    x, f, strides, dilations, padding, fmt, _ = _case(seed)
    xin = x if fmt == "NHWC" else x.transpose(0, 3, 1, 2).copy()
    pad = _tf_padding_arg(padding, fmt)
    args = (list(strides), pad)
    kw = {"data_format": fmt, "dilations": list(dilations)}
    cpu = _ours(conv.conv2d, [xin, f], *args, **kw)
    conv_gpu.use_cudnn(cudnn)
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("gpu")
    try:
        ts = [ipu_gpu.constant(cupy.asarray(a)) for a in (xin, f)]
        with ipu_gpu.GradientTape() as tape:
            tape.watch(ts)
            y = conv.conv2d(*ts, *args, **kw)
        grads = tape.gradient(y, ts)
        gpu = [y.numpy(), [g.numpy() for g in grads]]
    finally:
        ipu_gpu.set_backend(previous)
        conv_gpu.use_cudnn(True)
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-4, atol=1e-4)
    for a, b in zip(gpu[1], cpu[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


# ---- the shift scheme's blocks and grid copies -------------------------------------------------
@pytest.mark.parametrize("rows,target", [(1, 4096), (5, 2), (7, 1), (26794, 4096), (100, 30),
                                         (4096, 4096), (4097, 4096)])
def test_shift_blocks_cover_the_rows_in_whole_rounds(rows, target):
    assert conv_cpu._blocks(0, target) == (1, 0)  # no rows: one empty block
    nblocks, blk = conv_cpu._blocks(rows, target)
    starts = [b * blk for b in range(nblocks)]
    assert starts[-1] < rows <= nblocks * blk  # every block holds rows, and all rows are covered
    if -(-rows // target) > 1 and rows >= conv_cpu.BLOCK_MULTIPLE * 2:
        assert nblocks % conv_cpu.BLOCK_MULTIPLE == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grid_fill_and_crop_match_numpy(dtype):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5, 7, 4)).astype(dtype)
    pads = ((2, 1), (0, 3))
    grid = conv_cpu._padded_grid(x, pads, lead=6)
    assert not grid[:6].any()
    np.testing.assert_array_equal(grid[6:].reshape(3, 8, 10, 4), conv_cpu._padded(x, pads))
    back = np.full_like(x, np.nan)
    body = grid[6:]
    for r0 in range(0, body.shape[0], 37):  # in blocks, as the GEMM blocks crop
        conv_cpu._grid_crop(body, back, r0, min(r0 + 37, body.shape[0]), 8, 10, 2, 0)
    np.testing.assert_array_equal(back, x)


@pytest.mark.parametrize("case", [  # shift, direct, im2col; several blocks each
    ((4, 20, 20, 16), (3, 3, 16, 8), 1, "SAME"),
    ((6, 30, 30, 1), (3, 3, 1, 16), 1, "VALID"),
    ((5, 17, 16, 3), (3, 3, 3, 8), 2, "SAME")])
@pytest.mark.parametrize("relu", [True, False])
def test_conv2d_bias_is_the_three_ops(case, relu):
    """Keras's Conv2D op: the output bit for bit that of conv2d, bias_add and relu; the input
    and filter gradients bit for bit too (the same convolution of the same relu gradient), the
    bias gradient to rounding (summed in blocks); all independent of the thread count."""
    import numba

    x_shape, f_shape, stride, padding = case
    rng = np.random.default_rng(21)
    x = ipu_gpu.constant(rng.standard_normal(x_shape).astype(np.float32))
    f = ipu_gpu.constant(rng.standard_normal(f_shape).astype(np.float32))
    b = ipu_gpu.constant(rng.standard_normal(f_shape[3]).astype(np.float32))

    def run(fused):
        with ipu_gpu.GradientTape() as tape:
            tape.watch([x, f, b])
            if fused:
                y = conv.conv2d_bias(x, f, b, stride, padding, relu=relu)
            else:
                y = ipu_gpu.nn.bias_add(conv.conv2d(x, f, stride, padding), b)
                y = ipu_gpu.nn.relu(y) if relu else y
            loss = ipu_gpu.reduce_sum(y * y)
        return [y.numpy()] + [g.numpy() for g in tape.gradient(loss, [x, f, b])]

    want = run(fused=False)
    previous = numba.get_num_threads()
    try:
        results = []
        for nt in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(nt)
            results.append(run(fused=True))
    finally:
        numba.set_num_threads(previous)
    for a, b_ in zip(*results):
        np.testing.assert_array_equal(a, b_)
    got = results[0]
    for k in range(3):
        np.testing.assert_array_equal(got[k], want[k], err_msg=f"result {k}")
    np.testing.assert_allclose(got[3], want[3], rtol=1e-5, atol=1e-3, err_msg="bias gradient")


@pytest.mark.parametrize("case", [((2, 9, 8, 16), (3, 3, 16, 5), 1, "SAME"),
                                  ((2, 9, 8, 1), (3, 3, 1, 4), 2, "VALID")])
@pytest.mark.parametrize("relu", [True, False])
def test_conv2d_bias_gpu_path_matches_cpu(gpu_conv, case, relu):
    """conv2d_bias's device path (the conv kernels of conv_gpu, then bias and relu as array
    ops) through the emulator, against the CPU path."""
    import types

    x_shape, f_shape, stride, padding = case
    rng = np.random.default_rng(22)
    x = rng.standard_normal(x_shape).astype(np.float32)
    f = rng.standard_normal(f_shape).astype(np.float32)
    b = rng.standard_normal(f_shape[3]).astype(np.float32)
    xp = types.SimpleNamespace(**{name: getattr(np, name) for name in (
        "ascontiguousarray", "empty", "where", "zeros", "sum")})  # not numpy: the device path
    static = {"strides": (stride, stride), "dilations": (1, 1), "padding": padding,
              "relu": relu}
    y_cpu, res_cpu = conv._conv2d_bias_forward(conv_cpu, np, x, f, b, **static)
    y_gpu, res_gpu = conv._conv2d_bias_forward(gpu_conv, xp, x, f, b, **static)
    np.testing.assert_allclose(y_gpu, y_cpu, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(y_cpu.shape).astype(np.float32)
    for a, c in zip(conv._conv2d_bias_backward(gpu_conv, xp, res_gpu, g, **static),
                    conv._conv2d_bias_backward(conv_cpu, np, res_cpu, g, **static)):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-4)
