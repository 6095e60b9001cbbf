"""The infeed and outfeed of Keras executions under an IPUStrategy:
``Model.set_infeed_queue_options`` and ``set_outfeed_queue_options`` as Graphcore's Keras
honours them (``keras/ipu/extensions/extensions_base.py``, ``data_feed_manager.py``).

Options: the setters refuse at once only the keys Keras sets itself (infeed: ``dataset``,
``infeed_spec``, ``element_spec``; ``_internal_id``) or cannot use (outfeed:
``outfeed_mode``, ``device_ordinal``), with Graphcore's ValueErrors. Every other check is the
queue constructors' (``ipu_gpu.ipu``'s ``IPUInfeedQueue``/``IPUOutfeedQueue``, their exceptions
and messages), made as Graphcore's Keras makes them: when ``fit``/``evaluate``/``predict``
starts feeding, after the ``on_*_begin`` callbacks. Those constructors are stricter than SDK
3.4's, which ignores unknown keywords, takes a ``prefetch_depth`` of 0 as the default and
does not check its type: the emulator's ``IPUInfeedQueue`` raises TypeError for an unknown
keyword or a non-int depth and ValueError for 0, and warns about the older SDKs' deprecated
``feed_name``/``replication_factor``/``data_to_prefetch``; its ``device_ordinal`` and
``buffer_depth`` messages are its own.

Outfeed: Keras reads the last step's results of each execution itself, so the options left to
the user (``buffer_depth``, ``optimise_latency``) are validated and change nothing the host
sees (nor does the SDK's: they tune Poplar's buffering).

Infeed: ``prefetch_depth`` elements (default 3, as ``IPUInfeedQueue``) are read ahead of the
device. An execution takes its ``steps * replicas`` elements from the read-ahead buffer (read
now whatever is missing); while its program runs, a reader thread reads the next
``prefetch_depth`` elements, and the host waits for them when the program ends. So when an
execution ends the source has been read exactly ``prefetch_depth`` elements past what the
device took (fewer at its end), the buffer carries over execution and epoch boundaries (one
buffer per data iterator: a new one when Keras recreates the iterator each epoch), and an
error or the end of the data surfaces at the execution that needs the element, as an
``IPUInfeedQueue``'s does. The reader runs only while the host waits (for the elements it
needs, or for the program): never beside callbacks, validation or model building, and the
program's random ops draw from the IPU's per-replica generators; so a dataset's random draws
(``map`` functions drawing from the global generator) take the same values in the same order
whatever the depth. Host code that itself draws from the global generator between two
executions (a callback) sees the dataset's draws of the read-ahead elements before its own.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque

import numpy as np

from . import option_keys

__all__ = ["Infeed", "check_infeed_options", "check_outfeed_options", "outfeed_for",
           "prefetch_depth_for"]

_AUTOMATIC_INFEED_ARGS = ("dataset", "infeed_spec", "element_spec")
_INVALID_INFEED_ARGS = ("_internal_id",)  # Graphcore's ipu_infeed_queue._internal_id
_INVALID_OUTFEED_ARGS = ("outfeed_mode", "device_ordinal")
_names = itertools.count()


def check_infeed_options(kwargs: dict) -> None:
    """``set_infeed_queue_options``'s own checks (Graphcore's ValueErrors)."""
    option_keys.refuse(kwargs, _AUTOMATIC_INFEED_ARGS, "kwargs", option_keys.AUTOMATIC)
    option_keys.refuse(kwargs, _INVALID_INFEED_ARGS, "kwargs", option_keys.INCOMPATIBLE)


def check_outfeed_options(kwargs: dict) -> None:
    """``set_outfeed_queue_options``'s own checks (Graphcore's ValueErrors)."""
    option_keys.refuse(kwargs, _INVALID_OUTFEED_ARGS, "kwargs", option_keys.INCOMPATIBLE)


def prefetch_depth_for(kwargs: dict) -> int:
    """The prefetch depth an ``IPUInfeedQueue(dataset, **kwargs)`` would have, checked by
    that constructor (its exceptions and warnings). It is given a one-element stand-in
    dataset: the Keras data was checked by the data handler, and no queue thread starts."""
    from ...ipu.ipu_infeed_queue import IPUInfeedQueue

    return IPUInfeedQueue([np.zeros((1,), np.float32)], **kwargs).prefetch_depth


def outfeed_for(kwargs: dict):
    """``IPUOutfeedQueue(**kwargs)``: the constructor's checks (exceptions, warnings)."""
    from ...ipu.ipu_outfeed_queue import IPUOutfeedQueue

    return IPUOutfeedQueue(**kwargs)


