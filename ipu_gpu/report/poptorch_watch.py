"""What a run report records of one PopTorch call (``Recorder.poptorch_running``).

Stages: each micro-batch's forward starts on the IPU of the blocks before the first block
(IPU 0, stage 0), and each ``poptorch.Block``/``BeginBlock`` entered at run time
(``blocks.set_run_listener``) starts the span of its stage on its IPU, found in the compile's
placement (``executor._placement_record``); in training the backward pass, gradient
reduction included, which the emulator runs for all stages at once, is one span on the last
stage's IPU. Micro-batches run in the executor's order (device iteration, accumulation step,
replica), so the k-th of a call is replica ``k % R``'s; replica r's IPU i is the emulated IPU
``r * (IPUs per replica) + i``.

Memory per IPU of each replica: the parameters and buffers the placement reads there
(``Placement.weights``), in training their gradients (the accumulators PopTorch keeps) and
the optimizer's state of those parameters; and the activations of a micro-batch, the tensors
autograd saves for the backward pass (``torch.autograd.graph.saved_tensors_hooks``, weights
left out) charged to the IPU of the stage that saved them, the peak over the call's
micro-batches. The emulator runs micro-batches one at a time: a real pipeline holds the
activations of several micro-batches in flight, which this does not count.
"""

from __future__ import annotations

import time

import torch

from ..emulation import topology
from ..poptorch import blocks

IPU_MEMORY = topology.version_info("ipu2")["memory_bytes"]  # PopTorch's IPUs: Mk2


class _Ipu:
    """What ``Recorder.stage`` takes: an emulated IPU's id and capacity."""

    def __init__(self, ipu_id):
        self.id = ipu_id
        self.memory = self
        self.capacity = IPU_MEMORY


def _tensor_bytes(t) -> int:
    return int(t.numel()) * int(t.element_size())


