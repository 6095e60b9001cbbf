"""PopTorch's model-parallel annotations (``BeginBlock``, ``Block``, ``BlockFunction``,
``removeBlocks``) and the compile-time trace that places the model on IPUs (research
section 5).

Annotations split a model into blocks; the execution strategy
(``Options.setExecutionStrategy``: ``PipelinedExecution`` by default with
``AutoStage.SameAsIpu``) maps blocks to stages, phases and IPUs. On an IPU that decides where
each op runs, never what it computes, so outside a trace the annotations do nothing at all.

The trace is PopTorch's compilation: on a wrapped model's first call (or ``compile()``) the
executor runs ``forward`` once on the first micro-batch under a ``TorchDispatchMode`` that sees
every ATen op, as PopTorch's dispatcher does. Each op lands in the active block; the trace
then checks what PopTorch's compiler checks (ops outside any block, the IPU count, the
pipeline depth against gradient accumulation or device iterations, stage order, weights used
on two pipelined IPUs) with PopTorch's errors, and leaves the placement on the executor:
``executor._placement`` is ``{ipu: [module names]}`` (the innermost module running each op,
``""`` for the root module, in first-run order) and ``executor._placement_record`` the whole
:class:`Placement`. The trace's side effects on the model are undone (buffers, torch's RNG
streams), so numerics equal the unannotated model's.

Where this differs from PopTorch: the ops seen are ATen's after PyTorch's decompositions
(PopTorch's dispatcher sees nearly the same set), so an op PopTorch would fold away still
needs a block; a model with no op at all takes IPU 0 (PopTorch fails to compile it);
Python side effects of ``forward`` other than buffers and torch's RNG happen once more, as
in PopTorch's own trace; stage order is checked on the data (an op reading a tensor a later
stage made) with our message, where PopART fails to schedule with an internal one; a weight
read on two pipelined IPUs raises PopART's "Can not copy variable tensor ..." text.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import weakref
from collections import OrderedDict

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import enums
from ._tensor_tree import tensor_leaves
from .errors import Error
from .input_groups import host_micro_batches
from .log_level import logger
from .ops import _note_uses

__all__ = ["BeginBlock", "Block", "BlockFunction", "BlockRecord", "LegacyBeginBlockFn",
           "Placement", "removeBlocks"]

# The trace in progress (PopTorch's ``Block._stages_manager``); None means no-op annotations.
_TRACE = None
# Outside a trace, what hears each block begin at run time (a run report's ``begin(user_id,
# ipu_id)``/``end()``); None, the usual case, costs one test per block.
_RUN = None


def set_run_listener(listener) -> None:
    """Make ``listener`` hear the blocks begun while no trace runs (None removes it)."""
    global _RUN
    _RUN = listener


class Block(torch.nn.Module):
    """A context manager: the ops run inside ``with poptorch.Block(user_id, ipu_id):`` form
    one block (blocks with the same ``user_id`` are one block), placed on ``ipu_id`` unless
    the strategy's ``Stage`` says otherwise. After the scope ends no block is active until
    another starts; ops run then are an error when the model is compiled.

    Outside a wrapped model's compilation it does nothing."""

    @staticmethod
    def useAutoId() -> None:  # noqa: N802 - PopTorch's name
        """Restart the automatic ids ("0", "1", ...) that blocks with no ``user_id`` get;
        call it at the start of ``forward``."""
        if _TRACE is not None:
            _TRACE.next_auto_id = 0

    @staticmethod
    def start(user_id: str | None = None, ipu_id: int | None = None) -> None:
        """Start a block here (no scope): the ops that follow belong to it until the next
        block starts."""
        if _TRACE is not None:
            _TRACE.begin(user_id, ipu_id)
        elif _RUN is not None:
            _RUN.begin(user_id, ipu_id)

    def __init__(self, user_id: str | None = None, ipu_id: int | None = None) -> None:
        super().__init__()
        self._user_id = user_id
        self._ipu_id = ipu_id

    def __enter__(self) -> None:
        Block.start(self._user_id, self._ipu_id)

    def __exit__(self, exc_type, exc, tb) -> None:
        if _TRACE is not None:
            _TRACE.end()
        elif _RUN is not None:
            _RUN.end()


