"""Keras 2's ``keras.backend`` building blocks for layers: ``rnn`` (the time loop of every
recurrent layer), ``local_conv1d``/``local_conv2d`` (unshared-weight convolutions),
``separable_conv2d`` and the focal cross-entropies, with tf-keras's arguments and results
(``tf_keras/src/backend.py``)."""

from __future__ import annotations

import itertools

import ipu_gpu as _tf

from . import backend as _K
from . import backend_ops as _ops

__all__ = ["binary_focal_crossentropy", "categorical_focal_crossentropy", "local_conv1d",
           "local_conv2d", "rnn", "separable_conv2d"]


def _expand_mask(mask_t, like):
    """``mask_t`` (batch,) broadcast to the shape of ``like``."""
    for _ in range(like.ndim - mask_t.ndim):
        mask_t = _tf.expand_dims(mask_t, -1)
    return _tf.broadcast_to(mask_t, like.shape)


def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None,
        unroll=False, input_length=None, time_major=False, zero_output_for_mask=False,
        return_all_outputs=True):
    """Iterates ``step_function(input_t, states + constants) -> (output, new_states)`` over
    the time axis of ``inputs``.

    Args:
      step_function: the step, called once per time step.
      inputs: a tensor ``(samples, time, ...)`` (``(time, samples, ...)`` when
        ``time_major``), at least 3-D.
      initial_states: a list of state tensors ``(samples, ...)``.
      go_backwards: iterate from the last time step (outputs stay in iteration order).
      mask: ``(samples, time)`` (bool or 0/1): a masked step keeps the previous states and
        repeats the previous output (zeros with ``zero_output_for_mask``).
      constants: extra tensors passed to every step after the states.
      unroll, input_length: accepted (the loop is a Python loop either way).
      return_all_outputs: False keeps only the last output in ``outputs``.

    Returns:
      ``(last_output, outputs, new_states)``: ``(samples, ...)``, ``(samples, time, ...)``
      (``(time, samples, ...)`` when ``time_major``; one time step without
      ``return_all_outputs``) and the list of final states.

    Raises:
      ValueError: ``inputs`` of rank below 3 (Keras's shape check).
    """
    inputs = _tf.convert_to_tensor(inputs)
    if inputs.ndim < 3:
        raise ValueError(f"Shape {tuple(inputs.shape)} must have rank at least 3")
    if not time_major:
        inputs = _tf.transpose(inputs, [1, 0, *range(2, inputs.ndim)])
    steps = list(_tf.unstack(inputs))
    masks = None
    if mask is not None:
        mask = _tf.convert_to_tensor(mask)
        if mask.dtype != _tf.bool:
            mask = _tf.cast(mask, _tf.bool)
        if mask.ndim == 3:
            mask = mask[..., 0] if time_major else mask[:, :, 0]
        masks = list(_tf.unstack(mask if time_major else _tf.transpose(mask, [1, 0])))
    if go_backwards:
        steps.reverse()
        if masks is not None:
            masks.reverse()
    constants = list(constants or [])
    states = list(initial_states)
    outputs = []
    output = None
    for t, x_t in enumerate(steps):
        new_output, new_states = step_function(x_t, tuple(states) + tuple(constants))
        new_states = list(new_states) if isinstance(new_states, (list, tuple)) \
            else [new_states]
        if masks is not None:
            m = masks[t]
            prev = _tf.zeros_like(new_output) if output is None else output
            new_output = _tf.where(_expand_mask(m, new_output), new_output, prev)
            new_states = [_tf.where(_expand_mask(m, s), s, p)
                          for s, p in zip(new_states, states)]
        output, states = new_output, new_states
        outputs.append(output)
    stacked = _tf.stack(outputs if return_all_outputs else outputs[-1:])
    last = outputs[-1]
    if masks is not None and zero_output_for_mask:
        last = _tf.where(_expand_mask(masks[-1], last), last, _tf.zeros_like(last))
        mask_tb = _tf.stack(masks if return_all_outputs else masks[-1:])
        for _ in range(stacked.ndim - 2):
            mask_tb = _tf.expand_dims(mask_tb, -1)
        stacked = _tf.where(_tf.broadcast_to(mask_tb, stacked.shape), stacked,
                            _tf.zeros_like(stacked))
    if not time_major:
        stacked = _tf.transpose(stacked, [1, 0, *range(2, stacked.ndim)])
    return last, stacked, states


