"""MNIST handwritten digits (``keras.datasets.mnist``)."""

from __future__ import annotations

import numpy as np

from ..utils.data_utils import get_file

_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
_SHA256 = "731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1"


def load_data(path: str = "mnist.npz"):
    """Loads MNIST from the Keras cache (``<cache>/datasets/mnist.npz``; never downloads).

    Args:
      path: the file's name under the cache's ``datasets`` folder.

    Returns:
      ``(x_train, y_train), (x_test, y_test)``: uint8 arrays of shapes (60000, 28, 28),
      (60000,), (10000, 28, 28), (10000,) for the real file.

    Raises:
      utils.data_utils.CacheMissError: the file is not cached (the message says where to
        put it); ValueError: the cached file is not the one Keras downloads (sha256).
    """
    path = get_file(path, origin=_ORIGIN, file_hash=_SHA256)
    with np.load(path, allow_pickle=False) as f:
        return (f["x_train"], f["y_train"]), (f["x_test"], f["y_test"])
