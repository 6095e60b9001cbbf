"""Op-table rows for the convolutions (tests/opdb.py collects ``ROWS``): conv2d,
conv2d_bias (Keras's Conv2D: conv2d + bias_add (+ relu) in one op), depthwise_conv2d,
conv2d_transpose and conv1d, with samples covering the schemes (shift: stride 1 with >= 16
channels a group; direct: one group, at most 12 values a patch; im2col: the rest), grouped
filters, strides, dilations, SAME/VALID/explicit padding, NHWC/NCHW, 1x1 and 5x5 filters,
batch 1 and 0, and an empty output."""

from __future__ import annotations

import numpy as np
from opdb import F16, F32, F64, FLOATS, I32, ErrorInput, OpInfo, Sample, make
from reference import conv as rconv

from ipu_gpu.ops import conv

# sums of up to a few hundred products: float32 rounding reaches ~1e-5 near zero
TOL = {F32: (2e-5, 5e-5), F16: (5e-3, 1e-2)}


def _x(rng, shape, dtype):
    return make(rng, shape, dtype, -1.0, 1.0)


# ---- conv2d ----------------------------------------------------------------------------------
def conv2d_samples(rng, dtype):
    def s(xs, ws, strides, padding, desc, **kw):
        return Sample((_x(rng, xs, dtype), _x(rng, ws, dtype), strides, padding), kw, desc=desc)

    yield s((2, 5, 6, 3), (3, 3, 3, 4), 1, "SAME", "im2col 3x3 SAME")
    yield s((1, 7, 6, 16), (3, 3, 16, 5), 1, "VALID", "shift 3x3 VALID batch 1")
    yield s((2, 6, 7, 16), (2, 3, 16, 4), [2, 1], "SAME", "im2col strides [2, 1]")
    yield s((2, 16, 5, 5), (3, 3, 16, 3), 1, [[0, 0], [0, 0], [1, 2], [0, 1]],
            "shift NCHW explicit dilations 2", data_format="NCHW", dilations=[1, 1, 2, 2])
    yield s((1, 5, 5, 32), (3, 3, 16, 8), 1, "SAME", "shift grouped (2 groups)")
    yield s((1, 6, 5, 6), (3, 3, 2, 6), [1, 2, 2, 1], "VALID", "im2col grouped (3 groups)")
    yield s((2, 4, 4, 16), (1, 1, 16, 7), 1, "VALID", "1x1")
    yield s((1, 8, 8, 2), (5, 5, 2, 3), [1, 2, 2, 1], "SAME", "5x5 strides 2")
    yield s((1, 9, 7, 17), (3, 2, 17, 3), 1, "SAME", "odd sizes, dilations [1, 2]",
            dilations=[1, 2])
    yield s((1, 3, 7, 3), (2, 2, 3, 2), 2, "SAME", "NCHW strides 2", data_format="NCHW")
    yield s((0, 5, 5, 3), (3, 3, 3, 2), 1, "SAME", "empty batch")
    yield s((1, 3, 3, 2), (4, 4, 2, 2), 2, "VALID", "empty output (filter larger than input)")


