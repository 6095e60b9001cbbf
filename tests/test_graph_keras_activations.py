"""Keras activations and activation layers on TF1 graph tensors (issue 17): Graphcore's TF1
programs call ``Dense(..., activation='softmax')``, ``Softmax()`` and the activation layers on
placeholders inside ``ipu_compiler.compile``; each must record graph nodes and, run in a
Session, give what the eager function gives on the same values (the eager ones are tested
against tf_keras elsewhere). Also: ``import ipu_gpu as tf`` reaches ``tf.compat``,
``tf.keras`` and ``ipu_gpu.ipu`` without importing them first."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras

X = np.random.default_rng(11).standard_normal((4, 6)).astype(np.float32) * 3

CASES = {
    "softmax": lambda x: keras.activations.softmax(x),
    "softmax_axes": lambda x: keras.activations.softmax(x, axis=(0, 1)),
    "relu_args": lambda x: keras.activations.relu(x, alpha=0.1, max_value=2.0, threshold=0.5),
    "relu_threshold": lambda x: keras.activations.relu(x, threshold=0.3),
    "elu": lambda x: keras.activations.elu(x, alpha=0.7),
    "selu": lambda x: keras.activations.selu(x),
    "hard_sigmoid": lambda x: keras.activations.hard_sigmoid(x),
    "mish": lambda x: keras.activations.mish(x),
    "softsign": lambda x: keras.activations.softsign(x),
    "gelu": lambda x: keras.activations.gelu(x, approximate=True),
    "swish": lambda x: keras.activations.swish(x),
    "Softmax": lambda x: keras.layers.Softmax()(x),
    "Activation_softmax": lambda x: keras.layers.Activation("softmax")(x),
    "LeakyReLU": lambda x: keras.layers.LeakyReLU(alpha=0.2)(x),
    "ReLU_max": lambda x: keras.layers.ReLU(max_value=1.0, negative_slope=0.1)(x),
    "ELU": lambda x: keras.layers.ELU(alpha=0.5)(x),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_activation_on_graph_tensor_equals_eager(case):
    fn = CASES[case]
    expected = fn(ig.constant(X)).numpy()
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [4, 6])
        out = fn(x)
        with v1.Session() as sess:
            got = sess.run(out, {x: X})
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_dense_softmax_layer_in_graph_equals_eager():
    kernel = np.random.default_rng(3).standard_normal((6, 5)).astype(np.float32)

    def build():
        return keras.layers.Dense(5, activation="softmax",
                                  kernel_initializer=keras.initializers.Constant(kernel),
                                  bias_initializer="zeros")

    expected = build()(ig.constant(X)).numpy()
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [None, 6])
        out = build()(x)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            got = sess.run(out, {x: X})
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-6)


def test_softmax_of_rank_one_graph_tensor_raises_keras_error():
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [6])
        with pytest.raises(ValueError, match="1D"):
            keras.activations.softmax(x)


def test_import_ipu_gpu_as_tf_reaches_compat_keras_and_ipu_lazily():
    code = ("import sys, ipu_gpu as tf\n"
            "assert 'ipu_gpu.keras' not in sys.modules\n"
            "assert tf.compat.v1.Session is not None and tf.keras.layers.Dense is not None\n"
            "assert tf.ipu.ipu_strategy.IPUStrategy is not None\n"
            "try:\n    tf.no_such_name\nexcept AttributeError as e:\n"
            "    assert 'no_such_name' in str(e)\nelse:\n    raise SystemExit(1)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
