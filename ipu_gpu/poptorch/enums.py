"""PopTorch's enumerations (``poptorch.enums``, also re-exported as ``poptorch.OutputMode``,
``poptorch.ReductionType``, ...), with the members and values of PopTorch 3.4.

``AnchorMode`` is the pre-SDK-2.4 name of ``OutputMode`` (same members and values); it is
kept, deprecated, so that programs written for older SDKs still run.
"""

from __future__ import annotations

import enum

__all__ = ["AnchorMode", "AutoStage", "CommGroupType", "ConnectionType", "DataLoaderMode",
           "HalfFloatCastingBehavior", "Liveness", "MatMulSerializationMode",
           "MeanReductionStrategy", "MultiConvPlanType", "OutputMode", "OverlapMode",
           "ReductionType", "SharingStrategy", "SyncPattern", "VariableRetrievalMode"]


class MeanReductionStrategy(enum.IntEnum):
    """When a ``ReductionType.Mean`` gradient reduction divides: ``Running`` (a running
    mean), ``Post`` (once, after summing; the default) or ``PostAndLoss`` (deprecated).
    The three agree in exact arithmetic."""

    Running = 0
    Post = 1
    PostAndLoss = 2


class DataLoaderMode(enum.IntEnum):
    """How ``poptorch.DataLoader`` reads its dataset: ``Sync``, ``Async`` (through an
    ``AsynchronousDataAccessor``) or ``AsyncRebatched`` (workers batch 1, the accessor
    builds the combined batch)."""

    Sync = 0
    Async = 1
    AsyncRebatched = 2


class SharingStrategy(enum.IntEnum):
    """How ``AsynchronousDataAccessor`` starts its worker process and shares data."""

    SharedMemory = 0
    FileSystem = 1
    Fork = 2
    ForkServer = 3


class OutputMode(enum.IntEnum):
    """Which results a call returns: ``Final`` (the last micro-batch), ``EveryN`` (every N-th
    device iteration), ``All`` (every micro-batch), ``Sum`` (their sum) or ``Default``
    (``All`` for inference models, ``Final`` for training models)."""

    Final = 0
    EveryN = 1
    All = 2
    Sum = 3
    Default = 4


class AnchorMode(enum.IntEnum):
    """Deprecated (SDK 2.4) name of :class:`OutputMode`, with the same members and values."""

    Final = 0
    EveryN = 1
    All = 2
    Sum = 3
    Default = 4


class ConnectionType(enum.IntEnum):
    """When to attach to the device: ``Always`` (default), ``OnDemand`` (once compiled) or
    ``Never`` (offline compilation only)."""

    Always = 0
    OnDemand = 1
    Never = 2


class HalfFloatCastingBehavior(enum.IntEnum):
    """Deprecated; ``HalfUpcastToFloat`` (PyTorch's behaviour) is the only one used."""

    FloatDowncastToHalf = 0
    HalfUpcastToFloat = 1
    Default = 2


class ReductionType(enum.IntEnum):
    """How values are combined: ``Sum``, ``Mean`` or ``NoReduction``."""

    Sum = 0
    Mean = 1
    NoReduction = 2


class SyncPattern(enum.IntEnum):
    """How IPUs synchronise with the host: ``Full`` (default), ``SinglePipeline`` or
    ``ReplicaAndLadder``. No numeric effect."""

    Full = 0
    SinglePipeline = 1
    ReplicaAndLadder = 2


class MatMulSerializationMode(enum.Enum):
    """The matmul dimension ``poptorch.serializedMatMul`` splits."""

    InputChannels = "input_channels"
    ReducingDim = "reducing_dim"
    OutputChannels = "output_channels"
    Disabled = "none"


class Liveness(enum.IntEnum):
    """Where tensors live between the phases of a phased execution."""

    AlwaysLive = 0
    OffChipAfterFwd = 1
    OffChipAfterFwdNoOverlap = 2
    OffChipAfterEachPhase = 3


class OverlapMode(enum.Enum):
    """How far ahead host transfers of an input/output are overlapped (IO tiles)."""

    NoOverlap = "no_overlap"
    OverlapAccumulationLoop = "overlap_accumulation_loop"
    OverlapDeviceIterationLoop = "overlap_device_iteration_loop"


class AutoStage(enum.IntEnum):
    """How an execution strategy numbers the stages of blocks it was not told about:
    ``SameAsIpu`` (stage id = the block's IPU; the default) or ``AutoIncrement``."""

    SameAsIpu = 0
    AutoIncrement = 1


class MultiConvPlanType(enum.IntEnum):
    """How a ``poptorch.MultiConv`` runs its convolutions: ``Parallel`` (default) or
    ``Serial``."""

    Parallel = 0
    Serial = 1


class CommGroupType(enum.IntEnum):
    """How replicas are grouped for inputs and per-replica variables: ``All`` (one group;
    not valid for inputs), ``Consecutive``, ``Orthogonal`` or ``NoGrouping``."""

    All = 0
    Consecutive = 1
    Orthogonal = 2
    NoGrouping = 3


class VariableRetrievalMode(enum.IntEnum):
    """What the host reads back from a grouped variable: ``OnePerGroup`` or
    ``AllReplicas``."""

    OnePerGroup = 0
    AllReplicas = 2
