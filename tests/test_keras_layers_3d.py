"""The 3-D family (issue 16): ``tf.nn.conv3d``, ``conv3d_transpose``, ``max_pool3d``,
``avg_pool3d`` against real TensorFlow (values, gradients, errors) and the float64 reference
(tests/reference/conv3d.py, also for what TF's CPU kernels refuse: dilations, groups, NCDHW
pooling); the Keras layers ``Conv3D``, ``Conv3DTranspose``, ``MaxPooling3D``,
``AveragePooling3D``, ``GlobalAverage/MaxPooling3D``, ``UpSampling3D``, ``ZeroPadding3D``,
``Cropping3D`` against tf-keras with shared weights (outputs, gradients, output shapes,
configs, a few SGD steps of a small model)."""

from __future__ import annotations

import numpy as np
import pytest
from reference import conv3d as ref

import ipu_gpu as ig
from ipu_gpu import errors
from ipu_gpu.keras import layers as L


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _case(seed):
    rng = np.random.default_rng(seed)
    c, k = int(rng.choice([1, 3, 4])), int(rng.integers(1, 5))
    ks = tuple(int(v) for v in rng.integers(1, 4, 3))
    st = tuple(int(v) for v in rng.integers(1, 3, 3))
    sp = tuple(int(v) for v in rng.integers(3, 7, 3))
    pad = str(rng.choice(["SAME", "VALID"]))
    x = rng.standard_normal((2, *sp, c)).astype(np.float32)
    w = rng.standard_normal((*ks, c, k)).astype(np.float32)
    return rng, x, w, st, pad


def _grads(lib, fn, inputs, u):
    ts = [lib.constant(a) for a in inputs]
    with lib.GradientTape() as tape:
        for t in ts:
            tape.watch(t)
        y = fn(*ts)
        loss = lib.reduce_sum(y * lib.constant(u.astype(inputs[0].dtype)))
    return y.numpy(), [g.numpy() for g in tape.gradient(loss, ts)]


def _close(a, b, scale=None, tol=2e-5):
    scale = np.abs(b).max() + 1 if scale is None else scale
    np.testing.assert_allclose(a, b, atol=tol * scale, rtol=0)


@pytest.mark.parametrize("seed", range(8))
def test_conv3d_and_transpose_match_tf(real_tf, seed):
    tf = real_tf
    rng, x, w, st, pad = _case(seed)
    strides = [1, *st, 1]
    want_y = tf.nn.conv3d(x, w, strides, pad).numpy()
    u = rng.standard_normal(want_y.shape)
    y, (gx, gw) = _grads(ig, lambda a, b: ig.nn.conv3d(a, b, strides, pad), [x, w], u)
    ty, (tgx, tgw) = _grads(tf, lambda a, b: tf.nn.conv3d(a, b, strides, pad), [x, w], u)
    _close(y, ty)
    _close(gx, tgx)
    _close(gw, tgw)
    _close(y, ref.conv3d(x, w, st, pad))
    # the transpose, from the convolution's output shape back to its input's
    v = rng.standard_normal(want_y.shape).astype(np.float32)
    u2 = rng.standard_normal(x.shape)
    y, (gv, gw) = _grads(ig, lambda a, b: ig.nn.conv3d_transpose(a, b, list(x.shape), strides,
                                                                 pad), [v, w], u2)
    ty, (tgv, tgw) = _grads(tf, lambda a, b: tf.nn.conv3d_transpose(a, b, list(x.shape),
                                                                    strides, pad), [v, w], u2)
    _close(y, ty)
    _close(gv, tgv)
    _close(gw, tgw)


