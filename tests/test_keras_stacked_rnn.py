"""``keras.layers.RNN`` over cells: ``SimpleRNNCell``, ``LSTMCell``, ``GRUCell`` alone and a
list of them (``StackedRNNCells``) against tf-keras: outputs and nested ``return_state``
states, gradients, masks, initial states, a cell stepped by hand, configs both ways, HDF5
weights both ways, and a few epochs of training; plus a numpy reference of a two-cell stack."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import layers as L
from ipu_gpu.keras import backend, losses, optimizers
from ipu_gpu.keras.models import Sequential


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _flat(value) -> list:
    if isinstance(value, (list, tuple)):
        return [leaf for part in value for leaf in _flat(part)]
    return [value]


def _structure(value):
    if isinstance(value, (list, tuple)):
        return [_structure(v) for v in value]
    return tuple(value.shape)


CELLS = {
    "simple": lambda m: m.SimpleRNNCell(4, activation="relu"),
    "lstm": lambda m: m.LSTMCell(3),
    "gru": lambda m: m.GRUCell(3, reset_after=False),
    "lstm-gru-simple": lambda m: [m.LSTMCell(3), m.GRUCell(2), m.SimpleRNNCell(4)],
    "stacked-object": lambda m: m.StackedRNNCells([m.GRUCell(2), m.LSTMCell(3, use_bias=False)]),
}
RNN_ARGS = [dict(), dict(return_sequences=True, return_state=True),
            dict(return_state=True, go_backwards=True), dict(return_sequences=True,
                                                             time_major=True)]


def _input(time_major=False, batch=2):
    x = np.random.default_rng(0).normal(size=(batch, 5, 3)).astype(np.float32)
    return x.transpose(1, 0, 2).copy() if time_major else x


def _pair(tfk, cells, **kwargs):
    """(ours, theirs) built on the same input, with the same perturbed weights (and the
    same layer names: both sessions cleared)."""
    backend.clear_session()
    tfk.backend.clear_session()
    ours, theirs = L.RNN(CELLS[cells](L), **kwargs), tfk.layers.RNN(CELLS[cells](tfk.layers),
                                                                     **kwargs)
    x = _input(kwargs.get("time_major", False))
    theirs(x)
    ours(x)
    rng = np.random.default_rng(2)
    weights = [w + rng.uniform(-0.2, 0.2, size=w.shape).astype(w.dtype)
               for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    return ours, theirs, x


@pytest.mark.parametrize("kwargs", RNN_ARGS, ids=["last", "seq-state", "backwards-state",
                                                  "time-major"])
@pytest.mark.parametrize("cells", list(CELLS))
def test_rnn_over_cells_matches_tf_keras(tfk, real_tf, cells, kwargs):
    tf = real_tf
    ours, theirs, x = _pair(tfk, cells, **kwargs)
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    want = theirs(x)
    us = [np.random.default_rng(3).normal(size=o.shape) for o in _flat(want)]
    xt = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        got = ours(xt)
        loss = sum(ig.reduce_sum(ig.cast(o, "float64") * u) for o, u in zip(_flat(got), us))
    got_grads = tape.gradient(loss, [xt] + ours.trainable_weights)
    xtf = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xtf)
        want = theirs(xtf)
        loss = sum(tf.reduce_sum(tf.cast(o, "float64") * u) for o, u in zip(_flat(want), us))
    want_grads = tape.gradient(loss, [xtf] + theirs.trainable_weights)
    assert _structure(got) == _structure(want)  # return_state: one entry per cell, nested
    for a, b in zip(_flat(got), _flat(want)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    assert len(got_grads) == len(want_grads)
    for a, b in zip(got_grads, want_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)


def test_two_cell_stack_matches_numpy():
    """Each step feeds the first cell's output to the second; states are kept per cell."""
    layer = L.RNN([L.SimpleRNNCell(3), L.SimpleRNNCell(2, activation="relu")],
                  return_sequences=True, return_state=True)
    x = _input().astype(np.float64)
    out, h1, h2 = layer(x.astype(np.float32))
    k1, r1, b1, k2, r2, b2 = [w.astype(np.float64) for w in layer.get_weights()]
    s1, s2, want = np.zeros((2, 3)), np.zeros((2, 2)), []
    for t in range(x.shape[1]):
        s1 = np.tanh(x[:, t] @ k1 + s1 @ r1 + b1)
        s2 = np.maximum(s1 @ k2 + s2 @ r2 + b2, 0)
        want.append(s2)
    np.testing.assert_allclose(out.numpy(), np.stack(want, 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h1.numpy(), s1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h2.numpy(), s2, rtol=1e-5, atol=1e-6)


def test_nested_initial_state_and_mask(tfk, real_tf):
    ours, theirs, _ = _pair(tfk, "lstm-gru-simple", return_sequences=True, return_state=True)
    ids = np.array([[3, 1, 2, 0, 0], [4, 0, 0, 0, 0]], np.int32)
    emb = np.random.default_rng(4).normal(size=(6, 3)).astype(np.float32)
    x = emb[ids]
    mask = ids != 0
    rng = np.random.default_rng(5)
    init = [[rng.normal(size=(2, 3)).astype(np.float32) for _ in range(2)],
            rng.normal(size=(2, 2)).astype(np.float32), rng.normal(size=(2, 4)).astype(np.float32)]
    tf_init = [[real_tf.constant(s) for s in init[0]], real_tf.constant(init[1]),
               real_tf.constant(init[2])]
    got = ours(x, mask=mask, initial_state=init)
    want = theirs(x, mask=real_tf.constant(mask), initial_state=tf_init)
    for a, b in zip(_flat(got), _flat(want)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    flat = ours(x, mask=mask, initial_state=_flat(init))  # the flat states are accepted too
    for a, b in zip(_flat(flat), _flat(got)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="expects 4 state"):
        ours(x, initial_state=init[:2])


def test_stacked_cells_step_by_hand(tfk, real_tf):
    """A StackedRNNCells called directly takes and returns states in its nesting."""
    ours = L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)])
    theirs = tfk.layers.StackedRNNCells([tfk.layers.LSTMCell(3), tfk.layers.GRUCell(2)])
    assert ours.state_size == (ours.cells[0].state_size, 2)
    assert ours.output_size == theirs.output_size == 2
    x = _input()[:, 0]
    want_init = theirs.get_initial_state(batch_size=2, dtype="float32")
    init = ours.get_initial_state(batch_size=2, dtype="float32")
    assert _structure(init) == _structure(want_init)
    theirs(x, want_init)
    ours(x, init)
    ours.set_weights([w + 0.1 for w in theirs.get_weights()])
    theirs.set_weights([w + 0.1 for w in theirs.get_weights()])
    states = [[np.full((2, 3), 0.3, np.float32), np.full((2, 3), -0.2, np.float32)],
              np.full((2, 2), 0.1, np.float32)]
    out, new = ours(x, states)
    want_out, want_new = theirs(x, [[real_tf.constant(s) for s in states[0]],
                                    real_tf.constant(states[1])])
    assert _structure(new) == _structure(want_new)
    for a, b in zip(_flat([out, new]), _flat([want_out, want_new])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    reverse = L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)], reverse_state_order=True)
    assert reverse.state_size == (2, reverse.cells[0].state_size)


