"""The tensors nested in a PopTorch model's inputs and outputs."""

from __future__ import annotations

import torch

__all__ = ["tensor_leaves"]

_Tensor = torch.Tensor


def tensor_leaves(x) -> list:
    """The ``torch.Tensor``s in ``x`` (a tensor, or lists, tuples and dict values of them,
    nested), depth first in order; anything else contributes none."""
    if isinstance(x, _Tensor):
        return [x]
    found = []
    _collect(x, found)
    return found


def _collect(x, found: list) -> None:
    # one list for the whole walk: this runs per micro-batch on the model's outputs
    if isinstance(x, (list, tuple)):
        items = x
    elif isinstance(x, dict):
        items = x.values()
    else:
        return
    for item in items:
        if isinstance(item, _Tensor):
            found.append(item)
        else:
            _collect(item, found)
