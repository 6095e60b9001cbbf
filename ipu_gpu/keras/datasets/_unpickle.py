"""Reading the pickles inside Keras's dataset files without running arbitrary code.

CIFAR batches are pickled dicts of numpy arrays and lists; imdb.npz holds ragged sequences
as object arrays, which numpy stores as pickles. Rebuilding them needs only numpy's array
reconstruction, so every other global a pickle names is refused (Keras 3 does the same;
Keras 2.6 unpickled freely). Files written by numpy 1 (``numpy.core``) and numpy 2
(``numpy._core``) both load, without touching numpy's deprecated ``numpy.core``.
"""

from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np

_RECONSTRUCT = np.empty(0).__reduce__()[0]  # numpy's own array-rebuilding function
_ALLOWED = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
}


class _ArrayOnlyUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing to unpickle {module}.{name} from a Keras dataset file: it holds "
                f"only numpy arrays, so the file is damaged or not what it claims") from None


def load(file, encoding: str = "ASCII"):
    """``pickle.load`` allowing numpy arrays and plain Python values only."""
    return _ArrayOnlyUnpickler(file, encoding=encoding).load()


def load_npz(path) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file; object arrays go through the restricted unpickler."""
    arrays = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            if member.endswith(".npy"):
                arrays[member[: -len(".npy")]] = _read_npy(io.BytesIO(archive.read(member)))
    return arrays


def _read_npy(fp: io.BytesIO) -> np.ndarray:
    version = np.lib.format.read_magic(fp)
    # Version 3.0 differs from 2.0 only in the header's text encoding; an object dtype's
    # header is ASCII, so the 2.0 reader skips it correctly.
    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                   else np.lib.format.read_array_header_2_0)
    _, _, dtype = read_header(fp)
    if dtype.hasobject:
        return load(fp)
    fp.seek(0)
    return np.lib.format.read_array(fp, allow_pickle=False)
