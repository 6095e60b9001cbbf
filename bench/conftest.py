"""Shared set-up for the benchmarks in bench/ (run by ``make bench``).

* Thread counts: torch's intra-op pool, Numba's prange pool and TF's pools all get
  ``os.cpu_count()`` threads, so two libraries in one process do not oversubscribe the
  cores (perf_anchors.md section 8).
* Seeds are fixed; every test builds its inputs from ``rng()`` so each implementation in a
  group sees the same arrays.
* ``impl`` parametrizes a test over the implementations: ipu_gpu, numpy, torch and
  tensorflow on the CPU, and ipu_gpu on cupy, torch CUDA and raw cupy on a GPU. Rows whose
  library is missing (torch, tensorflow, cupy, a GPU) are skipped, not failed.
* ``run`` checks a result against numpy, then times the function with
  ``benchmark.pedantic`` after warm-up calls (JIT compile and first-touch allocation are
  excluded) and records machine facts and sizes in ``benchmark.extra_info``.

With ``--benchmark-disable`` (the pyproject default) every test runs once as a plain
correctness test: ``python -m pytest bench -q``.
"""

from __future__ import annotations

import statistics
import time

import pytest
from benchutil import GPU_IMPLS, OURS, TARGET_SECONDS, machine_facts, peers, require

import ipu_gpu


def _sync_for(impl):
    p = peers()
    if impl in ("ipu_gpu_cupy", "cupy") and p.cupy is not None:
        return p.cupy.cuda.get_current_stream().synchronize
    if impl == "torch_cuda":
        return p.torch.cuda.synchronize
    return None


PAIR_BLOCK_SECONDS = 0.1  # work per block when a peer is interleaved (see ``run``)
PAIR_SETTLE_SECONDS = 0.1  # idle time at each switch, for spinning worker threads to sleep


def _paired_setup(paired, warmup, one, rounds, block_seconds=None):
    """(setup, peer_times, rounds) for ``run(..., paired=...)``: ``setup`` runs and times a
    block of peer calls before every block of ours, with a settle pause on both sides.
    A block holds about PAIR_BLOCK_SECONDS of calls, at least 2; with ``block_seconds``,
    about that much, at least 1 (calls that long alternate one by one)."""
    peer_impl, peer_fn = paired
    peer_sync = _sync_for(peer_impl)
    peer = peer_fn if peer_sync is None else (lambda: (peer_fn(), peer_sync()))
    for _ in range(warmup):
        peer()
    if block_seconds is None:
        block = max(2, int(PAIR_BLOCK_SECONDS / one))
    else:
        block = max(1, int(block_seconds / one))
    peer_times, calls = [], [0]

    def setup():
        calls[0] += 1
        if calls[0] % block != 1 and block > 1:
            return
        time.sleep(PAIR_SETTLE_SECONDS)
        for _ in range(block):
            t = time.perf_counter()
            peer()
            peer_times.append(time.perf_counter() - t)
        time.sleep(PAIR_SETTLE_SECONDS)

    return setup, peer_times, max(rounds, 3 * block)

peers()  # import torch/tensorflow now, so their thread pools start with our settings


@pytest.fixture
def ipu_backend(request):
    """Skip the row if ``impl``'s library or device is missing; else point ipu_gpu's default
    backend at the device the test's ``impl`` runs on."""
    callspec = getattr(request.node, "callspec", None)
    impl = callspec.params.get("impl", "") if callspec else ""
    require(impl)  # skips rows whose library or device is missing
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("gpu" if impl == "ipu_gpu_cupy" else "cpu")
    yield
    ipu_gpu.set_backend(previous)


@pytest.fixture
def run(benchmark, request):
    """``run(fn, impl=..., sizes={...}, paired=None)``: warm ``fn`` up and time it.

    ``fn`` takes no arguments. On a GPU, the timed call includes a device synchronise.
    Rounds are chosen from one warm call so each row takes about BENCH_SECONDS (default
    1 s) of timed work, between ``min_rounds`` (default 7) and 1000 rounds: rows of 100 ms
    calls and more need more than 7 rounds for a median that repeats run to run.

    ``paired=(peer_impl, peer_fn)`` interleaves the peer with ``fn`` in blocks of about
    ``PAIR_BLOCK_SECONDS`` of calls each (peer block, fn block, peer block, ...: the peer
    runs in pytest-benchmark's untimed ``setup`` at the start of each of our blocks and is
    timed here) and stores the peer's median in ``extra_info["paired"]``, so the ratio of
    the two does not depend on the machine's load drifting between rows (perf_anchors.md
    section 9). Each switch first sleeps ``PAIR_SETTLE_SECONDS``: the worker threads of one
    library (OpenBLAS, OpenMP) keep spinning after its call, and when calls alternated one
    by one they slowed the other library by 2-7x. bench/report.py prefers this ratio.
    ``pair_block_seconds`` sets the block length instead (a block then holds at least one
    call, not two): blocks of single calls keep long calls' pairs close in time.
    """
    def _run(fn, *, impl, sizes, warmup=3, group_note=None, paired=None, min_rounds=7,
             pair_block_seconds=None):
        sync = _sync_for(impl)
        timed = fn if sync is None else (lambda: (fn(), sync()))
        if not benchmark.enabled:  # --benchmark-disable: one plain call, a correctness run
            return benchmark.pedantic(timed, rounds=1, iterations=1)
        for _ in range(warmup):  # JIT compile, caches, allocator: all outside the timing
            timed()
        t0 = time.perf_counter()
        timed()
        one = max(time.perf_counter() - t0, 1e-6)
        rounds = int(min(1000, max(min_rounds, TARGET_SECONDS / one)))
        setup, peer_times = None, []
        if paired is not None:
            setup, peer_times, rounds = _paired_setup(paired, warmup, one, rounds,
                                                      pair_block_seconds)
        benchmark.extra_info.update(machine_facts())
        benchmark.extra_info.update({"impl": impl, "ours": impl in OURS,
                                     "device": "gpu" if impl in GPU_IMPLS else "cpu",
                                     "sizes": sizes})
        if group_note:
            benchmark.extra_info["note"] = group_note
        result = benchmark.pedantic(timed, setup=setup, rounds=rounds, iterations=1,
                                    warmup_rounds=1)
        if peer_times:
            benchmark.extra_info["paired"] = {"impl": paired[0], "rounds": len(peer_times),
                                              "median": statistics.median(peer_times)}
        return result
    return _run
