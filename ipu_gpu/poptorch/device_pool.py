"""The IPUs PopTorch models attach to: the emulated system's device pool.

A compiled PopTorch model holds the IPUs PopART reserves for it while it is attached to the
device, as PopTorch's models do (research/poptorch_semantics.md §3.6): from ``compile``
(``ConnectionType.Always``, the default) or its first run (``ConnectionType.OnDemand``) until
``detachFromDevice()``, ``destroy()`` or its garbage collection. How many is the compile-time
placement's count (``blocks.py``): ``max(distinct ipu ids, largest id + 1)`` of the model's
blocks (1 without blocks) times ``replicationFactor``, a power of two (PopTorch reserves IPUs
in powers of two; ``Options.autoRoundNumIPUs(True)`` rounds up), at most 64 per process.

The system offers ``IPU_GPU_POPTORCH_IPUS`` IPUs, else ``IPU_GPU_NUM_IPUS`` (``ipu-gpu run
--ipus N``), else 64, PopTorch's per-process maximum (so any program that runs on one IPU-POD64
host process runs here without detaching). Device ids are ``gc-info -l``'s: one per single IPU
(0 .. N-1), then the groups of 2, 4, ... N IPUs; with 16 IPUs or fewer they are the listing
``ipu-gpu info`` prints. A model acquires the first free device of its size, or the device
``Options.useIpuId(id)`` names. When no such device is free, acquisition fails with PopTorch's
``poptorch.Error("Failed to acquire N IPU(s)")``, and the message goes on to name the models
holding the IPUs and to say that ``detachFromDevice()`` releases them (research §8, pain
point 7).

``Options.useIpuModel(True)`` (or ``POPTORCH_IPU_MODEL=1``) runs on PopTorch's simulated IPU
Model, which takes no IPUs from the pool; ``ConnectionType.Never`` (``useOfflineIpuTarget``)
compiles for an offline target and takes none either.

Nothing here imports torch.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
from dataclasses import dataclass

from .errors import Error

__all__ = ["DevicePool", "Lease", "ipuHardwareIsAvailable", "ipuHardwareVersion", "pool",
           "system_size"]

logger = logging.getLogger("poptorch::python")

POOL_ENV = "IPU_GPU_POPTORCH_IPUS"
SYSTEM_ENV = "IPU_GPU_NUM_IPUS"
MAX_IPUS_PER_PROCESS = 64
IPU_VERSION = 2  # the emulated IPUs are Mk2 (GC200), as ``ipu-gpu info``'s default ipu2


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def system_size() -> int:
    """The number of IPUs of the emulated system PopTorch sees (see the module doc).

    Raises:
      ValueError: the environment variable is not a power of two from 1 to 64."""
    for name in (POOL_ENV, SYSTEM_ENV):
        raw = os.environ.get(name, "").strip()
        if raw:
            try:
                n = int(raw)
            except ValueError:
                n = 0
            if not _is_power_of_two(n) or n > MAX_IPUS_PER_PROCESS:
                raise ValueError(f"{name} must be a power of two from 1 to "
                                 f"{MAX_IPUS_PER_PROCESS} (the IPUs of the emulated "
                                 f"system), got {raw!r}")
            return n
    return MAX_IPUS_PER_PROCESS


def _listing(num_ipus: int) -> tuple:
    """The device ids' IPUs, ``gc-info -l`` order: singles, then pairs, fours, ..."""
    if num_ipus <= 16:
        from ..emulation import topology

        return tuple(c.ipus for c in topology._build_listing(num_ipus))
    groups = [(i,) for i in range(num_ipus)]
    size = 1
    while size < num_ipus:
        level = [g for g in groups if len(g) == size]
        groups += [level[i] + level[i + 1] for i in range(0, len(level), 2)]
        size *= 2
    return tuple(groups)


@dataclass(frozen=True)
class Lease:
    """IPUs held by one model: the device id, its IPUs and who holds them."""

    device_id: int
    ipus: tuple
    holder: str


