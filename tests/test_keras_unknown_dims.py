"""Shape-transforming layers on inputs with unknown spatial or time dimensions against
tf-keras: the symbolic output shape (None where Keras's traced ``call`` cannot know a
dimension; UpSampling2D loses both when either is unknown, as Keras's run-time resize
size does), ``compute_output_shape``, and the values of a concrete batch through the
model with identical weights."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.keras as keras


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


# (layer, kwargs, symbolic input batch shape, a concrete input shape fitting it)
CASES = [
    ("UpSampling2D", dict(size=(2, 3)), (None, None, 4, 3), (2, 5, 4, 3)),
    ("UpSampling2D", dict(size=2), (None, 5, None, 3), (2, 5, 3, 3)),
    ("UpSampling2D", dict(size=2, interpolation="bilinear"), (None, None, None, 3),
     (1, 3, 4, 3)),
    ("UpSampling2D", dict(size=2, data_format="channels_first"), (None, 3, None, 4),
     (2, 3, 2, 4)),
    ("UpSampling2D", dict(size=2), (None, 3, 4, 2), (2, 3, 4, 2)),
    ("UpSampling1D", dict(size=2), (None, None, 3), (2, 4, 3)),
    ("Conv2D", dict(filters=2, kernel_size=3), (None, None, None, 3), (2, 6, 5, 3)),
    ("Conv2D", dict(filters=2, kernel_size=3, strides=2, padding="same"), (None, None, 7, 3),
     (2, 5, 7, 3)),
    ("Conv2D", dict(filters=2, kernel_size=3, dilation_rate=2), (None, 9, None, 3),
     (1, 9, 6, 3)),
    ("Conv2D", dict(filters=2, kernel_size=2, data_format="channels_first"),
     (None, 3, None, 5), (2, 3, 4, 5)),
    ("Conv1D", dict(filters=2, kernel_size=3), (None, None, 3), (2, 7, 3)),
    ("Conv2DTranspose", dict(filters=2, kernel_size=3, strides=2), (None, None, 5, 3),
     (2, 4, 5, 3)),
    ("DepthwiseConv2D", dict(kernel_size=3), (None, None, 5, 3), (2, 4, 5, 3)),
    ("SeparableConv2D", dict(filters=2, kernel_size=3), (None, 5, None, 3), (2, 5, 4, 3)),
    ("MaxPooling2D", dict(), (None, None, 6, 3), (2, 5, 6, 3)),
    ("AveragePooling2D", dict(pool_size=3, strides=1, padding="same"), (None, 6, None, 3),
     (2, 6, 4, 3)),
    ("MaxPooling2D", dict(pool_size=2, strides=2, padding="same"), (None, None, None, 2),
     (2, 5, 3, 2)),
    ("MaxPooling1D", dict(), (None, None, 3), (2, 6, 3)),
    ("AveragePooling1D", dict(), (None, None, 3), (2, 7, 3)),
    ("GlobalAveragePooling2D", dict(), (None, None, None, 3), (2, 4, 5, 3)),
    ("GlobalMaxPooling2D", dict(keepdims=True), (None, None, None, 3), (2, 4, 5, 3)),
    ("GlobalAveragePooling1D", dict(), (None, None, 3), (2, 4, 3)),
    ("Cropping2D", dict(cropping=((1, 1), (2, 0))), (None, None, 6, 3), (2, 5, 6, 3)),
    ("Cropping2D", dict(cropping=1), (None, 6, None, 3), (2, 6, 4, 3)),
    ("Cropping2D", dict(cropping=1, data_format="channels_first"), (None, 2, None, None),
     (2, 2, 4, 5)),
    ("Cropping1D", dict(cropping=1), (None, None, 3), (2, 5, 3)),
    ("ZeroPadding2D", dict(padding=(1, 2)), (None, None, 4, 3), (2, 3, 4, 3)),
    ("ZeroPadding2D", dict(padding=1, data_format="channels_first"), (None, 3, None, 4),
     (2, 3, 2, 4)),
    ("ZeroPadding1D", dict(padding=1), (None, None, 3), (2, 4, 3)),
    ("Reshape", dict(target_shape=(-1, 3)), (None, None, 3), (2, 4, 3)),
    ("Reshape", dict(target_shape=(2, -1)), (None, 4, None), (2, 4, 3)),
    ("Reshape", dict(target_shape=(3, 4)), (None, None, 12), (2, 1, 12)),
    ("Reshape", dict(target_shape=(-1,)), (None, 3, 4), (2, 3, 4)),
    ("Flatten", dict(), (None, None, 3), (2, 4, 3)),
    ("Flatten", dict(), (None, 4, None), (2, 4, 2)),
    ("Flatten", dict(data_format="channels_first"), (None, 2, None, 3), (2, 2, 4, 3)),
    ("Permute", dict(dims=(2, 1)), (None, None, 3), (2, 4, 3)),
]


def _ids():
    return [f"{name}-{i}" for i, (name, *_) in enumerate(CASES)]


@pytest.mark.parametrize("name, kwargs, symbolic, concrete", CASES, ids=_ids())
def test_unknown_dimensions_match_tf_keras(tfk, name, kwargs, symbolic, concrete):
    def model(module):
        x = module.Input(batch_shape=symbolic)
        layer = getattr(module.layers, name)(**kwargs)
        return module.Model(x, layer(x)), layer

    ours, ours_layer = model(keras)
    theirs, their_layer = model(tfk)
    assert tuple(ours.output.shape) == tuple(theirs.output.shape)
    assert ours.output_shape == theirs.output_shape
    assert (tuple(ours_layer.compute_output_shape(symbolic))
            == tuple(their_layer.compute_output_shape(symbolic)))
    rng = np.random.default_rng(0)
    ours.set_weights([rng.normal(size=w.shape).astype(np.float32)
                      for w in theirs.get_weights()])
    theirs.set_weights(ours.get_weights())
    x = rng.normal(size=concrete).astype(np.float32)
    np.testing.assert_allclose(np.asarray(ours(x)), _reference(tfk, theirs, name, kwargs, x),
                               rtol=1e-5, atol=1e-5)


def _reference(tfk, theirs, name, kwargs, x):
    """tf-keras's output; a channels_first convolution (TensorFlow's CPU kernels take only
    channels_last) as the channels_last layer with the same kernel on transposed data."""
    if not (name.startswith("Conv") and kwargs.get("data_format") == "channels_first"):
        return theirs(x).numpy()
    layer = getattr(tfk.layers, name)(**{**kwargs, "data_format": "channels_last"})
    layer.build(np.moveaxis(x, 1, -1).shape)
    layer.set_weights(theirs.get_weights())
    return np.moveaxis(layer(np.moveaxis(x, 1, -1)).numpy(), -1, 1)


def test_up_sampling_2d_keeps_known_sizes_in_compute_output_shape():
    """Keras's ``compute_output_shape`` scales each known dimension (only the traced
    call loses a known one next to an unknown one)."""
    layer = keras.layers.UpSampling2D(size=(2, 3))
    assert tuple(layer.compute_output_shape((None, None, 4, 3))) == (None, None, 12, 3)
    out = layer(keras.Input(batch_shape=(None, None, 4, 3)))
    assert tuple(out.shape) == (None, None, None, 3)
    assert tuple(layer(keras.Input(batch_shape=(1, 2, 4, 3))).shape) == (1, 4, 12, 3)
