"""tf.nn.max_pool2d / avg_pool2d in float64, window by window, and their gradients.

TensorFlow's rules: VALID output ``(n - k + s) / s`` truncated; SAME ``ceil(n / s)`` with
padding ``before = total // 2``; explicit padding ``(n + before + after - k + s) / s``.
Padding is never read. Max: the running maximum starts at the lowest finite value
(``lowest``) and takes an element only when strictly greater, so NaN is skipped and the
gradient goes to the first maximum in row-major order (the window's first element when
nothing beat ``lowest``). Average: the mean of the in-bounds elements.
"""

from __future__ import annotations

import numpy as np


def _pair(value, data_format):
    items = [int(value)] if np.ndim(value) == 0 else [int(v) for v in np.asarray(value).ravel()]
    if len(items) == 1:
        return items[0], items[0]
    if len(items) == 2:
        return items[0], items[1]
    return (items[1], items[2]) if data_format == "NHWC" else (items[2], items[3])


def _windows(n, k, s, padding):
    """(start, in-bounds lo, hi) of each window along one dimension."""
    if padding == "VALID":
        before, span = 0, n - k + s
    elif padding == "SAME":
        out = -(-n // s)
        before = max(0, (out - 1) * s + k - n) // 2
        span = out * s
    else:
        before, after = padding
        span = n + before + after - k + s
    out = int(span / s)
    assert out >= 0
    return [(o * s - before, max(o * s - before, 0), min(o * s - before + k, n))
            for o in range(out)]


def _setup(x, ksize, strides, padding, data_format):
    x = np.asarray(x, np.float64)
    if data_format == "NCHW":
        x = x.transpose(0, 2, 3, 1)  # work in NHWC
    kh, kw = _pair(ksize, data_format)
    sh, sw = _pair(strides, data_format)
    if isinstance(padding, str):
        ph = pw = padding
    else:
        pads = [list(p) for p in padding]
        ph, pw = (pads[1], pads[2]) if data_format == "NHWC" else (pads[2], pads[3])
    return x, _windows(x.shape[1], kh, sh, ph), _windows(x.shape[2], kw, sw, pw)


def _layout(y, data_format):
    return y.transpose(0, 3, 1, 2) if data_format == "NCHW" else y


def _argmax(win, lowest):
    """Per (batch, channel): the row-major index of the first strictly-greater maximum of
    ``win`` [N, h, w, C] (0 when nothing beats ``lowest``) and that maximum."""
    flat = win.reshape(win.shape[0], win.shape[1] * win.shape[2], win.shape[3])
    clean = np.where(np.isnan(flat), -np.inf, flat)
    best = clean.max(axis=1)
    idx = np.argmax(clean, axis=1)  # the first occurrence
    beat = best > lowest
    return np.where(beat, idx, 0), np.where(beat, best, lowest)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", lowest=None):
    x, rows, cols = _setup(input, ksize, strides, padding, data_format)
    lowest = np.finfo(np.float64).min if lowest is None else lowest
    y = np.full((x.shape[0], len(rows), len(cols), x.shape[3]), lowest)
    for i, (_, h0, h1) in enumerate(rows):
        for j, (_, w0, w1) in enumerate(cols):
            if h1 > h0 and w1 > w0:
                y[:, i, j] = _argmax(x[:, h0:h1, w0:w1], lowest)[1]
    return _layout(y, data_format)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC"):
    x, rows, cols = _setup(input, ksize, strides, padding, data_format)
    y = np.zeros((x.shape[0], len(rows), len(cols), x.shape[3]))
    for i, (_, h0, h1) in enumerate(rows):
        for j, (_, w0, w1) in enumerate(cols):
            y[:, i, j] = x[:, h0:h1, w0:w1].mean(axis=(1, 2))
    return _layout(y, data_format)


def max_pool2d_grad(input, grad, ksize, strides, padding, data_format="NHWC", lowest=None):
    """The gradient of sum(grad * max_pool2d(input)) with respect to ``input``."""
    x, rows, cols = _setup(input, ksize, strides, padding, data_format)
    g = np.asarray(grad, np.float64)
    g = g.transpose(0, 2, 3, 1) if data_format == "NCHW" else g
    lowest = np.finfo(np.float64).min if lowest is None else lowest
    dx = np.zeros_like(x)
    n_idx, c_idx = np.meshgrid(np.arange(x.shape[0]), np.arange(x.shape[3]), indexing="ij")
    for i, (_, h0, h1) in enumerate(rows):
        for j, (_, w0, w1) in enumerate(cols):
            if h1 > h0 and w1 > w0:
                idx = _argmax(x[:, h0:h1, w0:w1], lowest)[0]
                hh, ww = h0 + idx // (w1 - w0), w0 + idx % (w1 - w0)
                np.add.at(dx, (n_idx, hh, ww, c_idx), g[:, i, j])
    return _layout(dx, data_format)


def avg_pool2d_grad(input, grad, ksize, strides, padding, data_format="NHWC"):
    """The gradient of sum(grad * avg_pool2d(input)) with respect to ``input``."""
    x, rows, cols = _setup(input, ksize, strides, padding, data_format)
    g = np.asarray(grad, np.float64)
    g = g.transpose(0, 2, 3, 1) if data_format == "NCHW" else g
    dx = np.zeros_like(x)
    for i, (_, h0, h1) in enumerate(rows):
        for j, (_, w0, w1) in enumerate(cols):
            count = (h1 - h0) * (w1 - w0)
            dx[:, h0:h1, w0:w1] += (g[:, i, j] / count)[:, None, None, :]
    return _layout(dx, data_format)


def depth_max_pool(input, k):
    """TF's depthwise max pooling of an NHWC ``input`` over runs of ``k`` channels, in
    float64: each run's first element, replaced by a later one only when strictly greater."""
    x = np.asarray(input, np.float64)
    runs = x.reshape(x.shape[:3] + (x.shape[3] // k, k))
    y = runs[..., 0].copy()
    for i in range(1, k):
        y = np.where(runs[..., i] > y, runs[..., i], y)
    return y
