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

The tensors a program makes are charged per tensor (``TensorCharges``, the engine's allocation
hook): a death only queues the tensor (a weak reference's callback, in any thread, with no
lock) and the ledger releases what is queued before it is next charged or read, so what it
reports is as if each tensor were released when it died.

The ledger counts whole tensors per IPU; it does not model tile placement, code, vertex state
or exchange buffers, so a program that fits here can still exceed a real IPU.
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from dataclasses import dataclass, field

__all__ = ["GraphMemoryAllocationError", "MemoryLedger", "MemoryReport", "TensorCharges",
           "add_report_hook", "remove_report_hook"]

TENSORS = "tensors"  # the label of the tensors a program makes (TensorCharges)

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
    # the weak references of charged tensors that died, not yet released: their callback
    # only appends here (any thread, no lock); whatever reads or charges the ledger first
    # releases them, so every reading sees them released and peaks are as if at once
    _dead: deque = field(default_factory=deque, repr=False)
    _epoch: int = field(default=0, repr=False)  # clear() starts a new one: TensorCharges
    # of an older epoch release nothing

    @property
    def used(self) -> int:
        if self._dead:
            with self._lock:
                self._drain()
        return self._used

    @property
    def peak(self) -> int:
        return self._peak

    @property
    def free(self) -> int:
        return self.capacity - self.used

    def charge(self, nbytes: int, label: str = "tensor") -> None:
        """Account ``nbytes`` for a tensor labelled ``label`` on this IPU; raises
        GraphMemoryAllocationError when the IPU's memory would be exceeded."""
        self._charge(_check_bytes(nbytes, "charge"), label)

    def _charge(self, nbytes: int, label: str) -> None:
        """``charge`` of a checked, non-negative int."""
        with self._lock:
            if self._dead:
                self._drain()
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
        self._refuse(nbytes, label, report)

    def _refuse(self, nbytes: int, label: str, report: MemoryReport) -> None:
        """Raise the out-of-memory error of a charge that did not fit."""
        _notify(report)
        where = f" ({self.device})" if self.device else ""
        raise GraphMemoryAllocationError(
            f"Out of memory on IPU {self.ipu_id}{where}: allocating {nbytes} bytes for "
            f"{label!r} needs {report.used + nbytes} bytes but the IPU has {self.capacity} "
            f"bytes ({report.used} in use). Spread the tensors over more IPUs "
            "(IPUConfig.auto_select_ipus / select_ipus, sharding or replication), use more "
            "tiles (IPUConfig.ipu_model.tiles_per_ipu), or set "
            "IPUConfig.compilation_poplar_options={'debug.allowOutOfMemory': 'true'}.\n"
            f"{report}", report)

    def release(self, nbytes: int, label: str = "tensor") -> None:
        """Give back ``nbytes`` charged under ``label`` (ValueError if more than charged)."""
        self._release(_check_bytes(nbytes, "release"), label)

    def _release(self, nbytes: int, label: str) -> None:
        """``release`` of a checked, non-negative int."""
        with self._lock:
            if self._dead:
                self._drain()
            self._take(nbytes, 1, label)

    def _take(self, nbytes: int, count: int, label: str) -> None:
        """Give back ``count`` tensors of ``nbytes`` in all (the lock is held)."""
        entry = self._by_label.get(label)
        if entry is None or entry[0] < nbytes:
            have = 0 if entry is None else entry[0]
            raise ValueError(f"release: {label!r} holds {have} bytes on IPU "
                             f"{self.ipu_id}, cannot release {nbytes}")
        entry[0] -= nbytes
        count = entry[1] - count
        entry[1] = count if count > 1 else 1  # a label holding bytes counts at least one
        if entry[0] == 0:
            del self._by_label[label]
        self._used -= nbytes

    def _drain(self) -> None:
        """Release the charged tensors that died since (the lock is held): in one step, as
        nothing reads the ledger in between."""
        dead, epoch = self._dead, self._epoch
        total = count = 0
        while dead:
            ref = dead.popleft()
            charges = ref.charges
            if charges.refs.pop(id(ref), None) is not None and charges.epoch == epoch:
                total += ref.nbytes
                count += 1
        if count:
            self._take(total, count, TENSORS)

    def _close(self, charges: TensorCharges) -> None:
        with self._lock:
            if self._dead:
                self._drain()
            refs, charges.refs = charges.refs, {}  # the references die: no callbacks
            if refs and charges.epoch == self._epoch:  # the survivors, in one step
                self._take(sum(ref.nbytes for ref in refs.values()), len(refs), TENSORS)

    def clear(self) -> None:
        with self._lock:
            self._by_label.clear()
            self._dead.clear()
            self._epoch += 1
            self._used = 0
            self._window = 0

    def take_window_peak(self) -> int:
        """The most bytes resident since the previous call (or since the ledger was made);
        the next window starts at the bytes resident now."""
        with self._lock:
            if self._dead:
                self._drain()
            peak, self._window = self._window, self._used
            return peak

    def report(self) -> MemoryReport:
        with self._lock:
            if self._dead:
                self._drain()
            return self._report(0, "")

    def _report(self, requested: int, label: str) -> MemoryReport:
        rows = sorted(((lab, b, n) for lab, (b, n) in self._by_label.items()),
                      key=lambda r: (-r[1], r[0]))
        return MemoryReport(self.ipu_id, self.capacity, self._used, tuple(rows), requested,
                            label, self.device)


class _Charge(weakref.ref):
    """A weak reference to a charged tensor; its callback (the ledger's dead queue's
    ``append``) queues it for release."""

    __slots__ = ("nbytes", "charges")


class TensorCharges:
    """The tensors one program makes on one IPU: each is charged to the IPU's ledger under
    ``"tensors"`` from ``charge`` until it dies or ``close`` (the program ended), whichever
    comes first; ``close`` releases the survivors in one step. Thread-safe: ``charge`` and
    ``close`` take the ledger's lock, a death (in any thread) only queues the tensor."""

    __slots__ = ("ledger", "refs", "epoch", "_died")

    def __init__(self, ledger: MemoryLedger):
        self.ledger = ledger
        self.refs = {}  # id(reference) -> the _Charge of each live charged tensor
        self.epoch = ledger._epoch
        self._died = ledger._dead.append

    def charge(self, t, nbytes: int) -> None:
        """Charge ``t`` (``nbytes`` > 0, an int) while it lives; raises
        GraphMemoryAllocationError when the IPU is full."""
        ledger = self.ledger
        lock = ledger._lock
        lock.acquire()  # MemoryLedger._charge inlined (the per-tensor path; cheaper than with)
        try:
            if ledger._dead:
                ledger._drain()
            if self.epoch != ledger._epoch:  # the ledger was cleared: forget the older
                self.refs = {}
                self.epoch = ledger._epoch
            used = ledger._used + nbytes
            fits = used <= ledger.capacity or ledger.allow_out_of_memory
            if not fits:
                report = ledger._report(nbytes, TENSORS)
            else:
                entry = ledger._by_label.get(TENSORS)
                if entry is None:
                    entry = ledger._by_label[TENSORS] = [0, 0]
                entry[0] += nbytes
                entry[1] += 1
                ledger._used = used
                if used > ledger._window:
                    ledger._window = used
                    if used > ledger._peak:
                        ledger._peak = used
        finally:
            lock.release()
        if not fits:
            ledger._refuse(nbytes, TENSORS, report)
        ref = _Charge(t, self._died)
        ref.nbytes = nbytes
        ref.charges = self
        self.refs[id(ref)] = ref

    def close(self) -> None:
        """The program ended: release every tensor still charged."""
        self.ledger._close(self)


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
