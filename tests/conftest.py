"""Shared fixtures: the array backend under test, and hypothesis profiles."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest
from hypothesis import settings

import ipu_gpu

settings.register_profile("ci", max_examples=20, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def gpu_cupy():
    """The cupy module when cupy imports and sees a CUDA device, else None."""
    try:
        cupy = importlib.import_module("cupy")
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # no cupy, no driver, no device: all mean "no GPU here"
        return None
    return None


def require_gpu():
    """The cupy module, or skip the calling test."""
    cupy = gpu_cupy()
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
