"""The trigonometric and hyperbolic functions of issue 17 against the real TensorFlow (CPU) on
fresh random inputs: values and gradients in float16/32/64, the names TF exports them under
(tf.X, tf.math.X, tf.compat.v1.X), and TF's error class for integers. The op table
(tests/opdb_trig.py) checks them against float64 references, finite differences, NaN/inf and
graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.compat import v1

UNARY = {"sin": (-4, 4), "cos": (-4, 4), "tan": (-1.3, 1.3), "asin": (-0.98, 0.98),
         "acos": (-0.98, 0.98), "atan": (-6, 6), "sinh": (-4, 4), "cosh": (-4, 4),
         "asinh": (-6, 6), "acosh": (1.05, 6), "atanh": (-0.95, 0.95)}
TOL = {"float16": (4e-3, 4e-3), "float32": (2e-6, 1e-6), "float64": (1e-13, 1e-13)}


def _value_and_gradient(lib, fn, arrays, u):
    xs = [lib.constant(a) for a in arrays]
    with lib.GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
    grads = tape.gradient(y, xs, output_gradients=lib.constant(u))
    return np.asarray(y.numpy()), [np.asarray(g.numpy()) for g in grads]


def _check(name, arrays, dtype, real_tf, seed):
    ours_fn, theirs_fn = getattr(tf.math, name), getattr(real_tf.math, name)
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    u = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    y0, g0 = _value_and_gradient(tf, ours_fn, arrays, u)
    y1, g1 = _value_and_gradient(real_tf, theirs_fn, arrays, u)
    rtol, atol = TOL[dtype]
    assert y0.dtype == y1.dtype and y0.shape == y1.shape
    np.testing.assert_allclose(y0.astype(np.float64), y1.astype(np.float64), rtol, atol)
    for a, b in zip(g0, g1):
        assert a.dtype == b.dtype and a.shape == b.shape
        # float16 gradients: TF rounds the intermediate derivative to float16 as we do, but
        # in its own order (1 + y*y, 1 - x*x) so allow a few float16 ulps
        scale = 4 if dtype == "float16" else 1
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol * scale,
                                   atol * scale)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_and_gradients_equal_tensorflow(name, dtype, real_tf):
    rng = np.random.default_rng(sum(map(ord, name + dtype)))
    low, high = UNARY[name]
    for shape in [(5, 7), (1,), (0, 3), ()]:
        x = rng.uniform(low, high, shape).astype(dtype)
        _check(name, [x], dtype, real_tf, seed=len(shape))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_atan2_values_and_gradients_equal_tensorflow_in_every_quadrant(dtype, real_tf):
    rng = np.random.default_rng(17)
    for ys, xs in [((4, 6), (4, 6)), ((4, 1), (1, 6)), ((), (3,)), ((0,), (1,))]:
        y = (rng.uniform(0.2, 3, ys) * rng.choice([-1, 1], ys)).astype(dtype)
        x = (rng.uniform(0.2, 3, xs) * rng.choice([-1, 1], xs)).astype(dtype)
        _check("atan2", [y, x], dtype, real_tf, seed=3)


def test_atan2_signed_zeros_and_infinities_equal_tensorflow(real_tf):
    v = np.asarray([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf], np.float32)
    y, x = np.meshgrid(v, v)
    ours = tf.atan2(y, x).numpy()
    theirs = real_tf.math.atan2(y, x).numpy()
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
    np.testing.assert_allclose(ours, theirs, rtol=1e-7)


@pytest.mark.parametrize("name", sorted(UNARY) + ["atan2"])
def test_exported_where_tensorflow_exports_them(name, real_tf):
    fn = getattr(tf.math, name)
    assert getattr(tf, name) is fn and getattr(v1.math, name) is fn
    args = [np.asarray([0.5, -0.25])] + ([np.asarray([0.75, 1.5])] if name == "atan2" else [])
    if name == "acosh":
        args = [np.asarray([1.5, 2.0])]
    # tf.compat.v1's functions name their TF1 graph nodes, so they are wrappers
    np.testing.assert_array_equal(getattr(v1, name)(*args).numpy(), fn(*args).numpy())
    assert hasattr(real_tf, name) and hasattr(real_tf.math, name)
    assert hasattr(real_tf.compat.v1, name)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_integer_input_raises_as_tensorflow(name, real_tf):
    x = np.asarray([1, 2], np.int32)
    with pytest.raises(TypeError, match=rf"^{name}: x must be a floating-point"):
        getattr(tf.math, name)(x)
    with pytest.raises((real_tf.errors.NotFoundError, real_tf.errors.InvalidArgumentError)):
        getattr(real_tf.math, name)(x)


def test_atan2_in_a_tf1_graph_gives_the_eager_numbers():
    y0 = np.asarray([1.0, -2.0, 0.5], np.float32)
    x0 = np.asarray([-1.0, 3.0, 0.25], np.float32)
    with v1.Graph().as_default():
        y = v1.placeholder(tf.float32, [3])
        x = v1.placeholder(tf.float32, [3])
        z = v1.atan2(y, x) + v1.sin(y) * v1.cosh(x)
        gy, gx = v1.gradients(v1.reduce_sum(z), [y, x])
        with v1.Session() as sess:
            got = sess.run([z, gy, gx], {y: y0, x: x0})
    yt, xt = tf.constant(y0), tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch([yt, xt])
        ze = tf.atan2(yt, xt) + tf.sin(yt) * tf.cosh(xt)
    want = [ze.numpy(), *(g.numpy() for g in tape.gradient(ze, [yt, xt]))]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
