"""PopART's plain SGD update ``w -= lr * g`` in one pass over memory on the CPU.

PopART rounds ``lr * g`` to the weight's dtype, then the difference. ``p.sub_(lr * g)`` does
that in two elementwise ops, with a temporary the size of the weight and five passes over
memory; torch's own SGD (``p.add_(g, alpha=-lr)``) makes three but rounds once (a fused
multiply-add). ``p.addcmul_(g, one, value=-lr)`` computes ``p + ((-lr) * g) * 1``: the
product rounds first, the ``* 1`` is exact (a fused multiply-add of it rounds the same
sum), and ``p + (-x)`` is ``p - x`` in IEEE arithmetic, signed zeros included: the bits of
the two ops, in the one pass (and the one parallel loop) of ``add_``. A serial one-pass
kernel lost to ``add_`` right after the backward: the weight and gradient were last
touched by the GEMMs' threads on both cores.

CPU float32/float64 only, the weight and gradient in one dtype: float16/bfloat16 ``addcmul``
computes in float32 and rounds once, and other devices' compilers contract differently.
"""

from __future__ import annotations

import torch

__all__ = ["sgd_step", "sgd_steps", "takes"]

_EXACT = (torch.float32, torch.float64)
_ONES = {}  # dtype -> a 0-dim CPU one


def _one(dtype) -> torch.Tensor:
    one = _ONES.get(dtype)
    if one is None:
        one = _ONES[dtype] = torch.ones((), dtype=dtype)
    return one


def takes(p: torch.Tensor, g: torch.Tensor) -> bool:
    """Whether ``sgd_step`` updates this weight (CPU, strided, one float32/float64 dtype)."""
    return (p.dtype in _EXACT and g.dtype == p.dtype and p.is_cpu and g.is_cpu
            and p.layout == torch.strided and g.layout == torch.strided)


def sgd_step(p: torch.Tensor, g: torch.Tensor, step: float) -> bool:
    """``p -= step * g`` in place, rounded as the two ops, if ``takes(p, g)`` and ``step``
    is a Python number; whether it did."""
    if type(step) not in (float, int) or not takes(p, g):
        return False
    p.addcmul_(g, _one(p.dtype), value=-step)
    return True


def sgd_steps(params: list, grads: list, step: float) -> None:
    """``sgd_step`` on weights that ``takes`` all (one foreach call)."""
    if params:
        ones = [_one(p.dtype) for p in params]
        torch._foreach_addcmul_(params, grads, ones, value=-step)
