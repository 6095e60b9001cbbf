"""What CIFAR10 and CIFAR100 share: reading one pickled batch, finding the data folder."""

from __future__ import annotations

import os

import numpy as np

from ..utils import data_utils
from . import _unpickle


def load_batch(fpath, label_key: str = "labels") -> tuple[np.ndarray, list]:
    """One CIFAR batch file: ``(data, labels)``, data uint8 ``(n, 3, 32, 32)`` and labels
    the list stored under ``label_key`` (Keras's ``keras.datasets.cifar.load_batch``)."""
    with open(fpath, "rb") as f:
        d = _unpickle.load(f, encoding="bytes")
    d = {k.decode("utf8"): v for k, v in d.items()}
    data = d["data"]
    return data.reshape(data.shape[0], 3, 32, 32), d[label_key]


def find_folder(dirname: str, origin: str, file_hash: str) -> str:
    """The extracted ``dirname`` folder in the Keras cache (Keras 2.6's
    ``get_file(dirname, untar=True)``: ``<dirname>.tar.gz`` or its extracted folder).

    Keras >= 3.6 caches the same archive as ``<dirname>-target_archive``, extracted under
    ``<dirname>-target/``; a cache Keras 3 filled is read too. The error for a missing
    archive names Keras 2's place.
    """
    try:
        return data_utils.get_file(dirname, origin=origin, untar=True, file_hash=file_hash)
    except data_utils.CacheMissError:
        for datadir in data_utils.cache_dirs():
            target = os.path.join(datadir, f"{dirname}-target")
            archive, folder = target + "_archive", os.path.join(target, dirname)
            if os.path.isfile(archive):
                data_utils._check_hash(archive, file_hash, "auto", origin)
                if not os.path.isdir(folder):
                    data_utils._extract_once(archive, target, folder)
            if os.path.isdir(folder):
                return folder
        raise
