"""PopTorch's exception classes (``poptorch.Error`` and its recoverable/unrecoverable
kinds)."""

from __future__ import annotations

__all__ = ["Error", "RecoverableError", "UnrecoverableError"]


class Error(Exception):
    """A PopTorch error (``poptorch.Error``)."""

    def __init__(self, message="", type="poptorch_py_error"):  # noqa: A002 - PopTorch's name
        super().__init__(message)
        self.message = message
        self.type = type


class RecoverableError(Error):
    """An error after which the device can be used again (``recovery_action`` says how)."""

    recovery_action = ""


class UnrecoverableError(Error):
    """An error after which the device cannot be used again."""
