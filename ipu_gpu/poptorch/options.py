"""``poptorch.Options`` and its option groups, as PopTorch 3.4 defines them.

Every group holds a fixed set of keys with typed defaults. A setter method validates its
argument the way PopTorch does (``AssertionError`` / ``ValueError`` with PopTorch's
messages), stores the value and returns the group so that calls chain; values are read back
as attributes (``opts.replication_factor``, ``opts.Training.gradient_accumulation``) or by
calling the group with a key (``opts("device_iterations")``). Assigning a public attribute
goes through the same typed ``set``.

What the emulator computes with: ``device_iterations``, ``replication_factor``,
``input_group_size`` / ``input_cgt``, ``Training.gradient_accumulation``,
``Training.accumulation_and_replication_reduction_type``, ``output_mode`` /
``output_return_period``, ``anchored_tensors``, ``random_seed``, ``broadcast_buffers``,
``connection_type`` and ``Distributed``. Everything else (memory proportions, tensor
locations, sync patterns, PopART session options, ...) only tunes the IPU's performance: it
is validated and recorded, and has no effect on results.

Nothing here needs PyTorch: ``randomSeed`` also seeds ``torch`` when it is importable, and
``Precision.setPartialsType`` needs a ``torch`` dtype.
"""

from __future__ import annotations

import ast
import copy
import datetime
import importlib
import json
import logging
import operator
import os

from . import enums

__all__ = ["ConfigFileError", "Options", "ParallelPhasedExecution", "Phase",
           "PipelinedExecution", "SerialPhasedExecution", "ShardedExecution", "Stage",
           "TensorLocationSettings"]

logger = logging.getLogger("poptorch::python")

_NO_LIMIT = (1 << 64) - 1  # maxRepeatLogs(None)


class ConfigFileError(Exception):
    """A file given to ``Options.loadFromFile`` could not be parsed."""


# ---- the option-group machinery ---------------------------------------------------------------
class OptionsDict:
    """Typed option store: only the keys given to the constructor (or created by a
    ``createOrSet``) exist, and a value must be an instance of the type of the key's
    current value. Frozen groups (an ``Options`` handed to a model wrapper or DataLoader)
    refuse every change with ``AttributeError("Can't modify frozen Options")``."""

    def __init__(self, **defaults):
        object.__setattr__(self, "_is_frozen", False)
        object.__setattr__(self, "_values", dict(defaults))

    # -- storage
    def set(self, **kwargs):
        self.checkIsFrozen()
        for key, value in kwargs.items():
            assert self.exists(key), (
                f"Invalid option {key}, valid options are {self._values.keys()}")
            expected = type(self._values[key])
            assert isinstance(value, expected), (
                f"Unexpected type {type(value)} for option {key}. Expected {expected}")
            self._values[key] = value
        return self

    def createOrSet(self, **kwargs):
        self.checkIsFrozen()
        for key, value in kwargs.items():
            if self.exists(key):
                self.set(**{key: value})
            else:
                self._values[key] = value
        return self

    def exists(self, option) -> bool:
        return option in self._values

    def deleteIfExists(self, option) -> None:
        self.checkIsFrozen()
        self._values.pop(option, None)

    # -- freezing
    def checkIsFrozen(self, option=None) -> None:
        if option != "_is_frozen" and self.__dict__.get("_is_frozen", False):
            raise AttributeError("Can't modify frozen Options")

    def _set_frozen(self, frozen: bool) -> None:
        object.__setattr__(self, "_is_frozen", frozen)
        for value in self.__dict__.values():
            if isinstance(value, (OptionsDict, _PopartOptions)):
                value._set_frozen(frozen)

    def _freeze(self) -> None:
        self._set_frozen(True)

    def _unfreeze(self) -> None:
        self._set_frozen(False)

    # -- attribute protocol
    def __getattr__(self, option):
        # only reached when normal lookup fails: option values, then an error
        values = self.__dict__.get("_values")
        if values is not None and not option.startswith("_") and option in values:
            return values[option]
        raise AttributeError(f"Invalid attribute {option}.")

    def __setattr__(self, option, value):
        self.checkIsFrozen(option)
        if option.startswith("_"):
            if ("_values" in self.__dict__ and option not in self.__dict__
                    and option != "__class__"):  # popdist swaps a group's class
                raise AttributeError(
                    f"Invalid private attribute {option}. "
                    f"Valid attributes: {list(self.__dict__.keys())}")
            object.__setattr__(self, option, value)
        else:
            self.set(**{option: value})

    def __call__(self, option):
        return getattr(self, option)

    # -- copying / merging / printing
    def __deepcopy__(self, memo):
        twin = type(self).__new__(type(self))
        memo[id(self)] = twin
        for key, value in self.__dict__.items():
            value = False if key == "_is_frozen" else copy.deepcopy(value, memo)
            object.__setattr__(twin, key, value)
        return twin

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        for key, value in state.items():
            object.__setattr__(self, key, value)

    def update(self, other: dict) -> dict:
        """Merge this group's values into ``other`` (no key may be in both)."""
        assert not set(self._values).intersection(other), (
            "Can't merge dictionaries, they have some keys in common")
        other.update(self._values)
        return other

    def toDict(self) -> dict:
        return self.update({})

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"{type(self).__name__}({body})"


