"""tf.nn in float64: activations, softmax, cross-entropies, bias_add, l2_loss, and (issue 14)
gelu, silu, l2_normalize, xw_plus_b, 1-D and rank-generic pooling, embedding_lookup."""

from __future__ import annotations

import math

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


# ---- issue 14: gelu, silu, l2_normalize, xw_plus_b, 1-D and rank-generic pooling,
# embedding_lookup -------------------------------------------------------------------------
def _erfc(v):
    return math.erfc(v) if not math.isnan(v) else math.nan


def gelu(features, approximate=False):
    x = _f(features)
    if approximate:
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * np.asarray(np.frompyfunc(_erfc, 1, 1)(-x / math.sqrt(2)), np.float64)


def silu(features, beta=1.0):
    x, b = _f(features), _f(beta)
    z = b * x
    e = np.exp(-np.abs(z))  # sigmoid without overflow
    return x * np.where(z >= 0, 1 / (1 + e), e / (1 + e))


def l2_normalize(x, axis=None, epsilon=1e-12, dim=None):
    x = _f(x)
    axis = dim if dim is not None else axis
    axes = None if axis is None else tuple(np.atleast_1d(axis).tolist())
    return x / np.sqrt(np.maximum(np.sum(x * x, axis=axes, keepdims=True), epsilon))


def xw_plus_b(x, weights, biases):
    return _f(x) @ _f(weights) + _f(biases)


def _pool1d(x, ksize, strides, padding, data_format, reduce):
    x = _f(x)
    if data_format == "NCW":
        x = x.transpose(0, 2, 1)

    def one(v):
        items = np.atleast_1d(v).tolist()
        return items[0] if len(items) == 1 else (items[1] if data_format == "NWC" else items[2])

    k, s = one(ksize), one(strides)
    n = x.shape[1]
    if padding == "VALID":
        before, count = 0, (n - k + s) // s
    elif padding == "SAME":
        count = -(-n // s)
        before = max(0, (count - 1) * s + k - n) // 2
    else:
        pads = [list(p) for p in padding]
        before, after = pads[1] if data_format == "NWC" else pads[2]
        count = (n + before + after - k + s) // s
    out = np.zeros((x.shape[0], count, x.shape[2]))
    for o in range(count):
        lo, hi = max(o * s - before, 0), min(o * s - before + k, n)
        out[:, o, :] = reduce(x[:, lo:hi, :], axis=1)
    return out.transpose(0, 2, 1) if data_format == "NCW" else out


def max_pool1d(input, ksize, strides, padding, data_format="NWC"):  # noqa: A002
    return _pool1d(input, ksize, strides, padding, data_format, np.max)


def avg_pool1d(input, ksize, strides, padding, data_format="NWC"):  # noqa: A002
    return _pool1d(input, ksize, strides, padding, data_format, np.mean)


def _pool3d(x, ksize, strides, padding, kind):
    from .conv3d import pool3d

    def three(v):
        return (v,) * 3 if isinstance(v, int) else tuple(v)
    return pool3d(x, three(ksize), three(strides), padding, kind)


def max_pool(input, ksize, strides, padding, data_format=None):  # noqa: A002
    if np.ndim(input) == 3:
        return max_pool1d(input, ksize, strides, padding, data_format or "NWC")
    if np.ndim(input) == 5:  # NDHWC
        return _pool3d(input, ksize, strides, padding, "max")
    from .pooling import max_pool2d
    return max_pool2d(input, ksize, strides, padding, data_format or "NHWC")


def avg_pool(input, ksize, strides, padding, data_format=None):  # noqa: A002
    if np.ndim(input) == 3:
        return avg_pool1d(input, ksize, strides, padding, data_format or "NWC")
    if np.ndim(input) == 5:  # NDHWC
        return _pool3d(input, ksize, strides, padding, "avg")
    from .pooling import avg_pool2d
    return avg_pool2d(input, ksize, strides, padding, data_format or "NHWC")


def embedding_lookup(params, ids, max_norm=None):
    """Row i of the concatenated partitions for id i (the 'div' split keeps id order); rows
    with an l2 norm above ``max_norm`` scaled down to it."""
    if isinstance(params, (list, tuple)):
        params = np.concatenate([_f(p) for p in params])
    params, ids = _f(params), np.asarray(ids)
    out = np.zeros(ids.shape + params.shape[1:])
    for pos in np.ndindex(ids.shape):
        row = params[int(ids[pos])]
        if max_norm is not None:
            norm = math.sqrt(float(np.sum(row * row)))
            if norm > max_norm:
                row = row * max_norm / norm
        out[pos] = row
    return out
