"""The tensors nested in a PopTorch model's inputs and outputs."""

from __future__ import annotations

import torch

__all__ = ["tensor_leaves"]


def tensor_leaves(x) -> list:
    """The ``torch.Tensor``s in ``x`` (a tensor, or lists, tuples and dict values of them,
    nested), depth first in order; anything else contributes none."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in tensor_leaves(item)]
    if isinstance(x, dict):
        return [t for item in x.values() for t in tensor_leaves(item)]
    return []
