"""The scatter-add's shape and dtype checks and their messages, shared by indexing_cpu and
indexing_gpu (imports only what both twins can: no Numba, no CuPy)."""

from __future__ import annotations


def check_scatter_add_rows(grad, ids, out):
    """Raise ValueError unless ``grad`` is [len(ids), out.shape[1]] with ``ids`` 1-D and ``out``
    2-D, and TypeError unless ``out`` has grad's dtype: what the kernels index with."""
    if grad.ndim != 2 or ids.ndim != 1 or out.ndim != 2 or grad.shape != (ids.shape[0],
                                                                           out.shape[1]):
        raise ValueError(f"scatter_add_rows: grad must have shape [len(ids), out.shape[1]] = "
                         f"{[ids.shape[0], out.shape[1]]} (ids 1-D, out 2-D), got grad "
                         f"{list(grad.shape)}, ids {list(ids.shape)}, out {list(out.shape)}")
    if grad.dtype != out.dtype:
        raise TypeError(f"scatter_add_rows: out must have grad's dtype {grad.dtype}, got "
                        f"{out.dtype}")
