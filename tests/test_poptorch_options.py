"""poptorch.Options and its option groups (ipu_gpu.poptorch.options) and the enums, against
PopTorch 3.4 (graphcore/poptorch python/options.py, _options_impl.py, enums.py and
tests/options_test.py): defaults, chaining, PopTorch's validation errors, freezing,
toDict/clone/repr, POPTORCH_DEFAULT_OPTIONS, loadFromFile, and `import poptorch` under
`ipu-gpu run`, with and without torch."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import ipu_gpu.poptorch as poptorch
from ipu_gpu.poptorch import enums

PROGRAMS = Path(__file__).with_name("programs")
ROOT = str(Path(__file__).resolve().parents[1])


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("POPTORCH_CACHE_DIR", "POPTORCH_DEFAULT_OPTIONS", "OMPI_COMM_WORLD_SIZE",
                 "OMPI_COMM_WORLD_RANK", "POPLAR_ENGINE_OPTIONS"):
        monkeypatch.delenv(name, raising=False)


# ---- enums -----------------------------------------------------------------------------------
ENUMS = {
    "OutputMode": {"Final": 0, "EveryN": 1, "All": 2, "Sum": 3, "Default": 4},
    "AnchorMode": {"Final": 0, "EveryN": 1, "All": 2, "Sum": 3, "Default": 4},
    "ReductionType": {"Sum": 0, "Mean": 1, "NoReduction": 2},
    "MeanReductionStrategy": {"Running": 0, "Post": 1, "PostAndLoss": 2},
    "SyncPattern": {"Full": 0, "SinglePipeline": 1, "ReplicaAndLadder": 2},
    "ConnectionType": {"Always": 0, "OnDemand": 1, "Never": 2},
    "DataLoaderMode": {"Sync": 0, "Async": 1, "AsyncRebatched": 2},
    "SharingStrategy": {"SharedMemory": 0, "FileSystem": 1, "Fork": 2, "ForkServer": 3},
    "HalfFloatCastingBehavior": {"FloatDowncastToHalf": 0, "HalfUpcastToFloat": 1,
                                 "Default": 2},
    "MatMulSerializationMode": {"InputChannels": "input_channels",
                                "ReducingDim": "reducing_dim",
                                "OutputChannels": "output_channels", "Disabled": "none"},
    "Liveness": {"AlwaysLive": 0, "OffChipAfterFwd": 1, "OffChipAfterFwdNoOverlap": 2,
                 "OffChipAfterEachPhase": 3},
    "OverlapMode": {"NoOverlap": "no_overlap",
                    "OverlapAccumulationLoop": "overlap_accumulation_loop",
                    "OverlapDeviceIterationLoop": "overlap_device_iteration_loop"},
    "AutoStage": {"SameAsIpu": 0, "AutoIncrement": 1},
    "MultiConvPlanType": {"Parallel": 0, "Serial": 1},
    "CommGroupType": {"All": 0, "Consecutive": 1, "Orthogonal": 2, "NoGrouping": 3},
    "VariableRetrievalMode": {"OnePerGroup": 0, "AllReplicas": 2},
}


@pytest.mark.parametrize("name", sorted(ENUMS))
def test_enum_members_and_values(name):
    cls = getattr(poptorch, name)
    assert cls is getattr(enums, name)
    assert {m.name: m.value for m in cls} == ENUMS[name]


def test_package_exports():
    assert set(poptorch.__all__) >= {"Options", "OutputMode", "ReductionType", "enums",
                                     "options", "TensorLocationSettings", "ConfigFileError",
                                     "PipelinedExecution", "ShardedExecution", "Stage"}
    for name in poptorch.__all__:
        assert hasattr(poptorch, name)
    assert poptorch.options.ConfigFileError is poptorch.ConfigFileError


# ---- defaults --------------------------------------------------------------------------------
def test_top_level_defaults():
    opts = poptorch.Options()
    assert opts.device_iterations == 1
    assert opts.replication_factor == 1
    assert opts.input_group_size == 1
    assert opts.input_cgt is poptorch.CommGroupType.Consecutive
    assert opts.broadcast_buffers is True
    assert opts.log_dir == "."
    assert opts.max_repeat_logs == 4
    assert opts.auto_round_num_ipus is False
    assert opts.anchored_tensors == {}
    assert opts.output_mode == poptorch.OutputMode.Default and type(opts.output_mode) is int
    assert opts.output_return_period == 1
    assert opts.connection_type == poptorch.ConnectionType.Always
    assert opts.sync_pattern == poptorch.SyncPattern.Full
    assert opts.available_memory_proportion == {}
    assert opts.defaultOutputMode()
    assert opts("device_iterations") == 1
    for created_on_first_set in ("random_seed", "model_name", "use_model", "ipu_id",
                                 "ipu_version"):
        assert not hasattr(opts, created_on_first_set)
    with pytest.raises(AttributeError, match=r"^Invalid attribute random_seed\.$"):
        _ = opts.random_seed


def test_group_defaults():
    opts = poptorch.Options()
    t = opts.Training
    assert t.gradient_accumulation == 1
    assert t.accumulation_and_replication_reduction_type is poptorch.ReductionType.Mean
    assert t.meanAccumulationAndReplicationReductionStrategy is \
        poptorch.MeanReductionStrategy.Post
    d = opts.Distributed
    assert (d.numProcesses, d.processId, d.ipuof_configs) == (1, 0, {})
    assert opts._Popart.options == {"instrumentWithHardwareCycleCounter": False,
                                    "rearrangeAnchorsOnHost": False}
    assert opts.TensorLocations.toDict() == {} and opts.Precision.toDict() == {}
    assert opts.Jit.toDict() == {}
    assert isinstance(opts._execution_strategy, poptorch.PipelinedExecution)


def test_distributed_reads_openmpi_environment(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    opts = poptorch.Options()
    assert (opts.Distributed.numProcesses, opts.Distributed.processId) == (4, 3)
    assert opts.Distributed.disable() is opts.Distributed
    assert (opts.Distributed.numProcesses, opts.Distributed.processId) == (1, 0)
    monkeypatch.setenv("MY_SIZE", "8")
    monkeypatch.setenv("MY_RANK", "5")
    opts.Distributed.setEnvVarNames("MY_SIZE", "MY_RANK")
    assert (opts.Distributed.num_distributed_processes,
            opts.Distributed.distributed_process_id) == (8, 5)
    opts.Distributed.configureProcessId(1, 2)
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (1, 2)


# ---- chaining and setters --------------------------------------------------------------------
def test_setters_chain_and_are_read_back():
    opts = poptorch.Options()
    loc = poptorch.TensorLocationSettings().useOnChipStorage(False).minElementsForOffChip(8)
    same = (opts.deviceIterations(4).replicationFactor(2).broadcastBuffers(False)
            .logDir("/tmp/x").maxRepeatLogs(None).modelName("m").autoRoundNumIPUs()
            .useIpuModel(True).useIpuId(3).syncPattern(poptorch.SyncPattern.SinglePipeline)
            .connectionType(poptorch.ConnectionType.OnDemand)
            .setAvailableMemoryProportion({"IPU0": 0.5, "IPU3": 0.25})
            .enableExecutableCaching("/tmp/cache").enableStableNorm(True)
            .enableSyntheticData(True).logCycleCount(True).enableProfiling("/tmp/p")
            .updatableNamedBuffers(["b"]).sourceLocationExcludes(["x"])
            .appendToLocationExcludes("y", "z").showCompilationProgressBar(False)
            .relaxOptimizerAttributesChecks().disableModuleNamescope()
            .setExecutionStrategy(poptorch.ShardedExecution())
            .outputMode(poptorch.OutputMode.EveryN, 2).randomSeed(42)
            .anchorTensor("g", "Gradient___w", poptorch.OutputMode.Final)
            .inputReplicaGrouping(2, poptorch.CommGroupType.Orthogonal))
    assert same is opts
    assert (opts.device_iterations, opts.replication_factor) == (4, 2)
    assert opts.broadcast_buffers is False and opts.log_dir == "/tmp/x"
    assert opts.max_repeat_logs == (1 << 64) - 1
    assert (opts.model_name, opts.auto_round_num_ipus, opts.use_model, opts.ipu_id) == \
        ("m", True, True, 3)
    assert opts.sync_pattern == 1 and opts.connection_type == 1
    assert opts.available_memory_proportion == {0: 0.5, 3: 0.25}
    assert (opts.output_mode, opts.output_return_period) == (poptorch.OutputMode.EveryN, 2)
    assert opts.random_seed == 42
    assert opts.anchored_tensors == {"g": ["Gradient___w", False, poptorch.OutputMode.Final,
                                           1]}
    assert (opts.input_group_size, opts.input_cgt) == (2, poptorch.CommGroupType.Orthogonal)
    popart = opts._Popart.options
    assert popart["cachePath"] == "/tmp/cache" and popart["enableEngineCaching"] is True
    assert popart["syntheticDataMode"] == 2 and popart["enableStableNorm"] is True
    assert popart["instrumentWithHardwareCycleCounter"] is True
    assert popart["updatableNamedBuffers"] == ["b"]
    assert popart["engineOptions"] == {"debug.allowOutOfMemory": "true",
                                       "autoReport.directory": "/tmp/p",
                                       "autoReport.all": "true"}
    assert opts._source_location_excludes == ["x", "y", "z"]
    assert opts._show_compilation_progress_bar is False
    assert opts._relax_optimizer_checks is True and opts._module_namescope_enabled is False
    assert opts.TensorLocations.setWeightLocation(loc) is opts.TensorLocations
    assert opts.TensorLocations.location_weight == {"onChip": 0, "minElementsForOffChip": 8}
    opts.enableExecutableCaching(None).enableSyntheticData(False)
    assert popart["enableEngineCaching"] is False and popart["syntheticDataMode"] == 0
    opts.useOfflineIpuTarget()
    assert opts.connection_type == poptorch.ConnectionType.Never and opts.ipu_version == 2


def test_group_setters_chain():
    opts = poptorch.Options()
    t = opts.Training
    assert (t.gradientAccumulation(8)
            .accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
            .setMeanAccumulationAndReplicationReductionStrategy(
                poptorch.MeanReductionStrategy.Running)
            .setAutomaticLossScaling(True).setConvolutionDithering(True)) is t
    assert t.gradient_accumulation == 8
    assert t.accumulation_and_replication_reduction_type is poptorch.ReductionType.Sum
    assert t.meanAccumulationAndReplicationReductionStrategy is \
        poptorch.MeanReductionStrategy.Running
    p = opts.Precision
    assert (p.enableFloatingPointExceptions(True).enableStochasticRounding(True)
            .halfFloatCasting(poptorch.HalfFloatCastingBehavior.HalfUpcastToFloat)
            .runningStatisticsAlwaysFloat(False)) is p
    assert opts.Jit.traceModel(False) is opts.Jit
    assert opts._Popart.setPatterns({"PreUniRepl": False}, 1).setEngineOptions({"a": "b"}) \
        is opts._Popart
    popart = opts._Popart.options
    assert popart["automaticLossScalingSettings.enabled"] is True
    assert popart["enableFloatingPointChecks"] is True
    assert popart["enableStochasticRounding"] is True
    assert (popart["patterns"], popart["patterns_level"]) == ({"PreUniRepl": False}, 1)
    assert popart["engineOptions"] == {"a": "b"}
    tl = opts.TensorLocations
    assert tl.numIOTiles(32).numIOTiles(192).numIOTiles(100) is tl
    assert tl.toDict() == {"numIOTiles": 100}  # the method hides the value, as in PopTorch


def test_partials_type_needs_a_torch_dtype():
    torch = pytest.importorskip("torch")
    opts = poptorch.Options()
    opts.Precision.setPartialsType(torch.half)
    assert opts._Popart.options["partialsTypeMatMuls"] == "half"
    assert opts._Popart.options["convolutionOptions"] == {"partialsType": "half"}
    opts.Precision.setPartialsType(torch.float32)
    assert opts._Popart.options["partialsTypeMatMuls"] == "float"
    with pytest.raises(ValueError, match="^parameter to setPartialsType should be "
                                         "eithertorch.float or torch.half$"):
        opts.Precision.setPartialsType(torch.int32)


def test_random_seed_seeds_torch_too():
    torch = pytest.importorskip("torch")
    poptorch.Options().randomSeed(7)
    a = torch.rand(3)
    poptorch.Options().randomSeed(7)
    assert torch.equal(a, torch.rand(3))


def test_public_attribute_assignment_goes_through_set():
    opts = poptorch.Options()
    opts.device_iterations = 5
    opts.Training.gradient_accumulation = 2
    assert opts.device_iterations == 5 and opts.Training.gradient_accumulation == 2
    with pytest.raises(AssertionError, match="Unexpected type <class 'str'> for option "
                                             "device_iterations"):
        opts.device_iterations = "5"
    with pytest.raises(AssertionError, match=r"^Invalid option not_an_option, valid options "
                                             r"are dict_keys\(\['replication_factor'"):
        opts.not_an_option = 1
    with pytest.raises(AttributeError, match="^Invalid private attribute _typo"):
        opts._typo = 1


# ---- validation ------------------------------------------------------------------------------
@pytest.mark.parametrize("call, value, expected", [
    ("deviceIterations", 2.0, "<class 'float'> for option device_iterations. Expected "
                              "<class 'int'>"),
    ("replicationFactor", "2", "<class 'str'> for option replication_factor. Expected "
                               "<class 'int'>"),
    ("broadcastBuffers", 1, "<class 'int'> for option broadcast_buffers. Expected "
                            "<class 'bool'>"),
    ("autoRoundNumIPUs", None, "<class 'NoneType'> for option auto_round_num_ipus"),
    ("logDir", 3, "<class 'int'> for option log_dir. Expected <class 'str'>"),
    ("maxRepeatLogs", 2.5, "<class 'float'> for option max_repeat_logs"),
])
def test_type_checked_setters(call, value, expected):
    opts = poptorch.Options()
    with pytest.raises(AssertionError) as e:
        getattr(opts, call)(value)
    assert str(e.value).startswith("Unexpected type ") and expected in str(e.value)


def test_bools_pass_for_ints_as_in_poptorch():
    opts = poptorch.Options().deviceIterations(True)  # bool is an int
    assert opts.device_iterations is True


def test_training_validation():
    t = poptorch.Options().Training
    with pytest.raises(AssertionError, match="Unexpected type <class 'float'> for option "
                                             "gradient_accumulation"):
        t.gradientAccumulation(2.0)
    msg = ("^accumulationAndReplicationReductionType must be set to "
           "poptorch.ReductionType.Mean or poptorch.ReductionType.Sum$")
    for bad in (poptorch.ReductionType.NoReduction, 1, "Mean"):
        with pytest.raises(ValueError, match=msg):
            t.accumulationAndReplicationReductionType(bad)
    with pytest.raises(AssertionError, match="meanAccumulationAndReplicationReductionStrategy"):
        t.setMeanAccumulationAndReplicationReductionStrategy(1)


def test_output_mode_validation(caplog):
    opts = poptorch.Options()
    with pytest.raises(AssertionError):
        opts.outputMode(2)  # the enum is required
    with pytest.raises(AssertionError):
        opts.outputMode(poptorch.AnchorMode.All)
    msg = "^EveryN anchor must have output_return_period set to valid positive integer$"
    for period in (None, 0, -1):
        with pytest.raises(AssertionError, match=msg):
            opts.outputMode(poptorch.OutputMode.EveryN, period)
    assert opts.defaultOutputMode()
    opts.outputMode(poptorch.OutputMode.Sum, 5)  # the period is ignored (logged)
    assert (opts.output_mode, opts.output_return_period) == (poptorch.OutputMode.Sum, 5)
    assert not opts.defaultOutputMode()


def test_deprecated_anchor_mode(caplog):
    opts = poptorch.Options()
    with caplog.at_level("WARNING", logger="poptorch::python"):
        assert opts.anchorMode(poptorch.AnchorMode.EveryN, 3) is opts
    assert "deprecated" in caplog.text
    assert (opts.output_mode, opts.output_return_period) == (poptorch.OutputMode.EveryN, 3)
    with pytest.raises(AssertionError):
        opts.anchorMode(poptorch.OutputMode.All)
    assert not opts.defaultAnchorMode()
    opts.anchorTensor("t", "T", poptorch.AnchorMode.EveryN, 4)
    assert opts.anchored_tensors["t"] == ["T", False, poptorch.OutputMode.EveryN, 4]
    opts.anchorTensor("u", "U")
    assert opts.anchored_tensors["u"] == ["U", True, None, 1]


def test_enum_option_validation():
    opts = poptorch.Options()
    with pytest.raises(AssertionError):
        opts.connectionType(1)
    with pytest.raises(AssertionError):
        opts.syncPattern("Full")
    with pytest.raises(AssertionError):
        opts.setExecutionStrategy("pipelined")
    with pytest.raises(AssertionError):
        opts.randomSeed(1.5)
    with pytest.raises(AssertionError):
        opts.useIpuId("0")
    with pytest.raises(AssertionError, match="Invalid key: ipu0"):
        opts.setAvailableMemoryProportion({"ipu0": 0.5})


def test_input_replica_grouping_validation():
    opts = poptorch.Options()
    with pytest.raises(ValueError, match="^input_group_size cannot be larger than "
                                         "replication_factor$"):
        opts.inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)
    opts.replicationFactor(6)
    with pytest.raises(ValueError, match="^input_group_type cannot be All$"):
        opts.inputReplicaGrouping(2, poptorch.CommGroupType.All)
    with pytest.raises(ValueError, match="^input_group_size must be a factor of "
                                         "replication_factor$"):
        opts.inputReplicaGrouping(4, poptorch.CommGroupType.Consecutive)
    opts.inputReplicaGrouping(3, poptorch.CommGroupType.Consecutive)
    assert opts.input_group_size == 3
    opts.inputReplicaGrouping(6, poptorch.CommGroupType.NoGrouping)  # size ignored
    assert (opts.input_group_size, opts.input_cgt) == (1, poptorch.CommGroupType.Consecutive)


def test_group_validation():
    opts = poptorch.Options()
    with pytest.raises(ValueError, match=r"^options.Jit.traceModel\(True\) is no longer "
                                         r"supported$"):
        opts.Jit.traceModel(True)
    with pytest.raises(AssertionError, match="^enableFloatingPointExceptions needs to be set "
                                             "to a bool$"):
        opts.Precision.enableFloatingPointExceptions(1)
    with pytest.raises(ValueError, match="^runningStatisticsAlwaysFloat needs to be set to a "
                                         "bool$"):
        opts.Precision.runningStatisticsAlwaysFloat("no")
    with pytest.raises(ValueError, match="^parameter to setPartialsType"):
        opts.Precision.setPartialsType("float")
    with pytest.raises(AssertionError):
        opts._Popart.setPatterns({}, level="2")
    with pytest.raises(AssertionError):
        opts._Popart.setPatterns([], 2)
    with pytest.raises(AssertionError, match="Unexpected type <class 'str'> for option "
                                             "distributed_process_id"):
        opts.Distributed.configureProcessId("0", 1)
    msg = "^numIOTiles must be an even number between 32 and 192.$"
    for tiles in (10, 193, 33, 194, 30):
        with pytest.raises(AssertionError, match=msg):
            opts.TensorLocations.numIOTiles(tiles)
    with pytest.raises(AssertionError):
        opts.TensorLocations.numIOTiles(32.0)
    with pytest.raises(AssertionError):
        opts.TensorLocations.setActivationLocation({"onChip": 1})
    loc = poptorch.TensorLocationSettings()
    for call in ("useOnChipStorage", "useReplicatedTensorSharding", "useIOTilesToLoad",
                 "useIOTilesToStore", "minElementsForOffChip",
                 "minElementsForReplicatedTensorSharding"):
        with pytest.raises(AssertionError):
            getattr(loc, call)("yes")
    loc.useOnChipStorage().useReplicatedTensorSharding().useIOTilesToLoad(False)
    loc.useIOTilesToStore().minElementsForReplicatedTensorSharding(4)
    assert loc.toDict() == {"onChip": 1, "useReplicatedTensorSharding": 1,
                            "useIOTilesToLoad": 0, "useIOTilesToStore": 1,
                            "minElementsForReplicatedTensorSharding": 4}
    loc.useOnChipStorage(None)
    assert "onChip" not in loc.toDict()
    loc.minElementsForOffChip(1).minElementsForOffChip(2)
    with pytest.raises(AssertionError, match="Unexpected type <class 'float'> for option "
                                             "minElementsForOffChip"):
        loc.createOrSet(minElementsForOffChip=2.0)


def test_execution_strategies():
    p = poptorch.PipelinedExecution("A", ["B", "C"], poptorch.Stage("D").ipu(3))
    assert p.stage("B") is p.stage("C") and p.stage("B")._stage_id == 1
    assert p.stage("D")._ipu == 3 and p.stage("D")._stage_id == 2
    assert p.backendOptions() == {"execution_mode": 0}
    assert poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement).backendOptions() == \
        {"execution_mode": 1}
    with pytest.raises(AssertionError, match="^A associated with more than one stage$"):
        poptorch.PipelinedExecution("A", "A")
    with pytest.raises(AssertionError, match="^Unknown block Z$"):
        p.stage("Z")
    with pytest.raises(AssertionError, match="Block IDs are supposed to be strings"):
        poptorch.Stage(1)
    s = poptorch.SerialPhasedExecution(
        poptorch.Phase(poptorch.Stage("A"), poptorch.Stage("A2")), ["B", "B2"])
    s.phase(0).ipus(0, 1)
    assert s.stage("A2")._ipu == 1 and s.stage("B2")._phase_id == 1
    s.setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase).useSeparateBackwardPhase()
    assert s.backendOptions() == {"execution_mode": 2, "separate_backward_phase": True,
                                  "tensors_liveness": 3, "serial_phases_execution": True}
    with pytest.raises(AssertionError, match="Phase contains 2 stages but you provided 1 ipus"):
        s.phase(0).ipus(0)
    par = poptorch.ParallelPhasedExecution(["A"], ["B"]).sendTensorsOffChipAfterFwd()
    assert par.backendOptions()["tensors_liveness"] == 1
    assert par.backendOptions()["serial_phases_execution"] is False
    with pytest.raises(AssertionError, match="There is currently no AutoStage for "
                                             "PhasedExecution"):
        poptorch.SerialPhasedExecution()
    opts = poptorch.Options().setExecutionStrategy(s).outputMode(poptorch.OutputMode.All)
    assert opts.toDict()["execution_mode"] == 2


# ---- freezing --------------------------------------------------------------------------------
def test_frozen_options_refuse_changes_and_clones_are_unfrozen():
    opts = poptorch.Options()
    opts._freeze()
    frozen = "^Can't modify frozen Options$"
    for change in (lambda: opts.randomSeed(42), lambda: opts.set(random_seed=42),
                   lambda: opts.Training.gradientAccumulation(0),
                   lambda: opts._Popart.set("groupNormStridedChannelGrouping", True),
                   lambda: opts.Precision.enableStochasticRounding(True),
                   lambda: opts.Distributed.disable(),
                   lambda: opts.TensorLocations.numIOTiles(32),
                   lambda: opts.showCompilationProgressBar(False),
                   lambda: setattr(opts, "device_iterations", 2)):
        with pytest.raises(AttributeError, match=frozen):
            change()
    assert opts.device_iterations == 1  # reads still work
    for twin in (opts.clone(), copy.deepcopy(opts)):
        twin.deviceIterations(5).Distributed.configureProcessId(5, 15)
        twin._Popart.set("autoRecomputation", 3)
        twin.Training.gradientAccumulation(4)
        twin.TensorLocations.setWeightLocation(
            poptorch.TensorLocationSettings().useIOTilesToStore(True))
        twin.Precision.enableStochasticRounding(True)
        # the Precision/Training groups still write into the clone's own PopART options
        assert twin.Precision._popart_options is twin._Popart
        assert twin.Training._popart_options is twin._Popart
        assert twin._Popart.options["enableStochasticRounding"] is True
    assert "enableStochasticRounding" not in opts._Popart.options
    opts._unfreeze()
    opts.deviceIterations(3)


# ---- toDict / clone / repr -------------------------------------------------------------------
def test_to_dict_needs_an_output_mode():
    opts = poptorch.Options()
    with pytest.raises(AssertionError, match="^An output mode must be picked before "
                                             "serialisation$"):
        opts.toDict()


def test_to_dict_merges_every_group():
    opts = poptorch.Options().deviceIterations(4).replicationFactor(2)
    opts.outputMode(poptorch.OutputMode.All)
    opts.Training.gradientAccumulation(3)
    opts.Distributed.configureProcessId(1, 2)
    opts.TensorLocations.numIOTiles(64)
    opts.Precision.enableStochasticRounding(True)
    d = opts.toDict()
    assert d["device_iterations"] == 4 and d["replication_factor"] == 2
    assert d["output_mode"] == poptorch.OutputMode.All
    assert d["gradient_accumulation"] == 3
    assert d["accumulation_and_replication_reduction_type"] is poptorch.ReductionType.Mean
    assert (d["distributed_process_id"], d["num_distributed_processes"]) == (1, 2)
    assert d["numIOTiles"] == 64
    assert d["enableStochasticRounding"] is True
    assert d["execution_mode"] == 0
    assert callable(d["compilation_progress_bar_fn"])
    d["compilation_progress_bar_fn"](0, 10)
    d["compilation_progress_bar_fn"](10, 10)
    assert opts._progress_bar.compilation_time is not None
    assert "compilation_progress_bar_fn" not in \
        opts.showCompilationProgressBar(False).toDict()
    opts._Popart.set("device_iterations", 2)  # a clash between groups
    with pytest.raises(AssertionError, match="^Can't merge dictionaries, they have some keys "
                                             "in common$"):
        opts.toDict()


def test_clone_is_deep():
    opts = poptorch.Options()
    opts.deviceIterations(5)
    opts.Distributed.configureProcessId(5, 15)
    opts.anchorTensor("t1", "tensor1", poptorch.OutputMode.EveryN, 2)
    opts._Popart.set("autoRecomputation", 3)
    opts.Training.gradientAccumulation(4)
    opts.TensorLocations.setWeightLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(True))
    twin = opts.clone()
    assert type(twin) is poptorch.Options and twin is not opts
    opts.deviceIterations(4)
    opts.Distributed.configureProcessId(2, 15)
    opts.anchorTensor("t2", "tensor2", poptorch.OutputMode.Final)
    opts._Popart.set("autoRecomputation", 2)
    opts.TensorLocations.setWeightLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(False))
    assert (twin.device_iterations, twin.Distributed.processId) == (5, 5)
    assert set(twin.anchored_tensors) == {"t1"}
    assert twin._Popart.options["autoRecomputation"] == 3
    assert twin.TensorLocations.location_weight["onChip"] == 1
    assert twin.Training.gradient_accumulation == 4
    assert repr(pickle.loads(pickle.dumps(twin))) == repr(twin)


def test_repr_lists_values_and_groups():
    opts = poptorch.Options().replicationFactor(4)
    opts.Training.gradientAccumulation(2)
    text = repr(opts)
    assert text.startswith("Options(replication_factor=4, ")
    assert f"{id(opts):x}" not in text
    assert "log_dir='.'" in text
    assert "Training=_TrainingOptions(gradient_accumulation=2, " in text
    for group in ("Distributed=_DistributedOptions(", "Jit=_JitOptions(",
                  "Precision=_PrecisionOptions(", "TensorLocations=_TensorLocationOptions(",
                  "_Popart=_PopartOptions(instrumentWithHardwareCycleCounter=False"):
        assert group in text
    assert str(opts) == text
    assert repr(poptorch.Options()) != text


# ---- environment, JSON and config files ------------------------------------------------------
def test_default_options_from_environment(monkeypatch, tmp_path):
    expected = poptorch.Options()
    expected.deviceIterations(2).logDir(str(tmp_path)).enableSyntheticData(True)
    expected.Precision.enableFloatingPointExceptions(True)
    expected.connectionType(poptorch.ConnectionType.OnDemand)
    expected._Popart.set("saveInitializersToFile", "my_file.onnx")
    monkeypatch.setenv("POPTORCH_DEFAULT_OPTIONS", json.dumps({
        "deviceIterations": 2, "logDir": str(tmp_path), "enableSyntheticData": True,
        "Precision.enableFloatingPointExceptions": True,
        "connectionType": "ConnectionType.OnDemand",
        "_Popart.set": ["saveInitializersToFile", "my_file.onnx"]}))
    from_env = poptorch.Options()
    assert repr(from_env) == repr(expected)
    monkeypatch.delenv("POPTORCH_DEFAULT_OPTIONS")
    assert repr(poptorch.Options()) != repr(expected)


def test_cache_dir_from_environment(monkeypatch):
    monkeypatch.setenv("POPTORCH_CACHE_DIR", "/tmp/pt-cache")
    popart = poptorch.Options()._Popart.options
    assert popart["cachePath"] == "/tmp/pt-cache" and popart["enableEngineCaching"] is True


def test_load_from_file_round_trip(tmp_path):
    c1 = tmp_path / "c1.cfg"
    c1.write_text("\n".join([
        "deviceIterations(32)",
        "setExecutionStrategy(poptorch.ShardedExecution())",
        "  replicationFactor(2)",  # whitespace is stripped
        " ",  # empty lines are skipped
        "enableSyntheticData(True) # inline comments are ignored",
        "# comments are ignored",
        "Training.gradientAccumulation(2 * 2)",
        "Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)",
        "outputMode(poptorch.OutputMode.EveryN, output_return_period=8)",
        "_Popart.set('autoRecomputation', 3)",
        "TensorLocations.setWeightLocation(poptorch.TensorLocationSettings()"
        ".useOnChipStorage(False))",
        "setAvailableMemoryProportion({'IPU0': 0.5})",
        "inputReplicaGrouping(*[2, poptorch.CommGroupType.Orthogonal])",
        "randomSeed(-1 + 43)",
    ]))
    c2 = tmp_path / "c2.cfg"
    c2.write_text("deviceIterations(4)\n")
    opts = poptorch.Options()
    assert opts.loadFromFile(str(c1)) is opts
    opts.loadFromFile(str(c2))  # cumulative: only what c2 sets changes
    expected = poptorch.Options().deviceIterations(4).replicationFactor(2)
    expected.setExecutionStrategy(poptorch.ShardedExecution()).enableSyntheticData(True)
    expected.Training.gradientAccumulation(4).accumulationAndReplicationReductionType(
        poptorch.ReductionType.Sum)
    expected.outputMode(poptorch.OutputMode.EveryN, 8)._Popart.set("autoRecomputation", 3)
    expected.TensorLocations.setWeightLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(False))
    expected.setAvailableMemoryProportion({"IPU0": 0.5})
    expected.inputReplicaGrouping(2, poptorch.CommGroupType.Orthogonal).randomSeed(42)
    assert repr(opts) == repr(expected)
    assert opts.toDict()["execution_mode"] == 1
    keys = set(expected.toDict()) - {"compilation_progress_bar_fn"}
    assert {k: opts.toDict()[k] for k in keys} == {k: expected.toDict()[k] for k in keys}


def test_load_from_file_errors(tmp_path):
    path = tmp_path / "tmp.conf"
    path.write_text("deviceIterations(1)\n# comment\n\nreplicationFactor(1)\n"
                    "outputMode(poptorch.OutputMode.All")
    with pytest.raises(poptorch.options.ConfigFileError) as e:
        poptorch.Options().loadFromFile(str(path))
    # PopTorch counts the line among the setter lines (comments and blanks skipped)
    assert str(e.value).startswith("SyntaxError at line 3 of tmp.conf: ")
    assert str(e.value).endswith("\n> options.outputMode(poptorch.OutputMode.All")
    path.write_text("deviceIterations(2.0)\n")  # a setter's own error is raised as is
    with pytest.raises(AssertionError, match="Unexpected type <class 'float'>"):
        poptorch.Options().loadFromFile(str(path))
    path.write_text("deviceIterations(__import__('os').getpid())\n")
    with pytest.raises(poptorch.ConfigFileError, match="^Unsupported expression at line 1 of "
                                                       "tmp.conf: name '__import__'"):
        poptorch.Options().loadFromFile(str(path))
    path.write_text("x = 1\n")
    with pytest.raises(poptorch.ConfigFileError):
        poptorch.Options().loadFromFile(str(path))
    with pytest.raises(FileNotFoundError):
        poptorch.Options().loadFromFile(str(tmp_path / "missing.cfg"))


def test_load_from_file_torch_names(tmp_path):
    pytest.importorskip("torch")
    path = tmp_path / "p.cfg"
    path.write_text("Precision.setPartialsType(torch.half)\n")
    opts = poptorch.Options().loadFromFile(str(path))
    assert opts._Popart.options["partialsTypeMatMuls"] == "half"


def test_subclassing_and_group_class_swap():
    class _Distributed(poptorch.options._DistributedOptions):
        pass

    opts = poptorch.Options()
    opts.Distributed.__class__ = _Distributed  # what popdist does
    assert isinstance(opts.Distributed, _Distributed)

    class MyOptions(poptorch.Options):
        def __init__(self):
            super().__init__()
            self.replicationFactor(2)

    assert MyOptions().clone().replication_factor == 2


# ---- imports ---------------------------------------------------------------------------------
def _python(code, **env_extra):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, cwd=ROOT)


def test_import_ipu_gpu_does_not_import_poptorch_or_torch():
    r = _python("import sys, ipu_gpu\n"
                "print(sorted(m for m in sys.modules if m == 'torch' or "
                "m.startswith('ipu_gpu.poptorch')))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_options_without_torch():
    code = """
import sys
class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == 'torch' or name.startswith('torch.'):
            raise ImportError('No module named torch (blocked)')
sys.meta_path.insert(0, NoTorch())
import ipu_gpu.poptorch as poptorch
opts = poptorch.Options().deviceIterations(2).randomSeed(3)
opts.outputMode(poptorch.OutputMode.Final)
try:
    opts.Precision.setPartialsType('float')
except ValueError as e:
    print('ValueError', e)
print(opts.toDict()['device_iterations'], opts.random_seed, 'torch' in sys.modules)
"""
    r = _python(code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "ValueError parameter to setPartialsType should be eithertorch.float or torch.half",
        "2 3 False"]


def test_ipu_gpu_run_resolves_import_poptorch():
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run",
                        "poptorch_options_program.py"], cwd=PROGRAMS, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == (
        "device_iterations=4 replication_factor=2 gradient_accumulation=3 output_mode=All "
        "module=ipu_gpu.poptorch.options")
