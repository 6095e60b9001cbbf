"""``Conv1DTranspose`` (issue 16) against tf-keras with shared weights: outputs, gradients,
output shapes, configs and construction errors; and a float64 numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import layers as L


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


_CASES = [dict(filters=3, kernel_size=3), dict(filters=2, kernel_size=4, strides=2,
                                                padding="same"),
          dict(filters=4, kernel_size=3, strides=3, output_padding=1, activation="relu"),
          dict(filters=2, kernel_size=2, use_bias=False),
          dict(filters=3, kernel_size=3, strides=2, data_format="channels_first")]


@pytest.mark.parametrize("i", range(len(_CASES)))
def test_matches_tf_keras(tfk, real_tf, i):
    tf = real_tf
    kwargs = _CASES[i]
    first = kwargs.get("data_format") == "channels_first"
    rng = np.random.default_rng(i)
    x = rng.standard_normal((2, 5, 7) if first else (2, 7, 5)).astype(np.float32)
    ours, theirs = L.Conv1DTranspose(**kwargs), tfk.layers.Conv1DTranspose(**kwargs)
    # TF's CPU kernels take NWC only: feed tf-keras the channels-last twin
    theirs = tfk.layers.Conv1DTranspose(**dict(kwargs, data_format="channels_last"))
    xt_np = np.ascontiguousarray(x.transpose(0, 2, 1)) if first else x
    ours.build(x.shape)
    theirs.build(xt_np.shape)
    weights = [rng.standard_normal(w.shape).astype(np.float32) for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    xi, xt = ig.constant(x), tf.constant(xt_np)
    with ig.GradientTape() as t1:
        t1.watch(xi)
        yi = ours(xi)
        u = rng.standard_normal(tuple(yi.shape)).astype(np.float32)
        li = ig.reduce_sum(yi * u)
    with tf.GradientTape() as t2:
        t2.watch(xt)
        yt = theirs(xt)
        if first:
            yt = tf.transpose(yt, [0, 2, 1])
        lt = tf.reduce_sum(yt * u)
    np.testing.assert_allclose(yi.numpy(), yt.numpy(), rtol=1e-5, atol=1e-5)
    gi = t1.gradient(li, [xi, *ours.trainable_variables])
    gt = t2.gradient(lt, [xt, *theirs.trainable_variables])
    if first:
        gt[0] = tf.transpose(gt[0], [0, 2, 1])
    for a, b in zip(gi, gt):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-4)
    assert list(ours.compute_output_shape(x.shape)) == list(yi.shape)
    want = theirs.get_config() | {"name": ours.name}
    if first:
        want["data_format"] = "channels_first"
    assert ours.get_config() == want


def test_against_numpy_scatter():
    rng = np.random.default_rng(9)
    x, k = rng.standard_normal((2, 4, 3)), rng.standard_normal((3, 2, 3))
    layer = L.Conv1DTranspose(2, 3, strides=2, use_bias=False, dtype="float64")
    layer.build(x.shape)
    layer.set_weights([k])
    want = np.zeros((2, 9, 2))  # valid: (4 - 1) * 2 + 3
    for t in range(4):
        for j in range(3):
            want[:, t * 2 + j] += x[:, t] @ k[j].T
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-12)
    # dilated (TF's CPU kernels refuse it): taps dilation_rate apart
    layer = L.Conv1DTranspose(2, 3, dilation_rate=2, use_bias=False, dtype="float64")
    layer.build(x.shape)
    layer.set_weights([k])
    want = np.zeros((2, 8, 2))  # (4 - 1) + (3 - 1) * 2 + 1
    for t in range(4):
        for j in range(3):
            want[:, t + 2 * j] += x[:, t] @ k[j].T
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-12)


def test_errors_as_tf_keras(tfk):
    with pytest.raises(ValueError) as theirs:
        tfk.layers.Conv1DTranspose(2, 3, strides=2, output_padding=2)
    with pytest.raises(ValueError) as ours:
        L.Conv1DTranspose(2, 3, strides=2, output_padding=2)
    assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Inputs should have rank 3"):
        L.Conv1DTranspose(2, 3).build((2, 3, 4, 5))
