"""The run recorder: the observer ``ipu-gpu run --report`` installs in ``emulation.observe``.

It keeps, over the run (times are ``time.perf_counter`` seconds since the recorder started):

* ``spans``: one ``Span`` per replica execution on the emulated IPUs (the engine's runs; a
  PopTorch call, whose replicas run in turn on the host thread, is one span per replica);
* ``memory``: one ``MemorySample`` per execution and IPU ledger: bytes resident at its begin
  and the most resident during it, and the IPU's memory;
* ``losses``: ``(step, seconds, value, source)``, the training loss as the program sees it:
  Keras: ``logs['loss']`` after each execution of ``fit`` (the epoch's running mean, as
  Keras's progress bar shows it; ``execution_losses`` has each execution's own mean); TF 1:
  each step's loss dequeued from an outfeed (a dict key containing "loss", else a graph
  tensor whose name contains "loss", else an outfeed of one float scalar per step), and
  each graph tensor whose name contains "loss" that ``Session.run`` fetches (the replicas'
  mean); PopTorch: the last tensor a training model's
  call returns (the loss, as PopTorch models return it), averaged;
* ``execution_losses``: ``(step, seconds, value)``, Keras only: the mean loss of each ``fit``
  execution's own steps, from consecutive running means of one epoch: over its steps s..e,
  ``(m_e * e - m_s * s) / (e - s)`` (the steps counted from the epoch's start; Keras weighs
  each step alike, every replica's batch being the same size; the metrics' replica reduction
  applies to every step alike);
* ``samples``: ``(seconds, n, source)``, training samples consumed: Keras: the samples each
  ``fit`` execution took over all replicas; TF 1/TF 2 loops: the infeed elements dequeued
  inside replicas times their batch dimension, counted at the end of each run, and claimed
  as training samples when a loss is next recorded from an outfeed or a fetch (an
  inference loop's infeed is not training); PopTorch: the combined batch of each training
  call.

Every hook swallows its own errors (a report must never break the run it observes).
"""

from __future__ import annotations

import contextlib
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
    kind: str  # "engine", "stage", "poptorch training", "poptorch inference"
    stage: int = -1  # a pipeline stage's span: its index (-1: a whole execution)
    phase: str = ""  # "forward" or "backward" (a stage span)
    micro_batch: int = -1  # the replica's n-th span of this stage and phase in the run


