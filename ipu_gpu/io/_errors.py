"""TensorFlow error classes that ``ipu_gpu.errors`` does not have yet, raised by tf.io and
tf.data (to be moved into ``ipu_gpu/errors.py``, which every layer may import)."""

from __future__ import annotations

from ..errors import OpError

__all__ = ["DataLossError", "FailedPreconditionError", "NotFoundError"]


class NotFoundError(OpError):
    """A file or other resource does not exist (TF's ``NotFoundError``)."""


class DataLossError(OpError):
    """Unrecoverable data loss or corruption, e.g. a TFRecord whose checksum does not match
    (TF's ``DataLossError``)."""


class FailedPreconditionError(OpError):
    """The system is not in a state the operation needs, e.g. reading an iterator before its
    initializer ran (TF's ``FailedPreconditionError``)."""
