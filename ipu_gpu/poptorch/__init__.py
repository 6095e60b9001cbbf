"""PopTorch (``import poptorch`` in a program run by ``ipu-gpu run``), emulated.

This package holds PopTorch 3.4's options and enumerations: ``poptorch.Options`` with its
groups (``Training``, ``Precision``, ``TensorLocations``, ``Distributed``, ``Jit``,
``_Popart``), the execution strategies and ``TensorLocationSettings``, and the enums
(``poptorch.OutputMode``, ``poptorch.ReductionType``, ...). None of it needs PyTorch, so
``import poptorch`` works without torch installed.

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

__all__ = ["AnchorMode", "AutoStage", "CommGroupType", "ConfigFileError", "ConnectionType",
           "DataLoaderMode", "HalfFloatCastingBehavior", "Liveness", "MatMulSerializationMode",
           "MeanReductionStrategy", "MultiConvPlanType", "Options", "OutputMode", "OverlapMode",
           "ParallelPhasedExecution", "Phase", "PipelinedExecution", "ReductionType",
           "SerialPhasedExecution", "ShardedExecution", "SharingStrategy", "Stage",
           "SyncPattern", "TensorLocationSettings", "VariableRetrievalMode", "enums", "options"]
