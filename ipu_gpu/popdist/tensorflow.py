"""``popdist.tensorflow``: IPU configuration for the instance's replicas."""

from __future__ import annotations

from .. import popdist as _popdist

__all__ = ["set_ipu_config"]


def set_ipu_config(config, ipus_per_replica, configure_device=True):
    """Select ``local replicas * ipus_per_replica`` IPUs in ``config`` (an
    ``ipu.config.IPUConfig``); returns it."""
    if configure_device:
        config.auto_select_ipus = _popdist.getNumLocalReplicas() * int(ipus_per_replica)
    return config
