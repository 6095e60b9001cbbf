"""BatchNormalization given ``training`` as a TF1 bool placeholder (issue 17).

TF1 programs feed an ``is_training`` placeholder: tf_keras normalises with the batch or the
moving statistics per run (smart_cond) and its two update ops move the moving statistics only
in runs fed True. Layers and models here are built in a ``v1.Graph()``, run for a sequence of
fed values (outputs, gradients, then ``updates``), and compared with tf_keras in
``compat.v1`` graph mode given the same weights, and with the eager layer called with
``training=True``/``False``."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras

L = keras.layers
FLAGS = [False, True, False, True]  # the runs, in order: inference must leave the state be
pytestmark = pytest.mark.usefixtures("fresh_layer_names")

CASES = {
    "dense": ({}, (6, 3)),
    "conv_fused": ({"fused": True}, (2, 3, 3, 4)),
    "conv_unfused": ({"fused": False, "axis": 1}, (2, 4, 3, 3)),
    "virtual": ({"virtual_batch_size": 2}, (6, 3)),
    "renorm": ({"renorm": True, "renorm_momentum": 0.7}, (6, 3)),
    "renorm_clipped_axes": ({"renorm": True, "axis": [1, 2], "virtual_batch_size": 2,
                             "renorm_clipping": {"rmax": 1.2, "rmin": 0.9, "dmax": 0.1}},
                            (4, 2, 3)),
    "adjustment": ({"adjustment": "per-channel"}, (6, 3)),
}


def _adjustment(lib):
    """Scale 0.9 + 0.1 c and bias 0.05 c on channel c, of ``lib``'s ops."""
    def adjustment(shape):
        channels = lib.cast(lib.range(shape[-1]), "float32")
        return channels * 0.1 + 0.9, channels * 0.05
    return adjustment