@pytest.mark.parametrize("seed", range(8))
def test_pools_match_tf(real_tf, seed):
    tf = real_tf
    rng, x, w, st, pad = _case(seed)
    ks = list(w.shape[:3])
    for ours, theirs, kind in ((ig.nn.max_pool3d, tf.nn.max_pool3d, "max"),
                               (ig.nn.avg_pool3d, tf.nn.avg_pool3d, "avg")):
        want = theirs(x, ks, list(st), pad).numpy()
        u = rng.standard_normal(want.shape)
        y, (g,) = _grads(ig, lambda a, f=ours: f(a, ks, list(st), pad), [x], u)
        ty, (tg,) = _grads(tf, lambda a, f=theirs: f(a, ks, list(st), pad), [x], u)
        _close(y, ty, tol=1e-6)
        _close(g, tg, tol=1e-6)
        _close(y, ref.pool3d(x, ks, st, pad, kind), tol=1e-6)


def test_max_pool3d_ties_nan_and_infinity_as_tf(real_tf):
    tf = real_tf
    for x in (np.ones((1, 2, 2, 2, 1), np.float32),
              np.array([1, np.nan, 2, 2, 0, 0, 0, 0], np.float32).reshape(1, 2, 2, 2, 1),
              np.array([np.nan, 1, 0, 0, 0, 0, 3, 0], np.float32).reshape(1, 2, 2, 2, 1),
              np.array([1, 1 + 8e-6, 1 - 2e-5, 0, 0, 0, 0, 0], np.float32).reshape(1, 2, 2, 2, 1),
              np.full((1, 2, 2, 2, 1), -np.inf, np.float32)):
        u = np.ones((1, 1, 1, 1, 1))
        y, (g,) = _grads(ig, lambda a: ig.nn.max_pool3d(a, 2, 2, "VALID"), [x], u)
        ty, (tg,) = _grads(tf, lambda a: tf.nn.max_pool3d(a, 2, 2, "VALID"), [x], u)
        np.testing.assert_array_equal(y, ty)
        np.testing.assert_array_equal(g, tg)


@pytest.mark.parametrize("seed", range(4))
def test_dilations_groups_and_ncdhw_against_the_reference(seed):
    """What TF's CPU kernels refuse (dilations, groups) against the float64 reference, with
    finite-difference gradients of the reference (the op is linear in each argument)."""
    rng = np.random.default_rng(100 + seed)
    groups, cg, kg = int(rng.choice([1, 2])), int(rng.choice([1, 2])), int(rng.choice([1, 2]))
    dil = tuple(int(v) for v in rng.choice([1, 2], 3))
    pad = str(rng.choice(["SAME", "VALID"]))
    x = rng.standard_normal((2, 6, 5, 7, cg * groups))
    w = rng.standard_normal((2, 3, 2, cg, kg * groups))
    want = ref.conv3d(x, w, (1, 1, 1), pad, dil)
    u = rng.standard_normal(want.shape)
    y, (gx, gw) = _grads(ig, lambda a, b: ig.nn.conv3d(a, b, [1] * 5, pad, dilations=list(dil)),
                         [x, w], u)
    np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
    for arr, grad, other in ((x, gx, lambda e: ref.conv3d(e, w, (1, 1, 1), pad, dil)),
                             (w, gw, lambda e: ref.conv3d(x, e, (1, 1, 1), pad, dil))):
        for flat in rng.choice(arr.size, 4, replace=False):
            e = np.zeros(arr.size)
            e[flat] = 1
            want_g = np.sum(other(e.reshape(arr.shape)) * u)
            np.testing.assert_allclose(grad.ravel()[flat], want_g, rtol=1e-10, atol=1e-10)
    # NCDHW: the transposed NDHWC result, for the convolution and both pools
    xf = np.ascontiguousarray(x.transpose(0, 4, 1, 2, 3))
    got = ig.nn.conv3d(xf, w, [1] * 5, pad, data_format="NCDHW", dilations=list(dil)).numpy()
    np.testing.assert_allclose(got.transpose(0, 2, 3, 4, 1), want, rtol=1e-12, atol=1e-12)
    for fn, kind in ((ig.nn.max_pool3d, "max"), (ig.nn.avg_pool3d, "avg")):
        got = fn(xf, [2, 2, 3], [1, 1, 2, 1, 2], pad, data_format="NCDHW").numpy()
        want_p = ref.pool3d(x, (2, 2, 3), (2, 1, 2), pad, kind)
        np.testing.assert_allclose(got.transpose(0, 2, 3, 4, 1), want_p, rtol=1e-12)


