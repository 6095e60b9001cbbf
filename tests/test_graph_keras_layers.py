"""Keras layers, models, losses and metrics called on TF1 graph tensors (issue 17).

Graphcore's TF1 programs call ``tf.keras.layers.*`` on placeholders and infeed tensors inside
``ipu_compiler.compile``. Each layer here is built in a ``v1.Graph()`` on placeholders with an
unknown batch dimension, given the weights of the same layer built eagerly, and run in a
``v1.Session``: its outputs, ``tf.gradients`` of a weighted sum of its outputs with respect to
its inputs and trainable weights, and the updates it makes (BatchNormalization's moving
statistics) must equal the eager layer's on the same values (the eager layers are tested
against tf_keras elsewhere)."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras
from ipu_gpu.core import nest

L = keras.layers


def _data(shape, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(0, 7, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _cotangents(outputs, seed=99):
    return [_data(np.shape(o), seed + i) for i, o in enumerate(outputs)]


def _weighted_sum(outputs, cotangents):
    terms = [ig.reduce_sum(ig.cast(o, np.float32) * c) for o, c in zip(outputs, cotangents)]
    return sum(terms[1:], terms[0])


def _call(layer, xs, multi, kwargs):
    if multi == "args":
        return layer(*xs, **kwargs)
    return layer(list(xs) if multi else xs[0], **kwargs)


def _dense(g):
    return np.asarray(ig.convert_to_tensor(g) if isinstance(g, ig.IndexedSlices) else g)


def _eager(make, arrays, multi, kwargs):
    """(layer, initial weights, outputs, gradients wrt float inputs + trainable weights)."""
    keras.utils.set_random_seed(0)
    layer = make()
    xs = [ig.constant(a) for a in arrays]
    _call(layer, xs, multi, {k: v for k, v in kwargs.items() if k != "training"})
    weights = layer.get_weights()
    floats = [x for x, a in zip(xs, arrays) if a.dtype.kind == "f"]
    with ig.GradientTape() as tape:
        tape.watch(floats)
        outputs = nest.flatten(_call(layer, xs, multi, kwargs))
        loss = _weighted_sum(outputs, _cotangents([o.numpy() for o in outputs]))
    grads = tape.gradient(loss, floats + list(layer.trainable_weights))
    return layer, weights, [o.numpy() for o in outputs], [_dense(g) for g in grads]


def _graph(make, arrays, multi, kwargs, weights, unknown_sizes=False):
    """The same in a TF1 graph on placeholders of unknown batch (and, with
    ``unknown_sizes``, unknown sizes but the channels): outputs, gradients, the layer."""
    keras.utils.set_random_seed(1)
    with v1.Graph().as_default():
        phs = [v1.placeholder(a.dtype, (None,) * (a.ndim - 1) + a.shape[-1:] if unknown_sizes
                              else (None,) + a.shape[1:]) for a in arrays]
        layer = make()
        outputs = nest.flatten(_call(layer, phs, multi, kwargs))
        layer.set_weights(weights)
        cotangents = [v1.placeholder(np.float32, o.shape) for o in outputs]
        loss = _weighted_sum(outputs, cotangents)
        floats = [p for p, a in zip(phs, arrays) if a.dtype.kind == "f"]
        grads = v1.gradients(loss, floats + list(layer.trainable_weights))
        feed = dict(zip(phs, arrays))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            got = sess.run(outputs, feed)
            feed.update(zip(cotangents, _cotangents(got)))
            got_grads = sess.run(grads, feed)
            return layer, got, got_grads


def _case(make, shapes, kwargs=None, multi=False, dtypes=None, rtol=1e-5, atol=1e-5):
    return dict(make=make, shapes=shapes, kwargs=kwargs or {}, multi=multi,
                dtypes=dtypes, rtol=rtol, atol=atol)


CASES = {
    "Dense": _case(lambda: L.Dense(4, activation="tanh"), [(3, 5)]),
    "Dense_3d": _case(lambda: L.Dense(4), [(2, 3, 5)]),
    "EinsumDense": _case(lambda: L.EinsumDense("abc,cd->abd", output_shape=(None, 4),
                                               bias_axes="d"), [(2, 3, 5)]),
    "Conv1D": _case(lambda: L.Conv1D(4, 3, padding="same", activation="relu"), [(2, 7, 3)]),
    "Conv1D_causal_dil": _case(lambda: L.Conv1D(2, 2, padding="causal", dilation_rate=2),
                               [(2, 7, 3)]),
    "Conv2D": _case(lambda: L.Conv2D(4, 3, strides=2, padding="same"), [(2, 7, 7, 3)]),
    "Conv2D_valid_dil": _case(lambda: L.Conv2D(2, 2, dilation_rate=2), [(2, 6, 6, 3)]),
    "Conv2D_groups": _case(lambda: L.Conv2D(4, 3, groups=2), [(2, 6, 6, 4)]),
    "Conv3D": _case(lambda: L.Conv3D(2, 2, padding="same"), [(2, 4, 4, 4, 3)]),
    "Conv2DTranspose": _case(lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"),
                             [(2, 4, 4, 2)]),
    "Conv2DTranspose_valid": _case(lambda: L.Conv2DTranspose(2, 3, strides=2), [(2, 3, 3, 2)]),
    "Conv3DTranspose": _case(lambda: L.Conv3DTranspose(2, 2, strides=2), [(1, 2, 3, 3, 2)]),
    "DepthwiseConv2D": _case(lambda: L.DepthwiseConv2D(3, depth_multiplier=2, padding="same"),
                             [(2, 5, 5, 3)]),
    "SeparableConv2D": _case(lambda: L.SeparableConv2D(4, 3, depth_multiplier=2),
                             [(2, 6, 6, 3)]),
    "MaxPooling1D": _case(lambda: L.MaxPooling1D(2), [(2, 7, 3)]),
    "AveragePooling1D": _case(lambda: L.AveragePooling1D(3, 2, padding="same"), [(2, 7, 3)]),
    "MaxPooling2D": _case(lambda: L.MaxPooling2D(2), [(2, 6, 6, 3)]),
    "MaxPooling2D_same": _case(lambda: L.MaxPooling2D(3, 2, padding="same"), [(2, 7, 7, 3)]),
    "AveragePooling2D": _case(lambda: L.AveragePooling2D(2, padding="same"), [(2, 5, 5, 3)]),
    "MaxPooling3D": _case(lambda: L.MaxPooling3D(2), [(2, 4, 4, 4, 2)]),
    "AveragePooling3D": _case(lambda: L.AveragePooling3D(2), [(2, 4, 4, 4, 2)]),
    "GlobalAveragePooling1D": _case(lambda: L.GlobalAveragePooling1D(), [(2, 5, 3)]),
    "GlobalMaxPooling1D": _case(lambda: L.GlobalMaxPooling1D(keepdims=True), [(2, 5, 3)]),
    "GlobalAveragePooling2D": _case(lambda: L.GlobalAveragePooling2D(), [(2, 4, 4, 3)]),
    "GlobalMaxPooling2D": _case(lambda: L.GlobalMaxPooling2D(), [(2, 4, 4, 3)]),
    "GlobalAveragePooling3D": _case(lambda: L.GlobalAveragePooling3D(), [(2, 3, 3, 3, 2)]),
    "BatchNormalization_inference": _case(lambda: L.BatchNormalization(), [(4, 3)],
                                          {"training": False}),
    "BatchNormalization_conv_inference": _case(lambda: L.BatchNormalization(axis=-1),
                                               [(2, 3, 3, 4)]),
    "LayerNormalization": _case(lambda: L.LayerNormalization(), [(3, 6)]),
    "LayerNormalization_axes": _case(lambda: L.LayerNormalization(axis=[1, 2]), [(2, 3, 4)]),
    "Dropout_inference": _case(lambda: L.Dropout(0.5), [(3, 4)], {"training": False}),
    "SpatialDropout2D_inference": _case(lambda: L.SpatialDropout2D(0.5), [(2, 3, 3, 2)]),
    "GaussianNoise_inference": _case(lambda: L.GaussianNoise(1.0), [(3, 4)]),
    "GaussianDropout_inference": _case(lambda: L.GaussianDropout(0.3), [(3, 4)]),
    "ActivityRegularization": _case(lambda: L.ActivityRegularization(l1=0.1), [(3, 4)]),
    "Embedding": _case(lambda: L.Embedding(7, 3), [(2, 5)], dtypes=[np.int32]),
    "Embedding_mask": _case(lambda: L.Embedding(7, 3, mask_zero=True), [(2, 5)],
                            dtypes=[np.int32]),
    "SimpleRNN": _case(lambda: L.SimpleRNN(4), [(2, 5, 3)]),
    "SimpleRNN_seq_state": _case(lambda: L.SimpleRNN(4, return_sequences=True,
                                                     return_state=True), [(2, 5, 3)]),
    "LSTM": _case(lambda: L.LSTM(4), [(2, 5, 3)]),
    "LSTM_seq_state": _case(lambda: L.LSTM(4, return_sequences=True, return_state=True),
                            [(2, 5, 3)]),
    "LSTM_backwards": _case(lambda: L.LSTM(3, go_backwards=True, return_sequences=True),
                            [(2, 4, 3)]),
    "GRU": _case(lambda: L.GRU(4), [(2, 5, 3)]),
    "GRU_seq_state": _case(lambda: L.GRU(4, return_sequences=True, return_state=True),
                           [(2, 5, 3)]),
    "GRU_reset_before": _case(lambda: L.GRU(3, reset_after=False), [(2, 4, 3)]),
    "RNN_stacked_cells": _case(lambda: L.RNN([L.SimpleRNNCell(3), L.LSTMCell(2)],
                                             return_sequences=True), [(2, 4, 3)]),
    "Bidirectional_LSTM": _case(lambda: L.Bidirectional(L.LSTM(3, return_sequences=True)),
                                [(2, 4, 3)]),
    "Bidirectional_GRU_sum": _case(lambda: L.Bidirectional(L.GRU(3), merge_mode="sum"),
                                   [(2, 4, 3)]),
    "TimeDistributed_Dense": _case(lambda: L.TimeDistributed(L.Dense(3)), [(2, 4, 5)]),
    "TimeDistributed_Conv2D": _case(lambda: L.TimeDistributed(L.Conv2D(2, 2)),
                                    [(2, 3, 4, 4, 1)]),
    "Add": _case(lambda: L.Add(), [(3, 4), (3, 4)], multi=True),
    "Subtract": _case(lambda: L.Subtract(), [(3, 4), (3, 4)], multi=True),
    "Multiply": _case(lambda: L.Multiply(), [(3, 4), (3, 4), (3, 4)], multi=True),
    "Average": _case(lambda: L.Average(), [(3, 4), (3, 4)], multi=True),
    "Maximum": _case(lambda: L.Maximum(), [(3, 4), (3, 4)], multi=True),
    "Minimum": _case(lambda: L.Minimum(), [(3, 4), (3, 4)], multi=True),
    "Concatenate": _case(lambda: L.Concatenate(axis=1), [(3, 4), (3, 2)], multi=True),
    "Dot": _case(lambda: L.Dot(axes=1, normalize=True), [(3, 4), (3, 4)], multi=True),
    "Dot_3d": _case(lambda: L.Dot(axes=(2, 2)), [(2, 3, 4), (2, 5, 4)], multi=True),
    "Reshape": _case(lambda: L.Reshape((2, -1)), [(3, 4, 2)]),
    "Flatten": _case(lambda: L.Flatten(), [(3, 2, 2, 3)]),
    "Permute": _case(lambda: L.Permute((2, 1)), [(3, 4, 2)]),
    "RepeatVector": _case(lambda: L.RepeatVector(3), [(2, 4)]),
    "ZeroPadding1D": _case(lambda: L.ZeroPadding1D((1, 2)), [(2, 3, 2)]),
    "ZeroPadding2D": _case(lambda: L.ZeroPadding2D(((1, 0), (2, 1))), [(2, 3, 3, 2)]),
    "ZeroPadding3D": _case(lambda: L.ZeroPadding3D(1), [(1, 2, 2, 2, 1)]),
    "Cropping1D": _case(lambda: L.Cropping1D((1, 2)), [(2, 6, 2)]),
    "Cropping2D": _case(lambda: L.Cropping2D(((1, 0), (1, 2))), [(2, 5, 5, 2)]),
    "Cropping3D": _case(lambda: L.Cropping3D(1), [(1, 4, 4, 4, 1)]),
    "UpSampling1D": _case(lambda: L.UpSampling1D(2), [(2, 3, 2)]),
    "UpSampling2D": _case(lambda: L.UpSampling2D(2), [(2, 3, 3, 2)]),
    "UpSampling2D_bilinear": _case(lambda: L.UpSampling2D(2, interpolation="bilinear"),
                                   [(2, 3, 3, 2)]),
    "UpSampling3D": _case(lambda: L.UpSampling3D(2), [(1, 2, 2, 2, 1)]),
    "MultiHeadAttention": _case(lambda: L.MultiHeadAttention(2, 3), [(2, 4, 5), (2, 3, 5)],
                                multi="args"),
    "MultiHeadAttention_scores": _case(
        lambda: _MHAScores(), [(2, 4, 5), (2, 3, 5)], multi=True),
    "Lambda": _case(lambda: L.Lambda(lambda t: ig.square(t) + 1.0), [(3, 4)]),
    "Masking": _case(lambda: L.Masking(0.0), [(2, 3, 4)]),
    "Rescaling": _case(lambda: L.Rescaling(0.5, offset=1.0), [(3, 4)]),
    "PReLU": _case(lambda: L.PReLU(alpha_initializer="random_normal"), [(3, 4)]),
    "Identity": _case(lambda: L.Identity(), [(3, 4)]),
    "Softmax_mask": _case(lambda: _SoftmaxWithMask(), [(3, 4)]),
}


class _MHAScores(L.Layer):
    """MultiHeadAttention with a causal mask, returning the attention scores too."""

    def __init__(self):
        super().__init__()
        self.mha = L.MultiHeadAttention(2, 3, value_dim=2, output_shape=4)

    def call(self, inputs):
        query, value = inputs
        out, scores = self.mha(query, value, return_attention_scores=True,
                               use_causal_mask=True)
        return out, scores


class _SoftmaxWithMask(L.Layer):
    def call(self, x):
        return L.Softmax()(x, mask=ig.greater(x, 0.0))


# inputs of rank > 2 with unknown sizes besides the batch (sequences of unknown length,
# images of unknown size); not yet: 1-D pooling (expand_dims of two unknown sizes),
# LayerNormalization over an unknown axis, a causal mask with attention scores
UNKNOWN_SIZES = sorted(k for k, c in CASES.items() if max(map(len, c["shapes"])) > 2
                       and k not in ("MaxPooling1D", "AveragePooling1D",
                                     "LayerNormalization_axes", "MultiHeadAttention_scores"))


def _check_case(case, unknown_sizes):
    c = CASES[case]
    dtypes = c["dtypes"] or [np.float32] * len(c["shapes"])
    arrays = [_data(s, 10 + i, d) for i, (s, d) in enumerate(zip(c["shapes"], dtypes))]
    _, weights, out, grads = _eager(c["make"], arrays, c["multi"], c["kwargs"])
    _, got, got_grads = _graph(c["make"], arrays, c["multi"], c["kwargs"], weights,
                               unknown_sizes)
    assert len(got) == len(out)
    for g, e in zip(got, out):
        np.testing.assert_allclose(g, e, rtol=c["rtol"], atol=c["atol"])
    assert len(got_grads) == len(grads)
    for g, e in zip(got_grads, grads):
        np.testing.assert_allclose(_dense(g), e, rtol=c["rtol"], atol=c["atol"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_layer_on_graph_tensor_equals_eager(case):
    _check_case(case, unknown_sizes=False)


@pytest.mark.parametrize("case", UNKNOWN_SIZES)
def test_layer_on_graph_tensor_of_unknown_sizes_equals_eager(case):
    _check_case(case, unknown_sizes=True)


def test_activity_regularization_loss_in_graph_is_a_tensor_of_the_run():
    x_val = _data((3, 4), 5)
    layer = L.Dense(2, activity_regularizer=keras.regularizers.L2(0.1))
    out = layer(ig.constant(x_val))
    expected = float(layer.losses[0])
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 4])
        g_layer = L.Dense(2, activity_regularizer=keras.regularizers.L2(0.1))
        g_layer(x)
        g_layer.set_weights(layer.get_weights())
        (loss,) = g_layer.losses
        with v1.Session() as sess:
            got = sess.run(loss, {x: x_val})
            got_half = sess.run(loss, {x: x_val[:1]})
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_allclose(got_half, 0.1 * np.sum(out.numpy()[:1] ** 2), rtol=1e-6)


@pytest.mark.parametrize("case", ["dense", "conv_fused", "virtual", "renorm"])
def test_batch_normalization_training_in_graph_updates_when_its_update_ops_run(case):
    """Training mode in a graph: the batch statistics normalise, and the moving statistics
    move only when ``layer.updates`` run (as tf_keras in compat.v1 graph mode)."""
    make, shape = {
        "dense": (lambda: L.BatchNormalization(momentum=0.6), (6, 3)),
        "conv_fused": (lambda: L.BatchNormalization(momentum=0.6, fused=True), (2, 3, 3, 4)),
        "virtual": (lambda: L.BatchNormalization(momentum=0.6, virtual_batch_size=2), (6, 3)),
        "renorm": (lambda: L.BatchNormalization(momentum=0.6, renorm=True), (6, 3)),
    }[case]
    x_val = _data(shape, 3) * 2 + 1
    layer, weights, out, grads = _eager(make, [x_val], False, {"training": True})
    moved = layer.get_weights()
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, (None,) + shape[1:])
        g_layer = make()
        y = g_layer(x, training=True)
        g_layer.set_weights(weights)
        assert v1.get_collection(v1.GraphKeys.UPDATE_OPS) == []
        assert len(g_layer.updates) == 2  # the moving mean and variance, as TF
        loss = _weighted_sum([y], _cotangents([out[0]]))
        g = v1.gradients(loss, [x] + list(g_layer.trainable_weights))
        with v1.Session() as sess:
            got, got_grads = sess.run([y, g], {x: x_val})
            for w, w0 in zip(g_layer.get_weights(), weights):  # no update yet
                np.testing.assert_array_equal(w, w0)
            sess.run(g_layer.updates, {x: x_val})
    np.testing.assert_allclose(got, out[0], rtol=1e-5, atol=1e-5)
    for a, b in zip(got_grads, grads):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    for a, b in zip(g_layer.get_weights(), moved):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_model_updates_collect_its_batch_normalization_updates():
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 3])
        model = keras.Sequential([L.Dense(4), L.BatchNormalization(), L.Dense(1),
                                  L.BatchNormalization()])
        model(x, training=True)
        assert len(model.updates) == 4
        model.layers[1].trainable = False
        assert len(model.updates) == 2


def test_dropout_training_in_graph_draws_a_mask_per_run_shared_with_its_gradient():
    x_val = np.ones((4, 40), np.float32)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 40])
        y = L.Dropout(0.5)(x, training=True)
        (g,) = v1.gradients(v1.reduce_sum(y * 3.0), [x])
        with v1.Session() as sess:
            first, first_grad = sess.run([y, g], {x: x_val})
            second = sess.run(y, {x: x_val})
    assert set(np.unique(first)) == {0.0, 2.0}
    np.testing.assert_array_equal(first_grad, first * 3.0)  # the run's own mask
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("case", ["spatial", "gaussian_noise", "gaussian_dropout"])
def test_noise_layers_in_training_draw_per_run(case):
    make = {"spatial": lambda: L.SpatialDropout2D(0.5),
            "gaussian_noise": lambda: L.GaussianNoise(1.0),
            "gaussian_dropout": lambda: L.GaussianDropout(0.5)}[case]
    x_val = np.ones((2, 4, 4, 8), np.float32)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 4, 4, 8])
        y = make()(x, training=True)
        (g,) = v1.gradients(v1.reduce_sum(y), [x])
        with v1.Session() as sess:
            first, grad = sess.run([y, g], {x: x_val})
            second = sess.run(y, {x: x_val})
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, x_val)
    if case == "gaussian_noise":
        np.testing.assert_array_equal(grad, np.ones_like(x_val))
    else:  # a multiplicative mask: the gradient of sum(x * m) is the run's m
        np.testing.assert_allclose(grad, first, rtol=1e-6)
    if case == "spatial":  # one draw per (sample, channel)
        assert (first == first[:, :1, :1, :]).all()


Y_TRUE = np.random.default_rng(21).random((4, 3)).astype(np.float32)
Y_PRED = np.random.default_rng(22).random((4, 3)).astype(np.float32) * 0.9 + 0.05
LABELS = np.array([0, 2, 1, 2], np.int32)
ONE_HOT = np.eye(3, dtype=np.float32)[LABELS]

LOSSES = {
    "MeanSquaredError": (lambda: keras.losses.MeanSquaredError(), Y_TRUE),
    "MeanAbsoluteError": (lambda: keras.losses.MeanAbsoluteError(), Y_TRUE),
    "Huber": (lambda: keras.losses.Huber(0.3), Y_TRUE),
    "BinaryCrossentropy": (lambda: keras.losses.BinaryCrossentropy(label_smoothing=0.1),
                           Y_TRUE),
    "BinaryCrossentropy_logits": (lambda: keras.losses.BinaryCrossentropy(from_logits=True),
                                  Y_TRUE),
    "CategoricalCrossentropy": (lambda: keras.losses.CategoricalCrossentropy(), ONE_HOT),
    "CategoricalCrossentropy_logits": (
        lambda: keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2),
        ONE_HOT),
    "SparseCategoricalCrossentropy": (
        lambda: keras.losses.SparseCategoricalCrossentropy(from_logits=True), LABELS),
    "KLDivergence": (lambda: keras.losses.KLDivergence(), Y_TRUE),
    "CosineSimilarity": (lambda: keras.losses.CosineSimilarity(), Y_TRUE),
    "Hinge": (lambda: keras.losses.Hinge(), Y_TRUE),
    "LogCosh": (lambda: keras.losses.LogCosh(), Y_TRUE),
    "Poisson": (lambda: keras.losses.Poisson(), Y_TRUE),
    "MSE_sum": (lambda: keras.losses.MeanSquaredError(reduction="sum"), Y_TRUE),
    "MSE_none": (lambda: keras.losses.MeanSquaredError(reduction="none"), Y_TRUE),
}


@pytest.mark.parametrize("case", sorted(LOSSES))
def test_loss_object_on_graph_tensors_equals_eager_with_gradient(case):
    make, y_true = LOSSES[case]
    weights = np.array([1.0, 0.5, 2.0, 0.0], np.float32)
    pred = ig.constant(Y_PRED)
    with ig.GradientTape() as tape:
        tape.watch(pred)
        expected = make()(ig.constant(y_true), pred, sample_weight=ig.constant(weights))
        total = ig.reduce_sum(expected)
    expected_grad = tape.gradient(total, pred).numpy()
    with v1.Graph().as_default():
        t = v1.placeholder(y_true.dtype, (None,) + y_true.shape[1:])
        p = v1.placeholder(np.float32, [None, 3])
        w = v1.placeholder(np.float32, [None])
        loss = make()(t, p, sample_weight=w)
        (g,) = v1.gradients(v1.reduce_sum(loss), [p])
        with v1.Session() as sess:
            got, got_grad = sess.run([loss, g], {t: y_true, p: Y_PRED, w: weights})
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad, expected_grad, rtol=1e-5, atol=1e-6)


METRICS = {
    "Mean": (lambda: keras.metrics.Mean(), lambda m, t, p: m.update_state(p)),
    "MeanSquaredError": (lambda: keras.metrics.MeanSquaredError(), None),
    "Accuracy": (lambda: keras.metrics.Accuracy(), "round"),
    "BinaryAccuracy": (lambda: keras.metrics.BinaryAccuracy(threshold=0.4), None),
    "CategoricalAccuracy": (lambda: keras.metrics.CategoricalAccuracy(), "onehot"),
    "SparseCategoricalAccuracy": (lambda: keras.metrics.SparseCategoricalAccuracy(), "labels"),
    "TopKCategoricalAccuracy": (lambda: keras.metrics.TopKCategoricalAccuracy(k=2), "onehot"),
    "AUC": (lambda: keras.metrics.AUC(num_thresholds=7), "binary"),
    "Precision": (lambda: keras.metrics.Precision(), "binary"),
    "Recall": (lambda: keras.metrics.Recall(thresholds=0.3), "binary"),
    "RootMeanSquaredError": (lambda: keras.metrics.RootMeanSquaredError(), None),
    "Sum": (lambda: keras.metrics.Sum(), lambda m, t, p: m.update_state(p, sample_weight=t)),
    "CategoricalCrossentropy": (lambda: keras.metrics.CategoricalCrossentropy(), "onehot"),
}


def _metric_batches(kind):
    """Two batches of (y_true, y_pred) for a metric kind."""
    out = []
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        pred = rng.random((5, 3)).astype(np.float32)
        if kind == "onehot":
            true = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 5)]
        elif kind == "labels":
            true = rng.integers(0, 3, (5, 1)).astype(np.float32)
        elif kind == "binary":
            true = (rng.random((5, 3)) > 0.5).astype(np.float32)
        elif kind == "round":
            true = (rng.random((5, 3)) > 0.5).astype(np.float32)
            pred = np.round(pred)
        else:
            true = rng.random((5, 3)).astype(np.float32)
        out.append((true, pred))
    return out


@pytest.mark.parametrize("case", sorted(METRICS))
def test_metric_object_in_graph_accumulates_per_update_run(case):
    """``update_state`` on graph tensors is an op: each run of it accumulates that run's
    batch; ``result()`` read in the session equals the eager metric after the same batches."""
    make, how = METRICS[case]
    batches = _metric_batches(how)
    update = how if callable(how) else (lambda m, t, p: m.update_state(t, p))
    eager = make()
    for t, p in batches:
        update(eager, ig.constant(t), ig.constant(p))
    expected = np.asarray(eager.result())
    with v1.Graph().as_default():
        t = v1.placeholder(np.float32, (None,) + batches[0][0].shape[1:])
        p = v1.placeholder(np.float32, (None,) + batches[0][1].shape[1:])
        metric = make()
        op = update(metric, t, p)
        result = metric.result()
        with v1.Session() as sess:
            sess.run(v1.local_variables_initializer())
            sess.run(v1.global_variables_initializer())
            for tv, pv in batches:
                sess.run(op, {t: tv, p: pv})
            got = sess.run(result)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def test_an_op_reading_only_variables_in_a_graph_reads_them_when_it_runs():
    """A weight-only subexpression (BatchNormalization's ``rsqrt(moving_variance) * gamma``)
    is a node reading the variables each run, with gradients, not a constant folded at
    construction (before the fix, gamma's gradient was None and updates went unseen)."""
    with v1.Graph().as_default():
        layer = L.Dense(1, use_bias=False, kernel_initializer="ones")
        x = v1.placeholder(np.float32, [None, 2])
        layer(x)
        y = x * (layer.kernel[:, 0] * 2.0)
        (g,) = v1.gradients(v1.reduce_sum(y), [layer.kernel])
        with v1.Session() as sess:
            first, grad = sess.run([y, g], {x: [[1.0, 2.0]]})
            layer.kernel.assign([[3.0], [4.0]])
            second = sess.run(y, {x: [[1.0, 2.0]]})
    np.testing.assert_array_equal(first, [[2.0, 4.0]])
    np.testing.assert_array_equal(grad, [[2.0], [4.0]])
    np.testing.assert_array_equal(second, [[6.0, 16.0]])


def test_reshape_of_unknown_batch_to_a_multiple_of_the_probe_size():
    """Reshape's -1 on an input of unknown size is an unknown dimension (TF's shape
    function), even where the stand-in sizes would not divide the new shape."""
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 4])
        y = ig.reshape(x, [-1, 3, 4])
        assert y.shape.as_list() == [None, 3, 4]
        with v1.Session() as sess:
            got = sess.run(y, {x: np.arange(24, dtype=np.float32).reshape(6, 4)})
    np.testing.assert_array_equal(got, np.arange(24).reshape(2, 3, 4))


