"""The layers added for issue 16 (AlphaDropout, LocallyConnected1D/2D, ConvLSTM1D/2D/3D,
SpectralNormalization) against tf-keras's: signatures (every argument with tf-keras's name,
default and order), default configs, and whole models saved to HDF5 (architecture and
weights) loading both ways."""

from __future__ import annotations

import numpy as np
import pytest
from test_keras_audit_surface import config_differences, signature_differences

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.keras import layers as L

NAMES = ["AlphaDropout", "LocallyConnected1D", "LocallyConnected2D", "ConvLSTM1D",
         "ConvLSTM2D", "ConvLSTM3D", "SpectralNormalization"]
ARGS = {"AlphaDropout": (0.2,), "LocallyConnected1D": (2, 3), "LocallyConnected2D": (2, 3),
        "ConvLSTM1D": (2, 3), "ConvLSTM2D": (2, 3), "ConvLSTM3D": (2, 3)}


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_tf_keras(tfk, name):
    # ConvLSTM's tf-keras constructor takes unroll and time_major through **kwargs, as ours
    assert signature_differences(getattr(L, name), getattr(tfk.layers, name)) == set()


@pytest.mark.parametrize("name", [n for n in NAMES if n in ARGS])
def test_default_config_matches_tf_keras(tfk, name):
    mine = getattr(L, name)(*ARGS[name], name="x")
    theirs = getattr(tfk.layers, name)(*ARGS[name], name="x")
    assert config_differences(mine.get_config(), theirs.get_config()) == set()


def _model(k):
    return k.models.Sequential([
        k.layers.ConvLSTM2D(3, 2, padding="same", return_sequences=True, dropout=0.1,
                            input_shape=(3, 6, 6, 2)),
        k.layers.TimeDistributed(k.layers.LocallyConnected2D(2, 3, strides=2,
                                                             implementation=2)),
        k.layers.Reshape((3, 2, 4)),
        k.layers.ConvLSTM1D(2, 2, data_format="channels_first", go_backwards=True),
        k.layers.Flatten(), k.layers.AlphaDropout(0.2, seed=1),
        k.layers.SpectralNormalization(k.layers.Dense(2), power_iterations=2)])


@pytest.mark.slow  # each layer's config round trip and HDF5 weights are tested per layer
def test_whole_models_in_hdf5_load_both_ways(tfk, tmp_path, monkeypatch):
    """tf-keras's HDF5 loader does not know its own SpectralNormalization: it is given as a
    custom object there."""
    from tf_keras.src.layers.normalization import spectral_normalization

    monkeypatch.setattr(spectral_normalization.tf.keras.layers, "InputSpec",
                        tfk.layers.InputSpec)  # see test_keras_spectral_normalization
    keras.backend.clear_session()
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6, 2)).astype(np.float32)
    custom = {"SpectralNormalization": tfk.layers.SpectralNormalization}
    for source in (keras, tfk):
        model = _model(source)
        path = str(tmp_path / f"{source.__name__}.h5")
        if source is keras:
            model.save(path)
        else:
            with pytest.warns(UserWarning, match="This file format is considered legacy"):
                model.save(path)
        want = model.predict(x, verbose=0)
        for loader in (keras.models.load_model, lambda p: tfk.models.load_model(
                p, custom_objects=custom)):
            loaded = loader(path)
            assert [type(a).__name__ for a in loaded.layers] == [
                type(b).__name__ for b in model.layers]
            np.testing.assert_allclose(loaded.predict(x, verbose=0), want, rtol=1e-5,
                                       atol=1e-6)


MIXED = [
    ("ConvLSTM2D", lambda m: m.ConvLSTM2D(3, 2, return_state=True), (2, 3, 5, 5, 2)),
    ("LocallyConnected2D", lambda m: m.LocallyConnected2D(3, 2, implementation=2),
     (2, 5, 5, 2)),
    ("LocallyConnected1D", lambda m: m.LocallyConnected1D(3, 2), (2, 5, 2)),
    ("SpectralNormalization", lambda m: m.SpectralNormalization(m.Dense(3)), (2, 4)),
    ("AlphaDropout", lambda m: m.AlphaDropout(0.3, seed=2), (2, 4)),
]


