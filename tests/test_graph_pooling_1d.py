"""1-D pooling in a TF1 graph on inputs whose batch and width are unknown (issue 17):
``MaxPooling1D``/``AveragePooling1D`` (both data formats), ``tf.nn.max_pool1d`` and
``avg_pool1d`` pool the run's width; outputs and gradients equal the eager ops and real
TensorFlow's ``compat.v1`` graphs. ``expand_dims`` and ``squeeze`` of such tensors reshape
by the run's shape; squeezing an unknown axis that is not 1 fails in the run with TF's
InvalidArgumentError."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import errors, keras

CASES = {
    "max_layer": lambda k, nn: k.layers.MaxPooling1D(2),
    "avg_layer_same": lambda k, nn: k.layers.AveragePooling1D(3, strides=2, padding="same"),
    "max_layer_channels_first": lambda k, nn: k.layers.MaxPooling1D(
        2, data_format="channels_first"),
    "max_pool1d": lambda k, nn: lambda x: nn.max_pool1d(x, 2, 2, "VALID"),
    "avg_pool1d_same": lambda k, nn: lambda x: nn.avg_pool1d(x, 3, 1, "SAME"),
}
SHAPES = [(None, None, 3), (2, None, 3), (None, 7, 3)]


@pytest.fixture(autouse=True)
def _fresh_layer_names():
    yield
    keras.backend.clear_session()


def _graph_run(tf_v1, make, shape, x_val, cot):
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, shape)
        y = make(x)
        static = y.shape.as_list()
        (g,) = tf_v1.gradients(tf_v1.reduce_sum(y * cot), [x])
        with tf_v1.Session() as sess:
            return static, sess.run([y, g], {x: x_val})


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("case", sorted(CASES))
def test_pooling_1d_of_unknown_width_equals_eager_and_tf(case, shape, real_tf):
    x_val = np.random.default_rng(0).standard_normal((2, 7, 3)).astype(np.float32)
    eager_x = ig.constant(x_val)
    with ig.GradientTape() as tape:
        tape.watch(eager_x)
        expected = CASES[case](keras, ig.nn)(eager_x)
    cot = np.random.default_rng(1).standard_normal(expected.shape).astype(np.float32)
    expected_grad = tape.gradient(expected, eager_x, output_gradients=ig.constant(cot))
    static, (out, grad) = _graph_run(v1, CASES[case](keras, ig.nn), shape, x_val, cot)
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(grad, expected_grad.numpy(), rtol=1e-6)
    tf_keras = pytest.importorskip("tf_keras")
    t_static, (t_out, t_grad) = _graph_run(real_tf.compat.v1,
                                           CASES[case](tf_keras, real_tf.nn), shape, x_val,
                                           cot)
    assert static == t_static
    np.testing.assert_allclose(out, t_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad, t_grad, rtol=1e-5, atol=1e-6)


def test_expand_dims_and_squeeze_of_two_unknown_dims():
    x_val = np.arange(6, dtype=np.float32).reshape(2, 3)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, None])
        e = v1.expand_dims(x, 1)
        s = v1.squeeze(e, [1])
        assert e.shape.as_list() == [None, 1, None]
        assert s.shape.as_list() == [None, None]
        bad = v1.squeeze(x, [1])
        with v1.Session() as sess:
            np.testing.assert_array_equal(sess.run(e, {x: x_val}), x_val[:, None])
            np.testing.assert_array_equal(sess.run(s, {x: x_val}), x_val)
            np.testing.assert_array_equal(sess.run(bad, {x: x_val[:, :1]}), x_val[:, 0])
            with pytest.raises(errors.InvalidArgumentError, match=r"squeeze dim\[1\]"):
                sess.run(bad, {x: x_val})
