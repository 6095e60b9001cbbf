"""``tf.layers`` (TF 1.15) beyond ``dense``/``flatten``/``dropout``: ``conv2d``,
``max_pooling2d``, ``average_pooling2d`` and ``batch_normalization``, on ``get_variable`` so
variable scopes, ``reuse`` and the variable names (``conv2d/kernel``, ``batch_normalization/
moving_mean``, ...) are TF's.

``batch_normalization`` normalises with the batch's moments when ``training`` (a bool or a
boolean tensor) and with the moving ones otherwise; in training it puts the moving-average
updates (``moving -= (moving - batch) * (1 - momentum)``) in the ``update_ops`` collection,
which programs run through ``control_dependencies``. A 4-D input normalised over one axis
uses TF's fused kernel's rule: the moving variance takes the unbiased batch variance."""

from __future__ import annotations

import numpy as np

from .variable_scope import get_variable, variable_scope, zeros_initializer

__all__ = ["average_pooling2d", "batch_normalization", "conv2d", "max_pooling2d"]

UPDATE_OPS = "update_ops"


def _pair(value, name):
    if isinstance(value, int):
        return (value, value)
    pair = tuple(int(v) for v in value)
    if len(pair) != 2:
        raise ValueError(f"The `{name}` argument must be a tuple of 2 integers. Received: "
                         f"{value}")
    return pair


def _padding(padding):
    mode = str(padding).upper()
    if mode not in ("VALID", "SAME"):
        raise ValueError(f"The `padding` argument must be a list/tuple or one of \"valid\", "
                         f"\"same\" (or \"causal\", only for `Conv1D). Received: {padding}")
    return mode


def _to_nhwc(inputs, data_format):
    import ipu_gpu as core

    if data_format == "channels_first":
        return core.transpose(inputs, [0, 2, 3, 1])
    if data_format != "channels_last":
        raise ValueError(f"The `data_format` argument must be one of \"channels_first\", "
                         f"\"channels_last\". Received: {data_format}")
    return inputs


def _from_nhwc(outputs, data_format):
    import ipu_gpu as core

    return core.transpose(outputs, [0, 3, 1, 2]) if data_format == "channels_first" else outputs


def conv2d(inputs, filters, kernel_size, strides=(1, 1), padding="valid",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
           bias_constraint=None, trainable=True, name=None, reuse=None):
    """``tf.layers.conv2d``: a 2-D convolution with the variables ``<name>/kernel``
    ([kh, kw, in, filters]) and ``<name>/bias`` (name default ``conv2d``, made unique)."""
    import ipu_gpu as core

    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(strides, "strides")
    dh, dw = _pair(dilation_rate, "dilation_rate")
    mode = _padding(padding)
    x = _to_nhwc(inputs, data_format)
    channels = int(x.shape[-1])
    with variable_scope(name, default_name="conv2d", reuse=reuse):
        kernel = get_variable("kernel", [kh, kw, channels, int(filters)],
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              trainable=trainable)
        out = core.nn.conv2d(x, kernel, strides=[1, sh, sw, 1], padding=mode,
                             dilations=[1, dh, dw, 1])
        if use_bias:
            bias = get_variable("bias", [int(filters)], regularizer=bias_regularizer,
                                initializer=bias_initializer or zeros_initializer(),
                                trainable=trainable)
            out = core.nn.bias_add(out, bias)
        out = _from_nhwc(out, data_format)
        return activation(out) if activation is not None else out


def _pool(op, inputs, pool_size, strides, padding, data_format, name, default_name):
    ph, pw = _pair(pool_size, "pool_size")
    sh, sw = _pair(strides, "strides")
    mode = _padding(padding)
    with variable_scope(name, default_name=default_name):
        out = op(_to_nhwc(inputs, data_format), ksize=[1, ph, pw, 1], strides=[1, sh, sw, 1],
                 padding=mode)
        return _from_nhwc(out, data_format)


