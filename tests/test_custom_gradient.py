"""tf.custom_gradient: the user's gradient in eager tapes, tf.function, nested tapes and TF1
graphs, against real TensorFlow and numpy (issue 17)."""

import numpy as np
import pytest

import ipu_gpu as tf

tf_ref = None  # real TensorFlow, set by the fixture below (oneDNN off, see conftest)


@pytest.fixture(autouse=True)
def _real_tf(real_tf):
    global tf_ref
    tf_ref = real_tf


def _clip_grad(lib):
    @lib.custom_gradient
    def clip_gradient(x):
        def grad(dy):
            return lib.clip_by_value(dy, -0.5, 0.5)
        return lib.identity(x) * 1.0, grad
    return clip_gradient


def _log1pexp(lib):
    @lib.custom_gradient
    def log1pexp(x):
        e = lib.exp(x)

        def grad(upstream):
            return upstream * (1 - 1 / (1 + e))
        return lib.math.log(1 + e), grad
    return log1pexp


@pytest.mark.parametrize("make", [_clip_grad, _log1pexp])
def test_eager_tape_uses_user_gradient_like_tf(make):
    x = np.array([-3.0, 0.5, 2.0], np.float32)
    ours, theirs = [], []
    for lib, out in ((tf, ours), (tf_ref, theirs)):
        f = make(lib)
        xt = lib.constant(x)
        with lib.GradientTape() as t:
            t.watch(xt)
            y = f(xt)
            loss = lib.reduce_sum(y * lib.constant([1.0, 2.0, 3.0]))
        out += [y.numpy(), t.gradient(loss, xt).numpy()]
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)


def test_gradient_is_the_user_one_not_the_true_one():
    @tf.custom_gradient
    def f(x):
        def grad(dy):
            return dy * 7.0
        return x * x, grad
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = f(x)
    assert float(y) == 9.0
    assert float(t.gradient(y, x)) == 7.0


def test_several_args_nested_output_and_tf_function():
    @tf.custom_gradient
    def f(a, b):
        def grad(dy1, dy2):
            return dy1 + dy2, 2.0 * dy2
        return (a * b, a + b), grad

    g = tf.function(lambda a, b: f(a, b))
    a, b = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])
    with tf.GradientTape() as t:
        t.watch([a, b])
        p, s = g(a, b)
        loss = tf.reduce_sum(p) + tf.reduce_sum(s)
    ga, gb = t.gradient(loss, [a, b])
    np.testing.assert_array_equal(p.numpy(), [3.0, 8.0])
    np.testing.assert_array_equal(ga.numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(gb.numpy(), [2.0, 2.0])


def test_variables_argument_like_tf():
    results = []
    for lib in (tf, tf_ref):
        v = lib.Variable([2.0, -1.0])

        @lib.custom_gradient
        def f(x, v=v):
            def grad(dy, variables=None):
                return dy * v, [dy * x * 10.0]
            return x * v, grad
        x = lib.constant([3.0, 4.0])
        with lib.GradientTape() as t:
            t.watch(x)
            y = f(x)
        gx, gv = t.gradient(y, [x, v])
        results.append((gx.numpy(), gv.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])
    np.testing.assert_allclose(results[0][1], [30.0, 40.0])


def test_errors_like_tf():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def needs_variables(x):
        return x * v, lambda dy: dy
    with pytest.raises(TypeError, match="must accept keyword argument 'variables'"):
        needs_variables(tf.constant(1.0))

    @tf.custom_gradient
    def too_few(x, z):
        return x * z, lambda dy: dy
    x = tf.constant(3.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = too_few(x, x)
    with pytest.raises(ValueError, match="expected to return 2 gradients, but returned 1"):
        t.gradient(y, x)

    @tf.custom_gradient
    def bad_vars(x):
        def grad(dy, variables=None):
            return dy, []
        return x * v, grad
    with tf.GradientTape() as t:
        t.watch(x)
        y = bad_vars(x)
    with pytest.raises(ValueError, match="Must return gradient for each variable"):
        t.gradient(y, [x, v])


def test_second_derivative_through_user_gradient():
    @tf.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * x * x
        return x * x * x, grad
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        dy = inner.gradient(y, x)
    assert float(dy) == 12.0
    assert float(outer.gradient(dy, x)) == 12.0  # d/dx 3x^2 = 6x


def test_gradient_matches_finite_differences_when_exact():
    f = _log1pexp(tf)
    x = np.array([0.3, -1.2], np.float64)
    xt = tf.constant(x)
    with tf.GradientTape() as t:
        t.watch(xt)
        y = tf.reduce_sum(f(xt))
    eps = 1e-6
    fd = [(np.log1p(np.exp(x + eps * e)).sum() - np.log1p(np.exp(x - eps * e)).sum()) / (2 * eps)
          for e in np.eye(2)]
    np.testing.assert_allclose(t.gradient(y, xt).numpy(), fd, rtol=1e-6)


def test_tf1_graph_gradients_use_user_gradient():
    from ipu_gpu.compat import v1

    @tf.custom_gradient
    def f(x):
        def grad(dy):
            return dy * 5.0
        return x * x, grad

    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [2])
        y = f(x)
        (g,) = v1.gradients(tf.reduce_sum(y), [x])
        with v1.Session() as sess:
            yv, gv = sess.run([y, g], {x: np.array([1.0, 3.0], np.float32)})
    np.testing.assert_array_equal(yv, [1.0, 9.0])
    np.testing.assert_array_equal(gv, [5.0, 5.0])


def test_method_decorated_binds_self():
    class Scale:
        factor = 3.0

        @tf.custom_gradient
        def __call__(self, x):
            def grad(dy):
                return dy * 10.0
            return x * self.factor, grad

    x = tf.constant(2.0)
    with tf.GradientTape() as t:
        t.watch(x)
        y = Scale()(x)
    assert float(y) == 6.0 and float(t.gradient(y, x)) == 10.0
    assert Scale.__call__.__name__ == "__call__"


def test_tf1_graph_variables_as_arguments_and_captured_ones_need_variables():
    from ipu_gpu.compat import v1

    @tf.custom_gradient
    def f(x, w):
        def grad(dy):
            return dy * 100.0, dy * 7.0
        return x * w, grad

    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [2])
        w = v1.get_variable("w", initializer=np.array([1.0, 2.0], np.float32))
        loss = tf.reduce_sum(f(x, w))
        gx, gw = v1.gradients(loss, [x, w])
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            feed = {x: np.ones(2, np.float32)}
            gxv, gwv = sess.run([gx, gw], feed)
            sess.run(train, feed)
            wv = sess.run(w)
        np.testing.assert_array_equal(gxv, [100.0, 100.0])
        np.testing.assert_array_equal(gwv, [7.0, 7.0])
        np.testing.assert_allclose(wv, [1.0 - 0.7, 2.0 - 0.7], rtol=1e-6)

        @tf.custom_gradient
        def captures(x):
            return x * w, lambda dy: dy
        # a captured variable needs grad_fn's `variables`, as TF checks at graph construction
        # (tests/test_graph_captures.py: captured tensors and variables in a graph)
        with pytest.raises(TypeError, match="must accept keyword argument 'variables'"):
            captures(x)
