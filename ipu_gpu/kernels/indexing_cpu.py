"""Gather and scatter-add on the CPU (numpy + Numba)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._indexing_checks import check_scatter_add_rows
from ._threads import num_threads


def gather_rows(params, ids, out):
    """out[i] = params[ids[i]] for 2-D ``params`` [R, D], 1-D int ``ids``; raises ValueError
    naming the first id outside [0, R)."""
    bad = _first_out_of_range(ids, params.shape[0])
    if bad >= 0:
        raise ValueError(f"gather: indices must be in [0, {params.shape[0]}), got {ids[bad]} "
                         f"at position {bad}")
    np.take(params, ids, axis=0, out=out, mode="clip")  # ids are checked: clip never acts
    return out


@njit(cache=True, nogil=True)
def _first_out_of_range(ids, n):
    for i in range(ids.shape[0]):
        if ids[i] < 0 or ids[i] >= n:
            return i
    return -1


# Below this many gradient elements the serial loop wins: an OpenMP launch costs more, and
# its spinning threads stall the BLAS calls that follow in a training step (bench/README.md).
PARALLEL_MIN_ELEMENTS = 1 << 20


def scatter_add_rows(grad, ids, out):
    """out[ids[i]] += grad[i] for 2-D ``grad`` [N, D], 1-D int ``ids`` [N] into zeroed ``out``
    [R, D] of grad's dtype; duplicate ids accumulate in index order (deterministic, the same
    order on both paths). Raises ValueError naming the first id outside [0, R) (``out`` is
    then partly updated) or mismatched shapes; never writes out of bounds."""
    check_scatter_add_rows(grad, ids, out)
    rows = out.shape[0]
    if grad.dtype == np.float16:  # Numba has no float16: the embedding kernel adds its bits
        from .embedding_cpu import embedding_bwd

        bad = _first_out_of_range(ids, rows)  # that kernel would drop bad ids silently
        if bad < 0:
            embedding_bwd(np.ascontiguousarray(grad), ids.astype(np.int32, copy=False), out,
                          False)
    elif grad.size >= PARALLEL_MIN_ELEMENTS:
        bad = _scatter_add_rows(grad, ids, out, num_threads())
    else:
        bad = _scatter_add_rows_serial(grad, ids, out)
    if bad >= 0:
        raise ValueError(f"scatter_add_rows: ids must be in [0, {rows}), got {ids[bad]} at "
                         f"position {bad}")
    return out


# The loops below stop at the first id outside [0, rows) and return its position (-1: none):
# one comparison per id, and no write ever leaves ``out``.
@njit(cache=True, nogil=True)
def _scatter_add_rows_serial(grad, ids, out):
    rows = out.shape[0]
    for i in range(ids.shape[0]):
        r = ids[i]
        if r < 0 or r >= rows:
            return i
        dst = out[r]
        src = grad[i]
        for j in range(src.shape[0]):
            dst[j] += src[j]
    return -1


@njit(cache=True, nogil=True, parallel=True)
def _scatter_add_rows(grad, ids, out, nthreads):
    # Each thread owns the rows r with r % nthreads == t: no races, fixed order per row. Every
    # thread scans all ids, so all stop at the same first bad id.
    rows = out.shape[0]
    bad = np.full(nthreads, -1, np.int64)
    for t in prange(nthreads):
        for i in range(ids.shape[0]):
            r = ids[i]
            if r < 0 or r >= rows:
                bad[t] = i
                break
            if r % nthreads == t:
                dst = out[r]
                src = grad[i]
                for j in range(src.shape[0]):
                    dst[j] += src[j]
    return bad[0]


def index_add(out, key, grad):
    """out[key] += grad with repeated indices accumulating (numpy's ufunc.at)."""
    np.add.at(out, key, grad)
    return out
