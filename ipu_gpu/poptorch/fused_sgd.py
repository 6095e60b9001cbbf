"""PopART's plain SGD update ``w -= lr * g`` in one pass on the CPU.

``p.sub_(lr * g)`` rounds ``lr * g`` to the weight's dtype, then the difference: two
elementwise ops, a temporary the size of the weight and five passes over memory where
torch's own SGD (``p.add_(g, alpha=-lr)``, one fused, differently rounded op) makes three.
``kernels.optimizer_cpu.sgd`` does PopART's two roundings element by element in one pass,
so the weights are bit for bit those of the two ops. Below ``MIN_SIZE`` elements the two
torch ops cost less than the conversions to numpy and the kernel call.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["MIN_SIZE", "sgd_step"]

MIN_SIZE = 16384
_KERNEL = []  # kernels.optimizer_cpu.sgd, imported on first use (Numba loads then)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def sgd_step(p: torch.Tensor, g: torch.Tensor, step: float) -> bool:
    """``p -= step * g`` in place if the one-pass kernel takes these tensors (CPU, dense,
    contiguous, one float32/float64 dtype and shape, at least ``MIN_SIZE`` elements);
    whether it did."""
    if p.numel() < MIN_SIZE or type(step) not in (float, int) or not (p.is_cpu and g.is_cpu):
        return False
    try:
        pn, gn = p.data.numpy(), g.numpy()
    except (RuntimeError, TypeError):  # sparse, conjugate or negative views, grad graphs
        return False
    if (pn.dtype not in _FLOATS or gn.dtype != pn.dtype or gn.shape != pn.shape
            or not pn.flags.c_contiguous or not gn.flags.c_contiguous):
        return False
    if not _KERNEL:
        from ..kernels.optimizer_cpu import sgd

        _KERNEL.append(sgd)
    _KERNEL[0](pn.reshape(-1), gn.reshape(-1), np.array([step], dtype=pn.dtype))
    torch.autograd.graph.increment_version(p)  # as the in-place op it stands for
    return True
