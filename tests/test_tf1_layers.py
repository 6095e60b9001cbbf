"""tf.layers conv2d / max_pooling2d / average_pooling2d / batch_normalization (TF 1.15) on
get_variable: outputs, variable names, moving statistics and update ops equal real TF1 graph
mode with identical initial values."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1


def _build_and_run(tf_mod, c, training, data_format="channels_last", steps=2):
    rng = np.random.default_rng(0)
    x_val = rng.standard_normal((4, 8, 8, 3)).astype(np.float32)
    k1 = (rng.standard_normal(3 * 3 * 3 * 5) * 0.2).astype(np.float32)
    k2 = (rng.standard_normal(5 * 2) * 0.3).astype(np.float32)
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(tf_mod.float32, [None, 8, 8, 3])
        is_training = c.placeholder(tf_mod.bool, [])
        h = x if data_format == "channels_last" else tf_mod.transpose(x, [0, 3, 1, 2])
        h = c.layers.conv2d(h, 5, 3, padding="same", activation=tf_mod.nn.relu,
                            kernel_initializer=c.constant_initializer(k1),
                            data_format=data_format)
        axis = -1 if data_format == "channels_last" else 1
        h = c.layers.batch_normalization(
            h, axis=axis, momentum=0.9,
            training=is_training if training == "tensor" else training)
        h = c.layers.max_pooling2d(h, 2, 2, data_format=data_format)
        h = c.layers.average_pooling2d(h, 2, 1, padding="same", data_format=data_format)
        out = c.layers.conv2d(h, 2, (1, 1), name="head",
                              kernel_initializer=c.constant_initializer(k2),
                              data_format=data_format)
        updates = c.get_collection(c.GraphKeys.UPDATE_OPS)
        names = sorted(v.name for v in c.global_variables())
        moving = [v for v in c.global_variables() if "moving" in v.name]
        feed = {x: x_val, is_training: training is not False}
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            outs = [sess.run([out, updates], feed)[0] for _ in range(steps)]
            return outs, names, sess.run(moving), len(updates)


@pytest.mark.filterwarnings("ignore:`tf.layers:UserWarning")  # TF's deprecation notices
@pytest.mark.parametrize("training", [True, False, "tensor"])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_layers_equal_real_tensorflow(real_tf, monkeypatch, training, data_format):
    if data_format == "channels_first" and training != "tensor":
        pytest.skip("one channels_first case suffices")
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")  # TF's tf.layers need Keras 2
    ours = _build_and_run(tf, v1, training, data_format)
    try:
        theirs = _build_and_run(real_tf, real_tf.compat.v1, training, data_format)
    except Exception as e:  # TF's CPU kernels have no NCHW convolution
        if "NHWC" in str(e) or "data_format" in str(e):
            pytest.skip(f"TensorFlow cannot run this case on the CPU: {e}")
        raise
    for a, b in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert ours[1] == theirs[1]
    for a, b in zip(ours[2], theirs[2]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours[3] == theirs[3]


def test_batch_normalization_against_numpy():
    rng = np.random.default_rng(3)
    x_val = rng.standard_normal((6, 4)).astype(np.float32) * 2 + 1
    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 4])
        y = v1.layers.batch_normalization(x, training=True, momentum=0.8, epsilon=1e-3)
        updates = v1.get_collection(v1.GraphKeys.UPDATE_OPS)
        mm, mv = [v for v in v1.global_variables() if "moving" in v.name]
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            out = sess.run([y, updates], {x: x_val})[0]
            moving_mean, moving_var = sess.run([mm, mv])
    x64 = x_val.astype(np.float64)
    mean, var = x64.mean(0), x64.var(0)
    np.testing.assert_allclose(out, (x64 - mean) / np.sqrt(var + 1e-3), rtol=1e-5, atol=1e-5)
    # a 2-D input is not fused: the moving variance takes the biased batch variance
    np.testing.assert_allclose(moving_mean, 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moving_var, 0.8 + 0.2 * var, rtol=1e-5)


def test_layer_arguments_are_checked():
    with v1.Graph().as_default():
        x = v1.placeholder(tf.float32, [None, 8, 8, 3])
        with pytest.raises(ValueError, match="padding"):
            v1.layers.conv2d(x, 2, 3, padding="full")
        with pytest.raises(ValueError, match="kernel_size"):
            v1.layers.conv2d(x, 2, (3, 3, 3))
        with pytest.raises(ValueError, match="data_format"):
            v1.layers.max_pooling2d(x, 2, 2, data_format="nhwc")
        with pytest.raises(ValueError, match="Invalid axis"):
            v1.layers.batch_normalization(x, axis=4)
        v1.layers.conv2d(x, 2, 3, name="shared")
        with pytest.raises(ValueError, match="already exists"):
            v1.layers.conv2d(x, 2, 3, name="shared")
        with v1.variable_scope("", reuse=True):
            v1.layers.conv2d(x, 2, 3, name="shared")  # reuse: the same variables
