"""Numba threading set-up shared by the CPU kernels (imported lazily, by kernels only)."""

from __future__ import annotations

import os

import numba

from . import _cache_deps

_cache_deps.install()  # before any kernel importing this module is decorated

# Replicas run kernels from several Python threads; Numba's default fallback layer
# ('workqueue') is not thread-safe, so ask for a thread-safe one (omp or tbb) unless the
# user chose a layer explicitly.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "threadsafe"


def num_threads() -> int:
    """Numba's thread count, read outside jitted code (inside, it would defeat caching)."""
    return numba.get_num_threads()
