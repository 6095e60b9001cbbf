"""OpenBLAS's idle worker threads stop spinning soon after a threaded product once ipu_gpu is
imported (``kernels/_blas.limit_thread_spin``), and every product keeps its bits. Each case
runs in a fresh process: OpenBLAS reads its environment when numpy loads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ipu_gpu.kernels import _blas

_PRODUCTS = textwrap.dedent("""
    import hashlib, json, os, sys, time
    import numpy as np
    if sys.argv[1] == "ipu_gpu":
        import ipu_gpu  # after numpy, as most scripts import them
    rng = np.random.default_rng(7)
    digest = hashlib.sha256()
    # products OpenBLAS threads (m*n*k over 4 * 65536), dense-layer shapes, both dtypes,
    # every transpose, with idle gaps between them (the threads go to sleep and wake again)
    for dtype in (np.float32, np.float64):
        for m, k, n in ((256, 1600, 10), (256, 784, 512), (512, 256, 10), (100, 100, 100)):
            for ta in (False, True):
                for tb in (False, True):
                    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
                    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
                    digest.update((a.T if ta else a) @ (b.T if tb else b))
                    time.sleep(0.001)
    a = rng.standard_normal((256, 1600), dtype=np.float32)
    b = rng.standard_normal((1600, 10), dtype=np.float32)
    for _ in range(3):
        a @ b
    busy = time.process_time()
    for _ in range(20):  # a threaded product, then 10 ms idle
        a @ b
        time.sleep(0.01)
    busy = time.process_time() - busy
    limited = sys.argv[1] == "ipu_gpu" and ipu_gpu.kernels._blas.limit_thread_spin()
    print(json.dumps({"digest": digest.hexdigest(), "busy": busy,
                      "timeout": os.environ.get("OPENBLAS_THREAD_TIMEOUT"),
                      "limited": limited}))
""")


def _run(mode, **env_extra):
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    env.update(OPENBLAS_NUM_THREADS="2", **env_extra)
    done = subprocess.run([sys.executable, "-c", _PRODUCTS, mode], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _pthreads_openblas():
    lib = _blas.numpy_blas_library()
    get = lib is not None and _blas._openblas_symbol(lib, "get_parallel")
    if not get or getattr(lib, "blas_thread_shutdown_", None) is None:
        pytest.skip("numpy's BLAS is not a pthreads OpenBLAS")
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two cores for OpenBLAS to thread a product")


def test_products_keep_their_bits_and_idle_threads_stop_spinning():
    _pthreads_openblas()
    plain = _run("numpy")  # numpy alone: OpenBLAS's default timeout
    ours = _run("ipu_gpu")
    assert ours["limited"] and ours["timeout"] == str(_blas.THREAD_TIMEOUT)
    assert ours["digest"] == plain["digest"]  # the same bits, product for product
    # 20 idle gaps of 10 ms: a worker spinning through them would burn ~0.2 s of CPU; one
    # that sleeps within microseconds leaves the products' own time (~20 x 0.3 ms).
    assert ours["busy"] < 0.1, ours
    assert plain["timeout"] is None and not plain["limited"]


def test_a_timeout_the_user_set_is_left_alone():
    _pthreads_openblas()
    mine = _run("ipu_gpu", OPENBLAS_THREAD_TIMEOUT="20")
    assert not mine["limited"] and mine["timeout"] == "20"
