"""IMDB movie-review sentiment (``keras.datasets.imdb``)."""

from __future__ import annotations

import json
import logging

import numpy as np

from ..utils.data_utils import get_file
from . import _unpickle

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_SHA256 = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
_WORD_INDEX_MD5 = "bfafd718b763782e994055a2d397834f"


def load_data(path: str = "imdb.npz", num_words: int | None = None, skip_top: int = 0,
              maxlen: int | None = None, seed: int = 113, start_char: int | None = 1,
              oov_char: int | None = 2, index_from: int = 3, **kwargs):
    """Loads the IMDB reviews from the Keras cache (``<cache>/datasets/imdb.npz``; never
    downloads), shuffled and re-indexed as Keras does.

    Args:
      path: the file's name under the cache's ``datasets`` folder.
      num_words: keep word ids below this (after ``index_from`` is added); None or 0: all.
      skip_top: word ids below this become ``oov_char`` too.
      maxlen: drop sequences of ``maxlen`` or more ids (``start_char`` included); None or
        0: keep all.
      seed: the shuffle's seed (``np.random.RandomState``; train, then test).
      start_char: an id put before every sequence; None: none.
      oov_char: the id replacing words cut by ``num_words``/``skip_top``; None: drop them.
      index_from: added to every word id.
      **kwargs: only the legacy ``nb_words`` (= ``num_words``, with a logged warning).

    Returns:
      ``(x_train, y_train), (x_test, y_test)``: x are object arrays of lists of ints (a 2-D
      object array when every sequence has the same length, as ``np.array`` makes it), y
      the stored labels' dtype (int64 for the real file).

    Raises:
      TypeError: an unknown keyword argument.
      ValueError: ``maxlen`` so small that no training or test sequence is left.
      utils.data_utils.CacheMissError: the file is not cached.

    Difference from Keras 2.6: with ``start_char=None`` and ``index_from=0`` Keras 2.6 added
    the train and test object arrays elementwise (a broadcast error, or each review glued to
    another); we keep the reviews as they are, as Keras 3 does.
    """
    if "nb_words" in kwargs:
        logging.getLogger(__name__).warning(
            "The `nb_words` argument in `load_data` has been renamed `num_words`.")
        num_words = kwargs.pop("nb_words")
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments: {kwargs}")
    path = get_file(path, origin=_BASE + "imdb.npz", file_hash=_SHA256)
    f = _unpickle.load_npz(path)
    x_train, labels_train = f["x_train"], f["y_train"]
    x_test, labels_test = f["x_test"], f["y_test"]

    rng = np.random.RandomState(seed)
    indices = np.arange(len(x_train))
    rng.shuffle(indices)
    x_train, labels_train = x_train[indices], labels_train[indices]
    indices = np.arange(len(x_test))
    rng.shuffle(indices)
    x_test, labels_test = x_test[indices], labels_test[indices]

    start = [] if start_char is None else [start_char]
    x_train = [start + [w + index_from for w in x] for x in x_train]
    x_test = [start + [w + index_from for w in x] for x in x_test]

    if maxlen:
        x_train, labels_train = _remove_long_seq(maxlen, x_train, labels_train)
        x_test, labels_test = _remove_long_seq(maxlen, x_test, labels_test)
        if not x_train or not x_test:
            raise ValueError(f"After filtering for sequences shorter than maxlen={maxlen}, "
                             f"no sequence was kept. Increase maxlen.")

    xs = x_train + x_test
    labels = np.concatenate([labels_train, labels_test])
    if not num_words:
        num_words = max(max(x) for x in xs)
    # Keras's convention: 0 pads, 1 starts, 2 is out-of-vocabulary; words from index_from.
    if oov_char is not None:
        xs = [[w if skip_top <= w < num_words else oov_char for w in x] for x in xs]
    else:
        xs = [[w for w in x if skip_top <= w < num_words] for x in xs]
    idx = len(x_train)
    return ((np.array(xs[:idx], dtype="object"), labels[:idx]),
            (np.array(xs[idx:], dtype="object"), labels[idx:]))


def get_word_index(path: str = "imdb_word_index.json") -> dict[str, int]:
    """The word -> index dict of the IMDB data, from ``<cache>/datasets/<path>`` (the
    indices in ``load_data``'s sequences are these plus ``index_from``)."""
    path = get_file(path, origin=_BASE + "imdb_word_index.json", file_hash=_WORD_INDEX_MD5)
    with open(path) as f:
        return json.load(f)


def _remove_long_seq(maxlen: int, seq: list, label) -> tuple[list, list]:
    """The sequences shorter than ``maxlen`` and their labels (Keras's rule: strictly
    shorter)."""
    kept = [(x, y) for x, y in zip(seq, label) if len(x) < maxlen]
    return [x for x, _ in kept], [y for _, y in kept]
