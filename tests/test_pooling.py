"""2-D pooling (tf.nn.max_pool2d / avg_pool2d) against TensorFlow's CPU kernels, PyTorch and
the float64 reference on random shapes, strides, paddings and both layouts; gradients (the
tie rule included), special values, properties, the serial and parallel CPU kernels, and the
GPU twin through the CUDA emulator. The op-table rows (tests/opdb_pooling.py) add the
generic forward/VJP/error checks."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from cuda_emulator import install_fake_cupy
from hypothesis import given
from hypothesis import strategies as st
from reference import pooling as ref

import ipu_gpu
from ipu_gpu.kernels import pooling_cpu
from ipu_gpu.ops import pooling

OPS = {"max": pooling.max_pool2d, "avg": pooling.avg_pool2d}
REFS = {"max": (ref.max_pool2d, ref.max_pool2d_grad),
        "avg": (ref.avg_pool2d, ref.avg_pool2d_grad)}


def _ours(kind, x, *args, grad=None, **kw):
    """(output, input gradient for cotangent ``grad`` or ones) as numpy."""
    xt = ipu_gpu.constant(x)
    with ipu_gpu.GradientTape() as tape:
        tape.watch(xt)
        y = OPS[kind](xt, *args, **kw)
    g = np.ones(y.shape, x.dtype) if grad is None else grad
    return y.numpy(), tape.gradient(y, xt, output_gradients=ipu_gpu.constant(g)).numpy()


def _tf_padding(padding, fmt):
    """A TF padding argument: strings as they are, explicit ((t, b), (l, r)) as 4 pairs."""
    if isinstance(padding, str):
        return padding
    hw = [list(padding[0]), list(padding[1])]
    return [[0, 0]] + hw + [[0, 0]] if fmt == "NHWC" else [[0, 0], [0, 0]] + hw


def _nhwc(x, fmt):
    return x if fmt == "NHWC" else x.transpose(0, 2, 3, 1)


def _fmt(x_nhwc, fmt):
    return x_nhwc if fmt == "NHWC" else np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))


def _tf_pool(real_tf, kind, x_nhwc, ksize, strides, padding, grad_nhwc=None):
    """TF's CPU result in NHWC (its CPU gradient kernels take NHWC only)."""
    fn = real_tf.nn.max_pool2d if kind == "max" else real_tf.nn.avg_pool2d
    xt = real_tf.constant(x_nhwc)
    with real_tf.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt, ksize, strides, _tf_padding(padding, "NHWC"))
    g = real_tf.ones_like(y) if grad_nhwc is None else real_tf.constant(grad_nhwc)
    return y.numpy(), tape.gradient(y, xt, output_gradients=g).numpy()


def _random_case(seed, kind):
    """A random geometry: shape (NHWC), window, strides, padding, layout, whose output is
    not empty."""
    rng = np.random.default_rng(seed)
    n, h, w = int(rng.integers(1, 4)), int(rng.integers(1, 10)), int(rng.integers(1, 10))
    c = int(rng.choice([1, 2, 3, 5, 17]))
    kh, kw = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    sh, sw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    choices = ["SAME", "VALID", "explicit"] if kind == "max" else ["SAME", "VALID"]
    padding = str(rng.choice(choices))
    if padding == "VALID":
        kh, kw = min(kh, h), min(kw, w)
    elif padding == "explicit":
        padding = tuple(tuple(int(v) for v in rng.integers(0, k, 2)) for k in (kh, kw))
        kh = min(kh, h + sum(padding[0]))
        kw = min(kw, w + sum(padding[1]))
        padding = tuple(tuple(min(v, k - 1) for v in p) for p, k in zip(padding, (kh, kw)))
    fmt = str(rng.choice(["NHWC", "NCHW"]))
    window = [kh, kw] if rng.random() < 0.5 else (
        [1, kh, kw, 1] if fmt == "NHWC" else [1, 1, kh, kw])
    stride = [sh, sw] if kh != kw or sh != sw or rng.random() < 0.5 else sh
    return (n, h, w, c), window, stride, padding, fmt, rng


