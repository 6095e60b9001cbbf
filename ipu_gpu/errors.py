"""Errors with TensorFlow's names (``tf.errors``) that the emulated runtime raises.

TensorFlow signals the end of a dataset or an infeed with ``tf.errors.OutOfRangeError``
("End of sequence"); programs catch it by that name, so ipu_gpu raises a class of the same
name. ``OpError`` is the base, as in TensorFlow; its ``message`` attribute holds the text.

``ResourceExhaustedError`` is TF's out-of-memory error ("OOM when allocating tensor with
shape[...] and type float ..."): ops raise it, chained from the allocator's MemoryError,
when their output cannot be allocated. The emulated IPU's own out-of-memory error
(``emulation.memory.GraphMemoryAllocationError``) is a different error and is not one.

``InvalidArgumentError`` is what TF's kernels raise for bad argument values (``tf.range``
with ``delta=0``). Here it is also a ValueError, the house type for bad values, so code
written for either catches it.

This module imports nothing from ipu_gpu: every layer may raise these errors.
"""

from __future__ import annotations

__all__ = ["DataLossError", "FailedPreconditionError", "InternalError", "InvalidArgumentError",
           "NotFoundError", "OpError", "OutOfRangeError", "ResourceExhaustedError",
           "UnknownError"]


class OpError(Exception):
    """The base of the errors a running program raises (TF's ``tf.errors.OpError``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class InvalidArgumentError(OpError, ValueError):
    """An op received an argument value it cannot use (TF's ``InvalidArgumentError``)."""


class OutOfRangeError(OpError):
    """An iteration went past its end: an exhausted dataset or infeed ("End of sequence")."""


class ResourceExhaustedError(OpError):
    """An op's output could not be allocated: out of host or GPU memory (TF's
    ``ResourceExhaustedError``, "OOM when allocating tensor ...")."""


class NotFoundError(OpError):
    """A file or other resource does not exist (TF's ``NotFoundError``)."""


class DataLossError(OpError):
    """Unrecoverable data loss or corruption, e.g. a TFRecord whose checksum does not match
    (TF's ``DataLossError``)."""


class FailedPreconditionError(OpError):
    """The system is not in a state the operation needs, e.g. reading an iterator before its
    initializer ran (TF's ``FailedPreconditionError``)."""


class UnknownError(OpError):
    """An error TF cannot classify, e.g. an exception raised inside ``tf.py_function``'s
    Python function (TF's ``UnknownError``)."""


class InternalError(OpError):
    """The runtime failed while running a program: a failed step of the embedded application
    runtime (TF's ``InternalError``)."""
