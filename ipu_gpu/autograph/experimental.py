"""``tf.autograph.experimental``: ``do_not_convert``."""

from __future__ import annotations

import functools

__all__ = ["do_not_convert"]


def do_not_convert(func=None):
    """``@do_not_convert`` or ``@do_not_convert()``: ``func`` runs as Python, unconverted
    (ipu_gpu converts nothing, so the function is called as it is)."""
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper
