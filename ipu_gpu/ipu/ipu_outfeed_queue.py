"""``tensorflow.python.ipu.ipu_outfeed_queue``: return values from programs on the emulated
IPUs to the host.

``enqueue`` (called inside a program, once per loop iteration typically) stores a tensor, a
tuple/list or a dict of tensors for the replica running it (``ipu_gpu.emulation.context``;
host code counts as replica 0 of 1). The values stay on the device (numpy on the CPU backend,
cupy on the GPU) until ``dequeue`` or iteration hands them to the host, stacked as the SDK
documents, for an enqueued tensor of shape S, n enqueues and replication factor R:

* ``IPUOutfeedMode.ALL``: ``[n] + S`` when R == 1, ``[n, R] + S`` when R > 1;
* ``IPUOutfeedMode.LAST``: only the last enqueue, ``S`` when R == 1, ``[R] + S`` when R > 1.

The structure of the first enqueue (single tensor, tuple, list, dict) is kept: later
enqueues must match it, with the same shapes and dtypes, and ``dequeue`` returns the same
structure of Tensors. A dequeue takes the elements it returns off the queue; with ALL, n is
the number of enqueues every replica has made (a replica that is ahead keeps its extra
elements for the next dequeue).

Under ``TF_POPLAR_FLAGS=--use_synthetic_data`` (or ``--synthetic_data_categories=outfeed``) no
data comes back to the host: ALL returns empty arrays ([0] + S or [0, R] + S) with the
enqueued structure, LAST raises ``ipu_gpu.errors.OutOfRangeError`` (there is no last element).

Decisions the SDK leaves open: dequeueing before anything was ever enqueued raises
ValueError (the structure is unknown); LAST with nothing enqueued since the last dequeue
raises OutOfRangeError; ALL with nothing new returns n = 0 arrays. ``buffer_depth`` and
``optimise_latency`` are validated and kept, with no effect on results.
"""

from __future__ import annotations

import enum
import sys as _sys
import threading

import numpy as np

from ..core import backend as _backend
from ..core import capture as _capture
from ..core import nest as _nest
from ..core.tensor import Tensor, wrap
from ..emulation import context as _context
from ..emulation import observe as _observe
from ..emulation import poplar_flags as _poplar_flags
from ..emulation import rollback as _rollback
from ..errors import OutOfRangeError
from . import feed_arguments
from .ipu_infeed_queue import FeedOperation

__all__ = ["IPUOutfeedMode", "IPUOutfeedQueue"]

_ids = iter(range(1 << 62))


class IPUOutfeedMode(enum.Enum):
    """Types used to control the IPUOutfeedQueue modes.

    * ALL - When used with an IPUOutfeedQueue, all the elements which were enqueued to the
      queue will be returned by the outfeed.
    * LAST - When used with an IPUOutfeedQueue, only the last element which was enqueued to
      the queue will be returned by the outfeed.
    """

    ALL = "all"
    LAST = "get_last"


def _synthetic() -> bool:
    return _poplar_flags.parse().use_synthetic_data_for("outfeed")


def _leaf_array(leaf, index: int):
    if isinstance(leaf, Tensor):
        a = leaf._value  # immutable: no copy needed
    elif isinstance(leaf, np.ndarray) or _backend.is_cupy_array(leaf):
        a = leaf.copy()  # the caller may change it later
    else:
        from ..core.convert import to_array

        try:
            a = to_array(leaf, arg=f"tensors[{index}]", op="IPUOutfeedQueue.enqueue")
        except (TypeError, ValueError) as e:
            raise TypeError(f"IPUOutfeedQueue.enqueue: tensors must be a tensor, a tuple/list "
                            f"or a dict of tensors, got a {type(leaf).__name__} on index "
                            f"{index}") from e
    if a.dtype.kind in "OSU":  # a string tensor: no IPU data stream carries strings
        raise TypeError(f"Unsupported datatype string on index {index} of feed operation")
    return a