class LegacyBeginBlockFn(torch.nn.Module):
    """What ``BeginBlock`` returns for a callable that is not a module: calling it starts
    the block, then calls the function."""

    def __init__(self, layer_to_call, user_id=None, ipu_id=None) -> None:
        super().__init__()
        self._user_id = user_id
        self._layer_to_call = layer_to_call
        self._ipu_id = ipu_id

    def __call__(self, *args, **kwargs):
        if _TRACE is not None:
            if self._user_id is None:  # PopTorch keeps the automatic id from the first trace
                self._user_id = _TRACE.auto_id()
            _TRACE.begin(self._user_id, self._ipu_id)
        elif _RUN is not None:
            _RUN.begin(self._user_id, self._ipu_id)
        return self._layer_to_call(*args, **kwargs)


class _BlockHook:
    """The forward-pre-hook ``BeginBlock`` registers."""

    def __init__(self, user_id, ipu_id) -> None:
        self._user_id = user_id
        self._ipu_id = ipu_id

    def __call__(self, module, inputs) -> None:
        if _TRACE is not None:
            if self._user_id is None:
                self._user_id = _TRACE.auto_id()
            _TRACE.begin(self._user_id, self._ipu_id)
        elif _RUN is not None:
            _RUN.begin(self._user_id, self._ipu_id)

    def __repr__(self) -> str:
        return f"BeginBlock(user_id={self._user_id}, ipu_id={self._ipu_id})"


def BeginBlock(layer_to_call, user_id: str | None = None,  # noqa: N802 - PopTorch's name
               ipu_id: int | None = None):
    """Start a block when ``layer_to_call`` runs: the module (a forward-pre-hook is added to
    it; the same module is returned) and every layer run after it belong to the block until
    another block starts. Layers before the first block run on IPU 0. A callable that is not
    a module is wrapped in :class:`LegacyBeginBlockFn`.

    Raises:
      poptorch.Error: the module already starts a block ("module has already been assigned
        to a block."), or ``layer_to_call`` is neither a module nor callable."""
    if not isinstance(layer_to_call, torch.nn.Module):
        if callable(layer_to_call):
            return LegacyBeginBlockFn(layer_to_call, user_id, ipu_id)
        raise Error("module is not an instance of torch.nn.Module or function.")
    if any(isinstance(h, _BlockHook) for h in layer_to_call._forward_pre_hooks.values()):
        raise Error("module has already been assigned to a block.")
    layer_to_call.register_forward_pre_hook(_BlockHook(user_id, ipu_id))
    return layer_to_call


def BlockFunction(user_id: str | None = None, ipu_id: int | None = None):  # noqa: N802
    """A decorator: every call of the function runs inside ``Block(user_id, ipu_id)``."""

    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with Block(user_id, ipu_id):
                return func(*args, **kwargs)
        return wrapper
    return decorator


def removeBlocks(module) -> None:  # noqa: N802 - PopTorch's name
    """Remove the ``BeginBlock`` annotations of ``module`` and all its submodules.

    Raises:
      AssertionError: ``module`` is not a ``torch.nn.Module``."""
    assert isinstance(module, torch.nn.Module)
    for m in module.modules():
        m._forward_pre_hooks = OrderedDict(
            (k, h) for k, h in m._forward_pre_hooks.items() if not isinstance(h, _BlockHook))


