"""``poptorch.trainingModel`` / ``inferenceModel``: the user's ``torch.nn.Module`` run on
PyTorch with PopTorch's batching arithmetic (research/poptorch_semantics.md sections 2, 3, 7).

One call takes a batch of ``N = S * R * A`` micro-batches (S ``deviceIterations``, R
``replicationFactor``, A ``Training.gradientAccumulation``, 1 for inference): dim 0 of every
tensor argument is viewed as ``[S, A, R, B, ...]``. For each device iteration s, every
(accumulation step a, replica r) micro-batch runs ``forward`` with the weights of the start
of the iteration; in training its loss is back-propagated and the gradients are reduced over
the A * R micro-batches (mean by default, ``ReductionType.Sum`` sums) before one optimizer
step, so one call makes S steps. Outputs are assembled per ``outputMode`` (All, Final, Sum,
EveryN; training default Final, inference All) with the leading factor k (a micro-batch
output keeps its shape when k is 1).

The loss: a tensor returned by ``poptorch.identity_loss`` among the outputs, else the last
0-dim output that requires a gradient (PopTorch lowers torch's loss functions to identity
losses; the emulator cannot see inside ``forward``); none is ``poptorch.Error("Couldn't find
a loss in graph!")``.

Replicas share the module's parameters (identical under the gradient reduction) and each
keeps its own buffers (``device_state.ReplicaBuffers``: BatchNorm statistics move with the
replica's own micro-batches, as with ``broadcastBuffers(False)`` on the IPU); the host module
reads replica 0's. Random ops draw from the device's stream seeded by ``randomSeed``
(``device_state.DeviceRandom``), ``Precision.enableStochasticRounding`` rounds float16 weight
updates stochastically, and ``enableSyntheticData`` feeds the model synthetic micro-batches
instead of the host's data.
"""

from __future__ import annotations

import torch

from .enums import OutputMode, ReductionType
from .device_state import DeviceState, HalfUpdatesInFloat32, synthetic_batch
from .errors import Error
from .ops import _running
from .optim import _max_grad_norm, apply_update

__all__ = ["PoplarExecutor", "identity_loss", "inferenceModel", "trainingModel"]


def identity_loss(x, reduction):
    """``x`` reduced by ``reduction`` ('sum', 'mean' or 'none') and marked as the model's
    final loss.

    Raises:
      AssertionError: another reduction (PopTorch's message)."""
    if reduction == "sum":
        out = x.sum()
    elif reduction == "mean":
        out = x.mean()
    elif reduction == "none":
        out = x.clone()
    else:
        raise AssertionError("Unsupported reduction type!")
    out._poptorch_loss = True
    return out


def _leaves(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _leaves(item)]
    if isinstance(x, dict):
        return [leaf for item in x.values() for leaf in _leaves(item)]
    return []


def _map(fn, x):
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_map(fn, v) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_map(fn, v) for v in x)
    if isinstance(x, dict):
        return {k: _map(fn, v) for k, v in x.items()}
    return x


_NOTHING = object()  # no micro-batch has run yet
_PLACEHOLDER = torch.empty(0)  # a tensor leaf in an output's structure


def _find_loss(out):
    leaves = _leaves(out)
    marked = [t for t in leaves if getattr(t, "_poptorch_loss", False)]
    if len(marked) > 1:
        raise Error("Multiple independent losses found in graph. Graph must have one final "
                    "loss. Wrap final graph loss in poptorch.identity_loss.")
    if marked:
        return marked[0]
    scalars = [t for t in leaves if t.dim() == 0 and t.requires_grad]
    if not scalars:
        raise Error("Couldn't find a loss in graph!")
    return scalars[-1]


