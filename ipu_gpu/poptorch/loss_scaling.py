"""``Options.Training.setAutomaticLossScaling``: PopART's automatic loss scaling
(``transforms/automaticlossscaling``, ``LossScaleUpdateOpx``; PopTorch's user guide "Loss
scaling").

The loss scale a step uses is the optimizer's ``loss_scaling`` times an update factor that
starts at 1 (the manual value is "used initially and updated automatically"). During the
step, a histogram with one bin edge at ``binEdgeLocation * 65504`` (float16's maximum;
default 0.125) counts the absolute values of the tracked float16 gradient tensors of every
micro-batch, summed over gradient accumulation and replicas: ``lower`` below the edge,
``upper`` at or above it. After the step the factor is halved when
``upper > t / (1 - t) * lower`` (``t = thresholdUpperCountProportion``, default 1e-7) and
doubled otherwise. With ``updatePeriod`` P > 1 the statistics are gathered, and the factor
updated, on the first step of every P only (PopART's ``executeOpNTimesEveryMTimes``: the
histograms run for the first A of every A * P micro-batches, the update for the first of
every P steps, both counters starting with the executable). PopTorch shows the factor as
``optimizer.state_dict()['ipu_state']['lossScaleUpdateFactor']``.

The counts are kept as PopART keeps them: a micro-batch's histograms are summed in uint32
(over the tracked tensors) and cast to float32, accumulated in float32 over the
gradient-accumulation steps of each replica, summed over the replicas in float32, and the
comparison is float32's ``upper > lower * f`` with ``f = t / (1 - t)`` computed in float32
(``LossScaleUpdateOpx``), so counts beyond 2**24 round as on the IPU.

Tracked tensors: PopART tracks every float16 gradient tensor of the backward pass that is
not a view change, does not read a weight or an optimizer tensor, and leads to a weight
update. The emulator cannot see PopART's backward graph; it tracks the float16 gradients
of the trainable parameters and of the modules' outputs (not the loss's own gradient, which
PopART excludes as it reads the loss scale). A model with no float16 gradient at all is
PopART's compile error. Only float16 gradients count, so a float32 model cannot use it.
"""

from __future__ import annotations

import contextlib
import weakref

import numpy as np
import torch

from ._tensor_tree import tensor_leaves
from .errors import Error

__all__ = ["FACTORS", "AutomaticLossScaling", "enabled"]

# optimizer -> the AutomaticLossScaling of the model it trains (for its ipu_state)
FACTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_FLOAT16_MAX = 65504.0
_NO_FP16 = "[AutomaticLossScale transform] No tracked gradient tensors of type fp16 were found."


def enabled(options) -> bool:
    return bool(options._Popart.options.get("automaticLossScalingSettings.enabled", False))


class AutomaticLossScaling:
    """The update factor of one compiled training model and its statistics.

    Raises:
      poptorch.Error: ``binEdgeLocation`` or ``thresholdUpperCountProportion`` out of
        [0, 1], ``updatePeriod`` below 1 (PopART's messages)."""

    def __init__(self, options, model, accumulated: int) -> None:
        popart = options._Popart.options
        edge = float(popart.get("automaticLossScalingSettings.binEdgeLocation", 0.125))
        threshold = float(popart.get(
            "automaticLossScalingSettings.thresholdUpperCountProportion", 1e-7))
        self.period = int(popart.get("automaticLossScalingSettings.updatePeriod", 1))
        if not 0.0 <= edge <= 1.0:
            raise Error("[AutomaticLossScale transform] Out of range value for "
                        f"'binEdgeLocation'. The current value is {edge}, but it should be "
                        "in the range [0, 1].")
        if not 0.0 <= threshold <= 1.0:
            raise Error("Out of range value for 'thresholdUpperCountProportion'. The current "
                        f"value is {threshold}, but it should be in the range [0, 1].")
        if self.period < 1:
            raise Error("[AutomaticLossScale transform] updatePeriod must be at least 1, got "
                        f"{self.period}")
        self.edge = edge * _FLOAT16_MAX
        t = np.float32(threshold)
        with np.errstate(divide="ignore"):  # t = 1: f is inf, as float division gives
            self.ratio = t / (np.float32(1.0) - t)
        # the emulator back-propagates each micro-batch's loss already divided by the
        # accumulation and replica count (ReductionType.Mean); PopART's gradient tensors
        # are not: compare them at that scale
        self.accumulated = max(int(accumulated), 1)
        self.model = model
        self.factor = 1.0
        self.steps = 0
        self._micro = [0, 0]  # this micro-batch's uint32 [lower, upper] sums
        self._replicas = {}  # replica -> float32 [lower, upper] accumulated this step
        self.seen_fp16 = False

    def loss_scale(self, optimizer) -> float:
        """The loss scale of the coming step."""
        return float(getattr(optimizer, "loss_scaling", 1.0) or 1.0) * self.factor

    def _counting(self) -> bool:
        return self.steps % self.period == 0

    def _count(self, grad) -> None:
        if grad is None or grad.dtype != torch.float16:
            return
        self.seen_fp16 = True
        if self._counting():
            upper = int((grad.abs().float() * self.accumulated >= self.edge).sum())
            micro = self._micro
            micro[0] = (micro[0] + grad.numel() - upper) & 0xFFFFFFFF
            micro[1] = (micro[1] + upper) & 0xFFFFFFFF

    @contextlib.contextmanager
    def tracking(self, replica: int = 0):
        """Around one micro-batch's forward and backward on ``replica``: count its tracked
        gradients."""
        handles = [p.register_hook(self._hook) for p in self.model.parameters()
                   if p.requires_grad and p.dtype == torch.float16]
        hooked = set()  # a tensor several modules return is one gradient tensor

        def on_output(module, inputs, output):
            for t in tensor_leaves(output):
                if (t.dtype == torch.float16 and t.requires_grad and t.dim() > 0
                        and id(t) not in hooked):
                    hooked.add(id(t))
                    handles.append(t.register_hook(self._hook))

        handles.append(torch.nn.modules.module.register_module_forward_hook(on_output))
        self._micro = [0, 0]
        try:
            yield
        finally:
            for h in handles:
                h.remove()
            if self._counting():
                stats = self._replicas.setdefault(
                    replica, np.zeros(2, dtype=np.float32))
                stats += np.array(self._micro, dtype=np.uint32).astype(np.float32)

    def _hook(self, grad):
        self._count(grad)

    def check_tracked(self) -> None:
        """After the first micro-batch's backward: PopART's compile error when no float16
        gradient was tracked."""
        if not self.seen_fp16:
            raise Error(_NO_FP16)

    def counts(self):
        """This step's float32 ``(lower, upper)`` summed over the replicas so far."""
        total = np.zeros(2, dtype=np.float32)
        for replica in sorted(self._replicas):
            total += self._replicas[replica]
        return total[0], total[1]

    def update(self) -> None:
        """After a step: the update factor for the next one."""
        if self._counting():
            lower, upper = self.counts()
            with np.errstate(invalid="ignore"):  # 0 * inf is NaN: not greater, scale up
                down = bool(upper > lower * self.ratio)
            self.factor *= 0.5 if down else 2.0
            self._replicas = {}
        self.steps += 1
