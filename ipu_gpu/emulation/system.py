"""The configured emulated IPU system: ``configure(config)`` builds it from an IPUConfig,
``reset()`` tears it down, ``current_system()`` hands it to later layers.

A System has TF devices ``/device:IPU:0..`` (one per entry of ``auto_select_ipus`` or
``select_ipus``; neither set gives one device with one IPU, as the SDK does), each holding the
IPUs of one configuration of the ``gc-info -l`` listing (``topology``). Every IPU has:

* a version: ``device_connection.version`` when set, else ``ipu_model.version`` (the
  emulator is an IPU model, so the ``ipu_model`` options always apply; an empty version
  warns and means "ipu2", as the SDK's model does);
* tiles: ``ipu_model.tiles_per_ipu`` when > 0, else ``--ipu_model_tiles=N`` from
  ``TF_POPLAR_FLAGS`` together with ``--use_ipu_model`` (the SDK's rule), else the version's
  count (ipu1 1216, ipu2/ipu21 1472), and memory = tiles x bytes per tile (256 KiB / 624 KiB);
* a ``MemoryLedger`` (``memory``) that raises when tensors charged to it exceed that memory,
  unless ``compilation_poplar_options['debug.allowOutOfMemory'] == 'true'``;
* an executor: with the GPU backend a ``GpuExecutor`` (its own CUDA stream on one GPU; the
  configured IPUs, taken device by device in DNC order, are dealt round-robin over the GPUs,
  so several IPUs share a GPU when there are fewer GPUs), else a ``CpuExecutor``. Both run
  submitted work on one worker thread per IPU, started on first use.

``Device.replica_shards(num_shards, pipelined)`` tells which IPU runs each (replica, shard):
replica r owns the device's IPUs [r*S, (r+1)*S) and ``selection_order`` maps shards onto them
(``topology.shard_order``; AUTO = SNAKE for pipelined models, else ZIGZAG, as the SDK).

All state changes hold one lock; ``reset()`` waits for submitted work to finish.
"""

from __future__ import annotations

import concurrent.futures
import copy
import re
import sys
import threading
import warnings
from dataclasses import dataclass, field

from . import engine_options, memory, poplar_flags, topology

__all__ = ["Device", "IPU", "System", "configure", "current_config", "current_system",
           "is_configured", "reset", "running_on_ipu_model"]

_LOCK = threading.RLock()
_SYSTEM = None  # the configured System, or None

_NOT_CONFIGURED = (
    "No IPU devices configured. Configure the emulated IPU system first: "
    "config = ipu.config.IPUConfig(); config.auto_select_ipus = 1 (or select_ipus); "
    "config.configure_ipu_system()")

_DEVICE_RE = re.compile(
    r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?(?P<type>[A-Za-z_]+):"
    r"(?P<index>\d+)$")

_tls = threading.local()


# --------------------------------------------------------------------------------------------
# Executors: where an emulated IPU's work physically runs.


