"""Preprocessing layers in Keras models trained under IPUStrategy (issue 16): inside an IPU
program the random layers draw from each replica's stream (deterministic after
``reset_ipu_seed``, different per replica), not from one generator the replicas' threads
would race for."""

from __future__ import annotations

import numpy as np

from ipu_gpu import keras
from ipu_gpu.ipu import config, utils
from ipu_gpu.ipu.ipu_strategy import IPUStrategy

L = keras.layers


def _fit(replicas, seed):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = replicas
    cfg.configure_ipu_system()
    utils.reset_ipu_seed(seed)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (32, 6, 6, 1)).astype(np.float32)
    y = rng.integers(0, 2, 32)
    with IPUStrategy().scope():
        norm = L.Normalization()
        norm.adapt(x)
        model = keras.Sequential([
            keras.Input((6, 6, 1)), norm, L.RandomFlip(seed=1), L.RandomRotation(0.1, seed=2),
            L.RandomContrast(0.2, seed=3), L.Flatten(), L.Dense(2, kernel_initializer="ones")])
        model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      steps_per_execution=2)
        history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        predictions = model.predict(x, batch_size=4, verbose=0)
    config.reset_ipu_configuration()
    return history.history["loss"], model.get_weights(), predictions, norm(x).numpy()


def test_augmented_model_trains_reproducibly_on_replicas(fresh_ipu_system):
    for replicas in (1, 2):
        first = _fit(replicas, seed=5)
        again = _fit(replicas, seed=5)
        np.testing.assert_array_equal(first[0], again[0])
        for a, b in zip(first[1], again[1]):
            np.testing.assert_array_equal(a, b)
        assert np.isfinite(first[0]).all()
        other = _fit(replicas, seed=6)
        assert not np.array_equal(first[0], other[0])  # the seed drives the augmentation
        kernel, bias = first[1][-2:]  # inference: no augmentation, normalised inputs
        np.testing.assert_allclose(first[2], first[3].reshape(32, -1) @ kernel + bias,
                                   rtol=1e-4, atol=1e-5)
