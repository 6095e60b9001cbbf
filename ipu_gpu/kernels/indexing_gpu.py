"""Gather and scatter-add on the GPU (CuPy); twin of indexing_cpu."""

from __future__ import annotations

import os

import cupy
import numpy as np

from . import embedding_gpu
from ._indexing_checks import check_scatter_add_rows


def gather_rows(params, ids, out):
    """out[i] = params[ids[i]]; ids outside [0, R) give zero rows, as TF's GPU kernel
    (``IPU_GPU_DEBUG=1`` raises ValueError instead, at the cost of a device sync)."""
    n = params.shape[0]
    valid = (ids >= 0) & (ids < n)
    if os.environ.get("IPU_GPU_DEBUG") == "1" and not bool(valid.all()):  # syncs device
        raise ValueError(f"gather: indices must be in [0, {n})")
    cupy.take(params, cupy.where(valid, ids, 0), axis=0, out=out)
    cupy.copyto(out, 0, where=~valid.reshape(valid.shape + (1,) * (out.ndim - valid.ndim)))
    return out


def scatter_add_rows(grad, ids, out):
    """out[ids[i]] += grad[i] for 2-D ``grad`` [N, D], 1-D int ``ids`` [N] into zeroed ``out``
    [R, D] (C-contiguous) of grad's dtype. Ids outside [0, R) are dropped, the adjoint of
    gather_rows' zero rows (the CPU twin raises); no device sync. Float rows go through
    embedding_gpu's scatter-add: duplicates summed in index order (the CPU twin's bits)
    unless ``IPU_GPU_DETERMINISTIC=0`` asks for float32 atomics."""
    check_scatter_add_rows(grad, ids, out)
    if not out.flags.c_contiguous:
        raise ValueError("scatter_add_rows: out must be C-contiguous")
    rows = out.shape[0]
    if rows == 0 or ids.shape[0] == 0 or out.shape[1] == 0:
        return out
    if out.dtype not in (np.float16, np.float32, np.float64):
        # cupy.add.at wraps out-of-range ids into range: send them to row 0 with zeros
        valid = (ids >= 0) & (ids < rows)
        cupy.add.at(out, cupy.where(valid, ids, 0), cupy.where(valid[:, None], grad, 0))
        return out
    if ids.dtype != np.int32:
        if rows > np.iinfo(np.int32).max:
            raise ValueError(f"scatter_add_rows: out must have at most 2**31 - 1 rows on the "
                             f"GPU, got {rows}")
        # out-of-range ids become -1 first, so the cast cannot wrap one into range
        ids = cupy.where((ids >= 0) & (ids < rows), ids, -1).astype(np.int32)
    embedding_gpu.embedding_bwd(cupy.ascontiguousarray(grad), cupy.ascontiguousarray(ids), out,
                                False)
    return out


def index_add(out, key, grad):
    """out[key] += grad with repeated indices accumulating."""
    cupy.add.at(out, key, grad)
    return out