# ---- the placement record ------------------------------------------------------------------
@dataclasses.dataclass
class BlockRecord:
    """One block as placed by the trace: its ``user_id`` (None for the layers before any
    block), stage, phase (-1 outside phased execution), IPU, and the modules and ATen ops
    that ran in it, in order (modules once each)."""

    user_id: str | None
    stage: int
    phase: int
    ipu: int
    modules: list = dataclasses.field(default_factory=list)
    ops: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Placement:
    """The trace's result: ``ipus`` ``{ipu: [module names]}``, ``blocks`` (BlockRecords in
    first-run order), ``num_ipus`` (IPUs reserved: replicas included, rounded up when
    ``autoRoundNumIPUs``), ``pipeline_stages`` (PopTorch's count, backward stages included
    when training; None when not pipelined), ``execution_mode`` ("pipelined", "sharded"
    or "phased") and ``weights`` ``{ipu: [parameter and buffer names]}`` (those an op on
    the IPU reads; one read on two IPUs is listed on both)."""

    ipus: dict
    blocks: list
    num_ipus: int
    pipeline_stages: int | None
    execution_mode: str
    weights: dict = dataclasses.field(default_factory=dict)


_MODES = {0: "pipelined", 1: "sharded", 2: "phased"}


class _Trace:
    """The compile-time state: active block, stage, phase and IPU (PopTorch's stage manager
    and its compiler's ``setActiveIpu`` bookkeeping)."""

    def __init__(self, strategy, names, params, weights) -> None:
        from .options import Stage

        self._stage_cls = Stage
        self.strategy = strategy
        backend = strategy.backendOptions()
        self.mode = backend["execution_mode"]
        self.serial = backend.get("serial_phases_execution", True)
        self.liveness = backend.get("tensors_liveness", enums.Liveness.AlwaysLive.value)
        self.next_auto_id = 0
        self.auto_stages = {}
        self.next_auto_stage = 1
        # Before any block: IPU 0, stage 0, phase 0 (PopTorch's compiler defaults).
        self.user_id, self.stage, self.ipu = None, 0, 0
        self.phase = 0 if self.mode == 2 else -1
        self.last_ipu, self.switches = 0, 0
        self.used_ipus = set()
        self.blocks = {}
        self.names = names          # id(module) -> qualified name
        self.params = params        # id(parameter) -> name
        self.weights = weights      # id(parameter or buffer) -> name
        self.weights_on = {}        # ipu -> [names]
        self.param_ipu = {}
        self.produced = {}          # id(tensor) -> (stage, weakref) for the stage order
        self.module_stack = []      # (name, ops run before it started)
        self.op_count = 0

    def auto_id(self) -> str:
        out = str(self.next_auto_id)
        self.next_auto_id += 1
        return out

    def _get_stage(self, user_id, ipu_id):
        block_map = self.strategy._block_map
        if block_map:
            assert user_id in block_map, (f"Unknown Block '{user_id}' list of expected "
                                          f"Blocks: {list(block_map.keys())}")
            return block_map[user_id]
        if user_id not in self.auto_stages:
            stage = self._stage_cls(user_id)
            if self.strategy._auto_stage == enums.AutoStage.SameAsIpu:
                assert ipu_id is not None, ("poptorch.AutoStage.SameAsIpu was selected but "
                                            f"no IPU was specified for block {user_id}")
                stage._setStage(ipu_id)
            else:
                stage._setStage(self.next_auto_stage)
                self.next_auto_stage += 1
            self.auto_stages[user_id] = stage
        return self.auto_stages[user_id]

    def begin(self, user_id, ipu_id) -> None:
        user_id = user_id or self.auto_id()
        stage = self._get_stage(user_id, ipu_id)
        ipu = stage._ipu if stage._ipu is not None else ipu_id
        if ipu is None:
            ipu = stage._stage_id
        phase = stage._phase_id
        if self.mode == 2:
            # Every phased stage has a phase; only SerialPhasedExecution takes these two
            # liveness settings, which space the phase ids.
            if self.liveness == enums.Liveness.OffChipAfterEachPhase.value:
                phase *= 4
            elif self.liveness == enums.Liveness.OffChipAfterFwdNoOverlap.value:
                phase *= 2
            # C++'s remainder keeps the dividend's sign (IPU -1 matches no phase).
            if not self.serial and phase % 2 != int(math.fmod(ipu, 2)):
                raise Error("When phases are executed in parallel: even phases must run on "
                            "even IPUs and odd phases on odd IPUs")
        else:
            phase = -1
        self.user_id, self.stage, self.phase = user_id, stage._stage_id, phase
        if ipu != self.last_ipu:
            self.switches += 1
        self.ipu = self.last_ipu = ipu

    def end(self) -> None:
        self.ipu = -1

    def _record(self) -> BlockRecord:
        key = (self.user_id, self.stage, self.phase, self.ipu)
        record = self.blocks.get(key)
        if record is None:
            record = self.blocks[key] = BlockRecord(*key)
        return record

    def module_done(self) -> None:
        """A module's forward ended: one that ran no op (Dropout in eval, Identity) is
        placed in the block active now."""
        name, ops_before = self.module_stack.pop()
        if ops_before == self.op_count and self.ipu >= 0:
            record = self._record()
            if name not in record.modules:
                record.modules.append(name)

    def op(self, func, args, outputs) -> None:
        if self.ipu < 0:
            raise Error("No active Block, all the ops must belong to a Block")
        self.used_ipus.add(self.ipu)
        self.op_count += 1
        record = self._record()
        module = self.module_stack[-1][0] if self.module_stack else ""
        if module not in record.modules:
            record.modules.append(module)
        record.ops.append(str(func.overloadpacket.__name__))
        inputs = tensor_leaves(args)
        for a in inputs:
            name = self.weights.get(id(a))
            if name is not None:
                listed = self.weights_on.setdefault(self.ipu, [])
                if name not in listed:
                    listed.append(name)
        if self.mode != 0:
            return
        for a in inputs:
            name = self.params.get(id(a))
            if name is not None:
                first = self.param_ipu.setdefault(id(a), self.ipu)
                if first != self.ipu:
                    raise Error(f"Can not copy variable tensor {name} between virtual graphs "
                                "when pipelining. All pipeline stages using this tensor "
                                "should be on the same graph.")
            seen = self.produced.get(id(a))
            if seen is not None and seen[1]() is a and seen[0] > self.stage:
                raise Error(f"Pipeline stages must be in ascending order: block "
                            f"'{self.user_id}' (stage {self.stage}) uses a tensor computed "
                            f"in stage {seen[0]}. With poptorch.AutoStage.SameAsIpu the stage "
                            "is the block's ipu_id: use poptorch.AutoStage.AutoIncrement or "
                            "explicit poptorch.Stage()s to come back to an IPU.")
        for t in tensor_leaves(outputs):
            self.produced[id(t)] = (self.stage, weakref.ref(t))


