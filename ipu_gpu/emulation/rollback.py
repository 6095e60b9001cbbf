"""A program run that can be undone.

``ipu/program_shards.py`` starts a function's first run before it knows how many IPUs one
replica takes; when a pipeline inside finds that it needs more, that run stops and is undone
here, and the function runs again with the pipeline's shards, so the work before the
pipeline happens once, as on the IPU (where the function is compiled whole, then run).

Inside ``undoable(device)``, what the replicas of a program on ``device`` change is noted
before its first change and put back by ``Run.undo``:

* every Variable they write (through ``core/capture.py``'s ``observing``): its host value
  and its per-replica copies;
* every object that calls ``save(obj, undo_point)`` before changing: ``undo_point()`` returns
  an object whose ``undo()`` puts ``obj`` back and whose ``close()`` ends the noting (the
  infeed and outfeed queues, the device's seed executions).

Python side effects of the function are not undone.
"""

from __future__ import annotations

import contextlib
import threading

from ..core import capture
from . import context

__all__ = ["Run", "is_open", "save", "undoable"]

_open: tuple = ()  # the Runs open now (one per device running an undoable program)
_lock = threading.Lock()


class _VariablePoint:
    __slots__ = ("var", "host", "copies")

    def __init__(self, var):
        self.var = var
        self.host = var._host_value
        self.copies = dict(var._copies)

    def undo(self) -> None:
        var = self.var
        var._host_value = self.host
        var._copies.clear()
        var._copies.update(self.copies)

    def close(self) -> None:
        pass


class Run:
    """What the replicas of one program run on ``device`` changed (see the module doc)."""

    def __init__(self, device):
        self.device = device
        self._points: dict = {}  # id(obj) -> (obj, its undo point); obj kept alive here
        self._lock = threading.Lock()

    def _mine(self) -> bool:
        ctx = context.current()
        return ctx is not None and ctx.device is self.device

    def save(self, obj, undo_point) -> None:
        if id(obj) in self._points or not self._mine():
            return
        with self._lock:
            if id(obj) not in self._points:
                self._points[id(obj)] = (obj, undo_point())

    def _variable_written(self, var) -> None:
        if id(var) in self._points or not self._mine():
            return
        # a CUDA-graph replay writes into the buffer a variable held when the capture began:
        # a value first noted then would not be kept
        if capture.capturing():
            capture.refuse("the first write of a variable in a run that may be undone")
        self.save(var, lambda: _VariablePoint(var))

    def undo(self) -> None:
        """Put back everything noted, latest first."""
        points = list(self._points.values())
        self._points.clear()
        for _, point in reversed(points):
            point.undo()
            point.close()

    def close(self) -> None:
        for _, point in self._points.values():
            point.close()
        self._points.clear()


def save(obj, undo_point) -> None:
    """Called by ``obj`` before it changes: every open Run whose device runs the calling
    replica keeps ``undo_point()`` (once per run)."""
    for run in _open:
        run.save(obj, undo_point)


def is_open() -> bool:
    """Whether some undoable run is open (lets callers skip ``save``)."""
    return bool(_open)


@contextlib.contextmanager
def undoable(device):
    """A Run noting what programs run on ``device`` inside the block change; closed (what it
    noted kept as it is) at the end unless undone."""
    global _open
    run = Run(device)
    with _lock:
        _open = (*_open, run)
    try:
        with capture.observing(run._variable_written):
            yield run
    finally:
        with _lock:
            rest = list(_open)
            rest.remove(run)
            _open = tuple(rest)
        run.close()
