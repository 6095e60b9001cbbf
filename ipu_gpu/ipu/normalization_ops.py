"""``tensorflow.python.ipu.normalization_ops`` (also ``ipu.ops.normalization_ops``): the Popnn
group, layer and instance normalisations (Wu & He 2018; Ba et al. 2016; Ulyanov et al. 2016).

Each normalises every example (axis 0) over its spatial positions and the channels of one
group: ``(x - mean) / sqrt(var + epsilon) * gamma[c] + beta[c]`` with the biased variance
``max(E[x^2] - mean^2, 0)`` that PopLibs computes (float32 statistics for float16 inputs).
``layer_norm`` is one group, ``instance_norm`` one group per channel. ``beta`` and ``gamma``
are per-channel (shape [C], also for ``layer_norm``) variables made with
``tf.compat.v1.get_variable`` in the variable scope ``scope`` (default "GroupNorm",
"LayerNorm", "InstanceNorm"), initialised to zeros and ones, as Graphcore's implementation.

Deliberate difference: with ``training=False`` Graphcore runs an inference op (batch statistics
too, the same numbers) that has no gradient; here the gradient is the training one.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from ipu_gpu.compat.v1.variable_scope import (get_variable, ones_initializer, variable_scope,
                                              zeros_initializer)
from ipu_gpu.core import dtypes
from ipu_gpu.core.convert import constant, convert_to_tensor
from ipu_gpu.graph import GraphTensor
from ipu_gpu.ops import math as math_ops
from ipu_gpu.ops import reduction
from ipu_gpu.ops.shape import reshape

__all__ = ["group_norm", "instance_norm", "layer_norm"]

_NCHW, _NHWC = "NCHW", "NHWC"


def _tensor(inputs):
    return inputs if isinstance(inputs, GraphTensor) else convert_to_tensor(inputs)


def _dims(inputs) -> list | None:
    shape = inputs.shape
    if getattr(shape, "ndims", 0) is None:
        return None
    return [None if d is None else int(d) for d in shape]


def _name(inputs) -> str:
    return getattr(inputs, "name", None) or "inputs"


def _check_rank(inputs, dims, channels_axis):
    if dims is None:
        raise ValueError(f"Inputs {_name(inputs)} has undefined rank.")
    if channels_axis > len(dims) - 1 or channels_axis < -len(dims):
        raise ValueError("Axis is out of bounds.")


def _collections(variables_collections, name):
    if isinstance(variables_collections, dict):
        return variables_collections.get(name, None)
    return variables_collections


def _group_norm_impl(inputs, groups, channels_axis, center, scale, epsilon,
                     param_initializers, reuse, variables_collections, training, trainable,
                     scope, norm_type, strided):
    inputs = _tensor(inputs)
    dims = _dims(inputs)
    _check_rank(inputs, dims, channels_axis)
    rank = len(dims)
    if channels_axis < 0:
        channels_axis += rank
    channels = dims[channels_axis]
    if rank < 2:
        raise ValueError(f"Inputs {_name(inputs)} must have at least 2 dimensions (a batch "
                         f"and a channels dimension), got rank {rank}.")
    if channels_axis == 1:
        data_format = _NCHW
    elif channels_axis == rank - 1:
        data_format = _NHWC
    else:
        raise ValueError("Unsupported data format, group norm only supports NCHW"
                         "(channel axis 1) and NHWC (channel axis -1).")
    if channels is None:
        raise ValueError(f"Inputs {_name(inputs)} has undefined channel dimension: "
                         f"{channels_axis}.")
    if groups is None:
        groups = channels
    if groups > channels:
        raise ValueError(f"Invalid groups {groups} for {channels} channels.")
    if channels % groups != 0:
        raise ValueError(f"{channels} channels is not commensurate with {groups} groups.")
    dtype = dtypes.as_dtype(inputs.dtype, "group_norm: inputs")
    if dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"Value passed to parameter 'inputs' has DataType {dtype.name} not in "
                        "list of allowed values: float16, float32")

    with variable_scope(scope, norm_type, [inputs], reuse=reuse):
        params_shape = [channels]
        initializers = param_initializers or {}

        def param(name, learnt, initializer, value):
            if not learnt:
                return constant(value, dtype=dtype, shape=params_shape)
            return get_variable(name, shape=params_shape, dtype=dtype,
                                initializer=initializers.get(name, initializer),
                                collections=_collections(variables_collections, name),
                                trainable=trainable)
        beta = param("beta", center, zeros_initializer(), 0.0)
        gamma = param("gamma", scale, ones_initializer(), 1.0)
        return _normalise(inputs, gamma, beta, dims, data_format, groups, epsilon, strided)


def _normalise(x, gamma, beta, dims, data_format, groups, epsilon, strided):
    """The PopLibs group normalisation of ``x`` (shape ``dims``) with per-channel ``gamma`` and
    ``beta``; a composite of registered ops, so it runs eagerly and in graphs alike and
    differentiates through the statistics."""
    rank = len(dims)
    if any(d is None for d in dims[1:]):
        raise ValueError(f"Inputs {_name(x)} must have a fully defined shape apart from the "
                         f"batch dimension, got {dims}.")
    batch = -1 if dims[0] is None else dims[0]
    out_dtype = x.dtype
    stats_dtype = dtypes.float32
    xs = math_ops.cast(x, stats_dtype) if x.dtype != stats_dtype else x
    if data_format == _NHWC:
        channels, spatial = dims[-1], math.prod(dims[1:-1])
        per = channels // groups
        grouped = [batch, spatial, per, groups] if strided else [batch, spatial, groups, per]
        axes = (1, 2) if strided else (1, 3)
        param_shape = [channels]
    else:
        channels, spatial = dims[1], math.prod(dims[2:])
        per = channels // groups
        grouped = [batch, per, groups, spatial] if strided else [batch, groups, per, spatial]
        axes = (1, 3) if strided else (2, 3)
        param_shape = [channels] + [1] * (rank - 2)
    g = reshape(xs, grouped)
    mean = reduction.reduce_mean(g, axis=axes, keepdims=True)
    power = reduction.reduce_mean(math_ops.square(g), axis=axes, keepdims=True)
    var = math_ops.maximum(math_ops.subtract(power, math_ops.square(mean)), 0.0)
    inv_std = math_ops.rsqrt(math_ops.add(var, np.float32(epsilon)))
    normed = reshape(math_ops.multiply(math_ops.subtract(g, mean), inv_std),
                     [batch] + list(dims[1:]))
    gamma_s = reshape(math_ops.cast(gamma, stats_dtype), param_shape)
    beta_s = reshape(math_ops.cast(beta, stats_dtype), param_shape)
    y = math_ops.add(math_ops.multiply(normed, gamma_s), beta_s)
    return math_ops.cast(y, out_dtype) if out_dtype != stats_dtype else y


def _reduction_axes_warning(reduction_axes):
    # TF's deprecated_args decorator logs (it does not raise a Python warning)
    if reduction_axes is not None:
        logging.getLogger("tensorflow").warning(
            "Calling with reduction_axes is deprecated: reduction_axes is deprecated as it has "
            "no effect.")


def group_norm(inputs, groups=2, channels_axis=-1, reduction_axes=None, center=True, scale=True,
               epsilon=1e-6, param_initializers=None, reuse=None, variables_collections=None,
               training=True, trainable=True, scope=None, strided_channel_grouping=True):
    """Group normalisation (Wu & He 2018) of ``inputs`` (at least 2-D, channels at axis 1
    or -1) in ``groups`` groups of channels.

    With ``strided_channel_grouping`` (the default) channel ``c`` is in group ``c % groups``
    (PopLibs' efficient, unconventional grouping); without it in group
    ``c // (C / groups)``. ``reduction_axes`` is deprecated and has no effect.

    Returns:
      A tensor of the shape and dtype of ``inputs``.

    Raises:
      ValueError: undefined rank or channels; channels axis out of bounds or neither 1 nor
        the last; ``groups`` above the channel count or not dividing it (Graphcore's
        messages).
      TypeError: inputs neither float16 nor float32.
    """
    _reduction_axes_warning(reduction_axes)
    return _group_norm_impl(inputs, groups, channels_axis, center, scale, epsilon,
                            param_initializers, reuse, variables_collections, training,
                            trainable, scope, "GroupNorm", strided_channel_grouping)


def layer_norm(inputs, channels_axis=-1, reduction_axes=None, center=True, scale=True,
               epsilon=1e-6, param_initializers=None, reuse=None, variables_collections=None,
               training=True, trainable=True, scope=None):
    """Layer normalisation (Ba et al. 2016): a group normalisation with one group, statistics
    over all of an example's spatial positions and channels; ``beta``/``gamma`` of shape
    [C]. Raises as ``group_norm``."""
    _reduction_axes_warning(reduction_axes)
    return _group_norm_impl(inputs, 1, channels_axis, center, scale, epsilon,
                            param_initializers, reuse, variables_collections, training,
                            trainable, scope, "LayerNorm", False)


def instance_norm(inputs, channels_axis=-1, reduction_axes=None, center=True, scale=True,
                  epsilon=1e-6, param_initializers=None, reuse=None,
                  variables_collections=None, training=True, trainable=True, scope=None):
    """Instance normalisation (Ulyanov et al. 2016): a group normalisation with one group per
    channel, statistics over an example's spatial positions. Raises as ``group_norm``."""
    _reduction_axes_warning(reduction_axes)
    return _group_norm_impl(inputs, None, channels_axis, center, scale, epsilon,
                            param_initializers, reuse, variables_collections, training,
                            trainable, scope, "InstanceNorm", False)
