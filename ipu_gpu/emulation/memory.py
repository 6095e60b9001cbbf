"""The memory model of the emulated IPUs: a ledger per IPU of the bytes of tensors resident
on it.

Later layers (feeds, replicas, variables, outfeeds) ``charge`` the ledger of the IPU a tensor
lives on and ``release`` it when the tensor goes away. A charge that would take an IPU past
its memory (tiles x bytes per tile, ``ipu_model.tiles_per_ipu`` scales it) raises
``GraphMemoryAllocationError``, named after Poplar's ``poplar::graph_memory_allocation_error``
(TensorFlow reports it as ResourceExhausted "Out of memory on tile ..."), unless the Poplar
engine option ``debug.allowOutOfMemory`` is ``"true"`` in
``IPUConfig.compilation_poplar_options`` or in ``POPLAR_ENGINE_OPTIONS`` (which overrides the
program's options, as in Poplar: ``engine_options.py``), as Poplar allows. The error carries a
``MemoryReport`` (what is resident, by label) and every registered report hook is called with
it before the error is raised, so a program can log or save where the bytes went.

The ledger counts whole tensors per IPU; it does not model tile placement, code, vertex state
or exchange buffers, so a program that fits here can still exceed a real IPU.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

__all__ = ["GraphMemoryAllocationError", "MemoryLedger", "MemoryReport", "add_report_hook",
           "remove_report_hook"]

_HOOKS: list = []
_HOOKS_LOCK = threading.Lock()


def _fmt(nbytes: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


@dataclass(frozen=True)
class MemoryReport:
    """A snapshot of one IPU's ledger: capacity, bytes used, and the resident bytes per label
    (largest first). ``requested``/``label`` describe the charge that failed, if any."""

    ipu_id: int
    capacity: int
    used: int
    by_label: tuple  # ((label, bytes, count), ...) largest first
    requested: int = 0
    label: str = ""
    device: str = ""

    def to_dict(self) -> dict:
        return {"ipu_id": self.ipu_id, "device": self.device, "capacity": self.capacity,
                "used": self.used, "requested": self.requested, "label": self.label,
                "by_label": [{"label": lab, "bytes": b, "tensors": n}
                             for lab, b, n in self.by_label]}

    def __str__(self) -> str:
        where = f" ({self.device})" if self.device else ""
        lines = [f"Memory report for IPU {self.ipu_id}{where}: {_fmt(self.used)} used of "
                 f"{_fmt(self.capacity)} ({self.used} of {self.capacity} bytes)"]
        for lab, b, n in self.by_label:
            lines.append(f"  {lab}: {_fmt(b)} in {n} tensor{'s' if n != 1 else ''}")
        if self.requested:
            lines.append(f"  requested: {_fmt(self.requested)} for {self.label!r}")
        return "\n".join(lines)


class GraphMemoryAllocationError(MemoryError):
    """An emulated IPU ran out of memory (Poplar's graph_memory_allocation_error)."""

    def __init__(self, message: str, report: MemoryReport):
        super().__init__(message)
        self.report = report


def add_report_hook(hook) -> None:
    """Call ``hook(report: MemoryReport)`` whenever an emulated IPU runs out of memory."""
    if not callable(hook):
        raise TypeError(f"add_report_hook: hook must be callable, got {hook!r}")
    with _HOOKS_LOCK:
        _HOOKS.append(hook)


def remove_report_hook(hook) -> None:
    """Stop calling ``hook`` (ValueError if it was not added)."""
    with _HOOKS_LOCK:
        try:
            _HOOKS.remove(hook)
        except ValueError:
            raise ValueError("remove_report_hook: hook was not added") from None


@dataclass
class MemoryLedger:
    """Bytes resident on one emulated IPU, by label; thread-safe."""

    ipu_id: int
    capacity: int
    allow_out_of_memory: bool = False
    device: str = ""
    _by_label: dict = field(default_factory=dict)  # label -> [bytes, count]
    _used: int = 0
    _peak: int = 0
    _window: int = 0  # the peak since the last take_window_peak (a run report's sample)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def used(self) -> int:
        return self._used

    @property
    def peak(self) -> int:
        return self._peak

    @property
    def free(self) -> int:
        return self.capacity - self._used

    def charge(self, nbytes: int, label: str = "tensor") -> None:
        """Account ``nbytes`` for a tensor labelled ``label`` on this IPU; raises
        GraphMemoryAllocationError when the IPU's memory would be exceeded."""
        self._charge(_check_bytes(nbytes, "charge"), label)

    def _charge(self, nbytes: int, label: str) -> None:
        """``charge`` of a checked, non-negative int (the per-tensor hook's path)."""
        with self._lock:
            used = self._used + nbytes
            if used > self.capacity and not self.allow_out_of_memory:
                report = self._report(nbytes, label)
            else:
                entry = self._by_label.get(label)
                if entry is None:
                    entry = self._by_label[label] = [0, 0]
                entry[0] += nbytes
                entry[1] += 1
                self._used = used
                if used > self._window:  # _window <= _peak: one compare when no new peak
                    self._window = used
                    if used > self._peak:
                        self._peak = used
                return
        _notify(report)
        where = f" ({self.device})" if self.device else ""
        raise GraphMemoryAllocationError(
            f"Out of memory on IPU {self.ipu_id}{where}: allocating {nbytes} bytes for "
            f"{label!r} needs {self._used + nbytes} bytes but the IPU has {self.capacity} "
            f"bytes ({report.used} in use). Spread the tensors over more IPUs "
            "(IPUConfig.auto_select_ipus / select_ipus, sharding or replication), use more "
            "tiles (IPUConfig.ipu_model.tiles_per_ipu), or set "
            "IPUConfig.compilation_poplar_options={'debug.allowOutOfMemory': 'true'}.\n"
            f"{report}", report)

    def release(self, nbytes: int, label: str = "tensor") -> None:
        """Give back ``nbytes`` charged under ``label`` (ValueError if more than charged)."""
        self._release(_check_bytes(nbytes, "release"), label)

    def _release(self, nbytes: int, label: str) -> None:
        """``release`` of a checked, non-negative int (the per-tensor hook's path)."""
        with self._lock:
            entry = self._by_label.get(label)
            if entry is None or entry[0] < nbytes:
                have = 0 if entry is None else entry[0]
                raise ValueError(f"release: {label!r} holds {have} bytes on IPU "
                                 f"{self.ipu_id}, cannot release {nbytes}")
            entry[0] -= nbytes
            if entry[1] > 1:  # a label holding bytes counts at least one tensor
                entry[1] -= 1
            if entry[0] == 0:
                del self._by_label[label]
            self._used -= nbytes

    def clear(self) -> None:
        with self._lock:
            self._by_label.clear()
            self._used = 0
            self._window = 0

    def take_window_peak(self) -> int:
        """The most bytes resident since the previous call (or since the ledger was made);
        the next window starts at the bytes resident now."""
        with self._lock:
            peak, self._window = self._window, self._used
            return peak

    def report(self) -> MemoryReport:
        with self._lock:
            return self._report(0, "")

    def _report(self, requested: int, label: str) -> MemoryReport:
        rows = sorted(((lab, b, n) for lab, (b, n) in self._by_label.items()),
                      key=lambda r: (-r[1], r[0]))
        return MemoryReport(self.ipu_id, self.capacity, self._used, tuple(rows), requested,
                            label, self.device)


def _check_bytes(nbytes, what: str) -> int:
    if isinstance(nbytes, bool) or not hasattr(nbytes, "__index__"):
        raise TypeError(f"{what}: nbytes must be an int, got {nbytes!r}")
    nbytes = int(nbytes)
    if nbytes < 0:
        raise ValueError(f"{what}: nbytes must be >= 0, got {nbytes}")
    return nbytes


def _notify(report: MemoryReport) -> None:
    with _HOOKS_LOCK:
        hooks = list(_HOOKS)
    for hook in hooks:
        hook(report)
