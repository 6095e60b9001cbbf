"""``popdist.tensorflow``: IPU configuration for the instance's replicas."""

from __future__ import annotations

from .. import popdist as _popdist

__all__ = ["set_ipu_config"]


def set_ipu_config(config, ipus_per_replica=None, configure_device=True):
    """Select ``local replicas * ipus_per_replica`` IPUs in ``config`` (an
    ``ipu.config.IPUConfig``; ``ipus_per_replica`` defaults to poprun's
    ``POPDIST_NUM_IPUS_PER_REPLICA``, 1 without it); returns it."""
    if ipus_per_replica is None:
        ipus_per_replica = _popdist.getNumIpusPerReplica()
    if configure_device:
        config.auto_select_ipus = _popdist.getNumLocalReplicas() * int(ipus_per_replica)
    return config