def _window_hw(window, fmt):
    if isinstance(window, int):
        return window, window
    if len(window) == 2:
        return tuple(window)
    return (window[1], window[2]) if fmt == "NHWC" else (window[2], window[3])


SEEDS = list(range(40))


# ---- against TensorFlow's CPU kernels -------------------------------------------------------
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("seed", SEEDS)
def test_matches_tensorflow(real_tf, kind, seed):
    shape, window, stride, padding, fmt, rng = _random_case(seed, kind)
    x = rng.standard_normal(shape).astype(np.float32)
    kh, kw = _window_hw(window, fmt)
    sh, sw = _window_hw(stride, fmt) if not isinstance(stride, int) else (stride, stride)
    want_y, _ = _tf_pool(real_tf, kind, x, [kh, kw], [sh, sw], padding)
    g = rng.standard_normal(want_y.shape).astype(np.float32)
    want_y, want_dx = _tf_pool(real_tf, kind, x, [kh, kw], [sh, sw], padding, g)
    pad = _tf_padding(padding, fmt)
    y, dx = _ours(kind, _fmt(x, fmt), window, stride, pad, grad=_fmt(g, fmt), data_format=fmt)
    np.testing.assert_allclose(_nhwc(y, fmt), want_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_nhwc(dx, fmt), want_dx, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 1), (0, 2))])
@pytest.mark.parametrize("shape", [(2, 5, 5, 3), (1, 6, 7, 20)])
def test_max_pool_ties_match_tensorflow(real_tf, shape, padding):
    """Many equal values per window: the gradient goes to the first maximum in row-major
    window order, exactly as TF's CPU MaxPoolGrad."""
    rng = np.random.default_rng(zlib.crc32(f"{shape}{padding}".encode()))
    x = rng.integers(-1, 2, shape).astype(np.float32)
    for ksize, strides in (([3, 3], [1, 1]), ([3, 2], [2, 1]), ([2, 2], [2, 2])):
        if isinstance(padding, str) or all(max(p) < k for p, k in zip(padding, ksize)):
            want_y, want_dx = _tf_pool(real_tf, "max", x, ksize, strides, padding)
            y, dx = _ours("max", x, ksize, strides, _tf_padding(padding, "NHWC"))
            np.testing.assert_array_equal(y, want_y)
            np.testing.assert_array_equal(dx, want_dx)


def test_tie_rule_examples():
    """All-equal windows: each output's gradient lands on its window's top-left element."""
    x = np.ones((1, 4, 4, 1), np.float32)
    _, dx = _ours("max", x, 3, 1, "VALID")
    np.testing.assert_array_equal(dx[0, :, :, 0], [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0],
                                                   [0, 0, 0, 0]])
    _, dx = _ours("max", x, 3, 2, "SAME")  # SAME on 4: windows [0, 3) and [2, 5)
    np.testing.assert_array_equal(dx[0, :, :, 0], [[1, 0, 1, 0], [0, 0, 0, 0], [1, 0, 1, 0],
                                                   [0, 0, 0, 0]])


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_dtypes_match_tensorflow(real_tf, kind, dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 7, 6, 4)).astype(dtype)
    want_y, want_dx = _tf_pool(real_tf, kind, x, [3, 3], [2, 2], "SAME")
    y, dx = _ours(kind, x, 3, 2, "SAME")
    assert y.dtype == dtype and dx.dtype == dtype
    tol = 2e-3 if dtype == np.float16 else 1e-12
    np.testing.assert_allclose(y, want_y, rtol=tol, atol=tol)
    np.testing.assert_allclose(dx, want_dx, rtol=tol, atol=tol)


