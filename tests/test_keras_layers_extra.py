"""``SpatialDropout1D``/``SpatialDropout3D``, ``ThresholdedReLU`` and ``UnitNormalization``
(issue 16) against tf-keras (values, gradients, configs, errors) and numpy float64."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import layers as L


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _f(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("name,kwargs,shape,kept_axes", [
    ("SpatialDropout1D", {}, (4, 7, 6), (1,)),
    ("SpatialDropout3D", {}, (4, 3, 2, 3, 6), (1, 2, 3)),
    ("SpatialDropout3D", {"data_format": "channels_first"}, (4, 6, 3, 2, 3), (2, 3, 4)),
])
def test_spatial_dropout_drops_whole_maps(tfk, name, kwargs, shape, kept_axes):
    ours = getattr(L, name)(0.5, **kwargs, seed=3)
    theirs = getattr(tfk.layers, name)(0.5, **kwargs, seed=3)
    x = np.abs(_f(*shape)) + 1
    ig.random.set_seed(0)
    y = ours(x, training=True).numpy()
    ratio = y / x
    assert set(np.unique(ratio.round(5))) <= {0.0, 2.0}
    # one draw per (sample, channel): constant along the spatial axes
    for axis in kept_axes:
        assert np.all(ratio.max(axis=axis) == ratio.min(axis=axis))
    assert 0 < (ratio == 0).mean() < 1
    np.testing.assert_array_equal(ours(x, training=False).numpy(), x)
    assert ours.get_config() == theirs.get_config() | {"name": ours.name}


def test_thresholded_relu_matches_tf_keras(tfk, real_tf):
    tf = real_tf
    x = _f(3, 5) * 2
    for theta in (1.0, 0.0, 0.3):
        ours, theirs = L.ThresholdedReLU(theta), tfk.layers.ThresholdedReLU(theta)
        xi, xt = ig.constant(x), tf.constant(x)
        with ig.GradientTape() as t1:
            t1.watch(xi)
            yi = ours(xi)
        with tf.GradientTape() as t2:
            t2.watch(xt)
            yt = theirs(xt)
        np.testing.assert_array_equal(yi.numpy(), yt.numpy())
        np.testing.assert_array_equal(yi.numpy(), np.where(x > theta, x, 0))
        np.testing.assert_array_equal(t1.gradient(yi, xi).numpy(), t2.gradient(yt, xt).numpy())
        assert ours.get_config() == theirs.get_config() | {"name": ours.name}
    for bad in (None, -1.0):
        with pytest.raises(ValueError) as e_theirs:
            tfk.layers.ThresholdedReLU(bad)
        with pytest.raises(ValueError) as e_ours:
            L.ThresholdedReLU(bad)
        assert str(e_ours.value) == str(e_theirs.value)


@pytest.mark.parametrize("axis", [-1, 1, [1, 2], (0, 2)])
def test_unit_normalization_matches_tf_keras(tfk, real_tf, axis):
    tf = real_tf
    x = _f(3, 4, 5)
    ours, theirs = L.UnitNormalization(axis=axis), tfk.layers.UnitNormalization(axis=axis)
    u = _f(3, 4, 5, seed=1)
    xi, xt = ig.constant(x), tf.constant(x)
    with ig.GradientTape() as t1:
        t1.watch(xi)
        yi = ours(xi)
        li = ig.reduce_sum(yi * u)
    with tf.GradientTape() as t2:
        t2.watch(xt)
        yt = theirs(xt)
        lt = tf.reduce_sum(yt * u)
    np.testing.assert_allclose(yi.numpy(), yt.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(t1.gradient(li, xi).numpy(), t2.gradient(lt, xt).numpy(),
                               rtol=1e-5, atol=1e-6)
    ax = tuple(axis) if isinstance(axis, (list, tuple)) else axis
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(yi.numpy(), x64 / np.sqrt((x64 ** 2).sum(ax, keepdims=True)),
                               rtol=1e-5)
    assert ours.get_config() == theirs.get_config() | {"name": ours.name}


def test_unit_normalization_errors_as_tf_keras(tfk):
    with pytest.raises(TypeError) as theirs:
        tfk.layers.UnitNormalization(axis="x")
    with pytest.raises(TypeError) as ours:
        L.UnitNormalization(axis="x")
    assert str(ours.value) == str(theirs.value)
    for axis in (3, [1, -2]):
        with pytest.raises(ValueError) as theirs:
            tfk.layers.UnitNormalization(axis=axis).build((2, 3, 4))
        with pytest.raises(ValueError) as ours:
            L.UnitNormalization(axis=axis).build((2, 3, 4))
        assert str(ours.value) == str(theirs.value)
