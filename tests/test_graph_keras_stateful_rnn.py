"""Stateful recurrent layers (``stateful=True``) in a TF1 graph (issue 17).

As tf_keras in ``compat.v1`` graph mode: each run reads the state variables; the final
states go into them through the layer's update ops (``layer.updates``, one assignment per
state), so a run of the output alone leaves them be; ``reset_states`` zeroes them (or sets
given values) for the next run. Compared run by run with tf_keras given the same weights,
for a known and an unknown sequence length."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras


pytestmark = pytest.mark.usefixtures("fresh_layer_names")


def _values(variables, seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(v.shape) * 0.5).astype(np.float32) for v in variables]


def _set(sess, variables, values):
    for v, w in zip(variables, values):
        v.load(w, sess) if hasattr(v, "load") else v.assign(w)


def _runs(tf_v1, keras_mod, kind, args, x_shape, x_val):
    """Outputs and states of ``kind(*args)`` (stateful, returning sequences and states) over:
    two runs of the output, the updates, a third run, a reset, a fourth run, a reset to given
    states, a fifth run."""
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, x_shape)
        layer = getattr(keras_mod.layers, kind)(*args, stateful=True, return_state=True,
                                                return_sequences=True)
        ys = layer(x)
        feed = {x: x_val}
        out = [len(layer.updates)]
        with tf_v1.Session() as sess:
            sess.run(tf_v1.global_variables_initializer())
            _set(sess, layer.weights, _values(layer.weights, 1))
            out += sess.run(ys, feed) + sess.run(ys, feed)
            sess.run(layer.updates, feed)
            out += sess.run(ys, feed) + sess.run(layer.states)
            sess.run(layer.updates, feed)
            layer.reset_states()
            out += sess.run(layer.states) + sess.run(ys, feed)
            given = _values(layer.states, 2)
            layer.reset_states(given)
            out += sess.run(layer.states) + sess.run(ys, feed)
    return out


@pytest.mark.parametrize("time", [3, None])
@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU"])
def test_stateful_rnn_in_a_graph_equals_tf_keras_compat_v1(kind, time, real_tf, tf_keras):
    x_val = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    ours = _runs(v1, keras, kind, (5,), (2, time, 4), x_val)
    theirs = _runs(real_tf.compat.v1, tf_keras, kind, (5,), (2, time, 4), x_val)
    assert ours[0] == theirs[0] == (2 if kind == "LSTM" else 1)
    assert len(ours) == len(theirs)
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("time", [3, None])
@pytest.mark.parametrize("kind,spatial", [("ConvLSTM1D", (6, 2)), ("ConvLSTM2D", (5, 4, 2)),
                                          ("ConvLSTM3D", (3, 4, 3, 2))])
def test_stateful_conv_lstm_in_a_graph_equals_tf_keras_compat_v1(kind, spatial, time, real_tf,
                                                                tf_keras):
    """ConvLSTM keeps its states as the other RNNs: two update ops (h and c)."""
    x_val = np.random.default_rng(4).standard_normal((2, 3, *spatial)).astype(np.float32)
    args = (3, 2)  # filters, kernel_size
    ours = _runs(v1, keras, kind, args, (2, time, *spatial), x_val)
    theirs = _runs(real_tf.compat.v1, tf_keras, kind, args, (2, time, *spatial), x_val)
    assert ours[0] == theirs[0] == 2
    assert len(ours) == len(theirs) == 1 + 5 * 3 + 3 * 2  # 5 runs of 3 outputs, 3 of 2 states
    for a, b in zip(ours[1:], theirs[1:]):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_stateful_model_carries_its_state_across_runs_of_its_updates():
    """A Sequential model's updates carry the state from one batch to the next: two runs
    over halves of a sequence (running ``model.updates``) equal one run over the whole
    sequence; ``model.reset_states()`` starts again from zeros."""
    x_val = np.random.default_rng(3).standard_normal((2, 6, 4)).astype(np.float32)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, (2, 3, 4))
        whole = v1.placeholder(np.float32, (2, 6, 4))
        model = keras.Sequential([keras.layers.LSTM(5, stateful=True, return_sequences=True)])
        y = model(x)
        reference = keras.Sequential([keras.layers.LSTM(5, return_sequences=True)])
        y_whole = reference(whole)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            reference.set_weights(model.get_weights())
            first = sess.run([y, model.updates], {x: x_val[:, :3]})[0]
            second = sess.run([y, model.updates], {x: x_val[:, 3:]})[0]
            expected = sess.run(y_whole, {whole: x_val})
            model.reset_states()
            again = sess.run(y, {x: x_val[:, :3]})
    np.testing.assert_allclose(np.concatenate([first, second], axis=1), expected, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(again, first, rtol=1e-6)


def _bidirectional_runs(tf_v1, keras_mod, x_val):
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, (2, 3, 4))
        layer = keras_mod.layers.Bidirectional(keras_mod.layers.GRU(3, stateful=True))
        y = layer(x)
        out = [len(layer.updates)]
        with tf_v1.Session() as sess:
            sess.run(tf_v1.global_variables_initializer())
            _set(sess, layer.weights, _values(layer.weights, 1))
            out.append(sess.run(y, {x: x_val}))
            sess.run(layer.updates, {x: x_val})
            out.append(sess.run(y, {x: x_val}))
            layer.reset_states()
            out.append(sess.run(y, {x: x_val}))
    return out


def test_stateful_bidirectional_in_a_graph_equals_tf_keras(real_tf, tf_keras):
    """Both directions keep their states through their update ops (two, as tf_keras)."""
    x_val = np.random.default_rng(4).standard_normal((2, 3, 4)).astype(np.float32)
    ours = _bidirectional_runs(v1, keras, x_val)
    theirs = _bidirectional_runs(real_tf.compat.v1, tf_keras, x_val)
    assert ours[0] == theirs[0] == 2
    for a, b in zip(ours[1:], theirs[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    assert not np.allclose(ours[1], ours[2])  # the updates moved the states
    np.testing.assert_allclose(ours[3], ours[1], rtol=1e-6)  # reset: as the first run