def max_pooling2d(inputs, pool_size, strides, padding="valid", data_format="channels_last",
                  name=None):
    """``tf.layers.max_pooling2d``: the maximum of each window (ops in the scope ``name``,
    default ``max_pooling2d``)."""
    import ipu_gpu as core

    return _pool(core.nn.max_pool2d, inputs, pool_size, strides, padding, data_format, name,
                 "max_pooling2d")


def average_pooling2d(inputs, pool_size, strides, padding="valid",
                      data_format="channels_last", name=None):
    """``tf.layers.average_pooling2d``: the mean of each window (ops in the scope ``name``,
    default ``average_pooling2d``)."""
    import ipu_gpu as core

    return _pool(core.nn.avg_pool2d, inputs, pool_size, strides, padding, data_format, name,
                 "average_pooling2d")


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=None, gamma_initializer=None,
                        moving_mean_initializer=None, moving_variance_initializer=None,
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """``tf.layers.batch_normalization`` over axis ``axis`` with the variables ``gamma``,
    ``beta``, ``moving_mean`` and ``moving_variance`` under ``<name>`` (default
    ``batch_normalization``); see the module docstring for training and the updates.

    Raises:
      ValueError: ``renorm`` or ``virtual_batch_size`` (not provided), an axis out of range."""
    import ipu_gpu as core
    from ... import graph as _graph
    from .variable_scope import ones_initializer

    if renorm or virtual_batch_size is not None or adjustment is not None:
        raise ValueError("batch_normalization: renorm, virtual_batch_size and adjustment are "
                         "not provided by ipu_gpu")
    rank = len(inputs.shape)
    if not -rank <= axis < rank:
        raise ValueError(f"Invalid axis: {axis}")
    axis = axis % rank
    channels = int(inputs.shape[axis])
    reduce_axes = [a for a in range(rank) if a != axis]
    shape = [1] * rank
    shape[axis] = channels
    use_fused = (rank == 4 and axis in (1, 3)) if fused is None else bool(fused)
    with variable_scope(name, default_name="batch_normalization", reuse=reuse):
        gamma = get_variable("gamma", [channels], regularizer=gamma_regularizer,
                             initializer=gamma_initializer or ones_initializer(),
                             trainable=trainable) if scale else None
        beta = get_variable("beta", [channels], regularizer=beta_regularizer,
                            initializer=beta_initializer or zeros_initializer(),
                            trainable=trainable) if center else None
        moving_mean = get_variable("moving_mean", [channels], trainable=False,
                                   initializer=moving_mean_initializer or zeros_initializer())
        moving_variance = get_variable(
            "moving_variance", [channels], trainable=False,
            initializer=moving_variance_initializer or ones_initializer())

    def normalize(mean, variance):
        inv = core.math.rsqrt(core.reshape(variance, shape) + epsilon)
        if gamma is not None:
            inv = inv * core.reshape(gamma, shape)
        out = (inputs - core.reshape(mean, shape)) * inv
        return out + core.reshape(beta, shape) if beta is not None else out

    def batch_moments():
        mean, variance = core.nn.moments(inputs, reduce_axes)
        return mean, variance

    def train_output():
        return normalize(*batch_moments())

    def infer_output():
        return normalize(moving_mean, moving_variance)

    if isinstance(training, (bool, np.bool_)):
        if not training:
            return infer_output()
        out = train_output()
        decide = None
    else:
        out = _graph.program.cond(training, train_output, infer_output)
        decide = training

    mean, variance = batch_moments()
    if use_fused:
        n = core.cast(core.size(inputs), variance.dtype) / float(channels)  # batch unknown
        variance = variance * (n / core.maximum(n - 1.0, 1.0))
    keep = 1.0 - momentum
    for moving, batch in ((moving_mean, mean), (moving_variance, variance)):
        if decide is None:
            update = moving.assign_sub((moving - batch) * keep)
        else:
            update = moving.assign_sub(_graph.program.cond(
                decide, lambda m=moving, b=batch: (m - b) * keep,
                lambda m=moving: core.zeros_like(m)))
        if _graph.core.building():
            _graph.get_default_graph().add_to_collection(UPDATE_OPS, update)
    return out
