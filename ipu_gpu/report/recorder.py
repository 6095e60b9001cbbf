"""The run recorder: the observer ``ipu-gpu run --report`` installs in ``emulation.observe``.

It keeps, over the run (times are ``time.perf_counter`` seconds since the recorder started):

* ``spans``: one ``Span`` per replica execution on the emulated IPUs (the engine's runs; a
  PopTorch call, whose replicas run in turn on the host thread, is one span per replica);
* ``memory``: one ``MemorySample`` per execution and IPU ledger: bytes resident at its begin
  and the most resident during it, and the IPU's memory;
* ``losses``: ``(step, seconds, value, source)``, the training loss as the program sees it:
  Keras: ``logs['loss']`` after each execution of ``fit`` (the epoch's running mean, as
  Keras's progress bar shows it); TF 1: each step's loss dequeued from an outfeed (a dict
  key containing "loss", else a graph tensor whose name contains "loss", else an outfeed of
  one float scalar per step), and each graph tensor whose name contains "loss" that
  ``Session.run`` fetches (the replicas' mean); PopTorch: the last tensor a training model's
  call returns (the loss, as PopTorch models return it), averaged;
* ``samples``: ``(seconds, n, source)``, training samples consumed: Keras: the samples each
  ``fit`` execution took over all replicas; TF 1/TF 2 loops: the infeed elements dequeued
  inside replicas times their batch dimension, counted at the end of each run, and claimed
  as training samples when a loss is next recorded from an outfeed or a fetch (an
  inference loop's infeed is not training); PopTorch: the combined batch of each training
  call.

Every hook swallows its own errors (a report must never break the run it observes).
"""

from __future__ import annotations

import functools
import threading
import time
from typing import NamedTuple

import numpy as np


class Span(NamedTuple):
    row: str  # the timeline row: "IPU 3" or "replica 1"
    replica: int
    replicas: int
    begin: float
    end: float
    kind: str  # "engine", "poptorch training", "poptorch inference"


class MemorySample(NamedTuple):
    ipu: int
    capacity: int
    begin: float
    end: float
    before: int  # bytes resident when the execution began
    peak: int  # the most bytes resident during it


def _guarded(method):
    @functools.wraps(method)
    def hook(self, *args):
        try:
            method(self, *args)
        except Exception as e:  # noqa: BLE001 - a report never breaks the run
            self.errors.append(f"{method.__name__}: {type(e).__name__}: {e}")
    return hook


def _host(a) -> np.ndarray:
    """A numpy copy of a numpy/cupy array, a Tensor's value or a torch tensor."""
    a = getattr(a, "_value", a)
    if hasattr(a, "detach"):
        a = a.detach().float().cpu().numpy()
    get = getattr(a, "get", None)
    if get is not None and not isinstance(a, (np.ndarray, dict)):
        a = get()
    return np.asarray(a)


def _mean(a) -> float | None:
    if type(a) is float:
        return a
    a = _host(a)
    if a.size == 0 or not (np.issubdtype(a.dtype, np.floating)
                           or np.issubdtype(a.dtype, np.integer)):
        return None
    return float(np.mean(a, dtype=np.float64))


