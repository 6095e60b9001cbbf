"""Helpers for bench/ (imported by conftest.py and the bench files): thread counts, seeds,
optional peers (torch, tensorflow, cupy), machine facts and numpy checks. See conftest.py."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before TensorFlow is imported anywhere

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import ipu_gpu  # noqa: E402
import ipu_gpu.kernels._threads  # noqa: E402,F401  # picks Numba's threading layer first

SEED = 1234
THREADS = os.cpu_count() or 1
TARGET_SECONDS = float(os.environ.get("BENCH_SECONDS", "1.0"))  # timed seconds per row, about
CPU_IMPLS = ("ipu_gpu", "numpy", "torch", "tensorflow")
GPU_IMPLS = ("ipu_gpu_cupy", "torch_cuda", "cupy")
OURS = {"ipu_gpu", "ipu_gpu_cupy", "kernel"}


# ---- threads, seeds -----------------------------------------------------------------------
def _set_threads():
    import numba

    numba.set_num_threads(min(THREADS, numba.config.NUMBA_NUM_THREADS))


_set_threads()


def rng(offset: int = 0) -> np.random.Generator:
    """The seeded generator every test draws its inputs from."""
    return np.random.default_rng(SEED + offset)


# ---- peers: torch, tensorflow, cupy (each optional) -----------------------------------------
@dataclass
class Peers:
    torch: object = None
    tf: object = None
    cupy: object = None  # only when cupy imports and a CUDA device is visible
    torch_cuda: bool = False


_PEERS: Peers | None = None


def peers() -> Peers:
    """Import the optional peer libraries once, with thread counts set; missing ones are None."""
    global _PEERS
    if _PEERS is not None:
        return _PEERS
    p = Peers()
    try:
        import torch

        torch.set_num_threads(THREADS)
        torch.manual_seed(SEED)
        p.torch = torch
        p.torch_cuda = bool(torch.cuda.is_available())
        if p.torch_cuda:  # float32 in float32, as ipu_gpu's GEMMs and convolutions (no TF32)
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
    except ImportError:
        pass
    try:
        import tensorflow as tf

        try:
            tf.config.threading.set_intra_op_parallelism_threads(THREADS)
            tf.config.threading.set_inter_op_parallelism_threads(THREADS)
            tf.config.set_visible_devices([], "GPU")  # TF rows are the CPU anchor
        except RuntimeError:  # already initialised
            pass
        tf.random.set_seed(SEED)
        p.tf = tf
    except ImportError:
        pass
    from ipu_gpu.core.backend import cupy_if_gpu

    p.cupy = cupy_if_gpu()
    _PEERS = p
    return p


def require(impl: str) -> Peers:
    """Peers, or skip the calling test when ``impl``'s library (or the GPU) is missing."""
    p = peers()
    if impl == "torch" and p.torch is None:
        pytest.skip("torch is not installed")
    if impl == "tensorflow" and p.tf is None:
        pytest.skip("tensorflow is not installed")
    if impl in ("ipu_gpu_cupy", "cupy") and p.cupy is None:
        pytest.skip("needs cupy and a CUDA GPU")
    if impl == "torch_cuda" and not p.torch_cuda:
        pytest.skip("needs torch with CUDA and a GPU")
    return p


def available(impl: str) -> bool:
    """Whether ``impl``'s library (and device) is present, without skipping."""
    p = peers()
    return {"torch": p.torch is not None, "tensorflow": p.tf is not None,
            "ipu_gpu_cupy": p.cupy is not None, "cupy": p.cupy is not None,
            "torch_cuda": p.torch_cuda}.get(impl, True)


PAIR_PEER = {"ipu_gpu": "torch", "ipu_gpu_cupy": "torch_cuda"}


def paired_with(impl: str, make, peer: str | None = None):
    """``(peer, make(peer))`` to interleave with ``impl``'s row (``run(..., paired=...)``):
    torch for ipu_gpu, torch CUDA for ipu_gpu on cupy, unless ``peer`` is given; None when
    ``impl`` is not ours or the peer is missing."""
    peer = peer or PAIR_PEER.get(impl)
    if impl not in PAIR_PEER or peer is None or not available(peer):
        return None
    return peer, make(peer)


def impl_params(cpu=CPU_IMPLS, gpu=GPU_IMPLS):
    """pytest params for the implementations; GPU rows carry the ``gpu`` marker."""
    return [*cpu, *(pytest.param(i, marks=pytest.mark.gpu) for i in gpu)]


