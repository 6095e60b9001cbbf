"""Keras layers given ``training`` as a TF1 bool tensor, positionally or by keyword, and the
update ops such layers make (issue 17).

A layer that does not take the tensor itself is a graph cond of its training and inference
calls; the update ops (``add_update``) each call makes run only in the runs of its mode, as
tf_keras's update ops built under ``smart_cond`` (tf_keras gives the tensor to ``call``).
Layers are built in a ``v1.Graph()`` and run for a sequence of fed values, running their
``updates`` after each, and compared with tf_keras in ``compat.v1`` graph mode, with a numpy
model, and inside ``ipu_compiler.compile``."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras
from ipu_gpu.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops, scopes

L = keras.layers
FLAGS = [True, False, True, True, False]


pytestmark = pytest.mark.usefixtures("fresh_layer_names")


def _data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _smart_cond(tf_v1, pred, true_fn, false_fn):
    if isinstance(pred, bool):  # ipu_gpu calls the layer once per mode
        return true_fn() if pred else false_fn()
    return tf_v1.cond(pred, true_fn, false_fn)


def _tracking(keras_mod, tf_v1):
    class Tracking(keras_mod.layers.Layer):
        """Adds the batch mean to ``total`` in every run and counts the training runs in
        ``steps``; doubles its inputs in training."""

        def build(self, input_shape):
            self.total = self.add_weight(name="total", shape=(input_shape[-1],),
                                         initializer="zeros", trainable=False)
            self.steps = self.add_weight(name="steps", shape=(), initializer="zeros",
                                         trainable=False)

        def call(self, inputs, training=None):
            self.add_update(self.total.assign_add(tf_v1.reduce_mean(inputs, 0)))
            self.add_update(self.steps.assign_add(
                _smart_cond(tf_v1, training, lambda: 1.0, lambda: 0.0)))
            return _smart_cond(tf_v1, training, lambda: inputs * 2.0, lambda: inputs)
    return Tracking()


def _tracking_runs(tf_v1, keras_mod, x_val, positional):
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, [None, 3])
        is_training = tf_v1.placeholder(bool, [])
        layer = _tracking(keras_mod, tf_v1)
        y = layer(x, is_training) if positional else layer(x, training=is_training)
        (g,) = tf_v1.gradients(tf_v1.reduce_sum(y * y), [x])
        runs = []
        with tf_v1.Session() as sess:
            sess.run(tf_v1.global_variables_initializer())
            for flag in FLAGS:
                feed = {x: x_val, is_training: flag}
                runs.append(sess.run([y, g], feed))
                sess.run(layer.updates, feed)
                runs.append(sess.run(layer.weights))
    return runs


@pytest.mark.parametrize("positional", [False, True])
def test_layer_with_update_ops_under_a_training_placeholder_equals_tf_keras(
        positional, real_tf, tf_keras):
    x_val = _data((4, 3), 1)
    ours = _tracking_runs(v1, keras, x_val, positional)
    theirs = _tracking_runs(real_tf.compat.v1, tf_keras, x_val, positional)
    for a, b in zip(ours, theirs):
        for u, w in zip(a, b):
            np.testing.assert_allclose(u, w, rtol=1e-5, atol=1e-6)
    # numpy model: total moves every run, steps in the runs fed True
    np.testing.assert_allclose(ours[-1][0], len(FLAGS) * x_val.mean(0), rtol=1e-5)
    assert float(ours[-1][1]) == sum(FLAGS)


def test_python_bool_style_layer_updates_only_in_training_runs():
    """A layer testing ``if training:`` (tf_keras would refuse a tensor there) is called
    once per mode: the update its training call adds runs only in runs fed True."""
    class Counting(L.Layer):
        def build(self, input_shape):
            self.count = self.add_weight(name="count", shape=(), initializer="zeros",
                                         trainable=False)

        def call(self, inputs, training=None):
            if training:
                self.add_update(v1.assign_add(self.count, 1.0))
                return inputs * 3.0
            return inputs

    x_val = np.ones((2, 3), np.float32)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 3])
        is_training = v1.placeholder(bool, [])
        layer = Counting()
        y = layer(x, is_training)
        assert len(layer.updates) == 1
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            counts = []
            for flag in FLAGS:
                out = sess.run(y, {x: x_val, is_training: flag})
                np.testing.assert_array_equal(out, x_val * (3.0 if flag else 1.0))
                sess.run(layer.updates, {x: x_val, is_training: flag})
                counts.append(float(sess.run(layer.count)))
    np.testing.assert_array_equal(counts, np.cumsum(FLAGS))


def _bn_runs(tf_v1, keras_mod, x_val, positional):
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, [None, 3])
        is_training = tf_v1.placeholder(bool, [])
        layer = keras_mod.layers.BatchNormalization(momentum=0.5)
        y = layer(x, is_training) if positional else layer(x, training=is_training)
        runs = []
        with tf_v1.Session() as sess:
            sess.run(tf_v1.global_variables_initializer())
            for flag in FLAGS:
                feed = {x: x_val, is_training: flag}
                runs.append(sess.run(y, feed))
                sess.run(layer.updates, feed)
                runs += sess.run(layer.weights)
    return runs


def test_batch_normalization_given_the_placeholder_positionally(real_tf, tf_keras):
    x_val = _data((6, 3), 2) * 2 + 1
    ours = _bn_runs(v1, keras, x_val, True)
    for a, b in zip(ours, _bn_runs(v1, keras, x_val, False)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(ours, _bn_runs(real_tf.compat.v1, tf_keras, x_val, True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_dropout_and_model_given_the_placeholder_positionally():
    x_val = np.ones((4, 50), np.float32)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 50])
        is_training = v1.placeholder(bool, [])
        inputs = keras.Input((50,))
        model = keras.Model(inputs, L.Dropout(0.5)(inputs))
        ys = [L.Dropout(0.5)(x, is_training), model(x, is_training)]
        with v1.Session() as sess:
            for y in ys:
                np.testing.assert_array_equal(sess.run(y, {x: x_val, is_training: False}),
                                              x_val)
                dropped = sess.run(y, {x: x_val, is_training: True})
                assert set(np.unique(dropped)) == {0.0, 2.0}


def test_update_ops_under_a_training_placeholder_in_a_compiled_program(fresh_ipu_system):
    """Inside ``ipu_compiler.compile``: a loop over an infeed runs the Tracking layer's
    update ops (control dependencies of the outfeed enqueue) in every iteration; ``steps``
    counts only the executions fed True (numpy model)."""
    from conftest import configure_ipus

    configure_ipus(1)
    x_all = _data((6, 3), 3)
    ds = ig.data.Dataset.from_tensor_slices(x_all).batch(2, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        is_training = v1.placeholder(bool, [])
        layer = _tracking(keras, v1)

        def body(x):
            y = layer(x, is_training)
            with v1.control_dependencies(layer.updates):
                return outfeed.enqueue(v1.reduce_sum(y))

        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda: loops.repeat(3, body, [], infeed), [])
        dequeue = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            sums = []
            for flag in [True, False]:
                sess.run(program, {is_training: flag})
                sums.append(sess.run(dequeue))
            total, steps = sess.run(layer.weights)
    batches = x_all.reshape(3, 2, 3)
    np.testing.assert_allclose(sums[0], 2.0 * batches.sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(sums[1], batches.sum(axis=(1, 2)), rtol=1e-5)
    np.testing.assert_allclose(total, 2 * batches.mean(axis=1).sum(axis=0), rtol=1e-5)
    assert float(steps) == 3.0


@pytest.mark.parametrize("replicas", [1, 2])
def test_synchronized_batch_normalization_under_a_placeholder_in_a_compiled_program(
        replicas, fresh_ipu_system):
    """``BatchNormalization(synchronized=True)`` given the placeholder inside a replicated
    ``ipu_compiler.compile``: runs fed True move the moving statistics by the statistics of
    the replicas' combined batch (numpy model), runs fed False leave them be."""
    from conftest import configure_ipus

    configure_ipus(replicas)
    batch = 4
    x_all = _data((replicas * batch, 3), 4) * 2 + 1
    ds = ig.data.Dataset.from_tensor_slices(x_all).batch(batch, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        is_training = v1.placeholder(bool, [])
        layer = L.BatchNormalization(synchronized=True, momentum=0.5, epsilon=1e-3)

        def body(x):
            y = layer(x, training=is_training)
            with v1.control_dependencies(layer.updates):
                return outfeed.enqueue(y)

        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda: loops.repeat(1, body, [], infeed), [])
        dequeue = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            sess.run(program, {is_training: False})
            inference = sess.run(dequeue)
            unchanged = sess.run([layer.moving_mean, layer.moving_variance])
            sess.run(program, {is_training: True})
            trained = sess.run(dequeue)
            moved = sess.run([layer.moving_mean, layer.moving_variance])
    mean, var = x_all.mean(0), x_all.var(0)
    np.testing.assert_allclose(unchanged[0], 0.0)
    np.testing.assert_allclose(unchanged[1], 1.0)
    np.testing.assert_allclose(inference.reshape(-1, 3), x_all / np.sqrt(1 + 1e-3), rtol=1e-5)
    np.testing.assert_allclose(moved[0], 0.5 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(moved[1], 0.5 + 0.5 * var, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(trained.reshape(-1, 3), (x_all - mean) / np.sqrt(var + 1e-3),
                               rtol=1e-4, atol=1e-5)
