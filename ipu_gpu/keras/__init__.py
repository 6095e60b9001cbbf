"""Keras on ipu_gpu (``tf.keras`` and ``keras`` in user programs, through ipu_gpu.aliases).

Subpackages load on first use, so ``import ipu_gpu.keras`` costs nothing and never
imports TensorFlow or Keras. Built so far: ``datasets`` (the cached Keras datasets,
read without a network) and ``utils`` (``get_file``, ``to_categorical``).
"""

from __future__ import annotations

import importlib

_SUBMODULES = ("datasets", "utils")

__all__ = list(_SUBMODULES)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
