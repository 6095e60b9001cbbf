"""tf.TensorArray against real TensorFlow's eager TensorArray; gradients through it by the
tape against numpy; use inside while_loop and tf.function (issue 17)."""

import numpy as np
import pytest

import ipu_gpu as tf

tf_ref = None  # real TensorFlow, set by the fixture below (oneDNN off, see conftest)


@pytest.fixture(autouse=True)
def _real_tf(real_tf):
    global tf_ref
    tf_ref = real_tf

CASES = {
    "overwrite": lambda lib: lib.TensorArray(lib.float32, size=2).write(0, [1.0, 2]).write(
        0, [3.0, 4]).stack(),
    "unwritten_zeros": lambda lib: lib.TensorArray(lib.float32, size=3).write(1, [1.0, 2]).stack(),
    "element_shape": lambda lib: lib.TensorArray(lib.float32, size=2, element_shape=[2]).stack(),
    "empty": lambda lib: lib.TensorArray(lib.float32, size=0).stack(),
    "dynamic": lambda lib: lib.TensorArray(lib.float32, size=0, dynamic_size=True).write(
        3, 1.0).stack(),
    "unstack_size": lambda lib: lib.TensorArray(lib.float32, size=0, dynamic_size=True).unstack(
        [1.0, 2, 3]).size(),
    "scatter": lambda lib: lib.TensorArray(lib.float32, size=3).scatter([2, 0],
                                                                        [[1.0], [2]]).stack(),
    "gather": lambda lib: lib.TensorArray(lib.float32, size=3).scatter(
        [2, 0], [[1.0], [2]]).gather([0, 2]),
    "concat": lambda lib: lib.TensorArray(lib.float32, size=2, infer_shape=False).write(
        0, [1.0]).write(1, [1.0, 2.0]).concat(),
    "split": lambda lib: lib.TensorArray(lib.float32, size=2).split([1.0, 2, 3], [1, 2]).read(1),
    "int": lambda lib: lib.TensorArray(lib.int32, size=2).unstack([[1, 2], [3, 4]]).stack(),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_like_tf(name):
    ours, theirs = CASES[name](tf).numpy(), CASES[name](tf_ref).numpy()
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)


ERRORS = {
    "write_past_size": lambda lib: lib.TensorArray(lib.float32, size=2).write(2, 1.0),
    "write_dtype": lambda lib: lib.TensorArray(lib.float32, size=2).write(
        0, lib.constant(1, lib.int32)),
    "read_past_end": lambda lib: lib.TensorArray(lib.float32, size=2).read(5),
    "shape_mismatch": lambda lib: lib.TensorArray(lib.float32, size=2).write(0, [1.0]).write(
        1, [1.0, 2.0]),
    "unstack_too_many": lambda lib: lib.TensorArray(lib.float32, size=2).unstack([1.0, 2, 3]),
    "negative": lambda lib: lib.TensorArray(lib.float32, size=1).write(-1, 1.0),
    "unknown_unwritten": lambda lib: lib.TensorArray(lib.float32, size=3).read(0),
}


def _read_twice(lib):
    ta = lib.TensorArray(lib.float32, size=1).write(0, 1.0)
    ta.read(0)
    return ta.read(0)


ERRORS["read_twice"] = _read_twice


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_like_tf(name):
    with pytest.raises(Exception) as theirs:
        ERRORS[name](tf_ref)
    ours_type = getattr(tf.errors, type(theirs.value).__name__, type(theirs.value))
    with pytest.raises(ours_type) as ours:
        ERRORS[name](tf)
    assert str(ours.value).split("(")[0].strip() == str(theirs.value).split("(")[0].strip()


def test_while_loop_and_tf_function_with_gradient():
    x0 = np.random.default_rng(0).standard_normal((5, 2))
    x = tf.constant(x0)

    @tf.function
    def run(x):
        ta = tf.TensorArray(tf.float64, size=0, dynamic_size=True)

        def body(i, acc, ta):
            acc = acc * 0.5 + x[i]
            return i + 1, acc, ta.write(i, acc * acc)
        _, _, ta = tf.while_loop(lambda i, acc, ta: i < 5, body,
                                 [tf.constant(0), tf.zeros([2], tf.float64), ta])
        return ta.stack()

    with tf.GradientTape() as t:
        t.watch(x)
        out = run(x)
        loss = tf.reduce_sum(out)
    acc, want, gwant = np.zeros(2), [], np.zeros_like(x0)
    for i in range(5):
        acc = acc * 0.5 + x0[i]
        want.append(acc * acc)
    np.testing.assert_allclose(out.numpy(), np.stack(want))
    # d loss / d x[i] = sum_{j>=i} 2 acc_j 0.5^(j-i)
    acc, accs = np.zeros(2), []
    for i in range(5):
        acc = acc * 0.5 + x0[i]
        accs.append(acc)
    for i in range(5):
        gwant[i] = sum(2 * accs[j] * 0.5 ** (j - i) for j in range(i, 5))
    np.testing.assert_allclose(t.gradient(loss, x).numpy(), gwant, rtol=1e-12)


def test_properties():
    ta = tf.TensorArray(tf.float32, size=2, element_shape=[3])
    assert ta.dtype == np.float32 and ta.element_shape.as_list() == [3]
    assert int(ta.size()) == 2 and ta.size().dtype == np.int32
    with pytest.raises(ValueError, match="Size must be provided"):
        tf.TensorArray(tf.float32)


def test_tf1_graph_elements_give_graph_nodes():
    from ipu_gpu.compat import v1

    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [3, 2])
        ta = tf.TensorArray(tf.float32, size=4, clear_after_read=False).unstack(x)
        ta = ta.write(1, x[0] * 5.0)
        s, r, g, c = ta.stack(), ta.read(2), ta.gather([0, 1]), ta.concat()
        (gr,) = v1.gradients(tf.reduce_sum(s), [x])
        with v1.Session() as sess:
            xv = np.arange(6, dtype=np.float32).reshape(3, 2)
            sv, rv, gv, cv, grv = sess.run([s, r, g, c, gr], {x: xv})
    want = np.stack([xv[0], xv[0] * 5, xv[2], np.zeros(2, np.float32)])
    np.testing.assert_array_equal(sv, want)
    np.testing.assert_array_equal(rv, xv[2])
    np.testing.assert_array_equal(gv, want[:2])
    np.testing.assert_array_equal(cv, want.reshape(-1))
    np.testing.assert_array_equal(grv, [[6.0, 6.0], [0.0, 0.0], [1.0, 1.0]])