class DevicePool:
    """The emulated system's IPUs and which model holds each."""

    def __init__(self, num_ipus: int | None = None):
        self.num_ipus = system_size() if num_ipus is None else int(num_ipus)
        if not _is_power_of_two(self.num_ipus):
            raise ValueError(f"DevicePool: num_ipus must be a power of two, got {num_ipus!r}")
        self.devices = _listing(self.num_ipus)
        self._held: dict = {}  # lease id -> Lease
        self._ids = itertools.count()
        self._lock = threading.Lock()

    def has_device(self, num_ipus: int) -> bool:
        """Whether the system has a device of ``num_ipus`` IPUs (free or not)."""
        return any(len(d) == num_ipus for d in self.devices)

    def leases(self) -> list:
        """The leases held now, oldest first."""
        with self._lock:
            return list(self._held.values())

    def free_ipus(self) -> int:
        with self._lock:
            return self.num_ipus - sum(len(le.ipus) for le in self._held.values())

    def acquire(self, num_ipus: int, holder: str, device_id: int | None = None):
        """Take ``num_ipus`` IPUs for ``holder``: the first free device of that size, or
        the device ``device_id`` (``Options.useIpuId``). Returns ``(key, lease)``; give
        ``key`` to :meth:`release`.

        Raises:
          poptorch.Error: no such device is free (PopTorch's "Failed to acquire ..."
            followed by who holds the IPUs and how to free them)."""
        with self._lock:
            busy = {i for le in self._held.values() for i in le.ipus}
            if device_id is None:
                for index, ipus in enumerate(self.devices):
                    if len(ipus) == num_ipus and busy.isdisjoint(ipus):
                        return self._take(index, ipus, holder)
                raise Error(f"Failed to acquire {num_ipus} IPU(s)"
                            + self._explain(num_ipus, None, busy))
            if not 0 <= device_id < len(self.devices):
                raise Error(f"Failed to acquire device Id {device_id}\nNo device with Id "
                            f"{device_id} on the emulated {self.num_ipus}-IPU system "
                            f"(ids 0..{len(self.devices) - 1}, gc-info -l order: `ipu-gpu "
                            "info`): change Options.useIpuId")
            ipus = self.devices[device_id]
            if len(ipus) < num_ipus:
                raise Error(f"Expected at least replication factor * used IPUs = {num_ipus} "
                            f"device Ids but the user provided {len(ipus)}")
            if len(ipus) != num_ipus:
                logger.warning("Expected replication factor * used IPUs = %d device Ids but "
                               "the device selected has %d IPUs which means some of them "
                               "will not be used.", num_ipus, len(ipus))
            if not busy.isdisjoint(ipus):
                raise Error(f"Failed to acquire device Id {device_id}"
                            + self._explain(len(ipus), device_id, busy))
            return self._take(device_id, ipus, holder)

    def _take(self, device_id, ipus, holder):
        key = next(self._ids)
        lease = Lease(device_id, tuple(ipus), holder)
        self._held[key] = lease
        logger.debug("Acquired %d IPU(s): running on device Id %d.", len(ipus), device_id)
        return key, lease

    def _explain(self, num_ipus, device_id, busy) -> str:
        if device_id is None and not self.has_device(num_ipus):
            return (f"\nNo device found on the system with {num_ipus} IPUs: the "
                    f"configuration needs changing (the emulated system has {self.num_ipus} "
                    f"IPUs; set {POOL_ENV} or `ipu-gpu run --ipus`)")
        wanted = set(self.devices[device_id]) if device_id is not None else None
        holders = [le for le in self._held.values()
                   if wanted is None or not wanted.isdisjoint(le.ipus)]
        lines = [f"\nThe emulated system has {self.num_ipus} IPUs and {len(busy)} of them "
                 "are held by models attached to the device:"]
        lines += [f"  - {le.holder}: {len(le.ipus)} IPU(s) (device Id {le.device_id})"
                  for le in holders]
        lines.append("A model holds its IPUs from its compilation (or first run) until "
                     "detachFromDevice() or destroy(): call detachFromDevice() on a model "
                     "you are not running now (its next call attaches it again), or give "
                     f"the system more IPUs ({POOL_ENV} / `ipu-gpu run --ipus`).")
        return "\n".join(lines)

    def release(self, key) -> None:
        """Give back the IPUs of lease ``key`` (nothing if it was released already)."""
        with self._lock:
            lease = self._held.pop(key, None)
        if lease is not None:
            logger.debug("Released %d IPU(s) of device Id %d.", len(lease.ipus),
                         lease.device_id)


_POOL = None
_POOL_LOCK = threading.Lock()


def pool() -> DevicePool:
    """The process's device pool (sized from the environment at first use)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = DevicePool()
        return _POOL


def ipuHardwareIsAvailable(num_ipus: int = 1) -> bool:  # noqa: N802 - PopTorch's name
    """Whether the (emulated) system has a device of ``num_ipus`` IPUs. As PopTorch's, it
    does not check whether the IPUs are free."""
    return pool().has_device(num_ipus)


def ipuHardwareVersion() -> int:  # noqa: N802 - PopTorch's name
    """The IPU version of the system: 2 (the emulated IPUs are Mk2)."""
    return IPU_VERSION