class _Recorder(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps __torch_dispatch__ in dynamo.disable otherwise: importing torch._dynamo
        # on the first op costs seconds, and nothing here is compiled.
        return False

    def __init__(self, trace) -> None:
        super().__init__()
        self.trace = trace

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.trace.op(func, [args, kwargs], out)
        _note_uses([args, kwargs])
        return out


def _trace_placement(executor, args, kwargs) -> Placement:
    """Run the model's ``forward`` once on the first micro-batch of ``args``/``kwargs``,
    place its ops, check the placement as PopTorch's compiler does and store the result on
    ``executor`` (``_placement``, ``_placement_record``). The model's buffers and torch's
    RNG streams are restored afterwards."""
    global _TRACE
    from .executor import _map
    from .ops import _returned, _running  # the trace runs forward as on the IPU

    opts = executor.options
    n = host_micro_batches(opts, *executor._factors())

    def first(t):
        if isinstance(t, torch.Tensor) and t.dim() > 0:
            return t[: t.shape[0] // n]
        return t

    xs, kw = _map(first, list(args)), _map(first, kwargs)
    model = executor.model
    names = {id(m): name for name, m in model.named_modules()}
    params = {id(p): name for name, p in model.named_parameters()}
    weights = {**{id(b): name for name, b in model.named_buffers()}, **params}
    trace = _Trace(opts._execution_strategy, names, params, weights)
    saved = [(m, k, b, b.detach().clone()) for m in model.modules()
             for k, b in m._buffers.items() if b is not None]

    def push(module, inputs):
        name = names.get(id(module), f"<{type(module).__name__}>")
        trace.module_stack.append((name, trace.op_count))

    def pop(module, inputs, output):
        if trace.module_stack:
            trace.module_done()

    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
    hooks = [torch.nn.modules.module.register_module_forward_pre_hook(push),
             torch.nn.modules.module.register_module_forward_hook(pop, always_call=True)]
    _TRACE = trace
    try:
        with torch.random.fork_rng(devices=devices), torch.set_grad_enabled(executor.training):
            with _Recorder(trace), _running(executor, xs, kw, tracing=True), \
                    executor._replica_weights(0):
                _returned(model(*xs, **kw))
    finally:
        _TRACE = None
        for h in hooks:
            h.remove()
        with torch.no_grad():
            for m, k, b, value in saved:
                m._buffers[k] = b
                b.copy_(value)
    placement = _check(trace, opts, executor.training)
    executor._placement_record = placement
    executor._placement = placement.ipus
    return placement


def _check(trace, opts, training) -> Placement:
    used = trace.used_ipus or {0}  # a model without ops still takes one IPU
    r = int(opts.replication_factor)
    num_ipus = max(len(used), max(used) + 1) * r
    if num_ipus > 64:
        raise Error(f"Too many IPUs requested ({num_ipus}). Experiments that need more than "
                    "64 IPUs require distributed execution.")
    hardware = not (opts._values.get("use_model", False)
                    or os.environ.get("POPTORCH_IPU_MODEL", "0") not in ("", "0")
                    or int(opts.connection_type) == enums.ConnectionType.Never.value)
    rounded = 1 << (num_ipus - 1).bit_length()
    if hardware and rounded != num_ipus:
        common = (", because PopTorch must reserve a power of 2 or maximum of 64 IPUs per "
                  "process")
        if not opts.auto_round_num_ipus:
            raise Error(f"The model specifies the use of {num_ipus} IPUs, however PopTorch "
                        f"must reserve a minimum of {rounded} in order to allow the model to "
                        f"run{common}. Please reconfigure your model to use a different "
                        "number of IPUs or set poptorch.Options().autoRoundNumIPUs(True).")
        logger.warning("Reserving %d IPUs when the model specifices the use of only %d%s. %d "
                       "will be reserved but not used.", rounded, num_ipus, common,
                       rounded - num_ipus)
        num_ipus = rounded
    stages = None
    if trace.mode == 0:
        forward = trace.switches + 1
        stages = 2 * forward - 1 if training else forward
        if training and int(opts.Training.gradient_accumulation) < stages:
            raise Error("poptorch.Options().Training.gradientAccumulation must be greater than "
                        f"or equal to the number of pipeline stages ({stages}) when using "
                        f"poptorch.PipelinedExecution. Please note that a model with {forward} "
                        f"pipeline stages in PopTorch will have an additional {forward - 1} "
                        "stages when training.")
        if not training and int(opts.device_iterations) < stages:
            raise Error("poptorch.Options().deviceIterations must be greater than or equal to "
                        f"the number of pipeline stages ({stages}) when using "
                        "PopTorch.PipelinedExecution.")
    ipus = {}
    for record in trace.blocks.values():
        listed = ipus.setdefault(record.ipu, [])
        for module in record.modules:
            if module not in listed:
                listed.append(module)
    return Placement(dict(sorted(ipus.items())), list(trace.blocks.values()), num_ipus,
                     stages, _MODES[trace.mode], dict(sorted(trace.weights_on.items())))
