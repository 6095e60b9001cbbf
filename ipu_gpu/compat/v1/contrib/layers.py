"""``tf.contrib.layers``' initializers and regularizers, in TF 1.15's arithmetic:
``variance_scaling_initializer(factor, mode, uniform)`` draws uniformly within
``sqrt(3 * factor / n)`` or from a normal truncated at two deviations with deviation
``sqrt(1.3 * factor / n)`` (n: fan in, fan out or their mean); ``xavier_initializer`` is
``factor=1, mode='FAN_AVG'``; the regularizers return ``scale * l1`` / ``scale * l2_loss``
functions of a weight tensor."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["l1_l2_regularizer", "l1_regularizer", "l2_regularizer",
           "variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d"]

# TF's truncated normal (within two deviations) has deviation 0.8796... of its parameter
_TRUNCATED_STDDEV = 0.87962566103423978


def variance_scaling_initializer(factor=2.0, mode="FAN_IN", uniform=False, seed=None,
                                 dtype=np.float32):
    """An initializer whose variance scales with the fan (He's initializer by default).

    Raises:
      TypeError: ``dtype`` is not a float type (TF's message).
      TypeError: ``mode`` is not FAN_IN, FAN_OUT or FAN_AVG (TF's message)."""
    from ..variable_scope import variance_scaling_initializer as scaled

    if np.dtype(getattr(dtype, "as_numpy_dtype", dtype)).kind != "f":
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
    if uniform:
        return scaled(scale=float(factor), mode=mode.lower(), distribution="uniform",
                      seed=seed, dtype=dtype)
    return scaled(scale=1.3 * float(factor) * _TRUNCATED_STDDEV ** 2, mode=mode.lower(),
                  distribution="truncated_normal", seed=seed, dtype=dtype)


def xavier_initializer(uniform=True, seed=None, dtype=np.float32):
    """Glorot's initializer: ``variance_scaling_initializer(1.0, 'FAN_AVG', uniform)``."""
    return variance_scaling_initializer(factor=1.0, mode="FAN_AVG", uniform=uniform,
                                        seed=seed, dtype=dtype)


xavier_initializer_conv2d = xavier_initializer


def _check_scale(scale):
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        return scale != 0.0
    return True


def l1_regularizer(scale, scope=None):
    """``weights -> scale * sum(|weights|)`` (None for scale 0).

    Raises:
      ValueError: an integer or negative ``scale`` (TF's messages)."""
    import ipu_gpu as core

    if not _check_scale(scale):
        return lambda _: None
    return lambda weights: core.multiply(core.cast(scale, weights.dtype),
                                         core.reduce_sum(core.abs(weights)))


def l2_regularizer(scale, scope=None):
    """``weights -> scale * l2_loss(weights)`` (``sum(w**2) / 2``; None for scale 0).

    Raises:
      ValueError: an integer or negative ``scale`` (TF's messages)."""
    import ipu_gpu as core

    if not _check_scale(scale):
        return lambda _: None
    return lambda weights: core.multiply(core.cast(scale, weights.dtype),
                                         core.nn.l2_loss(weights))


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of ``l1_regularizer(scale_l1)`` and ``l2_regularizer(scale_l2)``."""
    import ipu_gpu as core

    if isinstance(scale_l1, numbers.Integral) or isinstance(scale_l2, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale_l1}, {scale_l2}")
    l1, l2 = l1_regularizer(scale_l1), l2_regularizer(scale_l2)

    def regularize(weights):
        terms = [t for t in (l1(weights), l2(weights)) if t is not None]
        return None if not terms else terms[0] if len(terms) == 1 else core.add(*terms)
    return regularize
