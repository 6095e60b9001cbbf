"""float64 references for sparse gradients: the dense value of IndexedSlices and the sparse
optimizer updates (rows of repeated indices summed first; rows absent from a step keep
their weights and slots)."""

from __future__ import annotations

import numpy as np


def dense(values, indices, shape):
    """The dense tensor: ``values[i]`` added at row ``indices[i]``, zeros elsewhere."""
    out = np.zeros(shape, np.float64)
    np.add.at(out, np.asarray(indices).reshape(-1), np.asarray(values, np.float64))
    return out


def dedup(values, indices):
    """(summed rows, unique indices in first-occurrence order)."""
    values = np.asarray(values, np.float64)
    order = []
    for i in np.asarray(indices).reshape(-1).tolist():
        if i not in order:
            order.append(i)
    summed = np.stack([values[np.asarray(indices) == i].sum(axis=0) for i in order])
    return summed, np.asarray(order)


def sgd_momentum(w, steps, lr, momentum, nesterov=False):
    """Keras's sparse momentum over ``steps`` ((values, indices) pairs): per batch row
    ``a = momentum * a - lr * g``, ``w += a`` (nesterov: ``w += momentum * a - lr * g``)."""
    w = np.array(w, np.float64)
    a = np.zeros_like(w)
    for values, indices in steps:
        g, rows = dedup(values, indices)
        a[rows] = momentum * a[rows] - lr * g
        w[rows] += momentum * a[rows] - lr * g if nesterov else a[rows]
    return w


def adagrad(w, steps, lr, initial, epsilon):
    """Sparse Adagrad: per batch row ``acc += g * g``, ``w -= lr * g / (sqrt(acc) + eps)``."""
    w = np.array(w, np.float64)
    acc = np.full_like(w, initial)
    for values, indices in steps:
        g, rows = dedup(values, indices)
        acc[rows] += g * g
        w[rows] -= lr * g / (np.sqrt(acc[rows]) + epsilon)
    return w


def adam(w, steps, lr, beta_1, beta_2, epsilon):
    """Keras 2's sparse Adam: every row's moments decay, the batch rows' terms are added,
    every row moves by ``lr_t * m / (sqrt(v) + eps)``."""
    w = np.array(w, np.float64)
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, (values, indices) in enumerate(steps, start=1):
        g, rows = dedup(values, indices)
        m *= beta_1
        v *= beta_2
        m[rows] += (1 - beta_1) * g
        v[rows] += (1 - beta_2) * g * g
        lr_t = lr * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        w -= lr_t * m / (np.sqrt(v) + epsilon)
    return w