def test_conv1d_on_a_placeholder_of_unknown_batch_and_width():
    x_val = _data((2, 9, 3), 4)
    f_val = _data((3, 3, 2), 5)
    expected = ig.nn.conv1d(ig.constant(x_val), ig.constant(f_val), 2, "SAME").numpy()
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, None, 3])
        y = ig.nn.conv1d(x, f_val, 2, "SAME")
        assert y.shape.as_list() == [None, None, 2]
        with v1.Session() as sess:
            got = sess.run(y, {x: x_val})
    np.testing.assert_array_equal(got, expected)


def test_metric_call_in_graph_updates_then_reads_the_result():
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None])
        metric = keras.metrics.Mean()
        value = metric(x)
        with v1.Session() as sess:
            first = sess.run(value, {x: [1.0, 2.0, 3.0]})
            second = sess.run(value, {x: [10.0]})
    assert first == 2.0 and second == 4.0


def _sequential():
    return keras.Sequential([L.Conv2D(3, 3, padding="same", activation="relu"),
                             L.BatchNormalization(), L.MaxPooling2D(),
                             L.Flatten(), L.Dropout(0.0), L.Dense(4, activation="tanh"),
                             L.Dense(2)])


def _functional():
    inputs = keras.Input((4, 4, 2))
    a = L.Conv2D(3, 2, padding="same")(inputs)
    b = L.DepthwiseConv2D(3, padding="same")(inputs)
    h = L.Concatenate()([a, b])
    h = L.GlobalAveragePooling2D()(L.LayerNormalization()(h))
    return keras.Model(inputs, L.Dense(2)(L.Dense(5, activation="relu")(h)))


class _Subclassed(keras.Model):
    def __init__(self):
        super().__init__()
        self.conv = L.Conv2D(2, 3)
        self.lstm = L.LSTM(3)
        self.out = L.Dense(2)

    def call(self, x, training=None):
        h = self.conv(x)
        return self.out(self.lstm(L.Reshape((-1, 2))(h)))


MODELS = {"sequential": _sequential, "functional": _functional, "subclassed": _Subclassed}


def _eager_sgd(make, x_val, y_val, steps, lr):
    keras.utils.set_random_seed(0)
    model = make()
    model(ig.constant(x_val))
    weights = model.get_weights()
    losses = []
    for _ in range(steps):
        with ig.GradientTape() as tape:
            loss = ig.reduce_mean(ig.square(model(ig.constant(x_val), training=True) - y_val))
        grads = tape.gradient(loss, model.trainable_weights)
        for v, g in zip(model.trainable_weights, grads):
            v.assign_sub(lr * g)
        losses.append(float(loss))
    return weights, losses, model.get_weights()


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_model_trained_in_graph_by_gradient_descent_equals_eager(kind):
    """A Keras model called on a placeholder, trained by ``GradientDescentOptimizer.minimize``
    (after ``model.updates``) in a session: the losses and all weights (moving statistics
    included) equal the eager tape's SGD from the same weights."""
    make = MODELS[kind]
    x_val, y_val = _data((3, 4, 4, 2), 1), _data((3, 2), 2)
    weights, losses, final = _eager_sgd(make, x_val, y_val, steps=3, lr=0.1)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 4, 4, 2])
        y = v1.placeholder(np.float32, [None, 2])
        keras.utils.set_random_seed(1)
        model = make()
        loss = v1.reduce_mean(v1.square(model(x, training=True) - y))
        model.set_weights(weights)
        with v1.control_dependencies(model.updates):  # BatchNormalization's, as TF1 programs
            train = v1.train.GradientDescentOptimizer(0.1).minimize(
                loss, var_list=model.trainable_weights)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            got = [sess.run([loss, train], {x: x_val, y: y_val})[0] for _ in range(3)]
    np.testing.assert_allclose(got, losses, rtol=1e-5, atol=1e-6)
    for a, b in zip(model.get_weights(), final):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make, expected", [
    (lambda: L.MaxPooling2D(2), [None, None, None, 3]),
    (lambda: L.Cropping1D((1, 2)), [None, None, 3]),
    (lambda: L.Conv2D(3, 3, strides=2, padding="same"), [None, None, None, 3]),
    (lambda: L.LSTM(4, return_sequences=True), [None, None, 4]),
])
def test_static_shape_of_unknown_size_stays_unknown(make, expected):
    """Stand-in sizes 2 and 3 pool to 1 and crop to 0 alike: a third probe keeps such a
    dimension unknown (TF's shape functions)."""
    with v1.Graph().as_default():
        rank = len(expected)
        x = v1.placeholder(np.float32, [None] * (rank - 1) + [3])
        assert make()(x).shape.as_list() == expected


def test_keras_model_in_a_compiled_ipu_loop_over_an_infeed_equals_eager(fresh_ipu_system):
    """Graphcore's TF1 pattern: Keras layers called on infeed tensors inside
    ``ipu_compiler.compile(loops.repeat(...))``, trained by a tf.train optimizer with the
    model's updates, the loss through an outfeed; weights made once; losses, weights and
    moving statistics equal the eager loop over the same batches."""
    from conftest import configure_ipus

    from ipu_gpu.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops, scopes

    configure_ipus(1)
    steps, lr = 3, 0.05
    x_all, y_all = _data((steps * 4, 6), 7), _data((steps * 4, 2), 8)

    def make():
        return keras.Sequential([L.Dense(5, activation="relu"), L.BatchNormalization(),
                                 L.Dense(2)])

    keras.utils.set_random_seed(0)
    model = make()
    model(ig.constant(x_all[:4]))
    weights = model.get_weights()
    expected = []
    for step in range(steps):
        xb, yb = x_all[step * 4:(step + 1) * 4], y_all[step * 4:(step + 1) * 4]
        with ig.GradientTape() as tape:
            loss = ig.reduce_mean(ig.square(model(ig.constant(xb), training=True) - yb))
        for v, g in zip(model.trainable_weights,
                        tape.gradient(loss, model.trainable_weights)):
            v.assign_sub(lr * g)
        expected.append(float(loss))

    ds = ig.data.Dataset.from_tensor_slices((x_all, y_all)).batch(4, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        g_model = make()

        def body(x, y):
            loss = v1.reduce_mean(v1.square(g_model(x, training=True) - y))
            with v1.control_dependencies(g_model.updates):
                train = v1.train.GradientDescentOptimizer(lr).minimize(
                    loss, var_list=g_model.trainable_weights)
            return outfeed.enqueue(loss), train

        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda: loops.repeat(steps, body, [], infeed), [])
        g_model.set_weights(weights)
        losses = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            sess.run(program)
            got = sess.run(losses)
    np.testing.assert_allclose(np.ravel(got), expected, rtol=1e-5, atol=1e-6)
    for a, b in zip(g_model.get_weights(), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _tf1_keras_training(tf_v1, keras_mod, weights, x_val, y_val, steps, lr):
    """A Dense/BatchNormalization/Dense model built on a placeholder in ``tf_v1``'s graph
    mode, trained by GradientDescentOptimizer after ``model.updates``: losses, weights."""
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, [None, 6])
        y = tf_v1.placeholder(np.float32, [None, 2])
        layers = keras_mod.layers
        model = keras_mod.Sequential([layers.Dense(5, activation="relu"),
                                      layers.BatchNormalization(momentum=0.9),
                                      layers.Dense(2)])
        loss = tf_v1.reduce_mean(tf_v1.square(model(x, training=True) - y))
        assert len(model.updates) == 2  # the moving mean and variance
        assert tf_v1.get_collection(tf_v1.GraphKeys.UPDATE_OPS) == []
        with tf_v1.control_dependencies(model.updates):
            train = tf_v1.train.GradientDescentOptimizer(lr).minimize(
                loss, var_list=model.trainable_weights)
        with tf_v1.Session() as sess:
            sess.run(tf_v1.global_variables_initializer())
            for v, w in zip(model.weights, weights):
                v.load(w, sess) if hasattr(v, "load") else v.assign(w)
            losses = [sess.run([loss, train], {x: x_val, y: y_val})[0] for _ in range(steps)]
            return losses, sess.run(model.weights)


