"""Per-iteration overhead of ``loops.repeat`` with an empty body (target: < 50 us per
iteration on a CPU).

* ``host``: ``loops.repeat`` called directly (no program);
* ``compiled_R1`` / ``compiled_R4``: ``ipu_compiler.compile`` of a program holding the loop on
  a 1-IPU / 4-IPU device (4 replicas, each looping on its own worker thread), so the timing
  includes starting the program's replicas once per call.

A call runs N iterations; ``extra_info["per_iteration_us"]`` is the mean time per iteration
of the timed rounds (bench/README.md reports it). Only ipu_gpu rows: no peer has this API. On a
GPU (``ipu_gpu_cupy``) the compiled loops are replayed from a CUDA graph
(``emulation/graph_replay.py``; target: < 10 us per iteration); the host loop runs eagerly.
"""

from __future__ import annotations

import pytest

import ipu_gpu
from ipu_gpu.emulation import system
from ipu_gpu.ipu import config, ipu_compiler, loops, scopes

N = 10_000
CASES = {"host": 0, "compiled_R1": 1, "compiled_R4": 4}


def _empty_body():
    return None


def _carry_body(x):
    return x


def _cases():
    for c in CASES:
        for carried, what in ((False, "empty"), (True, "one_value")):
            yield pytest.param(c, carried, id=f"{c}-{what}", marks=pytest.mark.benchmark(
                group=f"loops_repeat-{c}-{what}"))


@pytest.mark.parametrize("impl", ["ipu_gpu", pytest.param("ipu_gpu_cupy", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("case,carried", list(_cases()))
def test_repeat_overhead(run, ipu_backend, benchmark, case, carried, impl):
    n_ipus = CASES[case]
    system.reset()
    if n_ipus:
        cfg = config.IPUConfig()
        cfg.auto_select_ipus = n_ipus
        cfg.configure_ipu_system()
    x0 = ipu_gpu.constant(0.0)

    def loop():
        if carried:
            return loops.repeat(N, _carry_body, [x0])
        return loops.repeat(N, _empty_body)

    if n_ipus:
        def fn():
            with scopes.ipu_scope("/device:IPU:0"):
                return ipu_compiler.compile(loop)
    else:
        fn = loop
    try:
        run(fn, impl=impl, sizes={"iterations": N, "replicas": max(n_ipus, 1),
                                  "carried_values": int(carried)})
        stats = getattr(benchmark, "stats", None)
        if stats is not None and getattr(stats, "stats", None) is not None:
            benchmark.extra_info["per_iteration_us"] = stats.stats.mean / N * 1e6
    finally:
        system.reset()
