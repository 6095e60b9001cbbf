"""StringLookup, TextVectorization and Hashing of strings against tf-keras."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import errors

L = tf.keras.layers
rtf = RL = None  # real TensorFlow and tf-keras's layers, set by the fixture below


@pytest.fixture(autouse=True, scope="module")
def _oracles(real_tf):
    global rtf, RL
    rtf, RL = real_tf, pytest.importorskip("tf_keras").layers

TOKENS = np.array([["a", "b", "c"], ["b", "b", "d"], ["e", "", "a"]])
CORPUS = np.array(["The cat sat on the mat.", "The dog, the CAT!", "", "Élan vital; élan",
                   "a  b   c a", "x-ray: 3.5 [ok] {fine}"])


def _np(x):
    return np.asarray(x.numpy())


def _same(ours, theirs, rtol=1e-6):
    o, t = _np(ours), _np(theirs)
    assert o.shape == t.shape, (o.shape, t.shape)
    assert o.dtype == t.dtype, (o.dtype, t.dtype)
    if o.dtype.kind == "f":
        np.testing.assert_allclose(o, t, rtol=rtol)
    else:
        np.testing.assert_array_equal(o, t)


def _vocab(v):
    return [str(t) for t in v]


def _pair(name, data, **kwargs):
    ours, theirs = getattr(L, name)(**kwargs), getattr(RL, name)(**kwargs)
    if data is not None:
        ours.adapt(data)
        theirs.adapt(data)
    return ours, theirs


@pytest.mark.parametrize("kwargs", [
    {}, {"mask_token": ""}, {"max_tokens": 4}, {"num_oov_indices": 3},
    {"num_oov_indices": 0, "max_tokens": 40}, {"oov_token": "?"},
    {"output_mode": "multi_hot"}, {"output_mode": "count"}, {"output_mode": "one_hot"},
])
def test_string_lookup_adapt_matches_tf_keras(kwargs):
    data = TOKENS if kwargs.get("output_mode") != "one_hot" else TOKENS.reshape(-1)
    ours, theirs = _pair("StringLookup", data, **kwargs)
    assert _vocab(ours.get_vocabulary()) == _vocab(theirs.get_vocabulary())
    assert ours.vocabulary_size() == theirs.vocabulary_size()
    _same(ours(data), theirs(data))


def test_string_lookup_vocabulary_oov_hashing_and_invert():
    ours, theirs = _pair("StringLookup", None, vocabulary=["a"], num_oov_indices=3)
    _same(ours(TOKENS), theirs(TOKENS))
    ours, theirs = _pair("StringLookup", None, vocabulary=["a", "b", "c"], invert=True)
    idx = np.array([[1, 2, 0, 3]])
    _same(ours(idx), theirs(idx))
    ours, theirs = _pair("StringLookup", None, vocabulary=["a", "b", "c"])
    _same(ours(tf.constant(["c", "zz", "a"])), theirs(rtf.constant(["c", "zz", "a"])))
    assert ours.get_vocabulary(include_special_tokens=False) == ["a", "b", "c"]


def test_string_lookup_tf_idf_matches_tf_keras():
    data = np.array(["a", "b", "b", "c", "a", "d"])
    ours, theirs = _pair("StringLookup", data, output_mode="tf_idf")
    _same(ours(data), theirs(data))


def test_string_lookup_errors_and_config():
    with pytest.raises(errors.InvalidArgumentError):
        L.StringLookup(vocabulary=["a"], num_oov_indices=0)(tf.constant(["b"]))
    with pytest.raises(ValueError, match="repeated term"):
        L.StringLookup(vocabulary=["a", "a"])
    layer = L.StringLookup(vocabulary=["a", "b"])
    with pytest.raises(ValueError, match="Cannot adapt"):
        layer.adapt(TOKENS)
    ref = RL.StringLookup(vocabulary=["a", "b"]).get_config()
    config = layer.get_config()
    for key, value in ref.items():
        if key != "name":
            assert config[key] == (list(value) if key == "vocabulary" else value), key
    clone = L.StringLookup.from_config(config)
    _same(clone(TOKENS), layer(TOKENS))


@pytest.mark.parametrize("kwargs", [
    {}, {"output_sequence_length": 4}, {"output_sequence_length": 12}, {"max_tokens": 5},
    {"output_mode": "multi_hot"}, {"output_mode": "count"}, {"output_mode": "tf_idf"},
    {"ngrams": 2}, {"ngrams": (2, 3), "output_mode": "count"},
    {"split": "character", "standardize": "lower"}, {"standardize": None},
    {"standardize": "strip_punctuation"}, {"split": None},
    {"split": None, "output_mode": "multi_hot"},
    {"max_tokens": 10, "pad_to_max_tokens": True, "output_mode": "count"},
])
def test_text_vectorization_matches_tf_keras(kwargs):
    ours, theirs = _pair("TextVectorization", CORPUS, **kwargs)
    assert _vocab(ours.get_vocabulary()) == _vocab(theirs.get_vocabulary())
    _same(ours(CORPUS), theirs(CORPUS), rtol=1e-5)
    if "split" not in kwargs:
        _same(ours(CORPUS.reshape(-1, 1)), theirs(CORPUS.reshape(-1, 1)), rtol=1e-5)


def test_text_vectorization_vocabulary_ragged_and_dataset():
    ours, theirs = _pair("TextVectorization", None, vocabulary=["cat", "the", "dog"])
    _same(ours(CORPUS), theirs(CORPUS))
    ours, theirs = _pair("TextVectorization", CORPUS, ragged=True)
    assert ours(CORPUS).to_list() == theirs(CORPUS).to_list()
    ours, theirs = L.TextVectorization(max_tokens=6), RL.TextVectorization(max_tokens=6)
    ours.adapt(tf.data.Dataset.from_tensor_slices(CORPUS).batch(2))
    theirs.adapt(rtf.data.Dataset.from_tensor_slices(CORPUS).batch(2))
    _same(ours(CORPUS), theirs(CORPUS))


def test_text_vectorization_callables():
    def standardize(x):
        return tf.strings.regex_replace(tf.strings.lower(x), "[aeiou]", "")

    def rstandardize(x):
        return rtf.strings.regex_replace(rtf.strings.lower(x), "[aeiou]", "")

    ours = L.TextVectorization(standardize=standardize, split=lambda x: tf.strings.split(x, ","))
    theirs = RL.TextVectorization(standardize=rstandardize,
                                  split=lambda x: rtf.strings.split(x, ","))
    ours.adapt(CORPUS)
    theirs.adapt(CORPUS)
    assert _vocab(ours.get_vocabulary()) == _vocab(theirs.get_vocabulary())
    _same(ours(CORPUS), theirs(CORPUS))


def test_text_vectorization_errors():
    with pytest.raises(ValueError, match="output_sequence_length"):
        L.TextVectorization(output_mode="multi_hot", output_sequence_length=3)
    with pytest.raises(ValueError, match="ragged"):
        L.TextVectorization(output_mode="count", ragged=True)
    with pytest.raises(ValueError, match="ngrams"):
        L.TextVectorization(ngrams="2")
    with pytest.raises(ValueError, match="split"):
        L.TextVectorization(split="comma")
    with pytest.raises(ValueError, match="input rank must be 1"):
        layer = L.TextVectorization(vocabulary=["a"])
        layer(np.array([["a", "b"]]))
    with pytest.raises(RuntimeError, match="vocabulary"):
        L.TextVectorization(output_mode="multi_hot")(CORPUS)


def test_text_vectorization_in_a_model_fit():
    """A text classifier (TextVectorization -> Embedding -> pooling -> Dense) trains on
    strings: the vectorizer runs on the host before the trainable layers."""
    tf.keras.utils.set_random_seed(0)
    vec = L.TextVectorization(max_tokens=20, output_sequence_length=6)
    vec.adapt(CORPUS)
    model = tf.keras.Sequential([
        L.Embedding(20, 4), L.GlobalAveragePooling1D(), L.Dense(1, activation="sigmoid")])
    x = vec(CORPUS)
    y = np.array([1, 1, 0, 0, 1, 0], np.float32)
    model.compile("adam", "binary_crossentropy")
    history = model.fit(x, y, epochs=3, verbose=0)
    assert len(history.history["loss"]) == 3
    assert np.isfinite(history.history["loss"]).all()


def test_hashing_strings_matches_tf_keras():
    for kwargs in ({"num_bins": 7}, {"num_bins": 7, "salt": [3, 4]}, {"num_bins": 7, "salt": 9},
                   {"num_bins": 5, "mask_value": ""}, {"num_bins": 4, "output_mode": "multi_hot"}):
        data = TOKENS if kwargs.get("output_mode") is None else TOKENS[:, 0]
        _same(L.Hashing(**kwargs)(data), RL.Hashing(**kwargs)(data))
    long = np.array(["x" * 100, "é" * 40, ""])
    _same(L.Hashing(num_bins=1000)(long), RL.Hashing(num_bins=1000)(long))


def test_string_input_model_fit_matches_tf_keras():
    """keras.Input(dtype=string) -> TextVectorization -> Embedding -> pooling -> Dense, fitted
    on numpy text with identical initial weights: the same losses and weights as tf-keras."""
    corpus = CORPUS.reshape(-1, 1)
    y = np.array([1, 1, 0, 0, 1, 0], np.float32)

    import tf_keras

    def build(keras, layers, vec, string):
        inp = keras.Input(shape=(1,), dtype=string)
        x = vec(inp)
        x = layers.Embedding(12, 4)(x)
        x = layers.GlobalAveragePooling1D()(x)
        out = layers.Dense(1, activation="sigmoid")(x)
        return inp, out

    vec, rvec = L.TextVectorization(max_tokens=12, output_sequence_length=5), \
        RL.TextVectorization(max_tokens=12, output_sequence_length=5)
    vec.adapt(CORPUS)
    rvec.adapt(CORPUS)
    model = tf.keras.Model(*build(tf.keras, L, vec, tf.string))
    ref = tf_keras.Model(*build(tf_keras, RL, rvec, rtf.string))
    for ours_layer, ref_layer in zip(model.layers[2:], ref.layers[2:]):  # Embedding, ..., Dense
        ref_layer.set_weights(ours_layer.get_weights())
    model.compile(tf.keras.optimizers.SGD(0.5), "binary_crossentropy")
    ref.compile(tf_keras.optimizers.legacy.SGD(0.5), "binary_crossentropy")
    ours = model.fit(corpus, y, batch_size=3, epochs=3, shuffle=False, verbose=0)
    theirs = ref.fit(corpus, y, batch_size=3, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(ours.history["loss"], theirs.history["loss"], rtol=1e-5)
    for ours_layer, ref_layer in zip(model.layers[2:], ref.layers[2:]):
        for a, b in zip(ours_layer.get_weights(), ref_layer.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.predict(corpus, verbose=0), ref.predict(corpus, verbose=0),
                               rtol=1e-5)


@pytest.mark.parametrize("mode", ["multi_hot", "count", "tf_idf"])
def test_text_vectorization_sparse_matches_tf_keras(mode):
    ours, theirs = _pair("TextVectorization", CORPUS, output_mode=mode, sparse=True)
    o, t = ours(CORPUS), theirs(CORPUS)
    np.testing.assert_array_equal(o.indices.numpy(), t.indices.numpy())
    np.testing.assert_allclose(o.values.numpy(), t.values.numpy(), rtol=1e-5)
    np.testing.assert_array_equal(o.dense_shape.numpy(), t.dense_shape.numpy())
