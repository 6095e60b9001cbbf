"""numpy float64 references for the IPU-specific op modules of ``tensorflow.python.ipu``:
the Popnn group normalisation (``normalization_ops``) and ``image_ops.normalise_image``."""

from __future__ import annotations

import numpy as np


def group_norm(x, gamma, beta, groups, channels_axis=-1, epsilon=1e-6, strided=True):
    """Normalise each example (axis 0) over its spatial positions and the channels of each
    group (channel c in group ``c % groups`` when ``strided``, else ``c // (C / groups)``)
    with the biased variance, then ``* gamma[c] + beta[c]``."""
    x = np.asarray(x, np.float64)
    rank = x.ndim
    axis = channels_axis % rank
    moved = np.moveaxis(x, axis, -1)
    channels = moved.shape[-1]
    per = channels // groups
    c = np.arange(channels)
    group_of = c % groups if strided else c // per
    out = np.empty_like(moved)
    for n in range(moved.shape[0]):
        for g in range(groups):
            sel = moved[n][..., group_of == g]
            mean = sel.mean()
            var = ((sel - mean) ** 2).mean()
            out[n][..., group_of == g] = (sel - mean) / np.sqrt(var + epsilon)
    out = out * np.asarray(gamma, np.float64) + np.asarray(beta, np.float64)
    return np.moveaxis(out, -1, axis)


def normalise_image(image, offsets, scales, scale=1.0):
    """``(image * scale - offsets[c]) * scales[c]`` per channel, with a fourth channel of
    zeros."""
    x = np.asarray(image, np.float64)
    y = (x * scale - np.asarray(offsets, np.float64)) * np.asarray(scales, np.float64)
    return np.concatenate([y, np.zeros(y.shape[:-1] + (1,))], axis=-1)
