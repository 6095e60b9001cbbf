"""keras.layers against tf-keras 2.x: identical weights (set_weights), the same random inputs,
outputs and gradients (inputs and weights) to float32 tolerance; output shapes of the
functional API and compute_output_shape; configs; Keras's errors for bad inputs."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import backend as K
from ipu_gpu.keras import layers as L


@pytest.fixture(autouse=True)
def no_global_seed_left():
    """Tests that set ipu_gpu's global seed leave none behind for later tests."""
    yield
    ig.random.set_seed(None)


@pytest.fixture(scope="module")
def tfk(real_tf):
    """tf-keras (Keras 2), imported after real_tf set TF's environment."""
    return pytest.importorskip("tf_keras")


def _case(layer, kwargs, shapes, *, ints=None, dtype="float32", training=None, tol=1e-5,
          grad=True, mask=False, id=None):  # noqa: A002
    return pytest.param(layer, kwargs, shapes, ints, dtype, training, tol, grad, mask,
                        id=id or layer)


CASES = [
    _case("Dense", dict(units=3), [(4, 5)]),
    _case("Dense", dict(units=3, activation="relu", use_bias=False), [(2, 3, 5)], id="Dense-3d"),
    _case("Dense", dict(units=2, activation="softmax"), [(1, 4)], id="Dense-batch1"),
    _case("Conv1D", dict(filters=3, kernel_size=3, padding="causal", dilation_rate=2),
          [(2, 7, 4)]),
    _case("Conv1D", dict(filters=4, kernel_size=2, strides=2, groups=2, activation="tanh"),
          [(2, 6, 4)], id="Conv1D-groups"),
    _case("Conv2D", dict(filters=4, kernel_size=3, padding="same", activation="relu"),
          [(2, 6, 5, 3)]),
    _case("Conv2D", dict(filters=2, kernel_size=(2, 3), strides=(2, 1)), [(1, 5, 6, 2)],
          id="Conv2D-strided-batch1"),
    _case("Conv2DTranspose", dict(filters=3, kernel_size=3, strides=2, padding="same"),
          [(2, 4, 3, 2)]),
    _case("Conv2DTranspose", dict(filters=2, kernel_size=2, strides=2, output_padding=1),
          [(1, 3, 3, 2)], id="Conv2DTranspose-output_padding"),
    _case("DepthwiseConv2D", dict(kernel_size=3, depth_multiplier=2, padding="same"),
          [(2, 5, 5, 3)]),
    _case("SeparableConv2D", dict(filters=4, kernel_size=3, depth_multiplier=2),
          [(2, 6, 6, 3)]),
    _case("MaxPooling1D", dict(pool_size=2), [(2, 7, 3)]),
    _case("AveragePooling1D", dict(pool_size=3, strides=1, padding="same"), [(2, 5, 3)]),
    _case("MaxPooling2D", dict(pool_size=2, padding="same"), [(2, 5, 5, 3)]),
    _case("MaxPool2D", dict(pool_size=3, strides=2), [(1, 7, 6, 2)], id="MaxPool2D"),
    _case("AveragePooling2D", dict(pool_size=(2, 3)), [(2, 6, 6, 2)]),
    _case("GlobalAveragePooling1D", dict(), [(2, 5, 3)]),
    _case("GlobalAveragePooling2D", dict(keepdims=True), [(2, 4, 3, 5)]),
    _case("GlobalMaxPooling2D", dict(), [(2, 4, 3, 5)]),
    _case("Flatten", dict(), [(2, 3, 4, 2)]),
    _case("Reshape", dict(target_shape=(-1, 4)), [(2, 3, 8)]),
    _case("Permute", dict(dims=(2, 1)), [(2, 3, 4)]),
    _case("RepeatVector", dict(n=3), [(2, 4)]),
    _case("Activation", dict(activation="selu"), [(3, 4)]),
    _case("ReLU", dict(max_value=0.5, negative_slope=0.1, threshold=0.2), [(3, 6)]),
    _case("LeakyReLU", dict(), [(3, 6)]),
    _case("ELU", dict(alpha=0.5), [(3, 6)]),
    _case("Softmax", dict(axis=1), [(2, 5, 3)]),
    _case("Dropout", dict(rate=0.5), [(3, 4)]),
    _case("SpatialDropout2D", dict(rate=0.3), [(2, 3, 3, 4)]),
    _case("GaussianNoise", dict(stddev=0.3), [(3, 4)]),
    _case("BatchNormalization", dict(), [(6, 4)], training=True, tol=1e-4),
    _case("BatchNormalization", dict(momentum=0.9, center=False), [(4, 3, 3, 2)],
          training=True, tol=1e-4, id="BatchNormalization-fused"),
    _case("BatchNormalization", dict(axis=1, scale=False), [(3, 2, 4, 4)], training=True,
          tol=1e-4, id="BatchNormalization-axis1"),
    _case("BatchNormalization", dict(), [(5, 3)], training=False, id="BatchNormalization-infer"),
    _case("LayerNormalization", dict(), [(3, 6)], tol=1e-4),
    _case("LayerNormalization", dict(axis=(1, 2), epsilon=1e-5), [(2, 3, 4)], tol=1e-4,
          id="LayerNormalization-axes"),
    _case("Embedding", dict(input_dim=7, output_dim=3), [(2, 5)], ints=7),
    _case("Add", dict(), [(2, 3), (2, 3), (2, 3)]),
    _case("Subtract", dict(), [(2, 3), (2, 3)]),
    _case("Multiply", dict(), [(2, 3), (2, 3)]),
    _case("Average", dict(), [(2, 3, 2), (2, 3, 2)]),
    _case("Maximum", dict(), [(2, 3), (2, 3)]),
    _case("Concatenate", dict(axis=1), [(2, 3, 2), (2, 1, 2)]),
    _case("Dot", dict(axes=1), [(3, 4), (3, 4)]),
    _case("Dot", dict(axes=(2, 2), normalize=True), [(2, 3, 4), (2, 5, 4)], id="Dot-3d"),
    _case("ZeroPadding2D", dict(padding=((1, 2), (0, 1))), [(2, 3, 3, 2)]),
    _case("UpSampling2D", dict(size=(2, 3)), [(2, 2, 3, 2)]),
    _case("UpSampling2D", dict(size=2, interpolation="bilinear"), [(1, 3, 4, 2)],
          id="UpSampling2D-bilinear"),
    _case("Cropping2D", dict(cropping=((1, 0), (1, 2))), [(2, 4, 5, 3)]),
    _case("PReLU", dict(shared_axes=[1]), [(2, 3, 4)]),
    _case("Masking", dict(mask_value=0.5), [(2, 3, 4)]),
    _case("Identity", dict(), [(2, 3)]),
    _case("Rescaling", dict(scale=1 / 255, offset=-1.0), [(2, 3, 3)]),
    _case("ActivityRegularization", dict(l1=0.1, l2=0.2), [(2, 3)]),
    _case("Dense", dict(units=2, activity_regularizer="l2"), [(3, 4)], id="Dense-activity"),
    _case("GaussianDropout", dict(rate=0.2), [(3, 4)]),
    _case("EinsumDense", dict(equation="abc,cd->abd", output_shape=(3, 5), bias_axes="d"),
          [(2, 3, 4)]),
    _case("Conv2D", dict(filters=3, kernel_size=2), [(2, 4, 4, 2)], dtype="float16", tol=2e-2,
          id="Conv2D-float16"),
    _case("Dense", dict(units=3, dtype="float16"), [(2, 4)], dtype="float16", tol=2e-2,
          id="Dense-float16-policy"),
    _case("Dense", dict(units=3, dtype="float64"), [(2, 4)], dtype="float64", tol=1e-10,
          id="Dense-float64"),
]


