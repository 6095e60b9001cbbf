"""``SpectralNormalization`` (issue 16) against tf-keras with shared weights (outputs, the
kernel and ``vector_u`` it assigns, gradients, over Dense, Conv2D and Embedding, configs,
errors, HDF5 weights both ways, a short ``fit``), a float64 numpy power iteration, and a TF1
graph (where, as tf-keras's compat.v1 layer, a training call's assignments are not run)."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras
from ipu_gpu.keras import backend, losses, optimizers
from ipu_gpu.keras import layers as L
from keras_interop import assert_fit_matches, load_our_hdf5_weights, load_their_hdf5_weights


@pytest.fixture
def tfk(real_tf, monkeypatch):
    """tf_keras, whose SpectralNormalization builds ``tf.keras.layers.InputSpec``: Keras 3's
    class where ``tf.keras`` is Keras 3, which tf_keras refuses; give it tf_keras's own."""
    tf_keras = pytest.importorskip("tf_keras")
    from tf_keras.src.layers.normalization import spectral_normalization

    monkeypatch.setattr(spectral_normalization.tf.keras.layers, "InputSpec",
                        tf_keras.layers.InputSpec)
    # both name counters from zero: weight names and configs are compared with tf_keras's
    tf_keras.backend.clear_session()
    backend.clear_session()
    return tf_keras


CASES = {
    "dense": (lambda m: m.Dense(3), (2, 4), 1),
    "conv2d": (lambda m: m.Conv2D(2, 3, activation="relu"), (2, 5, 5, 2), 3),
    "embedding": (lambda m: m.Embedding(6, 3), (2, 3), 2),
}


def _input(shape, rng, ids):
    if ids:
        return rng.integers(0, 6, shape).astype(np.int32)
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("case", CASES)
def test_training_calls_normalize_as_tf_keras(tfk, real_tf, case):
    tf = real_tf
    make, shape, iterations = CASES[case]
    rng = np.random.default_rng(0)
    x = _input(shape, rng, case == "embedding")
    ours = L.SpectralNormalization(make(L), power_iterations=iterations)
    theirs = tfk.layers.SpectralNormalization(make(tfk.layers), power_iterations=iterations)
    theirs(x)
    ours(x)
    assert [w.name for w in ours.weights] == [
        w.name.replace(f"{theirs.name}/", f"{ours.name}/") for w in theirs.weights]
    weights = [rng.standard_normal(w.shape).astype(np.float32) for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    for _ in range(2):  # the second call iterates from the first call's vector_u
        xi, xt = ig.constant(x), tf.constant(x)
        with ig.GradientTape() as t1:
            yi = ours(xi, training=True)
            li = ig.reduce_sum(yi * yi)
        with tf.GradientTape() as t2:
            yt = theirs(xt, training=True)
            lt = tf.reduce_sum(yt * yt)
        np.testing.assert_allclose(yi.numpy(), yt.numpy(), rtol=1e-5, atol=1e-5)
        for a, b in zip(ours.get_weights(), theirs.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        for a, b in zip(t1.gradient(li, ours.trainable_variables),
                        t2.gradient(lt, theirs.trainable_variables)):
            np.testing.assert_allclose(np.asarray(ig.convert_to_tensor(a)),
                                       tf.convert_to_tensor(b).numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
    config, want = ours.get_config(), theirs.get_config()
    want["layer"].pop("build_config")  # tf-keras's newer serialization adds it
    assert config == want | {"name": ours.name}
    clone = L.SpectralNormalization.from_config(config)
    assert clone.get_config() == config | {"name": clone.name}
    assert tuple(ours.compute_output_shape(shape)) == tuple(theirs.compute_output_shape(shape))


def test_power_iteration_against_numpy_float64():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 4))
    layer = L.SpectralNormalization(L.Dense(5, dtype="float64"), power_iterations=4,
                                    dtype="float64")
    layer(x)
    kernel, bias, u = (rng.standard_normal(w.shape) for w in layer.get_weights())
    layer.set_weights([kernel, bias, u])
    np.testing.assert_allclose(layer(x).numpy(), x @ kernel + bias, rtol=1e-12)  # inference
    xi = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xi)
        y = layer(xi, training=True)
        loss = ig.reduce_sum(y * y)
    gx, gk = tape.gradient(loss, [xi, layer.layer.kernel])
    want_u = u
    for _ in range(4):
        v = want_u @ kernel.T
        v /= np.linalg.norm(v)
        want_u = v @ kernel
        want_u /= np.linalg.norm(want_u)
    sigma = (v @ kernel @ want_u.T).item()
    normalized = kernel / sigma
    assert abs(sigma - np.linalg.svd(kernel, compute_uv=False)[0]) < 0.05 * sigma
    np.testing.assert_allclose(layer.get_weights()[0], normalized, rtol=1e-12)
    np.testing.assert_allclose(layer.get_weights()[2], want_u, rtol=1e-12)
    want_y = x @ normalized + bias
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), 2 * want_y @ normalized.T, rtol=1e-12)
    np.testing.assert_allclose(gk.numpy(), np.einsum("bti,bto->io", x, 2 * want_y), rtol=1e-12)


