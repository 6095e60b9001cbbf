"""Which array library runs the ops: numpy (CPU, Numba kernels) or cupy (GPU).

cupy is imported only when it is asked for (``IPU_GPU_BACKEND=gpu``) or when a
cupy array reaches an op; ``import ipu_gpu`` never imports it.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy

_ENV = "IPU_GPU_BACKEND"
_chosen: str | None = None


class BackendError(RuntimeError):
    """The backend that was asked for cannot be used on this machine."""


def cupy_if_gpu():
    """The cupy module if it imports and sees a CUDA device, else None (never raises)."""
    try:
        cupy = importlib.import_module("cupy")
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # no cupy, no driver, no device: all mean "no GPU backend"
        return None
    return None


def backend_name() -> str:
    """'cpu' or 'gpu': the backend new arrays are created on.

    ``IPU_GPU_BACKEND=cpu|gpu`` forces one; unset, the GPU is used when cupy is
    installed and a device is present. Asking for 'gpu' without one raises
    BackendError.
    """
    global _chosen
    if _chosen is None:
        wanted = os.environ.get(_ENV, "").strip().lower()
        if wanted not in ("", "cpu", "gpu", "auto"):
            raise BackendError(f"{_ENV} must be 'cpu' or 'gpu', got {wanted!r}")
        if wanted == "cpu":
            _chosen = "cpu"
        elif wanted == "gpu":
            if cupy_if_gpu() is None:
                raise BackendError(
                    f"{_ENV}=gpu but no GPU backend is usable: install the 'gpu' extra "
                    "(cupy) and make sure a CUDA device is visible"
                )
            _chosen = "gpu"
        else:
            _chosen = "gpu" if _probe_gpu_cheaply() else "cpu"
    return _chosen


def _probe_gpu_cheaply() -> bool:
    # Without the cupy package there is no GPU backend; don't pay for importing it otherwise.
    if importlib.util.find_spec("cupy") is None:
        return False
    return cupy_if_gpu() is not None


def set_backend(name: str) -> None:
    """Switch the backend for new arrays ('cpu' or 'gpu'); mainly for tests."""
    global _chosen
    if name not in ("cpu", "gpu"):
        raise ValueError(f"set_backend: name must be 'cpu' or 'gpu', got {name!r}")
    if name == "gpu" and cupy_if_gpu() is None:
        raise BackendError("set_backend: 'gpu' asked for but cupy or a CUDA device is missing")
    _chosen = name


def default_xp():
    """The array module (numpy or cupy) of the current backend."""
    return numpy if backend_name() == "cpu" else sys.modules.get("cupy") or cupy_if_gpu()


def is_cupy_array(a) -> bool:
    """True for a cupy.ndarray, decided without importing cupy."""
    return type(a).__module__.startswith("cupy")


def xp_of(a):
    """numpy or cupy, whichever module owns array ``a``."""
    if is_cupy_array(a):
        return sys.modules["cupy"]
    return numpy


def kernels_for(family: str, xp):
    """The kernel module ``ipu_gpu.kernels.<family>_cpu`` or ``_gpu`` for arrays of ``xp``."""
    side = "cpu" if xp is numpy else "gpu"
    return importlib.import_module(f"ipu_gpu.kernels.{family}_{side}")


_side_streams = None  # per thread: the stream host copies take while a graph is captured


def to_device(xp, a):
    """``xp.asarray(a)`` for a host array ``a``. While the calling thread captures a CUDA
    graph (``core.capture``), cupy refuses host copies on the capturing stream: the copy then
    runs on a side stream and completes here, so the graph reads its result as a constant,
    as a traced program holds a constant. 0-d arrays (the Python numbers beside tensors in
    ``lr * g``) are uploaded once per value and device and shared: nothing writes into them."""
    from . import capture

    if xp is numpy:
        return a
    if a.ndim == 0:  # a Python number beside a tensor: one upload per value, not per op
        key = (xp.cuda.runtime.getDevice(), a.dtype.str, a.tobytes())
        out = _device_scalars.get(key)
        if out is None:
            if len(_device_scalars) >= 4096:
                _device_scalars.clear()
            out = _device_scalars[key] = _upload(xp, a, True)  # complete before shared
        return out
    return _upload(xp, a, capture.capturing())


_device_scalars: dict = {}  # (device, dtype, bytes) -> a 0-d device array nobody writes


def _upload(xp, a, side_stream: bool):
    if not side_stream:
        return xp.asarray(a)
    global _side_streams
    if _side_streams is None:
        import threading

        _side_streams = threading.local()
    stream = getattr(_side_streams, "stream", None)
    if stream is None:
        stream = _side_streams.stream = xp.cuda.Stream(non_blocking=True)
    with stream:
        out = xp.asarray(a)
    stream.synchronize()
    return out