def conv2d_errors():
    x, w = np.zeros((1, 5, 5, 4), F32), np.zeros((3, 3, 4, 2), F32)
    op = "^conv2d: "
    yield ErrorInput((x, w, 1, "FULL"), {}, ValueError, op + "padding must be 'SAME', 'VALID'")
    yield ErrorInput((x, w, 1, "same"), {}, ValueError, op + "padding must be 'SAME'")
    yield ErrorInput((x, w, 1, [[0, 0], [1, 1], [1, 1]]), {}, ValueError,
                     op + "padding must be a list of 4")
    yield ErrorInput((x, w, 1, [[1, 0], [1, 1], [1, 1], [0, 0]]), {}, ValueError,
                     op + r"padding must be \[0, 0\] in the batch and channel")
    yield ErrorInput((x, w, 1, [[0, 0], [-1, 1], [1, 1], [0, 0]]), {}, ValueError,
                     op + "padding must be non-negative")
    yield ErrorInput((x, w, 1, [[0, 0], [1.5, 1], [1, 1], [0, 0]]), {}, TypeError,
                     op + "padding must hold ints")
    yield ErrorInput((x[0], w, 1, "SAME"), {}, ValueError, op + "input must have rank 4")
    yield ErrorInput((x, w[0], 1, "SAME"), {}, ValueError, op + "filters must have rank 4")
    yield ErrorInput((x, np.zeros((3, 3, 3, 2), F32), 1, "SAME"), {}, ValueError,
                     op + "filters must have an input depth that divides the input depth 4")
    yield ErrorInput((x, np.zeros((3, 3, 2, 3), F32), 1, "SAME"), {}, ValueError,
                     op + "filters must have a number of output channels divisible")
    yield ErrorInput((x, np.zeros((3, 3, 4, 0), F32), 1, "SAME"), {}, ValueError,
                     op + "filters must not have zero elements")
    yield ErrorInput((x, w, 0, "SAME"), {}, ValueError, op + "strides must be positive")
    yield ErrorInput((x, w, [1, 1, 1], "SAME"), {}, ValueError,
                     op + "strides must be an int or a list of 1, 2 or 4 ints")
    yield ErrorInput((x, w, [2, 1, 1, 1], "SAME"), {}, ValueError,
                     op + "strides must be 1 in the batch and channel dimensions")
    yield ErrorInput((x, w, 1.5, "SAME"), {}, TypeError, op + "strides must be an int")
    yield ErrorInput((x, w, 1, "SAME"), {"dilations": [0, 1]}, ValueError,
                     op + "dilations must be positive")
    yield ErrorInput((x, w, 1, "SAME"), {"data_format": "NWHC"}, ValueError,
                     op + "data_format must be 'NHWC' or 'NCHW'")
    yield ErrorInput((x.astype(I32), w.astype(I32), 1, "SAME"), {}, TypeError,
                     op + "input must be float16, float32 or float64, got int32")
    yield ErrorInput((x, w.astype(F64), 1, "SAME"), {}, TypeError,
                     op + r"filters must have the dtype of input \(float32\), got float64")
    yield ErrorInput((x, np.zeros((9, 9, 4, 2), F32), 1, "VALID"), {}, ValueError,
                     op + "Computed output size would be negative: -3")


# ---- conv2d_bias (conv2d + bias_add (+ relu) in one op: Keras's Conv2D) ------------------------
def conv2d_bias_samples(rng, dtype):
    def s(xs, ws, strides, padding, desc, **kw):
        return Sample((_x(rng, xs, dtype), _x(rng, ws, dtype), _x(rng, ws[3], dtype), strides,
                       padding), kw, desc=desc)

    yield s((2, 6, 7, 16), (3, 3, 16, 5), 1, "SAME", "shift relu", relu=True)
    yield s((1, 7, 6, 16), (3, 3, 16, 4), 1, "VALID", "shift, bias only")
    yield s((2, 9, 8, 1), (3, 3, 1, 6), 1, "VALID", "direct relu", relu=True)
    yield s((2, 8, 9, 1), (3, 3, 1, 3), 2, "SAME", "direct strides 2 dilated, bias only",
            dilations=[1, 2])
    yield s((2, 6, 7, 4), (3, 3, 4, 5), [2, 1], "SAME", "im2col relu", relu=True)
    yield s((1, 5, 5, 32), (3, 3, 16, 8), 1, "SAME", "grouped relu", relu=True)
    yield s((0, 5, 5, 3), (3, 3, 3, 2), 1, "SAME", "empty batch", relu=True)


def conv2d_bias_errors():
    x, w, b = np.zeros((1, 5, 5, 4), F32), np.zeros((3, 3, 4, 2), F32), np.zeros(2, F32)
    op = "^conv2d_bias: "
    yield ErrorInput((x, w, np.zeros(3, F32), 1, "SAME"), {}, ValueError,
                     op + r"bias must be a vector of 2 values .*got shape \[3\]")
    yield ErrorInput((x, w, np.zeros((1, 2), F32), 1, "SAME"), {}, ValueError,
                     op + "bias must be a vector of 2 values")
    yield ErrorInput((x, w, b.astype(F64), 1, "SAME"), {}, TypeError,
                     op + r"bias must have the dtype of input \(float32\), got float64")
    yield ErrorInput((x.astype(F16), w.astype(F16), b.astype(F16), 1, "SAME"), {}, TypeError,
                     op + "input must be float32 or float64, got float16")
    yield ErrorInput((x, w, b, 1, "VALID2"), {}, ValueError, "^conv2d: padding must be")
    yield ErrorInput((x, np.zeros((3, 3, 3, 2), F32), b, 1, "SAME"), {}, ValueError,
                     "^conv2d: filters must have an input depth that divides")


