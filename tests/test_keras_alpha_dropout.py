"""``AlphaDropout`` (issue 16): tf-keras's values under a seed (bit for bit: the same Philox
stream), its gradient, the statistics it keeps, inference and out-of-range rates as the
identity, config, a seeded ``fit`` equal to tf-keras's eager ``fit``, and TF1 graph use."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras
from ipu_gpu.keras import layers as L

ALPHA_P = -1.6732632423543772848170429916717 * 1.0507009873554804934193349852946


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _reset_streams(tf):
    """Both global seeds set alike (which also restarts every op's counter in both)."""
    tf.random.set_seed(11)
    ig.random.set_seed(11)


@pytest.mark.parametrize("kwargs", [dict(rate=0.3, seed=5), dict(rate=0.6, seed=2),
                                    dict(rate=0.2, noise_shape=(4, 1), seed=7)])
def test_values_and_gradients_equal_tf_keras_under_a_seed(tfk, real_tf, kwargs):
    tf = real_tf
    _reset_streams(tf)
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    ours, theirs = L.AlphaDropout(**kwargs), tfk.layers.AlphaDropout(**kwargs)
    for _ in range(2):  # the second call draws with seed + 1, as tf-keras
        xi, xt = ig.constant(x), tf.constant(x)
        with ig.GradientTape() as t1:
            t1.watch(xi)
            yi = ours(xi, training=True)
        with tf.GradientTape() as t2:
            t2.watch(xt)
            yt = theirs(xt, training=True)
        np.testing.assert_array_equal(yi.numpy(), yt.numpy())
        np.testing.assert_array_equal(t1.gradient(yi, xi).numpy(), t2.gradient(yt, xt).numpy())
    assert ours.get_config() == theirs.get_config() | {"name": ours.name}
    assert L.AlphaDropout.from_config(ours.get_config()).get_config() == ours.get_config()


def test_arithmetic_against_numpy_and_statistics_kept():
    rate = 0.25
    x = np.random.default_rng(1).standard_normal((400, 250)).astype(np.float32)
    y = L.AlphaDropout(rate, seed=3)(x, training=True).numpy().astype(np.float64)
    a = ((1 - rate) * (1 + rate * ALPHA_P ** 2)) ** -0.5
    b = -a * ALPHA_P * rate
    dropped = np.isclose(y, a * ALPHA_P + b, atol=1e-6)
    np.testing.assert_allclose(y[~dropped], a * x[~dropped] + b, rtol=1e-5, atol=1e-6)
    assert abs(dropped.mean() - rate) < 0.01
    assert abs(y.mean() - x.mean()) < 0.01 and abs(y.var() - x.var()) < 0.02
    ones = L.AlphaDropout(rate, noise_shape=(400, 1), seed=3)(x, training=True).numpy()
    kept_rows = ~np.isclose(ones, a * ALPHA_P + b, atol=1e-6)
    assert np.all(kept_rows.all(axis=1) | (~kept_rows).all(axis=1))  # one draw per row


def test_identity_at_inference_and_for_rates_outside_zero_one():
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    layer = L.AlphaDropout(0.5, seed=1)
    np.testing.assert_array_equal(layer(x).numpy(), x)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    with keras.backend.learning_phase_scope(1):
        assert not np.array_equal(layer(x).numpy(), x)
    for rate in (0.0, 1.0, 1.5):
        np.testing.assert_array_equal(L.AlphaDropout(rate)(x, training=True).numpy(), x)
    assert L.AlphaDropout(0.1).compute_output_shape((None, 4)) == (None, 4)


def _model(k):
    return k.models.Sequential([k.layers.Dense(8, activation="selu", input_shape=(5,)),
                                k.layers.AlphaDropout(0.3, seed=4), k.layers.Dense(1)])


def test_seeded_fit_equals_tf_keras_eager_fit(tfk, real_tf):
    """tf-keras's eager calls draw with seed, seed + 1, ... as ours (its traced train
    function keeps one seed and advances the op's counter instead)."""
    keras.backend.clear_session()
    tfk.backend.clear_session()
    mine, theirs = _model(keras), _model(tfk)
    theirs.set_weights(mine.get_weights())
    _reset_streams(real_tf)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 5)).astype(np.float32)
    y = rng.standard_normal((32, 1)).astype(np.float32)
    mine.compile(keras.optimizers.SGD(0.01), "mse")
    theirs.compile(tfk.optimizers.legacy.SGD(0.01), "mse", run_eagerly=True)
    kwargs = dict(batch_size=8, epochs=2, shuffle=False, verbose=0)
    got, want = mine.fit(x, y, **kwargs), theirs.fit(x, y, **kwargs)
    np.testing.assert_allclose(got.history["loss"], want.history["loss"], rtol=1e-6)
    for a, b in zip(mine.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mine.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)


def test_in_a_tf1_graph_identity_at_inference_and_a_fresh_draw_per_training_run():
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float32)
    with v1.Graph().as_default():
        ph = v1.placeholder(np.float32, (None, 6))
        inference = L.AlphaDropout(0.4)(ph)
        training = L.AlphaDropout(0.4, seed=1)(ph, training=True)
        grad = v1.gradients(ig.reduce_sum(training), ph)[0]
        with v1.Session() as sess:
            np.testing.assert_array_equal(sess.run(inference, {ph: x}), x)
            first, g = sess.run([training, grad], {ph: x})
            second = sess.run(training, {ph: x})
    assert not np.array_equal(first, second)
    rate = 0.4
    a = ((1 - rate) * (1 + rate * ALPHA_P ** 2)) ** -0.5
    kept = ~np.isclose(first, a * ALPHA_P - a * ALPHA_P * rate, atol=1e-6)
    np.testing.assert_allclose(g, np.where(kept, a, 0), rtol=1e-6)