def _data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _weights(layer, seed):
    """Non-trivial values for every weight (variances positive)."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(0.5, 1.5, w.shape) if "var" in w.name or "stddev" in w.name
             or "gamma" in w.name else rng.standard_normal(w.shape)).astype(np.float32)
            for w in layer.weights]


def _set(tf_v1, sess, variables, values):
    for v, w in zip(variables, values):
        v.load(w, sess) if hasattr(v, "load") else v.assign(w)


def _graph_runs(tf_v1, keras_mod, kwargs, x_val, weights_seed):
    """For each of FLAGS: (output, gradients wrt x/gamma/beta, weights after ``updates``)."""
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, (None,) + x_val.shape[1:])
        is_training = tf_v1.placeholder(bool, [])
        if kwargs.get("adjustment"):
            kwargs = {**kwargs, "adjustment": _adjustment(tf_v1)}
        layer = keras_mod.layers.BatchNormalization(momentum=0.6, **kwargs)
        y = layer(x, training=is_training)
        assert len(layer.updates) == 2  # the moving mean and variance, as TF
        cot = _data(x_val.shape, 7)
        grads = tf_v1.gradients(tf_v1.reduce_sum(y * cot),
                                [x] + list(layer.trainable_weights))
        with tf_v1.Session() as sess:
            sess.run(tf_v1.global_variables_initializer())
            initial = _weights(layer, 5 + weights_seed)
            _set(tf_v1, sess, layer.weights, initial)
            runs = []
            for flag in FLAGS:
                feed = {x: x_val, is_training: flag}
                out, g = sess.run([y, grads], feed)
                sess.run(layer.updates, feed)
                runs.append((out, g, sess.run(layer.weights)))
    return initial, runs


@pytest.mark.parametrize("case", sorted(CASES))
def test_training_placeholder_equals_tf_keras_compat_v1(case, real_tf, tf_keras):
    kwargs, shape = CASES[case]
    x_val = _data(shape, 3) * 2 + 1
    initial, ours = _graph_runs(v1, keras, kwargs, x_val, 0)
    _, theirs = _graph_runs(real_tf.compat.v1, tf_keras, kwargs, x_val, 0)
    for flag, (out, g, w), (t_out, t_g, t_w) in zip(FLAGS, ours, theirs):
        np.testing.assert_allclose(out, t_out, rtol=1e-5, atol=1e-5, err_msg=str(flag))
        for a, b in zip(g, t_g):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4, err_msg=str(flag))
        for a, b in zip(w, t_w):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=str(flag))
    # the inference runs changed nothing; the training runs moved the moving statistics
    for a, b in zip(ours[0][2], initial):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(ours[2][2], ours[1][2]):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(ours[1][2][2], initial[2])


@pytest.mark.parametrize("case", ["dense", "conv_fused", "renorm"])
def test_training_placeholder_equals_the_eager_layer_in_each_mode(case):
    """Each run equals the eager layer called with the fed value, in the same state: outputs,
    gradients, and the moving statistics after the updates (eagerly, the call moves them)."""
    kwargs, shape = CASES[case]
    x_val = _data(shape, 4) * 2 + 1
    initial, runs = _graph_runs(v1, keras, kwargs, x_val, 1)
    layer = L.BatchNormalization(momentum=0.6, **kwargs)
    layer(ig.constant(x_val), training=False)
    layer.set_weights(initial)
    cot = _data(x_val.shape, 7)
    for flag, (out, g, w) in zip(FLAGS, runs):
        x = ig.constant(x_val)
        with ig.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=flag)
            loss = ig.reduce_sum(y * cot)
        expected = tape.gradient(loss, [x] + list(layer.trainable_weights))
        np.testing.assert_allclose(out, y.numpy(), rtol=1e-5, atol=1e-5)
        for a, b in zip(g, expected):
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-4, atol=1e-5)
        for a, b in zip(w, layer.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _model(keras_mod, kind):
    layers = keras_mod.layers
    stack = [layers.Dense(5, activation="relu"), layers.BatchNormalization(momentum=0.7),
             layers.Dense(2)]
    if kind == "sequential":
        return keras_mod.Sequential(stack)
    inputs = keras_mod.Input((6,))
    h = inputs
    for layer in stack:
        h = layer(h)
    return keras_mod.Model(inputs, h)


def _model_training(tf_v1, keras_mod, kind, weights, x_val, y_val, flags):
    """A model called on placeholders with ``training=is_training``; per fed value one step
    of GradientDescent after ``model.updates``: losses, gradients, final weights."""
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, [None, 6])
        y = tf_v1.placeholder(np.float32, [None, 2])
        is_training = tf_v1.placeholder(bool, [])
        model = _model(keras_mod, kind)
        before = len(model.updates)  # tf_keras's functional build on its Input makes two
        loss = tf_v1.reduce_mean(tf_v1.square(model(x, training=is_training) - y))
        updates = model.updates[before:]
        assert len(updates) == 2
        grads = tf_v1.gradients(loss, model.trainable_weights)
        with tf_v1.control_dependencies(updates):
            train = tf_v1.train.GradientDescentOptimizer(0.1).minimize(
                loss, var_list=model.trainable_weights)
        with tf_v1.Session() as sess:
            sess.run(tf_v1.global_variables_initializer())
            _set(tf_v1, sess, model.weights, weights)
            steps = []
            for flag in flags:
                feed = {x: x_val, y: y_val, is_training: flag}
                steps.append(sess.run([loss, grads], feed))
                sess.run(train, feed)
            return steps, sess.run(model.weights)


@pytest.mark.parametrize("kind", ["sequential", "functional"])
def test_model_with_a_training_placeholder_equals_tf_keras_compat_v1(kind, real_tf, tf_keras):
    x_val, y_val = _data((8, 6), 30), _data((8, 2), 31)
    keras.utils.set_random_seed(0)
    probe = _model(keras, kind)
    probe(ig.constant(x_val))
    weights = probe.get_weights()
    flags = [True, False, True, False]
    ours, ours_w = _model_training(v1, keras, kind, weights, x_val, y_val, flags)
    theirs, theirs_w = _model_training(real_tf.compat.v1, tf_keras, kind, weights, x_val,
                                       y_val, flags)
    for (loss, g), (t_loss, t_g) in zip(ours, theirs):
        np.testing.assert_allclose(loss, t_loss, rtol=1e-5, atol=1e-6)
        for a, b in zip(g, t_g):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(ours_w, theirs_w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(ours[0][0], ours[1][0])  # the modes differ


def test_functional_model_passes_the_placeholder_to_its_dropout_and_batch_norm():
    """The layers of a functional model called with no ``training`` of their own see the
    model's training tensor: Dropout drops and BatchNormalization uses the batch statistics
    only in runs fed True."""
    x_val = _data((8, 6), 40)
    inputs = keras.Input((6,))
    h = L.Dense(6)(inputs)
    h = L.Dropout(0.5)(h, training=None)  # None: the model's
    outputs = L.BatchNormalization()(h)
    eager = keras.Model(inputs, outputs)
    expected = eager(ig.constant(x_val), training=False).numpy()
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 6])
        is_training = v1.placeholder(bool, [])
        model = keras.Model.from_config(eager.get_config())
        y = model(x, training=is_training)
        model.set_weights(eager.get_weights())
        with v1.Session() as sess:
            got = sess.run(y, {x: x_val, is_training: False})
            trained = sess.run(y, {x: x_val, is_training: True})
            sess.run(model.updates, {x: x_val, is_training: False})
            assert all(np.array_equal(a, b)
                       for a, b in zip(model.get_weights(), eager.get_weights()))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(trained.mean(axis=0), np.zeros(6), atol=1e-5)  # batch stats


def test_frozen_batch_normalization_ignores_the_placeholder():
    """``trainable=False``: inference in every run, as Keras 2, and no update ops."""
    x_val = _data((4, 3), 41) + 2
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 3])
        is_training = v1.placeholder(bool, [])
        layer = L.BatchNormalization(trainable=False)
        y = layer(x, training=is_training)
        assert layer.updates == []
        with v1.Session() as sess:
            a = sess.run(y, {x: x_val, is_training: True})
    np.testing.assert_allclose(a, x_val / np.sqrt(1 + 1e-3), rtol=1e-6)


def _subclassed(keras_mod, base):
    layers = keras_mod.layers

    class Block(getattr(keras_mod, base) if base == "Model" else layers.Layer):
        """Dense, Dropout and BatchNormalization, ``training`` passed on by hand."""

        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(4)
            self.drop = layers.Dropout(0.5)
            self.norm = layers.BatchNormalization(momentum=0.5)

        def call(self, inputs, training=None):
            h = self.drop(self.dense(inputs), training=training)
            return self.norm(h, training=training)
    return Block()


@pytest.mark.parametrize("base", ["Layer", "Model"])
def test_subclassed_layer_holding_batch_normalization_equals_tf_keras(base, real_tf, tf_keras):
    """A layer or model holding a BatchNormalization gets the tensor itself, as in tf_keras
    (a cond of its two calls would hide the update ops). Runs fed False only: Dropout's
    random mask differs from TensorFlow's."""
    x_val = _data((6, 3), 50)
    keras.utils.set_random_seed(0)
    probe = _subclassed(keras, base)
    probe(ig.constant(x_val))
    initial = _weights(probe, 51)
    results = []
    for tf_v1, keras_mod in [(v1, keras), (real_tf.compat.v1, tf_keras)]:
        with tf_v1.Graph().as_default():
            x = tf_v1.placeholder(np.float32, [None, 3])
            is_training = tf_v1.placeholder(bool, [])
            block = _subclassed(keras_mod, base)
            y = block(x, training=is_training)
            (g,) = tf_v1.gradients(tf_v1.reduce_sum(y * y), [x])
            with tf_v1.Session() as sess:
                sess.run(tf_v1.global_variables_initializer())
                _set(tf_v1, sess, block.weights, initial)
                feed = {x: x_val, is_training: False}
                out = sess.run([y, g], feed)
                sess.run(block.updates, feed)
                frozen = sess.run(block.weights)
                sess.run(block.updates, {x: x_val, is_training: True})
                moved = sess.run(block.weights)
                results.append((out, frozen, len(block.updates)))
        assert not np.allclose(moved[-2], initial[-2])  # the moving mean, in a run fed True
    (ours, ours_w, n), (theirs, theirs_w, t_n) = results
    assert n == t_n == 2
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for a, b, w0 in zip(ours_w, theirs_w, initial):
        np.testing.assert_array_equal(a, w0)
        np.testing.assert_array_equal(b, w0)


def test_masked_training_placeholder_equals_tf_keras_compat_v1(real_tf, tf_keras):
    """A mask weights the batch statistics of the runs fed True (batch of unknown size)."""
    x_val = _data((3, 4, 2), 60) * 2 + 1
    mask = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [1, 0, 0, 0]], bool)
    results = []
    for tf_v1, keras_mod in [(v1, keras), (real_tf.compat.v1, tf_keras)]:
        with tf_v1.Graph().as_default():
            x = tf_v1.placeholder(np.float32, (None, 4, 2))
            m = tf_v1.placeholder(bool, (None, 4))
            is_training = tf_v1.placeholder(bool, [])
            layer = keras_mod.layers.BatchNormalization(momentum=0.5)
            y = layer(x, training=is_training, mask=m)
            with tf_v1.Session() as sess:
                sess.run(tf_v1.global_variables_initializer())
                runs = []
                for flag in FLAGS:
                    feed = {x: x_val, m: mask, is_training: flag}
                    runs.append(sess.run(y, feed))
                    sess.run(layer.updates, feed)
                    runs += sess.run(layer.weights)
                results.append(runs)
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