# ---- depthwise_conv2d ------------------------------------------------------------------------
def depthwise_samples(rng, dtype):
    def s(xs, fs, strides, padding, desc, **kw):
        return Sample((_x(rng, xs, dtype), _x(rng, fs, dtype), strides, padding), kw, desc=desc)

    yield s((2, 5, 6, 3), (3, 3, 3, 2), [1, 1, 1, 1], "SAME", "multiplier 2")
    yield s((1, 7, 6, 4), (3, 2, 4, 1), [1, 2, 1, 1], "VALID", "strides [2, 1] batch 1")
    yield s((2, 3, 6, 5), (3, 3, 3, 1), [1, 1, 1, 1], "SAME", "NCHW dilations 2",
            data_format="NCHW", dilations=[2, 2])
    yield s((1, 6, 6, 2), (5, 5, 2, 3), [1, 1, 1, 1], [[0, 0], [2, 1], [0, 2], [0, 0]],
            "5x5 explicit")
    yield s((2, 4, 4, 3), (1, 1, 3, 2), [1, 1, 1, 1], "VALID", "1x1")
    yield s((0, 4, 4, 3), (3, 3, 3, 1), [1, 1, 1, 1], "SAME", "empty batch")
    # big enough for the parallel Numba kernels (PARALLEL_MIN_WORK)
    yield s((2, 24, 24, 16), (3, 3, 16, 2), [1, 1, 1, 1], "SAME", "parallel kernels")


def depthwise_errors():
    x, f = np.zeros((1, 5, 5, 4), F32), np.zeros((3, 3, 4, 2), F32)
    op = "^depthwise_conv2d: "
    yield ErrorInput((x, f, 1, "SAME"), {}, TypeError, op + "strides must be a list of 4")
    yield ErrorInput((x, f, [1, 1], "SAME"), {}, ValueError,
                     op + r"strides must be a list of 4 ints, got \[1, 1\]")
    yield ErrorInput((x, np.zeros((3, 3, 3, 2), F32), [1, 1, 1, 1], "SAME"), {}, ValueError,
                     op + "filter must have 4 input channels")
    yield ErrorInput((x, f, [1, 2, 2, 1], "SAME"), {"dilations": [2, 2]}, ValueError,
                     op + "strides must all be 1 when dilations are greater than 1")
    yield ErrorInput((x, f, [1, 1, 1, 1], "VALID2"), {}, ValueError, op + "padding must be")
    yield ErrorInput((x.astype(F16), f, [1, 1, 1, 1], "SAME"), {}, TypeError,
                     op + "filter must have the dtype of input")
    yield ErrorInput((x, f[0], [1, 1, 1, 1], "SAME"), {}, ValueError,
                     op + "filter must have rank 4")
    yield ErrorInput((x, f, [1, 1, 1, 1], "SAME"), {"dilations": [1, 1, 1]}, ValueError,
                     op + "dilations must be an int or a list of 1 or 2 ints")


# ---- conv2d_transpose ------------------------------------------------------------------------
def transpose_samples(rng, dtype):
    def s(xs, ws, out, strides, padding, desc, **kw):
        return Sample((_x(rng, xs, dtype), _x(rng, ws, dtype), out, strides, padding), kw,
                      desc=desc)

    yield s((2, 4, 3, 5), (3, 3, 2, 5), [2, 8, 6, 2], 2, "SAME", "strides 2 SAME")
    yield s((2, 4, 3, 5), (3, 3, 2, 5), [2, 7, 5, 2], 2, "SAME", "strides 2 SAME, odd output")
    yield s((1, 4, 4, 16), (3, 3, 16, 16), [1, 6, 6, 16], 1, "VALID", "shift VALID")
    yield s((1, 3, 4, 5), (2, 3, 2, 3), [1, 2, 7, 9], [1, 1, 2, 2], "SAME", "NCHW",
            data_format="NCHW")
    yield s((1, 5, 5, 16), (3, 3, 4, 16), [5, 5], 1, "SAME", "spatial output_shape, dilated",
            dilations=2)
    yield s((1, 3, 3, 2), (3, 3, 3, 2), [1, 5, 6, 3], [1, 2, 2, 1],
            [[0, 0], [1, 1], [1, 1], [0, 0]], "explicit padding")


