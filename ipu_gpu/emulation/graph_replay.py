"""``loops.repeat`` on the GPU, captured once as a CUDA graph and replayed: the IPU compiles a
loop once and runs it many times, and so does the emulator where it can.

When: inside an emulated program (a replica running on a GPU executor's own stream), every
loop value on the device, no GradientTape recording in the replica's thread, at least two
iterations, and ``IPU_GPU_LOOP_GRAPHS`` not ``0``. Otherwise the loop runs eagerly.

How (the static-buffer pattern of ``torch.cuda.graphs``):

1. Iteration 0 runs eagerly under a recorder (``core/capture.py``): kernels compile, cuBLAS
   handles and the memory pool warm up, and anything a replay could not repeat (a host read
   of a device tensor, a stateful random op, an outfeed enqueue, a cross-replica exchange)
   is noted; then the whole loop runs eagerly.
2. The loop values and the next infeed element are copied into static buffers, and
   iteration 1 is captured on the replica's stream (relaxed mode, so other threads' work is
   not disturbed), every allocation kept alive while the graph lives (it owns those
   addresses). The capture ends with copies of the body's outputs into the static values
   and, for each variable the body gave a new buffer, of that buffer into the one the next
   iteration reads (the variable keeps that one).
3. The graph is launched for iterations 1..n-1; before each launch the next infeed element is
   copied into the static element buffers.

A capture that fails (the body raises, a refusal above, cupy refusing a cuBLAS or cuDNN call
or a host copy on a capturing stream) is abandoned: variables get their buffers back and
iteration 1 onwards runs eagerly with the element already taken. The kernels and their order
are the same on both paths, so are the numbers, bit for bit. GEMMs are captured because the
matmul op calls cuBLAS directly (``kernels/cublas_gpu.py``); convolutions and
serialized_matmul still go through cupy's cuBLAS/cuDNN and make a loop run eagerly.
``last_loop()`` tells which path the calling thread's last ``repeat`` took, and why.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass

from ..core import backend, capture, nest, tape
from ..core.tensor import Tensor, wrap
from . import context

__all__ = ["LoopReport", "enabled", "last_loop", "repeat"]

_ENV = "IPU_GPU_LOOP_GRAPHS"


@dataclass(frozen=True)
class LoopReport:
    """How one ``loops.repeat`` ran: ``captured`` (replayed from a CUDA graph) or not, and
    ``reason`` when not."""

    iterations: int
    captured: bool
    reason: str | None = None


_local = threading.local()


def last_loop() -> LoopReport | None:
    """The report of the calling thread's last ``repeat`` (None before the first)."""
    return getattr(_local, "report", None)