def test_special_values_forward_match_tensorflow(real_tf):
    """NaN is skipped and padding never wins; a window of -inf (or NaN) alone gives the
    lowest finite value, as TF's CPU kernel."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 20, replace=False)] = np.nan
    flat[rng.choice(flat.size, 20, replace=False)] = -np.inf
    x[0, :2, :2, 0] = -np.inf
    x[1, :2, :2, 1] = np.nan
    for ksize, strides, padding in (([2, 2], [2, 2], "VALID"), ([3, 3], [1, 1], "SAME")):
        want, _ = _tf_pool(real_tf, "max", x, ksize, strides, padding)
        got = pooling.max_pool2d(x, ksize, strides, padding).numpy()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(
            got, ref.max_pool2d(x, ksize, strides, padding, lowest=np.finfo(np.float32).min))
    assert pooling.max_pool2d(x, 2, 2, "VALID").numpy()[0, 0, 0, 0] == np.finfo(np.float32).min
    lowest16 = pooling.max_pool2d(np.full((1, 2, 2, 1), -np.inf, np.float16), 2, 2, "VALID")
    assert lowest16.numpy().item() == np.finfo(np.float16).min


def test_gradient_goes_to_the_element_the_forward_returned():
    """Where a window opens with NaN, TF's CPU MaxPoolGrad sends the gradient to the NaN
    while its forward returns the maximum of the rest; we send it to that maximum."""
    x = np.array([np.nan, 1, 3, 2], np.float32).reshape(1, 2, 2, 1)
    y, dx = _ours("max", x, 2, 1, "VALID")
    assert y.item() == 3
    np.testing.assert_array_equal(dx.reshape(-1), [0, 0, 1, 0])
    _, dx = _ours("max", np.full((1, 2, 2, 1), -np.inf, np.float32), 2, 1, "VALID")
    np.testing.assert_array_equal(dx.reshape(-1), [1, 0, 0, 0])  # the window's first element


def test_explicit_padding_with_an_empty_input_gives_the_lowest_value(real_tf):
    x = np.zeros((2, 0, 4, 3), np.float32)
    pad = [[0, 0], [1, 1], [0, 0], [0, 0]]
    want = real_tf.nn.max_pool2d(x, 2, 1, pad).numpy()
    y, dx = _ours("max", x, 2, 1, pad)
    assert y.shape == want.shape == (2, 1, 3, 3)
    np.testing.assert_array_equal(y, want)
    assert dx.shape == x.shape


# ---- against PyTorch --------------------------------------------------------------------------
def _torch_pool(torch, kind, x_nhwc, ksize, strides, pads, grad_nhwc):
    """torch's result (NHWC numpy) with TF's windows: ``pads`` ((t, b), (l, r)). Symmetric
    padding uses torch's own padding (count_include_pad=False: the divisor counts only
    in-bounds elements, as TF); other padding is added explicitly (-inf for max; for
    average a sum pool over a count pool, both with divisor_override=1)."""
    F = torch.nn.functional
    t = torch.from_numpy(np.ascontiguousarray(x_nhwc.transpose(0, 3, 1, 2))).requires_grad_()
    (pt, pb), (pl, pr) = pads
    if pt == pb and pl == pr and 2 * pt <= ksize[0] and 2 * pl <= ksize[1]:
        if kind == "max":
            y = F.max_pool2d(t, ksize, strides, padding=(pt, pl))
        else:
            y = F.avg_pool2d(t, ksize, strides, padding=(pt, pl), count_include_pad=False)
    elif kind == "max":
        y = F.max_pool2d(F.pad(t, (pl, pr, pt, pb), value=-np.inf), ksize, strides)
    else:
        ones = torch.ones_like(t)
        total = F.avg_pool2d(F.pad(t, (pl, pr, pt, pb)), ksize, strides, divisor_override=1)
        count = F.avg_pool2d(F.pad(ones, (pl, pr, pt, pb)), ksize, strides, divisor_override=1)
        y = total / count
    y.backward(torch.from_numpy(np.ascontiguousarray(grad_nhwc.transpose(0, 3, 1, 2))))
    return (y.detach().numpy().transpose(0, 2, 3, 1), t.grad.numpy().transpose(0, 2, 3, 1))


def _same_pads(n, k, s):
    out = -(-n // s)
    total = max(0, (out - 1) * s + k - n)
    return total // 2, total - total // 2


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("seed", SEEDS[:24])
def test_matches_torch(kind, seed):
    torch = pytest.importorskip("torch")
    shape, window, stride, padding, fmt, rng = _random_case(seed + 1000, kind)
    kh, kw = _window_hw(window, fmt)
    sh, sw = _window_hw(stride, fmt) if not isinstance(stride, int) else (stride, stride)
    if padding == "SAME":
        pads = (_same_pads(shape[1], kh, sh), _same_pads(shape[2], kw, sw))
    elif padding == "VALID":
        pads = ((0, 0), (0, 0))
    else:
        pads = padding
    # ties (small integers) for max: torch's CPU kernel also keeps the first maximum
    x = (rng.integers(-2, 3, shape) if kind == "max" and seed % 2 else
         rng.standard_normal(shape)).astype(np.float32)
    y0 = ref.max_pool2d(x, [kh, kw], [sh, sw], padding if isinstance(padding, str)
                        else _tf_padding(padding, "NHWC"))
    g = rng.standard_normal(y0.shape).astype(np.float32)
    want_y, want_dx = _torch_pool(torch, kind, x, (kh, kw), (sh, sw), pads, g)
    y, dx = _ours(kind, _fmt(x, fmt), window, stride, _tf_padding(padding, fmt),
                  grad=_fmt(g, fmt), data_format=fmt)
    np.testing.assert_allclose(_nhwc(y, fmt), want_y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_nhwc(dx, fmt), want_dx, rtol=1e-5, atol=1e-6)


# ---- against the float64 reference (gradients included) ------------------------------------
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("seed", SEEDS[:16])
def test_gradient_matches_reference(kind, seed):
    shape, window, stride, padding, fmt, rng = _random_case(seed + 2000, kind)
    x = rng.standard_normal(shape)
    pad = _tf_padding(padding, fmt)
    fwd, bwd = REFS[kind]
    xin = _fmt(x, fmt)
    y_ref = fwd(xin, window, stride, pad, fmt)
    g = rng.standard_normal(y_ref.shape)
    y, dx = _ours(kind, xin, window, stride, pad, grad=g, data_format=fmt)
    np.testing.assert_allclose(y, y_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, bwd(xin, g, window, stride, pad, fmt), rtol=1e-12,
                               atol=1e-12)


def test_second_derivative_raises():
    x = ipu_gpu.constant(np.random.default_rng(5).standard_normal((1, 4, 4, 2)))
    for kind in ("max", "avg"):
        with ipu_gpu.GradientTape() as outer:
            outer.watch(x)
            with ipu_gpu.GradientTape() as inner:
                inner.watch(x)
                y = ipu_gpu.reduce_sum(OPS[kind](x, 2, 2, "VALID"))
            with pytest.raises(LookupError, match=f"second derivatives of {kind}_pool2d"):
                inner.gradient(y, x)


# ---- layouts, folding, arguments ---------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
@pytest.mark.parametrize("shape", [(3, 5, 6, 2), (2, 5, 6, 20), (1, 4, 4, 1), (1, 9, 7, 3)])
def test_kernel_layouts_agree_bit_for_bit(monkeypatch, shape, fmt):
    """The three ways the op hands a tensor to the kernels (as it is, batch folded into the
    channels, planes) give identical outputs and gradients, ties and NaN included."""
    rng = np.random.default_rng(6)
    x = rng.integers(-2, 3, shape).astype(np.float32)
    x.reshape(-1)[::5] = rng.standard_normal(x.reshape(-1)[::5].size)
    x.reshape(-1)[::9] = np.nan
    x = _fmt(x, fmt)
    runs = []
    for layout in ("direct", "channels", "planar"):
        if layout == "direct" and fmt == "NCHW":
            continue
        monkeypatch.setattr(pooling, "_kernel_layout", lambda *_, layout=layout: layout)
        runs.append([a for kind in ("max", "avg") for args in ((3, 2, "SAME"), (2, 1, "VALID"))
                     for a in _ours(kind, x, *args, data_format=fmt)])
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize(("fmt", "shape", "layout"), [
    ("NHWC", (2, 4, 4, 16), "direct"), ("NHWC", (4, 4, 4, 4), "channels"),
    ("NHWC", (1, 4, 4, 3), "planar"), ("NCHW", (8, 64, 4, 4), "planar")])
def test_kernel_layout_choice(fmt, shape, layout):
    n, c = shape[0], shape[3] if fmt == "NHWC" else shape[1]
    assert pooling._kernel_layout(fmt, n, c) == layout


def test_layouts_agree_and_arguments_normalise():
    x = np.random.default_rng(7).standard_normal((2, 6, 5, 3)).astype(np.float32)
    xc = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    for fn in OPS.values():
        base = fn(x, [3, 2], [2, 1], "SAME").numpy()
        np.testing.assert_array_equal(fn(x, (3, 2), np.array([2, 1]), "SAME").numpy(), base)
        np.testing.assert_array_equal(fn(x, [1, 3, 2, 1], [1, 2, 1, 1], "SAME").numpy(), base)
        np.testing.assert_array_equal(fn(x, [3, 2], [2, 1], "SAME", data_format=None).numpy(),
                                      base)
        nchw = fn(xc, [1, 1, 3, 2], [1, 1, 2, 1], "SAME", data_format="NCHW").numpy()
        np.testing.assert_array_equal(nchw, base.transpose(0, 3, 1, 2))
        view = fn(x.transpose(0, 2, 1, 3), 2, 1, "VALID").numpy()  # a non-contiguous input
        np.testing.assert_array_equal(
            view, fn(np.ascontiguousarray(x.transpose(0, 2, 1, 3)), 2, 1, "VALID").numpy())
        assert fn(ipu_gpu.constant(x), 2, 2, "VALID").dtype == np.float32


def test_forward_without_a_tape_equals_forward_with_one():
    x = np.random.default_rng(8).standard_normal((2, 9, 9, 4)).astype(np.float32)
    plain = pooling.max_pool2d(x, 3, 2, "SAME").numpy()
    np.testing.assert_array_equal(plain, _ours("max", x, 3, 2, "SAME")[0])


def test_empty_outputs_have_zero_gradients():
    x = np.random.default_rng(9).standard_normal((1, 4, 4, 2)).astype(np.float32)
    for kind in ("max", "avg"):
        y, dx = _ours(kind, x, [5, 2], 2, "VALID")
        assert y.shape == (1, 0, 2, 2)
        np.testing.assert_array_equal(dx, np.zeros_like(x))
        y, dx = _ours(kind, x[:0], 2, 2, "SAME")
        assert y.shape == (0, 2, 2, 2) and dx.shape == (0, 4, 4, 2)


# ---- properties -----------------------------------------------------------------------------
_geometry = st.tuples(st.integers(1, 3), st.integers(1, 7), st.integers(1, 7),
                      st.integers(1, 4), st.integers(1, 4), st.integers(1, 4),
                      st.integers(1, 3), st.integers(1, 3), st.sampled_from(["SAME", "VALID"]),
                      st.integers(0, 2**31 - 1))


def _prop_case(geo):
    n, h, w, c, kh, kw, sh, sw, padding, seed = geo
    if padding == "VALID":
        kh, kw = min(kh, h), min(kw, w)
    x = np.random.default_rng(seed).standard_normal((n, h, w, c))
    return x, [kh, kw], [sh, sw], padding


@given(_geometry)
def test_window_weights_sum_to_one(geo):
    """With a cotangent of ones, each output hands out exactly 1: the input gradient sums to
    the number of outputs, for max and for average pooling."""
    x, k, s, p = _prop_case(geo)
    for kind in ("max", "avg"):
        y, dx = _ours(kind, x, k, s, p)
        assert dx.sum() == pytest.approx(y.size, rel=1e-12, abs=1e-12)
        assert (dx >= 0).all()


@given(_geometry)
def test_max_dominates_average_and_constants_are_fixed_points(geo):
    x, k, s, p = _prop_case(geo)
    mx = pooling.max_pool2d(x, k, s, p).numpy()
    av = pooling.avg_pool2d(x, k, s, p).numpy()
    assert (mx >= av - 1e-12).all()
    const = np.full_like(x, 1.25)
    np.testing.assert_array_equal(pooling.avg_pool2d(const, k, s, p).numpy(), 1.25)
    np.testing.assert_array_equal(pooling.max_pool2d(const, k, s, p).numpy(), 1.25)


@given(_geometry)
def test_unit_window_is_the_identity_and_gradient_lands_on_maxima(geo):
    x, k, s, p = _prop_case(geo)
    for kind in ("max", "avg"):
        y, dx = _ours(kind, x, 1, 1, p)
        np.testing.assert_array_equal(y, x)
        np.testing.assert_array_equal(dx, np.ones_like(x))
    y, dx = _ours("max", x, k, s, p)
    assert np.isin(x[dx > 0], y).all()


# ---- the CPU kernels: whole 3x3 / 2x2 windows -------------------------------------------------
def _max_rule(x, k, s, pad, floor):
    """TF's CPU rule, window by window in numpy: the running maximum starts at ``floor`` and
    takes an element only when strictly greater (NaN never), its flat index h * W + w
    recorded (the window's first element when nothing beat ``floor``)."""
    n, h, w, c = x.shape
    oh, ow = (h + pad - k) // s + 1, (w + pad - k) // s + 1
    out, arg = np.empty((n, oh, ow, c), x.dtype), np.empty((n, oh, ow, c), np.int32)
    for i in range(oh):
        for j in range(ow):
            h0, w0 = max(i * s - pad, 0), max(j * s - pad, 0)
            m = np.full((n, c), floor, x.dtype)
            a = np.full((n, c), h0 * w + w0, np.int32)
            for hh in range(h0, min(i * s - pad + k, h)):
                for ww in range(w0, min(j * s - pad + k, w)):
                    v = x[:, hh, ww]
                    better = v > m
                    m, a = np.where(better, v, m), np.where(better, hh * w + ww, a)
            out[:, i, j], arg[:, i, j] = m, a
    return out, arg


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("k", "s"), [(3, 1), (3, 2), (2, 1), (2, 2)])
def test_whole_window_paths_follow_the_first_maximum_rule(k, s, dtype):
    """The unrolled 3x3 and 2x2 windows give the general rule's values and indices bit for
    bit, ties, NaN, -inf and the lowest value included (edge windows take the general loop:
    top/left padding 1), and the gradient lands on those indices."""
    rng = np.random.default_rng(k * 10 + s)
    x = rng.integers(-2, 3, (2, 9, 8, 19)).astype(dtype)
    flat = x.reshape(-1)
    floor = np.finfo(dtype).min
    for value, every in ((np.nan, 7), (-np.inf, 11), (floor, 13)):
        flat[rng.choice(flat.size, flat.size // every, replace=False)] = value
    x[0, 2:5, 2:5, :3] = np.nan  # whole windows of NaN
    x[1, 2:5, 2:5, :3] = -np.inf
    want, want_arg = _max_rule(x, k, s, 1, floor)
    out, arg = np.empty_like(want), np.empty_like(want_arg)
    pooling_cpu.max_pool_fwd(x, out, arg, k, k, s, s, 1, 1, dtype(floor))
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(arg, want_arg)
    plain = np.empty_like(want)
    pooling_cpu.max_pool_fwd(x, plain, None, k, k, s, s, 1, 1, dtype(floor))
    np.testing.assert_array_equal(plain, want)
    g = rng.standard_normal(want.shape).astype(dtype)
    dx = np.empty_like(x)
    pooling_cpu.max_pool_bwd(g, arg, dx, k, k, s, s, 1, 1)
    want_dx = np.zeros_like(x).reshape(2, -1, 19)
    for b in range(2):
        for ch in range(19):
            np.add.at(want_dx[b, :, ch], want_arg[b, ..., ch].reshape(-1),
                      g[b, ..., ch].reshape(-1))
    np.testing.assert_array_equal(dx, want_dx.reshape(x.shape))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("k", "s"), [(3, 1), (3, 2), (2, 1), (2, 2)])
def test_whole_window_average_keeps_the_column_order(k, s, dtype):
    """The unrolled 3x3 and 2x2 average windows sum each column from zero down its rows,
    then the columns from zero left to right, and divide by the in-bounds count in the dtype:
    the general loop's bits (-0 and inf included; NaN compared as NaN)."""
    rng = np.random.default_rng(k * 10 + s + 1)
    x = rng.integers(-2, 3, (2, 9, 8, 19)).astype(dtype)
    x[x == 0] = -0.0
    x.reshape(-1)[::3] += rng.standard_normal(x.reshape(-1)[::3].size).astype(dtype)
    x.reshape(-1)[::37] = np.inf
    x[1, :4, :4, :2] = -0.0  # windows of -0 only: -0 + -0, then zero + that is +0
    n_h, n_w = x.shape[1:3]
    oh, ow = (n_h + 1 - k) // s + 1, (n_w + 1 - k) // s + 1  # top/left padding 1
    want = np.empty((2, oh, ow, 19), dtype)
    zero = dtype(0)
    for i in range(oh):
        for j in range(ow):
            h0, h1 = max(i * s - 1, 0), min(i * s - 1 + k, n_h)
            w0, w1 = max(j * s - 1, 0), min(j * s - 1 + k, n_w)
            acc = np.full((2, 19), zero)
            for w in range(w0, w1):
                col = np.full((2, 19), zero)
                for h in range(h0, h1):
                    col = col + x[:, h, w]
                acc = acc + col
            want[:, i, j] = acc / dtype((h1 - h0) * (w1 - w0))
    out = np.empty_like(want)
    pooling_cpu.avg_pool_fwd(x, out, k, k, s, s, 1, 1)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(want))


