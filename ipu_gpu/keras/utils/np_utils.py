"""``keras.utils.to_categorical`` (Keras 2.6's keras/utils/np_utils.py semantics)."""

from __future__ import annotations

import numpy as np


def to_categorical(y, num_classes: int | None = None, dtype="float32") -> np.ndarray:
    """Converts a class vector (integers) to a one-hot class matrix.

    Args:
      y: array-like of class ids from 0 to ``num_classes - 1`` (a Tensor or array of any
        shape; floats are truncated to int, as Keras's ``np.array(y, dtype='int')``). A
        trailing axis of size 1 is dropped: labels of shape ``(n, 1)`` give ``(n, classes)``.
      num_classes: the number of classes; None (or 0) means ``max(y) + 1``.
      dtype: the output dtype, ``"float32"`` by default.

    Returns:
      A numpy array of shape ``y.shape + (num_classes,)`` (less the trailing 1).

    Raises:
      IndexError: a class id >= ``num_classes`` (numpy's indexing error, as Keras). As in
        Keras, a negative id ``-k`` sets column ``num_classes - k``.
      ValueError: an empty ``y`` without ``num_classes``.

    Keras 3 returns float64 and has no ``dtype`` argument; this is Keras 2's function.
    """
    y = np.array(y, dtype="int")  # a GPU Tensor syncs the device here
    input_shape = y.shape
    if input_shape and input_shape[-1] == 1 and len(input_shape) > 1:
        input_shape = tuple(input_shape[:-1])
    y = y.ravel()
    if not num_classes:
        num_classes = np.max(y) + 1
    n = y.shape[0]
    categorical = np.zeros((n, num_classes), dtype=dtype)
    categorical[np.arange(n), y] = 1
    return np.reshape(categorical, input_shape + (num_classes,))
