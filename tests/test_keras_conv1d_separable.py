"""``DepthwiseConv1D`` and ``SeparableConv1D`` (issue 16) against tf-keras with shared
weights: outputs, gradients, output shapes and configs (channels_first through the
channels-last twin: TF's CPU depthwise kernel is NHWC only), and a float64 numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import layers as L


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


_CASES = [
    ("DepthwiseConv1D", dict(kernel_size=3)),
    ("DepthwiseConv1D", dict(kernel_size=2, strides=2, depth_multiplier=2, padding="same",
                             activation="relu")),
    ("DepthwiseConv1D", dict(kernel_size=3, dilation_rate=2, use_bias=False)),
    ("DepthwiseConv1D", dict(kernel_size=3, data_format="channels_first")),
    ("SeparableConv1D", dict(filters=4, kernel_size=3)),
    ("SeparableConv1D", dict(filters=2, kernel_size=3, strides=2, padding="same",
                             depth_multiplier=2)),
    ("SeparableConv1D", dict(filters=3, kernel_size=3, padding="causal", dilation_rate=2)),
    ("SeparableConv1D", dict(filters=3, kernel_size=2, data_format="channels_first")),
]


@pytest.mark.parametrize("i", range(len(_CASES)), ids=[f"{c[0]}-{i}" for i, c in
                                                        enumerate(_CASES)])
def test_matches_tf_keras(tfk, real_tf, i):
    tf = real_tf
    name, kwargs = _CASES[i]
    first = kwargs.get("data_format") == "channels_first"
    rng = np.random.default_rng(i)
    x = rng.standard_normal((2, 3, 9) if first else (2, 9, 3)).astype(np.float32)
    ours = getattr(L, name)(**kwargs)
    theirs = getattr(tfk.layers, name)(**dict(kwargs, data_format="channels_last"))
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


def test_depthwise_against_numpy():
    rng = np.random.default_rng(3)
    x, k = rng.standard_normal((2, 7, 3)), rng.standard_normal((3, 3, 2))
    layer = L.DepthwiseConv1D(3, depth_multiplier=2, use_bias=False, dtype="float64")
    layer.build(x.shape)
    layer.set_weights([k])
    want = np.zeros((2, 5, 3, 2))
    for t in range(5):
        for j in range(3):
            want[:, t] += x[:, t + j, :, None] * k[j]
    np.testing.assert_allclose(layer(x).numpy(), want.reshape(2, 5, 6), rtol=1e-12)
