"""Functions run by one TF1 graph node that read graph tensors they were not given:
``tf.custom_gradient`` capturing an outer tensor and a variable, ``map_fn``/``scan`` over
elements of unknown length capturing variables and placeholders (values and gradients), and
a ``TensorArray`` as a graph ``while_loop`` loop variable; against real TensorFlow's
tf.compat.v1 graph mode and numpy."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1

XS = np.arange(12, dtype=np.float32).reshape(4, 3) / 4.0
W0 = np.array([1.0, -2.0, 0.5], np.float32)


def _custom_gradient(tf, c):
    with c.Graph().as_default():
        x = c.placeholder(tf.float32, [3])
        w = c.Variable(W0)
        scale = x * 2.0  # an outer graph tensor the function captures

        @tf.custom_gradient
        def f(a):
            y = a * scale * w

            def grad(dy, variables=None):
                return dy * 10.0, [dy * a * a]
            return y, grad
        out = f(x)
        grads = c.gradients(tf.reduce_sum(out), [x, w])
        with c.Session() as sess:
            sess.run(c.global_variables_initializer())
            return sess.run([out, grads], {x: [1.0, 2.0, 3.0]})


def test_custom_gradient_capturing_a_tensor_and_a_variable_matches_tf(real_tf):
    (out, (gx, gw)) = _custom_gradient(ig, v1)
    (t_out, (t_gx, t_gw)) = _custom_gradient(real_tf, real_tf.compat.v1)
    a = np.array([1.0, 2.0, 3.0], np.float32)
    np.testing.assert_allclose(out, a * 2 * a * W0)  # numpy
    np.testing.assert_array_equal(gx, np.full(3, 10.0))
    np.testing.assert_array_equal(gw, a * a)  # grad_fn's variable gradient
    for ours, theirs in ((out, t_out), (gx, t_gx), (gw, t_gw)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_custom_gradient_reading_a_variable_needs_variables_at_build_as_tf():
    with v1.Graph().as_default():
        x = v1.placeholder(ig.float32, [3])
        w = v1.Variable(W0)

        @ig.custom_gradient
        def f(a):
            return a * w, lambda dy: dy
        with pytest.raises(TypeError, match="must accept keyword argument 'variables'"):
            f(x)


def _map_and_scan(tf, c):
    with c.Graph().as_default():
        x = c.placeholder(tf.float32, [None, 3])  # unknown length: one node, not unrolled
        w = c.Variable(W0)
        b = c.placeholder(tf.float32, [])
        mapped = tf.map_fn(lambda r: tf.reduce_sum(r * w) + b, x)
        scanned = tf.scan(lambda acc, r: acc * 0.5 + r * w, x,
                          initializer=tf.zeros([3]))
        total = tf.reduce_sum(mapped) + tf.reduce_sum(scanned)
        grads = c.gradients(total, [w, b, x])
        with c.Session() as sess:
            sess.run(c.global_variables_initializer())
            return sess.run([mapped, scanned, grads], {x: XS, b: 1.5})


def _numpy_map_and_scan():
    mapped = XS.astype(np.float64) @ W0 + 1.5
    acc, scanned = np.zeros(3), []
    for r in XS.astype(np.float64):
        acc = acc * 0.5 + r * W0
        scanned.append(acc)
    return mapped, np.array(scanned)


def test_map_fn_and_scan_of_unknown_length_capture_graph_values_as_tf(real_tf):
    mapped, scanned, (gw, gb, gx) = _map_and_scan(ig, v1)
    want_mapped, want_scanned = _numpy_map_and_scan()
    np.testing.assert_allclose(mapped, want_mapped, rtol=1e-6)
    np.testing.assert_allclose(scanned, want_scanned, rtol=1e-6)
    assert gb == pytest.approx(4.0)  # d(sum of 4 rows each + b)/db
    t_mapped, t_scanned, (t_gw, t_gb, t_gx) = _map_and_scan(real_tf, real_tf.compat.v1)
    for ours, theirs in ((mapped, t_mapped), (scanned, t_scanned), (gw, t_gw), (gb, t_gb),
                         (gx, t_gx)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_a_captured_tensor_is_computed_once_per_run():
    """A random tensor the function captures is drawn once per run: every element sees the
    same draw, and the next run draws anew."""
    with v1.Graph().as_default():
        x = v1.placeholder(ig.float32, [None, 3])
        noise = v1.random_normal([3], seed=3)
        out = ig.map_fn(lambda r: r + noise, x)
        with v1.Session() as sess:
            first, n1 = sess.run([out, noise], {x: np.zeros((2, 3), np.float32)})
            second = sess.run(out, {x: np.zeros((2, 3), np.float32)})
    np.testing.assert_array_equal(first[0], first[1])
    np.testing.assert_array_equal(first[0], n1)
    assert not np.array_equal(first[0], second[0])


def _tensor_array_loop(tf, c):
    with c.Graph().as_default():
        x = c.placeholder(tf.float32, [5])
        ta = tf.TensorArray(tf.float32, size=5)

        def body(i, t):
            return i + 1, t.write(i, x[i] * x[i])
        _, ta = c.while_loop(lambda i, t: i < 5, body, [tf.constant(0), ta])
        out = ta.stack()
        grads = c.gradients(tf.reduce_sum(out), [x])
        with c.Session() as sess:
            return sess.run([out, grads], {x: np.arange(5, dtype=np.float32)})


def test_tensor_array_as_a_while_loop_variable_matches_tf(real_tf):
    out, (g,) = _tensor_array_loop(ig, v1)
    np.testing.assert_array_equal(out, np.arange(5.0) ** 2)
    np.testing.assert_array_equal(g, 2 * np.arange(5.0))
    t_out, (t_g,) = _tensor_array_loop(real_tf, real_tf.compat.v1)
    np.testing.assert_array_equal(out, t_out)
    np.testing.assert_array_equal(g, t_g)
