"""``popdist`` (Graphcore's distributed-launch helper, ``poprun``), emulated for one instance.

The emulator runs one process: there is one instance (index 0) unless ``poprun``'s
environment variables say otherwise (``POPDIST_NUM_INSTANCES``, ``POPDIST_INSTANCE_INDEX``,
``POPDIST_NUM_LOCAL_REPLICAS``, ``POPDIST_NUM_IPUS_PER_REPLICA``); ``isPopdistEnvSet()`` is
True only when they are set. ``popdist.poptorch.Options`` and ``popdist.tensorflow.
set_ipu_config`` configure the local replicas from them."""

from __future__ import annotations

import os

__all__ = ["getDeviceId", "getInstanceIndex", "getNumInstances", "getNumIpusPerReplica",
           "getNumLocalReplicas", "getNumTotalReplicas", "getReplicaIndexOffset", "init",
           "isPopdistEnvSet", "isUsingPopdist"]


def _env_int(name, default):
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def isPopdistEnvSet() -> bool:  # noqa: N802 - Graphcore's names
    """True when the process was launched by ``poprun`` (its environment is set)."""
    return "POPDIST_NUM_INSTANCES" in os.environ or "POPDIST_INSTANCE_INDEX" in os.environ


isUsingPopdist = isPopdistEnvSet


def init() -> None:
    """Initialise the distributed environment: one instance needs nothing."""


def getInstanceIndex() -> int:  # noqa: N802
    return _env_int("POPDIST_INSTANCE_INDEX", 0)


def getNumInstances() -> int:  # noqa: N802
    return _env_int("POPDIST_NUM_INSTANCES", 1)


def getNumLocalReplicas() -> int:  # noqa: N802
    return _env_int("POPDIST_NUM_LOCAL_REPLICAS", 1)


def getNumTotalReplicas() -> int:  # noqa: N802
    return getNumLocalReplicas() * getNumInstances()


def getNumIpusPerReplica() -> int:  # noqa: N802
    return _env_int("POPDIST_NUM_IPUS_PER_REPLICA", 1)


def getReplicaIndexOffset() -> int:  # noqa: N802
    return getInstanceIndex() * getNumLocalReplicas()


def getDeviceId() -> int:  # noqa: N802
    return _env_int("POPDIST_DEVICE_ID", 0)