def transpose_errors():
    x, w = np.zeros((1, 4, 4, 5), F32), np.zeros((3, 3, 2, 5), F32)
    op = "^conv2d_transpose: "
    yield ErrorInput((x, w, [1, 9, 9, 2], 2, "SAME"), {}, ValueError,
                     op + r"output_shape \[1, 9, 9, 2\] must be a size whose convolution")
    yield ErrorInput((x, w, [1, 8, 8, 3], 2, "SAME"), {}, ValueError,
                     op + "output_shape must have batch 1 and 2 channels")
    yield ErrorInput((x, np.zeros((3, 3, 2, 4), F32), [1, 8, 8, 2], 2, "SAME"), {}, ValueError,
                     op + "filters must have 5 input channels")
    yield ErrorInput((x, w, [1, 8, 8], 2, "SAME"), {}, ValueError,
                     op + "output_shape must have 4 entries")
    yield ErrorInput((x, w, [1, 8, 8, 2], 2, "BAD"), {}, ValueError, op + "padding must be")
    yield ErrorInput((x.astype(F64), w, [1, 8, 8, 2], 2, "SAME"), {}, TypeError,
                     op + "filters must have the dtype of input")


# ---- conv1d ----------------------------------------------------------------------------------
def conv1d_samples(rng, dtype):
    def s(xs, ws, stride, padding, desc, **kw):
        return Sample((_x(rng, xs, dtype), _x(rng, ws, dtype), stride, padding), kw, desc=desc)

    yield s((2, 9, 3), (3, 3, 4), 1, "SAME", "SAME")
    yield s((2, 9, 16), (3, 16, 4), 2, "VALID", "stride 2 VALID")
    yield s((2, 3, 4, 10), (2, 4, 5), [1, 1, 1], "SAME", "NCW, batch shape [2, 3], dilated",
            data_format="NCW", dilations=2)
    yield s((1, 7, 16), (5, 16, 3), 1, "SAME", "5-wide batch 1")


def conv1d_errors():
    x, w = np.zeros((2, 9, 3), F32), np.zeros((3, 3, 4), F32)
    op = "^conv1d: "
    yield ErrorInput((x, w, 1, [[0, 0], [1, 1], [0, 0]]), {}, ValueError,
                     op + "padding must be 'SAME' or 'VALID'")
    yield ErrorInput((x[0], w, 1, "SAME"), {}, ValueError, op + "input must have rank at least 3")
    yield ErrorInput((x, w[0], 1, "SAME"), {}, ValueError, op + "filters must have rank 3")
    yield ErrorInput((x, w, [1, 1], "SAME"), {}, ValueError,
                     op + "stride must be an int or a list of 1 or 3 ints")
    yield ErrorInput((x, w, 1, "SAME"), {"data_format": "NHWC"}, ValueError,
                     op + "data_format must be 'NWC' or 'NCW'")
    yield ErrorInput((x, np.zeros((3, 2, 4), F32), 1, "SAME"), {}, ValueError,
                     op + "filters must have an input depth that divides the input depth 3")


ROWS = [
    OpInfo("conv2d", conv.conv2d, rconv.conv2d, conv2d_samples, conv2d_errors,
           dtypes=FLOATS, diff_args=(0, 1), tol=TOL),
    OpInfo("conv2d_bias", conv.conv2d_bias, rconv.conv2d_bias, conv2d_bias_samples,
           conv2d_bias_errors, dtypes=(F32, F64), diff_args=(0, 1, 2), tol=TOL),
    OpInfo("depthwise_conv2d", conv.depthwise_conv2d, rconv.depthwise_conv2d, depthwise_samples,
           depthwise_errors, dtypes=FLOATS, diff_args=(0, 1), tol=TOL),
    OpInfo("conv2d_transpose", conv.conv2d_transpose, rconv.conv2d_transpose, transpose_samples,
           transpose_errors, dtypes=FLOATS, diff_args=(0, 1), tol=TOL),
    OpInfo("conv1d", conv.conv1d, rconv.conv1d, conv1d_samples, conv1d_errors,
           dtypes=FLOATS, diff_args=(0, 1), tol=TOL),
]