class Recorder:
    """Collects a run's spans, memory, losses and samples (see the module docstring)."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self.start = clock()
        self.spans: list = []
        self.memory: list = []
        self.losses: list = []
        self.samples: list = []
        self.errors: list = []
        self.executions = 0
        self.steps = 0
        self.replicas = 1
        self._pending = 0  # infeed samples of the run in progress
        self._unclaimed: list = []  # indices in samples of infeed records no loss claimed
        self._lock = threading.Lock()
        self._keras_seen: dict = {}  # id(runner) -> runner.samples at its last execution

    def now(self) -> float:
        return self.clock() - self.start

    def training_samples(self) -> list:
        """The sample records of one source: Keras's or PopTorch's own counts where the
        program has them (a Keras ``fit`` also feeds its replicas through an infeed, and
        evaluation's infeed elements are no training samples), else those of the runs whose
        losses were recorded, else every infeed's."""
        for source in ("keras", "poptorch", "infeed training", "infeed"):
            picked = [p for p in self.samples if p[2] == source]
            if picked:
                return picked
        return []

    # ---- the engine ----------------------------------------------------------------------
    @_guarded
    def execution(self, ipus, replica, replicas, begin, end, peaks) -> None:
        begin, end = begin - self.start, end - self.start
        for ipu in ipus:
            self.spans.append(Span(f"IPU {ipu.id}", replica, replicas, begin, end, "engine"))
        for ledger, before, peak in peaks:
            self.memory.append(MemorySample(ledger.ipu_id, ledger.capacity, begin, end,
                                            before, max(peak, before)))
        if replicas > self.replicas:
            self.replicas = replicas

    @_guarded
    def run_ended(self, end) -> None:
        with self._lock:
            self.executions += 1
            n, self._pending = self._pending, 0
        if n:
            self._unclaimed.append(len(self.samples))
            self.samples.append((end - self.start, n, "infeed"))

    def _claim(self) -> None:
        """A loss was recorded: the runs since the last one trained."""
        for i in self._unclaimed:
            t, n, _ = self.samples[i]
            self.samples[i] = (t, n, "infeed training")
        self._unclaimed = []

    # ---- feeds and sessions ------------------------------------------------------------
    @_guarded
    def infeed_element(self, flat, replicas) -> None:
        shape = getattr(flat[0], "shape", ()) if flat else ()
        n = int(shape[0]) if len(shape) else 1
        with self._lock:
            self._pending += n
            if replicas > self.replicas:
                self.replicas = replicas

    @_guarded
    def outfeed(self, structure, flat, replicas, names, last) -> None:
        picked = None
        if isinstance(structure, dict) and len(structure) == len(flat):
            keys = sorted(structure)  # nest's order of a dict's leaves
            picked = next((i for i, k in enumerate(keys) if "loss" in str(k).lower()), None)
        elif names and len(names) == len(flat):
            picked = next((i for i, n in enumerate(names) if "loss" in str(n).lower()), None)
        scalar_steps = None
        if picked is None and len(flat) == 1:
            a = _host(flat[0])
            lead = (0 if last else 1) + (1 if replicas > 1 else 0)
            if np.issubdtype(a.dtype, np.floating) and a.ndim == lead:
                picked, scalar_steps = 0, a
        if picked is None:
            return
        a = scalar_steps if scalar_steps is not None else _host(flat[picked])
        if not np.issubdtype(a.dtype, np.floating) and not np.issubdtype(a.dtype, np.integer):
            return
        values = [float(np.mean(a, dtype=np.float64))] if last or a.ndim == 0 else [
            float(v) for v in a.reshape(a.shape[0], -1).mean(axis=1, dtype=np.float64)]
        t = self.now()
        for v in values:
            self.steps += 1
            self.losses.append((self.steps, t, v, "outfeed"))
        self._claim()

    @_guarded
    def fetched(self, tensors, values) -> None:
        for f, v in zip(tensors, values):
            name = getattr(f, "name", None)
            if not isinstance(name, str) or "loss" not in name.lower():
                continue
            if getattr(getattr(f, "op", None), "type", "") == "OutfeedDequeue":
                continue  # the outfeed hook saw these values
            value = _mean(v)
            if value is not None:
                self.steps += 1
                self.losses.append((self.steps, self.now(), value, "session"))
                self._claim()

    # ---- Keras and PopTorch --------------------------------------------------------------
    @_guarded
    def keras_execution(self, logs, steps, runner) -> None:
        t = self.now()
        self.steps += int(steps)
        loss = logs.get("loss") if isinstance(logs, dict) else None
        if loss is not None:
            value = _mean(loss)
            if value is not None:
                self.losses.append((self.steps, t, value, "keras"))
        if runner is not None:
            seen = runner.samples
            last = self._keras_seen.get(id(runner), 0)
            self._keras_seen[id(runner)] = seen
            # fit zeroes it at each epoch: an execution always consumes samples, so a count
            # that did not grow was reset
            n = seen - last if seen > last else seen
            if n:
                self.samples.append((t, int(n), "keras"))
            self.replicas = max(self.replicas, int(runner.replication_factor))

    @_guarded
    def poptorch_call(self, model, begin, end, out, args) -> None:
        s, r, _ = model._factors()
        training = bool(model.training)
        kind = "poptorch training" if training else "poptorch inference"
        for rep in range(r):
            self.spans.append(Span(f"replica {rep}", rep, r, begin - self.start,
                                   end - self.start, kind))
        with self._lock:
            self.executions += 1
        if not training:
            return
        self.replicas = max(self.replicas, r)
        self.steps += s
        leaves = _tensors(out)
        if leaves:
            value = _mean(leaves[-1])
            if value is not None:
                self.losses.append((self.steps, end - self.start, value, "poptorch"))
        batch = next((t for t in _tensors(list(args)) if t.dim()), None)
        if batch is not None:
            self.samples.append((end - self.start, int(batch.shape[0]), "poptorch"))


def _tensors(x) -> list:
    """The torch tensors in a nest of tuples, lists and dicts, in order."""
    if hasattr(x, "detach") and hasattr(x, "dim"):
        return [x]
    if isinstance(x, dict):
        return [t for k in x for t in _tensors(x[k])]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []
