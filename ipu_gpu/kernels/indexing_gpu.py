"""Gather and scatter-add on the GPU (CuPy); twin of indexing_cpu."""

from __future__ import annotations

import os

import cupy
import cupyx


def gather_rows(params, ids, out):
    """out[i] = params[ids[i]]; ids outside [0, R) give zero rows, as TF's GPU kernel
    (``IPU_GPU_DEBUG=1`` raises ValueError instead, at the cost of a device sync)."""
    n = params.shape[0]
    valid = (ids >= 0) & (ids < n)
    if os.environ.get("IPU_GPU_DEBUG") == "1" and not bool(valid.all()):  # syncs device
        raise ValueError(f"gather: indices must be in [0, {n})")
    cupy.take(params, cupy.where(valid, ids, 0), axis=0, out=out)
    out[~valid] = 0
    return out


def scatter_add_rows(grad, ids, out):
    """out[ids[i]] += grad[i] into zeroed ``out``; uses float atomics, so the summation order of
    duplicate ids is not fixed (the CPU twin is deterministic)."""
    cupyx.scatter_add(out, ids, grad)
    return out


def index_add(out, key, grad):
    """out[key] += grad with repeated indices accumulating."""
    cupyx.scatter_add(out, key, grad)
    return out