def test_float16_computes_in_float32():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 4, 4, 4, 3)).astype(np.float16)
    w = rng.standard_normal((2, 2, 2, 3, 2)).astype(np.float16)
    y = ig.nn.conv3d(x, w, [1] * 5, "SAME")
    assert y.dtype == ig.float16
    want = ref.conv3d(x.astype(np.float32), w.astype(np.float32), (1, 1, 1), "SAME")
    np.testing.assert_array_equal(y.numpy(), want.astype(np.float32).astype(np.float16))
    p = ig.nn.avg_pool3d(x, 2, 2, "VALID")
    assert p.dtype == ig.float16
    np.testing.assert_allclose(p.numpy(), ref.pool3d(x, (2,) * 3, (2,) * 3, "VALID", "avg"),
                               rtol=1e-3)


_X = np.zeros((2, 4, 4, 4, 3), np.float32)
_W = np.zeros((2, 2, 2, 3, 4), np.float32)
_BAD = [  # (name, ours, theirs); the expected class is TF's, mapped to ours
    ("int strides", lambda n: n.conv3d(_X, _W, 1, "SAME")),
    ("strides of length 4", lambda n: n.conv3d(_X, _W, [1, 2, 2, 2], "SAME")),
    ("batch stride", lambda n: n.conv3d(_X, _W, [2, 1, 1, 1, 1], "SAME")),
    ("padding FOO", lambda n: n.conv3d(_X, _W, [1] * 5, "FOO")),
    ("explicit padding", lambda n: n.conv3d(_X, _W, [1] * 5, [[0, 0]] * 5)),
    ("filter depth", lambda n: n.conv3d(_X, _W[:, :, :, :2], [1] * 5, "VALID")),
    ("4-D input", lambda n: n.conv3d(_X[0], _W, [1] * 5, "VALID")),
    ("data_format NHWC", lambda n: n.conv3d(_X, _W, [1] * 5, "VALID", data_format="NHWC")),
    ("window too big", lambda n: n.conv3d(_X[:, :1], np.zeros((3, 1, 1, 3, 1), np.float32),
                                          [1] * 5, "VALID")),
    ("pool window too big", lambda n: n.max_pool3d(_X[:, :1], [6, 1, 1], 1, "VALID")),
    ("ksize of length 2", lambda n: n.max_pool3d(_X, [2, 2], 2, "VALID")),
    ("ksize 0", lambda n: n.avg_pool3d(_X, 0, 2, "SAME")),
    ("5-D ksize over channels", lambda n: n.max_pool3d(_X, [1, 2, 2, 2, 2], 2, "VALID")),
    ("transpose: input channels", lambda n: n.conv3d_transpose(
        np.ones((2, 2, 2, 2, 5), np.float32), _W, [2, 4, 4, 4, 3], 2, "SAME")),
    ("transpose: output channels", lambda n: n.conv3d_transpose(
        np.ones((2, 2, 2, 2, 4), np.float32), _W, [2, 4, 4, 4, 2], 2, "SAME")),
    ("transpose: output size", lambda n: n.conv3d_transpose(
        np.ones((2, 2, 2, 2, 4), np.float32), _W, [2, 7, 4, 4, 3], 2, "SAME")),
]


@pytest.mark.parametrize("case", _BAD, ids=[c[0] for c in _BAD])
def test_bad_arguments_raise_what_tf_raises(real_tf, case):
    tf = real_tf
    _, call = case
    with pytest.raises(Exception) as theirs:
        call(tf.nn)
    mapped = {tf.errors.InvalidArgumentError: errors.InvalidArgumentError,
              tf.errors.UnimplementedError: errors.UnimplementedError}
    want = next((ours for t, ours in mapped.items() if isinstance(theirs.value, t)),
                type(theirs.value))
    with pytest.raises(want):
        call(ig.nn)


