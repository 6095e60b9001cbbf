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
the last buffer written back into the buffer the next iteration reads.
"""

from __future__ import annotations

import contextlib
import threading

from . import tensor as _tensor

__all__ = ["CaptureRefused", "Recorder", "capturing", "recording", "refuse"]


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


_local = threading.local()
_active = [0]
_lock = threading.Lock()


def _note_variable_write(var) -> None:
    rec = getattr(_local, "recorder", None)
    if rec is not None and id(var) not in rec.writes:
        rec.writes[id(var)] = (var, var._value)


@contextlib.contextmanager
def recording(capturing: bool = False):
    """Record what the calling thread does inside the block (a ``Recorder``); with
    ``capturing`` the thread's stream is capturing and ``refuse`` raises."""
    rec = Recorder(capturing)
    previous = getattr(_local, "recorder", None)
    _local.recorder = rec
    with _lock:
        _active[0] += 1
        if _active[0] == 1:
            _tensor.set_write_hook(_note_variable_write)
    try:
        yield rec
    finally:
        _local.recorder = previous
        with _lock:
            _active[0] -= 1
            if _active[0] == 0:
                _tensor.set_write_hook(None)


def refuse(reason: str) -> None:
    """Say that what runs now cannot be replayed from a CUDA graph (see the module doc)."""
    rec = getattr(_local, "recorder", None)
    if rec is None:
        return
    rec.refusals.append(reason)
    if rec.capturing:
        raise CaptureRefused(reason)


def capturing() -> bool:
    """True while the calling thread's stream is capturing a CUDA graph."""
    rec = getattr(_local, "recorder", None)
    return rec is not None and rec.capturing
