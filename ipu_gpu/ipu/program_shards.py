"""How many IPUs one replica of a program takes, as the SDK decides it: a pipeline over the
IPUs of its device mapping takes that many (rounded up to a power of two), so a device of N
IPUs runs ``N // shards`` replicas of it (Graphcore's pipelining tutorial: 2 stages on
``auto_select_ipus = 2`` is one replica, not two).

A pipeline declares its shards with ``require(shards)``:

* while ``ipu_compiler.compile`` traces a TF1 graph (``tracking``), the count is recorded and
  the program's node runs with it;
* in a program running eagerly (``run``: ``compile`` outside a graph, ``IPUStrategy.run``)
  that was started with fewer IPUs per replica, ``require`` raises ``NeedsShards`` before
  the pipeline does anything, and ``run`` runs the program again with that many shards
  (remembered per function, so later runs start right).

Until a run of a function has finished, each start is undoable (``emulation/rollback.py``):
when it stops for more shards, what its replicas did before the pipeline call (variable
writes, infeed elements taken, outfeed enqueues, the device's seed executions) is undone
before the next start, so that work happens once per call, as on the IPU, where the
function is compiled whole and then run (a later pipeline needing still more IPUs stops and
undoes the next start likewise). Only Python side effects of
the function happen twice. A function whose runs have finished with fewer shards and that
later calls a pipeline needing more (a pipeline behind a Python condition) is rerun without
undoing.

``ipu.scopes.ipu_shard(i)`` declares its shards the same way: the SDK's IPUs per replica
are the highest shard index + 1, rounded up to a power of two (``NumIPUsInShards``). A
device whose IPU count that does not divide is the SDK's compile-time ``InternalError``
(``check``).
"""

from __future__ import annotations

import contextlib
import threading
import weakref

from .. import errors
from ..emulation import context, engine, rollback

__all__ = ["NeedsShards", "check", "ipus_per_replica", "require", "run", "tracking"]

_LOCAL = threading.local()
_KNOWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class NeedsShards(Exception):
    """The running program needs ``shards`` IPUs per replica."""

    def __init__(self, shards: int):
        super().__init__(f"the program needs {shards} IPUs per replica")
        self.shards = shards


def ipus_per_replica(highest_ipu: int) -> int:
    """IPUs 0..``highest_ipu`` rounded up to a power of two."""
    n = int(highest_ipu) + 1
    p = 1
    while p < n:
        p *= 2
    return p


def check(device, shards: int) -> int:
    """``shards`` if it divides ``device``'s IPUs.

    Raises:
      InternalError: it does not (the SDK's compile-time error; shards beyond the device's
        IPUs included)."""
    if device.num_ipus % shards:
        raise errors.InternalError(
            f"Trying to compile a graph for an IPU device with {device.num_ipus} IPUs and "
            f"{shards} shards. The number of shards needs to divide the number of IPUs.")
    return shards


class Record:
    """The shards found while tracing one program."""

    def __init__(self):
        self.shards = 1

    def __call__(self) -> int:
        return self.shards


@contextlib.contextmanager
def tracking(record: Record):
    """Pipelines traced inside the block record their shards in ``record``."""
    previous = getattr(_LOCAL, "record", None)
    _LOCAL.record = record
    try:
        yield record
    finally:
        _LOCAL.record = previous


def require(shards: int) -> None:
    """Declare that the current program needs ``shards`` IPUs per replica.

    Raises:
      NeedsShards: a running replica has fewer (caught by ``run``)."""
    record = getattr(_LOCAL, "record", None)
    if record is not None:
        record.shards = max(record.shards, shards)
        return
    ctx = context.current()
    if ctx is not None and len(ctx.ipus) < shards:
        raise NeedsShards(shards)


def run(device, fn, args=(), kwargs=None, key=None, at_least: int = 1):
    """``engine.run`` with the shards ``fn``'s pipelines need, ``at_least`` IPUs per replica
    (see the module docstring); a count the device cannot take is ``check``'s error."""
    key = fn if key is None else key
    known = _known(key)
    shards = max(known or 1, at_least)
    # no run of fn has finished, and one for more shards could follow
    undoable = known is None and context.current() is None and shards < device.num_ipus
    while True:
        with (rollback.undoable(device) if undoable else contextlib.nullcontext()) as started:
            try:
                result = engine.run(device, fn, args, kwargs,
                                    num_shards=check(device, shards))
            except NeedsShards as e:
                if e.shards <= shards:
                    raise
                if started is not None:
                    started.undo()
                shards = e.shards
                _remember(key, shards)
                continue
        _remember(key, shards)
        return result


def _known(key) -> int | None:
    """The shards a finished run of ``key`` took (None: none has finished)."""
    try:
        return _KNOWN.get(key)
    except TypeError:
        return None


def _remember(key, shards: int) -> None:
    try:
        _KNOWN[key] = shards
    except TypeError:
        pass
