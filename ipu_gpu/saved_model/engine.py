"""The emulated application runtime engine: one background thread per engine name runs an
executable's steps, one per request, in the order requests arrive (calls from several
threads queue up, as on the IPU).

The engine starts with the startup inputs (computing the loop-carried values' start); each
request feeds one streamed-input element and gets the streamed outputs of that iteration.
After ``iterations`` requests the program has ended and the engine restarts it (loop-carried
values start again) before the next request. A step that fails answers its request with
``InternalError`` and the engine restarts the program before the next one (the IPU reset of
Graphcore's error handling). The thread is a daemon: it outlives any Session.
"""

from __future__ import annotations

import copy
import queue
import threading

from ..errors import InternalError

__all__ = ["Engine", "get_or_start"]

_engines: dict = {}  # name -> Engine
_lock = threading.Lock()


class _Request:
    __slots__ = ("inputs", "outputs", "error", "done", "on_host")

    def __init__(self, inputs, on_host=False):
        self.inputs = inputs
        self.outputs = None
        self.error = None
        self.done = threading.Event()
        self.on_host = on_host  # the caller runs inside a program: it holds the device


class Engine:
    """An executable running in its own thread (see the module docstring)."""

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
        self._queue: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._main, name=f"ipu_gpu-engine-{name}",
                                       daemon=True)
        self.thread.start()

    def call(self, streamed: list) -> list:
        """The streamed outputs of one iteration fed ``streamed`` (blocks until it ran)."""
        from ..emulation import context

        request = _Request(list(streamed), on_host=context.current() is not None)
        self._queue.put(request)
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request.outputs

    # ---- the engine thread ----------------------------------------------------------------
    def _feeds(self, streamed) -> dict:
        values = [*self._args, *self._carried, *streamed]
        return dict(enumerate(values))

    def _start_program(self):
        feeds = dict(enumerate(self._args))
        self._carried = list(self.program.run("init", feeds))
        self._iteration = 0

    def _step(self, request):
        if request.on_host:
            return self._run_step(request.inputs)
        return _on_device(self._run_step, request.inputs)

    def _run_step(self, streamed):
        if self._carried is None or self._iteration >= self.exe.iterations:
            self._start_program()
        out = self.program.run("step", self._feeds(streamed))
        n_out = len(self.exe.signature.streamed_outputs)
        self._carried = list(out[n_out:n_out + self.exe.num_carried])
        self._iteration += 1
        return list(out[:n_out])

    def _main(self):
        from ..graph.core import eager_scope

        while True:
            request = self._queue.get()
            try:
                with eager_scope():
                    request.outputs = self._step(request)
            except Exception as e:  # noqa: BLE001 - handed to the caller as TF does
                self._carried = None  # restart the program before the next request
                error = InternalError(f"Embedded application runtime "
                                      f"'{self.name}': {type(e).__name__}: {e}")
                error.__cause__ = e
                request.error = error
            finally:
                request.done.set()


def _on_device(fn, *args):
    """``fn(*args)`` as a program on the emulated IPU device 0 (one replica taking all its
    IPUs: its replica context, placement and memory ledger, as a compiled program runs),
    or on the host when no IPU system is configured."""
    from ..emulation import engine as emulation_engine
    from ..emulation import system

    if not system.is_configured():
        return fn(*args)
    device = system.current_system().device(0)
    return emulation_engine.run(device, fn, args, num_shards=device.num_ipus)


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