class CallWatch:
    """A context around one call: records its stage spans and memory in ``rec``."""

    def __init__(self, rec, executor):
        self.rec = rec
        self.executor = executor
        s, r, a = executor._factors()
        self.replicas = r
        self.training = bool(executor.training)
        placement = executor.__dict__.get("_placement_record")
        self.blocks = list(placement.blocks) if placement is not None else []
        self.weights = dict(placement.weights) if placement is not None else {}
        used = {b.ipu for b in self.blocks} | set(self.weights) | {0}
        n = int(placement.num_ipus) if placement is not None else r
        self.per_replica = max(max(used) + 1, n // r if n >= r else 1)
        self.first = self.blocks[0] if self.blocks else None
        self.last_ipu = max((b.stage, b.ipu) for b in self.blocks)[1] if self.blocks else 0
        self.last_stage = max((b.stage for b in self.blocks), default=0)
        self.k = -1  # the micro-batch running
        self.open = None  # (ipu, stage, phase, begin) of the span running
        self.autos = 0
        self.weight_ptrs = set()
        self.saved: dict = {}  # IPU within the replica -> bytes of this micro-batch
        self.peaks: dict = {}  # (replica, IPU within the replica) -> peak bytes
        self.handles = []
        self.saving = None

    # ---- spans ----------------------------------------------------------------------------
    def _place(self, user_id, ipu_id):
        """(IPU within the replica, stage) of a block begun with these arguments."""
        if user_id is not None:
            for b in self.blocks:
                if b.user_id == str(user_id) and (ipu_id is None or b.ipu == ipu_id):
                    return b.ipu, b.stage
        if ipu_id is not None:
            stage = next((b.stage for b in self.blocks if b.ipu == ipu_id), ipu_id)
            return ipu_id, stage
        named = [b for b in self.blocks if b.user_id is not None]
        if self.autos < len(named):
            b = named[self.autos]
            self.autos += 1
            return b.ipu, b.stage
        return 0, 0

    def _start(self, ipu, stage, phase) -> None:
        if self.open is not None and self.open[:3] == (ipu, stage, phase):
            return  # the same stage goes on (the first block of a forward, say)
        self._close()
        self.open = (ipu, stage, phase, time.perf_counter())

    def _close(self) -> None:
        if self.open is None:
            return
        ipu, stage, phase, begin = self.open
        self.open = None
        replica = self.k % self.replicas
        self.rec.stage(_Ipu(replica * self.per_replica + ipu), replica, self.replicas, stage,
                       phase, begin, time.perf_counter(), ())

    def begin(self, user_id, ipu_id) -> None:  # blocks' run listener
        try:
            ipu, stage = self._place(user_id, ipu_id)
            self.current = ipu
            self._start(ipu, stage, "forward")
        except Exception as e:  # noqa: BLE001 - a report never breaks the run
            self.rec.errors.append(f"poptorch block: {type(e).__name__}: {e}")

    def end(self) -> None:
        pass  # ops after a Block's scope belong to no block: the span runs on to the next

    def _forward_begins(self, module, inputs) -> None:
        self._close()
        self._micro_batch_done()
        self.k += 1
        self.autos = 0
        first = self.first
        ipu, stage = (first.ipu, first.stage) if first is not None else (0, 0)
        self.current = ipu
        self._start(ipu, stage, "forward")

    def _forward_ends(self, module, inputs, output) -> None:
        if self.training:
            self._start(self.last_ipu, self.last_stage, "backward")
        else:
            self._close()

    # ---- activations ----------------------------------------------------------------------
    def _pack(self, t):
        try:
            if t.data_ptr() not in self.weight_ptrs:
                ipu = getattr(self, "current", 0)
                self.saved[ipu] = self.saved.get(ipu, 0) + _tensor_bytes(t)
        except Exception as e:  # noqa: BLE001
            self.rec.errors.append(f"poptorch activations: {type(e).__name__}: {e}")
        return t

    @staticmethod
    def _unpack(t):
        return t

    def _micro_batch_done(self) -> None:
        if self.k < 0:
            return
        replica = self.k % self.replicas
        for ipu, nbytes in self.saved.items():
            key = (replica, ipu)
            self.peaks[key] = max(self.peaks.get(key, 0), nbytes)
        self.saved = {}

    # ---- the call -------------------------------------------------------------------------
    def __enter__(self):
        model = self.executor.model
        self.weight_ptrs = {t.data_ptr() for t in model.parameters()}
        self.weight_ptrs |= {t.data_ptr() for t in model.buffers()}
        self.handles = [model.register_forward_pre_hook(self._forward_begins),
                        model.register_forward_hook(self._forward_ends)]
        blocks.set_run_listener(self)
        if self.training:
            self.saving = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
            self.saving.__enter__()
        self.begin_time = time.perf_counter()
        return self

    def __exit__(self, *exc):
        end = time.perf_counter()
        if self.saving is not None:
            self.saving.__exit__(*exc)
        blocks.set_run_listener(None)
        for h in self.handles:
            h.remove()
        self._close()
        self._micro_batch_done()
        try:
            self._record_memory(end)
        except Exception as e:  # noqa: BLE001
            self.rec.errors.append(f"poptorch memory: {type(e).__name__}: {e}")

    def _record_memory(self, end) -> None:
        rec = self.rec
        model = self.executor.model
        names = {}
        for name, p in model.named_parameters():
            names.setdefault(name, ("parameter", p))
        for name, b in model.named_buffers():
            names.setdefault(name, ("buffer", b))
        state = getattr(getattr(self.executor, "optimizer", None), "state", {}) or {}
        per_ipu: dict = {}
        weights = self.weights or {0: list(names)}
        for ipu, listed in weights.items():
            labels = per_ipu.setdefault(ipu, {})
            for name in listed:
                kind, t = names.get(name, (None, None))
                if t is None:
                    continue
                nbytes = _tensor_bytes(t)
                labels["parameters"] = labels.get("parameters", 0) + nbytes
                if self.training and kind == "parameter" and t.requires_grad:
                    labels["gradients"] = labels.get("gradients", 0) + nbytes
                    st = state.get(t, {}) if hasattr(state, "get") else {}
                    opt_bytes = sum(_tensor_bytes(v) for v in st.values()
                                    if isinstance(v, torch.Tensor))
                    labels["optimizer state"] = labels.get("optimizer state", 0) + opt_bytes
        begin = self.begin_time - rec.start
        for replica in range(self.replicas):
            for ipu in sorted(set(per_ipu) | {i for r, i in self.peaks if r == replica}):
                ipu_id = replica * self.per_replica + ipu
                held = rec.poptorch_resident.setdefault(ipu_id, {})
                for label, nbytes in per_ipu.get(ipu, {}).items():
                    held[label] = max(held.get(label, 0), nbytes)
                rec.capacity[ipu_id] = IPU_MEMORY
                peak = self.peaks.get((replica, ipu), 0)
                rec.memory.append(rec.sample(ipu_id, IPU_MEMORY, begin, end - rec.start,
                                             0, peak))
