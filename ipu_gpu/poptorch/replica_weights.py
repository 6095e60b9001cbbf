"""Replica-grouped weights: ``poplar_model.W.replicaGrouping(comm_group_type, group_size,
variable_retrieval_mode)`` on a wrapped model's top-level parameter before it compiles
(PopTorch's ``PoplarExecutor.__getattr__``, ``per_replica_params``; PopART's
``VariableSettings``; research/poptorch_semantics.md section 7).

The replicas are split into groups (``CommGroupType.Consecutive``: replicas ``k*size ..
(k+1)*size - 1``; ``Orthogonal``: replicas ``k, k + R/size, ...``; ``NoGrouping``: one
replica each; ``All``: one group) and each group holds its own value of the weight: the host
parameter carries one slice per group along dim 0 (``[R / size, *shape]``; no extra dim for
a single group), and replica r's ``forward`` sees slice ``r // size`` (Consecutive), ``r %
(R / size)`` (Orthogonal) or ``r`` (NoGrouping). Each slice is updated with the gradient
summed over the replicas of its group, divided as the whole model's (ReductionType.Mean:
by all the replicas and accumulation steps). The emulator puts a view of the slice into
the module's parameter slot around each replica's forward, so that back-propagation
accumulates into that slice of the host parameter.

``VariableRetrievalMode.AllReplicas`` asks PopART for every replica's copy; the replicas of
one group hold the same values, and the host parameter keeps one slice per group
(``OnePerGroup``'s layout) in ipu_gpu.
"""

from __future__ import annotations

import contextlib

import torch

from .enums import CommGroupType, VariableRetrievalMode
from .errors import Error

__all__ = ["GroupingHandle", "ReplicaGroupedWeights"]


class GroupingHandle:
    """What ``poplar_model.<parameter>`` returns (PopTorch's ``ReplicaGroupingWrapper``):
    ``replicaGrouping(...)`` records the grouping for the next compilation; other
    attributes are the parameter's."""

    def __init__(self, executor, name: str, param) -> None:
        object.__setattr__(self, "_executor", executor)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_param", param)

    def replicaGrouping(self, comm_group_type, shards: int,  # noqa: N802 - PopTorch's name
                        variable_retrieval_mode) -> None:
        """Give each group of ``shards`` replicas (``comm_group_type``) its own value of
        this weight (see the module doc)."""
        self._executor._replica_groupings[self._name] = (
            CommGroupType(comm_group_type), int(shards),
            VariableRetrievalMode(variable_retrieval_mode))

    def __getattr__(self, attr):
        return getattr(self._param, attr)


def _groups(cgt: CommGroupType, size: int, replicas: int) -> tuple[int, list]:
    """(number of groups, the slice each replica reads, or None for one group)."""
    if cgt == CommGroupType.All or (cgt != CommGroupType.NoGrouping and size >= replicas):
        return 1, [None] * replicas
    if cgt == CommGroupType.NoGrouping or size == 1:
        return replicas, list(range(replicas))
    if size < 1 or replicas % size:
        raise Error(f"Invalid replica grouping: a group size of {size} does not divide the "
                    f"replication factor {replicas}")
    count = replicas // size
    if cgt == CommGroupType.Consecutive:
        return count, [r // size for r in range(replicas)]
    return count, [r % count for r in range(replicas)]


class ReplicaGroupedWeights:
    """The grouped weights of one compiled model: ``replica(r)`` is the context in which
    replica r's ``forward`` runs.

    Raises:
      poptorch.Error: a scalar weight (PopTorch's message), a weight whose dim 0 is not the
        number of groups (PopART's message), a name that is not a top-level parameter."""

    def __init__(self, model, groupings: dict, replicas: int) -> None:
        self._model = model
        self._slots = []  # (name, per-replica slice index)
        for name, (cgt, size, _mode) in groupings.items():
            param = model._parameters.get(name)
            if not isinstance(param, torch.Tensor):
                raise Error(f"replicaGrouping: {name} is not a parameter of the wrapped model")
            if param.dim() == 0:
                raise Error("Scalars cannot be passed as per-replica weight tensor values")
            count, index = _groups(cgt, size, replicas)
            if count == 1:
                continue
            if param.shape[0] != count:
                raise Error(f"Return mismatch with possibly appended outer dimension "
                            f"({param.shape[0]}) of Tensor: \"{name}\". should match "
                            f"numGroups: {count}")
            self._slots.append((name, index))

    def __bool__(self) -> bool:
        return bool(self._slots)

    @contextlib.contextmanager
    def replica(self, r: int):
        """Replica ``r``'s slices in the module's parameter slots for the body."""
        params = self._model._parameters
        full = [(name, params[name]) for name, _ in self._slots]
        try:
            for (name, index), (_, param) in zip(self._slots, full):
                params[name] = param[index[r]]
            yield
        finally:
            for name, param in full:
                params[name] = param
