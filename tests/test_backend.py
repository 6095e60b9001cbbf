"""Backend choice (IPU_GPU_BACKEND), the cost of ``import ipu_gpu`` (fast, no cupy, no
numba), and the mixed-device rule. Environment-dependent cases run in fresh subprocesses."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import BackendError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _gpu_present() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver / no device
        return False


needs_no_gpu = pytest.mark.skipif(_gpu_present(), reason="a usable GPU is present here")


def _run(code: str, backend: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "IPU_GPU_BACKEND"}
    if backend is not None:
        env["IPU_GPU_BACKEND"] = backend
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@needs_no_gpu
def test_backend_name_is_cpu_here():
    assert tf.backend_name() == "cpu"
    assert tf.zeros([2]).device == "/device:CPU:0"
    assert tf.constant(1.0).device == "/device:CPU:0"


def test_set_backend_rejects_unknown_names():
    with pytest.raises(ValueError, match="set_backend: name must be 'cpu' or 'gpu'"):
        tf.set_backend("tpu")


@needs_no_gpu
def test_set_backend_gpu_without_gpu():
    before = tf.backend_name()
    with pytest.raises(BackendError):
        tf.set_backend("gpu")
    assert tf.backend_name() == before
    assert issubclass(BackendError, RuntimeError)


_PROBE = """
import json, sys
import ipu_gpu
out = {}
try:
    out["name"] = ipu_gpu.backend_name()
except Exception as e:
    out["error"] = type(e).__name__
    out["message"] = str(e)
try:
    ipu_gpu.zeros([2])
    out["zeros"] = "ok"
except Exception as e:
    out["zeros"] = type(e).__name__
print(json.dumps(out))
"""


def _probe(backend):
    r = _run(_PROBE, backend)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@needs_no_gpu
@pytest.mark.parametrize("value", [None, "", "cpu", "CPU", "auto"])
def test_env_cpu_or_unset(value):
    assert _probe(value) == {"name": "cpu", "zeros": "ok"}


@needs_no_gpu
def test_env_gpu_without_cupy_is_a_backend_error():
    out = _probe("gpu")
    assert out["error"] == "BackendError"
    assert "IPU_GPU_BACKEND=gpu" in out["message"]
    assert out["zeros"] == "BackendError"


def test_first_tensor_in_a_fresh_interpreter_chooses_the_backend():
    """Choosing the backend on first use needs importlib.util, which a bare interpreter has
    not imported (`import ipu_gpu; constant(1.0)` once raised AttributeError)."""
    r = _run("import importlib, sys; sys.modules.pop('importlib.util', None); "
             "importlib.__dict__.pop('util', None); "
             "import ipu_gpu; print(ipu_gpu.constant(1.0).numpy())")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "1.0"


@pytest.mark.parametrize("value", ["bogus", "cuda", "1"])
def test_env_bogus_is_an_error(value):
    out = _probe(value)
    assert out["error"] == "BackendError"
    assert "IPU_GPU_BACKEND must be 'cpu' or 'gpu'" in out["message"]
    assert out["zeros"] == "BackendError"


_IMPORT = """
import json, sys, time
t0 = time.perf_counter()
import ipu_gpu
t1 = time.perf_counter()
after_import = {m: m in sys.modules for m in ("cupy", "numba", "torch", "tensorflow")}
kernels = sorted(m for m in sys.modules if m.startswith("ipu_gpu.kernels."))
y = ipu_gpu.reduce_sum(ipu_gpu.constant([1.0, 2.0]) * 2.0)  # no kernel family: no numba
numba_after_math = "numba" in sys.modules
ipu_gpu.gather(ipu_gpu.constant([1.0, 2.0]), [1, 0])  # a Numba kernel family, loaded lazily
print(json.dumps({"seconds": t1 - t0, "after_import": after_import, "kernels": kernels,
                  "numba_after_math": numba_after_math,
                  "numba_after_gather": "numba" in sys.modules,
                  "cupy_at_end": "cupy" in sys.modules}))
"""


@pytest.fixture(scope="module")
def import_runs():
    runs = []
    for _ in range(3):
        r = _run(_IMPORT, "cpu")
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return runs


def test_import_is_fast(import_runs):
    best = min(r["seconds"] for r in import_runs)
    assert best < 1.0, f"import ipu_gpu took {best:.3f} s (best of 3)"


def test_import_loads_no_cupy_numba_or_peers(import_runs):
    for r in import_runs:
        assert r["after_import"] == {"cupy": False, "numba": False, "torch": False,
                                     "tensorflow": False}
        # only the ctypes BLAS shim, whose limit_thread_spin must run at import, before any
        # thread is inside BLAS (kernels/_blas.py); no kernel family, no Numba
        assert r["kernels"] == ["ipu_gpu.kernels._blas"]
        assert not r["cupy_at_end"]


def test_numba_loads_only_with_the_first_kernel(import_runs):
    r = import_runs[0]
    assert r["numba_after_math"] is False
    assert r["numba_after_gather"] is True


def test_import_does_not_probe_cupy_when_unset():
    r = _run("import sys, ipu_gpu; print('cupy' in sys.modules)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


# ---- mixed devices -------------------------------------------------------------------------
@pytest.mark.gpu
def test_mixing_numpy_and_cupy_is_a_type_error():
    cupy = pytest.importorskip("cupy")
    if not _gpu_present():
        pytest.skip("needs a CUDA GPU")
    a = np.ones(3, np.float32)
    b = cupy.ones(3, cupy.float32)
    with pytest.raises(TypeError, match="add: y must be on the same device"):
        tf.add(a, b)
    with pytest.raises(TypeError, match="same device"):
        tf.convert_to_tensor(a) + tf.convert_to_tensor(b)
    with pytest.raises(TypeError, match="matmul"):
        tf.matmul(tf.convert_to_tensor(b.reshape(3, 1)), a.reshape(1, 3))
    t = tf.convert_to_tensor(b)
    assert t.device == "/device:GPU:0"
    np.testing.assert_array_equal(t.numpy(), np.ones(3))
    np.testing.assert_array_equal((t * 2.0).numpy(), np.full(3, 2.0))
    v = tf.Variable(b)
    with pytest.raises(TypeError, match="device"):
        v.assign(a)
