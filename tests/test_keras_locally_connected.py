"""``LocallyConnected1D``/``2D`` (issue 16) against tf-keras with shared weights (outputs,
gradients, configs, errors, HDF5 weights both ways, a short ``fit``), a float64 numpy
reference and finite differences, the three implementations against each other, and on TF1
graph placeholders of unknown batch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import backend, losses, optimizers
from ipu_gpu.keras import layers as L
from keras_interop import (assert_fit_matches, assert_graph_matches_eager,
                           assert_outputs_and_gradients_match, load_our_hdf5_weights,
                           load_their_hdf5_weights)


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


CASES = [  # (layer, input shape, kernel_size, strides)
    ("LocallyConnected1D", (3, 9, 4), 3, 2),
    ("LocallyConnected2D", (2, 7, 6, 3), (3, 2), (2, 1)),
    ("LocallyConnected2D", (2, 6, 5, 2), (2, 2), (1, 2)),
]
VARIANTS = [(impl, pad, df) for impl in (1, 2, 3) for pad in ("valid", "same")
            for df in ("channels_last", "channels_first") if not (impl == 1 and pad == "same")]


def _pair(tfk, name, shape, seed=0, **kwargs):
    ours, theirs = getattr(L, name)(**kwargs), getattr(tfk.layers, name)(**kwargs)
    ours.build(shape)
    theirs.build(shape)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(w.shape).astype(np.float32) for w in theirs.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    return ours, theirs


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}")
@pytest.mark.parametrize("impl,padding,data_format", VARIANTS)
def test_matches_tf_keras(tfk, real_tf, case, impl, padding, data_format):
    name, shape, kernel_size, strides = case
    kwargs = dict(filters=4, kernel_size=kernel_size, strides=strides, padding=padding,
                  data_format=data_format, implementation=impl, activation="tanh")
    ours, theirs = _pair(tfk, name, shape, **kwargs)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    assert_outputs_and_gradients_match(real_tf, ours, theirs, x, rng)
    assert tuple(ours.compute_output_shape(shape)) == tuple(theirs.compute_output_shape(shape))
    assert ours.get_config() == theirs.get_config() | {"name": ours.name}
    clone = type(ours).from_config(ours.get_config())
    assert clone.get_config() == ours.get_config()


def _unshared_conv_2d(x, kernel, bias, kernel_size, strides):
    """float64 reference: channels-last valid unshared convolution, kernel
    (positions, kh * kw * channels, filters) with patches in (kh, kw, channels) order."""
    batch, rows, cols, _ = x.shape
    kh, kw = kernel_size
    out_r, out_c = (rows - kh) // strides[0] + 1, (cols - kw) // strides[1] + 1
    out = np.zeros((batch, out_r, out_c, kernel.shape[-1]))
    for r, c in itertools.product(range(out_r), range(out_c)):
        patch = x[:, r * strides[0]:r * strides[0] + kh, c * strides[1]:c * strides[1] + kw, :]
        out[:, r, c] = patch.reshape(batch, -1) @ kernel[r * out_c + c]
    return out + bias


def test_implementation_1_against_numpy_float64_and_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 6, 3))
    layer = L.LocallyConnected2D(2, (2, 3), strides=(1, 2), dtype="float64")
    layer.build(x.shape)
    kernel = rng.standard_normal(layer.kernel.shape)
    bias = rng.standard_normal(layer.bias.shape)
    layer.set_weights([kernel, bias])
    want = _unshared_conv_2d(x, kernel, bias, (2, 3), (1, 2))
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-12, atol=1e-12)
    u = rng.standard_normal(want.shape)
    xi = ig.constant(x)
    with ig.GradientTape() as tape:
        tape.watch(xi)
        loss = ig.reduce_sum(layer(xi) * u)
    gx, gk = tape.gradient(loss, [xi, layer.kernel])
    gx, gk = np.asarray(ig.convert_to_tensor(gx)), np.asarray(ig.convert_to_tensor(gk))
    eps = 1e-6
    for index in [(0, 1, 2, 0), (1, 4, 5, 2), (0, 0, 0, 1)]:
        d = np.zeros_like(x)
        d[index] = eps
        numeric = ((_unshared_conv_2d(x + d, kernel, bias, (2, 3), (1, 2)) * u).sum()
                   - (_unshared_conv_2d(x - d, kernel, bias, (2, 3), (1, 2)) * u).sum()) / (2 * eps)
        assert abs(gx[index] - numeric) < 1e-6
    for index in [(0, 0, 0), (5, 17, 1), (3, 9, 0)]:
        d = np.zeros_like(kernel)
        d[index] = eps
        numeric = ((_unshared_conv_2d(x, kernel + d, bias, (2, 3), (1, 2)) * u).sum()
                   - (_unshared_conv_2d(x, kernel - d, bias, (2, 3), (1, 2)) * u).sum()) / (2 * eps)
        assert abs(gk[index] - numeric) < 1e-6


def test_same_padding_connects_as_tf_keras_rule():
    """Implementation 2 with 'same' padding and an even kernel: output p sees inputs
    p - k // 2 .. p + k - k // 2 - 1 (numpy, float64)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 6, 3))
    layer = L.LocallyConnected1D(2, 4, padding="same", implementation=2, use_bias=False,
                                 dtype="float64")
    layer.build(x.shape)
    kernel = rng.standard_normal(layer.kernel.shape)  # (steps, channels, out steps, filters)
    layer.set_weights([kernel])
    want = np.zeros((2, 6, 2))
    for p in range(6):
        for i in range(max(0, p - 2), min(6, p + 2)):
            want[:, p] += x[:, i] @ kernel[i, :, p]
    np.testing.assert_allclose(layer(x).numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,shape", [("LocallyConnected1D", (2, 8, 3)),
                                        ("LocallyConnected2D", (2, 5, 6, 2))])
