"""What a loop body did while it ran under a CUDA-graph recorder (see
``emulation/graph_replay.py``): the reasons it cannot be replayed from a graph, and the
variables it gave new buffers.

A replayed graph repeats the device work of one iteration and nothing else: no Python runs,
no host value is read, no host counter advances. Code whose effect a replay would lose calls
``refuse(reason)``: a host read of a device tensor, a random op (its Philox counter advances
on the host), an outfeed enqueue, a cross-replica collective (replicas meet on the host). On
a thread with no recorder ``refuse`` does nothing, so the eager paths pay one attribute read.
While the stream is capturing, ``refuse`` raises ``CaptureRefused`` and the capture is
abandoned; otherwise the reason is noted and the loop decides not to capture.

``Variable`` reports every buffer swap (``note_variable_write``) so that the graph can copy
the last buffer written back into the buffer the next iteration reads. ``observing`` passes
every swap, on any thread, to an observer as well (``emulation/rollback.py``).
"""

from __future__ import annotations

import contextlib
import threading

from . import tensor as _tensor

__all__ = ["CaptureRefused", "Recorder", "capturing", "observing", "recording", "refuse"]


class CaptureRefused(RuntimeError):
    """Raised inside a capture by code that a replayed CUDA graph cannot reproduce."""


class Recorder:
    """What one recorded iteration did: ``refusals`` (reasons, in order) and ``writes``
    (``id(variable) -> (variable, the buffer it held when recording started)``)."""

    def __init__(self, capturing: bool):
        self.capturing = capturing
        self.refusals: list[str] = []
        self.writes: dict = {}

    def restore_variables(self) -> None:
        """Give every variable written while recording its buffer from before."""
        for var, before in self.writes.values():
            var._value = before


class _Local(threading.local):
    recorder = None  # a class default: a thread without a recorder reads it without a miss


_local = _Local()
_active = [0]  # recorders and observers installed: the write hook is set while > 0
_lock = threading.Lock()
_observers: tuple = ()


def _note_variable_write(var) -> None:
    rec = _local.recorder
    if rec is not None and id(var) not in rec.writes:
        rec.writes[id(var)] = (var, var._value)
    for observer in _observers:
        observer(var)


def _hold_hook(delta: int) -> None:
    with _lock:
        before = _active[0]
        _active[0] += delta
        if before == 0:
            _tensor.set_write_hook(_note_variable_write)
        elif _active[0] == 0:
            _tensor.set_write_hook(None)


@contextlib.contextmanager
def observing(observer):
    """Call ``observer(variable)`` before every Variable buffer swap, on every thread, while
    the block runs."""
    global _observers
    with _lock:
        _observers = (*_observers, observer)
    _hold_hook(1)
    try:
        yield
    finally:
        _hold_hook(-1)
        with _lock:
            rest = list(_observers)
            rest.remove(observer)
            _observers = tuple(rest)


@contextlib.contextmanager
def recording(capturing: bool = False):
    """Record what the calling thread does inside the block (a ``Recorder``); with
    ``capturing`` the thread's stream is capturing and ``refuse`` raises."""
    rec = Recorder(capturing)
    previous = _local.recorder
    _local.recorder = rec
    _hold_hook(1)
    try:
        yield rec
    finally:
        _local.recorder = previous
        _hold_hook(-1)


def refuse(reason: str) -> None:
    """Say that what runs now cannot be replayed from a CUDA graph (see the module doc)."""
    rec = _local.recorder
    if rec is None:
        return
    rec.refusals.append(reason)
    if rec.capturing:
        raise CaptureRefused(reason)


def capturing() -> bool:
    """True while the calling thread's stream is capturing a CUDA graph."""
    rec = _local.recorder
    return rec is not None and rec.capturing
