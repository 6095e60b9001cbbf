"""CIFAR100 small images (``keras.datasets.cifar100``)."""

from __future__ import annotations

import os

import numpy as np

from .._config import image_data_format
from .cifar import find_folder, load_batch

_ORIGIN = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
_SHA256 = "85cd44d02ba6437773c5bbd22e183051d648de2e7d6b014e1ef29b855ba677a7"


def load_data(label_mode: str = "fine"):
    """Loads CIFAR100 from the Keras cache (never downloads): the folder
    ``<cache>/datasets/cifar-100-python``, or the archive ``cifar-100-python.tar.gz`` next
    to it, extracted on first use (a cache filled by Keras >= 3.6 works too).

    Args:
      label_mode: ``"fine"`` (100 classes) or ``"coarse"`` (20 superclasses).

    Returns:
      ``(x_train, y_train), (x_test, y_test)``: uint8 images of shapes (50000, 32, 32, 3)
      and (10000, 32, 32, 3) for the real data (channels first when keras.json says so;
      transposed views, as Keras's), int64 labels of shapes (50000, 1) and (10000, 1)
      (Keras leaves CIFAR100's labels int64, unlike CIFAR10's uint8).

    Raises:
      ValueError: an unknown ``label_mode``; a cached archive that is not Keras's (sha256).
      utils.data_utils.CacheMissError: neither the folder nor the archive is cached.
    """
    if label_mode not in ("fine", "coarse"):
        raise ValueError(f'cifar100.load_data: label_mode must be one of "fine", "coarse", '
                         f"got {label_mode!r}")
    path = find_folder("cifar-100-python", _ORIGIN, _SHA256)
    x_train, y_train = load_batch(os.path.join(path, "train"), label_key=f"{label_mode}_labels")
    x_test, y_test = load_batch(os.path.join(path, "test"), label_key=f"{label_mode}_labels")
    y_train = np.reshape(y_train, (len(y_train), 1))
    y_test = np.reshape(y_test, (len(y_test), 1))
    if image_data_format() == "channels_last":
        x_train = x_train.transpose(0, 2, 3, 1)
        x_test = x_test.transpose(0, 2, 3, 1)
    return (x_train, y_train), (x_test, y_test)