def _local_conv(inputs, kernel, kernel_size, strides, output_shape, data_format):
    data_format = _ops._data_format(data_format)
    feature_dim, channels_out = int(kernel.shape[1]), int(kernel.shape[-1])
    ndims = len(output_shape)
    patches = []
    for position in itertools.product(*(range(n) for n in output_shape)):
        index = [slice(None)] + ([slice(None)] if data_format == "channels_first" else [])
        index += [slice(p * s, p * s + k) for p, s, k in zip(position, strides, kernel_size)]
        if data_format == "channels_last":
            index.append(slice(None))
        patches.append(_tf.reshape(inputs[tuple(index)], (1, -1, feature_dim)))
    out = _ops.batch_dot(_tf.concat(patches, axis=0), kernel)  # (positions, batch, filters)
    out = _tf.reshape(out, tuple(output_shape) + (-1, channels_out))
    perm = ([ndims, ndims + 1, *range(ndims)] if data_format == "channels_first"
            else [ndims, *range(ndims), ndims + 1])
    return _tf.transpose(out, perm)


def local_conv1d(inputs, kernel, kernel_size, strides, data_format=None):
    """A 1-D convolution with unshared weights: ``kernel`` ``(output_length, kernel_size[0]
    * channels, filters)``; returns ``(batch, output_length, filters)``."""
    return _local_conv(inputs, kernel, kernel_size, strides, (int(kernel.shape[0]),),
                       data_format)


def local_conv2d(inputs, kernel, kernel_size, strides, output_shape, data_format=None):
    """A 2-D convolution with unshared weights: ``kernel`` ``(rows * cols, kernel_rows *
    kernel_cols * channels, filters)``, ``output_shape`` ``(rows, cols)``."""
    return _local_conv(inputs, kernel, kernel_size, strides, tuple(output_shape), data_format)


def separable_conv2d(x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid",
                     data_format=None, dilation_rate=(1, 1)):
    """A depthwise 2-D convolution followed by a 1x1 convolution.

    Raises:
      ValueError: an unknown data format or padding, strides that are not 2 ints.
    """
    data_format = _ops._data_format(data_format)
    if len(strides) != 2:
        raise ValueError("`strides` must be a tuple of 2 integers.")
    y = _ops.depthwise_conv2d(x, depthwise_kernel, strides, padding, data_format,
                              dilation_rate)
    return _ops.conv2d(y, pointwise_kernel, (1, 1), "valid", data_format)


def binary_focal_crossentropy(target, output, apply_class_balancing=False, alpha=0.25,
                              gamma=2.0, from_logits=False):
    """Binary cross-entropy scaled by ``(1 - p_t) ** gamma`` (and by ``alpha`` for the
    positives, ``1 - alpha`` for the negatives with ``apply_class_balancing``)."""
    target, output = _tf.convert_to_tensor(target), _tf.convert_to_tensor(output)
    sigmoidal = _tf.sigmoid(output) if from_logits else output
    p_t = target * sigmoidal + (1 - target) * (1 - sigmoidal)
    focal = _tf.pow(1.0 - p_t, gamma) * _ops.binary_crossentropy(target, output, from_logits)
    if apply_class_balancing:
        focal = (target * alpha + (1 - target) * (1 - alpha)) * focal
    return focal


def categorical_focal_crossentropy(target, output, alpha=0.25, gamma=2.0, from_logits=False,
                                   axis=-1):
    """Categorical cross-entropy with each class's term scaled by ``alpha * (1 - p) **
    gamma``, summed over ``axis``.

    Raises:
      ValueError: shapes of ``target`` and ``output`` that differ.
    """
    target, output = _tf.convert_to_tensor(target), _tf.convert_to_tensor(output)
    if list(target.shape) != list(output.shape):
        raise ValueError(f"Shapes {tuple(target.shape)} and {tuple(output.shape)} are "
                         "incompatible")
    if from_logits:
        output = _tf.nn.softmax(output, axis=axis)
    output = output / _tf.reduce_sum(output, axis=axis, keepdims=True)
    eps = _K.epsilon()
    output = _tf.clip_by_value(output, eps, 1.0 - eps)
    cce = -target * _tf.math.log(output)
    return _tf.reduce_sum(_tf.pow(1.0 - output, gamma) * alpha * cce, axis=axis)