class MemorySample(NamedTuple):
    ipu: int
    capacity: int
    begin: float
    end: float
    before: int  # bytes resident when the execution began
    peak: int  # the most bytes resident during it
    resident: int = 0  # of which variables and optimizer state (``Recorder.memory_samples``)


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
        self.execution_losses: list = []
        self._keras_means: dict = {}  # id(runner) -> (steps into the epoch, running mean)
        self.samples: list = []
        self.errors: list = []
        self.executions = 0
        self.steps = 0
        self.replicas = 1
        self._pending = 0  # infeed samples of the run in progress
        self._unclaimed: list = []  # indices in samples of infeed records no loss claimed
        self._lock = threading.Lock()
        self._keras_seen: dict = {}  # id(runner) -> runner.samples at its last execution
        self._micro: dict = {}  # (replica, stage, phase) -> stage spans so far
        self.variables: dict = {}  # IPU id -> {id(variable): variable} resident there
        self.capacity: dict = {}  # IPU id -> its memory in bytes
        self._optimizers: dict = {}  # id -> an optimizer whose slots are resident
        self._keras_placed: set = set()  # id(runner)s whose weights were placed
        self.poptorch_resident: dict = {}  # IPU id -> {label: bytes} (report.poptorch_watch)
        self._ran: dict = {}  # replica -> its IPUs in the latest engine run

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
        self._ran[replica] = ipus  # the IPUs a TF1 graph's variables live on
        for ledger, before, peak in peaks:
            self.memory.append(MemorySample(ledger.ipu_id, ledger.capacity, begin, end,
                                            before, max(peak, before)))
        if replicas > self.replicas:
            self.replicas = replicas

    @_guarded
    def stage(self, ipu, replica, replicas, index, phase, begin, end, owned) -> None:
        """A pipeline stage's forward (or the backward pass) of one micro-batch ran on
        ``ipu``; ``owned`` are the variables it read first (its weights)."""
        key = (replica, index, phase)
        with self._lock:
            n = self._micro.get(key, 0)
            self._micro[key] = n + 1
        self.spans.append(Span(f"IPU {ipu.id}", replica, replicas, begin - self.start,
                               end - self.start, "stage", index, phase, n))
        if owned:
            self.place(ipu.id, ipu.memory.capacity, owned)

    def place(self, ipu_id, capacity, variables) -> None:
        """``variables`` are resident on IPU ``ipu_id`` (one replica's copies)."""
        with self._lock:
            held = self.variables.setdefault(ipu_id, {})
            for v in variables:
                held.setdefault(id(v), v)
            self.capacity[ipu_id] = capacity

    @_guarded
    def optimizer(self, opt) -> None:
        """``opt``'s slots of the resident variables are resident beside them."""
        self._optimizers.setdefault(id(opt), opt)

    def resident(self) -> dict:
        """IPU id -> (variable bytes, optimizer slot bytes) of the variables placed on it,
        as they are now (an IPU holds its weights and optimizer state for the whole run)."""
        out = {}
        for ipu, held in self.variables.items():
            var_bytes = sum(_nbytes(v) for v in held.values())
            slot_bytes = sum(_slot_bytes(opt, held.values())
                             for opt in self._optimizers.values())
            out[ipu] = (var_bytes, slot_bytes)
        for ipu, labels in self.poptorch_resident.items():
            v, o = out.get(ipu, (0, 0))
            out[ipu] = (v + labels.get("parameters", 0),
                        o + labels.get("gradients", 0) + labels.get("optimizer state", 0))
        return out

    def memory_samples(self) -> list:
        """``memory`` with each IPU's resident variables and optimizer state added (the
        engine's ledger counts the tensors a program makes, not its variables)."""
        extra = {ipu: v + o for ipu, (v, o) in self.resident().items()}
        return [m._replace(before=m.before + extra.get(m.ipu, 0),
                           peak=m.peak + extra.get(m.ipu, 0), resident=extra.get(m.ipu, 0))
                for m in self.memory]

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
        ran, self._ran = self._ran, {}
        if ran:
            self._place_graph(tensors, ran)
        self._fetched_losses(tensors, values)

    @_guarded
    def _place_graph(self, tensors, ran) -> None:
        """A TF1 ``Session.run`` ran a program on the IPUs: its graph's global variables
        (optimizer slots included) are resident on each replica's IPU, when a replica is one
        IPU (a sharded program's variables could be on any of its shards)."""
        graph = next((g for g in (getattr(t, "graph", None) for t in tensors)
                      if g is not None and hasattr(g, "get_collection")), None)
        if graph is None or any(len(ipus) != 1 for ipus in ran.values()):
            return
        found = []
        for v in graph.get_collection("variables"):
            v = getattr(v, "_variable", v)  # a graph variable's value, once initialised
            if v is not None and hasattr(v, "_value"):
                found.append(v)
        for ipus in ran.values():
            self.place(ipus[0].id, ipus[0].memory.capacity, found)

    def _fetched_losses(self, tensors, values) -> None:
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
    def keras_execution(self, logs, steps, runner, first_step=None) -> None:
        """One ``fit`` execution of ``steps`` steps ended; ``first_step``: its first step's
        index in the epoch (0: the epoch began; None: counted on from the last one)."""
        t = self.now()
        self.steps += int(steps)
        loss = logs.get("loss") if isinstance(logs, dict) else None
        if loss is not None:
            value = _mean(loss)
            if value is not None:
                self.losses.append((self.steps, t, value, "keras"))
                self._keras_execution_loss(id(runner), int(steps), first_step, value, t)
        if runner is not None:
            if id(runner) not in self._keras_placed:
                self._keras_placed.add(id(runner))
                if hasattr(runner, "model"):
                    self._place_keras(runner)
            seen = runner.samples
            last = self._keras_seen.get(id(runner), 0)
            self._keras_seen[id(runner)] = seen
            # fit zeroes it at each epoch: an execution always consumes samples, so a count
            # that did not grow was reset
            n = seen - last if seen > last else seen
            if n:
                self.samples.append((t, int(n), "keras"))
            self.replicas = max(self.replicas, int(runner.replication_factor))

    def _keras_execution_loss(self, key, steps, first_step, mean, t) -> None:
        begun, before = self._keras_means.get(key, (0, 0.0))
        if first_step is not None and first_step != begun:
            begun, before = 0, 0.0  # a new epoch (the metrics were reset)
        end = begun + steps
        if steps > 0:
            own = (float(mean) * end - before * begun) / steps
            self.execution_losses.append((self.steps, t, own))
        self._keras_means[key] = (end, float(mean))

    sample = MemorySample

    def poptorch_running(self, model):
        """The context one PopTorch call runs in: its stage spans and memory
        (``report.poptorch_watch``)."""
        try:
            from .poptorch_watch import CallWatch

            watch = CallWatch(self, model)
        except Exception as e:  # noqa: BLE001 - a report never breaks the run
            self.errors.append(f"poptorch_running: {type(e).__name__}: {e}")
            return contextlib.nullcontext()
        self._watch = watch
        return watch

    @_guarded
    def poptorch_call(self, model, begin, end, out, args) -> None:
        s, r, _ = model._factors()
        training = bool(model.training)
        kind = "poptorch training" if training else "poptorch inference"
        watch, self._watch = getattr(self, "_watch", None), None
        for rep in range(r):
            if watch is not None:  # the call's span on each IPU of the replica
                used = sorted({b.ipu for b in watch.blocks} or {0})
                for ipu in used:
                    self.spans.append(Span(f"IPU {rep * watch.per_replica + ipu}", rep, r,
                                           begin - self.start, end - self.start, kind))
            else:
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


    @_guarded
    def _place_keras(self, runner) -> None:
        """A Keras model's weights on the IPU of their layer's stage in every replica
        (stage 0's IPU for an unpipelined model), its optimizer's slots beside them."""
        model = runner.model
        device = runner.strategy.extended._device()
        shards = device.replica_shards(runner.ipus_per_replica)
        by_shard: dict = {}
        if runner.pipeline:
            mapping = list(model._ipu_options.pipelining_device_mapping or [])
            _keras_stage_weights(runner.pipeline, mapping, by_shard)
        else:
            by_shard[0] = list(model.weights)
        for replica in shards:
            for shard, weights in by_shard.items():
                if shard < len(replica):
                    ipu = replica[shard]
                    self.place(ipu.id, ipu.memory.capacity, weights)
        opt = getattr(model, "optimizer", None)
        if opt is not None and runner.mode == "fit":
            self._optimizers.setdefault(id(opt), opt)


