"""``ConvLSTM1D/2D/3D`` (issue 16) against tf-keras with shared weights: outputs and states
(return_sequences, return_state, go_backwards, strides, dilation, padding), gradients, masks,
initial states, stateful layers, dropout under the same global seed, configs, errors, HDF5
weights both ways and a short ``fit``; a float64 numpy reference with finite differences
(dropout masks included); channels_first against channels_last; TF1 graph use."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras
from ipu_gpu.keras import backend, losses, optimizers
from ipu_gpu.keras import layers as L
from keras_interop import (assert_fit_matches, assert_graph_matches_eager,
                           assert_outputs_and_gradients_match, load_our_hdf5_weights,
                           load_their_hdf5_weights)


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


CASES = [
    ("ConvLSTM1D", (2, 4, 7, 3), dict(kernel_size=3)),
    ("ConvLSTM1D", (2, 3, 8, 2), dict(kernel_size=2, strides=2, padding="same",
                                      return_sequences=True, go_backwards=True)),
    ("ConvLSTM2D", (2, 3, 6, 5, 2), dict(kernel_size=(3, 2), padding="same",
                                         return_state=True)),
    ("ConvLSTM2D", (2, 3, 7, 6, 2), dict(kernel_size=2, strides=2, return_sequences=True,
                                         return_state=True, activation="relu")),
    ("ConvLSTM2D", (2, 3, 7, 6, 2), dict(kernel_size=2, dilation_rate=2, use_bias=False,
                                         recurrent_activation="sigmoid")),
    ("ConvLSTM3D", (1, 3, 4, 4, 4, 2), dict(kernel_size=2, return_state=True,
                                            unit_forget_bias=False)),
]


def _flat(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def _pair(tfk, name, shape, kwargs, seed=0):
    ours, theirs = getattr(L, name)(filters=3, **kwargs), getattr(tfk.layers, name)(
        filters=3, **kwargs)
    theirs.build(shape)
    ours.build(shape)
    rng = np.random.default_rng(seed)
    weights = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    return ours, theirs


@pytest.mark.parametrize("name,shape,kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                          enumerate(CASES)])
def test_outputs_states_and_gradients_match_tf_keras(tfk, real_tf, name, shape, kwargs):
    ours, theirs = _pair(tfk, name, shape, kwargs)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    assert_outputs_and_gradients_match(real_tf, ours, theirs, x, rng)
    want_shapes = _flat(theirs.compute_output_shape(shape))
    assert [tuple(s) for s in _flat(ours.compute_output_shape(shape))] == [
        tuple(s) for s in want_shapes]
    assert ours.get_config() == theirs.get_config() | {"name": ours.name}
    clone = type(ours).from_config(ours.get_config())
    assert clone.get_config() == ours.get_config() | {"name": clone.name}


def test_masks_initial_states_and_stateful_match_tf_keras(tfk, real_tf):
    tf = real_tf
    shape = (2, 4, 6, 2)
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    ours, theirs = _pair(tfk, "ConvLSTM1D", shape, dict(kernel_size=2, return_sequences=True,
                                                          return_state=True))
    mask = np.array([[1, 0, 1, 1], [1, 1, 1, 0]], bool)
    for a, b in zip(ours(x, mask=mask), theirs(x, mask=tf.constant(mask))):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    states = [rng.standard_normal((2, 5, 3)).astype(np.float32) for _ in range(2)]
    for a, b in zip(ours(x, initial_state=states),
                    theirs(x, initial_state=[tf.constant(s) for s in states])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="expects 2 state"):
        ours(x, initial_state=states[:1])

    kwargs = dict(filters=3, kernel_size=2, stateful=True, batch_input_shape=shape)
    ours, theirs = L.ConvLSTM1D(**kwargs), tfk.layers.ConvLSTM1D(**kwargs)
    theirs(x)
    ours(x)
    weights = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    ours.reset_states()
    theirs.reset_states()
    for _ in range(2):  # the second call starts from the first call's states
        np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    assert [tuple(s.shape) for s in ours.states] == [(2, 5, 3), (2, 5, 3)]
    ours.reset_states()
    theirs.reset_states()
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs", [dict(dropout=0.3), dict(recurrent_dropout=0.4),
                                    dict(dropout=0.2, recurrent_dropout=0.3)])
def test_dropout_under_the_same_global_seed_matches_tf_keras(tfk, real_tf, kwargs):
    """Four input and four recurrent masks, drawn in tf-keras's order from the same stream.
    (tf-keras's eager cell keeps its first call's masks for every later call, inference
    calls included, and ones after a first inference call; ours draws per training call, as
    its traced ``fit`` does: compare a first call.)"""
    tf = real_tf
    shape = (2, 3, 6, 5, 2)
    ours, theirs = _pair(tfk, "ConvLSTM2D", shape, dict(kernel_size=2, padding="same",
                                                        **kwargs))
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    tf.random.set_seed(3)
    ig.random.set_seed(3)
    xi, xt = ig.constant(x), tf.constant(x)
    with ig.GradientTape() as t1:
        t1.watch(xi)
        yi = ours(xi, training=True)
    with tf.GradientTape() as t2:
        t2.watch(xt)
        yt = theirs(xt, training=True)
    np.testing.assert_allclose(yi.numpy(), yt.numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(t1.gradient(yi, [xi, *ours.trainable_variables]),
                    t2.gradient(yt, [xt, *theirs.trainable_variables])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)
    plain = tfk.layers.ConvLSTM2D(3, 2, padding="same")  # tf-keras's would reuse its masks
    plain.build(shape)
    plain.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(x).numpy(), plain(x).numpy(), rtol=1e-5, atol=1e-6)


def _conv1d_same(x, w):
    """float64 'same' stride-1 1-D convolution, x (batch, steps, c), w (k, c, f)."""
    k = w.shape[0]
    left = (k - 1) // 2
    padded = np.pad(x, ((0, 0), (left, k - 1 - left), (0, 0)))
    return sum(padded[:, i:i + x.shape[1]] @ w[i] for i in range(k))


def _reference(x, kernel, recurrent, bias, dp=None, rec=None):
    """float64 ConvLSTM1D ('same' padding, hard sigmoid), per-gate masks optional."""
    f = recurrent.shape[-2]
    hard = lambda z: np.clip(0.2 * z + 0.5, 0, 1)  # noqa: E731
    h = c = np.zeros(x.shape[:1] + x.shape[2:-1] + (f,))
    ks, rs, bs = np.split(kernel, 4, -1), np.split(recurrent, 4, -1), np.split(bias, 4)
    for t in range(x.shape[1]):
        g = [_conv1d_same(x[:, t] * (1 if dp is None else dp[j]), ks[j]) + bs[j]
             + _conv1d_same(h * (1 if rec is None else rec[j]), rs[j]) for j in range(4)]
        c = hard(g[1]) * c + hard(g[0]) * np.tanh(g[2])
        h = hard(g[3]) * np.tanh(c)
    return h


def test_numpy_float64_reference_with_dropout_masks_and_finite_differences():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 5, 2))
    layer = L.ConvLSTM1D(2, 3, padding="same", dropout=0.3, recurrent_dropout=0.4,
                         dtype="float64")
    layer.build(x.shape)
    weights = [rng.uniform(-0.6, 0.6, w.shape) for w in layer.get_weights()]
    layer.set_weights(weights)
    np.testing.assert_allclose(layer(x).numpy(), _reference(x, *weights), rtol=1e-12,
                               atol=1e-12)
    ig.random.set_seed(5)
    got = layer(x, training=True).numpy()
    dp = [m.numpy() for m in layer.cell._dropout_mask]
    rec = [m.numpy() for m in layer.cell._recurrent_dropout_mask]
    assert len(dp) == len(rec) == 4 and not np.array_equal(dp[0], dp[1])
    np.testing.assert_allclose(got, _reference(x, *weights, dp, rec), rtol=1e-12, atol=1e-12)
    u = rng.standard_normal(got.shape)
    xi = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xi)
        loss = ig.reduce_sum(layer(xi) * u)
    grads = [g.numpy() for g in tape.gradient(loss, [xi, *layer.trainable_variables])]
    eps = 1e-6
    values = [x, *weights]
    for which, index in [(0, (0, 1, 2, 1)), (0, (1, 2, 4, 0)), (1, (1, 0, 5)), (2, (2, 1, 7)),
                         (3, (4,))]:
        plus = [v.copy() for v in values]
        minus = [v.copy() for v in values]
        plus[which][index] += eps
        minus[which][index] -= eps
        numeric = ((_reference(*plus) * u).sum() - (_reference(*minus) * u).sum()) / (2 * eps)
        assert abs(grads[which][index] - numeric) < 1e-6


def test_channels_first_equals_channels_last_transposed():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 6, 5, 2)).astype(np.float32)
    last = L.ConvLSTM2D(3, 2, strides=(2, 1), return_sequences=True)
    first = L.ConvLSTM2D(3, 2, strides=(2, 1), return_sequences=True,
                         data_format="channels_first")
    y_last = last(x).numpy()
    first(x.transpose(0, 1, 4, 2, 3))
    first.set_weights(last.get_weights())
    y_first = first(x.transpose(0, 1, 4, 2, 3)).numpy()
    np.testing.assert_allclose(y_first, y_last.transpose(0, 1, 4, 2, 3), rtol=1e-5, atol=1e-6)
    assert tuple(first.compute_output_shape((2, 3, 2, 6, 5))) == (2, 3, 3, 3, 4)


def test_errors_as_tf_keras(tfk):
    for make in (lambda m: m.layers.ConvLSTM1D(2, 2, unroll=True),
                 lambda m: m.Sequential([m.layers.ConvLSTM1D(2, 2, stateful=True,
                                                             input_shape=(3, 6, 2))]),
                 lambda m: m.layers.ConvLSTM1D(2, 2, name="c")(np.ones((2, 6, 2), np.float32))):
        with pytest.raises((TypeError, ValueError)) as theirs:
            make(tfk)
        with pytest.raises((TypeError, ValueError)) as ours:
            make(keras)
        assert type(ours.value) is type(theirs.value)
        assert str(ours.value) == str(theirs.value)


def _model(k):
    return k.models.Sequential([
        k.layers.ConvLSTM2D(3, 2, strides=2, padding="same", input_shape=(3, 5, 5, 2)),
        k.layers.Flatten(), k.layers.Dense(2)])


def test_fit_and_hdf5_weights_match_tf_keras(tfk, tmp_path):
    backend.clear_session()
    tfk.backend.clear_session()
    mine, theirs = _model(keras), _model(tfk)
    rng = np.random.default_rng(7)
    values = [rng.uniform(-0.4, 0.4, w.shape).astype(np.float32) for w in theirs.get_weights()]
    load_their_hdf5_weights(mine, theirs, values, tmp_path)
    x = rng.standard_normal((8, 3, 5, 5, 2)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    mine.compile(optimizers.Adam(0.01), losses.MeanSquaredError())
    theirs.compile(tfk.optimizers.legacy.Adam(0.01), tfk.losses.MeanSquaredError())
    assert_fit_matches(mine, theirs, x, y)
    load_our_hdf5_weights(theirs, mine, values, tmp_path)


def test_in_a_tf1_graph_on_a_placeholder_of_unknown_batch():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 6, 2)).astype(np.float32)
    assert_graph_matches_eager(lambda: L.ConvLSTM1D(2, 2, return_sequences=True), x,
                               lambda shape: rng.uniform(-0.5, 0.5, shape),
                               (None, 3, 6, 2), (None, 3, 5, 2))


def test_a_training_placeholder_in_a_tf1_graph_draws_dropout_per_training_run():
    x = np.random.default_rng(9).standard_normal((2, 3, 6, 2)).astype(np.float32)
    with v1.Graph().as_default():
        ph = v1.placeholder(np.float32, (None, 3, 6, 2))
        training = v1.placeholder_with_default(False, ())
        layer = L.ConvLSTM1D(2, 2, dropout=0.5, recurrent_dropout=0.3)
        y = layer(ph, training=training)
        grads = v1.gradients(ig.reduce_sum(y), layer.trainable_weights)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            inference = [sess.run(y, {ph: x}) for _ in range(2)]
            trained = [sess.run([y, grads], {ph: x, training: True})[0] for _ in range(2)]
            weights = layer.get_weights()
    eager = L.ConvLSTM1D(2, 2)
    eager(x)
    eager.set_weights(weights)
    np.testing.assert_allclose(inference[0], eager(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(inference[0], inference[1])
    assert not np.allclose(trained[0], inference[0]) and not np.allclose(*trained)


def test_in_bidirectional_matches_tf_keras(tfk):
    """Weight names differ only in the layer name: Keras 2.6's snake case names ConvLSTM1D
    ``conv_lst_m1d`` (tf-keras's later one ``conv_lstm1d``)."""
    x = np.random.default_rng(10).standard_normal((2, 3, 6, 2)).astype(np.float32)
    backend.clear_session()
    tfk.backend.clear_session()
    ours = L.Bidirectional(L.ConvLSTM1D(2, 2, return_sequences=True), merge_mode="sum")
    theirs = tfk.layers.Bidirectional(tfk.layers.ConvLSTM1D(2, 2, return_sequences=True),
                                      merge_mode="sum")
    theirs(x)
    ours(x)
    rng = np.random.default_rng(11)
    weights = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    assert [w.name.replace("lst_m", "lstm") for w in ours.weights] == [
        w.name for w in theirs.weights]


def test_reset_states_with_values_and_errors_as_tf_keras(tfk):
    x = np.ones((2, 3, 6, 2), np.float32)
    results = []
    for module in (tfk.layers, L):
        layer = module.ConvLSTM1D(3, 2, stateful=True, batch_input_shape=(2, 3, 6, 2),
                                  name="c")
        layer(x)
        errors = []
        for states in ([np.zeros((2, 5, 3))], [np.zeros((2, 5, 3)), np.zeros((2, 4, 3))]):
            with pytest.raises(ValueError) as info:
                layer.reset_states(states)
            errors.append(str(info.value))
        layer.reset_states([np.full((2, 5, 3), 0.5), np.ones((2, 5, 3))])
        values = [np.asarray(s) for s in layer.states]
        with pytest.raises(AttributeError, match="Layer must be stateful"):
            module.ConvLSTM1D(3, 2).reset_states()
        results.append((type(layer.states), errors, values, layer(x).shape))
    (types, errors, values, shape), want = results[1], results[0]
    assert types is list is want[0] and errors == want[1] and tuple(shape) == tuple(want[3])
    for a, b in zip(values, want[2]):
        np.testing.assert_array_equal(a, b)


def test_the_cell_stepped_by_hand_equals_the_layer_and_arguments_read_through():
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 6, 5, 2)).astype(np.float32)
    layer = L.ConvLSTM2D(3, (3, 2), strides=(1, 2), padding="same", return_state=True)
    output, h, c = layer(x)
    cell = layer.cell
    states = [np.zeros(h.shape, np.float32)] * 2
    for t in range(3):
        out, states = cell(x[:, t], states)
    np.testing.assert_allclose(out.numpy(), output.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(states[1].numpy(), c.numpy(), rtol=1e-6, atol=1e-6)
    assert (layer.filters, layer.kernel_size, layer.strides, layer.padding) == (
        3, (3, 2), (1, 2), "same")
    assert layer.recurrent_activation is keras.activations.hard_sigmoid
    assert layer.dropout == 0.0 and layer.unit_forget_bias
