"""Keras 2 on ipu_gpu (``tf.keras`` and ``keras`` in user programs, through ipu_gpu.aliases).

Layers, models (Sequential, functional, subclassed), the trainer (compile, fit, evaluate,
predict, steps_per_execution, IPUStrategy executions on the emulated device), optimizers
with Keras 2's optimizer_v2 arithmetic, losses, metrics, callbacks, initializers,
activations, regularizers, constraints, backend, HDF5 weights and models, and the cached
Keras datasets. Everything computes with ipu_gpu's ops and tape; TensorFlow is never used.

Subpackages load on first use, so ``import ipu_gpu.keras`` costs nothing and never
imports TensorFlow or Keras.
"""

from __future__ import annotations

import importlib

_SUBMODULES = ("activations", "backend", "callbacks", "constraints", "datasets",
               "initializers", "ipu", "layers", "losses", "metrics", "mixed_precision", "models",
               "optimizers", "preprocessing", "regularizers", "utils")
# top-level names and the submodule that defines them
_NAMES = {"Input": "layers", "Model": "models", "Sequential": "models"}

__all__ = [*_SUBMODULES, *_NAMES]


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        value = getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