def _keras_stage_weights(assignment, mapping, by_shard) -> None:
    for a in assignment:
        if a.is_nested_model:
            _keras_stage_weights(a.pipeline_stage_assignments, mapping, by_shard)
            continue
        if a.pipeline_stage is None:
            continue
        stage = a.pipeline_stage
        shard = mapping[stage] if stage < len(mapping) else stage
        by_shard.setdefault(shard, []).extend(a.layer.weights)


def _nbytes(v) -> int:
    value = getattr(v, "_value", v)
    return int(getattr(value, "nbytes", 0))


def _slot_bytes(opt, variables) -> int:
    """The bytes of ``opt``'s slots (Keras OptimizerV2 / tf.compat.v1 optimizers:
    ``get_slot_names`` and ``get_slot``) of ``variables``."""
    names = getattr(opt, "get_slot_names", None)
    if names is None:
        return 0
    total = 0
    names = list(names())
    for v in variables:
        for name in names:
            try:
                slot = opt.get_slot(v, name)
            except (KeyError, ValueError, AttributeError):
                continue
            if slot is not None:
                total += _nbytes(slot)
    return total


def _tensors(x) -> list:
    """The torch tensors in a nest of tuples, lists and dicts, in order."""
    if hasattr(x, "detach") and hasattr(x, "dim"):
        return [x]
    if isinstance(x, dict):
        return [t for k in x for t in _tensors(x[k])]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []
