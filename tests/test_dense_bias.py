"""dense_bias (ops/matmul.py: matmul + bias_add (+ relu) in one op) and Keras's Dense layer,
which calls it for float32/float64: the bits of the three ops, forward and backward, first
and second derivatives, every input rank; the op table (tests/opdb_dense.py) checks it
against a float64 reference, finite differences and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import keras
from ipu_gpu.ops import matmul


def _three_ops(x, w, b, relu):
    y = tf.nn.bias_add(tf.matmul(x, w), b)
    return tf.nn.relu(y) if relu else y


def _values_and_grads(fn, x, w, b):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x, w, b)
        loss = tf.reduce_sum(y * y)  # a cotangent that is not all ones
    return [y.numpy()] + [g.numpy() for g in tape.gradient(loss, [x, w, b])]


CASES = [  # (batch, in, units): a dense layer of the MLP bench, one unit, K = 0, no rows
    (256, 784, 512), (33, 7, 1), (5, 0, 3), (0, 4, 6), (64, 300, 10)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("n,k,u", CASES)
def test_dense_bias_gives_the_bits_of_the_three_ops(dtype, relu, n, k, u):
    rng = np.random.default_rng(n + k + u)
    x = tf.constant(rng.standard_normal((n, k)).astype(dtype))
    w = tf.Variable(rng.standard_normal((k, u)).astype(dtype))
    b = tf.Variable(rng.standard_normal(u).astype(dtype))
    got = _values_and_grads(lambda *a: matmul.dense_bias(*a, relu=relu), x, w, b)
    want = _values_and_grads(lambda *a: _three_ops(*a, relu), x, w, b)
    for g, v in zip(got, want):
        assert g.dtype == v.dtype and g.shape == v.shape
        np.testing.assert_array_equal(g.view(np.uint8), v.view(np.uint8))


def test_dense_bias_keeps_nan_and_the_relu_at_zero():
    x = tf.constant(np.array([[1.0, 0.0], [np.nan, 1.0], [0.0, 0.0]], np.float32))
    w = tf.Variable(np.eye(2, dtype=np.float32))
    b = tf.Variable(np.array([-1.0, 0.5], np.float32))
    got = _values_and_grads(lambda *a: matmul.dense_bias(*a, relu=True), x, w, b)
    want = _values_and_grads(lambda *a: _three_ops(*a, True), x, w, b)
    # the NaN spreads over its row (NaN * 0 in the product); 1 - 1 is +0, its relu +0
    np.testing.assert_array_equal(got[0], [[0, 0.5], [np.nan, np.nan], [0, 0.5]])
    assert not np.signbit(got[0][0, 0])
    # TF's ReluGrad multiplies the cotangent (2y: NaN in that row) by the mask: NaN * 0 is NaN
    assert np.isnan(got[3]).all()
    for g, v in zip(got, want):
        np.testing.assert_array_equal(g.view(np.uint8), v.view(np.uint8))


def test_second_derivatives_through_dense_bias_match_the_three_ops():
    rng = np.random.default_rng(5)
    x = tf.constant(rng.standard_normal((6, 4)))
    w = tf.Variable(rng.standard_normal((4, 3)))
    b = tf.Variable(rng.standard_normal(3))

    def penalty(fn):  # a gradient penalty: the input gradient's norm, differentiated again
        with tf.GradientTape() as outer:
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.reduce_sum(fn(x, w, b) ** 2)
            gx = inner.gradient(y, x)
            p = tf.reduce_sum(gx * gx)
        return [g.numpy() for g in outer.gradient(p, [w, b])]

    got = penalty(lambda *a: matmul.dense_bias(*a, relu=True))
    want = penalty(lambda *a: _three_ops(*a, True))
    for g, v in zip(got, want):
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12)
    assert np.abs(got[0]).sum() > 0


def _dense_pair(dtype, activation, use_bias, shape):
    rng = np.random.default_rng(11)
    layer = keras.layers.Dense(5, activation=activation, use_bias=use_bias, dtype=dtype)
    x = tf.constant(rng.standard_normal(shape).astype(dtype))
    layer(x)
    layer.set_weights([rng.standard_normal(w.shape).astype(dtype) for w in layer.get_weights()])
    return layer, x


@pytest.mark.parametrize("dtype,activation,use_bias,shape", [
    ("float32", "relu", True, (8, 6)),  # fused: matmul, bias and relu
    ("float64", None, True, (8, 6)),  # fused: matmul and bias
    ("float32", "tanh", True, (2, 3, 6)),  # fused bias on the flattened rows, then tanh
    ("float32", "relu", False, (8, 6)),  # no bias: the three-op path
    ("float16", "relu", True, (8, 6)),  # float16: the three-op path
])
def test_keras_dense_computes_what_its_ops_compute(monkeypatch, dtype, activation, use_bias,
                                                     shape):
    calls = []
    fused = matmul.dense_bias
    monkeypatch.setattr(matmul, "dense_bias", lambda *a, **k: calls.append(k) or fused(*a, **k))
    layer, x = _dense_pair(dtype, activation, use_bias, shape)
    calls.clear()
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
        loss = tf.reduce_sum(y * y)
    grads = tape.gradient(loss, [x] + layer.trainable_weights)
    assert calls == ([{"relu": activation == "relu"}]
                     if use_bias and dtype != "float16" else [])
    k = layer.kernel
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = tf.tensordot(x, k, 1) if len(shape) > 2 else tf.matmul(x, k)
        if use_bias:
            z = tf.nn.bias_add(z, layer.bias)
        z = keras.activations.get(activation)(z)
        want_loss = tf.reduce_sum(z * z)
    want = tape.gradient(want_loss, [x] + layer.trainable_weights)
    assert y.shape == z.shape == shape[:-1] + (5,)
    np.testing.assert_array_equal(y.numpy(), z.numpy())
    for g, v in zip(grads, want):
        np.testing.assert_allclose(g.numpy(), v.numpy(), rtol=1e-6 if dtype != "float16" else 0)
