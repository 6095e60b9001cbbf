"""CIFAR10 small images (``keras.datasets.cifar10``)."""

from __future__ import annotations

import os

import numpy as np

from .._config import image_data_format
from .cifar import find_folder, load_batch

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
_SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"


def load_data():
    """Loads CIFAR10 from the Keras cache (never downloads): the folder
    ``<cache>/datasets/cifar-10-batches-py``, or the archive ``cifar-10-batches-py.tar.gz``
    next to it, extracted on first use (a cache filled by Keras >= 3.6 works too).

    Returns:
      ``(x_train, y_train), (x_test, y_test)``: uint8 arrays of shapes (50000, 32, 32, 3),
      (50000, 1), (10000, 32, 32, 3), (10000, 1) for the real data, channels first
      ((n, 3, 32, 32)) when keras.json's ``image_data_format`` says so. As Keras's, the
      images are transposed views.

    Raises:
      utils.data_utils.CacheMissError: neither the folder nor the archive is cached;
      ValueError: the cached archive is not the one Keras downloads (sha256).
    """
    path = find_folder("cifar-10-batches-py", _ORIGIN, _SHA256)
    # Keras fills fixed (50000, ...) arrays 10000 rows a batch; concatenating gives the same
    # arrays and dtypes for the real files and still works for batches of other sizes.
    batches = [load_batch(os.path.join(path, f"data_batch_{i}")) for i in range(1, 6)]
    x_train = np.concatenate([x for x, _ in batches]).astype("uint8", copy=False)
    y_train = np.concatenate([np.asarray(y) for _, y in batches]).astype("uint8")
    x_test, y_test = load_batch(os.path.join(path, "test_batch"))
    y_train = np.reshape(y_train, (len(y_train), 1))
    y_test = np.reshape(y_test, (len(y_test), 1))
    if image_data_format() == "channels_last":
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test.astype(x_train.dtype), y_test.astype(y_train.dtype))
