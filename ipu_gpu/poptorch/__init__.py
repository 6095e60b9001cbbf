"""PopTorch (``import poptorch`` in a program run by ``ipu-gpu run``), emulated.

This package holds PopTorch 3.4's options and enumerations: ``poptorch.Options`` with its
groups (``Training``, ``Precision``, ``TensorLocations``, ``Distributed``, ``Jit``,
``_Popart``), the execution strategies and ``TensorLocationSettings``, and the enums
(``poptorch.OutputMode``, ``poptorch.ReductionType``, ...), none of which needs PyTorch; and,
loaded on first use and needing torch (the ``poptorch`` extra), the model wrappers
(``trainingModel``, ``inferenceModel``: ``executor.py``), ``DataLoader``, ``optim``,
``identity_loss`` and the block annotations.

``import ipu_gpu`` never imports this package (nor torch).
"""

from . import enums, options
from .enums import (AnchorMode, AutoStage, CommGroupType, ConnectionType, DataLoaderMode,
                    HalfFloatCastingBehavior, Liveness, MatMulSerializationMode,
                    MeanReductionStrategy, MultiConvPlanType, OutputMode, OverlapMode,
                    ReductionType, SharingStrategy, SyncPattern, VariableRetrievalMode)
from .options import (ConfigFileError, Options, ParallelPhasedExecution, Phase,
                      PipelinedExecution, SerialPhasedExecution, ShardedExecution, Stage,
                      TensorLocationSettings)

from .errors import Error, RecoverableError, UnrecoverableError
from .log_level import setLogLevel
from .device_pool import ipuHardwareIsAvailable, ipuHardwareVersion

_TORCH_NAMES = {"trainingModel": "executor", "inferenceModel": "executor",
                "PoplarExecutor": "executor", "identity_loss": "executor",
                "DataLoader": "data", "AsynchronousDataAccessor": "data",
                "BeginBlock": "blocks", "Block": "blocks", "BlockFunction": "blocks",
                "removeBlocks": "blocks", "load": "executable_cache",
                **{name: "ops" for name in ("MultiConv", "NameScope", "dynamic_slice",
                                            "dynamic_update", "nop", "recomputationCheckpoint",
                                            "serializedMatMul", "set_available_memory",
                                            "CPU", "cond", "ctc_beam_search_decoder",
                                            "custom_op", "for_loop", "ipu_print_tensor",
                                            "isRunningOnIpu", "register_custom_op",
                                            "set_overlap_for_input",
                                            "set_overlap_for_output")}}


def __getattr__(name):
    """The torch-backed names, imported on first use (``import poptorch`` needs no torch)."""
    import importlib

    if name == "optim" or name in _TORCH_NAMES:
        try:
            importlib.import_module("torch")
        except ImportError:
            raise ImportError(f"poptorch.{name} needs PyTorch: pip install 'ipu-gpu[poptorch]'")\
                from None
        if name == "optim":
            return importlib.import_module(f"{__name__}.optim")
        module = importlib.import_module(f"{__name__}.{_TORCH_NAMES[name]}")
        return getattr(module, name)
    if name == "autocast":  # removed in PopTorch 3.1 (this emulates 3.4)
        raise AttributeError("module 'poptorch' has no attribute 'autocast': PopTorch 3.1 "
                             "removed its automatic casting API; use PyTorch's torch.autocast "
                             "or cast the model (model.half()) instead")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["AnchorMode", "AutoStage", "CommGroupType", "ConfigFileError", "ConnectionType",
           "DataLoaderMode", "HalfFloatCastingBehavior", "Liveness", "MatMulSerializationMode",
           "MeanReductionStrategy", "MultiConvPlanType", "Options", "OutputMode", "OverlapMode",
           "ParallelPhasedExecution", "Phase", "PipelinedExecution", "ReductionType",
           "SerialPhasedExecution", "ShardedExecution", "SharingStrategy", "Stage",
           "SyncPattern", "TensorLocationSettings", "VariableRetrievalMode", "enums", "options",
           "Error", "RecoverableError", "UnrecoverableError", "optim", "setLogLevel",
           "ipuHardwareIsAvailable", "ipuHardwareVersion",
           *_TORCH_NAMES]