# ---- option groups ---------------------------------------------------------------------------
class _JitOptions(OptionsDict):
    """``opts.Jit``: options of PyTorch's JIT tracer, which PopTorch 3.x no longer uses."""

    def traceModel(self, trace_model: bool) -> _JitOptions:
        """Deprecated: only ``False`` (the default) is supported."""
        logger.warning("[Deprecated] Do not call options.Jit.traceModel(): "
                       "options.Jit.traceModel(False) is now the default, and True is no "
                       "longer supported, therefore this function will be removed shortly")
        if trace_model:
            raise ValueError("options.Jit.traceModel(True) is no longer supported")
        return self


class _PrecisionOptions(OptionsDict):
    """``opts.Precision``: floating-point behaviour; recorded as PopART session options."""

    def __init__(self, popart_options: _PopartOptions) -> None:
        object.__setattr__(self, "_popart_options", popart_options)
        super().__init__()

    def halfFloatCasting(self, half_float_casting) -> _PrecisionOptions:  # noqa: ARG002
        """Deprecated no-op: half inputs are always up-cast as in PyTorch."""
        logger.warning("[Deprecated] Do not call options.Precision.halfFloatCasting(): "
                       "HalfUpcastToFloat is now the only supported option and matches "
                       "PyTorch's behaviour so you don't need to explicitly set it.")
        return self

    def runningStatisticsAlwaysFloat(self, value: bool) -> _PrecisionOptions:
        """Deprecated no-op (``False`` is the only behaviour)."""
        if not isinstance(value, bool):
            raise ValueError("runningStatisticsAlwaysFloat needs to be set to a bool")
        logger.warning("[Deprecated] Do not call "
                       "options.Precision.runningStatisticsAlwaysFloat(): False is now the "
                       "only supported option and matches PyTorch's behaviour so you don't "
                       "need to explicitly set it.")
        return self

    def enableFloatingPointExceptions(self, enabled: bool) -> _PrecisionOptions:
        """Raise on operations producing inf/nan on the IPU (PopART
        ``enableFloatingPointChecks``)."""
        assert isinstance(enabled, bool), \
            "enableFloatingPointExceptions needs to be set to a bool"
        self._popart_options.set("enableFloatingPointChecks", enabled)
        return self

    def enableStochasticRounding(self, enabled: bool) -> _PrecisionOptions:
        """Round float16 values up or down at random, with the expectation equal to the
        unrounded value. ipu_gpu rounds float16 weight updates so (computed in float32,
        drawn from the ``randomSeed`` stream, so repeatable per seed); float32 weights and
        float16 activations are unaffected (PyTorch computes those with round-to-nearest)."""
        self._popart_options.set("enableStochasticRounding", enabled)
        return self

    def setPartialsType(self, dtype) -> _PrecisionOptions:
        """Type of matmul/convolution partial results: ``torch.float`` or ``torch.half``.
        Recorded only: PyTorch offers no control over its kernels' partial sums (float16
        matmuls accumulate as its kernels do), and float32 models are unchanged."""
        kind = _partials_kind(dtype)
        if kind is None:
            # PopTorch's message, missing space included
            raise ValueError("parameter to setPartialsType should be either"
                             "torch.float or torch.half")
        self._popart_options.set("partialsTypeMatMuls", kind)
        self._popart_options.set("convolutionOptions", {"partialsType": kind})
        return self


def _partials_kind(dtype):
    try:
        import torch
    except ImportError:  # no torch: no torch dtype can have been passed
        return None
    if dtype in (torch.float, torch.float32):
        return "float"
    if dtype in (torch.half, torch.float16):
        return "half"
    return None


class _TrainingOptions(OptionsDict):
    """``opts.Training``: gradient accumulation and the gradient reduction."""

    def __init__(self, popart_options: _PopartOptions) -> None:
        object.__setattr__(self, "_popart_options", popart_options)
        super().__init__(
            gradient_accumulation=1,
            accumulation_and_replication_reduction_type=enums.ReductionType.Mean,
            meanAccumulationAndReplicationReductionStrategy=enums.MeanReductionStrategy.Post)

    def gradientAccumulation(self, gradient_accumulation: int) -> _TrainingOptions:
        """Micro-batches whose gradients are accumulated before each weight update."""
        self.set(gradient_accumulation=gradient_accumulation)
        return self

    def accumulationAndReplicationReductionType(self, reduction_type) -> _TrainingOptions:
        """How gradients of accumulated micro-batches and replicas are combined:
        ``ReductionType.Mean`` (default) or ``ReductionType.Sum``."""
        if (not isinstance(reduction_type, enums.ReductionType)
                or reduction_type == enums.ReductionType.NoReduction):
            raise ValueError("accumulationAndReplicationReductionType must be set to "
                             "poptorch.ReductionType.Mean or poptorch.ReductionType.Sum")
        self.set(accumulation_and_replication_reduction_type=reduction_type)
        return self

    def setMeanAccumulationAndReplicationReductionStrategy(
            self, mean_reduction_strategy) -> _TrainingOptions:
        """When a Mean reduction divides (``MeanReductionStrategy``); no effect on the
        result in exact arithmetic."""
        self.set(meanAccumulationAndReplicationReductionStrategy=mean_reduction_strategy)
        return self

    def setAutomaticLossScaling(self, enabled: bool) -> _TrainingOptions:
        """Automatic loss scaling (PopART's, a preview feature): the loss scale starts at the
        optimizer's ``loss_scaling`` and after every step doubles, or halves when the
        tracked float16 gradients reach an eighth of float16's range (``loss_scaling``
        module). It needs float16 gradients: a float32 model fails to compile."""
        self._popart_options.set("automaticLossScalingSettings.enabled", enabled)
        return self

    def setConvolutionDithering(self, enabled: bool) -> _TrainingOptions:
        """Convolution tile-layout dithering (recorded only)."""
        self._popart_options.set("convolutionOptions", {"enableConvDithering": enabled})
        return self


class _PopartOptions:
    """``opts._Popart``: raw PopART session options, ``set(key, value)``. Keys are not
    checked here (PopTorch checks them when compiling); none changes results."""

    def __init__(self) -> None:
        self._is_frozen = False
        self.options = {}
        self.set("instrumentWithHardwareCycleCounter", False)
        self.set("rearrangeAnchorsOnHost", False)

    def checkIsFrozen(self, option=None) -> None:
        if option != "_is_frozen" and getattr(self, "_is_frozen", False):
            raise AttributeError("Can't modify frozen Options")

    def _set_frozen(self, frozen: bool) -> None:
        self._is_frozen = frozen

    def __deepcopy__(self, memo):
        twin = type(self).__new__(type(self))
        memo[id(self)] = twin
        twin._is_frozen = False
        twin.options = copy.deepcopy(self.options, memo)
        return twin

    def set(self, key: str, value) -> _PopartOptions:
        self.checkIsFrozen()
        self.options[key] = value
        return self

    def setEngineOptions(self, engine_options: dict) -> _PopartOptions:
        return self.set("engineOptions", engine_options)

    def setPatterns(self, patterns: dict, level: int = 2) -> _PopartOptions:
        """Override PopART's graph patterns (``{name: enabled}``) at ``level``."""
        assert isinstance(level, int)
        assert isinstance(patterns, dict)
        self.set("patterns_level", level)
        self.set("patterns", patterns)
        return self

    def __repr__(self):
        body = ", ".join(f"{k}={v!r}" for k, v in self.options.items())
        return f"{type(self).__name__}({body})"


class _DistributedOptions(OptionsDict):
    """``opts.Distributed``: this process's place among several (mpirun / PopRun). The
    replication factor stays per process; the global replica count is
    ``replication_factor * numProcesses``."""

    def __init__(self) -> None:
        object.__setattr__(self, "_gcd_mappings", {})
        super().__init__(num_distributed_processes=1, distributed_process_id=0,
                         ipuof_configs={})
        self.setEnvVarNames("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")

    def disable(self) -> _DistributedOptions:
        """Ignore the environment: a single process."""
        self.set(num_distributed_processes=1, distributed_process_id=0)
        return self

    def setEnvVarNames(self, var_num_processes: str,
                       var_process_id: str) -> _DistributedOptions:
        """Read the process count and id from these environment variables (OpenMPI's
        ``OMPI_COMM_WORLD_SIZE`` / ``OMPI_COMM_WORLD_RANK`` by default)."""
        return self.configureProcessId(int(os.environ.get(var_process_id, "0")),
                                       int(os.environ.get(var_num_processes, "1")))

    def configureProcessId(self, process_id: int, num_processes: int) -> _DistributedOptions:
        """Set this process's id and the number of processes."""
        self.set(distributed_process_id=process_id)
        self.set(num_distributed_processes=num_processes)
        return self

    @property
    def processId(self) -> int:
        return self.distributed_process_id

    @property
    def numProcesses(self) -> int:
        return self.num_distributed_processes


class TensorLocationSettings(OptionsDict):
    """Where one class of tensors is stored (``opts.TensorLocations.set...Location``).
    Memory placement only."""

    def minElementsForOffChip(self, min_elements: int) -> TensorLocationSettings:
        assert isinstance(min_elements, int)
        return self.createOrSet(minElementsForOffChip=min_elements)

    def minElementsForReplicatedTensorSharding(self,
                                               min_elements: int) -> TensorLocationSettings:
        assert isinstance(min_elements, int)
        return self.createOrSet(minElementsForReplicatedTensorSharding=min_elements)

    def useOnChipStorage(self, use: bool = True) -> TensorLocationSettings:
        """On-chip (True) or off-chip (False) storage; None leaves it undefined."""
        if use is None:
            self.deleteIfExists("onChip")
            return self
        assert isinstance(use, bool)
        return self.createOrSet(onChip=int(use))

    def useReplicatedTensorSharding(self, use: bool = True) -> TensorLocationSettings:
        assert isinstance(use, bool)
        return self.createOrSet(useReplicatedTensorSharding=int(use))

    def useIOTilesToLoad(self, use: bool = True) -> TensorLocationSettings:
        assert isinstance(use, bool)
        return self.createOrSet(useIOTilesToLoad=int(use))

    def useIOTilesToStore(self, use: bool = True) -> TensorLocationSettings:
        assert isinstance(use, bool)
        return self.createOrSet(useIOTilesToStore=int(use))


