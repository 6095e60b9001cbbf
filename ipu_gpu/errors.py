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

__all__ = ["ABORTED", "ALREADY_EXISTS", "AbortedError", "AlreadyExistsError", "CANCELLED",
           "CancelledError", "DATA_LOSS", "DEADLINE_EXCEEDED", "DataLossError",
           "DeadlineExceededError", "FAILED_PRECONDITION", "FailedPreconditionError", "INTERNAL",
           "INVALID_ARGUMENT", "InternalError", "InvalidArgumentError", "NOT_FOUND",
           "NotFoundError", "OK", "OUT_OF_RANGE", "OpError", "OperatorNotAllowedInGraphError",
           "OutOfRangeError", "PERMISSION_DENIED", "PermissionDeniedError", "RESOURCE_EXHAUSTED",
           "ResourceExhaustedError", "UNAUTHENTICATED", "UNAVAILABLE", "UNIMPLEMENTED", "UNKNOWN",
           "UnauthenticatedError", "UnavailableError", "UnimplementedError", "UnknownError"]

# TF's canonical error codes (``tf.errors.OK`` ... ``tf.errors.DATA_LOSS``)
OK, CANCELLED, UNKNOWN, INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND = 0, 1, 2, 3, 4, 5
ALREADY_EXISTS, PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION = 6, 7, 8, 9
ABORTED, OUT_OF_RANGE, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS = 10, 11, 12, 13, 14, 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """The base of the errors a running program raises (TF's ``tf.errors.OpError``).

    Made as ``OpError(message)`` or, as TF's, ``OpError(node_def, op, message)``
    (``error_code`` as a fourth argument of ``OpError`` itself)."""

    _code = UNKNOWN

    def __init__(self, node_def=None, op=None, message=None, *args):
        if op is None and message is None and not args:
            node_def, message = None, node_def
        super().__init__(message)
        self.message = message
        self.node_def = node_def
        self.op = op
        self._error_code = args[0] if args and type(self) is OpError else self._code

    @property
    def error_code(self) -> int:
        """The canonical error code (``tf.errors.INVALID_ARGUMENT`` ...)."""
        return self._error_code


class InvalidArgumentError(OpError, ValueError):
    """An op received an argument value it cannot use (TF's ``InvalidArgumentError``)."""

    _code = INVALID_ARGUMENT


class OutOfRangeError(OpError):
    """An iteration went past its end: an exhausted dataset or infeed ("End of sequence")."""

    _code = OUT_OF_RANGE


class ResourceExhaustedError(OpError):
    """An op's output could not be allocated: out of host or GPU memory (TF's
    ``ResourceExhaustedError``, "OOM when allocating tensor ...")."""

    _code = RESOURCE_EXHAUSTED


class NotFoundError(OpError):
    """A file or other resource does not exist (TF's ``NotFoundError``)."""

    _code = NOT_FOUND


class DataLossError(OpError):
    """Unrecoverable data loss or corruption, e.g. a TFRecord whose checksum does not match
    (TF's ``DataLossError``)."""

    _code = DATA_LOSS


class FailedPreconditionError(OpError):
    """The system is not in a state the operation needs, e.g. reading an iterator before its
    initializer ran (TF's ``FailedPreconditionError``)."""

    _code = FAILED_PRECONDITION


class UnknownError(OpError):
    """An error TF cannot classify, e.g. an exception raised inside ``tf.py_function``'s
    Python function (TF's ``UnknownError``)."""

    _code = UNKNOWN


class InternalError(OpError):
    """The runtime failed while running a program: a failed step of the embedded application
    runtime (TF's ``InternalError``)."""

    _code = INTERNAL


class CancelledError(OpError):
    """An operation or step was cancelled (TF's ``CancelledError``)."""

    _code = CANCELLED


class DeadlineExceededError(OpError):
    """A deadline expired before the operation finished (TF's ``DeadlineExceededError``)."""

    _code = DEADLINE_EXCEEDED


class AlreadyExistsError(OpError):
    """An entity to be created already exists (TF's ``AlreadyExistsError``)."""

    _code = ALREADY_EXISTS


class PermissionDeniedError(OpError):
    """The caller may not run the operation (TF's ``PermissionDeniedError``)."""

    _code = PERMISSION_DENIED


class UnauthenticatedError(OpError):
    """The request has no valid credentials (TF's ``UnauthenticatedError``)."""

    _code = UNAUTHENTICATED


class AbortedError(OpError):
    """The operation was aborted, e.g. by a concurrent action (TF's ``AbortedError``)."""

    _code = ABORTED


class UnimplementedError(OpError):
    """The operation is not implemented for these arguments, e.g. pooling over the channel
    dimension on the CPU (TF's ``UnimplementedError``)."""

    _code = UNIMPLEMENTED


class UnavailableError(OpError):
    """The runtime is currently unavailable (TF's ``UnavailableError``)."""

    _code = UNAVAILABLE


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operator that needs a concrete value (``bool`` of a tensor, iterating it) was
    used on a symbolic graph tensor (TF's ``OperatorNotAllowedInGraphError``)."""
