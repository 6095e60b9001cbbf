"""PopTorch's model-parallel annotations: ``BeginBlock``, ``Block``, ``BlockFunction``,
``set_overlap_for_input``... They place layers on IPUs and stages; numerics are unchanged
(research section 5), so the emulator records nothing and returns what it is given."""

from __future__ import annotations

import contextlib

__all__ = ["BeginBlock", "Block", "BlockFunction"]


def BeginBlock(layer_to_call, user_id=None, ipu_id=None):  # noqa: N802 - PopTorch's name
    """``layer_to_call`` unchanged (its block starts on ``ipu_id``)."""
    return layer_to_call


@contextlib.contextmanager
def Block(user_id=None, ipu_id=None):  # noqa: N802
    """A block of layers placed on ``ipu_id``: the layers run unchanged."""
    yield


def BlockFunction(user_id=None, ipu_id=None):  # noqa: N802
    """Decorator form of ``Block``: the function unchanged."""
    return lambda fn: fn
