"""NaN and +-inf through every elementwise row of the op table (``elementwise`` in
``tests/opdb.py``): each operand takes every combination of special values, and the output
must match the float64 reference rounded to the output dtype, NaN and inf in the same
places, and TensorFlow where the row names the op's TF path. The ops must not warn either:
TF returns NaN and inf silently."""

from __future__ import annotations

import functools
import itertools
import warnings

import numpy as np
import pytest
from opdb import F32, OPS, OPS_BY_NAME
from reference import nn as rnn

import ipu_gpu as tf

SPECIAL = (np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -0.5)

ROWS = [row for row in OPS if row.elementwise]
CASES = [pytest.param(row.name, d.name, id=f"{row.name}-{d.name}")
         for row in ROWS for d in row.dtypes if d.kind == "f"]
TF_CASES = [pytest.param(row.name, d.name, id=f"{row.name}-{d.name}")
            for row in ROWS if row.tf_name for d in row.dtypes if d.kind == "f"]


def special_operands(arity: int, dtype) -> tuple:
    """``arity`` 1-D operands that together hold every combination of the special values."""
    columns = zip(*itertools.product(SPECIAL, repeat=arity))
    return tuple(np.asarray(c, dtype) for c in columns)


def to_numpy(t) -> np.ndarray:
    v = t._value
    return v.get() if type(v).__module__.startswith("cupy") else np.asarray(v)  # syncs device


def call_quietly(fn, *args):
    """``fn(*args)``, failing on any warning (a NaN or inf result is no reason to warn)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn(*args)


def reference(row, args, out_dtype) -> np.ndarray:
    with np.errstate(all="ignore"):  # the reference may warn; it is plain numpy
        want = np.asarray(row.ref(*(a.astype(np.float64) for a in args)))
        return want.astype(out_dtype)  # overflow to inf is the output dtype's


def assert_same(actual, expected, args, rtol, atol, what):
    """Equal values, NaN where the other has NaN, the same infinities; the message lists the
    inputs of the first mismatches."""
    assert actual.shape == expected.shape, what
    if actual.dtype.kind != "f" and expected.dtype.kind != "f":
        ok = actual == expected
    else:
        ok = np.isclose(actual.astype(np.float64), expected.astype(np.float64), rtol=rtol,
                        atol=atol, equal_nan=True)
    bad = np.flatnonzero(~ok)
    rows = [(*(float(a[i]) for a in args), actual[i].item(), expected[i].item())
            for i in bad[:8]]
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64),
                               rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=f"{what}: (inputs..., got, want) {rows}")


def test_elementwise_rows():
    names = {row.name for row in ROWS}
    assert names >= {"add", "subtract", "multiply", "divide", "pow", "maximum", "minimum",
                     "floordiv", "floormod", "negative", "square", "abs", "sign", "sqrt",
                     "rsqrt", "exp", "log", "tanh", "sigmoid", "equal", "not_equal", "less",
                     "less_equal", "greater", "greater_equal", "clip_by_value", "identity",
                     "stop_gradient", "relu", "leaky_relu", "elu",
                     "sigmoid_cross_entropy_with_logits"}
    for row in ROWS:
        assert any(d.kind == "f" for d in row.dtypes), row.name


@pytest.mark.parametrize(("name", "dtype"), CASES)
def test_nan_and_inf_match_reference(name, dtype, backend):
    row, d = OPS_BY_NAME[name], np.dtype(dtype)
    args = special_operands(row.elementwise, d)
    out = to_numpy(call_quietly(row.op, *(backend.asarray(a) for a in args)))
    want = reference(row, args, out.dtype)
    assert_same(out, want, args, *row.tolerance(d), f"{name} against the reference")


@pytest.mark.parametrize(("name", "dtype"), TF_CASES)
def test_nan_and_inf_match_tensorflow(name, dtype, real_tf):
    row, d = OPS_BY_NAME[name], np.dtype(dtype)
    args = special_operands(row.elementwise, d)
    theirs = np.asarray(functools.reduce(getattr, row.tf_name.split("."), real_tf)(*args))
    ours = to_numpy(call_quietly(row.op, *args))
    assert ours.dtype == theirs.dtype
    # TF's float attributes are float32 (leaky_relu's alpha: 0.2 is 0.200000003), so float64
    # results may differ from TF's in the 8th digit; the reference checks values tightly,
    # TF is here for where NaN and inf go
    rtol, atol = (max(a, b) for a, b in zip(row.tolerance(d), row.tolerance(F32)))
    assert_same(ours, theirs, args, rtol, atol, f"{name} against tf.{row.tf_name}")


# bias_add adds along the channel axis only, so it is no ``elementwise`` row: the special
# values go in as one row of channels
def _bias_add_operands(dtype):
    value, bias = special_operands(2, np.dtype(dtype))
    return value.reshape(1, -1), bias


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_bias_add_nan_and_inf_match_reference(dtype, backend):
    value, bias = _bias_add_operands(dtype)
    out = to_numpy(call_quietly(tf.nn.bias_add, backend.asarray(value), backend.asarray(bias)))
    want = reference(OPS_BY_NAME["bias_add"], (value, bias), out.dtype)
    assert_same(out[0], want[0], (value[0], bias), 0, 0, "bias_add against the reference")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_bias_add_nan_and_inf_match_tensorflow(dtype, real_tf):
    value, bias = _bias_add_operands(dtype)
    ours = to_numpy(call_quietly(tf.nn.bias_add, value, bias))
    theirs = real_tf.nn.bias_add(value, bias).numpy()
    assert_same(ours[0], theirs[0], (value[0], bias), 0, 0, "bias_add against tf.nn.bias_add")


def test_relu_reference_propagates_nan():
    x = np.asarray([np.nan, -np.inf, np.inf, -1.0, 0.0, 2.0])
    np.testing.assert_array_equal(rnn.relu(x), [np.nan, 0.0, np.inf, 0.0, 0.0, 2.0])


# clip_by_value is TF's maximum(minimum(t, max), min): the lower bound wins where the bounds
# cross, and the gradient of a NaN goes to clip_value_min (values from TF 2.21)
CLIP_T = [np.nan, -3.0, 0.5, 3.0, np.inf, -np.inf, 1.0, 0.0, 2.0, 2.0]
CLIP_LO = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, np.nan, 0.0, 2.0, 1.0]
CLIP_HI = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0, np.nan, 1.0, 0.5]


def _clip_with_gradients(lib):
    t, lo, hi = (lib.constant(np.asarray(v)) for v in (CLIP_T, CLIP_LO, CLIP_HI))
    with lib.GradientTape() as tape:
        tape.watch([t, lo, hi])
        y = lib.clip_by_value(t, lo, hi)
    return [np.asarray(y)] + [np.asarray(g) for g in tape.gradient(y, [t, lo, hi])]


def test_clip_by_value_nan_and_crossed_bounds():
    y, gt, glo, ghi = _clip_with_gradients(tf)
    np.testing.assert_array_equal(y, [np.nan, 0, 0.5, 1, 1, 0, np.nan, np.nan, 2, 1])
    np.testing.assert_array_equal(gt, [0, 0, 1, 0, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(glo, [1, 1, 0, 0, 0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(ghi, [0, 0, 0, 1, 1, 0, 0, 0, 0, 0])


def test_clip_by_value_nan_and_crossed_bounds_match_tensorflow(real_tf):
    for ours, theirs in zip(_clip_with_gradients(tf), _clip_with_gradients(real_tf)):
        np.testing.assert_array_equal(ours, theirs)