class _TensorLocationOptions(OptionsDict):
    """``opts.TensorLocations``: IO tiles and the locations of activations, weights,
    optimiser state and accumulators. Memory placement only."""

    def numIOTiles(self, num_tiles: int) -> _TensorLocationOptions:
        """Tiles reserved for IO: an even number from 32 to 192."""
        assert isinstance(num_tiles, int)
        message = "numIOTiles must be an even number between 32 and 192."
        assert num_tiles >= 32, message
        assert num_tiles <= 192, message
        assert num_tiles % 2 == 0, message
        return self.createOrSet(numIOTiles=num_tiles)

    def _location(self, key, location) -> _TensorLocationOptions:
        assert isinstance(location, TensorLocationSettings)
        return self.createOrSet(**{key: location.toDict()})

    def setActivationLocation(self, location) -> _TensorLocationOptions:
        return self._location("location_activation", location)

    def setWeightLocation(self, location) -> _TensorLocationOptions:
        return self._location("location_weight", location)

    def setOptimizerLocation(self, location) -> _TensorLocationOptions:
        return self._location("location_optimizer", location)

    def setAccumulatorLocation(self, location) -> _TensorLocationOptions:
        return self._location("location_accumulator", location)


# ---- execution strategies (model placement; no numeric effect) ------------------------------
# The strategies only describe placement; blocks.py applies them when a wrapped model is
# compiled (stage ids, phases and IPUs of each block, PopTorch's compile-time checks).
class Stage:
    """One or more blocks (by ``user_id``) that run on one IPU; ``.ipu(n)`` overrides the
    blocks' own ``ipu_id``.

    Raises:
      AssertionError: a block id that is not a string (PopTorch's message)."""

    def __init__(self, *block_ids: str) -> None:
        assert all(isinstance(b, str) for b in block_ids), (
            f"Block IDs are supposed to be strings but got {block_ids}")
        self._blocks = block_ids
        self._stage_id = -1
        self._phase_id = -1
        self._ipu = None

    @property
    def blocks(self):
        """The ids of the blocks this stage is made of."""
        return self._blocks

    def ipu(self, ipu: int) -> Stage:
        """Run this stage on IPU ``ipu`` whatever its blocks' ``ipu_id`` say."""
        assert isinstance(ipu, int)
        self._ipu = ipu
        return self

    def _setStage(self, stage) -> Stage:
        if stage is not None:
            self._stage_id = stage
        return self

    def __repr__(self):
        return (f"Stage({', '.join(map(repr, self._blocks))}, stage={self._stage_id}, "
                f"phase={self._phase_id}, ipu={self._ipu})")


def _add_blocks(block_map: dict, stage: Stage) -> None:
    for block in stage.blocks:
        assert block not in block_map, f"{block} associated with more than one stage"
        block_map[block] = stage


class _IExecutionStrategy:
    """Base of the strategies ``Options.setExecutionStrategy`` accepts."""

    def __init__(self, block_map: dict, auto_stage=None):
        self._block_map = block_map
        self._auto_stage = auto_stage

    def stage(self, block_id) -> Stage:
        """The :class:`Stage` a block belongs to.

        Raises:
          AssertionError: a block no stage names ("Unknown block <id>")."""
        assert block_id in self._block_map, f"Unknown block {block_id}"
        return self._block_map[block_id]

    def backendOptions(self) -> dict:  # noqa: N802 - PopTorch's name
        """The options PopTorch hands its compiler for this strategy (``execution_mode`` 0
        pipelined, 1 sharded, 2 phased, and the phased settings)."""
        return {}

    def __repr__(self):
        listed = ", ".join(f"{b!r}: {s!r}" for b, s in self._block_map.items())
        if not listed:
            return f"{type(self).__name__}({self._auto_stage!s})"
        return f"{type(self).__name__}({{{listed}}})"


class PipelinedExecution(_IExecutionStrategy):
    """Pipeline the stages (the default strategy, with ``AutoStage.SameAsIpu``). Arguments:
    one ``AutoStage``, or stages given as ``Stage`` objects, block ids or lists of ids (stage
    ids follow the argument order).

    With ``AutoStage.SameAsIpu`` a block's stage is its ``ipu_id`` (every block needs one);
    with ``AutoIncrement`` each new block takes the next stage id from 1. Every change of IPU
    starts a new pipeline stage; training adds one backward stage per forward stage but the
    last, so ``Training.gradientAccumulation`` must be at least 2 * stages - 1 (inference:
    ``deviceIterations`` at least the stage count), and stage ids must ascend along the data.

    Raises:
      AssertionError: a block named by two stages ("<id> associated with more than one
        stage")."""

    def __init__(self, *args):
        block_map = {}
        auto_stage = enums.AutoStage.SameAsIpu
        if len(args) == 1 and isinstance(args[0], enums.AutoStage):
            auto_stage = args[0]
        else:
            for stage_id, arg in enumerate(args):
                if isinstance(arg, Stage):
                    stage = arg
                elif isinstance(arg, str):
                    stage = Stage(arg)
                else:
                    assert all(isinstance(b, str) for b in arg)
                    stage = Stage(*arg)
                stage._setStage(stage_id)
                _add_blocks(block_map, stage)
        super().__init__(block_map, auto_stage)

    def backendOptions(self) -> dict:
        return {"execution_mode": 0}


class ShardedExecution(PipelinedExecution):
    """One stage active at a time (sharding), same arguments as PipelinedExecution; no
    pipeline depth is required."""

    def backendOptions(self) -> dict:
        return {"execution_mode": 1}