def _inputs(shapes, ints, dtype, seed):
    rng = np.random.default_rng(seed)
    if ints is not None:
        return [rng.integers(0, ints, size=s).astype(np.int32) for s in shapes]
    return [rng.normal(size=s).astype(dtype) for s in shapes]


def _call(layer, xs, training):
    x = xs if len(xs) > 1 else xs[0]
    kwargs = {} if training is None else {"training": training}
    return layer(x, **kwargs)


def _run_ipu(layer, xs, u, training):
    xs = [ig.constant(x) for x in xs]
    with ig.GradientTape(persistent=True) as tape:
        for x in xs:
            tape.watch(x)
        out = _call(layer, xs, training)
        loss = ig.reduce_sum(ig.cast(out, "float64") * u)
    sources = [x for x in xs if x.dtype.kind == "f"] + layer.trainable_weights
    grads = tape.gradient(loss, sources)
    return out.numpy(), [None if g is None else ig.convert_to_tensor(g).numpy() for g in grads]


def _run_tf(tf, layer, xs, u, training):
    xs = [tf.constant(x) for x in xs]
    with tf.GradientTape(persistent=True) as tape:
        for x in xs:
            tape.watch(x)
        out = _call(layer, xs, training)
        loss = tf.reduce_sum(tf.cast(out, "float64") * u)
    sources = [x for x in xs if x.dtype.is_floating] + layer.trainable_weights
    grads = tape.gradient(loss, sources)
    return out.numpy(), [None if g is None else tf.convert_to_tensor(g).numpy() for g in grads]