def test_an_all_zero_kernel_is_left_as_it_is():
    layer = L.SpectralNormalization(L.Dense(2, kernel_initializer="zeros"))
    x = np.ones((2, 3), np.float32)
    layer(x)
    u = layer.get_weights()[2]
    np.testing.assert_array_equal(layer(x, training=True).numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(layer.get_weights()[0], np.zeros((3, 2)))
    np.testing.assert_array_equal(layer.get_weights()[2], u)


def test_errors_as_tf_keras(tfk):
    for make in (lambda m: m.layers.SpectralNormalization(m.layers.Dense(2), power_iterations=0),
                 lambda m: m.layers.SpectralNormalization(m.layers.Flatten()).build((2, 3, 4))):
        with pytest.raises(ValueError) as theirs:
            make(tfk)
        with pytest.raises(ValueError) as ours:
            make(keras)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="not a supported layer type"):
        L.SpectralNormalization("dense")


def _model(k):
    return k.models.Sequential([
        k.layers.SpectralNormalization(k.layers.Dense(6, activation="tanh"), input_shape=(4,)),
        k.layers.SpectralNormalization(k.layers.Dense(2), power_iterations=2)])


def test_fit_and_hdf5_weights_match_tf_keras(tfk, tmp_path):
    backend.clear_session()
    tfk.backend.clear_session()
    mine, theirs = _model(keras), _model(tfk)
    assert [w.name for w in mine.weights] == [w.name for w in theirs.weights]
    rng = np.random.default_rng(2)
    values = [rng.uniform(-0.8, 0.8, w.shape).astype(np.float32) for w in theirs.get_weights()]
    load_their_hdf5_weights(mine, theirs, values, tmp_path)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 2)).astype(np.float32)
    mine.compile(optimizers.SGD(0.1), losses.MeanSquaredError())
    theirs.compile(tfk.optimizers.legacy.SGD(0.1), tfk.losses.MeanSquaredError())
    assert_fit_matches(mine, theirs, x, y)
    np.testing.assert_allclose(mine.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-5)
    load_our_hdf5_weights(theirs, mine, values, tmp_path)


def test_in_a_tf1_graph_inference_and_training_as_tf_keras_compat_v1():
    """In a TF1 graph tf-keras's training call leaves its assignments unrun (nothing makes
    the layer's read wait for them, and they are not update ops): the output uses the
    kernel as it stands, and the weights do not move."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    with v1.Graph().as_default():
        ph = v1.placeholder(np.float32, (None, 4))
        layer = L.SpectralNormalization(L.Dense(2))
        inference, training = layer(ph), layer(ph, training=True)
        weights = [rng.standard_normal(w.shape).astype(np.float32) for w in layer.weights]
        layer.set_weights(weights)
        grad = v1.gradients(ig.reduce_sum(training), layer.layer.kernel)[0]
        with v1.Session() as sess:
            got, got_training, got_grad = sess.run([inference, training, grad], {ph: x})
            sess.run(training, {ph: x})
            after = layer.get_weights()
    want = x @ weights[0] + weights[1]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_training, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad, np.repeat(x.sum(0)[:, None], 2, 1), rtol=1e-5)
    for a, b in zip(after, weights):
        np.testing.assert_array_equal(a, b)
