"""The CPU depthwise kernels (kernels/conv_cpu.py): the unrolled 3x3 multiplier-1 paths give
the general loops' tap-ordered sums bit for bit (a numpy twin of that order is the
reference: forward, input gradient and the serial filter gradient), borders and other
filters included; float64 reference for the rest; the same bits for one and two threads."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from ipu_gpu.kernels import conv_cpu


def _tap_ordered(x, f, dilation, pads):
    """out = sum over taps (i, j) in row-major order of x shifted times f[i, j], added from
    zero one float32 product at a time (the kernels' order; stride 1, multiplier 1)."""
    kh, kw = f.shape[:2]
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    ho = xp.shape[1] - dilation * (kh - 1)
    wo = xp.shape[2] - dilation * (kw - 1)
    out = np.zeros((x.shape[0], ho, wo, x.shape[3]), x.dtype)
    for i in range(kh):
        for j in range(kw):
            win = xp[:, i * dilation:i * dilation + ho, j * dilation:j * dilation + wo]
            out += win * f[i, j, :, 0]
    return out


def _input_gradient(dy, f, dilation, pads, shape):
    """dx in the kernels' order: each input collects dy at (y - i*d, x - j*d) times f[i, j]
    for the taps in row-major order (stride 1, multiplier 1)."""
    kh, kw = f.shape[:2]
    n, h, w, c = shape
    (pt, pb), (pl, pr) = pads
    span_h, span_w = dilation * (kh - 1), dilation * (kw - 1)
    dyp = np.pad(dy, ((0, 0), (span_h, span_h), (span_w, span_w), (0, 0)))
    dx = np.zeros(shape, dy.dtype)
    for i in range(kh):
        for j in range(kw):
            top, left = pt + span_h - i * dilation, pl + span_w - j * dilation
            dx += dyp[:, top:top + h, left:left + w] * f[i, j, :, 0]
    return dx


CASES = [((2, 9, 8, 19), 1, ((1, 1), (1, 1))), ((1, 12, 11, 8), 1, ((0, 2), (2, 0))),
         ((2, 13, 12, 5), 2, ((2, 2), (2, 2))), ((1, 7, 7, 16), 1, ((0, 0), (0, 0))),
         ((2, 40, 40, 24), 1, ((1, 1), (1, 1)))]  # the last one takes the parallel kernels


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "dilation", "pads"), CASES)
def test_3x3_multiplier_1_is_the_tap_ordered_sum_bitwise(shape, dilation, pads, dtype):
    rng = np.random.default_rng(sum(shape) + dilation)
    x = rng.standard_normal(shape).astype(dtype)
    f = rng.standard_normal((3, 3, shape[3], 1)).astype(dtype)
    want = _tap_ordered(x, f, dilation, pads)
    out = np.empty_like(want)
    conv_cpu.depthwise_conv2d_fwd(x, f, (1, 1), (dilation, dilation), pads, out)
    np.testing.assert_array_equal(out, want)
    dy = rng.standard_normal(want.shape).astype(dtype)
    dx, df = np.empty_like(x), np.empty_like(f)
    conv_cpu.depthwise_conv2d_bwd(x, f, dy, (1, 1), (dilation, dilation), pads, dx, df)
    np.testing.assert_array_equal(dx, _input_gradient(dy, f, dilation, pads, shape))
    x64, f64, dy64 = (a.astype(np.float64) for a in (x, f, dy))
    xp = np.pad(x64, ((0, 0), pads[0], pads[1], (0, 0)))
    ho, wo = want.shape[1:3]
    want_df = np.array([[np.einsum("nhwc,nhwc->c", xp[:, i * dilation:i * dilation + ho,
                                                     j * dilation:j * dilation + wo], dy64)
                         for j in range(3)] for i in range(3)])[..., None]
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(df, want_df, rtol=tol, atol=tol)
    if dy.size * 9 < conv_cpu.PARALLEL_MIN_WORK:  # the serial kernel: one sum a filter value
        np.testing.assert_array_equal(df, _filter_gradient(x, dy, dilation, pads))


def _filter_gradient(x, dy, dilation, pads):
    """df[i, j] = the products x shifted by tap (i, j) times dy added from zero one output
    (n, y, xo) at a time in row-major order: the serial kernel's order."""
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    n, ho, wo, c = dy.shape
    df = np.zeros((3, 3, c, 1), x.dtype)
    for i in range(3):
        for j in range(3):
            win = xp[:, i * dilation:i * dilation + ho, j * dilation:j * dilation + wo]
            terms = (win * dy).reshape(-1, c)
            for t in terms:
                df[i, j, :, 0] += t
    return df


@pytest.mark.parametrize(("strides", "mult", "k"), [((2, 2), 1, 3), ((1, 1), 2, 3),
                                                    ((1, 2), 1, 2), ((1, 1), 1, 5)])
def test_other_filters_match_the_float64_reference(strides, mult, k):
    """Strided, multiplier 2, 2x2 and 5x5 filters take the general loops."""
    rng = np.random.default_rng(k * 10 + mult)
    x = rng.standard_normal((2, 11, 10, 6)).astype(np.float32)
    f = rng.standard_normal((k, k, 6, mult)).astype(np.float32)
    pads = ((1, k - 2), (k - 2, 1)) if k > 2 else ((0, 1), (1, 0))
    xp = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    sh, sw = strides
    ho, wo = (xp.shape[1] - k) // sh + 1, (xp.shape[2] - k) // sw + 1
    want = np.zeros((2, ho, wo, 6, mult))
    for i in range(k):
        for j in range(k):
            win = xp[:, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw]
            want += win[..., None] * f[i, j].astype(np.float64)
    out = np.empty((2, ho, wo, 6 * mult), np.float32)
    conv_cpu.depthwise_conv2d_fwd(x, f, strides, (1, 1), pads, out)
    np.testing.assert_allclose(out, want.reshape(out.shape), rtol=1e-5, atol=1e-5)
    dy = rng.standard_normal(out.shape)
    want_dx = np.zeros_like(xp)
    dy5 = dy.reshape(2, ho, wo, 6, mult)
    for i in range(k):
        for j in range(k):
            want_dx[:, i:i + sh * (ho - 1) + 1:sh, j:j + sw * (wo - 1) + 1:sw] += (
                dy5 * f[i, j].astype(np.float64)).sum(-1)
    dx, df = np.empty_like(x), np.empty_like(f)
    conv_cpu.depthwise_conv2d_bwd(x, f, dy.astype(np.float32), strides, (1, 1), pads, dx, df)
    h0, w0 = pads[0][0], pads[1][0]
    np.testing.assert_allclose(dx, want_dx[:, h0:h0 + 11, w0:w0 + 10], rtol=1e-5, atol=1e-5)


def test_same_bits_for_one_and_two_threads():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 40, 40, 24)).astype(np.float32)
    f = rng.standard_normal((3, 3, 24, 1)).astype(np.float32)
    dy = rng.standard_normal((2, 40, 40, 24)).astype(np.float32)
    pads = ((1, 1), (1, 1))
    assert dy.size * 9 >= conv_cpu.PARALLEL_MIN_WORK
    runs = []
    before = numba.get_num_threads()
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            out, dx, df = np.empty_like(dy), np.empty_like(x), np.empty_like(f)
            conv_cpu.depthwise_conv2d_fwd(x, f, (1, 1), (1, 1), pads, out)
            conv_cpu.depthwise_conv2d_bwd(x, f, dy, (1, 1), (1, 1), pads, dx, df)
            runs.append((out, dx, df))
    finally:
        numba.set_num_threads(before)
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