@pytest.mark.parametrize("name,kwargs,shapes,ints,dtype,training,tol,grad,mask", CASES)
def test_layer_matches_tf_keras(tfk, real_tf, name, kwargs, shapes, ints, dtype, training,
                                tol, grad, mask):
    tf = real_tf
    K.clear_session()  # weight names are compared: both name counters from zero
    tfk.backend.clear_session()
    ours, theirs = getattr(L, name)(**kwargs), getattr(tfk.layers, name)(**kwargs)
    xs = _inputs(shapes, ints, dtype, seed=len(name) + len(shapes))
    _call(theirs, xs, False)  # builds it
    _call(ours, xs, False)
    theirs_weights = theirs.get_weights()
    rng = np.random.default_rng(1)
    # non-trivial weights everywhere (biases, gammas, moving statistics included)
    theirs_weights = [w + rng.uniform(0.1, 0.5, size=w.shape).astype(w.dtype)
                      for w in theirs_weights]
    theirs.set_weights(theirs_weights)
    ours.set_weights(theirs_weights)
    assert [w.shape for w in ours.get_weights()] == [w.shape for w in theirs_weights]
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    out_shape = tuple(_call(theirs, xs, False).shape)
    u = rng.normal(size=out_shape)
    got, got_grads = _run_ipu(ours, xs, u, training)
    want, want_grads = _run_tf(tf, theirs, xs, u, training)
    assert got.shape == want.shape
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)
    if grad:
        assert len(got_grads) == len(want_grads)
        for g, w in zip(got_grads, want_grads):
            assert (g is None) == (w is None)
            if g is not None:
                scale = max(1.0, float(np.abs(w).max()))
                np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                           rtol=tol * 10, atol=tol * 10 * scale)
    np.testing.assert_allclose(sorted(float(v) for v in ours.losses),  # activity losses
                               sorted(float(v) for v in theirs.losses), rtol=1e-5)
    # moving statistics, updated in training
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,kwargs,shapes,ints,dtype,training,tol,grad,mask", CASES)
def test_symbolic_shapes_and_config_match_tf_keras(tfk, name, kwargs, shapes, ints, dtype,
                                                   training, tol, grad, mask):
    in_dtype = "int32" if ints is not None else dtype
    ours, theirs = getattr(L, name)(**kwargs), getattr(tfk.layers, name)(**kwargs)
    ours_in = [L.Input(s[1:], dtype=in_dtype) for s in shapes]
    theirs_in = [tfk.Input(s[1:], dtype=in_dtype) for s in shapes]
    out = ours(ours_in if len(shapes) > 1 else ours_in[0])
    want = theirs(theirs_in if len(shapes) > 1 else theirs_in[0])
    assert out.shape.as_list() == want.shape.as_list()
    assert out.dtype.name == want.dtype.name
    input_shape = [ig.TensorShape([None, *s[1:]]) for s in shapes]
    input_shape = input_shape if len(shapes) > 1 else input_shape[0]
    assert ours.compute_output_shape(input_shape).as_list() == want.shape.as_list()
    # tf-keras's config keys (SpatialDropout2D also keeps its data_format), and a config that
    # rebuilds an equal layer
    config = ours.get_config()
    assert set(config) - {"data_format"} == set(theirs.get_config()) - {"data_format"}
    assert set(theirs.get_config()) <= set(config)
    clone = type(ours).from_config(config)
    assert clone.get_config() == config