# ---- the CPU kernels: serial and parallel drivers ----------------------------------------------
@pytest.mark.parametrize("planar", [False, True])
def test_parallel_and_serial_kernels_agree(planar):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 64, 64, 32)).astype(np.float32)
    out_shape = (4, 32, 32, 32)
    if planar:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2)).reshape(128, 64, 64, 1)
        out_shape = (128, 32, 32, 1)
    geo = (3, 3, 2, 2, 1, 0)
    assert np.prod(out_shape) * 9 >= pooling_cpu.PARALLEL_MIN_WORK
    g = rng.standard_normal(out_shape).astype(np.float32)
    floor = np.float32(np.finfo(np.float32).min)
    results = []
    for fwd, bwd in ((pooling_cpu._forward_serial, pooling_cpu._backward_serial),
                     (pooling_cpu._forward_parallel, pooling_cpu._backward_parallel)):
        outs = []
        for kind in (pooling_cpu.MAX, pooling_cpu.MAX_ARG, pooling_cpu.AVG):
            out, arg = np.empty(out_shape, np.float32), np.empty(out_shape, np.int32)
            fwd(x, out, arg if kind == pooling_cpu.MAX_ARG else pooling_cpu._NO_ARG, kind,
                *geo, floor)
            outs.append(out)
            if kind == pooling_cpu.MAX_ARG:
                outs.append(arg)
                dx = np.empty_like(x)
                bwd(g, arg, dx, True, *geo)
                outs.append(dx)
        dx = np.empty_like(x)
        bwd(g, pooling_cpu._NO_ARG, dx, False, *geo)
        outs.append(dx)
        results.append(outs)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(results[0][0], results[0][1])  # with and without arg
    pads = [[0, 0], [1, 0], [0, 1], [0, 0]]  # geo's windows in TF's terms
    np.testing.assert_array_equal(results[0][0], ref.max_pool2d(x, 3, 2, pads))
    np.testing.assert_allclose(results[0][4], ref.avg_pool2d(x, 3, 2, pads), rtol=1e-6,
                               atol=1e-6)


