"""``tf.data.Dataset.list_files``: a dataset of the file names matching glob patterns.

As TF: every pattern's matches, all sorted together (a file matched by two patterns appears
twice); no match at all is TF's ``InvalidArgumentError`` naming the patterns; ``shuffle``
(default True) shuffles the names with a buffer holding them all, with ``seed``. The
patterns are matched when the dataset is made (TF 2's eager behaviour; a TF 1 graph matches
them when its iterator is initialised)."""

from __future__ import annotations

import glob

import numpy as np

from .. import errors
from . import readers

__all__ = ["list_files"]


def _patterns(file_pattern) -> list:
    value = file_pattern.numpy() if hasattr(file_pattern, "numpy") else file_pattern
    items = list(np.asarray(value, dtype=object).reshape(-1)) \
        if isinstance(value, (list, tuple, np.ndarray)) else [value]
    return readers.path_strings(
        items, lambda _: f"Cannot convert {file_pattern!r} to EagerTensor of dtype string")


def list_files(file_pattern, shuffle=None, seed=None, name=None):
    """The names (scalar ``tf.string`` elements) of the files matching ``file_pattern`` (a
    glob pattern, or a list/1-D tensor of them).

    Raises:
      InvalidArgumentError: no file matches (TF's message).
      TypeError: a pattern that is not a string."""
    from .dataset import Dataset

    patterns = _patterns(file_pattern)
    names = sorted(path for p in patterns for path in glob.glob(p))
    if not names:
        raise errors.InvalidArgumentError(
            "Expected 'tf.Tensor(False, shape=(), dtype=bool)' to be true. Summarized data: "
            f"b'No files matched pattern: {', '.join(patterns)}'")
    files = np.empty(len(names), dtype=object)
    files[:] = [n.encode() for n in names]
    dataset = Dataset.from_tensor_slices(files)
    if shuffle is None or shuffle:
        dataset = dataset.shuffle(max(len(names), 1), seed=seed)
    return dataset