def test_batch_norm_moving_statistics_follow_keras(tfk):
    """Several training steps: moving mean/variance move by momentum exactly as tf-keras's
    (fused 4-D: unbiased batch variance; 2-D: biased), and inference uses them."""
    rng = np.random.default_rng(0)
    for shape in [(8, 3), (4, 2, 2, 3)]:
        ours = L.BatchNormalization(momentum=0.8)
        theirs = tfk.layers.BatchNormalization(momentum=0.8)
        for _ in range(3):
            x = rng.normal(2.0, 3.0, size=shape).astype("float32")
            a, b = ours(x, training=True).numpy(), theirs(x, training=True).numpy()
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
        for w1, w2 in zip(ours.get_weights(), theirs.get_weights()):
            np.testing.assert_allclose(w1, w2, rtol=1e-5, atol=1e-6)
        x = rng.normal(size=shape).astype("float32")
        np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
        frozen = L.BatchNormalization(trainable=False)  # a frozen layer infers, even in training
        frozen(x)
        before = frozen.get_weights()
        frozen(x, training=True)
        for w1, w2 in zip(before, frozen.get_weights()):
            np.testing.assert_array_equal(w1, w2)


def _fd_check(layer, x, training, eps=1e-6):
    """<u, (f(x + eps v) - f(x - eps v)) / 2 eps> against <grad, v>, float64."""
    rng = np.random.default_rng(3)
    u = rng.normal(size=layer(x, training=False).shape)
    v = rng.normal(size=x.shape)
    snapshot = [w.numpy() for w in layer.weights]

    def f(z):
        layer.set_weights(snapshot)  # training steps must not move the statistics between runs
        return float(np.sum(layer(z, training=training).numpy() * u))

    xt = ig.constant(x)
    layer.set_weights(snapshot)
    with ig.GradientTape() as tape:
        tape.watch(xt)
        loss = ig.reduce_sum(layer(xt, training=training) * u)
    g = tape.gradient(loss, xt).numpy()
    fd = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
    np.testing.assert_allclose(np.sum(g * v), fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("layer,shape", [
    (lambda: L.BatchNormalization(dtype="float64"), (5, 3)),
    (lambda: L.BatchNormalization(axis=1, dtype="float64"), (3, 2, 3, 3)),
    (lambda: L.LayerNormalization(dtype="float64"), (4, 5)),
    (lambda: L.LayerNormalization(axis=[1, 2], dtype="float64"), (2, 3, 4)),
], ids=["bn-2d", "bn-axis1", "ln", "ln-axes"])
@pytest.mark.parametrize("training", [True, False])
def test_normalization_gradients_by_finite_differences(layer, shape, training):
    x = np.random.default_rng(0).normal(1.0, 2.0, size=shape)
    lay = layer()
    lay(x)
    lay.set_weights([w + 0.3 for w in lay.get_weights()])
    _fd_check(lay, x, training)


def test_dropout_training_matches_tf_keras_bits(tfk, real_tf):
    """A seeded Dropout draws TF's own masks (same global and op seeds), call after call."""
    x = np.ones((4, 6), np.float32)
    real_tf.random.set_seed(7)
    ig.random.set_seed(7)
    ours, theirs = L.Dropout(0.4, seed=3), tfk.layers.Dropout(0.4, seed=3)
    try:
        for _ in range(2):
            np.testing.assert_array_equal(ours(x, training=True).numpy(),
                                          theirs(x, training=True).numpy())
    finally:
        real_tf.random.set_seed(None)
    np.testing.assert_array_equal(ours(x).numpy(), x)  # inference: the identity
    with K.learning_phase_scope(1):
        assert (ours(x).numpy() == 0).any()


def test_random_layers_statistics_and_shapes():
    ig.random.set_seed(1)
    x = np.ones((200, 50), np.float32)
    y = L.Dropout(0.25)(x, training=True).numpy()
    assert abs((y == 0).mean() - 0.25) < 0.02
    np.testing.assert_allclose(y[y != 0], 1 / 0.75, rtol=1e-6)
    y = L.Dropout(0.5, noise_shape=(None, 1))(x, training=True).numpy()
    assert all(len(set(row)) == 1 for row in y)  # one draw per row
    z = L.SpatialDropout2D(0.5)(np.ones((20, 3, 3, 8), np.float32), training=True).numpy()
    assert np.all(z.min(axis=(1, 2)) == z.max(axis=(1, 2)))  # whole feature maps
    n = L.GaussianNoise(0.5)(np.zeros((400, 50), np.float32), training=True).numpy()
    assert abs(n.std() - 0.5) < 0.01 and abs(n.mean()) < 0.01
    np.testing.assert_array_equal(L.GaussianNoise(0.5)(x).numpy(), x)


def test_masking_feeds_a_mask_downstream(tfk):
    x = np.array([[[1, 2], [0, 0], [3, 0]]], np.float32)
    out = L.Masking()(x)
    pooled = L.GlobalAveragePooling1D()(out)
    want = tfk.layers.GlobalAveragePooling1D()(tfk.layers.Masking()(x))
    np.testing.assert_allclose(pooled.numpy(), want.numpy(), rtol=1e-6)
    sym = L.Masking()(L.Input((None, 2)))
    assert sym._keras_mask.shape.as_list() == [None, None]
    ints = L.Rescaling(0.5)(np.array([[2, 4]], np.uint8))
    assert ints.dtype == np.float32 and ints.numpy().tolist() == [[1.0, 2.0]]


def test_embedding_mask_zero_and_masked_pooling(tfk):
    ids = np.array([[1, 2, 0, 0], [3, 0, 0, 0]], np.int32)
    ours = L.Embedding(5, 3, mask_zero=True)
    theirs = tfk.layers.Embedding(5, 3, mask_zero=True)
    theirs(ids)
    ours(ids)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_array_equal(ours.compute_mask(ids).numpy(),
                                  theirs.compute_mask(ids).numpy())
    pooled = L.GlobalAveragePooling1D()(ours(ids))  # the mask travels with the tensor
    want = tfk.layers.GlobalAveragePooling1D()(theirs(ids))
    np.testing.assert_allclose(pooled.numpy(), want.numpy(), rtol=1e-6)
    scores = np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32)
    mask = ids != 0
    np.testing.assert_allclose(L.Softmax()(scores, mask=mask).numpy(),
                               tfk.layers.Softmax()(scores, mask=mask).numpy(), rtol=1e-6)


def test_lambda_layer(tfk):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    lam = L.Lambda(lambda t, k: t * k, arguments={"k": 2.0})
    np.testing.assert_array_equal(lam(x).numpy(), x * 2)
    out = L.Lambda(lambda t: ig.concat([t, t], axis=1))(L.Input((3,)))
    assert out.shape.as_list() == [None, 6]
    fixed = L.Lambda(lambda t: t[:, :2], output_shape=(2,))
    assert fixed.compute_output_shape((None, 3)).as_list() == [None, 2]


# ---- bad inputs: the same error type as tf-keras, naming the layer ---------------------------
BAD = [
    ("Dense", dict(units=2), [(3,)], "expected min_ndim=2, found ndim=1"),
    ("Conv2D", dict(filters=2, kernel_size=2), [(2, 4, 4)], "expected min_ndim=4, found ndim=3"),
    ("MaxPooling2D", dict(), [(2, 4, 4)], "expected ndim=4, found ndim=3"),
    ("Flatten", dict(), [()], "expected min_ndim=1, found ndim=0"),
    ("Permute", dict(dims=(2, 1)), [(2, 3)], "expected ndim=3, found ndim=2"),
    ("RepeatVector", dict(n=2), [(2, 3, 4)], "expected ndim=2, found ndim=3"),
    # TF's eager reshape raises InvalidArgumentError; Keras's own check (symbolic) ValueError
    ("Reshape", dict(target_shape=(5,)), [(2, 3)], "total size of new array must be unchanged"),
    ("Add", dict(), [(2, 3)], "should be called on a list of inputs"),
    ("Add", dict(), [(2, 3), (2, 4)], "Inputs have incompatible shapes"),
    ("Subtract", dict(), [(2, 3), (2, 3), (2, 3)], "exactly 2 inputs"),
    ("Concatenate", dict(axis=1), [(2, 3), (3, 3)], "matching shapes except for the concat"),
    ("Dot", dict(axes=1), [(2, 3), (2, 4)], "Incompatible input shapes"),
    ("Softmax", dict(), [(4,)], "Cannot apply softmax to a tensor that is 1D"),
]


@pytest.mark.parametrize("name,kwargs,shapes,fragment", BAD, ids=[b[0] for b in BAD])
def test_bad_inputs_raise_keras_errors(tfk, name, kwargs, shapes, fragment):
    xs = [np.zeros(s, np.float32) for s in shapes]
    arg = xs if len(xs) > 1 else xs[0]
    theirs = getattr(tfk.layers, name)(**kwargs)
    with pytest.raises(Exception) as want:
        theirs(arg)
    expected = ValueError if name == "Reshape" else type(want.value)
    ours = getattr(L, name)(**kwargs)
    with pytest.raises(expected, match=fragment) as got:
        ours(arg)
    if f'"{theirs.name}"' in str(want.value):
        assert f'"{ours.name}"' in str(got.value)


def test_input_spec_checks_after_build():
    dense = L.Dense(3)
    dense(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match='layer "dense.*expected axis -1 of input shape to '
                                         "have value 4"):
        dense(np.zeros((2, 5), np.float32))
    conv = L.Conv2D(2, 3)
    with pytest.raises(ValueError, match="One of the dimensions in the output is <= 0"):
        conv(L.Input((2, 2, 1)))


@pytest.mark.parametrize("make,match", [
    (lambda: L.Dense(-1), "expected a positive integer"),
    (lambda: L.Conv2D(0, 3), "Expected a strictly positive value"),
    (lambda: L.Conv2D(2, (3, 0)), "kernel_size"),
    (lambda: L.Conv2D(2, 3, strides=2, dilation_rate=2), "`strides > 1` not supported"),
    (lambda: L.Conv2D(2, 3, padding="causal"), "Causal padding is only supported"),
    (lambda: L.Conv2D(2, 3, padding="full"), "The `padding` argument must be"),
    (lambda: L.Conv2D(2, 3, data_format="nhwc"), "The `data_format` argument must be"),
    (lambda: L.Dropout(1.5), "Invalid value 1.5 received for `rate`"),
    (lambda: L.Permute((1, 3)), "Invalid permutation argument `dims`"),
    (lambda: L.ReLU(max_value=-1.0), "max_value of a ReLU layer cannot be a negative"),
    (lambda: L.Embedding(0, 3), "Both `input_dim` and `output_dim` should be positive"),
    (lambda: L.Dense(2, foo=1), "Keyword argument not understood"),
])
def test_bad_constructor_arguments(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()