# ---- the GPU twin through the CUDA emulator ----------------------------------------------------
@pytest.fixture
def gpu_pool(monkeypatch):
    return install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.pooling_gpu"]).pooling_gpu


def _twin_outputs(k, x, out_shape, geo, g):
    floor = x.dtype.type(np.finfo(x.dtype).min)
    out, arg = np.empty(out_shape, x.dtype), np.empty(out_shape, np.int32)
    plain = np.empty(out_shape, x.dtype)
    k.max_pool_fwd(x, out, arg, *geo, floor)
    k.max_pool_fwd(x, plain, None, *geo, floor)
    dmax, davg, avg = np.empty_like(x), np.empty_like(x), np.empty(out_shape, x.dtype)
    k.max_pool_bwd(g, arg, dmax, *geo)
    k.avg_pool_fwd(x, avg, *geo)
    k.avg_pool_bwd(g, davg, *geo)
    return out, arg, plain, dmax, avg, davg


TWIN_CASES = [  # input shape, (kh, kw, sh, sw, pt, pl), output (OH, OW)
    ((2, 5, 6, 3), (2, 2, 2, 2, 0, 0), (2, 3)),
    ((1, 7, 6, 4), (3, 2, 2, 1, 1, 0), (4, 6)),
    ((2, 4, 5, 1), (3, 3, 1, 1, 1, 1), (4, 5)),
    ((1, 3, 2, 2), (5, 5, 1, 1, 2, 2), (3, 2)),
    ((1, 6, 7, 2), (2, 3, 3, 2, 0, 1), (2, 4)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", TWIN_CASES)
def test_gpu_twin_matches_cpu_twin(gpu_pool, case, dtype):
    shape, geo, (oh, ow) = case
    rng = np.random.default_rng(11)
    x = rng.integers(-2, 3, shape).astype(dtype)  # ties everywhere
    flat = x.reshape(-1)
    flat[::7] = rng.standard_normal(flat[::7].size)
    flat[3::11] = np.nan
    flat[5::13] = -np.inf
    out_shape = (shape[0], oh, ow, shape[3])
    g = rng.standard_normal(out_shape).astype(dtype)
    cpu = _twin_outputs(pooling_cpu, x, out_shape, geo, g)
    gpu = _twin_outputs(gpu_pool, x, out_shape, geo, g)
    for a, b in zip(cpu, gpu):  # the same order of operations: equal bit for bit
        np.testing.assert_array_equal(b, a)


def test_gpu_twin_grid_stride_covers_everything(gpu_pool, monkeypatch):
    monkeypatch.setattr(gpu_pool, "MAX_BLOCKS", 1)  # one block of 128 threads, 300+ elements
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 8, 7, 3)).astype(np.float32)
    geo, out_shape = (3, 3, 2, 2, 1, 1), (2, 4, 4, 3)
    g = rng.standard_normal(out_shape).astype(np.float32)
    for a, b in zip(_twin_outputs(pooling_cpu, x, out_shape, geo, g),
                    _twin_outputs(gpu_pool, x, out_shape, geo, g)):
        np.testing.assert_array_equal(b, a)


