"""Shared fixtures: the array backend under test, and hypothesis profiles."""

from __future__ import annotations

import os
import re
import sys

import numpy as np
import pytest
from hypothesis import settings

import ipu_gpu
from ipu_gpu.core.backend import cupy_if_gpu

settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=50, deadline=None)
# `make test` (and so CI) uses the derandomized profile: its verdict never depends on chance.
settings.load_profile(os.environ.get("IPU_GPU_HYPOTHESIS_PROFILE",
                                     "ci" if os.environ.get("CI") else "dev"))


def blas_thread_count_reader():
    """A function returning OpenBLAS's process-wide thread count (it sets the count to 1 and
    back: not every build has a getter), or a skip of the calling test where numpy's BLAS is
    not an OpenBLAS with a thread-count setting."""
    from ipu_gpu.kernels import _blas

    set_threads = _blas.thread_setter()
    if set_threads is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS with a thread-count setting")

    def blas_threads():
        previous = set_threads(1)
        set_threads(previous)
        return previous

    return blas_threads


def require_gpu():
    """The cupy module, or skip the calling test."""
    cupy = cupy_if_gpu()
    if cupy is None:
        pytest.skip("needs cupy and a CUDA GPU")
    return cupy


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def backend(request):
    """The array module under test (numpy or cupy); tests move inputs onto it with
    ``xp.asarray``. ipu_gpu's default backend follows, so ops that create tensors from
    Python values (zeros, range, constant, ...) land on the same device."""
    xp = np if request.param == "numpy" else require_gpu()
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("cpu" if xp is np else "gpu")
    try:
        yield xp
    finally:
        ipu_gpu.set_backend(previous)


def configure_ipus(n=1):
    """Configure the emulated IPU system with ``n`` IPUs (``auto_select_ipus``)."""
    from ipu_gpu.ipu import config

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = n
    cfg.configure_ipu_system()


def compile_on_ipu(fn, inputs=None):
    """``ipu_compiler.compile(fn, inputs)`` in the scope of the first IPU."""
    from ipu_gpu.ipu import ipu_compiler, scopes

    with scopes.ipu_scope("/device:IPU:0"):
        return ipu_compiler.compile(fn, inputs)


@pytest.fixture
def fresh_ipu_system(monkeypatch):
    """No emulated IPU system configured before or after the test, and no TF_POPLAR_FLAGS."""
    from ipu_gpu.emulation import system

    monkeypatch.delenv("TF_POPLAR_FLAGS", raising=False)
    system.reset()
    yield
    system.reset()


@pytest.fixture(scope="session")
def real_tf():
    """TensorFlow (CPU only) as a reference oracle; skips when it is not installed.

    oneDNN is off (``TF_ENABLE_ONEDNN_OPTS=0`` unless the environment says otherwise): TF turns
    it on by itself only on CPUs with AVX-512 and newer, and its convolutions then compute cases
    that the default kernels refuse, so the oracle's verdicts would depend on the machine."""
    if "tensorflow" in sys.modules and "TF_ENABLE_ONEDNN_OPTS" not in os.environ:
        pytest.fail("tensorflow was imported before the real_tf fixture, too late to turn "
                    "oneDNN off: import it through real_tf only", pytrace=False)
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # read when tensorflow is imported
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # silence TF before it is imported
    real = pytest.importorskip("tensorflow")
    try:  # TF on the CPU only (not CUDA_VISIBLE_DEVICES: cupy tests share this process)
        real.config.set_visible_devices([], "GPU")
    except RuntimeError:  # devices already initialised
        pass
    return real


@pytest.fixture
def tf_keras(real_tf):
    """tf_keras (the Keras 2 of the real TensorFlow) as a reference oracle, its session cleared
    after the test; skips when it is not installed."""
    module = pytest.importorskip("tf_keras")
    yield module
    module.backend.clear_session()


@pytest.fixture
def fresh_layer_names():
    """Layer-name counters reset after the test (``keras.backend.clear_session``): tests of
    other files compare the emulator's weight names with a fresh tf_keras's. Modules use it
    with ``pytestmark = pytest.mark.usefixtures("fresh_layer_names")``."""
    yield
    from ipu_gpu import keras

    keras.backend.clear_session()


def tf_or_skip(request, compute):
    """``compute(tf)`` with the real TensorFlow (the ``real_tf`` fixture), or a skip of the
    calling test, with TF's own reason, where the installed TF cannot compute the case on this
    machine (its CPU kernels refuse, say, gradients of dilated or grouped convolutions).

    Only TF's refusals are caught, never an AssertionError or an error of ipu_gpu: call it after
    ipu_gpu's checks against the float64 reference and torch, so a skip never hides them."""
    tf = request.getfixturevalue("real_tf")
    try:
        return compute(tf)
    except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError) as err:
        reason = re.sub(r"^\{\{function_node [^}]*\}\}\s*|\s*name:\s*$", "", err.message)
        pytest.skip(f"TensorFlow cannot compute this case here: {reason}")
