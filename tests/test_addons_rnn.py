"""ipu_tensorflow_addons' PopnnLSTM/PopnnGRU (``ipu_gpu.addons.keras.layers``): Keras's weight
layout (tf-keras weights load unchanged, as in Graphcore's own tests), outputs and gradients
against tf-keras and a numpy reference, Graphcore's arguments, errors, dropout and states."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.addons.keras import layers as AL
from ipu_gpu.ipu import rand_ops


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_lstm(x, kernel, rec, bias, h=None, c=None):
    """Keras's LSTM (gates i, f, c, o) in float64 over batch-major x: (outputs, h, c)."""
    batch, steps, _ = x.shape
    units = rec.shape[0]
    h = np.zeros((batch, units)) if h is None else h.astype(np.float64)
    c = np.zeros((batch, units)) if c is None else c.astype(np.float64)
    outs = []
    for t in range(steps):
        z = x[:, t] @ kernel + h @ rec + bias
        i, f, cc, o = np.split(z, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(cc)
        h = _sigmoid(o) * np.tanh(c)
        outs.append(h)
    return np.stack(outs, 1), h, c


def numpy_gru(x, kernel, rec, bias, reset_after):
    """Keras's GRU (gates z, r, h) in float64 over batch-major x: the output sequence."""
    batch, steps, _ = x.shape
    u = rec.shape[0]
    h = np.zeros((batch, u))
    b_in, b_rec = (bias[0], bias[1]) if reset_after else (bias, np.zeros(3 * u))
    outs = []
    for t in range(steps):
        xz, xr, xh = np.split(x[:, t] @ kernel + b_in, 3, axis=1)
        if reset_after:
            rz, rr, rh = np.split(h @ rec + b_rec, 3, axis=1)
            z, r = _sigmoid(xz + rz), _sigmoid(xr + rr)
            hh = np.tanh(xh + r * rh)
        else:
            z = _sigmoid(xz + h @ rec[:, :u])
            r = _sigmoid(xr + h @ rec[:, u:2 * u])
            hh = np.tanh(xh + (r * h) @ rec[:, 2 * u:])
        h = z * h + (1 - z) * hh
        outs.append(h)
    return np.stack(outs, 1)


def _x(shape=(3, 5, 4), seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _random_weights(layer, seed=1):
    rng = np.random.default_rng(seed)
    weights = [rng.uniform(-0.5, 0.5, size=w.shape).astype(np.float32)
               for w in layer.get_weights()]
    layer.set_weights(weights)
    return weights


def test_lstm_weights_are_keras_layout_with_graphcores_names():
    layer = AL.PopnnLSTM(6)
    layer(_x())
    assert [w.name for w in layer.weights] == [
        "popnn_lstm/kernel:0", "popnn_lstm/recurrent_kernel:0", "popnn_lstm/biases:0"]
    assert [tuple(w.shape) for w in layer.weights] == [(4, 24), (6, 24), (24,)]
    assert layer.canonical_weight_shape == [10, 24]
    assert layer.canonical_bias_shapes == [24]
    # unit_forget_bias: the forget gate (the second of i, f, c, o) starts at one
    np.testing.assert_array_equal(layer.biases.numpy(), np.repeat([0., 1., 0., 0.], 6))
    assert AL.LSTM is AL.PopnnLSTM and AL.GRU is AL.PopnnGRU
    gru = AL.PopnnGRU(5)
    gru(_x())
    assert [tuple(w.shape) for w in gru.weights] == [(4, 15), (5, 15), (2, 15)]
    assert gru.canonical_bias_shapes == [2, 15]
    gru = AL.PopnnGRU(5, reset_after=False)
    gru(_x())
    assert tuple(gru.biases.shape) == (15,)


def test_weight_dtype_follows_layer_dtype_and_floatx():
    layer = AL.PopnnLSTM(3, dtype="float16")
    layer.build((2, 4, 3))
    assert all(w.dtype == ig.float16 for w in layer.weights)
    keras.backend.set_floatx("float16")
    try:
        layer = AL.PopnnGRU(3)
        layer.build((2, 4, 3))
        assert all(w.dtype == ig.float16 for w in layer.weights)
    finally:
        keras.backend.set_floatx("float32")
    with pytest.raises(ValueError, match="Only support float16, float32"):
        AL.PopnnLSTM(3, dtype="float64")


@pytest.mark.parametrize("kwargs", [dict(), dict(return_sequences=True, return_state=True),
                                    dict(time_major=True, return_sequences=True)])
def test_lstm_matches_tf_keras_and_numpy(tfk, real_tf, kwargs):
    tf = real_tf
    x = _x()
    theirs = tfk.layers.LSTM(6, **kwargs)
    theirs(x)
    ours = AL.PopnnLSTM(6, **kwargs)
    ours.build(x.shape)
    weights = _random_weights(theirs)
    ours.set_weights(weights)  # Keras's weights, unchanged
    got, want = ours(x), theirs(x)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    xb = np.swapaxes(x, 0, 1) if kwargs.get("time_major") else x
    seq, h, c = numpy_lstm(xb.astype(np.float64), *[w.astype(np.float64) for w in weights])
    seq = np.swapaxes(seq, 0, 1) if kwargs.get("time_major") else seq
    first = got[0].numpy()
    np.testing.assert_allclose(first, seq if kwargs.get("return_sequences") else h,
                               rtol=1e-5, atol=1e-6)
    if kwargs.get("return_state"):
        np.testing.assert_allclose(got[1].numpy(), h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[2].numpy(), c, rtol=1e-5, atol=1e-6)
    # gradients of a weighted sum of the outputs, inputs and weights
    us = [np.random.default_rng(3).normal(size=a.shape) for a in want]
    xt = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        outs = ours(xt)
        outs = outs if isinstance(outs, tuple) else (outs,)
        loss = sum(ig.reduce_sum(ig.cast(o, "float64") * u) for o, u in zip(outs, us))
    got_grads = tape.gradient(loss, [xt] + ours.trainable_weights)
    xtf = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xtf)
        outs = theirs(xtf)
        outs = outs if isinstance(outs, (list, tuple)) else (outs,)
        loss = sum(tf.reduce_sum(tf.cast(o, "float64") * u) for o, u in zip(outs, us))
    want_grads = tape.gradient(loss, [xtf] + theirs.trainable_weights)
    for a, b in zip(got_grads, want_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_matches_tf_keras_and_numpy(tfk, real_tf, reset_after):
    tf = real_tf
    x = _x()
    theirs = tfk.layers.GRU(5, return_sequences=True, return_state=True,
                            reset_after=reset_after)
    theirs(x)
    ours = AL.PopnnGRU(5, return_sequences=True, return_state=True, reset_after=reset_after)
    ours.build(x.shape)
    weights = _random_weights(theirs)
    ours.set_weights(weights)
    (seq, state), (want_seq, want_state) = ours(x), theirs(x)
    np.testing.assert_allclose(seq.numpy(), want_seq.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.numpy(), want_state.numpy(), rtol=1e-5, atol=1e-6)
    ref = numpy_gru(x.astype(np.float64), *[w.astype(np.float64) for w in weights],
                    reset_after=reset_after)
    np.testing.assert_allclose(seq.numpy(), ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(state.numpy(), ref[:, -1], rtol=1e-5, atol=1e-6)
    u = np.random.default_rng(4).normal(size=ref.shape)
    with ig.GradientTape() as tape:
        loss = ig.reduce_sum(ig.cast(ours(x)[0], "float64") * u)
    got = tape.gradient(loss, ours.trainable_weights)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(theirs(x)[0], "float64") * u)
    want = tape.gradient(loss, theirs.trainable_weights)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_initial_state_and_hard_sigmoid(tfk, real_tf):
    x = _x()
    rng = np.random.default_rng(5)
    h0, c0 = (rng.normal(size=(3, 4)).astype(np.float32) for _ in range(2))
    theirs = tfk.layers.LSTM(4, recurrent_activation="hard_sigmoid", return_state=True)
    theirs(x)
    ours = AL.PopnnLSTM(4, recurrent_activation="hard_sigmoid", return_state=True)
    ours.build(x.shape)
    ours.set_weights(_random_weights(theirs))
    got = ours(x, initial_state=(h0, c0))
    want = theirs(x, initial_state=[real_tf.constant(h0), real_tf.constant(c0)])
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    theirs = tfk.layers.GRU(4, activation="relu")
    theirs(x)
    ours = AL.PopnnGRU(4, activation=keras.activations.relu)
    ours.build(x.shape)
    ours.set_weights(_random_weights(theirs))
    np.testing.assert_allclose(ours(x, initial_state=h0).numpy(),
                               theirs(x, initial_state=real_tf.constant(h0)).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_stateful_layers_carry_their_states_across_calls():
    x = _x((2, 6, 3))
    full = AL.PopnnLSTM(4, return_sequences=True)
    full.build(x.shape)
    weights = _random_weights(full)
    stateful = AL.PopnnLSTM(4, return_sequences=True, stateful=True)
    stateful.build((2, 3, 3))
    # as Graphcore's layer, the state variables follow the three weights in get_weights
    assert len(stateful.states) == 2 and not any(s.trainable for s in stateful.states)
    assert len(stateful.get_weights()) == 5 and len(stateful.trainable_weights) == 3
    stateful.set_weights(weights + [np.zeros((2, 4), np.float32)] * 2)
    halves = np.concatenate([stateful(x[:, :3]).numpy(), stateful(x[:, 3:]).numpy()], 1)
    np.testing.assert_allclose(halves, full(x).numpy(), rtol=1e-6, atol=1e-6)
    gru_full, gru = AL.PopnnGRU(3, return_sequences=True), AL.PopnnGRU(
        3, return_sequences=True, stateful=True)
    gru_full.build(x.shape)
    gru.build((2, 2, 3))
    gru.set_weights(_random_weights(gru_full) + [np.zeros((2, 3), np.float32)])
    parts = [gru(x[:, i:i + 2]).numpy() for i in (0, 2, 4)]
    np.testing.assert_allclose(np.concatenate(parts, 1), gru_full(x).numpy(), rtol=1e-6,
                               atol=1e-6)


def test_input_dropout_is_one_rand_ops_mask_per_sequence():
    """Graphcore's rule: the mask is drawn with noise shape [1, batch, input] on time-major
    inputs (the same units dropped at every timestep); a ``training`` that is not a Python
    bool (the default) counts as training; training=False applies no dropout."""
    x = _x((2, 4, 8))
    layer = AL.PopnnLSTM(3, dropout=0.5, dropout_seed=[7, 11], return_sequences=True)
    layer.build(x.shape)
    weights = _random_weights(layer)
    plain = AL.PopnnLSTM(3, return_sequences=True)
    plain.build(x.shape)
    plain.set_weights(weights)
    xt = np.swapaxes(x, 0, 1)
    dropped = rand_ops.dropout(xt, rate=0.5, seed=[7, 11], noise_shape=[1, 2, 8]).numpy()
    assert 0 < np.count_nonzero(dropped == 0) < dropped.size
    assert (dropped == 0).all(axis=0).sum() == (dropped[0] == 0).sum()  # same units each step
    want = plain(np.swapaxes(dropped, 0, 1)).numpy()
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(layer(x, training=True).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(layer(x, training=False).numpy(), plain(x).numpy(), rtol=1e-6)


@pytest.mark.slow
def test_popnn_layers_train_as_tf_keras_recurrent_models(tfk):
    """A PopnnLSTM/PopnnGRU model fitted with SGD ends with the weights of the same tf-keras
    model (identical initial weights and data). Slow (tf-keras fit); the gradients are
    checked by the fast tests above."""
    rng = np.random.default_rng(6)
    x = rng.normal(size=(16, 5, 3)).astype(np.float32)
    y = rng.normal(size=(16, 1)).astype(np.float32)
    for ours_cls, theirs_cls in ((AL.PopnnLSTM, tfk.layers.LSTM),
                                 (AL.PopnnGRU, tfk.layers.GRU)):
        theirs = tfk.Sequential([tfk.Input((5, 3)), theirs_cls(4), tfk.layers.Dense(1)])
        ours = keras.Sequential([keras.Input((5, 3)), ours_cls(4),
                                    keras.layers.Dense(1)])
        ours.set_weights(theirs.get_weights())
        theirs.compile(tfk.optimizers.legacy.SGD(0.1), "mse", run_eagerly=True)
        ours.compile(keras.optimizers.SGD(0.1), "mse")
        h_theirs = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        h_ours = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        np.testing.assert_allclose(h_ours.history["loss"], h_theirs.history["loss"],
                                   rtol=1e-5)
        for a, b in zip(ours.get_weights(), theirs.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_functional_shapes_and_configs():
    inputs = keras.Input((5, 3), batch_size=2)
    seq, h, c = AL.PopnnLSTM(4, return_sequences=True, return_state=True)(inputs)
    assert seq.shape.as_list() == [2, 5, 4] and h.shape.as_list() == c.shape.as_list() == [2, 4]
    out = AL.PopnnGRU(3)(inputs)
    assert out.shape.as_list() == [2, 3]
    for layer in (AL.PopnnLSTM(4, dropout=0.1, seed=3, unit_forget_bias=False),
                  AL.PopnnGRU(2, reset_after=False, time_major=True)):
        config = layer.get_config()
        assert "name" not in config  # Graphcore's configs hold the layer's own arguments
        clone = type(layer).from_config(config)
        assert clone.get_config() == config
    assert list(AL.PopnnLSTM(2).get_config())[:7] == [
        "units", "activation", "recurrent_activation", "kernel_initializer",
        "recurrent_initializer", "bias_initializer", "unit_forget_bias"]


@pytest.mark.parametrize("cls", [AL.PopnnLSTM, AL.PopnnGRU])
def test_unsupported_arguments_raise_graphcores_errors(cls):
    kind = "LSTM" if cls is AL.PopnnLSTM else "GRU"
    with pytest.raises(ValueError, match=f"IPU custom {kind} layer does not support "
                                         "use_bias = False"):
        cls(2, use_bias=False)
    for arg in ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                "activity_regularizer", "kernel_constraint", "recurrent_constraint",
                "bias_constraint"):
        with pytest.raises(ValueError, match=f"does not support {arg}"):
            cls(2, **{arg: "l2" if "regularizer" in arg else "non_neg"})
    for kwargs in (dict(recurrent_dropout=0.1), dict(implementation=0),
                   dict(go_backwards=True), dict(unroll=True)):
        with pytest.raises(ValueError, match=f"IPU custom {kind} layer does not support"):
            cls(2, **kwargs)
    with pytest.raises(ValueError, match="does not support 'elu' as an activation. "
                                         "Acceptable value are \"tanh\""):
        cls(2, activation="elu")
    with pytest.raises(ValueError, match="does not support 'relu' as a recurrent activation"):
        cls(2, recurrent_activation="relu")
    with pytest.raises(TypeError, match="Could not interpret activation"):
        cls(2, activation=None)
    with pytest.raises(TypeError, match="Unrecognized function"):
        cls(2, activation=np.tanh)
    layer = cls(2)
    with pytest.raises(ValueError, match="Expecting input_shape with 3 dims, got 2"):
        layer.build((3, 4))
    with pytest.raises(ValueError, match="should be defined"):
        layer.build((3, 4, None))
    with pytest.raises(ValueError, match="has not been built yet"):
        _ = layer.canonical_weight_shape
    layer.build((3, 4, 2))
    with pytest.raises(ValueError, match="inputs tensor must be 3D"):
        layer.call(np.zeros((3, 2), np.float32))
    with pytest.raises(NotImplementedError, match="does not support call argument mask"):
        layer.call(np.zeros((3, 4, 2), np.float32), mask=np.ones((3, 4), bool))


def test_state_shapes():
    assert AL.PopnnLSTM(5).state_shape(3) == ([3, 5], [3, 5])
    assert AL.PopnnGRU(5).state_shape(3) == [3, 5]


def test_mixed_precision_runs_in_the_compute_dtype():
    x = _x((2, 4, 3))
    ref_layer = AL.PopnnLSTM(4, return_state=True)
    ref_layer.build(x.shape)
    weights = _random_weights(ref_layer)
    want = ref_layer(x)
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        layer = AL.PopnnLSTM(4, return_state=True, stateful=True)
        layer.build(x.shape)
        layer.set_weights(weights + [np.zeros((2, 4), np.float32)] * 2)
        got = layer(x)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert layer.kernel.dtype == ig.float32 and layer.states[0].dtype == ig.float32
    for a, b in zip(got, want):
        assert a.dtype == ig.float16
        np.testing.assert_allclose(a.numpy().astype(np.float32), b.numpy(), atol=5e-3)
    np.testing.assert_allclose(layer.states[1].numpy(), want[2].numpy(), atol=5e-3)


@pytest.mark.slow
def test_hdf5_weights_of_a_tf_keras_lstm_model_load_into_a_popnn_model(tfk, tmp_path):
    """Keras's HDF5 weights load layer by layer: a tf-keras model with LSTM/GRU layers saved
    to HDF5 loads into the same model built with PopnnLSTM/PopnnGRU, and back. Slow (tf-keras
    builds the model); the layout is checked by the fast set_weights tests above."""
    pytest.importorskip("h5py")
    x = _x((2, 5, 3))
    theirs = tfk.Sequential([tfk.Input((5, 3)), tfk.layers.LSTM(4, return_sequences=True),
                             tfk.layers.GRU(3), tfk.layers.Dense(1)])
    _random_weights(theirs.layers[0], 8)
    _random_weights(theirs.layers[1], 9)
    theirs.save_weights(str(tmp_path / "keras.h5"))
    ours = keras.Sequential([keras.Input((5, 3)), AL.PopnnLSTM(4, return_sequences=True),
                             AL.PopnnGRU(3), keras.layers.Dense(1)])
    ours.load_weights(str(tmp_path / "keras.h5"))
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    saved = theirs.get_weights()
    ours.save_weights(str(tmp_path / "ours.h5"))
    theirs.set_weights([np.zeros_like(w) for w in saved])
    theirs.load_weights(str(tmp_path / "ours.h5"))
    for a, b in zip(theirs.get_weights(), saved):
        np.testing.assert_array_equal(a, b)


def test_shared_lstm_over_checkpointed_slices_equals_one_pass(tfk):
    """The pattern of Graphcore's recomputation-checkpoint tutorial: one PopnnLSTM called on
    consecutive slices of the sequence in a functional model, each call starting from the
    previous (checkpointed) states, equals one LSTM over the whole sequence."""
    x = _x((2, 8, 3))
    inputs = keras.Input((8, 3), batch_size=2)
    lstm = AL.PopnnLSTM(4, return_state=True, return_sequences=True)
    h = c = None
    outs = []
    for begin in range(0, 8, 2):
        part = keras.layers.Lambda(lambda t, b=0: t[:, b:b + 2, :],
                                   arguments={"b": begin})(inputs)
        seq, h, c = lstm(part) if h is None else lstm(part, initial_state=(h, c))
        h, c = AL.RecomputationCheckpoint()([h, c])
        outs.append(seq)
    model = keras.Model(inputs, keras.layers.Concatenate(axis=1)(outs))
    theirs = tfk.layers.LSTM(4, return_sequences=True)
    theirs(x)
    lstm.set_weights(_random_weights(theirs))
    np.testing.assert_allclose(model(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(x, verbose=0), theirs(x).numpy(), rtol=1e-5,
                               atol=1e-6)
