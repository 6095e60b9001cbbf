"""``tf.compat.v1.nn.fused_batch_norm`` (TF's FusedBatchNormV3, built from the core ops).

Training: ``y = (x - batch_mean) * rsqrt(batch_var + epsilon) * scale + offset`` over every
axis but the channels', and the returned variance is the unbiased batch variance (the
kernel's Bessel correction); with ``exponential_avg_factor`` f below 1 the returned
statistics are the running ones, ``(1 - f) * given + f * batch``. Inference: the given
``mean`` and ``variance`` normalise and are returned. As TF's gradient, ``y`` is
differentiable in ``x``, ``scale`` and ``offset`` only (the statistics get no gradient).
``epsilon`` is at least 1.001e-5 (TF raises smaller values to it); float16 and bfloat16
inputs compute in float32, ``y`` keeps the input's dtype and the statistics are float32.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fused_batch_norm"]

_FORMATS = ("NHWC", "NCHW", "NDHWC", "NCDHW")


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001,
                     data_format="NHWC", is_training=True, name=None,
                     exponential_avg_factor=1.0):
    """``(y, mean, variance)`` of a batch normalization over the channel axis of ``x``.

    Raises:
      ValueError: no ``mean``/``variance`` when they are needed, a ``data_format`` TF does
        not know, or an ``x`` of another rank than the format's (TF's messages)."""
    import ipu_gpu as core

    if (not is_training or exponential_avg_factor != 1.0) and (mean is None
                                                               or variance is None):
        raise ValueError("Both `mean` and `variance` must be a 1D tensor when `is_training` "
                         "is False or `exponential_avg_factor` != 1.0. Received: `mean` "
                         f"{mean} and `variance` {variance}")
    if data_format not in _FORMATS:
        raise ValueError(f"Attr 'data_format' of 'FusedBatchNormV3' Op passed string "
                         f"'{data_format}' not in: \"NHWC\", \"NCHW\", \"NDHWC\", \"NCDHW\".")
    rank = len(data_format)
    x_rank = x.shape.rank if hasattr(x.shape, "rank") else len(np.shape(x))
    if x_rank is not None and x_rank != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {x_rank} for "
                         f"'FusedBatchNormV3' (op: 'FusedBatchNormV3') with input shapes: "
                         f"{list(x.shape)}.")
    channel_axis = 1 if data_format.startswith("NC") else rank - 1
    axes = [a for a in range(rank) if a != channel_axis]
    shape = [1] * rank
    shape[channel_axis] = -1
    eps = max(float(epsilon), 1.001e-5)
    stats_dtype = np.float32
    x_dtype = x.dtype
    xf = core.cast(x, stats_dtype) if core.as_dtype(x_dtype) != core.float32 else x

    def channels(v):
        return core.reshape(core.cast(v, stats_dtype), shape)

    def normalize(m, v):
        factor = core.math.rsqrt(channels(v) + eps) * channels(scale)
        y = (xf - channels(m)) * factor + channels(offset)
        return core.cast(y, x_dtype) if core.as_dtype(x_dtype) != core.float32 else y

    if not is_training:
        m, v = core.stop_gradient(mean), core.stop_gradient(variance)
        return normalize(m, v), core.cast(mean, stats_dtype), core.cast(variance, stats_dtype)
    batch_mean, batch_var = core.nn.moments(xf, axes)
    y = normalize(batch_mean, batch_var)
    n = core.cast(core.size(xf), stats_dtype) / core.cast(core.size(batch_mean), stats_dtype)
    unbiased = batch_var * (n / core.maximum(n - 1.0, 1.0))
    if exponential_avg_factor != 1.0:
        f = float(exponential_avg_factor)
        batch_mean = (1.0 - f) * core.cast(mean, stats_dtype) + f * batch_mean
        unbiased = (1.0 - f) * core.cast(variance, stats_dtype) + f * unbiased
    return y, core.stop_gradient(batch_mean), core.stop_gradient(unbiased)
