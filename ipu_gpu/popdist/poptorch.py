"""``popdist.poptorch``: ``Options`` preset for the instance's replicas."""

from __future__ import annotations

from .. import popdist as _popdist
from ..poptorch.options import Options as _Options

__all__ = ["Options"]


class Options(_Options):
    """``poptorch.Options`` with ``replicationFactor`` the instance's local replicas and
    ``Distributed`` set to this process among the instances."""

    def __init__(self, ipus_per_replica=None):
        super().__init__()
        if ipus_per_replica is None:
            ipus_per_replica = _popdist.getNumIpusPerReplica()
        self.replicationFactor(_popdist.getNumLocalReplicas())
        self.Distributed.configureProcessId(_popdist.getInstanceIndex(),
                                            _popdist.getNumInstances())
        object.__setattr__(self, "_ipus_per_replica", int(ipus_per_replica))
