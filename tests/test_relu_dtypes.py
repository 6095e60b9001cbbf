"""tf.nn.relu takes every real number dtype TF's Relu takes (floats and integers), as TF
computes it; a bool features is refused."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8]


def _values(dtype):
    info = np.iinfo(dtype)
    # the extremes, zero, and values of both signs (negative ones wrap for unsigned types)
    raw = np.array([info.min, info.max, 0, 1, -1, -7, 7, 100, -100], np.int64)
    return raw.astype(dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_relu_of_integers_matches_numpy_and_tf(real_tf, dtype):
    x = _values(dtype)
    got = tf.nn.relu(tf.constant(x))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), np.maximum(x, dtype(0)))
    want = real_tf.nn.relu(real_tf.constant(x))
    assert want.dtype.as_numpy_dtype == dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(tf.nn.relu(x.reshape(3, 3)).numpy(),
                                  want.numpy().reshape(3, 3))


def test_relu_of_integers_has_no_gradient(real_tf):
    x = tf.constant(np.array([-2, 0, 3], np.int32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.relu(x)
    assert tape.gradient(y, x) is None
    xr = real_tf.constant(np.array([-2, 0, 3], np.int32))
    with real_tf.GradientTape() as tape:
        tape.watch(xr)
        yr = real_tf.nn.relu(xr)
    assert tape.gradient(yr, xr) is None


def test_relu_of_float16_matches_tf(real_tf):
    x = np.array([-1.5, -0.0, 0.0, 2.5, np.inf, -np.inf, np.nan], np.float16)
    got = tf.nn.relu(x).numpy()
    want = real_tf.nn.relu(x).numpy()
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_relu_refuses_bool(real_tf):
    with pytest.raises(TypeError, match="relu: features must be a numeric tensor, got bool"):
        tf.nn.relu(tf.constant([True, False]))
    with pytest.raises(real_tf.errors.InvalidArgumentError, match="attr 'T' of bool"):
        real_tf.nn.relu(real_tf.constant([True, False]))
