"""UpSampling2D with every ``tf.image.resize`` method tf-keras takes: values and gradients
against tf-keras, values against the float64 reference (tests/reference/resize.py), configs
both ways; and the per-axis resize weights against ``tf.image.resize`` for any sizes."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import layers as L
from ipu_gpu.keras.layers import _resize
from reference import resize as ref

METHODS = ["area", "bicubic", "bilinear", "gaussian", "lanczos3", "lanczos5", "mitchellcubic",
           "nearest"]


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _images(shape=(2, 3, 4, 2)):
    return np.random.default_rng(0).normal(size=shape).astype(np.float32)


def test_methods_are_tf_keras_s(tfk):
    assert tuple(METHODS) == L.UpSampling2D._METHODS
    for method in METHODS:
        tfk.layers.UpSampling2D(interpolation=method)  # each one tf-keras accepts


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("size", [(2, 3), (3, 1)], ids=["2x3", "3x1"])
@pytest.mark.parametrize("method", METHODS)
def test_values_and_gradients_match_tf_keras(tfk, real_tf, method, size, data_format):
    tf = real_tf
    x = _images((2, 2, 3, 4) if data_format == "channels_first" else (2, 3, 4, 2))
    kwargs = dict(size=size, interpolation=method, data_format=data_format)
    ours, theirs = L.UpSampling2D(**kwargs), tfk.layers.UpSampling2D(**kwargs)
    want_shape = theirs.compute_output_shape(x.shape)
    u = np.random.default_rng(1).normal(size=tuple(want_shape))
    xt = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        got = ours(xt)
        loss = ig.reduce_sum(ig.cast(got, "float64") * u)
    got_grad = tape.gradient(loss, xt)
    xtf = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xtf)
        want = theirs(xtf)
        loss = tf.reduce_sum(tf.cast(want, "float64") * u)
    if method == "area":  # TF registers no gradient for ResizeArea: the map's transpose
        h, w = (2, 3) if data_format == "channels_first" else (1, 2)
        rows = ref.axis_weights(method, x.shape[h], x.shape[h] * size[0])
        cols = ref.axis_weights(method, x.shape[w], x.shape[w] * size[1])
        spec = "bcyx" if data_format == "channels_first" else "byxc"
        want_grad = np.einsum(f"yh,xw,{spec}->{spec.replace('y', 'h').replace('x', 'w')}",
                              rows, cols, u)
    else:
        want_grad = tape.gradient(loss, xtf).numpy()
    assert got.shape == tuple(want.shape) and got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_grad.numpy(), want_grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_values_match_the_float64_reference(method):
    """Factors 2 and 4 put bicubic's sample points on its table's entries, so the table
    TF reads matches the continuous cubic there."""
    x = _images((1, 5, 3, 2))
    got = L.UpSampling2D(size=(2, 4), interpolation=method)(x).numpy()
    np.testing.assert_allclose(got, ref.resize(x, (10, 12), method), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_axis_weights_match_tf_image_resize_for_any_sizes(real_tf, method):
    rng = np.random.default_rng(2)
    for (h, w), (oh, ow) in [((3, 4), (6, 12)), ((5, 2), (15, 10)), ((4, 4), (7, 9)),
                             ((1, 3), (2, 21))]:
        x = rng.normal(size=(h, w)).astype(np.float32)
        want = real_tf.image.resize(x[None, :, :, None], (oh, ow), method=method).numpy()
        rows = _resize.resize_matrix(method, h, oh).astype(np.float64)
        cols = _resize.resize_matrix(method, w, ow).astype(np.float64)
        np.testing.assert_allclose(rows @ x @ cols.T, want[0, :, :, 0], rtol=1e-5, atol=1e-6)


def test_bicubic_reads_tf_s_table():
    """Factor 3 samples a third of a pixel off centre: TF's 1024-entry table gives the
    weights of 341/1024, not 1/3, and the emulator follows the table."""
    weights = _resize.resize_matrix("bicubic", 4, 12)
    exact = ref.axis_weights("bicubic", 4, 12)
    assert 1e-5 < np.abs(weights - exact).max() < 1e-3


@pytest.mark.parametrize("method", ["bicubic", "lanczos5"])
def test_symbolic_shape_and_config_both_ways(tfk, method):
    ours = L.UpSampling2D(size=(2, 3), interpolation=method)
    theirs = tfk.layers.UpSampling2D(size=(2, 3), interpolation=method)
    assert ours(L.Input((3, 4, 2))).shape.as_list() == theirs(
        tfk.Input((3, 4, 2))).shape.as_list() == [None, 6, 12, 2]
    config = ours.get_config()
    assert {**config, "name": None} == {**theirs.get_config(), "name": None}
    assert L.UpSampling2D.from_config(config).get_config() == config
    assert tfk.layers.UpSampling2D.from_config(config).interpolation == method


def test_unknown_interpolation_raises_keras_error():
    with pytest.raises(ValueError, match="`interpolation` argument should be one of"):
        L.UpSampling2D(interpolation="cubic")


@pytest.mark.parametrize("method", ["nearest", "bilinear", "lanczos3"])
@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_output_dtype_is_tf_keras_s(tfk, method, dtype):
    """TF's resize kernels return float32 whatever they read; nearest keeps the dtype."""
    x = _images().astype(dtype)
    got = L.UpSampling2D(interpolation=method, dtype=dtype)(x)
    want = tfk.layers.UpSampling2D(interpolation=method, dtype=dtype)(x)
    assert got.dtype == want.dtype.as_numpy_dtype
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy(), rtol=1e-3,
                               atol=1e-3)
