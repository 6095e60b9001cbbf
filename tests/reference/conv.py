"""tf.nn convolutions in float64: conv2d (grouped), depthwise_conv2d, conv2d_transpose, conv1d,
and conv2d_bias (conv2d + bias_add (+ relu), Keras's Conv2D).

Written from the definitions: the output at each position is a sum over the filter taps of
the (padded) input sampled with strides and dilations; the transpose is that map's adjoint,
built by scattering each input value through the taps.
"""

from __future__ import annotations

import numpy as np


def _f(x):
    return np.asarray(x, np.float64)


def _pair(v, fmt, n=2):
    """Spatial values from an int, or a list of 1, n or n + 2 (``fmt`` order)."""
    if v is None:
        return (1,) * n
    v = [int(a) for a in np.atleast_1d(v)]
    if len(v) == 1:
        return tuple(v * n)
    if len(v) == n:
        return tuple(v)
    c = fmt.index("C")
    return tuple(a for i, a in enumerate(v) if i not in (0, c))


def _pads(padding, sizes, ksizes, strides, dilations, fmt):
    """[(before, after)] per spatial dimension, TF's SAME/VALID/explicit rules."""
    out = []
    if isinstance(padding, str):
        for n, k, s, d in zip(sizes, ksizes, strides, dilations):
            eff = (k - 1) * d + 1
            if padding == "VALID":
                out.append((0, 0))
            else:
                o = -(-n // s)
                total = max((o - 1) * s + eff - n, 0) if o else 0
                out.append((total // 2, total - total // 2))
        return out
    c = fmt.index("C")
    return [tuple(int(a) for a in p) for i, p in enumerate(padding) if i not in (0, c)]


def _to_nhwc(x, fmt):
    return np.transpose(x, (0, 2, 3, 1)) if fmt in ("NCHW", "NCW") else x


def _from_nhwc(y, fmt):
    return np.transpose(y, (0, 3, 1, 2)) if fmt in ("NCHW", "NCW") else y


def _out_size(n, k, s, d, p):
    return (n + p[0] + p[1] - (k - 1) * d - 1 + s) // s


def _conv_nhwc(x, w, strides, dilations, pads):
    """Grouped conv of x[N, H, W, C] with w[kh, kw, C/g, K]: per-tap sums of sampled inputs."""
    n, h, wd, c = x.shape
    kh, kw, cg, k = w.shape
    groups = c // cg
    kg = k // groups
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)))
    ho = _out_size(h, kh, strides[0], dilations[0], pads[0])
    wo = _out_size(wd, kw, strides[1], dilations[1], pads[1])
    out = np.zeros((n, ho, wo, k))
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * dilations[0], j * dilations[1]
            patch = xp[:, y0:y0 + strides[0] * (ho - 1) + 1:strides[0],
                       x0:x0 + strides[1] * (wo - 1) + 1:strides[1]]
            for g in range(groups):
                out[..., g * kg:(g + 1) * kg] += np.einsum(
                    "nhwc,ck->nhwk", patch[..., g * cg:(g + 1) * cg],
                    w[i, j, :, g * kg:(g + 1) * kg])
    return out


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None):  # noqa: A002
    x = _to_nhwc(_f(input), data_format)
    w = _f(filters)
    s = _pair(strides, data_format)
    d = _pair(dilations, data_format)
    p = _pads(padding, x.shape[1:3], w.shape[:2], s, d, data_format)
    return _from_nhwc(_conv_nhwc(x, w, s, d, p), data_format)


def conv2d_bias(input, filters, bias, strides, padding, dilations=None,  # noqa: A002
                relu=False):
    """conv2d (NHWC) plus ``bias`` over the channels, then max(., 0) with ``relu``."""
    y = conv2d(input, filters, strides, padding, dilations=dilations) + _f(bias)
    return np.maximum(y, 0) if relu else y


def depthwise_conv2d(input, filter, strides, padding, data_format=None,  # noqa: A002
                     dilations=None):
    fmt = data_format or "NHWC"
    x = _to_nhwc(_f(input), fmt)
    f = _f(filter)
    kh, kw, c, m = f.shape
    s = _pair(strides, fmt)
    d = _pair(dilations, fmt)
    p = _pads(padding, x.shape[1:3], f.shape[:2], s, d, fmt)
    outs = [_conv_nhwc(x[..., ci:ci + 1], f[:, :, ci:ci + 1, :], s, d, p) for ci in range(c)]
    return _from_nhwc(np.concatenate(outs, axis=-1), fmt)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME",  # noqa: A002
                     data_format="NHWC", dilations=None):
    fmt = data_format
    dy = _to_nhwc(_f(input), fmt)
    w = _f(filters)  # [kh, kw, out_channels, in_channels]
    shape = [int(v) for v in output_shape]
    if len(shape) == 2:
        shape = [dy.shape[0]] + shape + [w.shape[2]]
    elif fmt == "NCHW":
        shape = [shape[0], shape[2], shape[3], shape[1]]
    s = _pair(strides, fmt)
    d = _pair(dilations, fmt)
    p = _pads(padding, shape[1:3], w.shape[:2], s, d, fmt)
    n, hi, wi, _ = shape
    kh, kw = w.shape[:2]
    out = np.zeros((n, hi + p[0][0] + p[0][1], wi + p[1][0] + p[1][1], shape[3]))
    ho, wo = dy.shape[1:3]
    for a in range(ho):
        for b in range(wo):
            for i in range(kh):
                for j in range(kw):
                    out[:, a * s[0] + i * d[0], b * s[1] + j * d[1]] += dy[:, a, b] @ w[i, j].T
    out = out[:, p[0][0]:p[0][0] + hi, p[1][0]:p[1][0] + wi]
    return _from_nhwc(out, fmt)


def conv1d(input, filters, stride, padding, data_format="NWC", dilations=None):  # noqa: A002
    x = _f(input)
    batch = x.shape[:-2]
    x = x.reshape((-1,) + x.shape[-2:])
    if data_format == "NCW":
        x = np.transpose(x, (0, 2, 1))
    w = _f(filters)[None]
    s = _pair(stride, "NWC", 1)[0]
    d = _pair(dilations, "NWC", 1)[0]
    p = _pads(padding, (1, x.shape[1]), w.shape[:2], (1, s), (1, d), "NHWC")
    y = _conv_nhwc(x[:, None], w, (1, s), (1, d), p)[:, 0]
    if data_format == "NCW":
        y = np.transpose(y, (0, 2, 1))
    return y.reshape(batch + y.shape[1:])