class Phase:
    """Stages executed in parallel within one execution phase: ``Stage`` objects, or block
    ids that form one stage.

    Raises:
      AssertionError: arguments mixing other types (PopTorch's message)."""

    def __init__(self, *arg):
        if all(isinstance(a, Stage) for a in arg):
            self.stages = arg
        else:
            assert all(isinstance(a, str) for a in arg), (
                "All arguments must either be block IDs (strings) or Stages: "
                + str([type(a) for a in arg]))
            self.stages = [Stage(*arg)]

    def stage(self, idx) -> Stage:
        """The phase's ``idx``-th stage."""
        return self.stages[idx]

    def ipus(self, *ipus) -> None:
        """One IPU for each stage of the phase.

        Raises:
          AssertionError: not one IPU per stage (PopTorch's message)."""
        assert len(ipus) == len(self.stages), (
            f"Phase contains {len(self.stages)} stages but you provided {len(ipus)} ipus")
        for stage, ipu in zip(self.stages, ipus):
            stage.ipu(ipu)


class _IPhasedExecution(_IExecutionStrategy):
    """Phased execution: phases given as ``Phase`` objects, lists of stages or lists of
    block ids. Every block must be named by a phase; a stage with no IPU runs where its
    block's ``ipu_id`` says.

    Raises:
      AssertionError: no phase at all ("There is currently no AutoStage for
        PhasedExecution, ..."), or a block in two stages."""

    def __init__(self, *phases):
        assert phases, ("There is currently no AutoStage for PhasedExecution, please "
                        "explicitly specify the phases")
        self._tensors_liveness = enums.Liveness.AlwaysLive
        self._separate_backward_phase = False
        self._phases = []
        block_map = {}
        for phase_id, spec in enumerate(phases):
            if not isinstance(spec, Phase):
                spec = Phase(*(spec if isinstance(spec, list) else [spec]))
            self._phases.append(spec)
            for stage in spec.stages:
                stage._phase_id = phase_id
                _add_blocks(block_map, stage)
        super().__init__(block_map)

    def phase(self, phase: int) -> Phase:
        """The ``phase``-th :class:`Phase` (0-based).

        Raises:
          AssertionError: a negative or non-integer index (PopTorch's message)."""
        assert isinstance(phase, int) and phase >= 0, \
            "Phases are identified by positive integers"
        return self._phases[phase]

    def useSeparateBackwardPhase(self, use: bool = True):  # noqa: N802 - PopTorch's name
        """Give the backward pass phases of its own (none shared with the forward pass)."""
        assert isinstance(use, bool)
        self._separate_backward_phase = use
        return self

    def backendOptions(self) -> dict:
        return {"execution_mode": 2, "separate_backward_phase": self._separate_backward_phase,
                "tensors_liveness": self._tensors_liveness.value}


class ParallelPhasedExecution(_IPhasedExecution):
    """Phases alternate between two groups of IPUs: even phases must run on even IPUs and
    odd phases on odd IPUs (checked when the model is compiled)."""

    def backendOptions(self) -> dict:
        return {**super().backendOptions(), "serial_phases_execution": False}

    def sendTensorsOffChipAfterFwd(self, off_chip: bool = True  # noqa: N802
                                   ) -> ParallelPhasedExecution:
        """Liveness ``OffChipAfterFwd`` (True) or ``AlwaysLive`` (False)."""
        assert isinstance(off_chip, bool)
        self._tensors_liveness = (enums.Liveness.OffChipAfterFwd if off_chip
                                  else enums.Liveness.AlwaysLive)
        return self


class SerialPhasedExecution(_IPhasedExecution):
    """All phases run one after the other on one group of IPUs."""

    def setTensorsLiveness(self, liveness) -> SerialPhasedExecution:  # noqa: N802
        """How long tensors stay on chip (a ``poptorch.Liveness``); ``OffChipAfterFwdNoOverlap``
        and ``OffChipAfterEachPhase`` space the phase ids by 2 and 4."""
        assert isinstance(liveness, enums.Liveness)
        self._tensors_liveness = liveness
        return self

    def backendOptions(self) -> dict:
        return {**super().backendOptions(), "serial_phases_execution": True}


class _ProgressBar:
    """The compilation progress callback ``toDict`` hands the compiler; it records the
    compilation time (``PoplarExecutor.compilationTime()``) and prints nothing."""

    def __init__(self):
        self.compilation_time = None
        self._start = None

    def __call__(self, progress: int, total: int) -> None:
        now = datetime.datetime.now()
        if self._start is None:
            self._start = now
        self.compilation_time = now - self._start
        if progress == total:
            self._start = None


_DEFAULT_SOURCE_LOCATION_EXCLUDES = ["install/poptorch", "site-packages/torch",
                                     "site-packages/poptorch"]


