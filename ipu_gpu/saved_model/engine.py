"""The emulated application runtime engine: one running program per engine name, serving
calls one at a time in the order they arrive (calls from several threads queue up, as on the
IPU); each call runs its iteration in the calling thread once its turn comes.

The engine starts with the startup inputs (computing the loop-carried values' start); each
call feeds one streamed-input element and gets the streamed outputs of that iteration.
After ``iterations`` calls the program has ended and the engine restarts it (loop-carried
values start again) before the next call. An iteration that fails raises ``InternalError``
and the engine restarts the program before the next call (the IPU reset of Graphcore's
error handling). The engine outlives any Session.

Each iteration runs as a program on the configured system's device 0, as one replica taking
all of its IPUs (``emulation.engine.run``): inside a replica context (``replication_index``
is 0, collectives see one replica), with the device's placement and the first IPU's memory
ledger charged while it runs. Without a configured system it runs on the host; a call made
from inside a running program (which holds the device) runs in that program's replica.
"""

from __future__ import annotations

import copy
import threading

from ..errors import InternalError

__all__ = ["Engine", "get_or_start"]

_engines: dict = {}  # name -> Engine
_lock = threading.Lock()


class Engine:
    """An executable's running program (see the module docstring)."""

    def __init__(self, name: str, key, exe, startup: list, timeout_us: int):
        self.name, self.key, self.exe = name, key, exe
        self.startup = list(startup)
        self.timeout_us = int(timeout_us)
        n_args = len(exe.signature.inputs) - len(_variables(exe))
        self._args = self.startup[:n_args]
        self.program = copy.copy(exe.program)  # its own variables: the executable is shared
        self.program.variables = self.startup[n_args:]  # variables not frozen: given at start
        self._carried = None
        self._iteration = 0
        self._turns = threading.Condition()
        self._next_ticket = 0
        self._serving = 0

    def call(self, streamed: list) -> list:
        """The streamed outputs of one iteration fed ``streamed`` (blocks until the calls
        that arrived before it and it have run).

        Raises:
          InternalError: the iteration failed (the program restarts for the next call)."""
        with self._turns:
            ticket = self._next_ticket
            self._next_ticket += 1
            while self._serving != ticket:
                self._turns.wait()
        try:
            return self._serve(list(streamed))
        finally:
            with self._turns:
                self._serving += 1
                self._turns.notify_all()

    def _serve(self, streamed):
        from ..emulation import context
        from ..graph.core import eager_scope

        try:
            with eager_scope():
                if context.current() is not None:  # inside a program: in its replica
                    return self._run_step(streamed)
                return _on_device(self._run_step, streamed)
        except Exception as e:  # noqa: BLE001 - handed to the caller as TF does
            self._carried = None  # restart the program before the next call
            error = InternalError(f"Embedded application runtime '{self.name}': "
                                  f"{type(e).__name__}: {e}")
            raise error from e

    # ---- one iteration ---------------------------------------------------------------------
    def _feeds(self, streamed) -> dict:
        values = [*self._args, *self._carried, *streamed]
        return dict(enumerate(values))

    def _start_program(self):
        feeds = dict(enumerate(self._args))
        self._carried = list(self.program.run("init", feeds))
        self._iteration = 0

    def _run_step(self, streamed):
        if self._carried is None or self._iteration >= self.exe.iterations:
            self._start_program()
        out = self.program.run("step", self._feeds(streamed))
        n_out = len(self.exe.signature.streamed_outputs)
        self._carried = list(out[n_out:n_out + self.exe.num_carried])
        self._iteration += 1
        return list(out[:n_out])


def _on_device(fn, *args):
    """``fn(*args)`` as a program on the emulated IPU device 0 (one replica taking all its
    IPUs: its replica context, placement and memory ledger, as a compiled program runs),
    or on the host when no IPU system is configured."""
    from ..emulation import system
    from ..ipu import program_shards

    if not system.is_configured():
        return fn(*args)
    device = system.current_system().device(0)
    return program_shards.run(device, fn, args, at_least=device.num_ipus)


def _variables(exe) -> list:
    header = exe.header_program
    return header["variables"] if header else []


def get_or_start(name: str, key, exe, startup: list, timeout_us: int) -> Engine:
    """The engine ``name``: the running one when it runs the same executable file (``key``)
    with the same startup inputs, else a new one (replacing an engine of that name)."""
    with _lock:
        engine = _engines.get(name)
        if engine is not None and engine.key == key and _same(engine.startup, startup):
            return engine
        engine = Engine(name, key, exe, startup, timeout_us)
        _engines[name] = engine
        return engine


def _same(a: list, b: list) -> bool:
    import numpy as np

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x is y:
            continue
        xa, ya = np.asarray(_host(x)), np.asarray(_host(y))
        if xa.shape != ya.shape or xa.dtype != ya.dtype or not np.array_equal(xa, ya):
            return False
    return True


def _host(x):
    return x.numpy() if hasattr(x, "numpy") else x


def running(name: str):
    """The engine named ``name``, or None."""
    with _lock:
        return _engines.get(name)
