"""``poptorch.trainingModel`` / ``inferenceModel``: the user's ``torch.nn.Module`` run on
PyTorch with PopTorch's batching arithmetic (research/poptorch_semantics.md sections 2, 3, 7).

One call takes a batch of ``N = S * R * A`` micro-batches (S ``deviceIterations``, R
``replicationFactor``, A ``Training.gradientAccumulation``, 1 for inference): dim 0 of every
tensor argument is viewed as ``[S, A, R, B, ...]`` (with ``inputReplicaGrouping`` the host
batch holds ``S * (R / G) * A`` micro-batches, read as PopTorch's StepIO reads them:
``input_groups``). For each device iteration s, every
(accumulation step a, replica r) micro-batch runs ``forward`` with the weights of the start
of the iteration; in training its loss is back-propagated from the loss scale and the
gradients are reduced over the A * R micro-batches in PopART's order (``grad_reduction``:
mean by default, ``ReductionType.Sum`` sums) before one optimizer step, so one call makes S
steps. Outputs are assembled per ``outputMode`` (All, Final, Sum,
EveryN; training default Final, inference All) with the leading factor k (a micro-batch
output keeps its shape when k is 1).

The loss: a tensor returned by ``poptorch.identity_loss`` among the outputs, else the last
0-dim output that requires a gradient (PopTorch lowers torch's loss functions to identity
losses; the emulator cannot see inside ``forward``); none is ``poptorch.Error("Couldn't find
a loss in graph!")``.

Replicas share the module's parameters (identical under the gradient reduction) and each
keeps its own buffers (``device_state.ReplicaBuffers``: BatchNorm statistics move with the
replica's own micro-batches, as with ``broadcastBuffers(False)`` on the IPU); the host module
reads replica 0's. Random ops draw from the device's streams seeded by ``randomSeed``
(replica r's with ``randomSeed + r``, as PopART; ``device_state.DeviceRandom``, read and set
through ``rng_state``), ``Precision.enableStochasticRounding`` rounds float16 weight
updates stochastically, and ``enableSyntheticData`` feeds the model synthetic micro-batches
instead of the host's data.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import weakref

import torch

from ..emulation import observe as _observe
from . import device_pool, host_sync, input_groups, loss_scaling
from ._tensor_tree import tensor_leaves
from .anchors import Anchors
from .device_state import DeviceState, HalfUpdatesInFloat32, draws_integers, synthetic_batch
from .enums import CommGroupType, ConnectionType, OutputMode
from .errors import Error
from .grad_reduction import GradientReduction
from .ops import _running
from .optim import (
    apply_update,
    differs,
    folds_gradient_scale,
)
from .replica_weights import GroupingHandle, ReplicaGroupedWeights

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


_NEVER = ConnectionType.Never.value
_NOTHING = object()  # no micro-batch has run yet
_PLACEHOLDER = torch.empty(0)  # a tensor leaf in an output's structure


def _find_loss(out, leaves=None):
    if leaves is None:
        leaves = tensor_leaves(out)
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


# ---- lifecycle helpers (device pool, weights, flags) -----------------------------------------
logger = logging.getLogger("poptorch::python")
_TRAINERS = weakref.WeakKeyDictionary()  # user module -> weakref to its training executor
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller_site() -> str:
    """``file:line`` of the user code that created the wrapper (for error messages)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.dirname(
            os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


@contextlib.contextmanager
def _module_flags(flags):
    """Set each module's ``training`` flag as ``flags`` says for the body, then restore
    (only where it differs: ``Module.__setattr__`` costs microseconds a module)."""
    saved = [(m, m.training) for m in flags]
    try:
        for m, flag in flags.items():
            if m.training is not flag:
                m.training = flag
        yield
    finally:
        for m, flag in saved:
            if m.training is not flag:
                m.training = flag


class PoplarExecutor:
    """A wrapped model (what ``trainingModel``/``inferenceModel`` return): call it like the
    module; ``options`` (frozen), ``model`` (the user's module) and PopTorch's methods."""

    def __init__(self, model, options, training, optimizer=None):
        from .options import Options

        if training and getattr(model, "_poptorch_wrapped", False):
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
        self._replica_groupings = {}  # parameter name -> replicaGrouping() arguments
        self._anchors = None  # Options.anchorTensor's tensors once compiled (anchors.py)
        self._grouped_weights = None  # their ReplicaGroupedWeights once compiled
        # per-replica buffers, random stream, synthetic inputs of the compiled executable
        self._device_state = None
        self._synthetic_integers = True  # integer inputs get random synthetic values
        self._lifecycle_init()

    # ---- PopTorch's methods: device lifecycle, weights, optimizer, executables ----------
    # research/poptorch_semantics.md 3.2, 3.5, 3.6. The emulated device holds a copy of the
    # weights (``_device_weights``): taken when the model attaches (compile with
    # ConnectionType.Always, else its first run, and every attachToDevice) and by
    # copyWeightsToDevice(); a call runs on that copy (swapped into the host tensors' .data
    # for the call), so host edits reach the device only through copyWeightsToDevice() /
    # load_state_dict() / a new attach, as on an IPU. A training model's weights reach the
    # host module when the host reads them (host_sync: PopTorch's wrapper classes), and an
    # inference model of the same module re-copies them before its next call. The modules'
    # train/eval flags are frozen at compilation (the top module's at wrapping, as PopTorch
    # wraps a shallow copy).
    def _lifecycle_init(self) -> None:
        self._lease = None  # the pool's key for the IPUs held, or None
        self._release = None  # weakref.finalize giving the IPUs back at garbage collection
        self._device_weights = None  # {id(host tensor): (host tensor, device tensor)}
        self._weights_version = 0  # training without host_sync: bumped at every write-back
        self._host_sync = None  # training: the module's lazy write-back (host_sync)
        self._trainer_version_seen = None  # inference: the trainer's version it copied
        self._wrap_flag = bool(self.model.training)
        self._compiled_flags = None
        self._optimizer_description = None  # optim.describe() of the compiled optimizer
        self._device_hyperparameters = None  # optim.hyperparameters() the device holds
        self._input_template = None
        self._rng_cache = None  # rng_state set before the device state exists
        self._origin = _caller_site()
        if self.training:
            from . import optim

            self._attribute_tracker = optim.AttributeTracker(
                bool(getattr(self.options, "_relax_optimizer_checks", False)))
            self._take_optimizer(self.optimizer)
            _TRAINERS[self.model] = weakref.ref(self)
            self._wrap_for_host_reads()

    def _wrap_for_host_reads(self) -> None:
        """Install the lazy write-back (host_sync) where the module's tensors allow it; a
        module with other tensor classes gets its weights after every call instead."""
        if host_sync.HostSync.supports(self.model):
            sync = host_sync.HostSync(self.model, self)
            if sync.install():
                self._host_sync = sync

    def _host_version(self) -> int:
        """The training model's host weights version (bumped by every write-back)."""
        sync = self._host_sync
        return sync.version if sync is not None else self._weights_version

    def _holder(self) -> str:
        kind = "trainingModel" if self.training else "inferenceModel"
        name = host_sync.plain_type(self.model).__name__
        return f"poptorch.{kind}({name}) created at {self._origin}"

    def _connection(self):
        return ConnectionType(int(self.options.connection_type))

    def _uses_ipu_model(self) -> bool:
        values = self.options._values
        if "use_model" in values:
            return bool(values["use_model"])
        return any(os.environ.get(v, "0") not in ("", "0")
                   for v in ("POPTORCH_IPU_MODEL", "POPTORCH_SMALL_IPU_MODEL"))

    def _check_device_options(self) -> None:
        values = self.options._values
        never = self._connection() == ConnectionType.Never
        cycles = self.options._Popart.options.get("instrumentWithHardwareCycleCounter", False)
        if self._uses_ipu_model():
            if cycles:
                raise Error("Cycle count logging is only supported on actual IPU hardware.")
            if never:
                raise Error("ConnectionType.Never / poptorch.Options.useOfflineIpuTarget not "
                            "supported for the IPU model")
        elif never:
            if "ipu_id" in values:
                raise Error("Offline compilation targeting a specific id not supported")
            if cycles:
                raise Error("Cycle count logging is only supported on actual IPU hardware.")

    def compile(self, *args, **kwargs) -> None:
        """Compile the model for these inputs (the arguments of the model's call) without
        running it; PopTorch traces and compiles, ipu_gpu checks and records the input
        signature, places the ops (blocks), records the optimizer's compiled constants and
        the modules' train/eval flags, stores or finds the executable in the cache
        (``enableExecutableCaching``), and with ``ConnectionType.Always`` (the default)
        acquires the IPUs and copies the weights to them. A second call only warns.

        Raises:
          poptorch.Error: no free IPUs (see ``device_pool``), an invalid device choice."""
        if self._signature is not None:
            logger.warning("Call to compile() ignored: the executable is already compiled")
            return
        from .blocks import _trace_placement

        self._check_device_options()
        show = getattr(self.options, "_show_compilation_progress_bar", False)
        bar = getattr(self.options, "_progress_bar", None) if show else None
        if bar is not None:
            bar(0, 100)
        signature = self._check_first(args, kwargs)
        from .executable_cache import TensorSpec

        self._input_template = _map(TensorSpec.of, [list(args), kwargs])
        self._grouped_weights = ReplicaGroupedWeights(
            self.model, self._replica_groupings, self._factors()[1]) or None
        self._anchors = Anchors(
            self, self.training and loss_scaling.enabled(self.options)) or None
        with _module_flags({self.model: self._wrap_flag}):
            # PopTorch's trace: placement and its checks (on the synthetic inputs if any)
            self._trace_synthetic(_trace_placement, args, kwargs)
        self._signature = signature
        try:
            self._compiled(ConnectionType)
        except BaseException:
            self._signature = None
            raise
        if bar is not None:
            bar(100, 100)

    def _trace_synthetic(self, trace, args, kwargs) -> None:
        """``trace(self, args, kwargs)`` on the inputs the device reads. Synthetic random
        integers (PopART's rounded normal or uniform samples) may be negative or too large
        for torch's index-checked ops (``cross_entropy``, ``embedding``, ``one_hot``...),
        which raise where the IPU reads out of range without an error: then the trace runs
        again, and the device runs, with zeros for the integer inputs, and a warning says
        so. An error that remains with zeros is the model's own and is raised."""
        self._synthetic_integers = True
        try:
            trace(self, *synthetic_batch(self.options, args, kwargs, _map, self._factors()))
        except (IndexError, RuntimeError) as error:
            if isinstance(error, Error) or not draws_integers(self.options, args, kwargs):
                raise
            logger.warning(
                "%s: with enableSyntheticData the integer inputs are PopART's random "
                "integers, which torch's index-checked ops reject (%s); the IPU reads such "
                "labels or indices out of range without an error. ipu_gpu feeds zeros to "
                "the integer inputs instead.", self._holder(), str(error).splitlines()[0])
            self._synthetic_integers = False
            trace(self, *synthetic_batch(self.options, args, kwargs, _map, self._factors(),
                                         integers=False))

    def _compiled(self, connection_types) -> None:
        from . import executable_cache

        flags = {m: m.training for m in self.model.modules()}
        flags[self.model] = self._wrap_flag
        self._compiled_flags = flags
        if self.training:  # the optimizer's hyper-parameters are uploaded with the weights
            from . import optim

            self._optimizer_description = self._describe_optimizer(self.optimizer)
            self._device_hyperparameters = optim.hyperparameters(self.optimizer)
        if self._connection() == connection_types.Always and not self._attached:
            self._attach()
        if self._uses_ipu_model():
            if self.options._Popart.options.get("enableEngineCaching", False):
                logger.warning("enableExecutableCaching doesn't work with the IPU model")
        else:
            executable_cache.cache_entry(self)

    def _num_ipus(self) -> int:
        record = self.__dict__.get("_placement_record")
        if record is not None:
            return int(record.num_ipus)
        return int(self.options.replication_factor)

    def _attach(self) -> None:
        """Take the IPUs (none for the IPU Model) and copy the weights to them."""
        if not self._uses_ipu_model() and self._lease is None:
            pool = device_pool.pool()
            key, _ = pool.acquire(self._num_ipus(), self._holder(),
                                  self.options._values.get("ipu_id"))
            self._lease = key
            self._release = weakref.finalize(self, pool.release, key)
        self._attached = True
        self._upload_weights()
        trainer = self._trainer()
        if trainer is not None:
            self._trainer_version_seen = trainer._host_version()

    def _detach(self) -> None:
        if self._release is not None:
            self._release()  # gives the IPUs back (once)
        self._lease = None
        self._release = None
        self._device_weights = None
        self._attached = False

    def _trainer(self):
        """The training model of the same module, for an inference model (else None)."""
        if self.training:
            return None
        ref = _TRAINERS.get(self.model)
        trainer = ref() if ref is not None else None
        return trainer if trainer is not None and trainer.isCompiled() else None

    def _host_tensors(self) -> list:
        found = {}
        for _, t in self.model.named_parameters():
            found.setdefault(id(t), t)
        for _, t in self.model.named_buffers():
            found.setdefault(id(t), t)
        return list(found.values())

    def _upload_weights(self) -> None:
        with torch.no_grad():
            self._device_weights = {id(t): (t, t.detach().clone())
                                    for t in self._host_tensors()}
        if self._device_state is not None:  # the host's buffers go to every replica
            self._device_state.buffers.broadcast()

    def _download_weights(self) -> None:
        if self._device_weights is None:
            return
        sync = self._host_sync
        if sync is not None:
            sync.pending = self._device_weights
            sync.flush()
            return
        with torch.no_grad():
            for host, device in self._device_weights.values():
                host.copy_(device)
        self._weights_version += 1

    def _before_call(self) -> None:
        """PopTorch's first check in ``__call__``: an offline model cannot run."""
        # the option's int: an enum built per call costs microseconds
        assert int(self.options._values["connection_type"]) != _NEVER, (
            "Trying to run a model on an offline device (ConnectionType.Never): use "
            "model.compile(inputs) instead of model(inputs)")

    def _attach_for_call(self) -> None:
        """Attach if detached (a call attaches again); an inference model re-copies the
        weights its module's training model has changed since its last copy."""
        if not self._attached:
            self.attachToDevice()
        trainer = self._trainer()
        if trainer is not None:
            if trainer._host_sync is not None:
                trainer._host_sync.flush()  # PopTorch: copyWeightsToHostIfNeeded() first
            if trainer._host_version() != self._trainer_version_seen:
                logger.debug("Implicit copyWeightsToDevice()")
                self._upload_weights()
                self._trainer_version_seen = trainer._host_version()

    @contextlib.contextmanager
    def _on_device(self):
        """Run the body on the device's weights and the compiled train/eval flags, with
        the module's plain classes (host_sync); a training model's host module has stale
        weights afterwards, until it is read."""
        weights = self._device_weights or {}
        swapped = []
        with host_sync.unwrapped(self.model), _module_flags(self._compiled_flags or {}):
            try:
                for key, (host, device) in weights.items():
                    swapped.append((key, host, host.data))
                    host.data = device
                yield
            finally:
                for key, host, data in swapped:
                    weights[key] = (host, host.data)
                    host.data = data
                if self.training:
                    if self._host_sync is not None:
                        self._host_sync.pending = self._device_weights
                    else:
                        self._download_weights()

    def isCompiled(self) -> bool:  # noqa: N802 - PopTorch's name
        """Whether the model is compiled (and not destroyed)."""
        return self._signature is not None

    def isAttachedToDevice(self) -> bool:  # noqa: N802
        """Whether the compiled model holds its IPUs now."""
        return self.isCompiled() and self._attached

    def detachFromDevice(self) -> None:  # noqa: N802
        """Give the IPUs back (a training model's weights are on the host first); the next
        call, or ``attachToDevice()``, attaches again and copies the host's weights.

        Raises:
          poptorch.Error: not compiled, or not attached (PopTorch's messages)."""
        self._needs_compiled()
        if not self._attached:
            raise Error("Device is not attached")
        if self.training:
            self._download_weights()
        self._detach()

    def attachToDevice(self) -> None:  # noqa: N802
        """Take the IPUs again and copy the host's weights to them.

        Raises:
          poptorch.Error: not compiled, already attached, or no free IPUs.
          AssertionError: ``ConnectionType.Never`` (PopTorch's messages)."""
        self._needs_compiled()
        assert self._connection() != ConnectionType.Never, (
            "Trying to attach to an offline device (ConnectionType.Never)")
        if self._attached:
            raise Error("Device is already attached")
        self._attach()

    def copyWeightsToHost(self) -> None:  # noqa: N802
        """Copy the device's weights and buffers into the host module now (a training
        model's host module also gets them when it is first read after a call; an
        inference model's changed buffers need this).

        Raises:
          poptorch.Error: not compiled or destroyed (PopTorch's message)."""
        self._needs_compiled()
        self._download_weights()

    def copyWeightsToDevice(self) -> None:  # noqa: N802
        """Copy the host module's weights and buffers to the device: host edits made after
        the model attached are used from the next call on. (Reading the host module first
        brings a training model's newer weights to it, so nothing is lost; PopTorch skips
        that copy here and would send the host's stale weights.)

        Raises:
          poptorch.Error: not compiled or destroyed (PopTorch's message)."""
        self._needs_compiled()
        if self._attached:
            self._upload_weights()

    def copyNamedBuffersToDevice(self) -> None:  # noqa: N802
        """Copy only the buffers ``Options.updatableNamedBuffers`` names from the host to
        the device (every replica's copy).

        Raises:
          poptorch.Error: not compiled, or no buffers named (PopTorch's messages).
          KeyError: a name that is not one of the model's buffers."""
        self._needs_compiled()
        names = self.options._Popart.options.get("updatableNamedBuffers")
        if names is None:
            raise Error("No named buffers marked as updatable via updatableNamedBuffers "
                        "option")
        buffers = dict(self.model.named_buffers())
        chosen = [(name, buffers[name]) for name in names]
        if not self._attached:
            return  # attaching copies every weight and buffer
        state = self._device_state
        with torch.no_grad():
            for name, host in chosen:
                if id(host) in self._device_weights:
                    self._device_weights[id(host)] = (host, host.detach().clone())
                for r in range(1, state.buffers.replicas if state is not None else 1):
                    replica = state.buffers.replica(r).get(name)
                    if replica is not None:
                        replica.copy_(host)

    def load_state_dict(self, state_dict, strict: bool = True):
        """``model.load_state_dict`` on the wrapped module, then ``copyWeightsToDevice()``
        when attached; returns torch's ``(missing_keys, unexpected_keys)``."""
        out = self.model.load_state_dict(state_dict, strict)
        if self.isAttachedToDevice():
            logger.debug("load_state_dict: implicit copyWeightsToDevice()")
            self.copyWeightsToDevice()
        return out

    def setOptimizer(self, optimizer) -> None:  # noqa: N802
        """Use ``optimizer`` from the next call on: a new optimizer, or the same one after
        its hyper-parameters changed. As in PopTorch, the device holds the hyper-parameters
        given at compilation and by ``setOptimizer``: edits on the host (an LR scheduler's
        ``step()`` included) take effect only through this call. After compilation the
        PopART optimizer type and the attributes compiled as constants cannot change
        (``optim.check_constant_attributes``, PopART's messages).

        Raises:
          AssertionError: an unsupported optimizer type (PopTorch's message).
          ValueError: ``amsgrad``, or a float16 ``accum_type`` needing another mean
            reduction strategy after compilation (PopTorch's messages).
          poptorch.Error: another optimizer type or a changed constant after compilation.
          AttributeError: an inference model (it has no optimizer)."""
        if not self.training:
            raise AttributeError("setOptimizer: an inferenceModel has no optimizer; wrap the "
                                 "model with poptorch.trainingModel to train it")
        from . import optim

        optim.check_supported(optimizer)
        self._take_optimizer(optimizer)

    def _take_optimizer(self, optimizer) -> None:
        from . import optim

        compiled = self.isCompiled()
        optim.select_mean_reduction_strategy(optimizer, self.options, compiled)
        self._attribute_tracker.check(optimizer)
        if compiled and self._optimizer_description is not None:
            optim.check_constant_attributes(self._optimizer_description,
                                            self._describe_optimizer(optimizer))
        old = self.optimizer
        if (compiled and old is not None and optimizer is not old
                and type(optimizer) is type(old) and not optimizer.state):
            # the device keeps its optimizer state (momentum, moments) when only the
            # hyper-parameters are uploaded: the new optimizer goes on from it
            for param, state in old.state.items():
                optimizer.state[param] = state
        self.optimizer = optimizer
        if compiled:
            self._device_hyperparameters = optim.hyperparameters(optimizer)

    def _describe_optimizer(self, optimizer) -> dict:
        from . import optim

        optim.bind_parameter_names(optimizer, self.model.named_parameters())
        return optim.describe(optimizer)

    def destroy(self) -> None:
        """Release the IPUs and the executable (a training model's weights are on the host
        first) and unwrap the module so that it can be wrapped again; the next call
        compiles again. Nothing else happens to a model that is not compiled (as
        PopTorch)."""
        if not self.isCompiled():
            if self._lease is not None:  # a first call that failed after attaching
                self._detach()
            return
        if self.training:
            self._download_weights()
            if _TRAINERS.get(self.model) is not None and _TRAINERS[self.model]() is self:
                del _TRAINERS[self.model]
            if self._host_sync is not None:  # PopTorch unwraps the module
                self._host_sync.remove()
                self._host_sync = None
        self._detach()
        self._signature = None
        self._device_state = None
        self._rng_cache = None
        self._anchors = None
        self._compiled_flags = None
        self._optimizer_description = None
        self._device_hyperparameters = None
        if self.training:
            self.model._poptorch_wrapped = False

    def train(self, mode: bool = True):
        """The wrapped module's ``train(mode)`` (PopTorch forwards it and returns the
        module). It changes nothing in a compiled model, whose train/eval behaviour was
        fixed at compilation; a warning says so."""
        self._warn_mode(mode)
        return self.model.train(mode)

    def eval(self):
        """The wrapped module's ``eval()``; see :meth:`train`."""
        self._warn_mode(False)
        return self.model.eval()

    def _warn_mode(self, mode: bool) -> None:
        if self._compiled_flags is not None and self._compiled_flags.get(self.model) != mode:
            logger.warning("%s: %s() has no effect on the compiled model (its train/eval "
                           "behaviour was fixed when it was compiled); it changes the "
                           "wrapped module only. Call destroy() and run the model again to "
                           "recompile.", self._holder(), "train" if mode else "eval")

    def cycleCount(self) -> int:  # noqa: N802
        """PopTorch: the IPU cycles of the last run (``Options.logCycleCount(True)``).

        Raises:
          poptorch.Error: always: cycle logging off, or the model not compiled (PopTorch's
            messages), else because these are IPU hardware cycle counts, which an emulator
            cannot measure."""
        if not self.options._Popart.options.get("instrumentWithHardwareCycleCounter", False):
            raise Error("Cycle count logging is disabled. Please set option logCycleCount to "
                        "True to enable.")
        if not self.isCompiled():
            raise Error("Please run the model at least once before obtaining cycle count.")
        raise Error("cycleCount(): IPU hardware cycle counts are not available: ipu_gpu "
                    "emulates the IPU on a CPU/GPU and has no IPU cycle counter to read. "
                    "Time the calls on the host instead (time.perf_counter()).")

    def getPerfCounters(self):  # noqa: N802
        """PopTorch: the IPU's host-I/O performance counters of the last run; empty lists
        before compilation, as PopTorch.

        Raises:
          poptorch.Error: once compiled: the counters are IPU hardware timestamps, which
            an emulator cannot give."""
        if not self.isCompiled():
            return {"input": [[]], "input_complete": [[]], "output": [[]],
                    "output_complete": [[]]}
        raise Error("getPerfCounters(): the IPU's performance counters (hardware timestamps "
                    "of its host transfers and cycle counts) are not available: ipu_gpu "
                    "emulates the IPU and has no IPU hardware to read them from. Time the "
                    "calls on the host instead (time.perf_counter()).")

    def getHostIpuLatency(self):  # noqa: N802
        """PopTorch: host-to-IPU latency from the performance counters (see
        :meth:`getPerfCounters`, which raises once compiled)."""
        return self._latency()

    def getComputeLatency(self):  # noqa: N802
        """PopTorch: IPU compute latency (see :meth:`getPerfCounters`)."""
        return self._latency()

    def getIpuHostLatency(self):  # noqa: N802
        """PopTorch: IPU-to-host latency (see :meth:`getPerfCounters`)."""
        return self._latency()

    def getLatency(self):  # noqa: N802
        """PopTorch: total latency (see :meth:`getPerfCounters`)."""
        return self._latency()

    def _latency(self):
        self.getPerfCounters()
        return (0.0, 0.0, 0.0)  # PopTorch's (min, max, mean) without any run

    def compilationTime(self):  # noqa: N802
        """How long the compilation took (a ``datetime.timedelta``).

        Raises:
          poptorch.Error: not compiled, or ``showCompilationProgressBar(False)``
            (PopTorch's messages)."""
        if not self.isCompiled():
            raise Error("Please compile the model before obtaining compilation time.")
        if not getattr(self.options, "_show_compilation_progress_bar", False):
            raise Error("Please set showCompilationProgressBar option to obtain compilation "
                        "time.")
        return self.options._progress_bar.compilation_time

    def compileAndExport(self, filename: str, *args, export_model: bool = True,  # noqa: N802
                         **kwargs) -> None:
        """Compile for these inputs and save the executable to ``filename`` (see
        ``executable_cache`` for the file); with ``export_model`` the module and optimizer
        are saved too, so that ``poptorch.load(filename)`` re-creates this model."""
        self.compile(*args, **kwargs)
        self.save(filename, export_model)

    def save(self, filename: str, export_model: bool = True,
             save_rng_state: bool = True) -> None:
        """Save the compiled executable (and with ``export_model`` the module and
        optimizer) to ``filename``; a directory gets ``model.poptorch``.
        With ``save_rng_state`` the file keeps ``rng_state`` too (``poptorch.load`` restores
        it).

        Raises:
          poptorch.Error: not compiled (PopTorch's message)."""
        from . import executable_cache

        self._needs_compiled()
        executable_cache.save(self, filename, export_model,
                              self.rng_state if save_rng_state else None)

    def loadExecutable(self, filename: str) -> None:  # noqa: N802
        """Use the executable saved in ``filename`` (by ``compileAndExport``, with or
        without the model) for this model: the model is compiled for the saved inputs and
        attaches as its connection type says.

        Raises:
          poptorch.Error: not such a file, another version's file, a file compiled for
            training loaded into an inference model (or the reverse), or other batching
            options."""
        from . import executable_cache

        self._load_executable_payload(filename, executable_cache.load_payload(filename))

    def _load_executable_payload(self, filename, payload) -> None:
        saved = payload["options"]
        if payload["training"] is not None and bool(payload["training"]) != self.training:
            kinds = ("an inference", "a training")
            raise Error(f"Invalid file {filename}: it holds {kinds[bool(payload['training'])]} "
                        f"executable and this is {kinds[self.training]} model")
        for group, name in (("", "device_iterations"), ("", "replication_factor"),
                            ("", "output_mode"), ("Training.", "gradient_accumulation")):
            theirs = getattr(saved.Training if group else saved, name)
            ours = getattr(self.options.Training if group else self.options, name)
            if theirs != ours:
                raise Error(f"Invalid file {filename}: the executable was compiled with "
                            f"{group}{name}={theirs} and this model's options have "
                            f"{group}{name}={ours}")
        # ipu_gpu's executable is the compiled signature: compile for the saved inputs
        # (zeros of their shapes and dtypes; PopTorch traces the model with them too)
        from .executable_cache import example_inputs

        args, kwargs = example_inputs(payload["input_template"])
        if self.isCompiled():
            self._detach()
            self._signature = None
        self.compile(*args, **kwargs)

    def getAnchoredTensor(self, short_name: str):  # noqa: N802 - PopTorch's name
        """The value of the tensor ``Options.anchorTensor(short_name, ...)`` anchored, from
        the last call (see ``anchors`` for the tensors and shapes).

        Raises:
          AssertionError: no such anchor, or no call yet (PopTorch's message)."""
        memory = self._anchors.memory if self._anchors is not None else {}
        assert short_name in memory, "No tensor with name " + short_name + " found."
        return memory[short_name]

    def getTensorNames(self) -> list:  # noqa: N802
        """The names of the tensors ``Options.anchorTensor`` can anchor: PopART lists every
        tensor of its graph; ipu_gpu, which has no PopART graph, the parameters and their
        ``Gradient___``/``UpdatedVar___`` tensors (and ``finalLossScale``): see ``anchors``.

        Raises:
          AssertionError: not compiled (PopTorch's message)."""
        from .anchors import tensor_names

        assert self.isCompiled(), "Model must be compiled before calling getTensorNames"
        return tensor_names(self.model, self.training,
                            self.training and loss_scaling.enabled(self.options))

    def copyWeightsToHostIfNeeded(self) -> bool:  # noqa: N802
        """Copy the device's weights to the host if the host's are stale (a training model
        ran since the host last read them); whether it copied."""
        sync = self._host_sync
        return sync.flush() if sync is not None else False

    @property
    def rng_state(self):
        """The device's random seed and generator state, ``[seed, *words]`` (32-bit words),
        as PopTorch 3.4: before the first run only ``[randomSeed]`` (None without one, or
        what was set). Set it (same form) to restore a state read earlier; ``[seed]`` alone
        restarts every random stream from ``seed``. ipu_gpu's words are its torch
        generators' states (one stream per replica and one shared stream), not the IPU's.

        Raises:
          poptorch.Error: not compiled (PopTorch's message); setting words that do not fit
            this model's streams."""
        self._needs_compiled()
        state = self._device_state
        if state is not None and state.signature is self._signature:
            return [state.random.seed, *state.random.words()]
        if self._rng_cache is not None:
            return list(self._rng_cache)
        if self.options.exists("random_seed"):
            return [int(self.options.random_seed)]
        return None

    @rng_state.setter
    def rng_state(self, value) -> None:
        self._needs_compiled()
        value = [int(v) for v in value]
        if not value:
            raise Error("Invalid RNG state: expected [seed, *state], got []")
        state = self._device_state
        if state is not None and state.signature is self._signature:
            self._apply_rng_state(value)
        else:
            self._rng_cache = value

    def _apply_rng_state(self, value) -> None:
        random = self._device_state.random
        random.reseed(value[0])
        if len(value) > 1:
            random.set_words(value[1:])
        self._rng_cache = None

    def _needs_compiled(self):
        if self._signature is None:
            raise Error("Model has not been compiled or has been destroyed.")

    def __getattr__(self, name):
        if name in ("model", "options"):
            raise AttributeError(name)
        value = getattr(self.model, name)
        if isinstance(value, torch.nn.Parameter):  # as PopTorch: for replicaGrouping()
            return GroupingHandle(self, name, value)
        return value

    def _replica_weights(self, replica: int):
        """The context replica ``replica``'s forward runs in (its grouped weights' slices)."""
        grouped = self._grouped_weights
        return grouped.replica(replica) if grouped is not None else contextlib.nullcontext()

    # ---- a call ---------------------------------------------------------------------------
    def _factors(self):
        # the options' stores: each attribute read raises and catches an AttributeError
        # before OptionsDict.__getattr__ answers (microseconds in every call)
        d = self.options
        s = int(d._values["device_iterations"])
        r = int(d._values["replication_factor"])
        a = int(d.Training._values["gradient_accumulation"]) if self.training else 1
        return s, r, a

    def _check_first(self, args, kwargs):
        s, r, a = self._factors()
        g = input_groups.group_size(self.options)
        n = s * (r // g) * a
        for t in tensor_leaves([list(args), kwargs]):
            b = t.shape[0] if t.dim() else 1
            if b % n != 0:
                raise AssertionError(
                    f"Invalid batch dimension: In the input {list(t.shape)}, the batch "
                    f"dimension ({b}) must be a multiple of Options.deviceIterations({s}) * "
                    f"(Options.replicationFactor({r}) / "
                    f"Options.inputReplicaGrouping.input_group_size({g})) * "
                    f"Options.Training.gradientAccumulation({a}) = {n} because it is used to "
                    "calculate the batch size which will be executed on the device in any "
                    "given iteration. For a full explanation see the batching semantics page "
                    "of the documentation.")
            if t.numel() == 0:
                raise Error(f"Zero-sized tensors are unsupported (Got shape {list(t.shape)})")
        return [(tuple(t.shape), t.dtype) for t in tensor_leaves([list(args), kwargs])]

    def _check_later(self, args, kwargs):
        seen = [(tuple(t.shape), t.dtype) for t in tensor_leaves([list(args), kwargs])]
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
        self._before_call()
        params = None
        if self._signature is None:
            params = dict(self.model.named_parameters())  # as before the compile's trace
            self.compile(*args, **kwargs)
        else:
            self._check_later(args, kwargs)
        self._attach_for_call()
        state = self._device_state
        first = state is None or state.signature is not self._signature
        try:
            if first:
                state = self._device_state = DeviceState(
                    self, tensor_leaves([list(args), kwargs]), self._factors(), params)
                if self._rng_cache is not None:
                    self._apply_rng_state(self._rng_cache)
            with state.random, self._on_device():
                if _observe.observer is None:
                    return self._run(state, args, kwargs, first)
                with _observe.observer.poptorch_running(self):  # stages and memory
                    begin = time.perf_counter()  # ipu-gpu run --report records the call
                    out = self._run(state, args, kwargs, first)
                _observe.observer.poptorch_call(self, begin, time.perf_counter(), out, args)
                return out
        except BaseException:
            if first:  # the compile failed: the next call compiles again
                self._signature = None
                self._device_state = None
            raise

    def _run(self, state, args, kwargs, first):
        s, r, a = self._factors()
        training = self.training
        mode = OutputMode(int(self.options._values["output_mode"]))
        period = int(self.options._values["output_return_period"])
        every_micro_batch = mode == OutputMode.All
        final = mode == OutputMode.Final
        every_n = mode == OutputMode.EveryN
        seed = 1.0  # the loss scale's factor at the loss (grad_reduction)
        als = state.loss_scaling  # automatic loss scaling, else None
        if training:
            ls = float(getattr(self.optimizer, "loss_scaling", 1.0) or 1.0)
            if als is not None:
                loss_scaling.FACTORS[self.optimizer] = als
            hyper = self._device_hyperparameters  # swapped in per update only if they differ
            if hyper is not None and not differs(self.optimizer, hyper):
                hyper = None
            # the gradients are reduced and unscaled in PopART's order (grad_reduction)
            reducing = GradientReduction(self.options, self.optimizer, a, r,
                                         seen=self._anchors is not None)
            seed = reducing.seed_factor
            # PopART's SGD0 folds 1 / (ls * af * rf) into its learning-rate scalar
            fold = (reducing.foldable and folds_gradient_scale(self.optimizer)
                    and not state.stochastic_rounding)
        scale = seed * ls if training else 1.0
        # the loss scale is typed as the loss (loss_scaling module): until the first loss
        # shows its dtype, the scale is provisional
        pending = training and state.scale_dtype is None
        if training and not pending:
            ls = self._loss_scale(state, als)
            scale = seed * ls

        g = input_groups.group_size(self.options)
        if state.synthetic is None and g > 1:
            # replica groups share micro-batches: PopTorch's StepIO order (input_groups)
            starts = input_groups.micro_batch_starts(
                s, a, r, g, int(self.options.input_cgt) == CommGroupType.Orthogonal.value)
            n = s * a * (r // g)

            def inputs(si, ai, ri):
                k = starts[si][ai][ri]

                def pick(t):
                    if not t.dim():
                        return t
                    b = t.shape[0] // n
                    return t[k * b:(k + 1) * b]
                return _map(pick, list(args)), _map(pick, kwargs)
        elif (state.synthetic is None and not kwargs
              and all(isinstance(t, torch.Tensor) and t.dim() for t in args)):
            # the usual call, model(x, y, ...): every micro-batch's view of dim 0 at once
            # (micro-batch k = (s * A + a) * R + r is rows [k * B, (k + 1) * B))
            n = s * a * r
            # n equal chunks (dim 0 is a multiple of n: _check_first): split's views,
            # without Tensor.split's Python wrapper
            micro = [t.chunk(n) for t in args]

            def inputs(si, ai, ri):
                k = (si * a + ai) * r + ri
                return [m[k] for m in micro], {}
        elif state.synthetic is None:
            def view(t):  # dim 0 as [S, A, R, B]; a 0-dim tensor goes to every micro-batch
                return t.reshape(s, a, r, t.shape[0] // (s * a * r), *t.shape[1:]) \
                    if t.dim() else t
            shaped_args = _map(view, list(args))
            shaped_kwargs = _map(view, kwargs)

            if not kwargs and all(isinstance(t, torch.Tensor) for t in args):
                # tensors only, some 0-dim: index the views directly (what _map does for a
                # flat list of tensors, without its per-micro-batch overhead)
                def inputs(si, ai, ri):
                    return [v[si, ai, ri] if v.dim() else v for v in shaped_args], {}
            else:
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
        summing = mode == OutputMode.Sum
        sums = [None] * r  # OutputMode.Sum: per replica running sums
        template = _NOTHING
        checks = state.checks if first else None
        buffers = state.buffers
        random = state.random
        grouped = self._grouped_weights
        anchors = self._anchors
        if anchors is not None:
            anchors.begin_call()
        buffers.begin_call()
        try:
            for si in range(s):
                if training:
                    reducing.begin_step()
                    if als is not None and not pending:
                        ls = als.loss_scale(self.optimizer)
                        scale = seed * ls
                for ai in range(a):
                    keep = (every_micro_batch
                            or (final and si == s - 1 and ai == a - 1)
                            or (every_n and si % period == period - 1))
                    for ri in range(r):
                        xs, kw = inputs(si, ai, ri)
                        leaves = None
                        if r > 1:  # replica ri's buffers, random stream, accumulators
                            buffers.enter(ri)
                            random.use(ri)
                            if training:
                                reducing.enter(ri)
                        if grouped is not None:
                            with self._replica_weights(ri), _running(self, xs, kw), \
                                    torch.set_grad_enabled(training), \
                                    (als.tracking(ri) if als is not None
                                     else contextlib.nullcontext()):
                                out = self.model(*xs, **kw)
                                if training:
                                    loss = _find_loss(out)
                                    if pending:
                                        ls, scale, pending = self._typed_scale(
                                            state, als, loss, seed)
                                    (loss * scale).backward()
                            if checks is not None:
                                checks.check()
                                checks = None
                            if als is not None and first and si == ai == ri == 0:
                                als.check_tracked()
                        elif training and als is not None:
                            with als.tracking(ri):
                                with _running(self, xs, kw):
                                    out = self.model(*xs, **kw)
                                if checks is not None:
                                    checks.check()
                                    checks = None
                                loss = _find_loss(out)
                                if pending:
                                    ls, scale, pending = self._typed_scale(
                                        state, als, loss, seed)
                                (loss * scale).backward()
                            if first and si == ai == ri == 0:
                                als.check_tracked()
                        elif training:
                            with _running(self, xs, kw):
                                out = self.model(*xs, **kw)
                            if checks is not None:
                                checks.check()
                                checks = None
                            leaves = tensor_leaves(out)
                            loss = _find_loss(out, leaves)
                            if pending:
                                ls, scale, pending = self._typed_scale(state, als, loss, seed)
                            (loss if scale == 1.0 else loss * scale).backward()
                        else:
                            with torch.no_grad(), _running(self, xs, kw):
                                out = self.model(*xs, **kw)
                            if checks is not None:
                                checks.check()
                                checks = None
                        if r > 1:
                            buffers.leave(ri)
                        if anchors is not None:
                            anchors.micro_batch(si, ai, ri)
                        if training:
                            reducing.take(ri)
                        if template is _NOTHING:
                            template = _map(lambda _: _PLACEHOLDER, out)
                        if summing:
                            if leaves is None:
                                leaves = tensor_leaves(out)
                            if sums[ri] is None:
                                sums[ri] = [t.detach().clone() for t in leaves]
                            else:
                                for acc, t in zip(sums[ri], leaves):
                                    acc.add_(t.detach())
                        elif keep:
                            if leaves is None:
                                leaves = tensor_leaves(out)
                            kept[(si, ai, ri)] = [t.detach().clone() for t in leaves]
                if training:
                    unscale = self._unscale(ls, als)
                    self._step(hyper, reducing.finish(unscale, fold), reducing.divisor(unscale))
                    if als is not None:
                        als.update()
                    if anchors is not None:
                        anchors.step(si, ls, state.scale_dtype)
        finally:
            buffers.end_call()
            if training:
                reducing.end_call()
        if anchors is not None:
            anchors.end_call(s, a, r)
        return self._assemble(template, kept, sums, mode, period, s, a, r,
                              state.synthetic is not None)

    def _loss_scale(self, state, als) -> float:
        """The coming step's loss scale, the loss gradient's seed: ALS's ``finalLossScale``
        (typed as the loss), else the optimizer's ``loss_scaling`` (which the float16
        backward rounds as PopART's float16 loss-scale tensor does)."""
        if als is not None:
            return als.loss_scale(self.optimizer)
        return float(getattr(self.optimizer, "loss_scaling", 1.0) or 1.0)

    def _unscale(self, ls, als) -> float:
        """What the update divides the gradients by: PopART folds ``1 / loss_scaling`` into
        the optimizer's compound scalars from the host's float value (not the float16
        tensor), and ALS divides them by the update factor (``finalInverseLossScale``)."""
        if als is None:
            return ls
        return float(getattr(self.optimizer, "loss_scaling", 1.0) or 1.0) * als.factor

    def _typed_scale(self, state, als, loss, seed):
        """The first loss fixes the loss scale's dtype: ``(ls, seed * ls, False)``."""
        state.scale_dtype = loss_scaling.scale_dtype(self.options, loss.dtype)
        if als is not None:
            als.set_loss_dtype(loss.dtype)
        ls = self._loss_scale(state, als)
        return ls, seed * ls, False

    def _step(self, hyperparameters, grad_divisor=None, divisor=None):
        """One weight update on the reduced, unscaled gradients: the device's update rule
        with ``hyperparameters`` (None: the host optimizer's values are the device's), which
        clips to ``max_grad_norm``. ``grad_divisor``: the gradients are the unnormalised sums,
        and the update folds ``1 / grad_divisor`` into its scalar (``grad_reduction``); else
        ``divisor`` is what they were divided by (SGD0 measures its clip input before)."""
        opt = self.optimizer
        state = self._device_state
        # max_grad_norm clips inside the update, where PopART's ClipWeightGradientsByNorm
        # acts for each optimizer (optim's module doc)
        if state is not None and state.stochastic_rounding:
            params = [p for g in opt.param_groups for p in g["params"] if p.grad is not None]
            state.random.use(state.random.IDENTICAL)  # the replicas round alike
            with HalfUpdatesInFloat32(params):
                apply_update(opt, hyperparameters, clip=True, clip_scale=divisor)
        else:
            # the device's update rule, never a subclass's Python step
            apply_update(opt, hyperparameters, grad_divisor, clip=True,
                         clip_scale=None if grad_divisor is not None else divisor)

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
