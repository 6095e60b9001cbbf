"""Fashion-MNIST (``keras.datasets.fashion_mnist``)."""

from __future__ import annotations

import gzip
import os

import numpy as np

from ..utils.data_utils import CacheMissError, get_file

_BASE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_FILES = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
          "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")


def load_data():
    """Loads Fashion-MNIST from the Keras cache (four IDX files gzipped, in
    ``<cache>/datasets/fashion-mnist/``; never downloads).

    Returns:
      ``(x_train, y_train), (x_test, y_test)``: uint8 arrays of shapes (60000, 28, 28),
      (60000,), (10000, 28, 28), (10000,) for the real files; read-only, as Keras's
      (``np.frombuffer``).

    Raises:
      utils.data_utils.CacheMissError: one or more files are not cached; the message lists
        every missing file with its URL and destination.
    """
    subdir = os.path.join("datasets", "fashion-mnist")
    paths, missing = [], []
    for fname in _FILES:
        try:
            paths.append(get_file(fname, origin=_BASE + fname, cache_subdir=subdir))
        except CacheMissError as e:
            missing.append(e)
    if len(missing) > 1:  # one error for all the files to fetch, not one per attempt
        raise CacheMissError(
            "fashion_mnist.load_data: these files are not in the Keras cache, and ipu_gpu "
            "never downloads. Download each on a machine with network access and save it "
            "as shown:\n" + "\n".join(f"  {e.origin} -> {e.destination}" for e in missing),
            fname=missing[0].fname, origin=missing[0].origin,
            destination=missing[0].destination)
    if missing:
        raise missing[0]
    y_train = _read_idx(paths[0], offset=8)
    x_train = _read_idx(paths[1], offset=16).reshape(len(y_train), 28, 28)
    y_test = _read_idx(paths[2], offset=8)
    x_test = _read_idx(paths[3], offset=16).reshape(len(y_test), 28, 28)
    return (x_train, y_train), (x_test, y_test)


def _read_idx(path: str, offset: int) -> np.ndarray:
    """The uint8 payload of a gzipped IDX file after its ``offset``-byte header."""
    with gzip.open(path, "rb") as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)
