"""BatchNormalization's ``renorm`` (with ``renorm_clipping`` and ``renorm_momentum``),
``virtual_batch_size`` and ``adjustment`` against tf-keras (outputs, every weight after
several training calls, inference, gradients, configs, HDF5 weights, a few epochs of ``fit``)
and against a numpy reference of one training step."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import backend, losses, optimizers
from ipu_gpu.keras import layers as L
from ipu_gpu.keras.models import Sequential


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


CASES = {
    "renorm-clipped": dict(renorm=True, renorm_clipping=dict(rmax=1.3, rmin=0.8, dmax=0.2),
                           renorm_momentum=0.7, momentum=0.8),
    "renorm": dict(renorm=True, center=False),
    "renorm-axis1": dict(renorm=True, axis=1, scale=False, renorm_clipping=dict(dmax=0.5)),
    "virtual": dict(virtual_batch_size=4, momentum=0.5),
    "virtual-renorm-axes": dict(virtual_batch_size=4, renorm=True, axis=[1, 2]),
    "adjustment": dict(adjustment="per-channel"),
}


def _adjustment(lib):
    """A deterministic adjustment made of ``lib``'s ops: scale 0.9 + 0.1 c, bias 0.05 c on
    channel c, sized by the shape tensor Keras passes."""
    def adjustment(shape):
        channels = lib.cast(lib.range(shape[-1]), "float32")
        return channels * 0.1 + 0.9, channels * 0.05
    return adjustment


def _kwargs(name, lib):
    kwargs = dict(CASES[name])
    if kwargs.get("adjustment"):
        kwargs["adjustment"] = _adjustment(lib)
    return kwargs


def _x(scale=1.0):
    rng = np.random.default_rng(0)
    return ((rng.normal(size=(8, 4, 3)) * 2 + 1) * scale).astype(np.float32)


def _pair(tfk, tf, name):
    backend.clear_session()  # the same layer (and weight) names whichever tests ran before
    tfk.backend.clear_session()
    ours = L.BatchNormalization(**_kwargs(name, ig))
    theirs = tfk.layers.BatchNormalization(**_kwargs(name, tf))
    theirs(_x())
    ours(_x())
    rng = np.random.default_rng(1)
    weights = [w + rng.uniform(0, 0.5, size=w.shape).astype(np.float32)
               for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    return ours, theirs


@pytest.mark.parametrize("name", list(CASES))
def test_training_and_inference_match_tf_keras(tfk, real_tf, name):
    tf = real_tf
    ours, theirs = _pair(tfk, tf, name)
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    before = ours.get_weights()
    for step in range(3):  # the renorm statistics and moving statistics move each call
        x = _x(1 + step)
        np.testing.assert_allclose(ours(x, training=True).numpy(),
                                   theirs(x, training=True).numpy(), rtol=1e-5, atol=1e-5)
        for w, a, b in zip(theirs.weights, ours.get_weights(), theirs.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=w.name)
    moved = [w.name for w, a, b in zip(theirs.weights, ours.get_weights(), before)
             if not np.array_equal(a, b)]
    assert all(w.name in moved for w in theirs.non_trainable_weights)
    np.testing.assert_allclose(ours(_x()).numpy(), theirs(_x()).numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours(_x(), training=False).numpy(),
                               theirs(_x(), training=False).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", list(CASES))
def test_gradients_match_tf_keras(tfk, real_tf, name):
    tf = real_tf
    ours, theirs = _pair(tfk, tf, name)
    x = _x()
    u = np.random.default_rng(3).normal(size=x.shape)
    xt = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        loss = ig.reduce_sum(ig.cast(ours(xt, training=True), "float64") * u)
    got = tape.gradient(loss, [xt] + ours.trainable_weights)
    xtf = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xtf)
        loss = tf.reduce_sum(tf.cast(theirs(xtf, training=True), "float64") * u)
    want = tape.gradient(loss, [xtf] + theirs.trainable_weights)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_renorm_step_matches_numpy():
    """One training step: y = gamma * ((x - mean) / std * r + d) + beta, with r and d the
    clipped ratios to the renorm statistics before the step; those, the moving mean and the
    moving stddev move by their momenta; the moving variance is moving_stddev**2 - epsilon."""
    eps, m, rm = 1e-3, 0.8, 0.7
    layer = L.BatchNormalization(renorm=True, renorm_clipping=dict(rmax=1.3, rmin=0.8, dmax=0.2),
                                 renorm_momentum=rm, momentum=m, epsilon=eps)
    x = _x().astype(np.float64)
    layer(x.astype(np.float32))
    rng = np.random.default_rng(5)
    gamma, beta, mmean, mvar, mstd, rmean, rstd = [
        rng.uniform(0.2, 1.5, size=3) for _ in range(7)]
    layer.set_weights([gamma, beta, mmean, mvar, mstd, rmean, rstd])
    y = layer(x.astype(np.float32), training=True).numpy()
    mean, var = x.mean((0, 1)), x.var((0, 1))
    std = np.sqrt(var + eps)
    r = np.clip(std / np.maximum(rstd, np.sqrt(eps)), 0.8, 1.3)
    d = np.clip((mean - rmean) / np.maximum(rstd, np.sqrt(eps)), -0.2, 0.2)
    np.testing.assert_allclose(y, gamma * ((x - mean) / std * r + d) + beta, rtol=1e-5,
                               atol=1e-5)
    new_mstd = mstd - (mstd - std) * (1 - m)
    want = [gamma, beta, mmean - (mmean - mean) * (1 - m), np.maximum(new_mstd**2 - eps, 0),
            new_mstd, rmean - (rmean - mean) * (1 - rm), rstd - (rstd - std) * (1 - rm)]
    for a, b, w in zip(layer.get_weights(), want, layer.weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=w.name)


def test_virtual_batches_match_numpy():
    """Virtual batch j is x.reshape(virtual_batch_size, -1, ...)[:, j]: normalised with its
    own statistics; the moving statistics move by the virtual batches' mean statistics."""
    layer = L.BatchNormalization(virtual_batch_size=2, momentum=0.5, epsilon=1e-3,
                                 center=False, scale=False)
    x = _x().astype(np.float64)
    y = layer(x.astype(np.float32), training=True).numpy()
    ghost = x.reshape(2, 4, 4, 3)
    mean, var = ghost.mean((0, 2), keepdims=True), ghost.var((0, 2), keepdims=True)
    want = ((ghost - mean) / np.sqrt(var + 1e-3)).reshape(x.shape)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    moving_mean, moving_variance = layer.get_weights()
    assert moving_mean.shape == (1, 1, 1, 3)
    np.testing.assert_allclose(moving_mean, 0.5 * mean.mean(1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(moving_variance, 0.5 + 0.5 * var.mean(1, keepdims=True),
                               rtol=1e-5)


def test_adjustment_applies_in_training_only():
    layer = L.BatchNormalization(adjustment=_adjustment(ig), center=False, scale=False,
                                 epsilon=1e-3)
    x = _x().astype(np.float64)
    y = layer(x.astype(np.float32), training=True).numpy()
    c = np.arange(3)
    normalised = (x - x.mean((0, 1))) / np.sqrt(x.var((0, 1)) + 1e-3)
    np.testing.assert_allclose(y, normalised * (0.9 + 0.1 * c) + 0.05 * c, rtol=1e-5,
                               atol=1e-5)
    mean, variance = layer.get_weights()
    inference = layer(x.astype(np.float32)).numpy()
    np.testing.assert_allclose(inference, (x - mean) / np.sqrt(variance + 1e-3), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("name", ["renorm-clipped", "virtual", "virtual-renorm-axes"])
def test_configs_both_ways(tfk, real_tf, name):
    ours, theirs = _pair(tfk, real_tf, name)
    config, want = ours.get_config(), theirs.get_config()
    if "virtual_batch_size" in config:
        # Keras reports the axis it shifted by one for the virtual batches (and cannot
        # rebuild the layer from that); the emulator reports the input's axis
        assert config["axis"] == [a - 1 for a in want["axis"]]
        want = {**want, "axis": config["axis"]}
    assert {**config, "name": None} == {**want, "name": None}
    rebuilt = L.BatchNormalization.from_config(config)
    assert rebuilt.get_config() == config
    rebuilt(_x())
    assert rebuilt.get_config() == config
    unbuilt = L.BatchNormalization(**_kwargs(name, ig)).get_config()
    assert tfk.layers.BatchNormalization.from_config(unbuilt).get_config() == unbuilt


def test_adjustment_is_left_out_of_the_config_with_a_warning(caplog):
    layer = L.BatchNormalization(adjustment=_adjustment(ig))
    with caplog.at_level(logging.WARNING, logger="ipu_gpu.keras"):
        config = layer.get_config()
    assert "adjustment" not in config
    assert "cannot be serialized" in caplog.text


def _model(lib, ops, name):
    """A small MLP with the BatchNormalization of CASES[name] (``ops``: the adjustment's)."""
    m = lib.layers
    return lib.Sequential([m.Dense(6, use_bias=False, input_shape=(5,)),
                           m.BatchNormalization(**_kwargs(name, ops)), m.Activation("tanh"),
                           m.Dense(3)])


class _Ours:
    layers = L
    Sequential = Sequential


def test_hdf5_weights_both_ways(tfk, real_tf, tmp_path):
    backend.clear_session()
    tfk.backend.clear_session()
    mine = _model(_Ours, ig, "renorm-clipped")
    theirs = _model(tfk, real_tf, "renorm-clipped")
    assert [w.name for w in mine.weights] == [w.name for w in theirs.weights]
    rng = np.random.default_rng(1)
    values = [rng.uniform(0.1, 1, w.shape).astype(np.float32) for w in theirs.get_weights()]
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


def test_whole_model_hdf5_files_load_in_both(tfk, real_tf, tmp_path):
    backend.clear_session()
    tfk.backend.clear_session()
    x = _x()
    for name in ("renorm-clipped", "virtual-renorm-axes"):
        ours = Sequential([L.InputLayer((4, 3)), L.BatchNormalization(**_kwargs(name, ig))])
        ours(x, training=True)  # moves the moving and renorm statistics
        path = str(tmp_path / f"{name}.h5")
        ours.save(path)
        want = ours.predict(x, verbose=0)
        theirs = tfk.models.load_model(path)
        np.testing.assert_allclose(theirs.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)
        again = ig.keras.models.load_model(path)
        np.testing.assert_allclose(again.predict(x, verbose=0), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["renorm-clipped", "virtual", "adjustment"])
def test_fit_matches_tf_keras(tfk, real_tf, name):
    rng = np.random.default_rng(2)
    x = (rng.normal(size=(32, 5)) * 2 + 0.5).astype(np.float32)
    y = rng.integers(0, 3, size=(32,))
    mine, theirs = _model(_Ours, ig, name), _model(tfk, real_tf, name)
    theirs.set_weights(mine.get_weights())
    mine.compile(optimizers.SGD(0.1, momentum=0.9),
                 losses.SparseCategoricalCrossentropy(from_logits=True))
    theirs.compile(tfk.optimizers.legacy.SGD(0.1, momentum=0.9),
                   tfk.losses.SparseCategoricalCrossentropy(from_logits=True))
    kwargs = dict(batch_size=8, epochs=3, shuffle=False, verbose=0)
    got, want = mine.fit(x, y, **kwargs), theirs.fit(x, y, **kwargs)
    np.testing.assert_allclose(got.history["loss"], want.history["loss"], rtol=1e-5, atol=1e-6)
    assert got.history["loss"][-1] < got.history["loss"][0]
    for w, a, b in zip(theirs.weights, mine.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5, err_msg=w.name)
    np.testing.assert_allclose(mine.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)


def test_errors_as_keras():
    with pytest.raises(ValueError, match="Passing both `fused=True` and `renorm=True`"):
        L.BatchNormalization(renorm=True, fused=True)
    with pytest.raises(ValueError, match="not supported when `virtual_batch_size`"):
        L.BatchNormalization(virtual_batch_size=2, fused=True)
    with pytest.raises(ValueError, match="not supported when `adjustment`"):
        L.BatchNormalization(adjustment=lambda s: (1.0, 0.0), fused=True)
    with pytest.raises(ValueError, match="invalid keys for `renorm_clipping`"):
        L.BatchNormalization(renorm=True, renorm_clipping=dict(rmax=2, max=3))
    x = _x()
    with pytest.raises(ValueError, match="must be a positive integer"):
        L.BatchNormalization(virtual_batch_size=0)(x)
    with pytest.raises(ValueError, match="axis cannot include 0"):
        L.BatchNormalization(virtual_batch_size=2, axis=[0, 2])(x)
    with pytest.raises(ValueError, match="adjustment cannot be specified"):
        L.BatchNormalization(virtual_batch_size=2, adjustment=lambda s: (1.0, 0.0))(x)
    assert L.BatchNormalization(renorm=True).fused is False  # renorm falls back, as Keras