# ---- machine facts ------------------------------------------------------------------------
def _cpu_model() -> str:
    from ipu_gpu.cli import cpu_name

    return cpu_name()


def machine_facts() -> dict:
    import numba

    p = peers()
    facts = {
        "cpu": _cpu_model(), "cores": os.cpu_count(), "threads": THREADS,
        "python": platform.python_version(), "numpy": np.__version__,
        "numba": numba.__version__, "numba_threading_layer": _threading_layer(),
        "torch": getattr(p.torch, "__version__", None),
        "tensorflow": getattr(p.tf, "__version__", None),
        "cupy": getattr(p.cupy, "__version__", None),
    }
    facts.update(cpu_kernels(p))
    if p.cupy is not None:
        try:
            props = p.cupy.cuda.runtime.getDeviceProperties(0)
            name = props["name"]
            facts["gpu"] = name.decode() if isinstance(name, bytes) else name
        except Exception:  # facts only
            pass
    return facts


def vector_isa() -> str:
    """The widest x86 vector extension the CPU reports (/proc/cpuinfo flags)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        return "?"
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
                       ("sse4_2", "SSE4.2")):
        if flag in flags:
            return name + (" (+VNNI)" if flag == "avx512f" and "avx512_vnni" in flags else "")
    return platform.machine()


_CPU_KERNELS: dict | None = None


def cpu_kernels(p) -> dict:
    """Which BLAS and which BLAS kernel each library runs on this CPU (threadpoolctl for the
    BLAS libraries loaded in this process; torch's own report for torch), as strings."""
    global _CPU_KERNELS
    if _CPU_KERNELS is not None:
        return _CPU_KERNELS
    facts = {"vector_isa": vector_isa()}
    try:
        from threadpoolctl import threadpool_info

        facts["blas"] = "; ".join(
            f"{i.get('internal_api')} {i.get('version')} ({i.get('prefix')}), kernel "
            f"{i.get('architecture')}, {i.get('num_threads')} threads"
            for i in threadpool_info() if i.get("user_api") == "blas") or "none found"
    except ImportError:
        facts["blas"] = "threadpoolctl not installed"
    if p.torch is not None:
        torch = p.torch
        cfg = torch.__config__.show()
        blas = next((part.split("=", 1)[1] for part in cfg.replace(",", " ").split()
                     if part.startswith("BLAS_INFO=")), "?")
        facts["torch_cpu"] = (f"BLAS {blas}, oneDNN {torch.backends.mkldnn.is_available()}, "
                              f"kernels for {torch.backends.cpu.get_cpu_capability()}")
    if p.tf is not None:
        facts["tensorflow_cpu"] = ("oneDNN " + ("off" if os.environ.get("TF_ENABLE_ONEDNN_OPTS")
                                                == "0" else "on (default)"))
    _CPU_KERNELS = facts
    return facts


def _threading_layer():
    import numba

    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet
        return None


# ---- inputs and checks --------------------------------------------------------------------
def as_impl(impl: str, a: np.ndarray):
    """``a`` (a numpy array) as the native array/tensor of ``impl``, copied once, untimed."""
    p = peers()
    if impl == "ipu_gpu":
        return ipu_gpu.constant(a)
    if impl == "ipu_gpu_cupy":
        return ipu_gpu.constant(p.cupy.asarray(a))
    if impl in ("numpy", "kernel"):
        return a
    if impl == "torch":
        return p.torch.from_numpy(a.copy())
    if impl == "torch_cuda":
        return p.torch.from_numpy(a.copy()).cuda()
    if impl == "tensorflow":
        return p.tf.constant(a)
    if impl == "cupy":
        return p.cupy.asarray(a)
    raise ValueError(f"unknown impl {impl!r}")


def to_numpy(x):
    """A numpy array from any implementation's result (ipu_gpu, torch, tf, cupy, numpy)."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, ipu_gpu.Tensor):
        v = x._value
        return v if isinstance(v, np.ndarray) else v.get()
    mod = type(x).__module__
    if mod.startswith("torch"):
        return x.detach().cpu().numpy()
    if mod.startswith("cupy"):
        return x.get()
    if hasattr(x, "numpy"):
        return x.numpy()
    return np.asarray(x)


def check_close(name: str, got, want: np.ndarray, rtol: float, atol: float) -> None:
    """Assert ``got`` (any implementation's result) matches the numpy reference ``want``."""
    got = np.asarray(to_numpy(got))
    want = np.asarray(want)
    assert got.shape == want.shape, f"{name}: shape {got.shape} != numpy's {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != numpy's {want.dtype}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
