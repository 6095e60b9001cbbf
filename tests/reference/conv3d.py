"""3-D convolution and pooling in float64, NDHWC, written from the definitions: each output
is a sum (or max, or mean) over its window; SAME padding as TF (``ceil(n / s)`` outputs,
``before = total // 2``)."""

from __future__ import annotations

import itertools

import numpy as np


def _pads(spatial, ksize, strides, dilations, padding):
    out = []
    for n, k, s, d in zip(spatial, ksize, strides, dilations):
        eff = (k - 1) * d + 1
        if padding == "SAME":
            o = -(-n // s)
            total = max((o - 1) * s + eff - n, 0)
            out.append((total // 2, o))
        else:
            out.append((0, (n - eff) // s + 1))
    return out


def conv3d(x, w, strides, padding, dilations=(1, 1, 1)):
    """x [N, D, H, W, C], w [kd, kh, kw, C / groups, K]."""
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, *spatial, c = x.shape
    cg, k = w.shape[3], w.shape[4]
    groups = c // cg
    kg = k // groups
    geo = _pads(spatial, w.shape[:3], strides, dilations, padding)
    y = np.zeros((n, *[o for _, o in geo], k))
    for out in itertools.product(*(range(o) for _, o in geo)):
        for tap in itertools.product(*(range(v) for v in w.shape[:3])):
            pos = [o * s - b + t * d for o, s, (b, _), t, d
                   in zip(out, strides, geo, tap, dilations)]
            if all(0 <= p < m for p, m in zip(pos, spatial)):
                v = x[:, pos[0], pos[1], pos[2], :]
                for g in range(groups):
                    y[(slice(None), *out, slice(g * kg, (g + 1) * kg))] += (
                        v[:, g * cg:(g + 1) * cg] @ w[tap][:, g * kg:(g + 1) * kg])
    return y


def pool3d(x, ksize, strides, padding, kind):
    """Max (padding never read) or mean over the in-bounds elements of each window."""
    x = np.asarray(x, np.float64)
    n, *spatial, c = x.shape
    geo = _pads(spatial, ksize, strides, (1, 1, 1), padding)
    y = np.zeros((n, *[o for _, o in geo], c))
    for out in itertools.product(*(range(o) for _, o in geo)):
        lo = [max(o * s - b, 0) for o, s, (b, _) in zip(out, strides, geo)]
        hi = [min(o * s - b + k, m) for o, s, (b, _), k, m in zip(out, strides, geo, ksize,
                                                                  spatial)]
        win = x[:, lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2], :]
        y[(slice(None), *out, slice(None))] = (win.max(axis=(1, 2, 3)) if kind == "max"
                                               else win.mean(axis=(1, 2, 3)))
    return y
