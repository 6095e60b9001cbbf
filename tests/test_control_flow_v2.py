"""TF 2's tf.while_loop and tf.cond against real TensorFlow (issue 17)."""

import numpy as np
import pytest

import ipu_gpu as tf

tf_ref = None  # real TensorFlow, set by the fixture below (oneDNN off, see conftest)


@pytest.fixture(autouse=True)
def _real_tf(real_tf):
    global tf_ref
    tf_ref = real_tf


CASES = [
    lambda lib: lib.while_loop(lambda i: i < 3, lambda i: [i + 1], [lib.constant(1)]),
    lambda lib: lib.while_loop(lambda i: i < 3, lambda i: (i + 1,), [lib.constant(1)]),
    lambda lib: lib.while_loop(lambda i, j: i < 3, lambda i, j: (i + 1, j * 2.0), [0, 1.5]),
    lambda lib: lib.while_loop(lambda i, j: i < 30, lambda i, j: [i + 1, j + i], [0, 0],
                               maximum_iterations=4),
    lambda lib: lib.while_loop(lambda i: i > 5, lambda i: (i + 1,), [lib.constant(1)]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_while_loop_like_tf(case):
    ours, theirs = CASES[case](tf), CASES[case](tf_ref)
    assert type(ours) is type(theirs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b))


def test_while_loop_gradient_and_errors():
    x = tf.constant(1.5)
    with tf.GradientTape() as t:
        t.watch(x)
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), [0, tf.constant(1.0)])
    assert float(y) == 1.5 ** 3
    assert abs(float(t.gradient(y, x)) - 3 * 1.5 ** 2) < 1e-6
    with pytest.raises(TypeError):
        tf.while_loop(3, lambda i: i, [0])
    with pytest.raises(TypeError):
        tf.while_loop(lambda i: i < 1, None, [0])


def test_cond_like_tf():
    for p in (True, False):
        ours = tf.cond(tf.constant(p), lambda: tf.constant(1.0), lambda: tf.constant(2.0))
        theirs = tf_ref.cond(tf_ref.constant(p), lambda: 1.0, lambda: 2.0)
        assert float(ours) == float(theirs)
    with pytest.raises(TypeError):
        tf.cond(True, None, lambda: 1)
