"""PopART's order of a training model's gradient reduction (PopART's
``Optimizer::setFactorsFromOptions``, ``OptimizerDecompose::gradAccum``/``gradReduce``,
``AccumulateOpx``, ``ScaledLearningRate0Helper``), for float16 and float32 weights alike.

PopART seeds each micro-batch's backward with the loss scale alone (no ``1 / (A * R)``),
adds the unnormalised gradients of the A micro-batches of each replica into an accumulator
of the optimizer's ``accum_type`` (float32 by default; no accumulator, the gradient's own
dtype, when A is 1), all-reduces the accumulators over the R replicas in that dtype, and
scales once, in the update, by ``1 / (loss_scaling * af * rf)`` computed on the host in
float32 (af = A, rf = R under ``ReductionType.Mean`` with ``MeanReductionStrategy.Post``;
1 otherwise). ``MeanReductionStrategy.Running`` (what a float16 ``accum_type`` selects)
keeps a running mean instead, ``acc = acc * (1 - 1/(c+1)) + g * (1/(c+1))`` for the c-th
micro-batch, and the replicas' all-reduce is a mean (sum, then times ``1/R``); the update
scales by the loss scale only. ``PostAndLoss`` (deprecated) divides the loss by R and the
accumulator by A.

PopART folds that scalar into the update's compound scalar: plain SGD (SGD0) updates
``w - slr0 * G`` with ``slr0 = (lr * (1 - dampening)) / (ls * af * rf)`` in float32
(``ScaledLearningRate0Helper``, ``SGD0VarUpdateOpx``'s one ``scaledAddTo``). The emulator
does the same for float32 weights under SGD without momentum (``finish(..., fold=True)``
leaves the unnormalised sum in ``p.grad`` and returns the divisor; ``optim.apply_update``
builds ``slr0``, and ``max_grad_norm`` clips that sum, as PopART's clipping transform acts
on the update's input). Elsewhere it applies the scalar to the
reduced gradient (in float32, rounded once to the weight's dtype) and then runs the
optimizer's update rule on it, so the learning rate's product rounds separately there
(Adam-type optimizers scale the float32-cast gradient by it and update in float32 in
PopART). The replicas' sum is taken in replica order (the IPU's ring order is not
modelled).
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from .enums import MeanReductionStrategy, ReductionType

__all__ = ["GradientReduction"]

_MEAN = ReductionType.Mean.value
_RUNNING = MeanReductionStrategy.Running.value
_POST_AND_LOSS = MeanReductionStrategy.PostAndLoss.value


@functools.lru_cache(maxsize=256)
def _float32_product(ls: float, af: int, rf: int) -> float:
    """``(ls * af) * rf`` in float32 (numpy's scalar arithmetic costs microseconds a call,
    and a training model asks for the same few values every call)."""
    f = np.float32
    return float((f(ls) * f(af)) * f(rf))


class GradientReduction:
    """The gradient reduction of one step of A micro-batches on each of R replicas.

    ``seed_factor`` is what multiplies the loss scale at the loss. Around each micro-batch's
    backward on replica r, ``enter(r)`` and ``take(r)`` keep that replica's accumulators
    apart; ``finish(loss_scale)`` leaves the reduced, unscaled gradient in each ``p.grad``
    (``begin_step`` clears them first, as the device's accumulators start empty).
    With ``seen`` every micro-batch's gradient is alone in ``p.grad`` until ``take``
    (gradient anchors read it)."""

    def __init__(self, options, optimizer, a: int, r: int, *, seen: bool = False) -> None:
        # the option store itself: attribute reads and enum values cost microseconds, and
        # a training model builds one of these per call
        training = options.Training._values
        mean = int(training["accumulation_and_replication_reduction_type"]) == _MEAN
        strategy = (int(training["meanAccumulationAndReplicationReductionStrategy"])
                    if mean else None)
        self.running = strategy == _RUNNING
        self.a, self.r = a, r
        loss_mean = strategy == _POST_AND_LOSS
        self.seed_factor = 1.0 / r if loss_mean else 1.0
        post = mean and not self.running
        self.af = a if post else 1
        self.rf = r if post and not loss_mean else 1
        self._divisor = (None, None)  # (loss scale, divisor) of the last ``divisor`` call
        self.accum_type = getattr(optimizer, "accum_type", torch.float32) or torch.float32
        self._all = [p for g in optimizer.param_groups for p in g["params"]]
        self.params = [p for p in self._all if p.requires_grad]
        # summing in the weights' dtypes, autograd's in-place sum into p.grad is the
        # accumulator (the same additions in the same order): p.grad holds the replica's
        # own accumulator during its micro-batches (swapped when R > 1)
        self._in_grad = not self.running and not seen and (
            a == 1 or all(p.dtype == self.accum_type for p in self.params))
        self._swapping = self._in_grad and r > 1
        # float32 weights whose reduced sum is not rounded to another dtype after scaling
        self.foldable = all(p.dtype == torch.float32 for p in self.params) and (
            a == 1 or self.accum_type == torch.float32)
        self._reset()

    def divisor(self, loss_scale: float) -> float:
        """``ls * af * rf`` as PopART's C++ float computes it."""
        if loss_scale != self._divisor[0]:
            self._divisor = (loss_scale, _float32_product(loss_scale, self.af, self.rf))
        return self._divisor[1]

    def begin_step(self) -> None:
        """Before a step's first micro-batch: no gradient yet (what ``zero_grad`` did)."""
        for p in self._all:
            p.grad = None
        self._reset()

    def end_call(self) -> None:
        """After a call: the host's parameters hold no gradient (the device's stay there)."""
        for p in self._all:
            p.grad = None

    def _reset(self) -> None:
        self._acc = [{} for _ in range(self.r)]
        self._count = [0] * self.r
        self._grads = [[None] * len(self.params) for _ in range(self.r)]

    def enter(self, replica: int) -> None:
        """Before a micro-batch's backward on ``replica``."""
        if self._swapping:
            for p, g in zip(self.params, self._grads[replica]):
                p.grad = g

    def take(self, replica: int) -> None:
        """After a micro-batch's backward on ``replica``."""
        if self._in_grad:
            if self._swapping:
                self._grads[replica] = [p.grad for p in self.params]
            return
        acc = self._acc[replica]
        c = self._count[replica]
        self._count[replica] = c + 1
        for p in self.params:
            g = p.grad
            if g is None:
                continue
            p.grad = None
            dtype = self.accum_type if self.a > 1 else g.dtype
            held = acc.get(p)
            if held is None:  # the gradient is the accumulator's start (ours: p.grad is None)
                acc[p] = g.to(dtype)
            elif self.running:
                b = 1.0 / (c + 1)
                held.mul_(1.0 - b).add_(g.to(dtype), alpha=b)
            else:
                held.add_(g.to(dtype))

    def finish(self, loss_scale: float, fold: bool = False) -> float | None:
        """Before the update: each ``p.grad`` is the replicas' reduced accumulator times
        ``1 / (loss_scale * af * rf)`` (a float32 host scalar), in ``p``'s dtype. With
        ``fold`` (only when ``foldable``) the accumulator is left unscaled and the divisor
        ``loss_scale * af * rf`` is returned for the update's scalar; else None."""
        divisor = self.divisor(loss_scale)
        # PopART's host scalar, 1 / (ls * af * rf) in C++ float, multiplies the gradient
        scale = 1.0 if fold else float(np.float32(1.0) / np.float32(divisor))
        if self._in_grad:
            if self._swapping:  # the replicas' sum in replica order, into replica 0's
                for i, p in enumerate(self.params):
                    parts = [grads[i] for grads in self._grads if grads[i] is not None]
                    total = parts[0] if parts else None
                    for part in parts[1:]:
                        total.add_(part)
                    p.grad = total
            if scale != 1.0:  # in float32 arithmetic, rounded once to the grad's dtype
                grads = [p.grad for p in self.params if p.grad is not None]
                if grads:
                    torch._foreach_mul_(grads, scale)
            self._reset()
            return divisor if fold else None
        for p in self.params:
            parts = [acc[p] for acc in self._acc if p in acc]
            if not parts:
                continue
            total = parts[0]
            for part in parts[1:]:
                total = total + part
            if self.running and self.r > 1:
                total.mul_(1.0 / self.r)
            if scale != 1.0:
                total.mul_(scale)
            p.grad = total if total.dtype == p.dtype else total.to(p.dtype)
        self._reset()
        return divisor if fold else None
