"""keras.preprocessing.sequence.pad_sequences / keras.utils.pad_sequences and
keras.utils.set_random_seed against tf_keras (Keras 2)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import keras
from ipu_gpu.keras import backend, layers, preprocessing, utils


@pytest.fixture(scope="module")
def K(real_tf):
    """tf_keras, imported after the real_tf fixture has configured TensorFlow."""
    return pytest.importorskip("tf_keras")


def _keras_backend(K):
    import tf_keras.src.backend as keras_backend  # the module holding _SEED_GENERATOR

    return keras_backend


SEQS = [[1], [2, 3], [4, 5, 6], [], [7, 8, 9, 10]]


@pytest.mark.parametrize("kwargs", [
    {}, {"maxlen": 2}, {"maxlen": 6}, {"padding": "post"}, {"truncating": "post", "maxlen": 3},
    {"padding": "post", "truncating": "post", "maxlen": 2, "value": -1},
    {"dtype": "float32", "value": 0.5}, {"dtype": "int64", "maxlen": 1},
])
def test_pad_sequences_matches_keras(K, kwargs):
    ours = preprocessing.sequence.pad_sequences(SEQS, **kwargs)
    theirs = K.preprocessing.sequence.pad_sequences(SEQS, **kwargs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    assert utils.pad_sequences is preprocessing.sequence.pad_sequences


def test_pad_sequences_samples_with_shape_and_strings(K):
    seqs = [np.ones((2, 3)), np.arange(9).reshape(3, 3)]
    np.testing.assert_array_equal(utils.pad_sequences(seqs, dtype="float32"),
                                  K.utils.pad_sequences(seqs, dtype="float32"))
    words = [["a", "bb"], ["ccc"]]
    ours = utils.pad_sequences(words, dtype=object, value="")
    np.testing.assert_array_equal(ours, K.utils.pad_sequences(words, dtype=object, value=""))


@pytest.mark.parametrize("args, kwargs, match", [
    ((5,), {}, "must be iterable"),
    (([1, 2],), {}, "list of iterables"),
    ((SEQS,), {"padding": "middle"}, 'Padding type "middle"'),
    ((SEQS,), {"truncating": "middle"}, 'Truncating type "middle"'),
    ((SEQS,), {"value": "x"}, "is not compatible with `value`'s type"),
    (([[[1, 2]], [[1, 2, 3]]],), {}, "is different from expected shape"),
])
def test_pad_sequences_errors_match_keras(K, args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        K.utils.pad_sequences(*args, **kwargs)
    with pytest.raises(ValueError, match=match):
        utils.pad_sequences(*args, **kwargs)


def _draws():
    """Python, numpy and ipu_gpu draws, and the kernel of an unseeded Dense."""
    dense = layers.Dense(4)
    dense.build((None, 3))
    return (random.random(), np.random.random(), tf.random.uniform([3]).numpy(),
            dense.kernel.numpy())


def test_set_random_seed_seeds_everything(K):
    try:
        utils.set_random_seed(1234)
        first = _draws()
        utils.set_random_seed(1234)
        second = _draws()
        assert first[:2] == second[:2]
        for a, b in zip(first[2:], second[2:]):
            np.testing.assert_array_equal(a, b)
        assert backend._SEED_GENERATOR.generator is not None
        K.utils.set_random_seed(1234)  # the same Python and numpy draws as tf_keras's
        assert (random.random(), np.random.random()) == first[:2]
    finally:
        backend._SEED_GENERATOR.generator = None
        _keras_backend(K)._SEED_GENERATOR.generator = None
        tf.random.set_seed(None)


def test_set_random_seed_initializer_weights_match_keras(K):
    """An unseeded initializer after set_random_seed draws its seed from the same generator
    as tf_keras's, so the weights are TF's."""
    try:
        utils.set_random_seed(7)
        ours = keras.initializers.GlorotUniform()((3, 4)).numpy()
        K.utils.set_random_seed(7)
        theirs = K.initializers.GlorotUniform()((3, 4)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    finally:
        backend._SEED_GENERATOR.generator = None
        _keras_backend(K)._SEED_GENERATOR.generator = None
        tf.random.set_seed(None)


def test_set_random_seed_rejects_non_int():
    with pytest.raises(ValueError, match="Expected `seed` argument to be an integer"):
        utils.set_random_seed(1.5)


def test_make_sampling_table_matches_keras(K):
    for size, factor in ((10, 1e-5), (1000, 1e-3)):
        np.testing.assert_array_equal(preprocessing.sequence.make_sampling_table(size, factor),
                                      K.preprocessing.sequence.make_sampling_table(size, factor))


@pytest.mark.parametrize("kwargs", [
    {}, {"window_size": 1, "negative_samples": 0.5, "categorical": True},
    {"shuffle": False, "negative_samples": 0}, {"seed": 3},
])
def test_skipgrams_match_keras_for_the_same_python_seed(K, kwargs):
    sequence = [1, 4, 0, 2, 7, 7, 3, 0, 5]
    table = K.preprocessing.sequence.make_sampling_table(10, 0.5)
    for sampling_table in (None, table):
        random.seed(11)
        ours = preprocessing.sequence.skipgrams(sequence, 10, sampling_table=sampling_table,
                                                **kwargs)
        random.seed(11)
        theirs = K.preprocessing.sequence.skipgrams(sequence, 10,
                                                    sampling_table=sampling_table, **kwargs)
        assert ours == theirs
