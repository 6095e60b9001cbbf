"""``keras.backend``'s tensor functions (issue 16): every public name of tf-keras's backend
exists here; each function against tf-keras's on fresh seeded inputs (values, and gradients
for the differentiable ones), a float64 numpy reference for the formulas, and tf-keras's
errors for bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import backend as K


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


_ALLOWED_MISSING = {"experimental"}  # tf-keras's DTensor helpers: no DTensor here


def test_backend_has_tf_keras_public_names(tfk):
    missing = {n for n in dir(tfk.backend) if not n.startswith("_") and not hasattr(K, n)}
    assert missing <= _ALLOWED_MISSING, sorted(missing - _ALLOWED_MISSING)


def _rng(seed=0):
    return np.random.default_rng(seed)


def _f(*shape, seed=0):
    return _rng(seed).standard_normal(shape).astype(np.float32)


# (name, args builder, kwargs, differentiable argument positions)
_CASES = [
    ("sin", lambda: [_f(3, 4)], {}, [0]),
    ("cos", lambda: [_f(3, 4)], {}, [0]),
    ("cumsum", lambda: [_f(3, 4)], {"axis": 1}, [0]),
    ("cumsum", lambda: [_f(3, 4)], {}, [0]),
    ("cumprod", lambda: [_f(3, 4)], {"axis": 1}, [0]),
    ("cumprod", lambda: [_f(4, 2)], {}, [0]),
    ("repeat_elements", lambda: [_f(2, 3, 4), 3, 1], {}, [0]),
    ("repeat_elements", lambda: [_f(2, 3), 2, -1], {}, [0]),
    ("repeat", lambda: [_f(2, 3), 4], {}, [0]),
    ("all", lambda: [_f(3, 4) > 0], {"axis": 1}, []),
    ("any", lambda: [_f(3, 4) > 0.5], {}, []),
    ("any", lambda: [_f(3, 4)], {"axis": 0, "keepdims": True}, []),
    ("arange", lambda: [5], {}, []),
    ("arange", lambda: [-3], {}, []),
    ("arange", lambda: [1, 10, 3], {"dtype": "float32"}, []),
    ("argmax", lambda: [_f(3, 4)], {}, []),
    ("argmin", lambda: [_f(3, 4)], {"axis": 0}, []),
    ("prod", lambda: [_f(3, 4)], {"axis": 1, "keepdims": True}, [0]),
    ("var", lambda: [_f(3, 4)], {"axis": 0}, [0]),
    ("std", lambda: [_f(3, 4)], {}, [0]),
    ("sign", lambda: [_f(3, 4)], {}, []),
    ("round", lambda: [np.array([0.5, 1.5, -0.5, 2.4, -2.6], np.float32)], {}, []),
    ("pow", lambda: [np.abs(_f(3, 4)) + 0.1, 3], {}, [0]),
    ("softplus", lambda: [_f(3, 4)], {}, [0]),
    ("softsign", lambda: [_f(3, 4)], {}, [0]),
    ("elu", lambda: [_f(3, 4)], {"alpha": 0.5}, [0]),
    ("hard_sigmoid", lambda: [_f(3, 4) * 4], {}, [0]),
    ("equal", lambda: [_f(3, 4) > 0, _f(3, 4, seed=1) > 0], {}, []),
    ("greater_equal", lambda: [_f(3, 4), _f(3, 4, seed=1)], {}, []),
    ("less", lambda: [_f(3, 4), _f(3, 4, seed=1)], {}, []),
    ("l2_normalize", lambda: [_f(3, 4)], {"axis": 1}, [0]),
    ("flatten", lambda: [_f(2, 3, 4)], {}, [0]),
    ("batch_flatten", lambda: [_f(2, 3, 4)], {}, [0]),
    ("squeeze", lambda: [_f(2, 1, 4), 1], {}, [0]),
    ("permute_dimensions", lambda: [_f(2, 3, 4), (2, 0, 1)], {}, [0]),
    ("reverse", lambda: [_f(2, 3, 4), 1], {}, [0]),
    ("reverse", lambda: [_f(2, 3, 4), [0, 2]], {}, [0]),
    ("tile", lambda: [_f(2, 3), [2, 3]], {}, [0]),
    ("gather", lambda: [_f(5, 3), np.array([4, 0, 2, 2])], {}, [0]),
    ("one_hot", lambda: [np.array([[1, 0], [3, 2]]), 4], {}, []),
    ("temporal_padding", lambda: [_f(2, 3, 4), (2, 1)], {}, [0]),
    ("spatial_2d_padding", lambda: [_f(2, 3, 4, 2), ((1, 0), (2, 1))], {}, [0]),
    ("spatial_2d_padding", lambda: [_f(2, 3, 4, 2)], {"data_format": "channels_first"}, [0]),
    ("spatial_3d_padding", lambda: [_f(2, 3, 4, 2, 2), ((1, 0), (2, 1), (0, 1))], {}, [0]),
    ("resize_images", lambda: [_f(2, 3, 4, 2), 2, 3, "channels_last"], {}, [0]),
    ("resize_images", lambda: [_f(2, 3, 4, 2), 2, 2, "channels_first"],
     {"interpolation": "bilinear"}, [0]),
    ("resize_volumes", lambda: [_f(2, 2, 3, 2, 2), 2, 1, 3, "channels_last"], {}, [0]),
    ("dot", lambda: [_f(3, 4), _f(4, 5, seed=1)], {}, [0, 1]),
    ("dot", lambda: [_f(2, 3, 4), _f(5, 4, 6, seed=1)], {}, [0, 1]),
    ("batch_dot", lambda: [_f(2, 3), _f(2, 3, seed=1)], {}, [0, 1]),
    ("batch_dot", lambda: [_f(2, 3, 4), _f(2, 4, 5, seed=1)], {}, [0, 1]),
    ("batch_dot", lambda: [_f(2, 4, 3), _f(2, 4, 5, seed=1)], {"axes": 1}, [0, 1]),
    ("batch_dot", lambda: [_f(2, 3, 4, 5), _f(2, 5, 6, 7, seed=1)], {"axes": (3, 1)}, [0, 1]),
    ("batch_dot", lambda: [_f(2, 3), _f(2, 4, 3, seed=1)], {"axes": (1, 2)}, [0, 1]),
    ("batch_dot", lambda: [_f(2, 3, 4), _f(2, 4, seed=1)], {}, [0, 1]),
    ("bias_add", lambda: [_f(2, 3, 4), _f(4, seed=1)], {}, [0, 1]),
    ("bias_add", lambda: [_f(2, 3, 4, 5), _f(3, seed=1)], {"data_format": "channels_first"},
     [0, 1]),
    ("bias_add", lambda: [_f(2, 3, 4), _f(3, 4, seed=1)], {}, [0, 1]),
    ("batch_normalization", lambda: [_f(4, 3), _f(3, seed=1), np.abs(_f(3, seed=2)),
                                     _f(3, seed=3), _f(3, seed=4)], {}, [0, 1, 2, 3, 4]),
    ("binary_crossentropy", lambda: [(_f(3, 4) > 0).astype(np.float32),
                                     1 / (1 + np.exp(-_f(3, 4, seed=1)))], {}, [1]),
    ("binary_crossentropy", lambda: [(_f(3, 4) > 0).astype(np.float32), _f(3, 4, seed=1)],
     {"from_logits": True}, [1]),
    ("categorical_crossentropy", lambda: [np.eye(4, dtype=np.float32)[[0, 2, 3]],
                                          np.abs(_f(3, 4, seed=1)) + 0.1], {}, [1]),
    ("sparse_categorical_crossentropy", lambda: [np.array([0, 2, 3]), _f(3, 4, seed=1)],
     {"from_logits": True}, [1]),
    ("in_top_k", lambda: [np.array([[0.1, 0.5, 0.5, 0.2], [1, 2, 3, 4], [np.nan, 0, 1, 2]],
                                   np.float32), np.array([2, 1, 3]), 2], {}, []),
    ("switch", lambda: [np.array([True, False, True]), _f(2, 3), _f(2, 3, seed=1)], {}, []),
    ("switch", lambda: [_f(2, 3) > 0, _f(2, 3, 4), _f(2, 3, 4, seed=1)], {}, []),
    ("switch", lambda: [np.array(False), _f(3, 2), _f(3, 2, seed=1)], {}, []),
    ("conv1d", lambda: [_f(2, 7, 3), _f(3, 3, 4, seed=1)], {"padding": "causal",
                                                             "dilation_rate": 2}, [0, 1]),
    ("conv2d", lambda: [_f(2, 6, 5, 3), _f(3, 2, 3, 4, seed=1)], {"strides": (2, 1),
                                                                   "padding": "same"}, [0, 1]),
    ("conv2d", lambda: [_f(2, 3, 6, 5), _f(3, 2, 3, 4, seed=1)],
     {"data_format": "channels_first"}, [0, 1]),
    ("conv2d_transpose", lambda: [_f(2, 3, 3, 4), _f(3, 3, 2, 4, seed=1), (2, 6, 6, 2)],
     {"strides": (2, 2), "padding": "same"}, [0, 1]),
    ("depthwise_conv2d", lambda: [_f(2, 6, 5, 3), _f(3, 3, 3, 2, seed=1)], {}, [0, 1]),
    ("conv3d", lambda: [_f(2, 4, 5, 4, 3), _f(2, 3, 2, 3, 2, seed=1)], {"padding": "same"},
     [0, 1]),
    ("pool2d", lambda: [_f(2, 6, 5, 3), (2, 2)], {"strides": (2, 1), "pool_mode": "avg"}, [0]),
    ("pool2d", lambda: [_f(2, 3, 6, 5), (3, 2)], {"padding": "same",
                                                  "data_format": "channels_first"}, [0]),
    ("pool3d", lambda: [_f(2, 4, 5, 4, 3), (2, 2, 2)], {"strides": (2, 2, 2)}, [0]),
    ("pool3d", lambda: [_f(2, 4, 5, 4, 3), (2, 3, 2)], {"pool_mode": "avg",
                                                        "padding": "same"}, [0]),
]


@pytest.mark.parametrize("i", range(len(_CASES)), ids=[f"{c[0]}-{i}" for i, c in
                                                        enumerate(_CASES)])
def test_matches_tf_keras(tfk, real_tf, i):
    tf = real_tf
    name, build, kwargs, diff = _CASES[i]
    args = build()
    results = []
    for lib, bk in ((ig, K), (tf, tfk.backend)):
        tensors = [lib.constant(a) if isinstance(a, np.ndarray) else a for a in args]
        with lib.GradientTape() as tape:
            for j in diff:
                tape.watch(tensors[j])
            y = getattr(bk, name)(*tensors, **kwargs)
            if diff:
                u = _rng(99).standard_normal(tuple(y.shape)).astype(np.float32)
                loss = lib.reduce_sum(y * u)
        grads = tape.gradient(loss, [tensors[j] for j in diff]) if diff else []
        results.append((np.asarray(y.numpy() if hasattr(y, "numpy") else y),
                        [np.asarray(lib.convert_to_tensor(g)) for g in grads], y))
    (got, got_g, ours), (want, want_g, theirs) = results
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape,
                                                                  got.dtype, want.dtype)
    assert isinstance(ours, ig.Variable) == isinstance(theirs, tf.Variable)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
    for a, b in zip(got_g, want_g):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_formulas_against_numpy_float64():
    x = _rng(5).standard_normal((3, 4))
    np.testing.assert_allclose(K.cumprod(x, axis=1).numpy(), np.cumprod(x, axis=1))
    np.testing.assert_allclose(K.cumsum(x).numpy(), np.cumsum(x, axis=0))
    np.testing.assert_allclose(K.repeat_elements(x, 3, 0).numpy(), np.repeat(x, 3, axis=0))
    np.testing.assert_allclose(K.softsign(x).numpy(), x / (1 + np.abs(x)))
    np.testing.assert_allclose(K.hard_sigmoid(x).numpy(), np.clip(0.2 * x + 0.5, 0, 1))
    np.testing.assert_allclose(K.elu(x, 0.3).numpy(), np.where(x > 0, x, 0.3 * np.expm1(x)))
    a, b = _rng(6).standard_normal((2, 3, 4)), _rng(7).standard_normal((2, 4, 5))
    np.testing.assert_allclose(K.batch_dot(a, b).numpy(), np.einsum("bij,bjk->bik", a, b))
    np.testing.assert_allclose(K.dot(a, b[0]).numpy(), a @ b[0])
    mean, var = x.mean(0), x.var(0)
    normed, m, v = K.normalize_batch_in_training(x, None, None, [0], epsilon=1e-3)
    np.testing.assert_allclose(normed.numpy(), (x - mean) / np.sqrt(var + 1e-3))
    np.testing.assert_allclose(m.numpy(), mean)
    np.testing.assert_allclose(v.numpy(), var)


def test_variables_and_updates(tfk):
    for name, args in (("zeros", ((2, 3),)), ("ones", ((2, 3),)), ("eye", (3,)),
                       ("variable", (np.arange(3.0),)),
                       ("constant", (1.5,)), ("ones", ((0, 3),))):
        ours, theirs = getattr(K, name)(*args), getattr(tfk.backend, name)(*args)
        assert np.asarray(ours.numpy()).dtype == theirs.numpy().dtype
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert isinstance(ours, ig.Variable) == hasattr(theirs, "assign"), name
    v = K.variable([1.0, 2.0])
    K.update_add(v, [1.0, 1.0])
    K.update_sub(v, [0.5, 0.5])
    np.testing.assert_array_equal(v.numpy(), [1.5, 2.5])
    K.update(v, [4.0, 0.0])
    K.moving_average_update(v, np.array([0.0, 10.0], np.float32), 0.9)
    np.testing.assert_allclose(v.numpy(), [3.6, 1.0], rtol=1e-6)
    assert K.backend() == tfk.backend.backend() == "tensorflow"
    assert K.eval(K.ones_like(np.zeros((2,), np.float32))).tolist() == [1.0, 1.0]
    assert not K.is_sparse(v)


def test_control_functions():
    assert K.in_train_phase(1, 2, training=True) == 1
    assert K.in_train_phase(lambda: 1, lambda: 2, training=False) == 2
    assert K.in_test_phase(1, 2, training=False) == 1
    with K.learning_phase_scope(1):
        assert K.in_train_phase("train", "test") == "train"
    out = K.map_fn(lambda t: t * 2, np.arange(3.0, dtype=np.float32))
    np.testing.assert_array_equal(out.numpy(), [0, 2, 4])
    np.testing.assert_array_equal(K.foldl(lambda a, t: a + t, np.arange(4.0)).numpy(), 6)
    # foldr starts from the last element: (3 * 2 + 2) * 2 + 1
    np.testing.assert_array_equal(K.foldr(lambda a, t: a * 2 + t,
                                          np.array([1.0, 2.0, 3.0])).numpy(), 17)
    with K.name_scope("block"):
        pass


def test_random_functions_are_seeded_and_distributed():
    for fn, kwargs in ((K.random_normal, {"mean": 1.0, "stddev": 2.0}),
                       (K.random_uniform, {"minval": -1.0, "maxval": 3.0}),
                       (K.truncated_normal, {"stddev": 0.5}),
                       (K.random_bernoulli, {"p": 0.3})):
        ig.random.set_seed(11)
        a = fn((200, 50), seed=4, **kwargs).numpy()
        ig.random.set_seed(11)
        b = fn((200, 50), seed=4, **kwargs).numpy()
        np.testing.assert_array_equal(a, b)
        assert a.dtype == np.float32
        if fn is K.random_normal:
            assert abs(a.mean() - 1) < 0.1 and abs(a.std() - 2) < 0.1
        elif fn is K.random_uniform:
            assert a.min() >= -1 and a.max() < 3 and abs(a.mean() - 1) < 0.1
        elif fn is K.truncated_normal:
            assert np.abs(a).max() <= 1.0
        else:
            assert set(np.unique(a)) <= {0.0, 1.0} and abs(a.mean() - 0.3) < 0.03
    v = K.random_uniform_variable((3, 2), 0, 1, seed=1)
    assert isinstance(v, ig.Variable)
    assert isinstance(K.random_normal_variable((3, 2), 0, 1, seed=1), ig.Variable)
    np.random.seed(0)
    a = K.dropout(np.ones((100, 100), np.float32), 0.5).numpy()
    assert set(np.unique(a)) == {0.0, 2.0}


def test_bad_arguments_raise_as_tf_keras(tfk, real_tf):
    x = _f(2, 3, 4)
    cases = [
        ("batch_dot", (_f(3), _f(3, 3)), {}),
        ("batch_dot", (_f(2, 3), _f(3, 3)), {}),
        ("batch_dot", (_f(2, 3, 4), _f(2, 4, 5)), {"axes": ((1, 2), 1)}),
        ("batch_dot", (_f(2, 3, 4), _f(2, 4, 5)), {"axes": 0}),
        ("batch_dot", (_f(2, 3, 4), _f(2, 4, 5)), {"axes": (1, 1)}),
        ("bias_add", (x, _f(2, 2, 2, 2)), {}),
        ("bias_add", (x, _f(4)), {"data_format": "NHWC"}),
        ("resize_images", (_f(2, 3, 4, 2), 2, 2, "channels_last"), {"interpolation": "x"}),
        ("resize_images", (_f(2, 3, 4, 2), 2, 2, "nchw"), {}),
        ("pool2d", (_f(2, 4, 4, 2), (2, 2, 2)), {}),
        ("pool2d", (_f(2, 4, 4, 2), (2, 2)), {"pool_mode": "min"}),
        ("switch", (np.ones((2, 3, 4), bool), _f(2, 3), _f(2, 3)), {}),
    ]
    for name, args, kwargs in cases:
        def conv(lib, args=args):
            return [lib.constant(a) if isinstance(a, np.ndarray) else a for a in args]
        with pytest.raises(ValueError) as theirs:
            getattr(tfk.backend, name)(*conv(real_tf), **kwargs)
        with pytest.raises(ValueError) as ours:
            getattr(K, name)(*conv(ig), **kwargs)
        assert str(ours.value) == str(theirs.value), name
    with pytest.raises(AssertionError):
        K.repeat(x, 2)
