"""The execution engine: runs one program on an emulated device, one replica per context.

``run(device, fn, args)`` starts replica r of the program on the worker thread of its first
shard's IPU (``Device.replica_shards``), with ``context.ReplicaContext`` current there and the
device's placement pushed (so ``ipu.scopes`` inside the program see the device). The
``Program`` object shared by the replicas of one run is where collectives meet:
``Program.exchange`` is a barrier exchange (every replica publishes a value, waits for the
others, and gets the list of all values in replica order), so every reduction is computed by
each replica over the same list in the same order: deterministic, identical on CPU and GPU.

Failure handling: an exception in one replica aborts the barrier, so replicas waiting in a
collective (or reaching their next collective or loop iteration) stop; the caller re-raises
the exception of the lowest-numbered failing replica, with ``replica_index`` set on it and a
note naming the replica. Replicas that leave the program at different collectives (divergent
control flow, which hangs a real IPU) fail with a RuntimeError instead of hanging: every
exchange carries a tag and each replica finishes with an "end of program" exchange.

Memory: each replica's inputs are charged to its IPU's ledger while the run lasts (label
``program inputs``), and every Tensor the replica makes (label ``tensors``, through
``core.tensor.set_allocation_hook``) while it lives, at the latest until the program ends
(outputs are copied to the host). An IPU that cannot hold them raises
``GraphMemoryAllocationError`` from the op that allocated, naming the replica. Inside
``with stage(shard, index):`` (a pipeline stage) the tensors go to the ledger of the
replica's IPU ``shard`` instead of its first IPU's.

BLAS: while the replicas of a replicated program run, OpenBLAS runs on one thread
(``kernels._blas.single_threaded_blas``). The replicas are the parallelism, and OpenBLAS's
thread count is process-wide: a count another replica's convolution changed mid-run would
otherwise change the bits of a matmul on the CPUs whose GEMM results depend on it.

GPU streams: each IPU's executor has its own non-blocking stream; a run makes every replica's
stream wait for an event recorded on the host thread's stream first (the host's pending work,
such as the variables it just made, comes before the program), and each replica synchronises
its stream before the host reads its outputs.

Reports: with an observer installed (``emulation.observe``, by ``ipu-gpu run --report``),
each replica's begin/end times and its IPU ledgers' bytes at begin and peak during are handed
to it, each pipeline stage's span (``stage``), and the end of every run; without one the
engine reads one attribute per replica (and per stage).

Runs on one device are serialised (a lock per device): two host threads running programs on
the same IPUs would otherwise interleave replicas on the single-threaded executors and
deadlock.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
import threading
import time
import weakref

from ..core import capture, nest
from ..core import tape as core_tape
from ..core import tensor as core_tensor
from ..core.tensor import Tensor
from . import context, observe, placement
from .memory import TensorCharges

__all__ = ["Operation", "Program", "ReplicaCancelled", "is_operation", "on_shard", "run",
           "stage"]


class ReplicaCancelled(Exception):
    """Raised inside a replica when another replica of the same run failed."""


class Operation:
    """A side-effecting operation returned by a program or a loop body (TF's ``Operation``):
    an outfeed enqueue, a NoOp. It has no value; evaluating it already happened eagerly."""

    __slots__ = ("name",)
    _ipu_operation = True

    def __init__(self, name: str = "NoOp"):
        self.name = name

    def run(self, *args, **kwargs) -> None:
        return None

    def __repr__(self) -> str:
        return f"<ipu_gpu.Operation {self.name!r}>"


def is_operation(x) -> bool:
    """True for an Operation: any object whose class sets ``_ipu_operation = True`` (so feeds
    may define their own result type) or is the feeds' ``FeedOperation``."""
    t = type(x)
    return getattr(t, "_ipu_operation", False) is True or t.__name__ == "FeedOperation"


class Program:
    """State shared by the replicas of one run: the barrier and the exchange slots."""

    def __init__(self, device, replicas: list):
        self.device = device
        self.replicas = replicas  # [replica][shard] -> IPU
        self.replication_factor = len(replicas)
        n = self.replication_factor
        self._barrier = threading.Barrier(n) if n > 1 else None
        self._slots = ([None] * n, [None] * n)  # double-buffered: one barrier per exchange
        self._count = [0] * n
        self.cancelled = False
        self.host_events = _host_work_events(replicas)  # GPU id -> event after host work
        self.variable_key = _device_key(device)

    def cancel(self) -> None:
        self.cancelled = True
        if self._barrier is not None:
            self._barrier.abort()

    def check_cancelled(self) -> None:
        if self.cancelled:
            raise ReplicaCancelled("another replica of this program failed")

    def exchange(self, replica: int, tag: str, value) -> list:
        """Publish ``value`` from ``replica``; return every replica's value in replica order.

        All replicas must call it with the same ``tag`` (the same collective); otherwise every
        replica raises RuntimeError (divergent control flow)."""
        if self._barrier is None:
            return [value]
        capture.refuse("a cross-replica exchange (replicas meet on the host)")
        k = self._count[replica]
        self._count[replica] = k + 1
        buf = self._slots[k & 1]
        buf[replica] = (tag, value)
        try:
            self._barrier.wait()
        except threading.BrokenBarrierError:
            raise ReplicaCancelled("another replica of this program failed") from None
        # A replica writes this buffer again only after the next barrier, which every replica
        # reaches after reading it here: one barrier per exchange suffices.
        entries = list(buf)
        tags = [t for t, _ in entries]
        if any(t != tags[0] for t in tags):
            described = ", ".join(f"replica {r}: {t}" for r, t in enumerate(tags))
            raise RuntimeError(
                "Divergent control flow between replicas: every replica must run the same "
                f"collectives in the same order, got {described}")
        return [v for _, v in entries]


_DEVICE_LOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


def _device_lock(device) -> threading.Lock:
    with _LOCKS_LOCK:
        lock = _DEVICE_LOCKS.get(device)
        if lock is None:
            lock = _DEVICE_LOCKS[device] = threading.Lock()
        return lock


def _nbytes(structure) -> int:
    total = 0
    for leaf in nest.flatten(structure):
        if isinstance(leaf, Tensor):
            total += int(leaf._value.nbytes)
    return total


def _host_work_events(replicas) -> dict:
    """On each GPU a replica runs on, an event recorded on the host thread's current stream:
    every replica stream waits for it, so the host's own work (tensors and variables it made
    just before the run, on the default stream) is finished before a replica reads it. The
    replica streams are non-blocking: without this nothing orders them after the host's."""
    gpus = {getattr(s[0].executor, "gpu", None) for s in replicas
            if getattr(s[0].executor, "kind", "cpu") == "gpu"}
    cupy = sys.modules.get("cupy") if gpus else None
    if cupy is None:
        return {}
    events = {}
    for gpu in gpus:
        with cupy.cuda.Device(gpu):
            event = cupy.cuda.Event(block=False, disable_timing=True, interprocess=False)
            event.record(cupy.cuda.get_current_stream())
            events[gpu] = event
    return events


def _sync_stream(executor) -> None:
    if getattr(executor, "kind", "cpu") == "gpu":
        executor.stream.synchronize()  # syncs device: outputs are read by the host


_LIVE = threading.local()  # .tensors: the TensorCharges of the replica this thread runs


def _charge_tensor(t) -> None:
    """The allocation hook: a Tensor made inside a replica is charged to the replica's IPU
    while it lives, and at the latest until the replica's program ends (memory.TensorCharges)."""
    live = getattr(_LIVE, "tensors", None)
    if live is None:
        return
    nbytes = getattr(t._value, "nbytes", 0)
    if nbytes:
        if type(nbytes) is not int:
            nbytes = int(nbytes)
        live.charge(t, nbytes)


_RUNNING = [0]  # programs running now; the allocation hook is installed only while > 0
_RUNNING_LOCK = threading.Lock()


class _ChargingTensors:
    """Installs the allocation hook for the duration of a run (host code between runs pays
    nothing for it)."""

    def __enter__(self):
        with _RUNNING_LOCK:
            _RUNNING[0] += 1
            if _RUNNING[0] == 1:
                core_tensor.set_allocation_hook(_charge_tensor)

    def __exit__(self, *exc):
        with _RUNNING_LOCK:
            _RUNNING[0] -= 1
            if _RUNNING[0] == 0:
                core_tensor.set_allocation_hook(None)


def _release_live_tensors() -> None:
    """The program ended: what it made is no longer resident on the IPU (outputs were copied
    to the host)."""
    live = getattr(_LIVE, "tensors", None)
    if live is not None:
        live.close()
    _LIVE.tensors = None
    shards = getattr(_LIVE, "shards", None)
    if shards:
        for other in shards.values():
            other.close()
    _LIVE.shards = None


class stage:
    """``with engine.stage(shard, index, phase):`` inside a replica: the Tensors made in the
    block are charged to the ledger of the replica's IPU ``shard`` (a pipeline stage's IPU)
    instead of its first IPU's, and with an observer the block is reported as a stage span
    (``observer.stage``). On the host (no replica running) it does nothing."""

    __slots__ = ("shard", "index", "phase", "_saved", "_begin", "_tape", "_watched")
    _observed = True

    def __init__(self, shard: int, index: int, phase: str = "forward"):
        self.shard = shard
        self.index = index
        self.phase = phase
        self._saved = None
        self._begin = None  # set while an observer hears the stage
        self._tape = None

    def __enter__(self):
        live = getattr(_LIVE, "tensors", None)
        ctx = context.current()
        if live is None or ctx is None or not 0 <= self.shard < len(ctx.ipus):
            return self
        self._saved = live
        ledger = ctx.ipus[self.shard].memory
        if ledger is not live.ledger:
            shards = getattr(_LIVE, "shards", None)
            if shards is None:
                shards = _LIVE.shards = {}
            target = shards.get(self.shard)
            if target is None:
                target = shards[self.shard] = TensorCharges(ledger)
            _LIVE.tensors = target
        if self._observed and observe.observer is not None:
            tapes = core_tape.recording_tapes()
            self._tape = tapes[-1] if tapes else None
            self._watched = 0 if self._tape is None else len(self._tape._variables)
            self._begin = time.perf_counter()
        return self

    def __exit__(self, *exc):
        live, self._saved = self._saved, None
        if live is None:
            return
        _LIVE.tensors = live
        obs = observe.observer if self._observed else None
        begin, self._begin = self._begin, None
        if obs is not None and begin is not None:  # (an observer installed mid-stage: none)
            end = time.perf_counter()
            ctx = context.current()
            tape, self._tape = self._tape, None
            # the variables the stage read first: its weights (a tape watches trainable ones)
            owned = () if tape is None else tape._variables[self._watched:]
            obs.stage(ctx.ipus[self.shard], ctx.replica_index, ctx.replication_factor,
                      self.index, self.phase, begin, end, owned)


class on_shard(stage):
    """``with engine.on_shard(shard):`` inside a replica: the Tensors made in the block are
    charged to the ledger of the replica's IPU ``shard`` (``ipu.scopes.ipu_shard``), with no
    stage span. On the host, or for a shard the replica does not have, it does nothing."""

    __slots__ = ()
    _observed = False

    def __init__(self, shard: int):
        super().__init__(shard, -1)


_DEVICE_KEYS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_next_device_key = itertools.count(1).__next__


def _device_key(device) -> int:
    """A number naming ``device`` in the variables' per-replica copies."""
    with _LOCKS_LOCK:
        key = _DEVICE_KEYS.get(device)
        if key is None:
            key = _DEVICE_KEYS[device] = _next_device_key()
        return key


def _replica_main(program: Program, r: int, fn, args, kwargs, charges: list):
    device = program.device
    ipus = tuple(program.replicas[r])
    ledger = ipus[0].memory
    obs = observe.observer
    if obs is not None:  # a run report records this execution (emulation.observe)
        ledgers = list({id(ipu.memory): ipu.memory for ipu in ipus}.values())  # any stage's
        for each in ledgers:
            each.take_window_peak()  # the execution's memory window starts here
        begin, used_before = time.perf_counter(), [each.used for each in ledgers]
    ctx = context.ReplicaContext(device, r, program.replication_factor, ipus, program)
    _LIVE.tensors = TensorCharges(ledger)
    core_tensor.set_replica_slot((program.variable_key, r, program.replication_factor))
    event = program.host_events.get(getattr(ipus[0].executor, "gpu", None))
    if event is not None:
        ipus[0].executor.stream.wait_event(event)
    try:
        with context.entered(ctx), placement.push(device=device.name,
                                                  device_index=device.index,
                                                  jit_scope="jit_scope_ipu_0",
                                                  xla_context=True):
            n_in = _nbytes((args, kwargs))
            ledger.charge(n_in, "program inputs")
            charges.append((ledger, n_in, "program inputs"))
            out = fn(*args, **kwargs)
            program.exchange(r, "end of program", None)
        _sync_stream(ipus[0].executor)
        return out
    except BaseException:
        program.cancel()
        raise
    finally:
        core_tensor.set_replica_slot(None)
        _release_live_tensors()
        if obs is not None:
            obs.execution(ipus, r, program.replication_factor, begin, time.perf_counter(),
                          [(each, before, each.take_window_peak())
                           for each, before in zip(ledgers, used_before)])


def _blas_threads(replication_factor: int):
    """One BLAS thread while several replicas run concurrently (see the module docstring)."""
    if replication_factor <= 1:
        return contextlib.nullcontext()
    from ..kernels._blas import single_threaded_blas

    return single_threaded_blas()


def run(device, fn, args=(), kwargs=None, num_shards: int = 1):
    """Run ``fn(*args, **kwargs)`` on every replica of ``device`` (replication factor =
    ``device.num_ipus // num_shards``); return the result of replica 0.

    An exception in a replica is re-raised here (the lowest failing replica's, with
    ``replica_index`` set and a note); the other replicas are cancelled, never left hanging.
    Inside a replica (a program calling ``run`` again) ``fn`` runs inline in that replica.
    """
    kwargs = {} if kwargs is None else kwargs
    if context.current() is not None:
        return fn(*args, **kwargs)
    replicas = device.replica_shards(num_shards)
    program = Program(device, replicas)
    charges: list = []
    with _device_lock(device), _ChargingTensors(), _blas_threads(len(replicas)):
        futures = [shards[0].executor.submit(_replica_main, program, r, fn, args, kwargs,
                                             charges)
                   for r, shards in enumerate(replicas)]
        outcomes = []
        for f in futures:
            try:
                outcomes.append((f.result(), None))
            except BaseException as e:  # noqa: BLE001 - re-raised below
                outcomes.append((None, e))
        for ledger, nbytes, label in charges:
            ledger.release(nbytes, label)
        if observe.observer is not None:
            observe.observer.run_ended(time.perf_counter())
    failed = [(r, e) for r, (_, e) in enumerate(outcomes) if e is not None]
    real = [(r, e) for r, e in failed if not isinstance(e, ReplicaCancelled)]
    if failed:
        r, e = (real or failed)[0]
        try:
            e.replica_index = r
        except AttributeError:
            pass
        if hasattr(e, "add_note"):
            e.add_note(f"raised in replica {r} of {program.replication_factor} on "
                       f"{device.name}")
        raise e
    return outcomes[0][0]