# ---- Options ---------------------------------------------------------------------------------
class Options(OptionsDict):
    """All the options controlling how a model is compiled and run, passed to
    ``poptorch.trainingModel`` / ``inferenceModel`` / ``DataLoader``.

    >>> opts = poptorch.Options()
    >>> opts.deviceIterations(10).replicationFactor(2)
    >>> opts.Training.gradientAccumulation(4)

    Construction also applies ``POPTORCH_CACHE_DIR`` (executable caching) and
    ``POPTORCH_DEFAULT_OPTIONS`` (JSON, see :meth:`from_json`) from the environment.
    """

    def __init__(self) -> None:
        init = object.__setattr__
        popart = _PopartOptions()
        init(self, "_jit", _JitOptions())
        init(self, "_popart", popart)
        init(self, "_graphProcessing", _PrecisionOptions(popart))
        init(self, "_training", _TrainingOptions(popart))
        init(self, "_distributed", _DistributedOptions())
        init(self, "_tensor_locations", _TensorLocationOptions())
        init(self, "_execution_strategy", PipelinedExecution())
        init(self, "_source_location_excludes", list(_DEFAULT_SOURCE_LOCATION_EXCLUDES))
        init(self, "_progress_bar", _ProgressBar())
        init(self, "_relax_optimizer_checks", False)
        init(self, "_show_compilation_progress_bar", True)
        init(self, "_module_namescope_enabled", True)
        super().__init__(replication_factor=1,
                         input_group_size=1,
                         input_cgt=enums.CommGroupType.Consecutive,
                         broadcast_buffers=True,
                         device_iterations=1,
                         log_dir=".",
                         max_repeat_logs=4,
                         auto_round_num_ipus=False,
                         anchored_tensors={},
                         output_mode=enums.OutputMode.Default.value,
                         output_return_period=1,
                         connection_type=enums.ConnectionType.Always.value,
                         sync_pattern=enums.SyncPattern.Full.value,
                         available_memory_proportion={})
        cache_dir = os.environ.get("POPTORCH_CACHE_DIR", "")
        if cache_dir:
            logger.info("POPTORCH_CACHE_DIR is set: setting cache path to %s", cache_dir)
            self.enableExecutableCaching(cache_dir)
        self.from_json(os.environ.get("POPTORCH_DEFAULT_OPTIONS", "{}"))

    # -- option groups
    @property
    def TensorLocations(self) -> _TensorLocationOptions:
        return self._tensor_locations

    @property
    def Distributed(self) -> _DistributedOptions:
        return self._distributed

    @property
    def Jit(self) -> _JitOptions:
        return self._jit

    @property
    def Precision(self) -> _PrecisionOptions:
        return self._graphProcessing

    @property
    def Training(self) -> _TrainingOptions:
        return self._training

    @property
    def _Popart(self) -> _PopartOptions:
        return self._popart

    # -- batching / replication (numeric effect)
    def deviceIterations(self, device_iterations: int) -> Options:
        """Iterations the device runs per call, each on a new batch (default 1)."""
        return self.set(device_iterations=device_iterations)

    def replicationFactor(self, replication_factor: int) -> Options:
        """Number of data-parallel replicas of the model (default 1)."""
        return self.set(replication_factor=replication_factor)

    def inputReplicaGrouping(self, input_group_size: int, input_group_type) -> Options:
        """Replicas in one group of ``input_group_size`` receive the same input slice;
        ``input_group_type`` is a ``CommGroupType`` other than ``All``. Call it after
        ``replicationFactor``: the size must divide the replication factor set so far."""
        if input_group_type == enums.CommGroupType.NoGrouping:
            input_group_size, input_group_type = 1, enums.CommGroupType.Consecutive
        if input_group_type == enums.CommGroupType.All:
            raise ValueError("input_group_type cannot be All")
        if self.replication_factor < input_group_size:
            raise ValueError("input_group_size cannot be larger than replication_factor")
        if self.replication_factor % input_group_size != 0:
            raise ValueError("input_group_size must be a factor of replication_factor")
        self.set(input_group_size=input_group_size)
        return self.set(input_cgt=input_group_type)

    def broadcastBuffers(self, broadcast_buffers: bool = True) -> Options:
        """Keep buffers identical across replicas (default). With replication, a model
        that modifies buffers in place needs ``broadcastBuffers(False)``."""
        return self.set(broadcast_buffers=broadcast_buffers)

    def outputMode(self, output_mode, output_return_period=None) -> Options:
        """Which results a call returns (``OutputMode``); ``EveryN`` needs a positive
        ``output_return_period``."""
        assert isinstance(output_mode, enums.OutputMode)
        if output_mode == enums.OutputMode.EveryN:
            assert output_return_period and output_return_period > 0, (
                "EveryN anchor must have output_return_period set to valid positive integer")
        elif output_return_period:
            logger.info("Anchor return period argument ignored with output_mode set to %s",
                        output_mode)
        return self.set(output_mode=output_mode.value,
                        output_return_period=output_return_period or 1)

    def anchorMode(self, anchor_mode, anchor_return_period=None) -> Options:
        """Deprecated (SDK 2.4) name of :meth:`outputMode`, taking an ``AnchorMode``."""
        logger.warning("poptoch.Options.anchorMode is deprecated since 2.4: Use outputMode "
                       "instead, previous name was misleading.")
        assert isinstance(anchor_mode, enums.AnchorMode)
        return self.outputMode(enums.OutputMode(anchor_mode.value), anchor_return_period)

    def defaultOutputMode(self) -> bool:
        """Whether the output mode is still ``OutputMode.Default``."""
        return self.output_mode == enums.OutputMode.Default

    def defaultAnchorMode(self) -> bool:
        """Deprecated (SDK 2.4) name of :meth:`defaultOutputMode`."""
        logger.warning("poptoch.Options.defaultAnchorMode is deprecated since 2.4: Use "
                       "defaultOutputMode instead, previous name was misleading.")
        return self.defaultOutputMode()

    def anchorTensor(self, short_name: str, long_name: str, output_mode=None,
                     output_return_period=1) -> Options:
        """Also return the PopART tensor ``long_name`` from each call, read with
        ``model.getAnchoredTensor(short_name)``; ``output_mode=None`` follows the model's
        output mode."""
        if isinstance(output_mode, enums.AnchorMode):
            logger.warning("enums.AnchorMode has been deprecated in favour of "
                           "enums.OutputMode. Consider changing enums.AnchorMode to "
                           "enums.OutputMode.")
            output_mode = enums.OutputMode(output_mode.value)
        if output_mode != enums.OutputMode.EveryN:
            output_return_period = 1
        self.anchored_tensors[short_name] = [long_name, output_mode is None, output_mode,
                                             output_return_period]
        return self

    def randomSeed(self, random_seed: int) -> Options:
        """Seed of the device's random streams (dropout and other random ops, stochastic
        rounding): the same seed gives the same results; also seeds ``torch`` on the
        host."""
        assert isinstance(random_seed, int)
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            torch.manual_seed(random_seed)
        return self.createOrSet(random_seed=random_seed)

    def connectionType(self, connection_type) -> Options:
        """When to attach to the device (``ConnectionType``); ``Never`` allows only
        ``model.compile``."""
        assert isinstance(connection_type, enums.ConnectionType)
        return self.set(connection_type=connection_type.value)

    # -- device selection
    def useIpuModel(self, use_model: bool) -> Options:
        return self.createOrSet(use_model=use_model)

    def useIpuId(self, ipu_id: int) -> Options:
        assert isinstance(ipu_id, int)
        return self.createOrSet(ipu_id=ipu_id)

    def useOfflineIpuTarget(self, ipu_version: int = 2) -> Options:
        """Compile for an IPU version without attaching (sets ``ConnectionType.Never``)."""
        self.connectionType(enums.ConnectionType.Never)
        return self.createOrSet(ipu_version=ipu_version)

    def autoRoundNumIPUs(self, auto_round_num_ipus: bool = True) -> Options:
        return self.set(auto_round_num_ipus=auto_round_num_ipus)

    # -- performance / diagnostics (recorded only)
    def syncPattern(self, sync_pattern) -> Options:
        assert isinstance(sync_pattern, enums.SyncPattern)
        return self.set(sync_pattern=sync_pattern.value)

    def setAvailableMemoryProportion(self, available_memory_proportion: dict) -> Options:
        """Per-IPU temporary-memory proportion, ``{"IPU0": 0.5, ...}``."""
        by_ipu = {}
        for key, proportion in available_memory_proportion.items():
            assert key.startswith("IPU"), (
                'Available memory proportions are expected to be in a dictionary of '
                '{"IPU0": 0.5} where the 0 in IPU is the index of the IPU. Invalid key: '
                f"{key}")
            by_ipu[int(key[3:])] = proportion
        return self.createOrSet(available_memory_proportion=by_ipu)

    def setExecutionStrategy(self, strategy) -> Options:
        """How the model's blocks are placed and scheduled (``PipelinedExecution``,
        ``ShardedExecution``, ``ParallelPhasedExecution``, ``SerialPhasedExecution``)."""
        assert isinstance(strategy, _IExecutionStrategy)
        self._execution_strategy = strategy
        return self

    def logDir(self, log_dir: str) -> Options:
        return self.set(log_dir=log_dir)

    def maxRepeatLogs(self, max_lines) -> Options:
        """Repeated log lines shown before suppression (None: all)."""
        return self.set(max_repeat_logs=_NO_LIMIT if max_lines is None else max_lines)

    def modelName(self, name: str) -> Options:
        return self.createOrSet(model_name=name)

    def enableExecutableCaching(self, path) -> Options:
        """Cache compiled executables under ``path``; None disables caching."""
        if path is None:
            self._Popart.set("enableEngineCaching", False)
        else:
            self._Popart.set("cachePath", path)
            self._Popart.set("enableEngineCaching", True)
        return self

    def enableStableNorm(self, enabled: bool) -> Options:
        self._Popart.set("enableStableNorm", enabled)
        return self

    def enableSyntheticData(self, enabled: bool) -> Options:
        """Device-generated inputs instead of host I/O (PopART syntheticDataMode
        RandomNormal=2 / Off=0; ``_Popart.set("syntheticDataMode", 1)`` is Zeros, 3
        RandomUniform): the host's data is not read, the model sees the same standard-normal
        micro-batch every iteration (bool inputs True, integer inputs the rounded samples;
        zeros where torch's index checks reject them: see ``device_state``'s
        ``synthetic_micro_batches`` and ``PoplarExecutor._trace_synthetic``), and the outputs
        carry no results (zeros in ipu_gpu)."""
        self._Popart.set("syntheticDataMode", 2 if enabled else 0)
        return self

    def logCycleCount(self, log_cycle_count: bool) -> Options:
        self._Popart.set("instrumentWithHardwareCycleCounter", log_cycle_count)
        return self

    def enableProfiling(self, profile_dir=None) -> Options:
        """Profiling report into ``profile_dir`` (default: the current directory)."""
        env = os.getenv("POPLAR_ENGINE_OPTIONS", default="")
        if any(k in env for k in ("debug.allowOutOfMemory", "autoReport.directory",
                                  "autoReport.all")):
            logger.warning("Profiling setting overridden by environment variable. "
                           "Check content of POPLAR_ENGINE_OPTIONS.")
        engine = self._popart.options.get("engineOptions", {})
        engine["debug.allowOutOfMemory"] = "true"
        engine["autoReport.directory"] = profile_dir or "."
        engine["autoReport.all"] = "true"
        self._popart.setEngineOptions(engine)
        return self

    def disableModuleNamescope(self) -> Options:
        self._module_namescope_enabled = False
        return self

    def updatableNamedBuffers(self, buffers) -> Options:
        """Buffers ``copyNamedBuffersToDevice()`` may upload."""
        self._Popart.set("updatableNamedBuffers", buffers)
        return self

    def sourceLocationExcludes(self, excludes) -> Options:
        self._source_location_excludes = excludes
        return self

    def appendToLocationExcludes(self, *excludes: str) -> Options:
        self._source_location_excludes = self._source_location_excludes + list(excludes)
        return self

    def showCompilationProgressBar(self, show: bool = True) -> Options:
        self._show_compilation_progress_bar = show
        return self

    def relaxOptimizerAttributesChecks(self, relax: bool = True) -> Options:
        """Unexpected optimizer attributes: debug messages (True) or warnings (False)."""
        self._relax_optimizer_checks = relax
        return self

    # -- loading
    def from_json(self, string: str) -> Options:
        """Apply ``{"dotted.setter": value}``: a list value is passed as the arguments, a
        string ``"Enum.Member"`` naming a poptorch enum becomes that member."""
        for accessor, value in json.loads(string).items():
            target = self
            for part in accessor.split("."):
                target = getattr(target, part)
            if isinstance(value, str) and "." in value:
                value = _enum_from_string(value)
            if isinstance(value, list):
                target(*value)
            else:
                target(value)
        return self

    def loadFromFile(self, filepath: str) -> Options:
        """Apply a config file: one setter call per line without the ``options.`` prefix
        (``deviceIterations(4)``, ``Training.gradientAccumulation(2)``); blank lines and
        ``#`` comments are skipped. Files apply cumulatively."""
        _apply_config_file(self, filepath)
        return self

    # -- serialisation
    def toDict(self) -> dict:
        """All options (but Jit and Precision, which live in the PopART options) in one
        dictionary, as PopTorch passes them to its compiler. The output mode must have been
        picked (the model wrappers do) first."""
        assert not self.defaultOutputMode(), \
            "An output mode must be picked before serialisation"
        out = self._execution_strategy.backendOptions()
        out.update(self._popart.options)
        out = self.update(out)
        out = self._training.update(out)
        out = self._distributed.update(out)
        out = self._tensor_locations.update(out)
        if self._show_compilation_progress_bar:
            out["compilation_progress_bar_fn"] = self._progress_bar
        return out

    def clone(self) -> Options:
        """An unfrozen deep copy."""
        return copy.deepcopy(self)

    def __repr__(self):
        groups = sorted(n for n in dir(type(self)) if isinstance(getattr(type(self), n),
                                                                 property))
        parts = [f"{k}={v!r}" for k, v in self._values.items()]
        parts += [f"{name}={getattr(self, name)!r}" for name in groups]
        return f"{type(self).__name__}({', '.join(parts)})"


