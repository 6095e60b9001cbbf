"""Every threaded CPU kernel gives bitwise the same results for any Numba thread count (1, 2
and 3), from run to run and whatever its buffers' alignment — also with the OpenBLAS kernels
an AMD CPU gets (OPENBLAS_CORETYPE=Zen or Haswell), under which conv2d's GEMMs once gave
different bits for different thread counts. tests/determinism_probe.py runs the workloads;
each setting runs it in a fresh process, since both variables are read at start-up.
OpenBLAS's own thread count is the CPU count in all those runs; ipu_gpu's GEMMs
(``kernels/matmul_cpu``) give the same bits under 1 and 2 OpenBLAS threads too (numpy's
threaded GEMM does not on OpenBLAS's Haswell/Zen kernels): the test of OpenBLAS thread
counts below."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import blas_thread_count_reader

from ipu_gpu.kernels import _blas, conv_cpu

PROBE = Path(__file__).with_name("determinism_probe.py")
THREAD_COUNTS = (1, 2, 3)


def _probe(threads: int, coretype: str | None, *names: str, **env_extra: str) -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads))
    env.pop("OPENBLAS_CORETYPE", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    env.update(env_extra)
    done = subprocess.run([sys.executable, str(PROBE), *names], env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _cpu_runs_avx2() -> bool:
    """Whether OpenBLAS's Haswell/Zen kernels can run here (numpy's own CPU detection)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__
    return bool(__cpu_features__.get("AVX2")) and bool(__cpu_features__.get("FMA3"))


@pytest.mark.parametrize("coretype", [None, "Haswell", "Zen"])
def test_threaded_kernels_are_bitwise_deterministic(coretype):
    if coretype and not _cpu_runs_avx2():
        pytest.skip(f"OpenBLAS's {coretype} kernels need AVX2 and FMA, which this CPU lacks")
    runs = {t: _probe(t, coretype) for t in THREAD_COUNTS}
    unstable = {(t, k): v for t, r in runs.items() for k, v in r.items()
                if v.startswith("unstable")}
    assert not unstable, f"results changed between two runs in one process: {unstable}"
    names = runs[1].keys()
    differ = {k: [runs[t][k] for t in THREAD_COUNTS] for k in names
              if len({runs[t][k] for t in THREAD_COUNTS}) > 1}
    assert not differ, f"results depend on the thread count {THREAD_COUNTS}: {differ}"
    assert len(names) >= 19  # every family with a threaded kernel is in the probe


# GEMMs numpy would run on OpenBLAS's threads
BLAS_DEPENDENT = ("matmul", "matmul_f64_batched", "serialized_matmul")


def test_plain_matmul_is_bitwise_the_same_for_any_openblas_thread_count():
    if not _cpu_runs_avx2():
        pytest.skip("OpenBLAS's Haswell kernels need AVX2 and FMA, which this CPU lacks")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("OpenBLAS runs at most one thread per CPU: one CPU here")
    runs = {t: _probe(1, "Haswell", *BLAS_DEPENDENT, OPENBLAS_NUM_THREADS=str(t))
            for t in (1, 2, 3)}
    assert runs[1] == runs[2] == runs[3]


def test_probe_digests_catch_a_single_changed_bit():
    sys.path.insert(0, str(PROBE.parent))
    try:
        import determinism_probe as probe
    finally:
        sys.path.remove(str(PROBE.parent))
    a = np.arange(6, dtype=np.float32)
    b = a.copy()
    b.view(np.uint32)[3] ^= 1
    assert probe._digest([a]) != probe._digest([b])
    assert probe._digest([a, None]) == probe._digest([a.copy(), None])
    shifted = probe._shifted(a, 4)
    assert shifted.ctypes.data % 64 == 4 and np.array_equal(shifted, a)


def test_single_threaded_blas_sections_overlap_across_threads():
    count = blas_thread_count_reader()
    before = count()
    entered, release = threading.Event(), threading.Event()

    def other():
        with _blas.single_threaded_blas():
            entered.set()
            release.wait(10)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert entered.wait(10)
        with _blas.single_threaded_blas():
            assert count() == 1
        assert count() == 1  # the other thread's section is still open
    finally:
        release.set()
        t.join(10)
    assert count() == before


def test_every_conv_gemm_runs_with_blas_on_one_thread(monkeypatch):
    """The thread count OpenBLAS sees inside each block is 1, with one Numba thread too
    (a one-thread run once let OpenBLAS thread the GEMMs, which changes their bits)."""
    blas_threads = blas_thread_count_reader()
    seen = []
    original = conv_cpu.run_blocks

    def spying(nblocks, work):
        def spy(b):
            seen.append(blas_threads())
            work(b)

        original(nblocks, spy)

    monkeypatch.setattr(conv_cpu, "run_blocks", spying)
    monkeypatch.setattr(conv_cpu, "num_threads", lambda: 1)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 12, 12, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 8)).astype(np.float32)
    out = np.empty((2, 12, 12, 8), np.float32)
    conv_cpu.conv2d_fwd(x, w, (1, 1), (1, 1), ((1, 1), (1, 1)), 1, out)
    dx, dw = np.empty_like(x), np.empty_like(w)
    conv_cpu.conv2d_bwd(x, w, out, (1, 1), (1, 1), ((1, 1), (1, 1)), 1, dx, dw)
    assert seen and set(seen) == {1}
