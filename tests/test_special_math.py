"""lgamma and digamma (issue 17) against the real TensorFlow (CPU): values and gradients on
fresh random inputs in float16/32/64, the poles, zeros and infinities, where TF exports them,
and TF's error class for integers. The op table (tests/opdb_special.py) checks them against
float64 references, finite differences and graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.compat import v1

# float32: TF's float32 kernels (Eigen) are a few ulps off; ours round the float64 value
TOL = {"float16": (2e-3, 2e-3), "float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}


def _inputs(rng, shape, dtype):
    x = rng.uniform(-6.0, 12.0, shape)
    near = (x < 0.1) & (np.abs(x - np.round(x)) < 0.1)
    return np.where(near, x + 0.3, x).astype(dtype)


def _value_and_gradient(lib, fn, x, u):
    xt = lib.constant(x)
    with lib.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt)
    return y.numpy(), tape.gradient(y, xt, output_gradients=lib.constant(u)).numpy()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_values_and_gradients_equal_tensorflow(name, dtype, real_tf):
    rng = np.random.default_rng(sum(map(ord, name + dtype)))
    for shape in [(6, 9), (1,), (0,), ()]:
        x = _inputs(rng, shape, dtype)
        u = rng.standard_normal(shape).astype(dtype)
        y0, g0 = _value_and_gradient(tf, getattr(tf.math, name), x, u)
        if name == "digamma" and dtype == "float16":
            # TF has no float16 Polygamma kernel, so no float16 gradient of digamma: compare
            # with its float32 gradient rounded to float16 (ours computes it)
            y1 = real_tf.math.digamma(x).numpy()
            _, g1 = _value_and_gradient(real_tf, real_tf.math.digamma, x.astype(np.float32),
                                        u.astype(np.float32))
            g1 = g1.astype(np.float16)
        else:
            y1, g1 = _value_and_gradient(real_tf, getattr(real_tf.math, name), x, u)
        assert y0.dtype == y1.dtype == g0.dtype == g1.dtype == np.dtype(dtype)
        assert y0.shape == y1.shape == g0.shape == shape
        rtol, atol = TOL[dtype]
        np.testing.assert_allclose(y0.astype(float), y1.astype(float), rtol, atol)
        # the gradients multiply a rounded derivative by u: twice the rounding
        np.testing.assert_allclose(g0.astype(float), g1.astype(float), 2 * rtol, 2 * atol)


SPECIAL = [0.0, -0.0, 1.0, 2.0, -1.0, -3.0, 1e-8, -1e-8, -2.5, 1e-300, 1e300, -100.5, 171.5,
           -1e5 - 0.25, 1.4616321449683622, np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_poles_zeros_and_infinities_equal_tensorflow(name, dtype, real_tf):
    with np.errstate(over="ignore"):
        x = np.asarray(SPECIAL, dtype)
    u = np.ones_like(x)
    y0, g0 = _value_and_gradient(tf, getattr(tf.math, name), x, u)
    y1, g1 = _value_and_gradient(real_tf, getattr(real_tf.math, name), x, u)
    # NaN and inf in the same places; near digamma's root (1.4616...) TF's float32 kernel
    # gives 0 where the float32 of the true value is -1.2e-8; trigamma(1e300) is 1e-300
    rtol, atol = (1e-12, 1e-12) if dtype == "float64" else (1e-5, 1e-7)
    np.testing.assert_allclose(y0, y1, rtol=rtol, atol=atol)
    if name == "digamma" and dtype == "float32":
        # TF's float32 digamma gradient is wrong far below 0: at -100.5 it is -0.0099, where
        # trigamma is 9.8597 (TF's float64 gradient agrees); compare there with float64's
        _, g64 = _value_and_gradient(real_tf, real_tf.math.digamma, x.astype(np.float64),
                                     u.astype(np.float64))
        g1 = np.where(x < -50, g64.astype(np.float32), g1)
    np.testing.assert_allclose(g0, g1, rtol=rtol, atol=atol)


def test_lgamma_is_exactly_zero_at_one_and_two_and_matches_python():
    import math

    x = np.asarray([1.0, 2.0, 0.5, 3.0, 10.0, -0.5])
    np.testing.assert_array_equal(tf.math.lgamma(x).numpy()[:2], [0.0, 0.0])
    np.testing.assert_allclose(tf.math.lgamma(x).numpy(), [math.lgamma(v) for v in x],
                               rtol=5e-15, atol=0)


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_exported_as_in_tensorflow(name, real_tf):
    fn = getattr(tf.math, name)
    assert getattr(v1.math, name) is fn
    np.testing.assert_array_equal(getattr(v1, name)(np.asarray([2.5])).numpy(),
                                  fn(np.asarray([2.5])).numpy())
    assert not hasattr(tf, name) and not hasattr(real_tf, name)  # TF 2: tf.math only
    assert hasattr(real_tf.compat.v1, name)


@pytest.mark.parametrize("name", ["lgamma", "digamma"])
def test_integer_input_raises_as_tensorflow(name, real_tf):
    x = np.asarray([1, 2], np.int32)
    with pytest.raises(TypeError, match=rf"^{name}: x must be a floating-point"):
        getattr(tf.math, name)(x)
    with pytest.raises((real_tf.errors.NotFoundError, real_tf.errors.InvalidArgumentError)):
        getattr(real_tf.math, name)(x)


def test_lgamma_second_derivative_is_trigamma_and_digamma_refuses_one(real_tf):
    x = np.asarray([0.3, 1.5, 2.5, -0.7])
    hessians = []
    for lib in (tf, real_tf):
        xt = lib.constant(x)
        with lib.GradientTape() as outer:
            outer.watch(xt)
            with lib.GradientTape() as inner:
                inner.watch(xt)
                y = lib.reduce_sum(lib.math.lgamma(xt))
            g = inner.gradient(y, xt)
        hessians.append(outer.gradient(g, xt).numpy())
    np.testing.assert_allclose(*hessians, rtol=1e-12)
    xt = tf.constant(x)
    with tf.GradientTape() as outer:
        outer.watch(xt)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            y = tf.reduce_sum(tf.math.digamma(xt))
        with pytest.raises(LookupError, match="digamma: its gradient is not differentiable"):
            inner.gradient(y, xt)