@pytest.mark.parametrize("cells", list(CELLS))
def test_configs_round_trip_both_ways(tfk, cells):
    ours = L.RNN(CELLS[cells](L), return_sequences=True)
    theirs = tfk.layers.RNN(CELLS[cells](tfk.layers), return_sequences=True)
    config = ours.get_config()
    want = theirs.get_config()
    assert set(config) == set(want)
    assert set(config["cell"]["config"]) == set(want["cell"]["config"])
    clone = L.RNN.from_config(config)
    assert clone.get_config() == config
    from_theirs = L.RNN.from_config(want)  # a tf-keras config builds the same layer here
    assert type(from_theirs.cell).__name__ == type(theirs.cell).__name__
    theirs_clone = tfk.layers.RNN.from_config(config)  # and ours builds it there
    assert type(theirs_clone.cell).__name__ == type(ours.cell).__name__
    x = _input()
    from_theirs(x)
    theirs(x)
    from_theirs.set_weights(theirs.get_weights())
    np.testing.assert_allclose(from_theirs(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    stacked = L.StackedRNNCells([L.GRUCell(2), L.SimpleRNNCell(3)], name="stack")
    config = stacked.get_config()
    assert set(config) == set(tfk.layers.StackedRNNCells(
        [tfk.layers.GRUCell(2), tfk.layers.SimpleRNNCell(3)], name="stack").get_config())
    assert L.StackedRNNCells.from_config(config).get_config() == config


def _stacked_model(lib):
    m = lib.layers
    return lib.Sequential([m.Embedding(10, 4, input_length=6),
                           m.RNN([m.LSTMCell(5), m.GRUCell(4)]), m.Dense(3)])


class _Ours:
    layers = L
    Sequential = Sequential


def test_hdf5_weights_both_ways(tfk, tmp_path):
    backend.clear_session()
    tfk.backend.clear_session()
    mine, theirs = _stacked_model(_Ours), _stacked_model(tfk)
    assert [w.name for w in mine.weights] == [w.name for w in theirs.weights]
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(w.shape).astype(np.float32) for w in theirs.get_weights()]
    theirs.set_weights(values)
    theirs.save_weights(str(tmp_path / "theirs.h5"))
    mine.load_weights(str(tmp_path / "theirs.h5"))
    for a, b in zip(mine.get_weights(), values):
        np.testing.assert_array_equal(a, b)
    mine.set_weights([2 * v for v in values])
    mine.save_weights(str(tmp_path / "mine.h5"))
    theirs.load_weights(str(tmp_path / "mine.h5"))
    for a, b in zip(theirs.get_weights(), values):
        np.testing.assert_array_equal(a, 2 * b)


def test_training_matches_tf_keras(tfk):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 10, size=(24, 6)).astype(np.int32)
    y = rng.integers(0, 3, size=(24,))
    mine, theirs = _stacked_model(_Ours), _stacked_model(tfk)
    theirs.set_weights(mine.get_weights())
    mine.compile(optimizers.Adam(0.01), losses.SparseCategoricalCrossentropy(from_logits=True))
    theirs.compile(tfk.optimizers.legacy.Adam(0.01),
                   tfk.losses.SparseCategoricalCrossentropy(from_logits=True))
    kwargs = dict(batch_size=8, epochs=2, shuffle=False, verbose=0)
    got, want = mine.fit(x, y, **kwargs), theirs.fit(x, y, **kwargs)
    np.testing.assert_allclose(got.history["loss"], want.history["loss"], rtol=1e-5, atol=1e-6)
    assert got.history["loss"][-1] < got.history["loss"][0]
    for a, b in zip(mine.get_weights()[1:], theirs.get_weights()[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_dropout_in_stacked_cells_in_training_only():
    layer = L.RNN([L.LSTMCell(4, dropout=0.5), L.GRUCell(3, recurrent_dropout=0.4)])
    x = _input()
    ig.random.set_seed(0)
    try:
        inference = layer(x).numpy()
        np.testing.assert_array_equal(inference, layer(x, training=False).numpy())
        trained = layer(x, training=True).numpy()
        assert not np.allclose(trained, inference)
    finally:
        ig.random.set_seed(None)


def test_errors():
    with pytest.raises(ValueError, match="All cells must have a `call` method"):
        L.StackedRNNCells([L.LSTMCell(2), "gru"])
    with pytest.raises(ValueError, match="All cells must have a `state_size`"):
        L.RNN([L.LSTMCell(2), L.Dense(2)])


def _bidirectional_model(lib):
    m = lib.layers
    inputs = lib.Input((5, 3))
    rnn = m.RNN([m.LSTMCell(3), m.GRUCell(2)], return_sequences=True)
    return lib.Model(inputs, m.Bidirectional(rnn)(inputs))


@pytest.mark.slow  # tf-keras's save and load: stacks in configs and HDF5 have fast tests above
def test_bidirectional_stack_and_whole_model_hdf5_both_ways(tfk, tmp_path):
    """A stack inside Bidirectional is copied through its config; whole models (config
    and weights) saved here load in tf-keras and the other way round."""
    backend.clear_session()
    tfk.backend.clear_session()
    import ipu_gpu.keras as K

    mine, theirs = _bidirectional_model(K), _bidirectional_model(tfk)
    assert [w.name for w in mine.weights] == [w.name for w in theirs.weights]
    rng = np.random.default_rng(6)
    theirs.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                        for w in theirs.get_weights()])
    mine.set_weights(theirs.get_weights())
    x = _input()
    want = theirs.predict(x, verbose=0)
    np.testing.assert_allclose(mine.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    mine.save(str(tmp_path / "mine.h5"))
    loaded = tfk.models.load_model(str(tmp_path / "mine.h5"))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
    with pytest.warns(UserWarning, match="This file format is considered legacy"):
        theirs.save(str(tmp_path / "theirs.h5"))
    loaded = K.models.load_model(str(tmp_path / "theirs.h5"))
    assert type(loaded.layers[1].forward_layer.cell).__name__ == "StackedRNNCells"
    np.testing.assert_allclose(loaded.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)


def test_stateful_stack_matches_tf_keras(tfk):
    def make(m):
        return m.RNN([m.LSTMCell(3), m.GRUCell(2)], stateful=True, return_state=True,
                     batch_input_shape=(2, 5, 3))

    ours, theirs = make(L), make(tfk.layers)
    x = _input()
    theirs(x)
    ours(x)
    ours.set_weights(theirs.get_weights())
    ours.reset_states()
    theirs.reset_states()
    for _ in range(2):  # the second call starts from the first call's last states
        for a, b in zip(_flat(ours(x)), _flat(theirs(x))):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    rng = np.random.default_rng(7)
    states = [[rng.normal(size=(2, 3)).astype(np.float32) for _ in range(2)],
              rng.normal(size=(2, 2)).astype(np.float32)]
    ours.reset_states(states)  # nested per cell, as tf-keras takes them
    theirs.reset_states(states)
    for a, b in zip(_flat(ours(x)), _flat(theirs(x))):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def _states(states):
    """The container types and the state values (None before build) of ``.states``."""
    if isinstance(states, (list, tuple)) or type(states).__name__ == "ListWrapper":
        return ("tuple" if isinstance(states, tuple) else "list", [_states(s) for s in states])
    return None if states is None else np.asarray(states.numpy()).tolist()


@pytest.mark.parametrize("make", [
    lambda m: m.RNN([m.LSTMCell(3), m.GRUCell(2)], stateful=True),
    lambda m: m.RNN([m.SimpleRNNCell(3), m.SimpleRNNCell(2)], stateful=True),
    lambda m: m.RNN(m.StackedRNNCells([m.GRUCell(2), m.LSTMCell(3)]), stateful=True),
    lambda m: m.RNN(m.LSTMCell(3), stateful=True),
    lambda m: m.LSTM(3, stateful=True),
    lambda m: m.GRU(3, stateful=True),
    lambda m: m.LSTM(3),
], ids=["lstm-gru", "simple-simple", "stacked-object", "lstm-cell", "lstm", "gru",
        "not-stateful"])
def test_states_nest_as_tf_keras_nests_them(tfk, make):
    """``.states`` follows the cell's ``state_size``: a stack's tuple of its cells' states (a
    list for a cell with several), a list for one cell; Nones before a stateful RNN is built
    or when it is not stateful."""
    ours, theirs = make(L), make(tfk.layers)
    assert _states(ours.states) == _states(theirs.states)
    x = _input()
    theirs(x)
    ours(x)
    ours.set_weights(theirs.get_weights())
    ours.reset_states() if ours.stateful else None
    theirs.reset_states() if theirs.stateful else None
    ours(x)
    theirs(x)
    got, want = _states(ours.states), _states(theirs.states)
    assert _flat_types(got) == _flat_types(want)
    for a, b in zip(_flat(_values(got)), _flat(_values(want))):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if ours.stateful:
        ours.reset_states()
        assert all(not np.any(v) for v in _flat(_values(_states(ours.states))))


def _flat_types(described):
    """The structure of a ``_states`` description with the values' shapes."""
    if isinstance(described, tuple):
        return (described[0], [_flat_types(d) for d in described[1]])
    return None if described is None else np.shape(described)


def _values(described):
    if isinstance(described, tuple):
        return [_values(d) for d in described[1]]
    return [] if described is None else [np.asarray(described)]
