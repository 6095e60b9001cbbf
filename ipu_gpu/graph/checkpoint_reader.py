"""Reading a checkpoint without a graph: ``tf.compat.v1.train.load_checkpoint``,
``NewCheckpointReader``, ``list_variables`` and ``load_variable``, over the checkpoints
``Saver`` writes (``saver.py``'s npz format; a directory means its newest checkpoint)."""

from __future__ import annotations

import os

import numpy as np

from ..errors import NotFoundError
from .saver import latest_checkpoint

__all__ = ["CheckpointReader", "NewCheckpointReader", "list_variables", "load_checkpoint",
           "load_variable"]


class CheckpointReader:
    """The saved values of one checkpoint (TF's ``CheckpointReader``), read once."""

    def __init__(self, prefix: str):
        path = prefix if prefix.endswith(".npz") else prefix + ".npz"
        if not os.path.exists(path):
            raise NotFoundError(f"Unsuccessful TensorSliceReader constructor: Failed to find "
                                f"any matching files for {prefix}")
        with np.load(path) as data:
            self._values = {key: data[key] for key in data.files}

    def get_tensor(self, tensor_str):
        """The saved value of ``tensor_str`` (a numpy array or scalar).

        Raises:
          NotFoundError: no such variable in the checkpoint (TF's message)."""
        if tensor_str not in self._values:
            raise NotFoundError(f"Key {tensor_str} not found in checkpoint")
        value = self._values[tensor_str]
        return value[()] if value.ndim == 0 else value.copy()

    def has_tensor(self, tensor_str) -> bool:
        return tensor_str in self._values

    def get_variable_to_shape_map(self) -> dict:
        return {key: list(v.shape) for key, v in self._values.items()}

    def get_variable_to_dtype_map(self) -> dict:
        from ..core import dtypes

        return {key: dtypes.as_dtype(v.dtype) for key, v in self._values.items()}


def _prefix(ckpt_dir_or_file) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        found = latest_checkpoint(path)
        if found is None:
            raise ValueError(f"Couldn't find 'checkpoint' file or checkpoints in given "
                             f"directory {path}")
        return found
    return path


def load_checkpoint(ckpt_dir_or_file) -> CheckpointReader:
    """The reader of ``ckpt_dir_or_file`` (a checkpoint prefix, or a directory: its newest
    checkpoint).

    Raises:
      ValueError: a directory without checkpoints; NotFoundError: no such checkpoint."""
    return CheckpointReader(_prefix(ckpt_dir_or_file))


def NewCheckpointReader(filepattern) -> CheckpointReader:  # noqa: N802 - TF's name
    """The reader of the checkpoint ``filepattern`` (a prefix)."""
    return CheckpointReader(os.fspath(filepattern))


def list_variables(ckpt_dir_or_file) -> list:
    """[(name, shape)] of the checkpoint's variables, sorted by name."""
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return [(name, shapes[name]) for name in sorted(shapes)]


def load_variable(ckpt_dir_or_file, name):
    """The saved value of variable ``name`` (a trailing ``:0`` is dropped, as TF does)."""
    if name.endswith(":0"):
        name = name[:-2]
    return load_checkpoint(ckpt_dir_or_file).get_tensor(name)
