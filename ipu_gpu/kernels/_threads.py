"""Numba threading set-up shared by the CPU kernels (imported lazily, by kernels only)."""

from __future__ import annotations

import os

# Replicas run in Python threads; the default 'workqueue' layer is not thread-safe.
os.environ.setdefault("NUMBA_THREADING_LAYER", "omp")

import numba  # noqa: E402


def num_threads() -> int:
    """Numba's thread count, read outside jitted code (inside, it would defeat caching)."""
    return numba.get_num_threads()