def test_the_three_implementations_compute_the_same_function(name, shape):
    """Implementation 1's kernel scattered into 2's and 3's layouts gives the same outputs."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    layers = [getattr(L, name)(3, 2, implementation=i) for i in (1, 2, 3)]
    for layer in layers:
        layer.build(shape)
    one, two, three = layers
    k1 = rng.standard_normal(one.kernel.shape).astype(np.float32)
    bias = rng.standard_normal(one.bias.shape).astype(np.float32)
    one.set_weights([k1, bias])
    # impl 2 dense (in spatial, channels, out spatial, filters) weights from impl 1's patches
    spatial, channels = shape[1:-1], shape[-1]
    out_spatial = tuple(n - 1 for n in spatial)
    k2 = np.zeros(two.kernel.shape, np.float32)
    for p_index, position in enumerate(itertools.product(*(range(n) for n in out_spatial))):
        patch = k1[p_index].reshape((2,) * len(spatial) + (channels, 3))
        for offset in itertools.product(*(range(2) for _ in spatial)):
            source = tuple(p + o for p, o in zip(position, offset))
            k2[source + (slice(None),) + position] = patch[offset]
    two.set_weights([k2, bias])
    flat = k2.reshape(-1, int(np.prod(out_spatial)) * 3)  # (input index, output index)
    three.set_weights([flat.T[three._pairs[0], three._pairs[1]], bias])
    want = one(x).numpy()
    np.testing.assert_allclose(two(x).numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(three(x).numpy(), want, rtol=1e-5, atol=1e-5)


def test_errors_as_tf_keras(tfk):
    for name, kwargs in (("LocallyConnected1D", dict(padding="same")),
                         ("LocallyConnected2D", dict(padding="same")),
                         ("LocallyConnected2D", dict(padding="full", implementation=2)),
                         ("LocallyConnected2D", dict(kernel_size=(1, 2, 3)))):
        args = dict(filters=2, kernel_size=2) | kwargs
        with pytest.raises(ValueError) as theirs:
            getattr(tfk.layers, name)(**args)
        with pytest.raises(ValueError) as ours:
            getattr(L, name)(**args)
        assert str(ours.value) == str(theirs.value)
    for name, shape, kwargs in (("LocallyConnected2D", (2, 4, 4, 3), dict(implementation=4)),
                                ("LocallyConnected2D", (2, 2, 4, 3), dict(kernel_size=3)),
                                ("LocallyConnected2D", (2, None, 4, 3), {}),
                                ("LocallyConnected1D", (2, 5, None), {}),
                                ("LocallyConnected1D", (2, 2, 3), dict(kernel_size=3))):
        args = dict(filters=2, kernel_size=2, name="lc") | kwargs
        with pytest.raises(ValueError) as theirs:
            getattr(tfk.layers, name)(**args).build(shape)
        with pytest.raises(ValueError) as ours:
            getattr(L, name)(**args).build(shape)
        assert str(ours.value) == str(theirs.value)


def _model(keras, impl):
    return keras.models.Sequential([
        keras.layers.LocallyConnected2D(3, 3, strides=2, activation="relu",
                                        implementation=impl, input_shape=(7, 7, 2)),
        keras.layers.Reshape((9, 3)),
        keras.layers.LocallyConnected1D(2, 2, implementation=impl,
                                        padding="valid" if impl == 1 else "same"),
        keras.layers.Flatten(), keras.layers.Dense(3)])


@pytest.mark.parametrize("impl", [1, 2, 3])
def test_fit_and_hdf5_weights_match_tf_keras(tfk, tmp_path, impl):
    import ipu_gpu.keras as K

    backend.clear_session()
    tfk.backend.clear_session()
    mine, theirs = _model(K, impl), _model(tfk, impl)
    assert [w.name for w in mine.weights] == [w.name for w in theirs.weights]
    rng = np.random.default_rng(impl)
    values = [rng.uniform(-0.5, 0.5, w.shape).astype(np.float32) for w in theirs.get_weights()]
    load_their_hdf5_weights(mine, theirs, values, tmp_path)
    x = rng.standard_normal((16, 7, 7, 2)).astype(np.float32)
    y = rng.integers(0, 3, size=(16,))
    mine.compile(optimizers.SGD(0.05, momentum=0.9),
                 losses.SparseCategoricalCrossentropy(from_logits=True))
    theirs.compile(tfk.optimizers.legacy.SGD(0.05, momentum=0.9),
                   tfk.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert_fit_matches(mine, theirs, x, y, loss_atol=1e-5)
    load_our_hdf5_weights(theirs, mine, values, tmp_path)


@pytest.mark.parametrize("impl", [1, 2, 3])
def test_in_a_tf1_graph_on_a_placeholder_of_unknown_batch(impl):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 6, 5, 2)).astype(np.float32)
    assert_graph_matches_eager(lambda: L.LocallyConnected2D(2, 2, implementation=impl), x,
                               rng.standard_normal, (None, 6, 5, 2), (None, 5, 4, 2))
