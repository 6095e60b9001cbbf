"""tf.nn in float64: activations, softmax, cross-entropies, bias_add, l2_loss."""

from __future__ import annotations

import numpy as np


def _f(x):
    return np.asarray(x, np.float64)


def relu(features):
    # max(x, 0) with NaN propagated, as TF's Relu (relu(NaN) is NaN, not 0)
    return np.maximum(_f(features), 0.0)


def leaky_relu(features, alpha=0.2):
    x = _f(features)
    return np.where(x > 0, x, alpha * x)


def elu(features):
    x = _f(features)
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)))


def _logsumexp(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def log_softmax(logits, axis=None):
    x = _f(logits)
    axis = -1 if axis is None else axis
    if x.size == 0:
        return x.copy()
    return x - _logsumexp(x, axis)


def softmax(logits, axis=None):
    return np.exp(log_softmax(logits, axis))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None):
    """z * -log(sigmoid(x)) + (1 - z) * -log(1 - sigmoid(x)), written without overflow."""
    z, x = _f(labels), _f(logits)
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


def softmax_cross_entropy_with_logits(labels, logits, axis=-1):
    z, x = _f(labels), _f(logits)
    if x.size == 0:
        return np.zeros(tuple(s for i, s in enumerate(x.shape) if i != axis % x.ndim))
    return -np.sum(z * log_softmax(x, axis), axis=axis)


def sparse_softmax_cross_entropy_with_logits(labels=None, logits=None):
    ids, x = np.asarray(labels), _f(logits)
    c = x.shape[-1]
    if ids.size and (ids.min() < 0 or ids.max() >= c):
        raise ValueError("labels out of range")
    if x.size == 0:
        return np.zeros(ids.shape)
    ls = log_softmax(x, -1)
    return -np.take_along_axis(ls, ids[..., None].astype(np.int64), axis=-1)[..., 0]


def bias_add(value, bias, data_format=None):
    v, b = _f(value), _f(bias)
    channel = 1 if data_format is not None and data_format.startswith("NC") else v.ndim - 1
    shape = [1] * v.ndim
    shape[channel] = b.shape[0]
    return v + b.reshape(shape)


def l2_loss(t):
    x = _f(t)
    return np.asarray(np.sum(x * x) / 2)