def _enum_from_string(value: str):
    enum_name, _, member = value.partition(".")
    enum_type = getattr(enums, enum_name, None) if "." not in member else None
    if enum_type is None or enum_name.startswith("_"):
        return value
    return getattr(enum_type, member, value)


# ---- config files ----------------------------------------------------------------------------
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_}


class _Unsupported(Exception):
    pass


def _apply_config_file(options: Options, filepath: str) -> None:
    """Run each line of the file as ``options.<line>``. Lines are evaluated, not exec'd:
    setter calls whose arguments are literals, arithmetic, ``poptorch.*`` and ``torch.*``
    names; anything else is a ConfigFileError. Syntax errors are reported as PopTorch does,
    with the line counted among the setter lines."""
    with open(filepath) as f:
        filename = os.path.basename(f.name)
        lines = [s for s in (raw.strip() for raw in f) if s and not s.startswith("#")]
    code = "\n".join("options." + s for s in lines)
    try:
        tree = ast.parse(code, filename=filename)
    except SyntaxError as err:
        raise ConfigFileError(f"{type(err).__name__} at line {err.lineno} of {filename}: "
                              f"{err.args[0]}\n> {(err.text or '').rstrip()}") from None
    names = {"options": options, "poptorch": importlib.import_module(__package__),
             "True": True, "False": False, "None": None}
    for statement in tree.body:
        try:
            if not isinstance(statement, ast.Expr):
                raise _Unsupported(f"{type(statement).__name__} statement")
            _evaluate(statement.value, names)
        except _Unsupported as err:
            line = lines[statement.lineno - 1]
            raise ConfigFileError(f"Unsupported expression at line {statement.lineno} of "
                                  f"{filename}: {err}\n> options.{line}") from None


def _evaluate(node, names):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_evaluate(e, names) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _Unsupported("dictionary unpacking")
        return {_evaluate(k, names): _evaluate(v, names)
                for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, names))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left, names), _evaluate(node.right, names))
    if isinstance(node, ast.Name):
        if node.id == "torch" and "torch" not in names:
            import torch
            names["torch"] = torch
        if node.id not in names:
            raise _Unsupported(f"name {node.id!r}")
        return names[node.id]
    if isinstance(node, ast.Attribute):
        if node.attr.startswith("__"):
            raise _Unsupported(f"attribute {node.attr!r}")
        return getattr(_evaluate(node.value, names), node.attr)
    if isinstance(node, ast.Call):
        func = _evaluate(node.func, names)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(_evaluate(a.value, names))
            else:
                args.append(_evaluate(a, names))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(_evaluate(k.value, names))
            else:
                kwargs[k.arg] = _evaluate(k.value, names)
        return func(*args, **kwargs)
    raise _Unsupported(type(node).__name__)
