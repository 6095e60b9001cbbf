"""tf.map_fn, tf.scan, tf.foldl, tf.foldr against real TensorFlow and numpy; gradients by the
tape against finite differences; TF1 graph nodes (issue 17)."""

import collections

import numpy as np
import pytest

import ipu_gpu as tf

tf_ref = None  # real TensorFlow, set by the fixture below (oneDNN off, see conftest)


@pytest.fixture(autouse=True)
def _real_tf(real_tf):
    global tf_ref
    tf_ref = real_tf
RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3)).astype(np.float32)


def both(fn):
    """fn(lib) for ipu_gpu and real TF, as numpy structures."""
    return [tf_ref.nest.map_structure(np.asarray, fn(lib)) for lib in (tf, tf_ref)]


def assert_close(pair):
    ours, theirs = pair
    tf_ref.nest.assert_same_structure(ours, theirs)
    for a, b in zip(tf_ref.nest.flatten(ours), tf_ref.nest.flatten(theirs)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_map_fn_plain_nested_and_signature():
    assert_close(both(lambda lib: lib.map_fn(lambda r: r * r + 1.0, lib.constant(X))))
    assert_close(both(lambda lib: lib.map_fn(lambda t: t[0] * t[1], (lib.constant(X),
                                                                     lib.constant(X + 1)),
                                             fn_output_signature=lib.float32)))
    assert_close(both(lambda lib: lib.map_fn(
        lambda r: {"s": lib.reduce_sum(r), "i": lib.cast(r > 0, lib.int32)}, lib.constant(X),
        fn_output_signature={"s": lib.float32, "i": lib.TensorSpec([3], lib.int32)})))
    assert_close(both(lambda lib: lib.map_fn(lambda r: lib.cast(r, lib.int64), lib.constant(X),
                                             dtype=lib.int64, parallel_iterations=4)))
    np.testing.assert_allclose(tf.map_fn(lambda r: r * r, tf.constant(X)).numpy(), X * X)


def test_map_fn_empty_and_errors():
    assert_close(both(lambda lib: lib.map_fn(lambda r: r, lib.zeros([0, 3]))))
    assert_close(both(lambda lib: lib.map_fn(lambda r: r, lib.zeros([0, 3]),
                                             fn_output_signature=lib.TensorSpec([3]))))
    with pytest.raises(ValueError, match="1\\+ dimensional"):
        tf.map_fn(lambda x: x, tf.constant(1.0))
    with pytest.raises(ValueError, match="not compatible"):
        tf.map_fn(lambda x: x, (tf.constant([1.0]), tf.constant([1.0, 2.0])))
    with pytest.raises(tf.errors.InvalidArgumentError, match="TensorArray dtype is float32"):
        tf.map_fn(lambda x: tf.cast(x, tf.int32), tf.constant([1.0]))
    with pytest.raises(ValueError, match="same nested structure"):
        tf.map_fn(lambda x: (x, x), tf.constant([1.0]))
    with pytest.raises(TypeError, match="callable"):
        tf.map_fn(3, tf.constant([1.0]))


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_like_tf_and_numpy(reverse):
    assert_close(both(lambda lib: lib.scan(lambda a, x: a + x, lib.constant(X), reverse=reverse)))
    want = np.cumsum(X[::-1], 0)[::-1] if reverse else np.cumsum(X, 0)
    np.testing.assert_allclose(tf.scan(lambda a, x: a + x, tf.constant(X),
                                       reverse=reverse).numpy(), want, rtol=1e-6)
    assert_close(both(lambda lib: lib.scan(
        lambda a, x: (a[0] + x, a[1] * x), lib.constant(X[:, 0]),
        initializer=(lib.constant(0.0), lib.constant(1.0)), reverse=reverse)))


def test_folds_like_tf():
    for name in ("foldl", "foldr"):
        assert_close(both(lambda lib, n=name: getattr(lib, n)(lambda a, x: a * 0.5 - x,
                                                              lib.constant(X))))
        assert_close(both(lambda lib, n=name: getattr(lib, n)(
            lambda a, x: a + lib.reduce_sum(x[0] * x[1]), (lib.constant(X), lib.constant(X)),
            initializer=lib.constant(2.0))))
    assert float(tf.foldr(lambda a, x: a - x, tf.constant([1.0, 2.0, 3.0]))) == 0.0
    with pytest.raises(tf.errors.OutOfRangeError):
        tf.foldl(lambda a, x: a + x, tf.zeros([0]))


def test_gradients_through_map_fn_and_scan_match_finite_differences():
    x0 = RNG.standard_normal((3, 2))
    w = tf.Variable(np.array([0.5, -1.5]))

    def loss_of(x):
        m = tf.map_fn(lambda r: tf.tanh(r * w), x)
        s = tf.scan(lambda a, r: a * r + 1.0, m)
        return tf.reduce_sum(s * s)

    x = tf.constant(x0)
    with tf.GradientTape() as t:
        t.watch(x)
        loss = loss_of(x)
    gx, gw = t.gradient(loss, [x, w])

    def np_loss(xv, wv):
        m = np.tanh(xv * wv)
        acc, out = m[0], [m[0]]
        for r in m[1:]:
            acc = acc * r + 1.0
            out.append(acc)
        return float((np.stack(out) ** 2).sum())

    assert abs(float(loss) - np_loss(x0, w.numpy())) < 1e-10
    eps = 1e-6
    fd = np.zeros_like(x0)
    for idx in np.ndindex(*x0.shape):
        e = np.zeros_like(x0)
        e[idx] = eps
        fd[idx] = (np_loss(x0 + e, w.numpy()) - np_loss(x0 - e, w.numpy())) / (2 * eps)
    np.testing.assert_allclose(gx.numpy(), fd, rtol=1e-5, atol=1e-8)
    fdw = [(np_loss(x0, w.numpy() + e) - np_loss(x0, w.numpy() - e)) / (2 * eps)
           for e in np.eye(2) * eps]
    np.testing.assert_allclose(gw.numpy(), fdw, rtol=1e-5, atol=1e-8)


def test_namedtuple_elems_and_tf_function():
    P = collections.namedtuple("P", ["a", "b"])
    f = tf.function(lambda e: tf.map_fn(lambda p: P(p.b, p.a), e))
    out = f(P(tf.constant(X), tf.constant(X * 2)))
    assert isinstance(out, P)
    np.testing.assert_array_equal(out.a.numpy(), X * 2)


def test_tf1_graph_map_fn_and_scan_are_nodes_run_per_session_run():
    from ipu_gpu.compat import v1

    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 3])
        m = tf.map_fn(lambda r: r * 2.0, x)
        s = tf.scan(lambda a, r: a + r, m)
        (g,) = v1.gradients(tf.reduce_sum(s), [x])
        with v1.Session() as sess:
            for rows in (2, 4):
                mv, sv, gv = sess.run([m, s, g], {x: X[:rows]})
                np.testing.assert_allclose(mv, X[:rows] * 2)
                np.testing.assert_allclose(sv, np.cumsum(X[:rows] * 2, 0), rtol=1e-6)
                np.testing.assert_allclose(gv, 2.0 * np.arange(rows, 0, -1)[:, None]
                                           * np.ones((rows, 3)))


def test_tf1_graph_static_elems_unroll_and_may_capture_variables():
    from ipu_gpu.compat import v1

    xv = np.arange(6, dtype=np.float32).reshape(3, 2)
    wv = np.array([[1.0], [2.0]], np.float32)

    def build(x, w):
        m = tf.map_fn(lambda r: tf.matmul(tf.expand_dims(r, 0), w)[0], x)
        s = tf.scan(lambda a, r: a + r * w[:, 0], x)
        f = tf.foldr(lambda a, r: a * 2.0 + r, x, initializer=tf.zeros([2]))
        return m, s, f, tf.reduce_sum(m) + tf.reduce_sum(s) + tf.reduce_sum(f)

    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [3, 2])
        w = v1.get_variable("w", initializer=wv)
        m, s, f, loss = build(x, w)
        gx, gw = v1.gradients(loss, [x, w])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            got = sess.run([m, s, f, gx, gw], {x: xv})
    xe, we = tf.constant(xv), tf.Variable(wv)
    with tf.GradientTape() as t:
        t.watch(xe)
        m, s, f, loss = build(xe, we)
    want = [m.numpy(), s.numpy(), f.numpy(), *[g.numpy() for g in t.gradient(loss, [xe, we])]]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(got[0], xv @ wv)
