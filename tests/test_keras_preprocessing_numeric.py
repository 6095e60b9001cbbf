"""Keras numeric and integer-categorical preprocessing layers (issue 16): ``Normalization``,
``Discretization``, ``CategoryEncoding``, ``Hashing``, ``IntegerLookup`` against tf-keras and
float64 numpy references (values, dtypes, shapes, adapt on arrays and ``tf.data``
datasets, configs, errors), in a Sequential model with fit and in ``tf.data`` map."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.errors import InvalidArgumentError
from ipu_gpu.keras import layers as L
from ipu_gpu.keras.layers.preprocessing.string_hash import fingerprint64
from reference import preprocessing as ref


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


def _config(cfg: dict) -> dict:
    def plain(v):
        if isinstance(v, np.integer):
            return int(v)
        return list(v)
    cfg = json.loads(json.dumps(cfg, default=plain))
    cfg.pop("name", None)
    return cfg


def _round_trip(layer):
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    again = L.deserialize(L.serialize(layer))
    assert type(again) is type(layer) and again.get_config() == layer.get_config()
    return clone


# ---- Normalization ----------------------------------------------------------------------
@pytest.mark.parametrize("axis,shape", [(-1, (70, 3)), (None, (70, 3)), ((1, 2), (40, 3, 4)),
                                        (1, (40, 3, 4)), (-1, (50, 2, 5))])
@pytest.mark.parametrize("invert", [False, True])
def test_normalization_adapt_matches_tf_keras_and_numpy(tfk, axis, shape, invert):
    rng = np.random.default_rng(len(shape))
    data = (rng.standard_normal(shape) * 3 + 2).astype(np.float32)
    x = (rng.standard_normal((4, *shape[1:])) * 3 + 2).astype(np.float32)
    ours, theirs = L.Normalization(axis=axis, invert=invert), tfk.layers.Normalization(
        axis=axis, invert=invert)
    ours.adapt(data)
    theirs.adapt(data)
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
    want = ref.normalize(x, () if axis is None else np.atleast_1d(axis).tolist(),
                         invert=invert, **_moments(data, axis))
    np.testing.assert_allclose(ours(x).numpy(), want, rtol=1e-5, atol=1e-5)
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    assert ours.is_adapted
    assert _config(ours.get_config()) == _config(theirs.get_config())


def _moments(data, axis):
    keep = () if axis is None else tuple(a % data.ndim for a in np.atleast_1d(axis))
    reduce = tuple(a for a in range(data.ndim) if a not in keep)
    d = data.astype(np.float64)
    return dict(mean=d.mean(axis=reduce, keepdims=True), variance=d.var(axis=reduce,
                                                                         keepdims=True))


def test_normalization_adapt_on_datasets_batches_and_steps(tfk, real_tf):
    rng = np.random.default_rng(1)
    data = rng.uniform(-5, 5, (37, 4)).astype(np.float32)
    x = data[:5]
    for batch_size, steps in [(7, None), (None, 2), (5, 3)]:
        ours, theirs = L.Normalization(), tfk.layers.Normalization()
        ours.adapt(data, batch_size=batch_size, steps=steps)
        theirs.adapt(data, batch_size=batch_size, steps=steps)
        np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
    ours, theirs = L.Normalization(), tfk.layers.Normalization()
    ours.adapt(ig.data.Dataset.from_tensor_slices(data).batch(6))
    theirs.adapt(real_tf.data.Dataset.from_tensor_slices(data).batch(6))
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-5)
    ours.adapt(ig.data.Dataset.from_tensor_slices(data).batch(6), steps=2)  # re-adapt resets
    np.testing.assert_allclose(ours.count.numpy(), 12)
    with pytest.raises(ValueError, match="batch_size"):
        ours.adapt(ig.data.Dataset.from_tensor_slices(data).batch(6), batch_size=3)


@pytest.mark.parametrize("mean,variance,axis,shape", [
    (3.0, 2.0, -1, (3, 1)), ([1.0, 2.0, 3.0], [1.0, 4.0, 0.25], -1, (2, 3)),
    (np.array([1.0, -1.0]), 2.0, 1, (2, 2, 3)), (0.5, 0.0, None, (2, 2)),
])
def test_normalization_with_given_mean_and_variance(tfk, mean, variance, axis, shape):
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ours = L.Normalization(mean=mean, variance=variance, axis=axis)
    theirs = tfk.layers.Normalization(mean=mean, variance=variance, axis=axis)
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-6, atol=1e-6)
    inverse = L.Normalization(mean=mean, variance=variance, axis=axis, invert=True)
    np.testing.assert_allclose(inverse(ours(x)).numpy(), x, rtol=1e-5, atol=1e-4
                               if variance else 1e-3)
    assert ours.weights == []
    assert _config(ours.get_config()) == _config(theirs.get_config())
    clone = _round_trip(ours)
    np.testing.assert_allclose(clone(x).numpy(), ours(x).numpy())


def test_normalization_integer_inputs_gradient_and_weights(tfk, real_tf):
    ints = np.arange(12).reshape(4, 3)
    ours, theirs = L.Normalization(), tfk.layers.Normalization()
    ours.adapt(ints)
    theirs.adapt(ints)
    assert ours(ints).dtype == np.float32
    np.testing.assert_allclose(ours(ints).numpy(), theirs(ints).numpy(), rtol=1e-6)
    x = ig.constant(np.ones((2, 3), np.float32))
    with ig.GradientTape() as tape:
        tape.watch(x)
        y = ig.reduce_sum(ours(x) * np.array([1.0, 2.0, 3.0], np.float32))
    xt = real_tf.constant(np.ones((2, 3), np.float32))
    with real_tf.GradientTape() as tape2:
        tape2.watch(xt)
        yt = real_tf.reduce_sum(theirs(xt) * np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), tape2.gradient(yt, xt).numpy(),
                               rtol=1e-6)
    fresh = L.Normalization()
    fresh.build((None, 3))
    fresh.set_weights(theirs.get_weights())  # statistics set as weights are used
    np.testing.assert_allclose(fresh(ints).numpy(), theirs(ints).numpy(), rtol=1e-6)
    assert ours.trainable_weights == [] and len(ours.non_trainable_weights) == 3


@pytest.mark.parametrize("make,call,match,error", [
    (lambda lib: lib.Normalization(mean=1.0), None, "both `mean` and `variance`", ValueError),
    (lambda lib: lib.Normalization(axis=3), np.zeros((2, 3), np.float32), "must be in the range",
     ValueError),
    (lambda lib: lib.Normalization(mean=1.0, variance=2.0),
     lambda layer: layer.adapt(np.zeros((4, 3), np.float32)), "Cannot `adapt` a Normalization",
     ValueError),
    (lambda lib: lib.Normalization(), lambda layer: layer.adapt(np.arange(10.0)),
     "must have known shape", ValueError),
    (lambda lib: lib.Normalization(axis=0), lambda layer: layer.adapt(np.ones((4, 3))),
     "must have known shape", ValueError),
])
def test_normalization_errors_as_tf_keras(tfk, make, call, match, error):
    for lib in (tfk.layers, L):
        with pytest.raises(error, match=match):
            layer = make(lib)
            if callable(call):
                call(layer)
            elif call is not None:
                layer(call)


def test_normalization_refuses_a_variable_mean():
    with pytest.raises(ValueError, match="does not support passing a Variable"):
        L.Normalization(mean=ig.Variable(1.0), variance=1.0)


# ---- Discretization ---------------------------------------------------------------------
@pytest.mark.parametrize("output_mode", ["int", "one_hot", "multi_hot", "count"])
def test_discretization_with_boundaries(tfk, output_mode):
    boundaries = [-1.0, 0.0, 0.5, 2.0]
    v = np.array([-3, -1, -0.5, 0, 0.25, 0.5, 1.9, 2, 7.0], np.float32)
    x = v.reshape(3, 3) if output_mode != "one_hot" else v
    ours = L.Discretization(bin_boundaries=boundaries, output_mode=output_mode)
    theirs = tfk.layers.Discretization(bin_boundaries=boundaries, output_mode=output_mode)
    got = ours(x)
    assert got.dtype == theirs(x).dtype
    np.testing.assert_array_equal(got.numpy(), theirs(x).numpy())
    want = ref.bucketize(x, boundaries)
    if output_mode != "int":
        want = ref.encode(want, len(boundaries) + 1, output_mode)
    np.testing.assert_array_equal(got.numpy(), want)
    assert _config(ours.get_config()) == _config(theirs.get_config())
    _round_trip(ours)


@pytest.mark.parametrize("kwargs", [dict(num_bins=4), dict(num_bins=7, epsilon=0.001),
                                    dict(num_bins=2, epsilon=0.1), dict(num_bins=5)])
def test_discretization_adapt_matches_tf_keras(tfk, real_tf, kwargs):
    rng = np.random.default_rng(kwargs["num_bins"])
    data = rng.standard_normal((500, 3)).astype(np.float32) * 2
    ours, theirs = L.Discretization(**kwargs), tfk.layers.Discretization(**kwargs)
    ours.adapt(data, batch_size=64)
    theirs.adapt(data, batch_size=64)
    np.testing.assert_allclose(ours.bin_boundaries, theirs.bin_boundaries, rtol=1e-6)
    np.testing.assert_array_equal(ours(data[:50]).numpy(), theirs(data[:50]).numpy())
    quantiles = np.quantile(data, np.arange(1, kwargs["num_bins"]) / kwargs["num_bins"])
    atol = 0.3 if kwargs.get("epsilon", 0.01) <= 0.01 else 1.0  # quantiles to ~epsilon
    np.testing.assert_allclose(ours.bin_boundaries, quantiles, atol=atol)
    ds_ours = L.Discretization(**kwargs)
    ds_ours.adapt(ig.data.Dataset.from_tensor_slices(data).batch(100))
    ds_theirs = tfk.layers.Discretization(**kwargs)
    ds_theirs.adapt(real_tf.data.Dataset.from_tensor_slices(data).batch(100))
    np.testing.assert_allclose(ds_ours.bin_boundaries, ds_theirs.bin_boundaries, rtol=1e-6)


@pytest.mark.parametrize("kwargs,match", [
    (dict(num_bins=-1), "greater than or equal to 0"),
    (dict(output_mode="bad"), "Unkown value for `output_mode`"),
    (dict(bin_boundaries=[1.0], sparse=True), "`sparse` may only be true"),
    (dict(num_bins=3, bin_boundaries=[1.0]), "should not be set"),
])
def test_discretization_errors_as_tf_keras(tfk, kwargs, match):
    for lib in (tfk.layers, L):
        with pytest.raises(ValueError, match=match):
            lib.Discretization(**kwargs)
    with pytest.raises(ValueError, match="Cannot adapt a Discretization"):
        L.Discretization(bin_boundaries=[1.0]).adapt(np.ones(3))


def test_discretization_dtypes(tfk):
    ours = L.Discretization(bin_boundaries=[1.0], dtype="float32")  # int mode: int64
    theirs = tfk.layers.Discretization(bin_boundaries=[1.0], dtype="float32")
    assert ours(np.array([0.0, 2.0])).dtype == theirs(np.array([0.0, 2.0])).dtype == np.int64
    out = L.Discretization(bin_boundaries=[1.0], output_mode="count", dtype="float64")
    assert out(np.array([[0.0, 2.0]])).dtype == np.float64


# ---- CategoryEncoding -------------------------------------------------------------------
@pytest.mark.parametrize("output_mode", ["one_hot", "multi_hot", "count", "binary"])
@pytest.mark.parametrize("x", [np.array([[1, 2, 2], [0, 4, 4]]), np.array([3, 1, 1]),
                               np.array(2), np.array([[1], [3]]), np.array([4])])
def test_category_encoding_matches_tf_keras_and_numpy(tfk, output_mode, x):
    ours = L.CategoryEncoding(num_tokens=5, output_mode=output_mode)
    theirs = tfk.layers.CategoryEncoding(num_tokens=5, output_mode=output_mode)
    try:
        want = theirs(x).numpy()
    except ValueError:
        with pytest.raises(ValueError, match="maximum supported output rank is 2"):
            ours(x)
        return
    got = ours(x)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    mode = "multi_hot" if output_mode == "binary" else output_mode
    np.testing.assert_array_equal(got.numpy(), ref.encode(x, 5, mode))
    assert ours.compute_output_shape(x.shape).as_list() == list(
        theirs.compute_output_shape(x.shape))
    assert _config(ours.get_config()) == _config(theirs.get_config())


def test_category_encoding_weights_sparse_and_errors(tfk):
    x = np.array([[1, 2, 2], [0, 4, 4]])
    w = np.array([[0.5, 1, 2], [1, 1, 3]], np.float32)
    ours = L.CategoryEncoding(num_tokens=5, output_mode="count")
    theirs = tfk.layers.CategoryEncoding(num_tokens=5, output_mode="count")
    np.testing.assert_array_equal(ours(x, count_weights=w).numpy(),
                                  theirs(x, count_weights=w).numpy())
    np.testing.assert_array_equal(ours(x, count_weights=w).numpy(), ref.encode(x, 5, "count", w))
    sparse = L.CategoryEncoding(num_tokens=5, output_mode="count", sparse=True)(x)
    dense = ig.sparse.to_dense(sparse).numpy()
    np.testing.assert_array_equal(dense, ours(x).numpy())
    their_sparse = tfk.layers.CategoryEncoding(num_tokens=5, output_mode="count",
                                               sparse=True)(x)
    np.testing.assert_array_equal(sparse.indices.numpy(), their_sparse.indices.numpy())
    with pytest.raises(InvalidArgumentError, match="Input values must be in the range"):
        L.CategoryEncoding(num_tokens=3)(x)
    with pytest.raises(InvalidArgumentError, match="Input values must be in the range"):
        L.CategoryEncoding(num_tokens=8)(np.array([-1, 2]))
    with pytest.raises(ValueError, match="is not used when"):
        L.CategoryEncoding(num_tokens=5)(x, count_weights=w)
    for lib in (tfk.layers, L):
        with pytest.raises(ValueError, match="num_tokens must be set"):
            lib.CategoryEncoding()
        with pytest.raises(ValueError, match="must be >= 1"):
            lib.CategoryEncoding(num_tokens=0)
        with pytest.raises(ValueError, match="Unkown value for `output_mode`"):
            lib.CategoryEncoding(num_tokens=3, output_mode="int")
    _round_trip(ours)


# ---- Hashing ----------------------------------------------------------------------------
def test_fingerprint64_matches_tf_docs():
    # tf.strings.to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3) == [0, 2, 2] (TF docs)
    assert [fingerprint64(s) % 3 for s in (b"Hello", b"TensorFlow", b"2.x")] == [0, 2, 2]


@pytest.mark.parametrize("kwargs", [
    dict(num_bins=7), dict(num_bins=7, mask_value=3), dict(num_bins=5, salt=133),
    dict(num_bins=5, salt=[1, 2], output_mode="multi_hot"), dict(num_bins=5, output_mode="count"),
    dict(num_bins=1), dict(num_bins=1, mask_value=0), dict(num_bins=2 ** 40),
    dict(num_bins=4, output_mode="one_hot"),
])
def test_hashing_matches_tf_keras(tfk, kwargs):
    rng = np.random.default_rng(0)
    x = rng.integers(-1000, 1000, size=(6, 4))
    x[0, :2] = [3, 0]
    x[1, 0] = np.iinfo(np.int64).min
    x[2, 0] = np.iinfo(np.int64).max
    if kwargs.get("output_mode") == "one_hot":
        x = x[:, 0]
    ours, theirs = L.Hashing(**kwargs), tfk.layers.Hashing(**kwargs)
    got, want = ours(x), theirs(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert _config(ours.get_config()) == _config(theirs.get_config())
    _round_trip(ours)
    ints32 = x.astype(np.int32) if kwargs.get("output_mode") is None else None
    if ints32 is not None:
        np.testing.assert_array_equal(ours(ints32).numpy(), theirs(ints32).numpy())


def test_hashing_errors(tfk):
    for lib in (tfk.layers, L):
        with pytest.raises(ValueError, match="cannot be `None` or non-positive"):
            lib.Hashing(num_bins=0)
        with pytest.raises(ValueError, match="can only be a tuple of size 2"):
            lib.Hashing(num_bins=3, salt="x")
        with pytest.raises(ValueError, match="`sparse` may only be true"):
            lib.Hashing(num_bins=3, sparse=True)
    for values in (np.array([1.5, 2.0], np.float32), np.array([True])):
        for lib in (tfk.layers, L):
            with pytest.raises(Exception, match="expected to be a string tensor") as info:
                lib.Hashing(3)(values)
            assert type(info.value).__name__ == "InvalidArgumentError"


# ---- IntegerLookup ----------------------------------------------------------------------
ADAPT_CASES = [dict(), dict(mask_token=0), dict(num_oov_indices=3), dict(max_tokens=6),
               dict(output_mode="multi_hot"), dict(output_mode="count", mask_token=0),
               dict(output_mode="one_hot", max_tokens=20, pad_to_max_tokens=True),
               dict(mask_token=3, num_oov_indices=2), dict(num_oov_indices=0, oov_token=None),
               dict(oov_token=99, max_tokens=4)]


@pytest.mark.parametrize("kwargs", ADAPT_CASES)
def test_integer_lookup_adapt_matches_tf_keras(tfk, real_tf, kwargs):
    rng = np.random.default_rng(0)
    data = rng.integers(0, 12, size=(40, 5))
    x = rng.integers(-2, 15, size=(6, 5))
    if kwargs.get("num_oov_indices") == 0:
        x = np.clip(x, 0, 11)
    if kwargs.get("output_mode") == "one_hot":
        x = x[:, :1]
    ours, theirs = L.IntegerLookup(**kwargs), tfk.layers.IntegerLookup(**kwargs)
    ours.adapt(data)
    theirs.adapt(data)
    got, want = ours(x), theirs(x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert ours.get_vocabulary() == [int(v) for v in theirs.get_vocabulary()]
    assert ours.get_vocabulary(include_special_tokens=False) == [
        int(v) for v in theirs.get_vocabulary(include_special_tokens=False)]
    assert ours.vocabulary_size() == theirs.vocabulary_size()
    assert _config(ours.get_config()) == _config(theirs.get_config())
    ds = L.IntegerLookup(**kwargs)
    ds.adapt(ig.data.Dataset.from_tensor_slices(data).batch(8))
    assert ds.get_vocabulary() == ours.get_vocabulary()


@pytest.mark.parametrize("kwargs", [
    dict(vocabulary=[5, 3, 9]), dict(vocabulary=[5, 3, 9], invert=True),
    dict(vocabulary=[5, 3, 9], invert=True, mask_token=0),
    dict(vocabulary=[5, 3, 9], mask_token=0), dict(vocabulary=[0, -1, 5, 3, 9], mask_token=0),
    dict(vocabulary=np.array([7, 8]), num_oov_indices=2, mask_token=-5),
    dict(vocabulary=[5, 3, 9], output_mode="count", mask_token=0),
    dict(vocabulary=[5, 3, 9], output_mode="tf_idf", idf_weights=[0.5, 1.0, 2.0]),
    dict(vocabulary=[-1, 5, 3, 9], output_mode="tf_idf", idf_weights=[0.1, 0.5, 1.0, 2.0]),
    dict(vocabulary=[5, 3, 9], output_mode="multi_hot", max_tokens=8, pad_to_max_tokens=True),
])
def test_integer_lookup_vocabulary_matches_tf_keras_and_numpy(tfk, kwargs):
    x = np.array([[0, 1, 2, 3], [4, 5, 9, 7], [8, 7, -5, 3]])
    ours, theirs = L.IntegerLookup(**kwargs), tfk.layers.IntegerLookup(**kwargs)
    got, want = ours(x), theirs(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    if kwargs.get("output_mode", "int") == "int" and not kwargs.get("invert"):
        vocab = [int(v) for v in np.ravel(kwargs["vocabulary"])]
        mask = kwargs.get("mask_token")
        special = ([mask] if mask is not None else []) + [-1] * kwargs.get("num_oov_indices", 1)
        if vocab[:len(special)] == special:
            vocab = vocab[len(special):]
        np.testing.assert_array_equal(
            got.numpy(), ref.lookup(x, vocab, kwargs.get("num_oov_indices", 1), mask))
    assert ours.get_vocabulary() == [int(v) for v in theirs.get_vocabulary()]
    assert _config(ours.get_config()) == _config(theirs.get_config())
    clone = _round_trip(ours)
    np.testing.assert_allclose(clone(x).numpy(), got.numpy())


def test_integer_lookup_tf_idf_adapt_and_vocabulary_file(tfk, tmp_path):
    data = np.array([[1, 2, 3], [3, 4, 5], [1, 6, 2]])
    ours, theirs = L.IntegerLookup(output_mode="tf_idf"), tfk.layers.IntegerLookup(
        output_mode="tf_idf")
    ours.adapt(data)
    theirs.adapt(data)
    np.testing.assert_allclose(ours(data).numpy(), theirs(data).numpy(), rtol=1e-6)
    path = tmp_path / "vocab.txt"
    path.write_text("7\n3\n11\n")
    ours, theirs = L.IntegerLookup(vocabulary=str(path)), tfk.layers.IntegerLookup(
        vocabulary=str(path))
    x = np.array([3, 7, 11, 4])
    np.testing.assert_array_equal(ours(x).numpy(), theirs(x).numpy())
    assert ours.get_vocabulary() == [int(v) for v in theirs.get_vocabulary()]
    ours.set_vocabulary([4, 3])
    np.testing.assert_array_equal(ours(x).numpy(), [2, 0, 0, 1])


@pytest.mark.parametrize("kwargs,match", [
    (dict(vocabulary=[1, 2, 2]), "at least one repeated term"),
    (dict(vocabulary=[]), "Cannot set an empty vocabulary"),
    (dict(vocabulary=[1, 0, 2], mask_token=0), "reserved mask token"),
    (dict(vocabulary=[1, -1, 2], invert=True), "reserved OOV token"),
    (dict(vocabulary=[1, 2, 3], max_tokens=3), "larger than the maximum vocab size"),
    (dict(vocabulary_dtype="float32"), "must be an integer dtype"),
    (dict(vocabulary="/nonexistent/vocab.txt"), "does not exist"),
    (dict(invert=True, output_mode="count"), "must be `'int'` when `invert`"),
    (dict(pad_to_max_tokens=True), "must set `max_tokens`"),
    (dict(num_oov_indices=-1), "must >= 0"),
    (dict(max_tokens=1), "must be greater than 1"),
    (dict(idf_weights=[1.0]), "should only be set if"),
    (dict(output_mode="bad"), "Unkown value for `output_mode`"),
    (dict(sparse=True), "`sparse` may only be true"),
])
def test_integer_lookup_errors_as_tf_keras(tfk, kwargs, match):
    for lib in (tfk.layers, L):
        with pytest.raises(ValueError, match=match):
            lib.IntegerLookup(**kwargs)


def test_integer_lookup_call_errors(tfk):
    with pytest.raises(InvalidArgumentError, match="all inputs should be in vocabulary"):
        L.IntegerLookup(vocabulary=[1, 2, 3], num_oov_indices=0)(np.array([1, 5]))
    for lib in (tfk.layers, L):
        with pytest.raises(RuntimeError, match="must set the layer's vocabulary"):
            lib.IntegerLookup(output_mode="multi_hot")(np.array([1, 5]))
    with pytest.raises(ValueError, match="Cannot adapt IntegerLookup"):
        L.IntegerLookup(vocabulary=[1, 2]).adapt(np.array([1, 5]))
    layer = L.IntegerLookup(vocabulary=[1, 2], output_mode="count")
    layer(np.array([[1]]))
    with pytest.raises(RuntimeError, match="vocabulary size cannot be changed"):
        layer.set_vocabulary([1, 2, 3])


# ---- namespaces, models, tf.data --------------------------------------------------------
def test_experimental_preprocessing_namespace(tfk):
    pre = keras.layers.experimental.preprocessing
    for name in ("Normalization", "Discretization", "CategoryEncoding", "Hashing",
                 "IntegerLookup", "Rescaling", "PreprocessingLayer"):
        assert getattr(pre, name) is getattr(L.preprocessing, name)
        assert hasattr(tfk.layers.experimental.preprocessing, name)
    assert pre.Normalization is L.Normalization
    assert issubclass(L.Normalization, pre.PreprocessingLayer)


def test_normalization_in_a_sequential_model_with_fit(tfk):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((64, 3)) * [1, 10, 100] + [0, 5, -50]).astype(np.float32)
    y = (x[:, :1] / 1 + x[:, 1:2] / 10 > 0.5).astype(np.float32)
    norm = L.Normalization()
    norm.adapt(x)
    theirs_norm = tfk.layers.Normalization()
    theirs_norm.adapt(x)
    ours = keras.Sequential([keras.Input((3,)), norm, L.Dense(1, activation="sigmoid")])
    theirs = tfk.Sequential([tfk.Input((3,)), theirs_norm,
                             tfk.layers.Dense(1, activation="sigmoid")])
    theirs.layers[-1].set_weights(ours.layers[-1].get_weights())
    for model, lib in ((ours, keras), (theirs, tfk)):
        model.compile(lib.optimizers.legacy.SGD(0.5) if lib is tfk else lib.optimizers.SGD(0.5),
                      "binary_crossentropy")
    h1 = ours.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    h2 = theirs.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-4)
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-4, atol=1e-6)
    assert [w.name for w in ours.non_trainable_weights] == ["mean:0", "variance:0", "count:0"]


def test_categorical_layers_in_a_functional_model_and_tf_data(tfk):
    lookup = L.IntegerLookup(vocabulary=[10, 20, 30])
    encode = L.CategoryEncoding(num_tokens=4, output_mode="multi_hot")
    inputs = keras.Input((2,), dtype="int64")
    outputs = L.Dense(1)(encode(lookup(inputs)))
    model = keras.Model(inputs, outputs)
    assert model.layers[2].output_shape == (None, 4)
    x = np.array([[10, 30], [20, 99], [30, 30]])
    kernel, bias = model.layers[-1].get_weights()
    np.testing.assert_allclose(model.predict(x, verbose=0),
                               ref.encode(ref.lookup(x, [10, 20, 30], 1), 4, "multi_hot")
                               @ kernel + bias, rtol=1e-5)
    hashing = L.Hashing(num_bins=5, output_mode="one_hot")
    ds = ig.data.Dataset.from_tensor_slices(x[:, 0]).map(lambda v: hashing(v))
    want = tfk.layers.Hashing(num_bins=5, output_mode="one_hot")(x[:, 0]).numpy()
    np.testing.assert_array_equal(np.stack([e.numpy() for e in ds]), want)
    disc = L.Discretization(bin_boundaries=[0.0, 1.0])
    ds = ig.data.Dataset.from_tensor_slices(np.array([-1.0, 0.5, 3.0], np.float32)).batch(2)
    np.testing.assert_array_equal(np.concatenate([e.numpy() for e in ds.map(disc)]),
                                  [0, 1, 2])


def test_layers_on_tf1_graph_tensors():
    import ipu_gpu.compat.v1 as v1

    ids = np.array([[10, 30, 5], [20, 20, 10]])
    values = np.array([[-1.0, 0.5], [2.0, 0.0]], np.float32)
    eager = [L.IntegerLookup(vocabulary=[10, 20, 30]), L.Hashing(4, salt=3),
             L.Discretization([0.0, 1.0]), L.Normalization(mean=1.0, variance=4.0)]
    with v1.Graph().as_default():
        x = v1.placeholder("int64", [None, 3])
        v = v1.placeholder("float32", [None, 2])
        outputs = [L.IntegerLookup(vocabulary=[10, 20, 30])(x), L.Hashing(4, salt=3)(x),
                   L.Discretization([0.0, 1.0])(v), L.Normalization(mean=1.0, variance=4.0)(v)]
        counts = L.CategoryEncoding(4, output_mode="count")(outputs[0])
        assert counts.shape.as_list() == [None, 4]
        with v1.Session() as sess:
            got = sess.run(outputs + [counts], {x: ids, v: values})
    for layer, out, arg in zip(eager, got, (ids, ids, values, values)):
        np.testing.assert_allclose(out, layer(arg).numpy(), rtol=1e-6)
    np.testing.assert_array_equal(got[-1], ref.encode(ref.lookup(ids, [10, 20, 30], 1), 4,
                                                      "count"))


def test_vectorised_hashes_equal_the_scalar_ones_and_tf(real_tf):
    from ipu_gpu.keras.layers.preprocessing.string_hash import (fingerprint64_ints, siphash24,
                                                                 siphash24_ints)
    rng = np.random.default_rng(5)
    values = np.concatenate([
        np.arange(-1100, 1100), rng.integers(-2 ** 63, 2 ** 63 - 1, 3000, dtype=np.int64),
        [2 ** 63 - 1, -2 ** 63, 10 ** 7, -10 ** 7, 10 ** 15, 10 ** 16, -10 ** 18]]).astype(np.int64)
    strings = [str(int(v)).encode() for v in values]
    np.testing.assert_array_equal(fingerprint64_ints(values).tolist(),
                                  [fingerprint64(s) for s in strings])
    np.testing.assert_array_equal(siphash24_ints(7, 2 ** 63 + 9, values).tolist(),
                                  [siphash24(7, 2 ** 63 + 9, s) for s in strings])
    bins = 2 ** 62
    np.testing.assert_array_equal(
        (fingerprint64_ints(values) % np.uint64(bins)).astype(np.int64),
        real_tf.strings.to_hash_bucket_fast(real_tf.strings.as_string(values), bins).numpy())
    np.testing.assert_array_equal(
        (siphash24_ints(7, 9, values) % np.uint64(bins)).astype(np.int64),
        real_tf.strings.to_hash_bucket_strong(real_tf.strings.as_string(values), bins,
                                              key=[7, 9]).numpy())


def test_normalization_adapt_without_reset_accumulates():
    """Keras 2.6's ``adapt(..., reset_state=False)`` folds new data into the statistics."""
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(40, 2)), rng.normal(3, 2, size=(24, 2))
    layer = L.Normalization()
    layer.adapt(a)
    layer.adapt(b, reset_state=False)
    both = np.concatenate([a, b])
    np.testing.assert_allclose(layer.mean.numpy().ravel(), both.mean(0), rtol=1e-5)
    np.testing.assert_allclose(layer.variance.numpy().ravel(), both.var(0), rtol=1e-5)
    layer.adapt(b)  # reset by default
    np.testing.assert_allclose(layer.mean.numpy().ravel(), b.mean(0), rtol=1e-5)