def test_keras_training_in_graph_equals_real_tf_keras_compat_v1(real_tf):
    tf_keras = pytest.importorskip("tf_keras")
    x_val, y_val = _data((8, 6), 30), _data((8, 2), 31)
    keras.utils.set_random_seed(0)
    probe = keras.Sequential([L.Dense(5, activation="relu"), L.BatchNormalization(),
                              L.Dense(2)])
    probe(ig.constant(x_val))
    weights = probe.get_weights()  # kernel, bias, gamma, beta, moving mean/var, kernel, bias
    ours = _tf1_keras_training(v1, keras, weights, x_val, y_val, steps=3, lr=0.1)
    theirs = _tf1_keras_training(real_tf.compat.v1, tf_keras, weights, x_val, y_val,
                                 steps=3, lr=0.1)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("regularizer", ["l1", "l2", "l1_l2"])
def test_weight_regularization_losses_in_graph_read_the_weights_each_run(regularizer):
    """``model.losses`` built in a graph are nodes of the weights (their gradients reach
    the weights, and they follow the updates), as the eager model's losses."""
    make_reg = {"l1": lambda: keras.regularizers.L1(0.05),
                "l2": lambda: keras.regularizers.L2(0.1),
                "l1_l2": lambda: keras.regularizers.L1L2(0.05, 0.1)}[regularizer]
    x_val, y_val = _data((4, 3), 40), _data((4, 2), 41)

    def make():
        return keras.Sequential([L.Dense(4, kernel_regularizer=make_reg(),
                                         bias_regularizer=make_reg()),
                                 L.Dense(2, kernel_regularizer=make_reg())])

    def objective(model, x, y, sum_fn):
        return sum_fn(ig.reduce_mean(ig.square(model(x) - y)), model.losses)

    keras.utils.set_random_seed(0)
    model = make()
    model(ig.constant(x_val))
    weights = model.get_weights()
    expected = []
    for _ in range(3):
        with ig.GradientTape() as tape:
            loss = objective(model, ig.constant(x_val), y_val, lambda a, b: a + sum(b))
        for v, g in zip(model.trainable_weights,
                        tape.gradient(loss, model.trainable_weights)):
            v.assign_sub(0.1 * g)
        expected.append(float(loss))
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 3])
        g_model = make()
        loss = objective(g_model, x, y_val, lambda a, b: a + v1.add_n(b))
        g_model.set_weights(weights)
        train = v1.train.GradientDescentOptimizer(0.1).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            got = [sess.run([loss, train], {x: x_val})[0] for _ in range(3)]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    for a, b in zip(g_model.get_weights(), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_training_given_as_a_bool_placeholder_picks_the_mode_per_run():
    """TF1 programs feed ``is_training``: the layer's training and inference calls are a
    cond on it (TF-Keras's smart_cond); the gradient follows the branch the run took."""
    x_val = np.ones((4, 40), np.float32)
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 40])
        is_training = v1.placeholder(bool, [])
        y = L.Dropout(0.5)(x, training=is_training)
        (g,) = v1.gradients(v1.reduce_sum(y * 3.0), [x])
        with v1.Session() as sess:
            infer, infer_grad = sess.run([y, g], {x: x_val, is_training: False})
            train, train_grad = sess.run([y, g], {x: x_val, is_training: True})
    np.testing.assert_array_equal(infer, x_val)
    np.testing.assert_array_equal(infer_grad, np.full_like(x_val, 3.0))
    assert set(np.unique(train)) == {0.0, 2.0}
    np.testing.assert_array_equal(train_grad, train * 3.0)


def test_rnn_with_a_training_placeholder_in_inference_equals_eager():
    x_val = _data((2, 4, 3), 50)
    keras.utils.set_random_seed(0)
    layer = L.LSTM(3, dropout=0.5, recurrent_dropout=0.3)
    expected = layer(ig.constant(x_val), training=False).numpy()
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 4, 3])
        is_training = v1.placeholder(bool, [])
        g_layer = L.LSTM(3, dropout=0.5, recurrent_dropout=0.3)
        y = g_layer(x, training=is_training)
        g_layer.set_weights(layer.get_weights())
        with v1.Session() as sess:
            got = sess.run(y, {x: x_val, is_training: False})
            dropped = sess.run(y, {x: x_val, is_training: True})
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    assert not np.allclose(dropped, expected)