class CpuExecutor:
    """One worker thread for one emulated IPU (started on first ``submit``)."""

    kind = "cpu"

    def __init__(self, ipu_id: int):
        self.ipu_id = ipu_id
        self._pool = None
        self._lock = threading.Lock()

    def _get_pool(self):
        with self._lock:
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"ipu_gpu-IPU{self.ipu_id}",
                    initializer=_set_current_ipu, initargs=(self.ipu_id,))
            return self._pool

    def _wrap(self, fn, args, kwargs):
        return fn(*args, **kwargs)

    def submit(self, fn, *args, **kwargs) -> concurrent.futures.Future:
        """Run ``fn(*args, **kwargs)`` on this IPU's worker thread."""
        return self._get_pool().submit(self._wrap, fn, args, kwargs)

    def synchronize(self) -> None:
        """Wait until the work submitted so far has finished."""
        if self._pool is not None:
            self.submit(lambda: None).result()

    def shutdown(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    def describe(self) -> str:
        return "CPU worker thread"


class GpuExecutor(CpuExecutor):
    """A worker thread whose work runs on GPU ``gpu`` in this IPU's own CUDA stream."""

    kind = "gpu"

    def __init__(self, ipu_id: int, gpu: int):
        super().__init__(ipu_id)
        self.gpu = gpu
        self._stream = None

    @property
    def stream(self):
        """This IPU's CUDA stream (a ``cupy.cuda.Stream``, created on first use)."""
        if self._stream is None:
            cupy = sys.modules.get("cupy") or __import__("cupy")
            with cupy.cuda.Device(self.gpu):
                self._stream = cupy.cuda.Stream(non_blocking=True)
        return self._stream

    def _wrap(self, fn, args, kwargs):
        cupy = sys.modules["cupy"]
        stream = self.stream
        with cupy.cuda.Device(self.gpu), stream:
            return fn(*args, **kwargs)

    def synchronize(self) -> None:
        super().synchronize()
        if self._stream is not None:
            self._stream.synchronize()

    def describe(self) -> str:
        return f"GPU {self.gpu}, own CUDA stream"


def _set_current_ipu(ipu_id: int) -> None:
    _tls.ipu_id = ipu_id


def current_ipu_id() -> int | None:
    """The id of the emulated IPU whose worker thread is running, else None."""
    return getattr(_tls, "ipu_id", None)


# --------------------------------------------------------------------------------------------
# The system.


@dataclass(eq=False)
class IPU:
    """One emulated physical IPU (PCIe id ``id`` of the listing)."""

    id: int
    version: str
    tiles: int
    bytes_per_tile: int
    pci_domain: str
    executor: CpuExecutor
    memory: memory.MemoryLedger

    @property
    def memory_bytes(self) -> int:
        return self.tiles * self.bytes_per_tile

    def to_dict(self) -> dict:
        return {"id": self.id, "version": self.version, "tiles": self.tiles,
                "bytes_per_tile": self.bytes_per_tile, "memory_bytes": self.memory_bytes,
                "pci_domain": self.pci_domain, "executor": self.executor.describe(),
                "memory_used": self.memory.used}


@dataclass(eq=False)
class Device:
    """A TensorFlow device ``/device:IPU:<index>`` and the IPUs of its configuration."""

    index: int
    configuration: topology.Configuration
    ipus: tuple  # IPU objects in DNC order
    selection_order: str
    seed: int | None = None
    identical_replicas: bool = False
    seed_generation: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return f"/device:IPU:{self.index}"

    @property
    def num_ipus(self) -> int:
        return len(self.ipus)

    def replica_shards(self, num_shards: int = 1, pipelined: bool = False) -> list:
        """``[replica][shard] -> IPU`` for a program of ``num_shards`` shards; the replication
        factor is ``num_ipus // num_shards``."""
        if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
            raise ValueError(f"replica_shards: num_shards must be a positive int, got "
                             f"{num_shards!r}")
        if self.num_ipus % num_shards:
            raise ValueError(
                f"{self.name} has {self.num_ipus} IPUs, which cannot be split into replicas "
                f"of {num_shards} shards; choose a device size that is a multiple of the "
                "number of shards (IPUConfig.auto_select_ipus / select_ipus)")
        order = topology.shard_order(self.selection_order, num_shards, pipelined)
        return [[self.ipus[r * num_shards + p] for p in order]
                for r in range(self.num_ipus // num_shards)]

    def set_seed(self, seed: int, identical_replicas: bool = False) -> None:
        with self._lock:
            self.seed = seed
            self.identical_replicas = bool(identical_replicas)
            self.seed_generation += 1

    def to_dict(self) -> dict:
        return {"name": self.name, "configuration": self.configuration.id,
                "type": self.configuration.type, "selection_order": self.selection_order,
                "ipus": [ipu.to_dict() for ipu in self.ipus]}


@dataclass(eq=False)
class System:
    """The configured emulated system (see the module docstring)."""

    devices: tuple
    config: object  # a private copy of the IPUConfig it was built from
    host_device: str
    backend: str  # 'cpu' or 'gpu'
    version: str
    tiles_per_ipu: int
    bytes_per_tile: int
    allow_out_of_memory: bool

    @property
    def ipus(self) -> list:
        return [ipu for d in self.devices for ipu in d.ipus]

    @property
    def num_ipus(self) -> int:
        return sum(d.num_ipus for d in self.devices)

    def device(self, device) -> Device:
        """The Device for an index or a device name such as '/device:IPU:1'."""
        index = parse_device(device) if isinstance(device, str) else device
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"device must be an int or a '/device:IPU:N' name, got {device!r}")
        if not 0 <= index < len(self.devices):
            raise ValueError(
                f"/device:IPU:{index} does not exist: the configured system has "
                f"{len(self.devices)} IPU device{'s' if len(self.devices) != 1 else ''} "
                f"(/device:IPU:0..{len(self.devices) - 1}); configure more with "
                "IPUConfig.auto_select_ipus or IPUConfig.select_ipus")
        return self.devices[index]

    def to_dict(self) -> dict:
        return {"backend": self.backend, "host_device": self.host_device,
                "version": self.version, "tiles_per_ipu": self.tiles_per_ipu,
                "bytes_per_tile": self.bytes_per_tile,
                "devices": [d.to_dict() for d in self.devices]}

    def shutdown(self) -> None:
        for ipu in self.ipus:
            ipu.executor.shutdown()
            ipu.memory.clear()


def parse_device(name: str) -> int:
    """The index N of an IPU device name ('/device:IPU:N', '/job:localhost/replica:0/task:0/
    device:IPU:N', 'IPU:N'); ValueError for anything else."""
    if not isinstance(name, str):
        raise TypeError(f"device must be a str such as '/device:IPU:0', got {name!r}")
    m = _DEVICE_RE.match(name.strip())
    if m is None or m.group("type").upper() != "IPU":
        raise ValueError(f"device must be an IPU device name such as '/device:IPU:0', got "
                         f"{name!r}")
    return int(m.group("index"))


# --------------------------------------------------------------------------------------------
# Building and tearing down.


def running_on_ipu_model() -> bool:
    """``--use_ipu_model`` appears in ``TF_POPLAR_FLAGS`` (the SDK's substring test)."""
    import os

    return "--use_ipu_model" in os.environ.get(poplar_flags.ENV, "")


def _gpu_count() -> int:
    from ..core import backend

    if backend.backend_name() != "gpu":
        return 0
    cupy = sys.modules.get("cupy") or backend.cupy_if_gpu()
    return int(cupy.cuda.runtime.getDeviceCount()) if cupy is not None else 0


def _version_and_tiles(config) -> tuple:
    version = config.device_connection.version or config.ipu_model.version
    if version == "":
        warnings.warn("ipu_model.version is empty: the emulated IPUs are ipu2",
                      UserWarning, stacklevel=4)
        version = "ipu2"
    if version not in topology.VERSIONS:
        attr = ("device_connection.version" if config.device_connection.version
                else "ipu_model.version")
        raise ValueError(f"IPUConfig.{attr} must be one of {sorted(topology.VERSIONS)}, "
                         f"got {version!r}")
    tiles = config.ipu_model.tiles_per_ipu
    if tiles < 0:
        raise ValueError(f"IPUConfig.ipu_model.tiles_per_ipu must be >= 0 (0 = the "
                         f"version's default), got {tiles}")
    if tiles == 0:
        flags = poplar_flags.parse()
        if flags.use_ipu_model and flags.ipu_model_tiles > 0:
            tiles = flags.ipu_model_tiles
    return topology.version_info(version, tiles)


def _build(config, host_device: str) -> System:
    info = _version_and_tiles(config)
    num_io = config.io_tiles.num_io_tiles
    if not 0 <= num_io < info["tiles"]:
        raise ValueError(f"IPUConfig.io_tiles.num_io_tiles must be in [0, {info['tiles']}) "
                         f"(the tiles of one IPU), got {num_io}")
    if config.select_ipus not in ([], ()):
        configs = topology.select(config.select_ipus)
    elif config.auto_select_ipus not in ([], ()):
        configs = topology.auto_select(config.auto_select_ipus)
    else:
        configs = topology.auto_select([1])  # the SDK's default: one device, one IPU
    options = config.compilation_poplar_options
    allow_oom = str(options.get("debug.allowOutOfMemory", "false")).lower() == "true"
    order = config.selection_order.name
    n_gpus = _gpu_count()
    devices, k = [], 0
    for index, cfg in enumerate(configs):
        ipus = []
        for pcie in cfg.ipus:
            executor = GpuExecutor(pcie, k % n_gpus) if n_gpus else CpuExecutor(pcie)
            ledger = memory.MemoryLedger(pcie, info["memory_bytes"], allow_oom,
                                         f"/device:IPU:{index}")
            ipus.append(IPU(pcie, info["version"], info["tiles"], info["bytes_per_tile"],
                            topology.PCI_DOMAINS[pcie], executor, ledger))
            k += 1
        devices.append(Device(index, cfg, tuple(ipus), order))
    return System(tuple(devices), copy.deepcopy(config), host_device,
                  "gpu" if n_gpus else "cpu", info["version"], info["tiles"],
                  info["bytes_per_tile"], allow_oom)


def configure(config, device: str = "cpu", reset_configuration: bool = True) -> System:
    """Build the emulated system described by ``config`` (an IPUConfig) and make it current.

    With ``reset_configuration=True`` the current system is reset first (so a config that
    fails leaves no system, as in the SDK). With ``reset_configuration=False`` an already
    configured system stays as it is when the new config is the same, and a different one
    raises RuntimeError (the SDK: "IPU system configuration can only be set once.").
    """
    global _SYSTEM
    if not isinstance(device, str):
        raise TypeError(f"configure_ipu_system: device must be a str, got {device!r}")
    with _LOCK:
        if _SYSTEM is not None and not reset_configuration:
            if _SYSTEM.config.to_dict() == config.to_dict():
                return _SYSTEM
            raise RuntimeError("IPU system configuration can only be set once. Pass "
                               "reset_configuration=True (the default) to configure_ipu_system "
                               "or call reset_ipu_configuration() first.")
        if _SYSTEM is not None:  # the SDK resets first: a config that fails leaves none
            old, _SYSTEM = _SYSTEM, None
            old.shutdown()
        # POPLAR_ENGINE_OPTIONS / POPLAR_TARGET_OPTIONS: kept on the system, some honoured
        _SYSTEM = engine_options.apply(_build(config, device))
        for index, (seed, identical) in _DEFERRED_SEEDS.items():
            if index < len(_SYSTEM.devices):
                _SYSTEM.devices[index].set_seed(seed, identical)
        _DEFERRED_SEEDS.clear()
        return _SYSTEM


# reset_ipu_seed before any system is configured: applied by the next configure (the SDK's
# device executor exists before configuration and keeps the seed)
_DEFERRED_SEEDS: dict = {}


def defer_seed(index: int, seed: int, identical_replicas: bool) -> None:
    """Seed device ``index`` of the next configured system."""
    with _LOCK:
        _DEFERRED_SEEDS[int(index)] = (int(seed), bool(identical_replicas))


def reset() -> None:
    """Forget the configured system, after the work submitted to its IPUs has finished."""
    global _SYSTEM
    if current_ipu_id() is not None:
        raise RuntimeError("reset_ipu_configuration() cannot be called from work running on "
                           "an emulated IPU (it waits for that work to finish)")
    with _LOCK:
        system, _SYSTEM = _SYSTEM, None
        _DEFERRED_SEEDS.clear()
    if system is not None:
        system.shutdown()


def is_configured() -> bool:
    return _SYSTEM is not None


def current_system() -> System:
    """The configured System; RuntimeError naming what to configure when there is none."""
    system = _SYSTEM
    if system is None:
        raise RuntimeError(_NOT_CONFIGURED)
    return system


def current_config() -> list:
    """One copy of the applied IPUConfig per configured device (``get_ipu_config``)."""
    system = current_system()
    return [copy.deepcopy(system.config) for _ in system.devices]
