"""``GroupNormalization`` (issue 16) against tf-keras with shared weights (values, gradients,
masks, configs, errors) and a float64 numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import layers as L


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


@pytest.mark.parametrize("kwargs,shape", [
    (dict(groups=2), (3, 5, 6)),
    (dict(groups=3, axis=1), (2, 6, 4, 5)),
    (dict(groups=-1, center=False), (2, 4, 3, 4)),
    (dict(groups=1, scale=False, epsilon=0.1), (2, 7, 4)),
    (dict(groups=4), (2, 3, 2, 2, 8)),
])
def test_matches_tf_keras(tfk, real_tf, kwargs, shape):
    tf = real_tf
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(np.float32)
    ours, theirs = L.GroupNormalization(**kwargs), tfk.layers.GroupNormalization(**kwargs)
    ours.build(shape)
    theirs.build(shape)
    weights = [rng.standard_normal(w.shape).astype(np.float32) for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    u = rng.standard_normal(shape).astype(np.float32)
    xi, xt = ig.constant(x), tf.constant(x)
    with ig.GradientTape() as t1:
        t1.watch(xi)
        li = ig.reduce_sum(ours(xi) * u)
    with tf.GradientTape() as t2:
        t2.watch(xt)
        lt = tf.reduce_sum(theirs(xt) * u)
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
    for a, b in zip(t1.gradient(li, [xi, *ours.trainable_variables]),
                    t2.gradient(lt, [xt, *theirs.trainable_variables])):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-4)
    assert ours.get_config() == theirs.get_config() | {"name": ours.name}


def test_against_numpy_and_with_a_mask(tfk, real_tf):
    tf = real_tf
    x = np.random.default_rng(1).standard_normal((2, 5, 4))
    layer = L.GroupNormalization(groups=2, dtype="float64")
    g = x.reshape(2, 5, 2, 2)
    mean = g.mean(axis=(1, 3), keepdims=True)
    var = g.var(axis=(1, 3), keepdims=True)
    want = ((g - mean) / np.sqrt(var + 1e-3)).reshape(2, 5, 4)
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-10)
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)[..., None]
    x32 = x.astype(np.float32)
    got = L.GroupNormalization(groups=2)(x32, mask=mask).numpy()
    theirs = tfk.layers.GroupNormalization(groups=2)(tf.constant(x32), mask=tf.constant(mask))
    np.testing.assert_allclose(got, theirs.numpy(), rtol=1e-5, atol=1e-5)


def test_errors_as_tf_keras(tfk):
    for kwargs, shape in ((dict(groups=5), (2, 3, 4)), (dict(groups=3), (2, 3, 4)),
                          (dict(groups=2, axis=3), (2, 3, 4)), (dict(groups=2), (2, 3, None))):
        with pytest.raises(ValueError) as theirs:
            tfk.layers.GroupNormalization(**kwargs).build(shape)
        with pytest.raises(ValueError) as ours:
            L.GroupNormalization(**kwargs).build(shape)
        assert str(ours.value) == str(theirs.value)