class PoplarExecutor:
    """A wrapped model (what ``trainingModel``/``inferenceModel`` return): call it like the
    module; ``options`` (frozen), ``model`` (the user's module) and PopTorch's methods."""

    def __init__(self, model, options, training, optimizer=None):
        from .options import Options

        if getattr(model, "_poptorch_wrapped", False):
            raise RuntimeError("Model has already been wrapped in 'poptorch.trainingModel'. "
                               "Call model.destroy() on the model to unwrap before wrapping "
                               "again.")
        options = (options or Options()).clone()
        if options.output_mode == OutputMode.Default.value:
            options.outputMode(OutputMode.Final if training else OutputMode.All)
        self.options = options
        self.model = model
        self.training = training
        if training:
            from . import optim

            self.optimizer = optimizer if optimizer is not None else optim.SGD(
                model.parameters(), lr=0.01)
            optim.check_supported(self.optimizer)  # PopTorch's type / amsgrad checks
            model._poptorch_wrapped = True
        else:
            if optimizer is not None:
                raise ValueError("An optimizer cannot be used with an inference model")
            if options.Training.gradient_accumulation != 1:
                raise Error("You must set gradientAccumulation to 1 for inference models "
                            "(Options.Training.gradientAccumulation)")
            self.optimizer = None
        self._signature = None
        self._attached = False
        # per-replica buffers, random stream, synthetic inputs of the compiled executable
        self._device_state = None

    # ---- PopTorch's methods -------------------------------------------------------------
    def compile(self, *args, **kwargs) -> None:
        """Check and record the inputs' signature (the first call's job) without running."""
        if self._signature is not None:
            import warnings

            warnings.warn("Call to compile() ignored: the executable is already compiled",
                          stacklevel=2)
            return
        signature = self._check_first(args, kwargs)
        from .blocks import _trace_placement

        # PopTorch's trace: placement and its checks (on the synthetic inputs if any)
        _trace_placement(self, *synthetic_batch(self.options, args, kwargs, _map,
                                                self._factors()))
        self._signature = signature
        self._attached = True

    def isCompiled(self) -> bool:  # noqa: N802 - PopTorch's name
        return self._signature is not None

    def isAttachedToDevice(self) -> bool:  # noqa: N802
        return self._attached

    def detachFromDevice(self) -> None:  # noqa: N802
        if not self._attached:
            raise Error("Device is not attached")
        self._attached = False

    def attachToDevice(self) -> None:  # noqa: N802
        if self._attached:
            raise Error("Device is already attached")
        self._attached = True

    def copyWeightsToHost(self) -> None:  # noqa: N802
        """The host module already holds the weights (they are shared)."""
        self._needs_compiled()

    def copyWeightsToDevice(self) -> None:  # noqa: N802
        """The host's buffers go to every replica (the weights are shared)."""
        self._needs_compiled()
        if self._device_state is not None:
            self._device_state.buffers.broadcast()

    def setOptimizer(self, optimizer) -> None:  # noqa: N802
        """Use ``optimizer`` (its hyper-parameters) from the next call on."""
        self.optimizer = optimizer

    def destroy(self) -> None:
        """Unwrap the model (it can be wrapped again); the next call recompiles."""
        self._signature = None
        self._attached = False
        if self.training:
            self.model._poptorch_wrapped = False

    def _needs_compiled(self):
        if self._signature is None:
            raise Error("Model has not been compiled or has been destroyed.")

    def __getattr__(self, name):
        if name in ("model", "options"):
            raise AttributeError(name)
        return getattr(self.model, name)

    # ---- a call ---------------------------------------------------------------------------
    def _factors(self):
        d = self.options
        s = int(d.device_iterations)
        r = int(d.replication_factor)
        a = int(d.Training.gradient_accumulation) if self.training else 1
        return s, r, a

    def _check_first(self, args, kwargs):
        s, r, a = self._factors()
        n = s * r * a
        for t in _leaves([list(args), kwargs]):
            b = t.shape[0] if t.dim() else 1
            if b % n != 0:
                raise AssertionError(
                    f"Invalid batch dimension: In the input {list(t.shape)}, the batch "
                    f"dimension ({b}) must be a multiple of Options.deviceIterations({s}) * "
                    f"(Options.replicationFactor({r}) / "
                    f"Options.inputReplicaGrouping.input_group_size(1)) * "
                    f"Options.Training.gradientAccumulation({a}) = {n} because it is used to "
                    "calculate the batch size which will be executed on the device in any "
                    "given iteration. For a full explanation see the batching semantics page "
                    "of the documentation.")
            if t.numel() == 0:
                raise Error(f"Zero-sized tensors are unsupported (Got shape {list(t.shape)})")
        return [(tuple(t.shape), t.dtype) for t in _leaves([list(args), kwargs])]

    def _check_later(self, args, kwargs):
        seen = [(tuple(t.shape), t.dtype) for t in _leaves([list(args), kwargs])]
        if len(seen) != len(self._signature):
            raise Error(f"Number of positional arguments mismatch: expected "
                        f"{len(self._signature)} arguments but got {len(seen)}")
        for j, ((shape, dtype), (want, want_dtype)) in enumerate(zip(seen, self._signature)):
            if shape != want:
                raise Error(f"Shape mismatch for input {j}: expected "
                            f"{torch.Size(want)} but got {torch.Size(shape)}. To recompile "
                            "with new inputs, call destroy() or make a new wrapper.")
            if dtype != want_dtype:
                raise Error(f"Data type mismatch for input {j}: expected {want_dtype} but got "
                            f"{dtype}. To recompile, call destroy() or make a new wrapper.")

    def __call__(self, *args, **kwargs):
        params = None
        if self._signature is None:
            params = dict(self.model.named_parameters())  # as before the compile's trace
            self.compile(*args, **kwargs)
        else:
            self._check_later(args, kwargs)
        self._attached = True
        state = self._device_state
        first = state is None or state.signature is not self._signature
        try:
            if first:
                state = self._device_state = DeviceState(
                    self, _leaves([list(args), kwargs]), self._factors(), params)
            with state.random:
                return self._run(state, args, kwargs, first)
        except BaseException:
            if first:  # the compile failed: the next call compiles again
                self._signature = None
                self._device_state = None
            raise

    def _run(self, state, args, kwargs, first):
        s, r, a = self._factors()
        training = self.training
        mode = OutputMode(int(self.options.output_mode))
        period = int(self.options.output_return_period)
        reduction = int(self.options.Training.accumulation_and_replication_reduction_type)
        scale = 1.0 / (a * r) if reduction == ReductionType.Mean.value else 1.0
        if training:
            scale *= float(getattr(self.optimizer, "loss_scaling", 1.0) or 1.0)

        if state.synthetic is None:
            def view(t):  # dim 0 as [S, A, R, B]; a 0-dim tensor goes to every micro-batch
                return t.reshape(s, a, r, t.shape[0] // (s * a * r), *t.shape[1:]) \
                    if t.dim() else t
            shaped_args = _map(view, list(args))
            shaped_kwargs = _map(view, kwargs)

            def inputs(si, ai, ri):
                def pick(v):
                    return v[si, ai, ri] if v.dim() else v
                return _map(pick, shaped_args), _map(pick, shaped_kwargs)
        else:  # host data is not read: the same synthetic micro-batch every time
            def inputs(si, ai, ri):
                it = iter(state.synthetic)
                return (_map(lambda _: next(it).clone(), list(args)),
                        _map(lambda _: next(it).clone(), kwargs))

        kept = {}  # (s, a, r) -> the output leaves the output mode returns
        sums = [None] * r  # OutputMode.Sum: per replica running sums
        template = _NOTHING
        checks = state.checks if first else None
        buffers = state.buffers
        buffers.begin_call()
        try:
            for si in range(s):
                if training:
                    self.optimizer.zero_grad()
                for ai in range(a):
                    keep = (mode == OutputMode.All
                            or (mode == OutputMode.Final and si == s - 1 and ai == a - 1)
                            or (mode == OutputMode.EveryN and si % period == period - 1))
                    for ri in range(r):
                        xs, kw = inputs(si, ai, ri)
                        buffers.enter(ri)
                        if training:
                            with _running(self, xs, kw):
                                out = self.model(*xs, **kw)
                            if checks is not None:
                                checks.check()
                                checks = None
                            loss = _find_loss(out)
                            (loss if scale == 1.0 else loss * scale).backward()
                        else:
                            with torch.no_grad(), _running(self, xs, kw):
                                out = self.model(*xs, **kw)
                            if checks is not None:
                                checks.check()
                                checks = None
                        buffers.leave(ri)
                        if template is _NOTHING:
                            template = _map(lambda _: _PLACEHOLDER, out)
                        leaves = _leaves(out)
                        if mode == OutputMode.Sum:
                            if sums[ri] is None:
                                sums[ri] = [t.detach().clone() for t in leaves]
                            else:
                                for acc, t in zip(sums[ri], leaves):
                                    acc.add_(t.detach())
                        elif keep:
                            kept[(si, ai, ri)] = [t.detach().clone() for t in leaves]
                if training:
                    self._step()
        finally:
            buffers.end_call()
        return self._assemble(template, kept, sums, mode, period, s, a, r,
                              state.synthetic is not None)

    def _step(self):
        opt = self.optimizer
        ls = float(getattr(opt, "loss_scaling", 1.0) or 1.0)
        params = [p for g in opt.param_groups for p in g["params"] if p.grad is not None]
        if ls != 1.0:
            for p in params:
                p.grad.div_(ls)
        norm = _max_grad_norm(opt)
        if norm is not None:
            torch.nn.utils.clip_grad_norm_(params, norm)
        state = self._device_state
        if state is not None and state.stochastic_rounding:
            with HalfUpdatesInFloat32(params):
                apply_update(opt)
        else:
            apply_update(opt)  # the device's update rule, never a subclass's Python step

    @staticmethod
    def _assemble(template, kept, sums, mode, period, s, a, r, synthetic):
        """One call's result from the micro-batch outputs the mode keeps (research 2.2):
        k = S*A*R (All), S/N*A*R (EveryN), R (Final, Sum) values per output, concatenated
        on dim 0 (a 0-dim output stacks to [k]); k == 1 keeps the micro-batch shape."""
        if template is _NOTHING or template is None:
            return None
        if mode == OutputMode.Final:
            groups = [kept[(s - 1, a - 1, ri)] for ri in range(r)]
        elif mode == OutputMode.Sum:
            groups = sums
        else:
            first = period - 1 if mode == OutputMode.EveryN else 0
            step = period if mode == OutputMode.EveryN else 1
            groups = [kept[(si, ai, ri)] for si in range(first, s, step)
                      for ai in range(a) for ri in range(r)]
        k = len(groups)
        combined = []
        for j in range(len(groups[0])):
            values = [g[j] for g in groups]
            if k == 1:
                value = values[0]
            elif values[0].dim() == 0:
                value = torch.stack(values)
            else:
                value = torch.cat(values, 0)
            # synthetic data: the device writes nothing back (PopTorch's outputs are
            # uninitialised host tensors); zeros stand in for them
            combined.append(torch.zeros_like(value) if synthetic else value)
        it = iter(combined)
        return _map(lambda _: next(it), template)

def trainingModel(model, options=None, optimizer=None):  # noqa: N802 - PopTorch's name
    """Wrap ``model`` for training: each call runs ``deviceIterations`` optimizer steps on
    the batch (see the module doc); the default optimizer is ``poptorch.optim.SGD(lr=0.01)``.

    Raises:
      RuntimeError: the model is already wrapped (PopTorch's message)."""
    if isinstance(model, PoplarExecutor):
        model = model.model
    return PoplarExecutor(model, options, True, optimizer)


def inferenceModel(model, options=None):  # noqa: N802 - PopTorch's name
    """Wrap ``model`` for inference (no gradients; outputMode default All)."""
    if isinstance(model, PoplarExecutor):
        model = model.model
    return PoplarExecutor(model, options, False)