@pytest.mark.parametrize("name,make,shape", MIXED, ids=[c[0] for c in MIXED])
def test_mixed_float16_as_tf_keras(tfk, real_tf, monkeypatch, name, make, shape):
    """float16 outputs, float32 weights (SpectralNormalization's vector_u too), tf-keras's
    values to float16 rounding, training calls included."""
    from tf_keras.src.layers.normalization import spectral_normalization

    monkeypatch.setattr(spectral_normalization.tf.keras.layers, "InputSpec",
                        tfk.layers.InputSpec)
    tf = real_tf
    keras.mixed_precision.set_global_policy("mixed_float16")
    tfk.mixed_precision.set_global_policy("mixed_float16")
    try:
        ours, theirs = make(L), make(tfk.layers)
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape).astype(np.float32)
        theirs(x)
        ours(x)
        assert [w.dtype.name for w in ours.weights] == [w.dtype.name for w in theirs.weights]
        weights = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                   for w in theirs.get_weights()]
        ours.set_weights(weights)
        theirs.set_weights(weights)
        for _ in range(2):
            tf.random.set_seed(1)
            ig.random.set_seed(1)
            got, want = ours(x, training=True), theirs(x, training=True)
            got = got if isinstance(got, list) else [got]
            want = want if isinstance(want, list) else [want]
            for a, b in zip(got, want):
                assert a.dtype.name == "float16" == b.dtype.name
                np.testing.assert_allclose(a.numpy().astype(np.float32),
                                           b.numpy().astype(np.float32), rtol=5e-3, atol=2e-3)
        for a, b in zip(ours.get_weights(), theirs.get_weights()):
            np.testing.assert_allclose(a, b, rtol=5e-3, atol=2e-3)
    finally:
        keras.mixed_precision.set_global_policy("float32")
        tfk.mixed_precision.set_global_policy("float32")


def _ipu_model(k):
    return k.models.Sequential([
        k.layers.ConvLSTM2D(2, 2, padding="same", return_sequences=True,
                            input_shape=(3, 5, 5, 2)),
        k.layers.Reshape((15, 10)),
        k.layers.LocallyConnected1D(2, 3, implementation=2, padding="same"),
        k.layers.Flatten(), k.layers.SpectralNormalization(k.layers.Dense(2))])


def test_fit_under_ipu_strategy_equals_host_fit(fresh_ipu_system):
    from ipu_gpu.ipu import config
    from ipu_gpu.ipu.ipu_strategy import IPUStrategy

    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 3, 5, 5, 2)).astype(np.float32)
    y = rng.standard_normal((16, 2)).astype(np.float32)
    host = _ipu_model(keras)
    weights = host.get_weights()
    host.compile(keras.optimizers.SGD(0.05), "mse")
    kwargs = dict(batch_size=4, epochs=2, shuffle=False, verbose=0)
    want = host.fit(x, y, **kwargs).history["loss"]
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    with IPUStrategy().scope():
        model = _ipu_model(keras)
        model.set_weights(weights)
        model.compile(keras.optimizers.SGD(0.05), "mse", steps_per_execution=2)
        got = model.fit(x, y, **kwargs).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for a, b in zip(model.get_weights(), host.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_summary_equals_tf_keras(tfk, monkeypatch):
    from tf_keras.src.layers.normalization import spectral_normalization

    monkeypatch.setattr(spectral_normalization.tf.keras.layers, "InputSpec",
                        tfk.layers.InputSpec)
    texts = []
    for k in (keras, tfk):
        named = list(_model(k).layers)
        for i, layer in enumerate(named):
            layer._name = "abcdefg"[i]
        model = k.models.Sequential(named, name="m")
        lines = []
        model.summary(line_length=100, print_fn=lines.append)
        texts.append(lines)
    assert texts[0] == texts[1]
