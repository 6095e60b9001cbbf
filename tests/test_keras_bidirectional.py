"""Bidirectional's wrapper surface against tf-keras: ``layer`` (the wrapped layer, not
tracked), ``forward_layer``/``backward_layer`` (fresh copies named ``forward_``/
``backward_``, a custom backward layer renamed too), ``merge_mode``, ``stateful``,
``trainable``, the checks of a custom backward layer, and get_config/from_config round
trips; outputs after a round trip equal the original's."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.keras as keras
from ipu_gpu.keras import Input, Model
from ipu_gpu.keras import layers as L


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _plain(config):
    """A config as plain dicts and lists (tf-keras wraps some in DictWrapper)."""
    if hasattr(config, "items"):
        return {k: _plain(v) for k, v in config.items()}
    if isinstance(config, (list, tuple)):
        return [_plain(v) for v in config]
    return config


def _surface(module, make):
    layer, bidi = make(module.layers)
    return dict(layer_is_wrapped=bidi.layer is layer, forward=bidi.forward_layer.name,
                backward=bidi.backward_layer.name, merge_mode=bidi.merge_mode,
                stateful=bidi.stateful, trainable=bidi.trainable,
                go_backwards=(bidi.forward_layer.go_backwards,
                              bidi.backward_layer.go_backwards),
                backward_type=type(bidi.backward_layer).__name__,
                config=_plain(bidi.get_config()))


def _lstm(layers):
    inner = layers.LSTM(3, return_sequences=True, name="l")
    return inner, layers.Bidirectional(inner, merge_mode="sum", name="bi")


def _custom_backward(layers):
    inner = layers.GRU(3, name="f")
    return inner, layers.Bidirectional(
        inner, backward_layer=layers.GRU(3, go_backwards=True, name="g"), merge_mode=None,
        name="bi2")


def _frozen(layers):
    inner = layers.SimpleRNN(2, trainable=False, name="s")
    return inner, layers.Bidirectional(inner, name="bi3")


@pytest.mark.parametrize("make", [_lstm, _custom_backward, _frozen])
def test_wrapper_surface_matches_tf_keras(tfk, make):
    ours = _surface(keras, make)
    assert ours == _surface(tfk, make)
    assert ours["layer_is_wrapped"]


def test_wrapped_layer_is_not_tracked():
    inner = L.LSTM(3, return_sequences=True)
    bidi = L.Bidirectional(inner)
    x = Input((5, 2))
    Model(x, bidi(x))
    assert not inner.built and inner.weights == []
    assert len(bidi.weights) == 6
    assert all(w.name.startswith(bidi.name + "/forward_" if i < 3 else
                                 bidi.name + "/backward_") for i, w in enumerate(bidi.weights))


@pytest.mark.parametrize("backward, message", [
    (dict(return_sequences=True, go_backwards=True),
     'Forward layer and backward layer are expected to have the same value for attribute '
     '"return_sequences", got "False" for forward layer and "True" for backward layer'),
    (dict(),
     "Forward layer and backward layer should have different `go_backwards` value."
     "forward_layer.go_backwards = False,backward_layer.go_backwards = False"),
])
def test_mismatched_backward_layers_raise_tf_keras_errors(tfk, backward, message):
    for module in (L, tfk.layers):
        with pytest.raises(ValueError) as info:
            module.Bidirectional(module.GRU(3), backward_layer=module.GRU(3, **backward))
        assert str(info.value) == message


@pytest.mark.parametrize("make", [_lstm, _custom_backward])
def test_config_round_trips_give_the_same_layer(make):
    _, bidi = make(L)
    x = Input((5, 2))
    out = bidi(x)
    model = Model(x, out)
    config = bidi.get_config()
    again = L.Bidirectional.from_config(config)
    assert again.get_config() == config
    assert again.forward_layer.name == bidi.forward_layer.name
    assert again.backward_layer.name == bidi.backward_layer.name
    assert again.layer.name == bidi.layer.name and again.merge_mode == bidi.merge_mode
    twin = Model(x, again(x))
    twin.set_weights(model.get_weights())
    data = np.random.default_rng(0).standard_normal((4, 5, 2)).astype(np.float32)
    for a, b in zip(_outputs(model(data)), _outputs(twin(data))):
        np.testing.assert_array_equal(a, b)


def _outputs(out):
    return [np.asarray(o) for o in (out if isinstance(out, list) else [out])]


def test_weights_argument_is_ignored_as_in_keras(tfk):
    """Keras 2 stores ``weights`` as the copies' ``initial_weights``, which nothing reads:
    the wrapped layer's initializers decide."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(2, 3, 4)).astype(np.float32)
    weights = [rng.normal(size=s).astype(np.float32)
               for s in [(4, 8), (2, 8), (8,)] * 2]

    def run(module, **kwargs):
        inner = module.layers.LSTM(2, kernel_initializer="ones",
                                   recurrent_initializer="zeros")
        return np.asarray(module.layers.Bidirectional(inner, **kwargs)(x))

    want = run(tfk, weights=weights)
    np.testing.assert_allclose(want, run(tfk), rtol=1e-6)
    np.testing.assert_allclose(run(keras, weights=weights), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("return_sequences", [True, False])
def test_masked_steps_match_tf_keras(tfk, return_sequences):
    """Keras makes both copies give zeros at masked steps when they return sequences."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(2, 4, 3)).astype(np.float32)
    x[0, 2:] = 0.0

    def model(module):
        inputs = module.Input((4, 3))
        bidi = module.layers.Bidirectional(module.layers.GRU(2,
                                                             return_sequences=return_sequences))
        return module.Model(inputs, bidi(module.layers.Masking()(inputs))), bidi

    ours, bidi = model(keras)
    theirs, _ = model(tfk)
    ours.set_weights(theirs.get_weights())
    assert bidi.forward_layer.zero_output_for_mask is return_sequences
    want = theirs(x).numpy()
    np.testing.assert_allclose(np.asarray(ours(x)), want, rtol=1e-5, atol=1e-6)
    if return_sequences:
        assert not want[0, 2:].any()


def test_stateful_reset_states_match_tf_keras(tfk):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 3)).astype(np.float32)
    states = [rng.normal(size=(2, 2)).astype(np.float32) for _ in range(4)]

    def make(module):
        bidi = module.layers.Bidirectional(module.layers.LSTM(2, stateful=True),
                                           batch_input_shape=(2, 4, 3))
        bidi(x)
        return bidi

    ours, theirs = make(keras), make(tfk)
    ours.set_weights(theirs.get_weights())
    assert ours.stateful and theirs.stateful
    for reset in (None, states):
        ours.reset_states(reset)
        theirs.reset_states(reset)
        for _ in range(2):  # the second call starts from the first's last states
            np.testing.assert_allclose(np.asarray(ours(x)), theirs(x).numpy(), rtol=1e-5,
                                       atol=1e-6)
    with pytest.raises(ValueError, match="Unrecognized value for `states`. Expected `states` "
                                         "to be list or tuple. Received: 3"):
        ours.reset_states(3)
    with pytest.raises(AttributeError, match="Layer must be stateful."):
        L.Bidirectional(L.LSTM(2)).reset_states()
