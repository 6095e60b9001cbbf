"""Recurrent layers and wrappers against tf-keras: SimpleRNN, LSTM, GRU (return_sequences,
return_state, go_backwards, masks, initial states, time_major, stateful), Bidirectional,
TimeDistributed; outputs and gradients with identical weights."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import backend
from ipu_gpu.keras import layers as L


@pytest.fixture(autouse=True)
def no_global_seed_left():
    """Tests that set ipu_gpu's global seed leave none behind for later tests."""
    yield
    ig.random.set_seed(None)


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _make(module, spec):
    name, kwargs = spec
    if name in ("Bidirectional", "TimeDistributed"):
        inner_name, inner_kwargs = kwargs["layer"]
        rest = {k: v for k, v in kwargs.items() if k != "layer"}
        return getattr(module, name)(getattr(module, inner_name)(**inner_kwargs), **rest)
    return getattr(module, name)(**kwargs)


CASES = [
    ("SimpleRNN", dict(units=4)),
    ("SimpleRNN", dict(units=3, return_sequences=True, go_backwards=True, activation="relu")),
    ("LSTM", dict(units=4)),
    ("LSTM", dict(units=3, return_sequences=True, return_state=True)),
    ("LSTM", dict(units=3, go_backwards=True, unit_forget_bias=False, use_bias=False)),
    ("LSTM", dict(units=2, return_sequences=True, time_major=True)),
    ("GRU", dict(units=4, return_state=True)),
    ("GRU", dict(units=3, reset_after=False, return_sequences=True)),
    ("GRU", dict(units=3, recurrent_activation="hard_sigmoid", go_backwards=True)),
    ("Bidirectional", dict(layer=("LSTM", dict(units=3, return_sequences=True)))),
    ("Bidirectional", dict(layer=("GRU", dict(units=2)), merge_mode="sum")),
    ("Bidirectional", dict(layer=("SimpleRNN", dict(units=2, return_state=True)),
                           merge_mode="ave")),
    ("TimeDistributed", dict(layer=("Dense", dict(units=3, activation="tanh")))),
    ("TimeDistributed", dict(layer=("Conv2D", dict(filters=2, kernel_size=2)))),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


def _input(spec, batch=2):
    shape = (batch, 5, 4, 4, 2) if "Conv2D" in str(spec) else (batch, 5, 3)
    return np.random.default_rng(0).normal(size=shape).astype(np.float32)


def _flat(out):
    return out if isinstance(out, (list, tuple)) else [out]


@pytest.mark.parametrize("spec", CASES, ids=IDS)
@pytest.mark.parametrize("batch", [2, 1])
def test_rnn_layers_match_tf_keras(tfk, real_tf, spec, batch):
    tf = real_tf
    backend.clear_session()  # the same layer names whichever tests ran before
    tfk.backend.clear_session()
    x = _input(spec, batch)
    ours, theirs = _make(L, spec), _make(tfk.layers, spec)
    theirs(x)
    ours(x)
    rng = np.random.default_rng(2)
    weights = [w + rng.uniform(-0.2, 0.2, size=w.shape).astype(w.dtype)
               for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    outs_theirs = _flat(theirs(x))
    us = [rng.normal(size=o.shape) for o in outs_theirs]
    xt = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        got = _flat(ours(xt))
        loss = sum(ig.reduce_sum(ig.cast(o, "float64") * u) for o, u in zip(got, us))
    got_grads = tape.gradient(loss, [xt] + ours.trainable_weights)
    xtf = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xtf)
        want = _flat(theirs(xtf))
        loss = sum(tf.reduce_sum(tf.cast(o, "float64") * u) for o, u in zip(want, us))
    want_grads = tape.gradient(loss, [xtf] + theirs.trainable_weights)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    for a, b in zip(got_grads, want_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spec", CASES, ids=IDS)
def test_rnn_symbolic_shapes_and_configs(tfk, spec):
    x = _input(spec)
    ours, theirs = _make(L, spec), _make(tfk.layers, spec)
    got = _flat(ours(L.Input(x.shape[1:])))
    want = _flat(theirs(tfk.Input(x.shape[1:])))
    assert [g.shape.as_list() for g in got] == [w.shape.as_list() for w in want]
    config = ours.get_config()
    assert set(config) == set(theirs.get_config())
    clone = type(ours).from_config(config)
    assert clone.get_config() == config


@pytest.mark.parametrize("name", ["SimpleRNN", "LSTM", "GRU"])
def test_masked_sequences_match_tf_keras(tfk, name):
    ids = np.array([[3, 1, 2, 0, 0], [4, 0, 0, 0, 0]], np.int32)
    for return_sequences in (False, True):
        emb_ours, emb_theirs = L.Embedding(6, 3, mask_zero=True), tfk.layers.Embedding(
            6, 3, mask_zero=True)
        ours = getattr(L, name)(3, return_sequences=return_sequences)
        theirs = getattr(tfk.layers, name)(3, return_sequences=return_sequences)
        theirs(emb_theirs(ids))
        ours(emb_ours(ids))
        emb_ours.set_weights(emb_theirs.get_weights())
        ours.set_weights(theirs.get_weights())
        np.testing.assert_allclose(ours(emb_ours(ids)).numpy(), theirs(emb_theirs(ids)).numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_initial_state_and_stateful(tfk, real_tf):
    x = _input(("LSTM", {}))
    h0 = np.full((2, 3), 0.5, np.float32)
    c0 = np.full((2, 3), -0.25, np.float32)
    tf_states = [real_tf.constant(h0), real_tf.constant(c0)]
    ours, theirs = L.LSTM(3), tfk.layers.LSTM(3)
    theirs(x, initial_state=tf_states)
    ours(x, initial_state=[h0, c0])
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(x, initial_state=[h0, c0]).numpy(),
                               theirs(x, initial_state=tf_states).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="expects 2 state"):
        ours(x, initial_state=[h0])
    stateful = L.GRU(3, stateful=True, batch_input_shape=(2, 5, 3))
    theirs = tfk.layers.GRU(3, stateful=True, batch_input_shape=(2, 5, 3))
    theirs(x)
    stateful(x)
    stateful.set_weights(theirs.get_weights()[:3])
    stateful.reset_states()
    theirs.reset_states()
    for _ in range(2):  # the second call starts from the first call's last state
        np.testing.assert_allclose(stateful(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    stateful.reset_states()
    theirs.reset_states()
    np.testing.assert_allclose(stateful(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)


def test_rnn_dropout_in_training_only():
    x = _input(("LSTM", {}))
    layer = L.LSTM(4, dropout=0.5, recurrent_dropout=0.3)
    ig.random.set_seed(0)
    inference = layer(x).numpy()
    np.testing.assert_array_equal(inference, layer(x, training=False).numpy())
    trained = layer(x, training=True).numpy()
    assert not np.allclose(trained, inference)
    assert layer.get_config()["implementation"] == 1  # recurrent dropout: Keras's choice


def test_rnn_errors():
    with pytest.raises(ValueError, match="expected ndim=3, found ndim=2"):
        L.LSTM(2)(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="positive integer"):
        L.GRU(0)
    with pytest.raises(ValueError, match="Invalid merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="with a `tf.keras.layers.Layer` instance"):
        L.TimeDistributed("dense")
    with pytest.raises(ValueError, match="at least 3 dimensions"):
        L.TimeDistributed(L.Dense(2))(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError, match="needs to know its batch size"):
        L.SimpleRNN(2, stateful=True)(L.Input((None, 3)))


def test_custom_cell_in_rnn(tfk):
    class MinimalCell(L.Layer):
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.state_size = units

        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", (input_shape[-1], self.units))
            self.recurrent = self.add_weight("recurrent", (self.units, self.units))

        def call(self, inputs, states):
            h = ig.matmul(inputs, self.kernel) + ig.matmul(states[0], self.recurrent)
            return h, [h]

    x = _input(("RNN", {}))
    layer = L.RNN(MinimalCell(4), return_sequences=True)
    out = layer(x)
    assert out.shape == (2, 5, 4)
    k, r = layer.get_weights()
    h, want = np.zeros((2, 4), np.float32), []
    for t in range(5):
        h = x[:, t] @ k + h @ r
        want.append(h)
    np.testing.assert_allclose(out.numpy(), np.stack(want, 1), rtol=1e-5, atol=1e-6)


# ---- attention ----------------------------------------------------------------------------------
ATTENTION = [
    dict(num_heads=2, key_dim=3),
    dict(num_heads=3, key_dim=2, value_dim=4, output_shape=5, use_bias=False),
]


def _qkv(batch=2):
    rng = np.random.default_rng(4)
    return (rng.normal(size=(batch, 4, 6)).astype(np.float32),
            rng.normal(size=(batch, 5, 6)).astype(np.float32))


@pytest.mark.parametrize("kwargs", ATTENTION, ids=["mha", "mha-value_dim-output_shape"])
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_matches_tf_keras(tfk, real_tf, kwargs, causal):
    tf = real_tf
    q, v = _qkv()
    mask = np.random.default_rng(5).random((2, 4, 5)) > 0.3
    backend.clear_session()
    tfk.backend.clear_session()
    ours = L.MultiHeadAttention(**kwargs)
    theirs = tfk.layers.MultiHeadAttention(**kwargs)
    theirs(q, v)
    ours(q, v)
    weights = [w + 0.1 for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    qt, vt = ig.constant(q), ig.constant(v)
    with ig.GradientTape() as tape:
        tape.watch([qt, vt])
        out, scores = ours(qt, vt, attention_mask=mask, use_causal_mask=causal,
                           return_attention_scores=True)
        loss = ig.reduce_sum(out * out) + ig.reduce_sum(scores)
    got = tape.gradient(loss, [qt, vt] + ours.trainable_weights)
    qtf, vtf = tf.constant(q), tf.constant(v)
    with tf.GradientTape() as tape:
        tape.watch([qtf, vtf])
        want_out, want_scores = theirs(qtf, vtf, attention_mask=mask, use_causal_mask=causal,
                                       return_attention_scores=True)
        loss = tf.reduce_sum(want_out * want_out) + tf.reduce_sum(want_scores)
    want = tape.gradient(loss, [qtf, vtf] + theirs.trainable_weights)
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(scores.numpy(), want_scores.numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)


def test_multi_head_attention_functional_and_config(tfk):
    q, v = L.Input((None, 6)), L.Input((5, 6))
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3)
    out, scores = layer(q, v, return_attention_scores=True)
    theirs = tfk.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    want_out, want_scores = theirs(tfk.Input((None, 6)), tfk.Input((5, 6)),
                                   return_attention_scores=True)
    assert out.shape.as_list() == want_out.shape.as_list()
    assert scores.shape.as_list() == want_scores.shape.as_list()
    config = layer.get_config()
    assert set(config) == set(theirs.get_config())
    assert config["query_shape"] == (None, None, 6)
    clone = L.MultiHeadAttention.from_config(config)
    want_clone = tfk.layers.MultiHeadAttention.from_config(theirs.get_config())
    assert clone._built_from_signature and want_clone._built_from_signature
    assert len(clone.weights) == len(want_clone.weights) == 0  # made, built on first call


def test_einsum_dense_matches_tf_keras(tfk):
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    for eq, out_shape, bias in [("abc,cd->abd", (3, 5), "d"), ("...b,bc->...c", 5, "c"),
                                ("abc,cde->abde", (3, 2, 5), "de")]:
        ours = L.EinsumDense(eq, output_shape=out_shape, bias_axes=bias, activation="relu")
        theirs = tfk.layers.EinsumDense(eq, output_shape=out_shape, bias_axes=bias,
                                        activation="relu")
        theirs(x)
        ours(x)
        ours.set_weights([w + 0.1 for w in theirs.get_weights()])
        theirs.set_weights([w + 0.1 for w in theirs.get_weights()])
        np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="Invalid einsum equation"):
        L.EinsumDense("ab,bc", output_shape=3)(x)