def enabled() -> bool:
    """False when ``IPU_GPU_LOOP_GRAPHS`` is 0/false/off/no."""
    return os.environ.get(_ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def _array(x):
    return x._value if isinstance(x, Tensor) else x


def _where_not(values) -> str | None:
    """Why a loop cannot be captured where it runs, or None when it can be."""
    if not enabled():
        return f"{_ENV}=0"
    ctx = context.current()
    if ctx is None:
        return "not inside an IPU program (the host's stream cannot be captured)"
    if getattr(ctx.ipus[0].executor, "kind", "cpu") != "gpu":
        return "the IPU runs on a CPU executor"
    if any(not backend.is_cupy_array(v._value) for v in values):
        return "the loop values are not on the GPU"
    if tape.recording_tapes():
        return "a GradientTape is recording the loop"
    cupy = sys.modules["cupy"]
    if cupy.cuda.get_current_stream().ptr == 0:
        return "the replica runs on the default stream"
    return None


class _Keeper:
    """The allocator while capturing: every block stays allocated until the graph dies."""

    def __init__(self, cupy):
        self.pool_malloc = cupy.get_default_memory_pool().malloc
        self.blocks: list = []

    def malloc(self, nbytes):
        p = self.pool_malloc(nbytes)
        self.blocks.append(p)
        return p


def _copy_outputs(cupy, outs, statics) -> None:
    """statics[i] <- outs[i] (in the capture), through temporaries when an output overlaps
    another loop value's buffer (a body returning ``(b, a)``)."""
    pairs = [(o, s) for o, s in zip(outs, statics) if o is not s]
    overlapping = any(cupy.may_share_memory(o, s2) for o, _ in pairs for s2 in statics)
    if overlapping:
        pairs = [(o.copy(), s) for o, s in pairs]
    for o, s in pairs:
        cupy.copyto(s, o)


def _end_capture_quietly(stream) -> None:
    try:
        stream.end_capture()
    except Exception:  # noqa: BLE001 - the capture is being abandoned
        pass


def _capture(cupy, stream, apply, statics, element):
    """The graph of one iteration, or (None, reason)."""
    keeper = _Keeper(cupy)
    rec = None
    try:
        with cupy.cuda.using_allocator(keeper.malloc), capture.recording(True) as rec:
            stream.begin_capture(mode=cupy.cuda.runtime.streamCaptureModeRelaxed)
            try:
                outs = apply([wrap(a) for a in statics], element)
                _copy_outputs(cupy, [o._value for o in outs], statics)
                for var, before in rec.writes.values():
                    if var._value is not before:
                        cupy.copyto(before, var._value)
                        var._value = before
            except BaseException:
                _end_capture_quietly(stream)
                raise
            graph = stream.end_capture()
        return (graph, keeper), None
    except Exception as e:  # noqa: BLE001 - any failure means: run eagerly
        if rec is not None:
            rec.restore_variables()
        return None, f"capture failed: {type(e).__name__}: {e}"


def repeat(n: int, values: list, fetch, apply, check_cancelled) -> list:
    """Run ``values = apply(values, fetch())`` ``n`` times (fetch returns the iteration's infeed
    element, or None), replayed from a CUDA graph where possible (module doc)."""
    reason = _where_not(values) if n >= 2 else "fewer than 2 iterations"
    if reason is not None:
        return _eager(n, 0, values, fetch, apply, check_cancelled, reason)
    check_cancelled()
    with capture.recording() as rec:
        values = apply(values, fetch())
    if rec.refusals:
        return _eager(n, 1, values, fetch, apply, check_cancelled,
                      f"the body does what a replay cannot: {rec.refusals[0]}")
    element = fetch()
    leaves = nest.flatten(element) if element is not None else []
    if any(not backend.is_cupy_array(_array(x)) for x in leaves):
        return _eager(n, 1, values, fetch, apply, check_cancelled,
                      "the infeed element is not on the GPU", element)
    cupy = sys.modules["cupy"]
    stream = cupy.cuda.get_current_stream()
    statics = [cupy.array(v._value, copy=True) for v in values]
    feed = [cupy.array(_array(x), copy=True) for x in leaves]
    static_element = (None if element is None
                      else nest.pack_sequence_as(element, [wrap(a) for a in feed]))
    graph, reason = _capture(cupy, stream, apply, statics, static_element)
    if graph is None:
        return _eager(n, 1, values, fetch, apply, check_cancelled, reason, element)
    graph, keeper = graph
    for i in range(1, n):
        if i > 1 and feed:
            for dst, src in zip(feed, nest.flatten(fetch())):
                cupy.copyto(dst, _array(src))
        check_cancelled()
        graph.launch(stream=stream)
    stream.synchronize()  # the graph and the blocks it owns are released after its last run
    del graph, keeper
    _local.report = LoopReport(n, True)
    return [wrap(a) for a in statics]


_NOT_TAKEN = object()


def _eager(n, done, values, fetch, apply, check_cancelled, reason, element=_NOT_TAKEN):
    for i in range(done, n):
        check_cancelled()
        values = apply(values, fetch() if element is _NOT_TAKEN or i > done else element)
    _local.report = LoopReport(n, False, reason)
    return values