def test_empty_outputs_as_tf(real_tf):
    """A window just past the input gives an empty output, as TF's truncating division."""
    tf = real_tf
    for fn in (lambda n: n.conv3d(_X[:, :1], _W, [1] * 5, "VALID"),
               lambda n: n.conv3d(_X[:, :1], np.zeros((4, 1, 1, 3, 1), np.float32),
                                  [1, 2, 1, 1, 1], "VALID"),
               lambda n: n.avg_pool3d(_X[:, :1], [4, 1, 1], [2, 1, 1], "VALID")):
        assert list(fn(ig.nn).shape) == list(fn(tf.nn).shape)
        assert 0 in list(fn(ig.nn).shape)


def test_dtype_errors_are_type_errors():
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        ig.nn.conv3d(_X.astype(np.int32), _W.astype(np.int32), [1] * 5, "SAME")
    with pytest.raises(TypeError, match="dtype of input"):
        ig.nn.conv3d(_X, _W.astype(np.float64), [1] * 5, "SAME")
    with pytest.raises(TypeError, match="float16, float32 or float64"):
        ig.nn.max_pool3d(_X.astype(np.int32), 2, 2, "SAME")


# ---- Keras layers --------------------------------------------------------------------------
def _both(tfk, name, kwargs):
    return getattr(L, name)(**kwargs), getattr(tfk.layers, name)(**kwargs)


def _layer_check(real_tf, ours, theirs, x, seed=0, transposed=False):
    """``transposed``: ours is channels_first, theirs channels_last (TF's CPU convolutions
    refuse NCDHW), fed the transposed input."""
    tf = real_tf
    to_last, to_first = (0, 2, 3, 4, 1), (0, 4, 1, 2, 3)
    xt_np = np.ascontiguousarray(x.transpose(to_last)) if transposed else x
    y_theirs_shape = list(theirs.compute_output_shape((None, *xt_np.shape[1:])))
    if transposed:
        y_theirs_shape = [y_theirs_shape[i] for i in to_first]
    theirs.build(xt_np.shape)
    ours.build(x.shape)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(w.shape).astype(np.float32) * 0.3
               for w in theirs.get_weights()]
    theirs.set_weights(weights)
    ours.set_weights(weights)
    xt, xi = tf.constant(xt_np), ig.constant(x)
    with tf.GradientTape() as t1:
        t1.watch(xt)
        yt = theirs(xt)
        if transposed:
            yt = tf.transpose(yt, to_first)
        u = rng.standard_normal(yt.shape).astype(np.float32)
        lt = tf.reduce_sum(yt * u)
    with ig.GradientTape() as t2:
        t2.watch(xi)
        yi = ours(xi)
        li = ig.reduce_sum(yi * u)
    _close(yi.numpy(), yt.numpy())
    gt = t1.gradient(lt, [xt, *theirs.trainable_variables])
    gi = t2.gradient(li, [xi, *ours.trainable_variables])
    if transposed:
        gt[0] = tf.transpose(gt[0], to_first)
    for a, b in zip(gi, gt):
        _close(a.numpy(), b.numpy())
    assert list(ours.compute_output_shape((None, *x.shape[1:]))) == y_theirs_shape
    want_config = theirs.get_config() | {"name": ours.name}
    if transposed:
        want_config["data_format"] = "channels_first"
    assert ours.get_config() == want_config