class IPUOutfeedQueue:
    """Generates and adds outfeed enqueue/dequeue operations.

    An outfeed is the counterpart to an infeed and manages the transfer of data (like
    tensors, tuples or dictionaries of tensors) from the IPU to the host. In outfeed ALL
    mode every element that is enqueued is stored for a subsequent dequeue; in outfeed LAST
    mode only the last enqueued element is stored. See the module docstring for the shapes.

    Args:
      outfeed_mode: an ``IPUOutfeedMode`` (default ``ALL``).
      device_ordinal: ordinal of the IPU device on which this queue will be used (default:
        the current IPUStrategy's, else 0).
      buffer_depth: the depth of the device-side buffer (> 0; default 3).
      optimise_latency: accepted for compatibility; no effect in the emulator.
      **kwargs: the deprecated ``feed_name``, ``replication_factor`` and ``io_batch_size``
        (warned about and ignored; SDK 3.x rejects them, see ``feed_arguments``).

    Raises:
      ValueError: if the types or values are incorrect.
    """

    def __init__(self, outfeed_mode=None, device_ordinal=None, buffer_depth=3,
                 optimise_latency=False, **kwargs):
        feed_arguments.outfeed_kwargs(kwargs)
        self._outfeed_mode = feed_arguments.outfeed_mode(outfeed_mode)
        self._device_ordinal = feed_arguments.device_ordinal(device_ordinal)
        self._buffer_depth = feed_arguments.buffer_depth(buffer_depth)
        self._optimise_latency = bool(optimise_latency)
        self._name = f"outfeed_{next(_ids)}"
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._known = False  # whether the first enqueue has fixed the structure
        self._structure = None  # the first enqueue's structure, None leaves
        self._shapes: list = []
        self._dtypes: list = []
        self._replication = None
        self._per_replica: list = []  # [replica] -> list of flat elements
        self._enqueued = False

    # ---- properties --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def outfeed_mode(self) -> IPUOutfeedMode:
        return self._outfeed_mode

    @property
    def enqueued(self) -> bool:
        """Whether ``enqueue`` has been called (since the queue was made or deleted)."""
        return self._enqueued

    @property
    def deleter(self) -> FeedOperation:
        """Drops every stored element and the recorded structure (the operation has run);
        the queue can then be used as a new one."""
        with self._lock:
            self._clear()
        return FeedOperation(self._name, "IPUDeleteOutfeed")

    # ---- enqueue -----------------------------------------------------------------------------
    def enqueue(self, tensors) -> FeedOperation:
        """Enqueue a tensor, tuple or a dictionary of tensors for being outfed from the IPU.

        Returns an operation (already run); return it from the loop body after the tensors,
        as with the SDK.
        """
        graph = _sys.modules.get("ipu_gpu.graph")
        if graph is not None and graph.program.is_symbolic(_nest.flatten(tensors)):
            return self._traced_enqueue(graph, tensors)
        _capture.refuse("an outfeed enqueue (the host keeps every enqueued value)")
        ctx = _context.current()
        n_rep, r = (1, 0) if ctx is None else (int(ctx.replication_factor),
                                               int(ctx.replica_index))
        leaves = _nest.flatten(tensors)
        if not leaves:
            raise ValueError("IPUOutfeedQueue.enqueue: tensors must hold at least one tensor, "
                             f"got {tensors!r}")
        flat = [_leaf_array(leaf, i) for i, leaf in enumerate(leaves)]
        structure = _nest.pack_sequence_as(tensors, [None] * len(flat))
        synthetic = _synthetic()
        with self._lock:
            if _rollback.is_open():
                _rollback.save(self, self._undo_point)
            if not self._known:
                self._known = True
                self._structure = structure
                self._shapes = [tuple(a.shape) for a in flat]
                self._dtypes = [a.dtype for a in flat]
            else:
                self._check_same(structure, flat)
            if self._replication != n_rep:
                if any(self._per_replica):
                    raise ValueError(
                        f"IPUOutfeedQueue.enqueue: the queue holds elements of a program with "
                        f"replication factor {self._replication}; dequeue them before a "
                        f"program with replication factor {n_rep} enqueues")
                self._replication = n_rep
                self._per_replica = [[] for _ in range(n_rep)]
            self._enqueued = True
            if not synthetic:
                stored = self._per_replica[r]
                if self._outfeed_mode is IPUOutfeedMode.LAST:
                    stored.clear()
                stored.append(flat)
        return FeedOperation(self._name, "IPUOutfeedEnqueue")

    def _undo_point(self) -> _OutfeedPoint:
        return _OutfeedPoint(self)

    def _check_same(self, structure, flat) -> None:
        if not _same_structure(structure, self._structure):
            raise ValueError(f"IPUOutfeedQueue.enqueue: tensors must have the structure of the "
                             f"first enqueue, {self._structure!r}, got {structure!r}")
        for i, (a, s, d) in enumerate(zip(flat, self._shapes, self._dtypes)):
            if tuple(a.shape) != s:
                raise ValueError(f"IPUOutfeedQueue.enqueue: tensor {i} must have shape "
                                 f"{list(s)} (as in the first enqueue), got {list(a.shape)}")
            if a.dtype != d:
                raise TypeError(f"IPUOutfeedQueue.enqueue: tensor {i} must have dtype "
                                f"{d.name} (as in the first enqueue), got {a.dtype.name}")

    # ---- dequeue -----------------------------------------------------------------------------
    def dequeue(self, wait_for_completion=False):
        """Dequeue the outfeed values to the host.

        Args:
          wait_for_completion: whether to wait for the work running on this queue's device
            to finish first. Defaults to False, which means that only the tensors already
            enqueued are returned.

        Returns:
          The enqueued structure of Tensors, stacked as described in the module docstring.
        """
        if not isinstance(wait_for_completion, bool):
            raise TypeError(f"IPUOutfeedQueue.dequeue: wait_for_completion must be a bool, "
                            f"got {wait_for_completion!r}")
        graph = _sys.modules.get("ipu_gpu.graph")
        if graph is not None and graph.core.building():
            return self._traced_dequeue(graph, wait_for_completion)
        return self._dequeue_now(wait_for_completion)

    def _dequeue_now(self, wait_for_completion):
        if wait_for_completion:
            self._wait()
        synthetic = _synthetic()
        with self._lock:
            if not self._known:
                raise ValueError("Trying to dequeue an outfeed which has not been enqueued: "
                                 f"IPUOutfeedQueue {self._name!r} has no elements and no "
                                 "structure yet.")
            n_rep = self._replication
            if self._outfeed_mode is IPUOutfeedMode.LAST:
                if synthetic:
                    raise OutOfRangeError(
                        f"IPUOutfeedQueue {self._name!r}: no data is returned to the host "
                        "with TF_POPLAR_FLAGS=--use_synthetic_data, so an IPUOutfeedMode.LAST "
                        "outfeed has no last element to dequeue")
                if not all(self._per_replica):
                    raise OutOfRangeError(
                        f"IPUOutfeedQueue {self._name!r} (IPUOutfeedMode.LAST): nothing was "
                        "enqueued since the last dequeue")
                taken = [lst.pop() for lst in self._per_replica]
                flat = self._stack_replicas(taken, n_rep)
            else:
                n = 0 if synthetic else min(len(lst) for lst in self._per_replica)
                taken = [lst[:n] for lst in self._per_replica]
                for lst in self._per_replica:
                    del lst[:n]
                flat = self._stack_all(taken, n, n_rep)
        if _observe.observer is not None:  # ipu-gpu run --report
            _observe.observer.outfeed(self._structure, flat, n_rep,
                                      getattr(self, "_graph_names", None),
                                      self._outfeed_mode is IPUOutfeedMode.LAST)
        return _nest.pack_sequence_as(self._structure, [wrap(a) for a in flat])

    # ---- in a TF1 graph ------------------------------------------------------------------
    def _traced_enqueue(self, graph, tensors):
        """A graph operation enqueueing the run's values of ``tensors``."""
        leaves = _nest.flatten(tensors)
        self._graph_names = [getattr(t, "name", "") for t in leaves]
        self._graph_leaves = [(getattr(t, "dtype", None), getattr(t, "shape", None))
                              for t in leaves]
        self._graph_structure = _nest.pack_sequence_as(tensors, [None] * len(leaves))
        g = graph.core.get_default_graph()
        return graph.core.add_node(g, "OutfeedEnqueue", f"{self._name}_enqueue", [tensors],
                                   lambda values: (self.enqueue(values), [])[1], [])

    def _traced_dequeue(self, graph, wait_for_completion):
        """Graph tensors of what the runs enqueued, stacked as ``dequeue`` stacks them (the
        leading sizes are known at run time only)."""
        leaves = getattr(self, "_graph_leaves", None)
        if leaves is None:
            raise ValueError(f"Trying to dequeue an outfeed which has not been enqueued: "
                             f"IPUOutfeedQueue {self._name!r} has no enqueue in the graph")
        specs = [(d, None) for d, _ in leaves]
        g = graph.core.get_default_graph()
        node = graph.core.add_node(
            g, "OutfeedDequeue", f"{self._name}_dequeue", [],
            lambda: _nest.flatten(self._dequeue_now(wait_for_completion)), specs)
        return _nest.pack_sequence_as(self._graph_structure, list(node.outputs))

    def _xp(self, taken):
        for per in taken:
            for item in per:
                a = item[0] if isinstance(item, list) else item
                return _backend.xp_of(a)
        return _backend.default_xp()

    def _stack_replicas(self, taken, n_rep):
        xp = self._xp([taken])
        out = []
        for i in range(len(self._shapes)):
            if n_rep == 1:
                out.append(taken[0][i])
            else:
                out.append(xp.stack([taken[r][i] for r in range(n_rep)]))
        return out

    def _stack_all(self, taken, n, n_rep):
        xp = self._xp(taken)
        out = []
        for i, (s, d) in enumerate(zip(self._shapes, self._dtypes)):
            lead = (n,) if n_rep == 1 else (n, n_rep)
            buf = xp.empty(lead + s, d)
            for k in range(n):
                if n_rep == 1:
                    buf[k] = taken[0][k][i]
                else:
                    for r in range(n_rep):
                        buf[k, r] = taken[r][k][i]
            out.append(buf)
        return out

    def _wait(self) -> None:
        from ..emulation import system

        if _context.current() is not None or system.current_ipu_id() is not None:
            raise RuntimeError("IPUOutfeedQueue.dequeue: wait_for_completion=True cannot be "
                               "used inside a program running on an emulated IPU (it would "
                               "wait for itself)")
        if not system.is_configured():
            return
        try:
            device = system.current_system().device(self._device_ordinal)
        except ValueError:
            return
        for ipu in device.ipus:
            ipu.executor.synchronize()

    # ---- iteration ---------------------------------------------------------------------------
    def __iter__(self):
        """Yields the stored elements one enqueue at a time (shape S, or [R] + S with
        replication), taking each off the queue; stops when the queue is empty. ALL mode
        only."""
        if self._outfeed_mode is not IPUOutfeedMode.ALL:
            raise ValueError("IPUOutfeedQueue: only an IPUOutfeedMode.ALL outfeed can be "
                             "iterated; use dequeue() for IPUOutfeedMode.LAST")
        while True:
            with self._lock:
                if not self._known or not self._per_replica or not all(
                        self._per_replica):
                    return
                taken = [lst.pop(0) for lst in self._per_replica]
                flat = self._stack_replicas(taken, self._replication)
                structure = self._structure
            yield _nest.pack_sequence_as(structure, [wrap(a) for a in flat])


class _OutfeedPoint:
    """What a queue held before an undoable run (``emulation/rollback.py``)."""

    _FIELDS = ("_known", "_structure", "_shapes", "_dtypes", "_replication", "_enqueued")

    def __init__(self, q: IPUOutfeedQueue):
        self.q = q
        self.fields = [getattr(q, f) for f in self._FIELDS]
        self.per_replica = [list(lst) for lst in q._per_replica]

    def undo(self) -> None:
        with self.q._lock:
            for f, v in zip(self._FIELDS, self.fields):
                setattr(self.q, f, v)
            self.q._per_replica = self.per_replica

    def close(self) -> None:
        pass


def _same_structure(a, b) -> bool:
    if isinstance(a, dict) or isinstance(b, dict):
        return (type(a) is type(b) and sorted(a) == sorted(b)
                and all(_same_structure(a[k], b[k]) for k in a))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(_same_structure(x, y) for x, y in zip(a, b)))
    return a is None and b is None