def test_gpu_twin_empty_shapes(gpu_pool):
    x = np.zeros((1, 4, 4, 2), np.float32)
    out = np.empty((1, 0, 2, 2), np.float32)
    gpu_pool.avg_pool_fwd(x, out, 5, 2, 2, 2, 0, 0)
    dx = np.full_like(x, 7)
    gpu_pool.avg_pool_bwd(out, dx, 5, 2, 2, 2, 0, 0)
    np.testing.assert_array_equal(dx, 0)
    gpu_pool.max_pool_bwd(out, np.empty(out.shape, np.int32), dx, 5, 2, 2, 2, 0, 0)
    np.testing.assert_array_equal(dx, 0)


# ---- on a real GPU ------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("seed", SEEDS[:6])
def test_public_api_gpu_matches_cpu(seed, kind, dtype):
    from conftest import require_gpu

    cupy = require_gpu()
    shape, window, stride, padding, fmt, rng = _random_case(seed + 3000, kind)
    x = _fmt(rng.integers(-3, 4, shape).astype(dtype), fmt)  # ties: the tie rule too
    pad = _tf_padding(padding, fmt)
    y0 = OPS[kind](x, window, stride, pad, data_format=fmt)
    g = rng.standard_normal(y0.shape).astype(dtype)
    cpu = _ours(kind, x, window, stride, pad, grad=g, data_format=fmt)
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("gpu")
    try:
        xt = ipu_gpu.constant(cupy.asarray(x))
        with ipu_gpu.GradientTape() as tape:
            tape.watch(xt)
            y = OPS[kind](xt, window, stride, pad, data_format=fmt)
        dx = tape.gradient(y, xt, output_gradients=ipu_gpu.constant(cupy.asarray(g)))
        gpu = (y.numpy(), dx.numpy())
    finally:
        ipu_gpu.set_backend(previous)
    for a, b in zip(cpu, gpu):  # the same kernels' arithmetic: equal bit for bit
        np.testing.assert_array_equal(b, a)