_LAYERS = [
    ("Conv3D", dict(filters=3, kernel_size=(2, 3, 2), strides=(1, 2, 1), padding="same",
                    activation="relu")),
    ("Conv3D", dict(filters=2, kernel_size=2, data_format="channels_first", use_bias=True)),
    ("Conv3DTranspose", dict(filters=3, kernel_size=(3, 2, 2), strides=(2, 1, 2),
                             padding="same")),
    ("Conv3DTranspose", dict(filters=2, kernel_size=2, strides=2, output_padding=1,
                             padding="valid")),
    ("Conv3DTranspose", dict(filters=2, kernel_size=3, data_format="channels_first")),
    ("MaxPooling3D", dict(pool_size=(2, 2, 3), strides=(1, 2, 1), padding="same")),
    ("MaxPool3D", dict()),
    ("AveragePooling3D", dict(pool_size=3, strides=2, padding="same")),
    ("AvgPool3D", dict(pool_size=2, data_format="channels_first")),
    ("GlobalAveragePooling3D", dict(keepdims=True)),
    ("GlobalMaxPooling3D", dict(data_format="channels_first")),
    ("UpSampling3D", dict(size=(2, 1, 3))),
    ("UpSampling3D", dict(size=2, data_format="channels_first")),
    ("ZeroPadding3D", dict(padding=((1, 0), (2, 1), (0, 3)))),
    ("ZeroPadding3D", dict(padding=2, data_format="channels_first")),
    ("Cropping3D", dict(cropping=((1, 0), (0, 1), (1, 2)))),
    ("Cropping3D", dict(cropping=(1, 0, 1), data_format="channels_first")),
]


@pytest.mark.parametrize("i", range(len(_LAYERS)),
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(_LAYERS)])
def test_layers_match_tf_keras(tfk, real_tf, i):
    name, kwargs = _LAYERS[i]
    ours, theirs = _both(tfk, name, dict(kwargs, name="layer"))
    x = np.random.default_rng(i).standard_normal((2, 5, 6, 7, 3)).astype(np.float32)
    transposed = name.startswith("Conv") and kwargs.get("data_format") == "channels_first"
    if transposed:
        theirs = getattr(tfk.layers, name)(**dict(kwargs, name="layer",
                                                  data_format="channels_last"))
    _layer_check(real_tf, ours, theirs, x, seed=i, transposed=transposed)


def test_layer_construction_errors_match_tf_keras(tfk):
    for name, kwargs in (("Conv3DTranspose", dict(filters=2, kernel_size=2, strides=1,
                                                  output_padding=1)),
                         ("ZeroPadding3D", dict(padding=(1, 2))),
                         ("Cropping3D", dict(cropping=((1, 2), (1,), (0, 0)))),
                         ("ZeroPadding3D", dict(padding="x")),
                         ("Conv3D", dict(filters=0, kernel_size=2)),
                         ("MaxPooling3D", dict(pool_size=(2, 2)))):
        with pytest.raises(ValueError) as theirs:
            getattr(tfk.layers, name)(**kwargs)
        with pytest.raises(ValueError) as ours:
            getattr(L, name)(**kwargs)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="Inputs should have rank 5"):
        L.Conv3DTranspose(2, 2).build((2, 4, 4, 3))


def test_conv3d_model_trains_as_tf_keras(tfk, real_tf):
    """Conv3D -> MaxPooling3D -> GlobalAveragePooling3D -> Dense, 3 SGD epochs on the same
    data from the same weights: losses and weights agree."""
    tf = real_tf
    rng = np.random.default_rng(3)
    x = rng.standard_normal((16, 6, 6, 6, 2)).astype(np.float32)
    y = rng.integers(0, 3, 16)

    def build(lib):
        return lib.Sequential([
            lib.layers.Conv3D(4, 3, padding="same", activation="relu", input_shape=x.shape[1:]),
            lib.layers.MaxPooling3D(2),
            lib.layers.Conv3DTranspose(3, 2, strides=2),
            lib.layers.AveragePooling3D(2, padding="same"),
            lib.layers.GlobalAveragePooling3D(),
            lib.layers.Dense(3)])

    import ipu_gpu.keras as ik
    ours, theirs = build(ik), build(tfk)
    ours.set_weights(theirs.get_weights())
    for m, lib in ((ours, ik), (theirs, tfk)):
        m.compile(optimizer=lib.optimizers.SGD(0.1),
                  loss=lib.losses.SparseCategoricalCrossentropy(from_logits=True))
    h1 = ours.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, atol=1e-5)
    del tf
