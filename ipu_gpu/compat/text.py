"""``tf.compat``'s text helpers: ``as_bytes``, ``as_text`` (also ``as_str``), ``as_str_any``
and ``path_to_str``, with TensorFlow's conversions and errors."""

from __future__ import annotations

import os

__all__ = ["as_bytes", "as_str", "as_str_any", "as_text", "bytes_or_text_types",
           "path_to_str"]

bytes_or_text_types = (bytes, str)


def as_bytes(bytes_or_text, encoding="utf-8") -> bytes:
    """``bytes`` as they are (a bytearray copied to bytes), ``str`` encoded with ``encoding``.

    Raises:
      TypeError: anything else (TF's message)."""
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text, encoding="utf-8") -> str:
    """``str`` as it is, ``bytes`` decoded with ``encoding``.

    Raises:
      TypeError: anything else, a bytearray included (TF's message)."""
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text


def as_str_any(value, encoding="utf-8") -> str:
    """``as_str`` of bytes, ``str(value)`` of anything else."""
    if isinstance(value, bytes):
        return as_str(value, encoding=encoding)
    return str(value)


def path_to_str(path):
    """A path-like object as its string (``os.fspath``); anything else as it is."""
    if isinstance(path, os.PathLike):
        return os.fspath(path)
    return path
