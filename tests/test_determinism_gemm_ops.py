"""The ops and layers whose CPU path is a GEMM (through tf.matmul's tiled GEMM or einsum's
contractions) give bits that depend only on the shapes: tensordot, matvec, xw_plus_b,
Keras's Dense on 3-D inputs, EinsumDense, MultiHeadAttention, batch_dot and a bilinear
image resize, forward and gradients, and the Orthogonal initializer's QR, the same under
OpenBLAS thread counts 1-3 and Numba thread counts 1-4 (each product above OpenBLAS's
threading threshold of 2**18 multiply-adds); values close to a float64 numpy reference where
one is short to write."""

from __future__ import annotations

import hashlib

import numpy as np
from thread_grid import bits_per_thread_count

import ipu_gpu as tf


def _rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _grads(fn, *inputs, seed=0):
    """fn's output and the gradients of sum(output * u) for each input, as numpy arrays."""
    xs = [tf.constant(x) for x in inputs]
    with tf.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = fn(*xs)
    u = np.random.default_rng(seed + 50).standard_normal(y.shape).astype(np.float32)
    return [y.numpy()] + [g.numpy() for g in tape.gradient(y, xs, output_gradients=u)]


def _layer(layer, *inputs):
    """A Keras layer's output, its input gradients and its weights' gradients."""
    xs = [tf.constant(x) for x in inputs]
    with tf.GradientTape() as tape:
        for x in xs:
            tape.watch(x)
        y = layer(*xs)
        loss = tf.reduce_sum(y * y)
    grads = tape.gradient(loss, xs + list(layer.trainable_weights))
    return [y.numpy()] + [g.numpy() for g in grads]


def op_results():
    """{op: [arrays]} for every GEMM-backed op of the module docstring."""
    rng = np.random.default_rng(0)
    keras = tf.keras
    init = keras.initializers.GlorotUniform
    out = {
        "tensordot": _grads(lambda a, b: tf.tensordot(a, b, axes=1),
                            _rand(rng, 32, 40, 96), _rand(rng, 96, 128)),
        "matvec": _grads(tf.linalg.matvec, _rand(rng, 3, 300, 400), _rand(rng, 3, 400)),
        "xw_plus_b": _grads(tf.compat.v1.nn.xw_plus_b, _rand(rng, 128, 300),
                            _rand(rng, 300, 200), _rand(rng, 200)),
        "batch_dot": _grads(lambda x, y: keras.backend.batch_dot(x, y, axes=(2, 1)),
                            _rand(rng, 8, 64, 96), _rand(rng, 8, 96, 80)),
        "resize_bilinear": _grads(lambda x: tf.image.resize(x, (128, 128)),
                                  _rand(rng, 2, 64, 64, 16)),
        "dense_3d": _layer(keras.layers.Dense(128, kernel_initializer=init(seed=1)),
                           _rand(rng, 16, 40, 96)),
        "einsum_dense": _layer(keras.layers.EinsumDense(
            "abc,cd->abd", output_shape=(None, 128), kernel_initializer=init(seed=2)),
            _rand(rng, 16, 40, 96)),
    }
    mha = keras.layers.MultiHeadAttention(num_heads=4, key_dim=32, kernel_initializer=init(seed=3))
    out["multi_head_attention"] = _layer(mha, _rand(rng, 2, 64, 128), _rand(rng, 2, 64, 128))
    # LAPACK's QR (float64 bits changed with OpenBLAS's thread count)
    out["orthogonal_init"] = [keras.initializers.Orthogonal(seed=4)((512, 512),
                                                                     dtype="float64").numpy()]
    return out


def op_bits():
    return {k: [hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest() for a in v]
            for k, v in op_results().items()}


def test_bits_do_not_depend_on_the_blas_or_numba_thread_count():
    runs = bits_per_thread_count("test_determinism_gemm_ops", "op_bits")
    here = op_bits()
    for key, run in runs.items():
        differ = [op for op in here if run[op] != here[op]]
        assert not differ, (key, differ)


def test_values_close_to_float64():
    got = op_results()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((32, 40, 96)), rng.standard_normal((96, 128))
    np.testing.assert_allclose(got["tensordot"][0], np.tensordot(a.astype(np.float32), b.astype(
        np.float32), 1), rtol=1e-4, atol=1e-4)
    u = np.random.default_rng(50).standard_normal((32, 40, 128)).astype(np.float32)
    a, b, u = (v.astype(np.float32).astype(np.float64) for v in (a, b, u))
    np.testing.assert_allclose(got["tensordot"][1], u @ b.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got["tensordot"][2], np.einsum("ijk,ijl->kl", a, u), rtol=1e-4,
                               atol=1e-3)
    m, v = rng.standard_normal((3, 300, 400)), rng.standard_normal((3, 400))
    m, v = (x.astype(np.float32).astype(np.float64) for x in (m, v))
    np.testing.assert_allclose(got["matvec"][0], np.einsum("bij,bj->bi", m, v), rtol=1e-4,
                               atol=1e-4)


def test_orthogonal_init_is_orthogonal():
    q = op_results()["orthogonal_init"][0]
    np.testing.assert_allclose(q.T @ q, np.eye(512), atol=1e-12)
