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

Which gradients are tracked (``_Popart.set("automaticLossScalingSettings.
gradientTensorTrackingMethod", m)``, PopART's ``GradientTensorTrackingMethod``):
``AllNonViewChangingGradientTensors`` (0, the default) as above; ``ConvAndMatmulGradients``
(1) the float16 gradients the backward matmuls and convolutions produce: of each
``nn.Linear``/``nn.ConvNd``/``nn.ConvTransposeNd`` module's weight and of its input (that
module's own contribution, not the input's total gradient; the bias gradient, a reduction,
is not tracked; matmuls called outside such modules are not seen);
``GradientsOfUserSpecifiedTensors`` (2) needs PopART's ``toTrackTensors``, which PopTorch
cannot set: PopART's compile error. Other values: PopTorch's "out of range" error.

The loss scale takes the loss's dtype, as PopART's loss-scale tensor does
(``Optimizer::getLossScalingTensorId(dtype of the final loss)``), and the update factor
the loss scale's (``addOnesTensor(..., lossScaleTensor->info)``): for a float16 loss the
optimizer's ``loss_scaling`` is rounded to float16, the factor is a float16 that doubles
to inf past 32768 (and then stays inf: halving inf is inf), and the scale the loss gradient
starts from, ``loss_scaling * factor``, is their float16 product (inf past 65504; the
gradients then overflow and the statistics halve the factor). The update divides by
``loss_scaling`` as the host's float (PopART's compound scalars are computed from it) times
the factor. ``_Popart.set("ensureFp32LossScaleTensor",
True)`` keeps both float32 (the scaled loss gradient still meets float16 at the loss).
"""

from __future__ import annotations

import contextlib
import weakref

import numpy as np
import torch

from ._tensor_tree import tensor_leaves
from .errors import Error

__all__ = ["FACTORS", "AutomaticLossScaling", "enabled", "scale_dtype"]

# optimizer -> the AutomaticLossScaling of the model it trains (for its ipu_state)
FACTORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_FLOAT16_MAX = 65504.0
_NO_FP16 = "[AutomaticLossScale transform] No tracked gradient tensors of type fp16 were found."


_TRACKING = "automaticLossScalingSettings.gradientTensorTrackingMethod"
ALL_NON_VIEW_CHANGING, CONV_AND_MATMUL, USER_SPECIFIED = 0, 1, 2
# the modules whose forward is a matmul or a convolution (their backward's matmuls/convs)
_MATMULS = (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d,
            torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)


def enabled(options) -> bool:
    return bool(options._Popart.options.get("automaticLossScalingSettings.enabled", False))


def scale_dtype(options, loss_dtype):
    """numpy dtype of the loss-scale tensor (and of ALS's update factor) for a loss of
    ``loss_dtype``: float16 for a float16 loss unless ``ensureFp32LossScaleTensor``."""
    if loss_dtype == torch.float16 and not options._Popart.options.get(
            "ensureFp32LossScaleTensor", False):
        return np.float16
    return np.float32


def _tracking_method(popart) -> int:
    method = popart.get(_TRACKING, ALL_NON_VIEW_CHANGING)
    method = int(getattr(method, "value", method))
    if not 0 <= method <= USER_SPECIFIED:
        raise Error("Value for GradientTensorTrackingMethod out of range")
    if method == USER_SPECIFIED:
        raise Error("[AutomaticLossScale transform] gradientTensorTrackingMethod set to "
                    "'GradientTensorTrackingMethod::GradientsOfUserSpecifiedTensors' but "
                    "'toTrackTensors' has not been set")
    return method


class _Probe(torch.autograd.Function):
    """Identity whose backward shows ``count`` the gradient passing through (the gradient
    one matmul or convolution gives its input)."""

    @staticmethod
    def forward(ctx, x, count):
        ctx.count = count
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        ctx.count(grad)
        return grad, None


class AutomaticLossScaling:
    """The update factor of one compiled training model and its statistics.

    Raises:
      poptorch.Error: ``binEdgeLocation`` or ``thresholdUpperCountProportion`` out of
        [0, 1], ``updatePeriod`` below 1 (PopART's messages)."""

    def __init__(self, options, model) -> None:
        popart = options._Popart.options
        edge = float(popart.get("automaticLossScalingSettings.binEdgeLocation", 0.125))
        threshold = float(popart.get(
            "automaticLossScalingSettings.thresholdUpperCountProportion", 1e-7))
        self.period = int(popart.get("automaticLossScalingSettings.updatePeriod", 1))
        self.method = _tracking_method(popart)
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
        self.model = model
        self.options = options
        self.dtype = None  # the loss-scale tensor's, from the first loss (set_loss_dtype)
        self.factor = 1.0
        self.steps = 0
        self._micro = [0, 0]  # this micro-batch's uint32 [lower, upper] sums
        self._replicas = {}  # replica -> float32 [lower, upper] accumulated this step
        self.seen_fp16 = False

    def set_loss_dtype(self, loss_dtype) -> None:
        """The first loss's dtype fixes the loss scale's and the factor's (PopART's
        tensors are typed at compile time)."""
        if self.dtype is None:
            self.dtype = scale_dtype(self.options, loss_dtype)
            self.factor = float(self.dtype(self.factor))

    def loss_scale(self, optimizer) -> float:
        """The loss scale of the coming step: PopART's ``finalLossScale``, the loss scale
        times the factor in the loss scale's dtype."""
        ls = float(getattr(optimizer, "loss_scaling", 1.0) or 1.0)
        dtype = self.dtype or np.float32
        with np.errstate(over="ignore", invalid="ignore"):
            return float(dtype(ls) * dtype(self.factor))

    def _counting(self) -> bool:
        return self.steps % self.period == 0

    def _count(self, grad) -> None:
        if grad is None or grad.dtype != torch.float16:
            return
        self.seen_fp16 = True
        if self._counting():
            upper = int((grad.abs().float() >= self.edge).sum())
            micro = self._micro
            micro[0] = (micro[0] + grad.numel() - upper) & 0xFFFFFFFF
            micro[1] = (micro[1] + upper) & 0xFFFFFFFF

    @contextlib.contextmanager
    def tracking(self, replica: int = 0):
        """Around one micro-batch's forward and backward on ``replica``: count its tracked
        gradients."""
        handles = self._hooks()
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

    def _hooks(self) -> list:
        """Hooks on the tracked gradients of the coming forward and backward."""
        if self.method == CONV_AND_MATMUL:
            weights = {id(m.weight): m.weight for m in self.model.modules()
                       if isinstance(m, _MATMULS) and isinstance(m.weight, torch.Tensor)}
            handles = [p.register_hook(self._hook) for p in weights.values()
                       if p.requires_grad and p.dtype == torch.float16]

            def on_input(module, args):
                if (isinstance(module, _MATMULS) and args and isinstance(args[0], torch.Tensor)
                        and args[0].dtype == torch.float16 and args[0].requires_grad):
                    return (_Probe.apply(args[0], self._count), *args[1:])
                return None

            handles.append(torch.nn.modules.module.register_module_forward_pre_hook(on_input))
            return handles
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
        return handles

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
            dtype = self.dtype or np.float32
            with np.errstate(over="ignore"):  # a float16 factor doubles to inf past 32768
                self.factor = float(dtype(self.factor) * dtype(0.5 if down else 2.0))
            self._replicas = {}
        self.steps += 1
