"""Forked children (tf.data / DataLoader workers) run the parallel CPU kernels after the parent
started Numba's GNU OpenMP layer: without kernels/_threads' fork hook Numba terminates such a
child at its first parallel region. The child runs serial twins instead, with the parent's
bits, whether the kernel's module was imported before the fork or in the child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ipu_gpu.kernels import _threads

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def kernel_bits():
    """sha256 of each parallel kernel family's output on inputs above its parallel threshold
    (one product of matmul_cpu's tiles, embedding gather and scatter-add, scatter_add_rows,
    histogram, sequence_slice, depthwise convolution forward and gradients, CTC loss and its
    gradient, CTC beam search)."""
    import hashlib

    import ipu_gpu as tf
    from ipu_gpu.kernels import (embedding_cpu, histogram_cpu, indexing_cpu, matmul_cpu,
                                 sequence_slice_cpu)
    from ipu_gpu.ops.ctc import ctc_loss_v2
    from ipu_gpu.ops.ctc_decoder import ctc_beam_search_decoder

    rng = np.random.default_rng(0)
    out = []

    def add(a):
        out.append(hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest())

    a = rng.standard_normal((256, 784)).astype(np.float32)
    b = rng.standard_normal((784, 512)).astype(np.float32)
    add(matmul_cpu.matmul(a, b))
    table = rng.standard_normal((4096, 64)).astype(np.float32)
    ids = rng.integers(0, 4096, 20000).astype(np.int32)
    add(embedding_cpu.embedding_fwd(table, ids, np.empty((20000, 64), np.float32)))
    grad = rng.standard_normal((20000, 64)).astype(np.float32)
    add(embedding_cpu.embedding_bwd(grad, ids, np.empty((4096, 64), np.float32), True))
    add(indexing_cpu.scatter_add_rows(grad, ids.astype(np.int64),
                                      np.zeros((4096, 64), np.float32)))
    x = rng.standard_normal(1 << 21).astype(np.float32)
    levels = np.sort(rng.standard_normal(31)).astype(np.float32)
    add(histogram_cpu.histogram_fwd(x, levels, False, np.zeros(32, np.float32)))
    src = rng.standard_normal((70000, 16)).astype(np.float32)
    counts = np.array([30000, 20000, 25000], np.int32)
    add(sequence_slice_cpu.sequence_slice_copy(
        np.empty((70000, 16), np.float32), None, src, counts,
        np.array([0, 35000, 40000], np.int32), np.array([1000, 33000, 44000], np.int32)))
    img = tf.constant(rng.standard_normal((4, 64, 64, 32)).astype(np.float32))
    filt = tf.constant(rng.standard_normal((3, 3, 32, 1)).astype(np.float32))
    with tf.GradientTape() as tape:
        tape.watch([img, filt])
        y = tf.nn.depthwise_conv2d(img, filt, [1, 1, 1, 1], "SAME")
    gx, gf = tape.gradient(y, [img, filt], output_gradients=tf.ones_like(y))
    for v in (y, gx, gf):
        add(v.numpy())
    logits = tf.constant(rng.standard_normal((200, 16, 40)).astype(np.float32))
    labels = tf.constant(rng.integers(1, 40, (16, 20)).astype(np.int32))
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = ctc_loss_v2(labels, logits, tf.fill([16], 20), tf.fill([16], 200), 0)
    add(loss.numpy())
    add(tape.gradient(loss, logits).numpy())
    scores = rng.standard_normal((200, 16, 700)).astype(np.float32)
    for v in ctc_beam_search_decoder(scores, np.full(16, 200, np.int32), beam_width=4):
        add(v.numpy())
    return out


def parallel_kernels_left():
    """Names of the parallel=True kernels still bound in the package's CPU kernel modules
    (all imported here)."""
    import importlib
    import pkgutil

    import ipu_gpu.kernels as pkg

    left = []
    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.endswith("_cpu") or info.name.startswith("_"):
            module = importlib.import_module(f"ipu_gpu.kernels.{info.name}")
            left += [f"{info.name}.{n}" for n, v in vars(module).items()
                     if _threads.is_parallel_kernel(v)]
    return left


_SCRIPT = textwrap.dedent("""
    import json, multiprocessing, os, sys
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    from ipu_gpu.kernels import matmul_cpu, _threads
    from fork_child import in_child
    from test_fork_parallel_kernels import kernel_bits, parallel_kernels_left

    # the parent starts the OpenMP layer with one kernel family only: the child imports the
    # others after the fork
    rng = np.random.default_rng(1)
    matmul_cpu.matmul(rng.standard_normal((512, 512)), rng.standard_normal((512, 512)))
    loaded = [m for m in ("embedding_cpu", "histogram_cpu", "ctc_cpu", "conv_cpu")
              if "ipu_gpu.kernels." + m in sys.modules]
    late, late_status = in_child(lambda: [kernel_bits(), parallel_kernels_left(),
                                          _threads.serial_only()])
    parent = kernel_bits()
    early, early_status = in_child(lambda: [kernel_bits(), parallel_kernels_left(),
                                            _threads.serial_only()])
    with multiprocessing.get_context("fork").Pool(1) as pool:
        pooled = pool.apply(kernel_bits)
    print(json.dumps({"parent": parent, "late": late, "late_status": late_status,
                      "early": early, "early_status": early_status, "pooled": pooled,
                      "parent_left": parallel_kernels_left(), "loaded": loaded,
                      "parent_serial": _threads.serial_only()}))
    """)


def test_forked_children_run_every_parallel_kernel_with_the_parents_bits():
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", _SCRIPT,
                           os.path.dirname(__file__)], capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "fork() called" not in done.stderr
    assert got["loaded"] == []  # the late child imported these kernel modules itself
    assert got["late_status"] == 0 and got["early_status"] == 0, done.stderr[-4000:]
    assert got["late"][0] == got["parent"]
    assert got["early"][0] == got["parent"]
    assert got["pooled"] == got["parent"]
    # every parallel kernel of the package is a twin in the children, none in the parent
    assert got["late"][1] == [] and got["early"][1] == []
    assert got["late"][2] and got["early"][2] and not got["parent_serial"]
    assert len(got["parent_left"]) >= 13, got["parent_left"]


def test_a_child_forked_before_the_layer_started_keeps_its_parallel_kernels():
    """Before the parent starts Numba's threads a forked child may start its own: the hook
    leaves its kernels parallel."""
    script = textwrap.dedent("""
        import os, sys
        from ipu_gpu.kernels import _threads, embedding_cpu
        pid = os.fork()
        if pid == 0:
            ok = (not _threads.serial_only()
                  and _threads.is_parallel_kernel(embedding_cpu._gather_parallel))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(status)
        """)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split() == ["0"]


def test_serial_twin_has_its_own_cache_entry_and_the_same_options():
    from ipu_gpu.kernels import embedding_cpu

    kernel = embedding_cpu._gather_parallel
    twin = _threads.serial_twin(kernel)
    assert twin is _threads.serial_twin(kernel)
    assert not _threads.is_parallel_kernel(twin) and _threads.is_parallel_kernel(kernel)
    assert twin.py_func.__qualname__ == kernel.py_func.__qualname__ + _threads.TWIN_SUFFIX
    assert twin.py_func.__code__ is kernel.py_func.__code__
    assert {k: v for k, v in kernel.targetoptions.items() if k != "parallel"} \
        == twin.targetoptions
    params = np.random.default_rng(2).standard_normal((300, 8)).view(np.uint64)
    ids = np.arange(299, -1, -1, dtype=np.int32)
    want = np.empty((300, 8), np.uint64)
    got = np.empty((300, 8), np.uint64)
    kernel(params, ids, want, 2)
    twin(params, ids, got, 2)
    np.testing.assert_array_equal(got, want)


def test_the_parent_pays_nothing_per_call():
    """The hook runs in forked children only: the parent calls Numba's dispatchers as they
    are (a kernel call costs what it cost before; the module attribute is the decorated
    dispatcher)."""
    from ipu_gpu.kernels import embedding_cpu

    assert _threads.is_parallel_kernel(embedding_cpu._gather_parallel)
    assert not _threads.serial_only()
    assert type(embedding_cpu._gather_parallel).__name__ == "CPUDispatcher"


def test_a_child_of_a_parent_that_started_numba_threads_itself_gets_the_twins():
    """The parent imported ipu_gpu, ran only its own parallel Numba code (so no ipu_gpu kernel
    module, and not kernels/_threads, was loaded), then forked: the child's first parallel
    ipu_gpu kernel must run as a twin, with the parent's bits, not abort."""
    script = textwrap.dedent("""
        import hashlib, json, os, sys
        sys.path.insert(0, sys.argv[1])
        import numba
        import numpy as np
        import ipu_gpu  # noqa: F401

        @numba.njit(parallel=True)
        def total(x):
            s = 0.0
            for i in numba.prange(x.shape[0]):
                s += x[i]
            return s

        total(np.ones(1 << 16))
        assert numba.threading_layer() == "omp"
        assert "ipu_gpu.kernels._threads" not in sys.modules
        from fork_child import in_child

        def gather():
            from ipu_gpu.kernels import _threads, embedding_cpu
            rng = np.random.default_rng(0)
            table = rng.standard_normal((4096, 64)).astype(np.float32)
            ids = rng.integers(0, 4096, 20000).astype(np.int32)
            out = embedding_cpu.embedding_fwd(table, ids, np.empty((20000, 64), np.float32))
            return [hashlib.sha256(out.tobytes()).hexdigest(), _threads.serial_only()]

        child, status = in_child(gather)
        print(json.dumps({"child": child, "status": status,
                          "parent": gather()}))
        """)
    env = dict(os.environ, NUMBA_THREADING_LAYER="omp")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", script,
                           os.path.dirname(__file__)], capture_output=True, text=True,
                          timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert "fork() called" not in done.stderr
    assert got["status"] == 0, done.stderr[-4000:]
    assert got["child"] == [got["parent"][0], True]
    assert got["parent"][1] is False
