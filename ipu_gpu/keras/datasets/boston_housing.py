"""Boston housing prices (``keras.datasets.boston_housing``)."""

from __future__ import annotations

import numpy as np

from ..utils.data_utils import get_file

_ORIGIN = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/boston_housing.npz"
_SHA256 = "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5"


def load_data(path: str = "boston_housing.npz", test_split: float = 0.2, seed: int = 113):
    """Loads the Boston housing data from the Keras cache (never downloads).

    Args:
      path: the file's name under the cache's ``datasets`` folder.
      test_split: the fraction of the (shuffled) samples kept for testing, in [0, 1).
      seed: the shuffle's seed (``np.random.RandomState``).

    Returns:
      ``(x_train, y_train), (x_test, y_test)``: float64 arrays, x of shape (n, 13).

    Raises:
      ValueError: ``test_split`` outside [0, 1). Keras 2.6 asserted it (AssertionError,
        and no check at all under ``python -O``); Keras 3 raises ValueError, as we do.
      utils.data_utils.CacheMissError: the file is not cached.
    """
    if not 0 <= test_split < 1:
        raise ValueError(f"boston_housing.load_data: test_split must be in [0, 1), "
                         f"got {test_split}")
    path = get_file(path, origin=_ORIGIN, file_hash=_SHA256)
    with np.load(path, allow_pickle=False) as f:
        x, y = f["x"], f["y"]
    indices = np.arange(len(x))
    np.random.RandomState(seed).shuffle(indices)
    x, y = x[indices], y[indices]
    split = int(len(x) * (1 - test_split))
    return (np.array(x[:split]), np.array(y[:split])), (np.array(x[split:]), np.array(y[split:]))
