"""ipu_tensorflow_addons' non-recurrent Keras layers (``ipu_gpu.addons.keras.layers``):
Dropout, Embedding, Group/Instance/LayerNormalization, SerialDense, RecomputationCheckpoint,
AssumeEqualAcrossReplicas and the CTC layers, against numpy references, tf-keras and real
TensorFlow where they exist; Graphcore's configs and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.addons.keras import layers as AL
from ipu_gpu.ipu import nn_ops, rand_ops


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _x(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


# ---- Dropout ------------------------------------------------------------------------------
def test_dropout_is_rand_ops_dropout_while_training():
    x = _x((4, 6)) + 3
    layer = AL.Dropout(0.4, seed=[3, 5])
    got = layer(x, training=True).numpy()
    want = rand_ops.dropout(x, rate=0.4, seed=[3, 5]).numpy()
    np.testing.assert_array_equal(got, want)
    kept = got != 0
    assert 0 < kept.sum() < x.size
    np.testing.assert_allclose(got[kept], (x / np.float32(0.6))[kept], rtol=1e-6)
    np.testing.assert_array_equal(layer(x, training=False).numpy(), x)
    np.testing.assert_array_equal(layer(x).numpy(), x)  # Keras's learning phase: inference
    masked = AL.Dropout(0.5, noise_shape=[4, 1], seed=[1, 1])(x, training=True).numpy()
    assert all(len(set(row != 0)) == 1 for row in masked)  # one decision per row
    with ig.GradientTape() as tape:
        xt = ig.constant(x)
        tape.watch(xt)
        y = layer(xt, training=True)
    np.testing.assert_array_equal(tape.gradient(y, xt).numpy(),
                                  np.where(kept, np.float32(1 / 0.6), 0))
    assert layer.get_config() == {"rate": 0.4, "noise_shape": None, "seed": [3, 5],
                                  "ref": True}


# ---- Embedding ----------------------------------------------------------------------------
def test_embedding_looks_up_rows_and_scatters_gradients():
    ids = np.array([[1, 3, 1], [0, 4, 2]], np.int32)
    layer = AL.Embedding(5, 3, serialization_factor=5)
    out = layer(ids)
    assert layer.embeddings.name == "embedding/embeddings:0"
    table = layer.embeddings.numpy()
    np.testing.assert_array_equal(out.numpy(), table[ids])
    u = _x((2, 3, 3), 1)
    with ig.GradientTape() as tape:
        loss = ig.reduce_sum(layer(ids) * u)
    want = np.zeros_like(table)
    np.add.at(want, ids, u)
    np.testing.assert_allclose(tape.gradient(loss, layer.embeddings).numpy(), want, rtol=1e-6)
    assert layer.get_config() == {
        "input_dim": 5, "output_dim": 3,
        "embeddings_initializer": keras.initializers.serialize(layer.embeddings_initializer),
        "serialization_factor": 5}
    sym = AL.Embedding(5, 3)(keras.Input((7,), dtype="int32"))
    assert sym.shape.as_list() == [None, 7, 3]


def test_embedding_errors():
    for arg, value in (("mask_zero", True), ("input_length", 4),
                       ("embeddings_regularizer", "l2")):
        with pytest.raises(NotImplementedError,
                           match=f"Embedding does not support __init__ argument {arg}"):
            AL.Embedding(5, 3, **{arg: value})
    with pytest.raises(ValueError, match=r"should be a tensor of shape \[batch, input_length\]"):
        AL.Embedding(5, 3)(np.zeros((2, 2, 2), np.int32))
    with pytest.raises(ValueError, match="serialization_factor"):
        AL.Embedding(5, 3, serialization_factor=2)(np.zeros((2, 2), np.int32))


# ---- normalisations ----------------------------------------------------------------------
def numpy_group_norm(x, gamma, beta, groups, channels_axis, epsilon, strided):
    """Group normalisation in float64 with per-example statistics over each group."""
    x = np.moveaxis(x.astype(np.float64), channels_axis, -1)
    channels = x.shape[-1]
    group = (np.arange(channels) % groups if strided
             else np.arange(channels) // (channels // groups))
    out = np.empty_like(x)
    for g in range(groups):
        sel = x[..., group == g]
        axes = tuple(range(1, sel.ndim))
        mean = sel.mean(axis=axes, keepdims=True)
        var = sel.var(axis=axes, keepdims=True)
        out[..., group == g] = (sel - mean) / np.sqrt(var + epsilon)
    out = out * gamma + beta
    return np.moveaxis(out, -1, channels_axis)


@pytest.mark.parametrize("channels_axis", [-1, 1])
@pytest.mark.parametrize("strided", [True, False])
def test_group_normalization_matches_numpy(channels_axis, strided):
    x = _x((2, 6, 3, 4) if channels_axis == 1 else (2, 3, 4, 6), 2) * 2 + 1
    layer = AL.GroupNormalization(groups=3, channels_axis=channels_axis,
                                  strided_channel_grouping=strided, epsilon=1e-3)
    out = layer(x).numpy()
    assert [w.name.split("/")[-1] for w in layer.weights] == ["gamma:0", "beta:0"]
    want = numpy_group_norm(x, layer.gamma.numpy(), layer.beta.numpy(), 3, channels_axis,
                            1e-3, strided)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer(x, training=False).numpy(), out, rtol=1e-6)


def test_group_and_instance_norm_defaults_and_gradients():
    """Graphcore's default initializers are None, which Keras's add_weight makes
    glorot_uniform: gamma and beta start random, not ones and zeros."""
    x = _x((2, 5, 4), 3)
    layer = AL.GroupNorm(groups=2)
    layer(x)
    assert not np.allclose(layer.gamma.numpy(), 1) and not np.allclose(layer.beta.numpy(), 0)
    inst = AL.InstanceNorm(gamma_initializer="ones", beta_initializer="zeros", epsilon=1e-5)
    got = inst(x).numpy()
    assert inst.groups == 4
    np.testing.assert_allclose(got, numpy_group_norm(x, 1.0, 0.0, 4, -1, 1e-5, True),
                               rtol=1e-4, atol=1e-5)
    # gradients against central differences of the float64 reference
    gn = AL.GroupNormalization(groups=2, center=False)
    gn(x)
    gamma = gn.gamma.numpy().astype(np.float64)
    u = _x(x.shape, 4).astype(np.float64)
    xt = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        loss = ig.reduce_sum(ig.cast(gn(xt), "float64") * u)
    gx, gg = tape.gradient(loss, [xt, gn.gamma])
    assert len(gn.weights) == 1

    def ref(xv, gv):
        return np.sum(numpy_group_norm(xv, gv, 0.0, 2, -1, 1e-3, True) * u)

    eps = 1e-4
    num_x = np.zeros(x.shape)
    for idx in [(0, 0, 0), (1, 2, 3), (0, 4, 1)]:
        d = np.zeros(x.shape)
        d[idx] = eps
        num_x[idx] = (ref(x + d, gamma) - ref(x - d, gamma)) / (2 * eps)
        np.testing.assert_allclose(gx.numpy()[idx], num_x[idx], rtol=2e-3, atol=2e-4)
    num_g = np.array([(ref(x, gamma + e) - ref(x, gamma - e)) / (2 * eps)
                      for e in np.eye(4) * eps])
    np.testing.assert_allclose(gg.numpy(), num_g, rtol=2e-3, atol=2e-4)
    assert list(inst.get_config()) == ["channels_axis", "center", "scale", "epsilon",
                                       "beta_initializer", "gamma_initializer", "trainable"]
    assert AL.GroupNorm.from_config(layer.get_config()).get_config() == layer.get_config()


@pytest.mark.parametrize("axis", [-1, [1, 2], 1])
def test_layer_normalization_matches_tf_keras(tfk, real_tf, axis):
    tf = real_tf
    x = _x((2, 3, 4), 5) * 3 + 2
    ours, theirs = AL.LayerNormalization(axis=axis), tfk.layers.LayerNormalization(axis=axis)
    ours(x)
    theirs(x)
    rng = np.random.default_rng(6)
    weights = [rng.normal(size=w.shape).astype(np.float32) for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    assert [w.shape for w in ours.weights] == [w.shape for w in theirs.weights]
    u = rng.normal(size=x.shape)
    with ig.GradientTape() as tape:
        xt = ig.constant(x)
        tape.watch(xt)
        out = ours(xt)
        loss = ig.reduce_sum(ig.cast(out, "float64") * u)
    got = tape.gradient(loss, [xt] + ours.trainable_weights)
    with tf.GradientTape() as tape:
        xtf = tf.constant(x)
        tape.watch(xtf)
        want_out = theirs(xtf)
        loss = tf.reduce_sum(tf.cast(want_out, "float64") * u)
    want = tape.gradient(loss, [xtf] + theirs.trainable_weights)
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-4, atol=1e-5)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-3, atol=1e-4)


def test_normalization_errors():
    x = np.zeros((2, 3, 6), np.float32)
    with pytest.raises(ValueError, match="Invalid groups 8 for 6 channels"):
        AL.GroupNormalization(groups=8)(x)
    with pytest.raises(ValueError, match="6 channels is not commensurate with 4 groups"):
        AL.GroupNormalization(groups=4)(x)
    with pytest.raises(ValueError, match="Axis is out of bounds"):
        AL.GroupNormalization(channels_axis=3)(x)
    with pytest.raises(ValueError, match="Unsupported data format"):
        AL.GroupNormalization(groups=1, channels_axis=2)(np.zeros((2, 3, 6, 2), np.float32))
    with pytest.raises(ValueError, match="Expected an int or a list/tuple of ints"):
        AL.LayerNormalization(axis="x")
    with pytest.raises(ValueError, match="Invalid axis: 5"):
        AL.LayerNormalization(axis=5)(x)
    with pytest.raises(ValueError, match=r"Duplicate axis: \(2, 2\)"):
        AL.LayerNormalization(axis=[2, -1])(x)
    with pytest.raises(NotImplementedError, match="does not support __init__ argument "
                                                  "gamma_regularizer"):
        AL.LayerNormalization(gamma_regularizer="l2")
    assert AL.LayerNorm is AL.LayerNormalization and AL.InstanceNorm is AL.InstanceNormalization


# ---- SerialDense --------------------------------------------------------------------------
@pytest.mark.parametrize("dimension", ["input_columns", "input_rows_kernel_columns",
                                       "kernel_rows"])
def test_serial_dense_equals_dense(dimension):
    x = _x((4, 6), 7)
    layer = AL.SerialDense(6, serialization_factor=2, serialization_dimension=dimension,
                           activation="relu", bias_initializer="random_normal")
    with ig.GradientTape() as tape:
        out = layer(x)
        loss = ig.reduce_sum(out * out)
    grads = tape.gradient(loss, layer.trainable_weights)
    kernel, bias = (w.numpy().astype(np.float64) for w in layer.weights)
    want = np.maximum(x @ kernel + bias, 0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    dz = 2 * want * (want > 0)
    np.testing.assert_allclose(grads[0].numpy(), x.T @ dz, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads[1].numpy(), dz.sum(0), rtol=1e-4, atol=1e-5)
    config = layer.get_config()
    assert config["serialization_dimension"] == dimension
    assert AL.SerialDense.from_config(config).get_config() == config


def test_serial_dense_errors():
    with pytest.raises(ValueError, match="Invalid serialization_dimension=rows"):
        AL.SerialDense(2, 2, "rows")(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="serialization_factor has to be at least 1, but "
                                         "was 0"):
        AL.SerialDense(2, 0, "kernel_rows")(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="should be defined"):
        AL.SerialDense(2, 1, "kernel_rows").build((2, None))


# ---- pass-through layers -----------------------------------------------------------------
def test_recomputation_checkpoint_and_assume_equal_pass_values_through():
    a, b = _x((2, 3)), _x((4,), 1)
    for layer in (AL.RecomputationCheckpoint(), AL.AssumeEqualAcrossReplicas(),
                  AL.AssumeEqualAcrossReplicas(inplace=True)):
        out = layer([a, b])
        np.testing.assert_array_equal(out[0].numpy(), a)
        np.testing.assert_array_equal(out[1].numpy(), b)
        xt = ig.constant(a)
        with ig.GradientTape() as tape:
            tape.watch(xt)
            y = ig.reduce_sum(layer(xt) * 3.0)
        np.testing.assert_array_equal(tape.gradient(y, xt).numpy(), np.full_like(a, 3.0))
    assert AL.RecomputationCheckpoint().get_config() == {}
    assert AL.AssumeEqualAcrossReplicas(inplace=True).get_config() == {"inplace": True}
    inputs = keras.Input((3,))
    out = AL.RecomputationCheckpoint()(keras.layers.Dense(2)(inputs))
    assert out.shape.as_list() == [None, 2]


# ---- CTC ----------------------------------------------------------------------------------
def _ctc_inputs():
    rng = np.random.default_rng(8)
    logits = rng.normal(size=(6, 2, 5)).astype(np.float32)  # time-major, as nn_ops
    labels = np.array([[1, 2, 0], [3, 3, 4]], np.int32)
    return labels, logits, np.array([2, 3], np.int32), np.array([6, 5], np.int32)


def test_ctc_loss_layer_is_the_batch_mean_of_tensorflows_ctc_loss(real_tf):
    tf = real_tf
    labels, logits, label_length, logit_length = _ctc_inputs()
    want = tf.reduce_mean(tf.nn.ctc_loss(labels, logits, label_length, logit_length,
                                         logits_time_major=True, blank_index=0)).numpy()
    got = AL.CTCLoss(blank_index=0, from_logits=True)(labels, logits, label_length,
                                                      logit_length)
    assert tuple(got.shape) == (1,)
    np.testing.assert_allclose(got.numpy()[0], want, rtol=1e-5)
    log_probs = tf.nn.log_softmax(logits).numpy()
    got = AL.CTCLoss()(labels, log_probs, label_length, logit_length)
    np.testing.assert_allclose(got.numpy()[0], want, rtol=1e-5)
    xt = ig.constant(logits)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        loss = AL.CTCLoss(from_logits=True)(labels, xt, label_length, logit_length)
    want_g = nn_ops.ctc_loss_v2
    with ig.GradientTape() as tape2:
        tape2.watch(xt)
        ref = ig.reduce_mean(want_g(labels, xt, label_length, logit_length, 0))
    np.testing.assert_allclose(tape.gradient(loss, xt).numpy(),
                               tape2.gradient(ref, xt).numpy(), rtol=1e-6)
    assert AL.CTCLoss(blank_index=2).get_config()["blank_index"] == 2


@pytest.mark.parametrize("top_paths", [1, 2])
def test_ctc_inference_and_predictions_layers(top_paths):
    _, logits, _, lengths = _ctc_inputs()
    probs, path_lengths, paths = AL.CTCInferenceLayer(
        beam_width=4, top_paths=top_paths, from_logits=True)(logits, lengths)
    want = nn_ops.ctc_beam_search_decoder(logits, lengths, beam_width=4, top_paths=top_paths,
                                          blank_index=0)
    for a, b in zip((probs, path_lengths, paths), want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    best = AL.CTCPredictionsLayer(beam_width=4, top_paths=top_paths,
                                  from_logits=True)(logits, lengths).numpy()
    # Graphcore picks the path with the smallest score (argmin) and blanks past its length
    pick = np.argmin(probs.numpy(), axis=1) if top_paths > 1 else np.zeros(2, int)
    for b in range(2):
        n = path_lengths.numpy()[b, pick[b]]
        np.testing.assert_array_equal(best[b, :n], paths.numpy()[b, pick[b], :n])
        assert (best[b, n:] == 0).all()
    log_probs = ig.nn.log_softmax(logits)
    np.testing.assert_array_equal(
        AL.CTCInferenceLayer(beam_width=4, top_paths=top_paths)(log_probs, lengths)[2].numpy(),
        nn_ops.ctc_beam_search_decoder_with_log_probs(log_probs, lengths, beam_width=4,
                                                      top_paths=top_paths,
                                                      blank_index=0)[2].numpy())
    config = AL.CTCPredictionsLayer(beam_width=4, top_paths=top_paths).get_config()
    assert config["beam_width"] == 4 and config["top_paths"] == top_paths
