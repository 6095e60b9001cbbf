"""``Options.anchorTensor`` / ``PoplarExecutor.getAnchoredTensor`` / ``getTensorNames``:
PopART tensors returned from each call besides the model's outputs
(research/poptorch_semantics.md sections 1.2, 3.6).

PopART names hundreds of internal tensors; the emulator has no PopART graph and offers the
ones programs anchor (Graphcore's observing_tensors tutorial):

* ``<parameter>``: a trainable parameter's value as a micro-batch's forward used it;
* ``Gradient___<parameter>`` (training): the gradient of one micro-batch's loss (times the
  loss scale, before accumulation, reduction and unscaling), per replica;
* ``UpdatedVar___<parameter>`` (training): the parameter after a step's update;
* ``finalLossScale`` (training with automatic loss scaling): the loss scale a step used.

Each anchor follows its output mode (the model's when ``anchorTensor`` gave none) as the
outputs do: per micro-batch tensors ``All`` (every micro-batch), ``Final`` (the last one of
each replica), ``EveryN`` (every N-th device iteration), ``Sum`` (per replica); the per-step
tensors the same with one value per device iteration. k values are concatenated on dim 0
(stacked for a 0-dim tensor); k = 1 keeps the tensor's shape. Another name is PopART's
compile error ("Anchor tensor ... not in Ir Tensors").
"""

from __future__ import annotations

import numpy as np
import torch

from .enums import OutputMode
from .errors import Error

__all__ = ["Anchors", "tensor_names"]

_GRAD, _UPDATED = "Gradient___", "UpdatedVar___"


def tensor_names(model, training: bool, automatic_loss_scaling: bool) -> list:
    """The tensor names the emulator can anchor for ``model``."""
    params = [name for name, p in model.named_parameters() if p.requires_grad]
    names = list(params)
    if training:
        names += [_GRAD + n for n in params] + [_UPDATED + n for n in params]
        if automatic_loss_scaling:
            names.append("finalLossScale")
    return names


class Anchors:
    """The anchored tensors of one compiled model and their values from the last call.

    Raises:
      poptorch.Error: an anchored name the emulator does not have (PopART's message)."""

    def __init__(self, executor, automatic_loss_scaling: bool) -> None:
        opts = executor.options
        known = tensor_names(executor.model, executor.training, automatic_loss_scaling)
        params = dict(executor.model.named_parameters())
        self._anchors = {}  # short name -> (long name, mode, period)
        self._grads = {}  # parameter name -> the parameter (Gradient___ anchors)
        for short, (long, inherit, mode, period) in opts.anchored_tensors.items():
            if long not in known:
                raise Error(f"Anchor tensor `{long}' not in Ir Tensors. The tensors ipu_gpu "
                            f"can anchor are:\n{known}")
            if inherit:
                mode, period = opts.output_mode, opts.output_return_period
            self._anchors[short] = (long, OutputMode(int(mode)), int(period or 1))
            if long.startswith(_GRAD):
                self._grads[long[len(_GRAD):]] = params[long[len(_GRAD):]]
        self._params = params
        self.memory = {}
        self._values = {}

    def __bool__(self) -> bool:
        return bool(self._anchors)

    def begin_call(self) -> None:
        self._values = {short: {} for short in self._anchors}

    def micro_batch(self, si: int, ai: int, ri: int) -> None:
        """After micro-batch (si, ai, ri)'s backward: its own gradients at the loss scale
        are in ``p.grad`` (the executor moves them into the accumulators afterwards)."""
        for short, (long, _, _) in self._anchors.items():
            if long.startswith(_GRAD):
                name = long[len(_GRAD):]
                p = self._grads[name]
                value = torch.zeros_like(p) if p.grad is None else p.grad.detach()
            elif long in self._params:
                value = self._params[long].detach()
            else:
                continue
            self._values[short][(si, ai, ri)] = value.clone()

    def step(self, si: int, loss_scale: float, dtype=None) -> None:
        """After device iteration si's weight update (``dtype``: the loss scale's numpy
        dtype, float32 when None)."""
        for short, (long, _, _) in self._anchors.items():
            if long.startswith(_UPDATED):
                value = self._params[long[len(_UPDATED):]].detach().clone()
            elif long == "finalLossScale":
                value = torch.tensor(loss_scale, dtype=torch.float16 if dtype is not None
                                     and np.dtype(dtype) == np.float16 else torch.float32)
            else:
                continue
            self._values[short][(si, 0, 0)] = value

    def end_call(self, s: int, a: int, r: int) -> None:
        for short, (long, mode, period) in self._anchors.items():
            values = self._values[short]
            per_step = long.startswith(_UPDATED) or long == "finalLossScale"
            aa, rr = (1, 1) if per_step else (a, r)
            if mode == OutputMode.Final:
                groups = [values[(s - 1, aa - 1, ri)] for ri in range(rr)]
            elif mode == OutputMode.Sum:
                groups = [sum(values[(si, ai, ri)] for si in range(s) for ai in range(aa))
                          for ri in range(rr)]
            else:
                first = period - 1 if mode == OutputMode.EveryN else 0
                step = period if mode == OutputMode.EveryN else 1
                groups = [values[(si, ai, ri)] for si in range(first, s, step)
                          for ai in range(aa) for ri in range(rr)]
            if len(groups) == 1:
                self.memory[short] = groups[0]
            elif groups[0].dim() == 0:
                self.memory[short] = torch.stack(groups)
            else:
                self.memory[short] = torch.cat(groups, 0)
        self._values = {}