def _current_gpu():
    """The host thread's current CUDA device on the GPU backend, else None."""
    from ...core import backend

    if backend.backend_name() != "gpu":
        return None
    return backend.default_xp().cuda.runtime.getDevice()


class _Stop:
    """The end of the source (``error`` None) or the exception reading it raised."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error


class Infeed:
    """Reads one data iterator ahead of the device (see the module docstring).

    Args:
      iterator: the data handler's iterator of packed elements.
      depth: how many elements to read ahead of what executions have taken.
    """

    def __init__(self, iterator, depth: int):
        self.iterator = iterator
        self.depth = int(depth)
        self._buffer: deque = deque()  # elements read, not taken; a _Stop last once it ended
        self._read = 0  # elements read from the iterator
        self._taken = 0  # elements handed to executions
        self._target = 0  # the reader reads until _read reaches it
        self._ended = False
        self._stopping = False
        self._cond = threading.Condition()
        self._gpu = _current_gpu()  # the reader makes its Tensors where the host would
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"ipu_gpu-keras-infeed-{next(_names)}")
        self._thread.start()

    # ---- the reader thread -------------------------------------------------------------
    def _run(self) -> None:
        if self._gpu is None:
            self._read_loop()
            return
        import cupy

        with cupy.cuda.Device(self._gpu):
            self._read_loop()

    def _read_loop(self) -> None:
        cond = self._cond
        while True:
            with cond:
                while not self._stopping and (self._ended or self._read >= self._target):
                    cond.wait()
                if self._stopping:
                    return
            try:
                item = next(self.iterator)
            except StopIteration:
                item = _Stop(None)
            except BaseException as e:  # raised in the execution that needs this element
                item = _Stop(e)
            with cond:
                self._buffer.append(item)
                if isinstance(item, _Stop):
                    self._ended = True
                else:
                    self._read += 1
                cond.notify_all()

    # ---- the host's side ---------------------------------------------------------------
    def take(self, n: int) -> list:
        """The next ``n`` elements, read now where the buffer lacks them.

        Raises:
          StopIteration: the data ended first (the elements read stay for the next take).
          Exception: what reading the data raised, at the element that failed.
        """
        cond = self._cond
        with cond:
            self._target = max(self._target, self._taken + n)
            cond.notify_all()
            while not self._ended and self._read - self._taken < n:
                cond.wait()
            if self._read - self._taken < n:
                error = self._buffer[-1].error
                raise StopIteration if error is None else error
            out = [self._buffer.popleft() for _ in range(n)]
            self._taken += n
            return out

    def read_ahead(self) -> None:
        """Start reading until ``depth`` elements past those taken are read."""
        with self._cond:
            self._target = max(self._target, self._taken + self.depth)
            self._cond.notify_all()

    def settle(self) -> None:
        """Wait until the reader has read what ``read_ahead`` asked for (or the data
        ended)."""
        cond = self._cond
        with cond:
            while not self._ended and not self._stopping and self._read < self._target:
                cond.wait()

    def read_count(self) -> int:
        """Elements read from the iterator so far."""
        with self._cond:
            return self._read

    def close(self) -> None:
        """Stop the reader (after the element it is reading) and drop the buffer."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()
        self._buffer.clear()
