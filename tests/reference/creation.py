"""Tensors made from shapes and values."""

from __future__ import annotations

import numpy as np


def _shape(shape):
    return tuple(int(s) for s in np.asarray(shape).reshape(-1))


def zeros(shape, dtype=np.float32):
    return np.zeros(_shape(shape), np.float64)


def ones(shape, dtype=np.float32):
    return np.ones(_shape(shape), np.float64)


def zeros_like(input, dtype=None):  # noqa: A002 - TF's name
    return np.zeros(np.shape(input), np.float64)


def ones_like(input, dtype=None):  # noqa: A002 - TF's name
    return np.ones(np.shape(input), np.float64)


def fill(dims, value):
    return np.full(_shape(dims), np.asarray(value, np.float64))


def range(start, limit=None, delta=1, dtype=None):  # noqa: A001 - TF's name
    if limit is None:
        start, limit = 0, start
    n = max(0, int(np.ceil((limit - start) / delta)))
    return start + delta * np.arange(n, dtype=np.float64)


def constant(value, dtype=None, shape=None):
    a = np.asarray(value, np.float64)
    if shape is not None:
        a = np.broadcast_to(a.reshape(()), tuple(shape)) if a.size == 1 else a.reshape(shape)
    return a.copy()


def convert_to_tensor(value, dtype=None):
    return np.asarray(value, np.float64).copy()
