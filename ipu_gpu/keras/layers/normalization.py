"""Normalization layers: ``BatchNormalization`` and ``LayerNormalization``, composed of
``moments`` and elementwise ops (TF's ``tf.nn.batch_normalization`` formula), so the tape
differentiates through the batch statistics."""

from __future__ import annotations

import logging
import sys
import warnings

import numpy as np

from ...core.spec import as_shape
from ...ops import array as _array
from ...ops import creation as _creation
from ...ops import math as _m
from ...ops import nn as _nn
from ...ops import reduction as _r
from ...ops import shape as _shape
from .. import backend
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from ._weight_args import set_weight_args, weight_args_config

__all__ = ["BatchNormalization", "LayerNormalization"]

_log = logging.getLogger("ipu_gpu.keras")


def _validate_axis(axis, input_shape) -> list:
    """``axis`` (an int or ints) as a list of non-negative axes of ``input_shape``."""
    input_shape = as_shape(input_shape)
    rank = input_shape.rank
    if not rank:
        raise ValueError(f"Input has undefined rank. Received: input_shape={input_shape}")
    axis = [axis] if isinstance(axis, int) else list(axis)
    axis = [a + rank if a < 0 else a for a in axis]
    for a in axis:
        if a < 0 or a >= rank:
            raise ValueError("Invalid value for `axis` argument. Expected 0 <= axis < "
                             f"inputs.rank (with inputs.rank={rank}). Received: "
                             f"axis={tuple(axis)}")
    if len(axis) != len(set(axis)):
        raise ValueError(f"Duplicate axis: {tuple(axis)}")
    return axis


def _normalize(x, mean, variance, offset, scale, epsilon):
    """``tf.nn.batch_normalization``: x * inv + (offset - mean * inv), inv the scaled
    reciprocal standard deviation."""
    inv = _m.rsqrt(variance + backend._constant_like(epsilon, variance))
    if scale is not None:
        inv = inv * scale
    shift = -mean * inv if offset is None else offset - mean * inv
    return x * inv + shift


def _axis_config(axis):
    if isinstance(axis, (list, tuple)):
        return list(axis)
    if isinstance(axis, int):
        return axis
    raise TypeError("Expected an int or a list/tuple of ints for the argument 'axis', but "
                    f"received: {axis!r}")


class BatchNormalization(Layer):
    """Normalize with the batch's statistics in training (and move the moving averages by
    ``momentum``), with the moving statistics in inference.

    Keras 2's rules: a frozen layer (``trainable=False``) always runs in inference mode;
    ``fused`` (the default for 4-D inputs normalised over axis 1 or 3 in a 16- or 32-bit
    dtype; ``fused=None`` falls back to False for other axes and dtypes) updates the moving
    variance with the unbiased (Bessel-corrected) batch variance, as TF's fused kernel does,
    and the other path with the biased one.

    ``renorm`` (Batch Renormalization) corrects the training output by ``r`` and ``d`` (the
    batch statistics against ``renorm_mean``/``renorm_stddev``, moved by ``renorm_momentum``,
    clipped by ``renorm_clipping``'s ``rmin``/``rmax``/``dmax``, no gradient through them)
    and keeps ``moving_stddev``, the moving variance derived from it. ``virtual_batch_size``
    normalises each of the virtual batches ``x.reshape(virtual_batch_size, -1, ...)[:, j]``
    with its own statistics and moves the moving statistics by their mean. ``adjustment``
    (a function of the input's shape tensor giving a scale and a bias) rescales and
    shifts the normalised values in training, before gamma and beta. These three use the
    unfused arithmetic. ``synchronized`` computes the training statistics over the replicas
    of the strategy's replica context (Keras's ``_sync_calculate_mean_and_var``: sums, squared
    sums and counts all-reduced, the variance ``E[x^2] - E[x]^2`` clamped at 0, in float32);
    under ``IPUStrategy`` the all-reduce is the IPU replicas' cross-replica sum, in a
    cross-replica context the batch's own moments.
    """

    _shape_inference = True
    _handles_training_tensor = True
    _updates_in_training = True

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, synchronized=False, **kwargs):
        super().__init__(name=name, **kwargs)
        self.axis = _axis_config(axis)
        if synchronized and fused:
            raise ValueError("`fused=True` is not supported when `synchronized=True`.")
        self.synchronized = synchronized
        if synchronized:
            fused = False
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        set_weight_args(self, ("beta", "gamma"), locals(),
                        initializers_only=("moving_mean", "moving_variance"))
        self.renorm = renorm
        self.virtual_batch_size = virtual_batch_size
        self.adjustment = adjustment
        if renorm:
            renorm_clipping = renorm_clipping or {}
            keys = ["rmax", "rmin", "dmax"]
            if set(renorm_clipping) - set(keys):
                raise ValueError("Received invalid keys for `renorm_clipping` argument: "
                                 f"{renorm_clipping}. Supported values: {keys}.")
            self.renorm_clipping = renorm_clipping
            self.renorm_momentum = renorm_momentum
        self.supports_masking = True
        if fused:
            self._raise_if_fused_cannot_be_used()
        elif fused is None and not self._fused_can_be_used():
            fused = False  # left None where it can be used: build decides by the input rank
        self.fused = fused
        self.trainable = trainable

    def _raise_if_fused_cannot_be_used(self):
        """Keras 2's checks for ``fused=True`` that need no input shape: one channel axis
        (1 or 3 of a 4-D input, 1 or 4 of a 5-D one), no renorm, virtual batches or
        adjustment, and a 16- or 32-bit compute dtype."""
        if self.renorm:
            raise ValueError("Passing both `fused=True` and `renorm=True` is not supported")
        axis = [self.axis] if isinstance(self.axis, int) else self.axis
        if len(axis) > 1 or axis[0] not in (-4, -3, -1, 1, 3, 4):
            raise ValueError("Passing `fused=True` is only supported when axis is 1 or 3 for "
                             "input rank = 4 or 1 or 4 for input rank = 5. Got axis "
                             f"{axis}")
        if self.virtual_batch_size is not None:
            raise ValueError("Passing `fused=True` is not supported when "
                             "`virtual_batch_size` is specified.")
        if self.adjustment is not None:
            raise ValueError("Passing `fused=True` is not supported when `adjustment` is "
                             "specified.")
        if self.compute_dtype not in ("float16", "bfloat16", "float32", None):
            raise ValueError("Passing `fused=True` is only supported when the compute dtype "
                             "is float16, bfloat16, or float32. Got dtype: "
                             f"{self.compute_dtype}")

    def _fused_can_be_used(self):
        try:
            self._raise_if_fused_cannot_be_used()
        except ValueError:
            return False
        return True

    @property
    def _param_dtype(self):
        # 16-bit layers keep their statistics and parameters in float32, as Keras
        return "float32" if self.dtype in ("float16", "bfloat16") else (self.dtype or "float32")

    def build(self, input_shape):
        self.axis = _validate_axis(self.axis, input_shape)
        input_shape = as_shape(input_shape)
        rank = input_shape.rank
        if self.virtual_batch_size is not None:
            if self.virtual_batch_size <= 0:
                raise ValueError("`virtual_batch_size` must be a positive integer that divides "
                                 "the true batch size of the input tensor. Received: "
                                 f"virtual_batch_size={self.virtual_batch_size}")
            if 0 in self.axis:
                raise ValueError("When using `virtual_batch_size`, the batch dimension must be "
                                 f"0 and thus axis cannot include 0. Received axis={self.axis}")
            if self.adjustment is not None:
                raise ValueError("When using `virtual_batch_size`, adjustment cannot be "
                                 "specified")
        if self.fused is None:
            self.fused = rank in (4, 5)
        elif self.fused and rank not in (4, 5):
            raise ValueError("Batch normalization layers with `fused=True` only support 4D or "
                             f"5D input tensors. Received tensor with shape: "
                             f"{tuple(input_shape.as_list())}")
        if self.fused:
            if rank == 5 and self.axis not in ([1], [4]):
                self.fused = False
            elif self.axis not in ([1], [rank - 1]):
                raise ValueError("Unsupported axis. The use of `fused=True` is only possible "
                                 f"with `axis=1` or `axis={rank - 1}` for {rank}D input "
                                 f"tensors. Received: axis={tuple(self.axis)}")
        axis_to_dim = {x: input_shape[x] for x in self.axis}
        for dim in axis_to_dim.values():
            if dim is None:
                raise ValueError("Input has undefined `axis` dimension. Received input with "
                                 f"shape {tuple(input_shape.as_list())} and "
                                 f"axis={tuple(self.axis)}")
        self.input_spec = InputSpec(ndim=rank, axes=axis_to_dim)
        if len(axis_to_dim) == 1 and self.virtual_batch_size is None:
            param_shape = (next(iter(axis_to_dim.values())),)
        else:
            param_shape = [axis_to_dim.get(i, 1) for i in range(rank)]
            if self.virtual_batch_size is not None:  # statistics per virtual batch: axis 1
                param_shape.insert(1, 1)
                self._config_axis = list(self.axis)
                self.axis = [a + 1 for a in self.axis]
        self._param_shape = param_shape
        dtype = self._param_dtype
        self.gamma = self.add_weight(name="gamma", shape=param_shape, dtype=dtype,
                                     initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint,
                                     trainable=True,
                                     experimental_autocast=False) if self.scale else None
        self.beta = self.add_weight(name="beta", shape=param_shape, dtype=dtype,
                                    initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint,
                                    trainable=True,
                                    experimental_autocast=False) if self.center else None
        self.moving_mean = self.add_weight(name="moving_mean", shape=param_shape, dtype=dtype,
                                           initializer=self.moving_mean_initializer,
                                           synchronization="ON_READ", trainable=False,
                                           experimental_autocast=False)
        self.moving_variance = self.add_weight(name="moving_variance", shape=param_shape,
                                               dtype=dtype,
                                               initializer=self.moving_variance_initializer,
                                               synchronization="ON_READ", trainable=False,
                                               experimental_autocast=False)
        if self.renorm:
            self._add_renorm_weights(param_shape, dtype)
        self.built = True

    def _add_renorm_weights(self, param_shape, dtype):
        """Keras's ``moving_stddev`` (the inference statistics renorm tracks) and the
        training statistics ``renorm_mean`` and ``renorm_stddev``."""
        def stddev_initializer(*args, **kwargs):
            return _m.sqrt(self.moving_variance_initializer(*args, **kwargs))

        def weight(name, initializer):
            return self.add_weight(name=name, shape=param_shape, dtype=dtype,
                                   initializer=initializer, synchronization="ON_READ",
                                   trainable=False, experimental_autocast=False)

        self.moving_stddev = weight("moving_stddev", stddev_initializer)
        self.renorm_mean = weight("renorm_mean", self.moving_mean_initializer)
        self.renorm_stddev = weight("renorm_stddev", stddev_initializer)

    def _training_value(self, training):
        if training is None:
            training = backend.learning_phase()
        if isinstance(training, int):
            training = bool(training)
        if not self.trainable:  # a frozen BatchNormalization runs in inference mode
            training = False
        return training

    def call(self, inputs, training=None, mask=None):
        """``training`` may be a bool graph tensor (a TF1 ``is_training`` placeholder): as
        tf_keras's smart_cond, the batch or the moving statistics normalise per run, the
        update ops move the moving statistics only in runs fed True, and the virtual batches
        are the whole batch (tf_keras's reshape for a training value unknown at build)."""
        training = self._training_value(training)
        per_run = backend.is_graph_tensor(training)
        input_dtype = inputs.dtype
        x = _m.cast(inputs, "float32") if input_dtype == np.float16 else inputs
        virtual = self.virtual_batch_size is not None
        if virtual:  # (virtual_batch_size, batches, ...): statistics over axis 0 per batch
            original_shape = list(x.shape)
            x = _shape.reshape(x, [self.virtual_batch_size, -1] + original_shape[1:]
                               if not per_run and training else [-1, 1] + original_shape[1:])
        ndims = x.ndim
        reduction_axes = [i for i in range(ndims) if i not in self.axis]
        if virtual:
            del reduction_axes[1]
        broadcast_shape = [1] * ndims
        broadcast_shape[self.axis[0]] = x.shape[self.axis[0]]

        def broadcast(v):
            if v is not None and v.ndim != ndims and reduction_axes != list(range(ndims - 1)):
                return _shape.reshape(v, broadcast_shape)
            return v

        keep_dims = virtual or len(self.axis) > 1
        if mask is not None and self.fused:
            warnings.warn("Masking is not supported with `fused=True`. You should either turn "
                          "off fusing (`fused=False`) or you should not pass a `mask` "
                          "argument when calling the layer. For the moment `mask` will be "
                          "ignored for the normalization.", stacklevel=2)
            mask = None
        scale, offset = broadcast(self.gamma), broadcast(self.beta)

        def pick(in_training, in_inference):  # per run by the training tensor, else the first
            if not per_run:
                return in_training
            return sys.modules["ipu_gpu.graph.program"].cond(
                training, lambda: in_training, in_inference)

        if per_run or training:
            if self.adjustment:
                adj_scale, adj_bias = self.adjustment(_array.shape(x))
                adj_scale = pick(adj_scale, lambda: _creation.ones_like(adj_scale))
                adj_bias = pick(adj_bias, lambda: _creation.zeros_like(adj_bias))
                scale, offset = _compose(adj_scale, adj_bias, scale, offset)
            if mask is not None:
                weights = _shape.expand_dims(_m.cast(mask, x.dtype), -1)
                mean, variance = (_sync_moments(x, reduction_axes, keep_dims, weights)
                                  if self.synchronized else
                                  _weighted_moments(x, reduction_axes, weights, keep_dims))
            elif self.synchronized:
                mean, variance = _sync_moments(x, reduction_axes, keep_dims, None)
            else:
                mean, variance = _r.moments(x, reduction_axes, keepdims=keep_dims)
            new_mean, new_variance = mean, variance
            if virtual:  # the virtual batches' mean statistics move the moving ones
                new_mean = _r.reduce_mean(mean, axis=1, keepdims=True)
                new_variance = _r.reduce_mean(variance, axis=1, keepdims=True)
            if self.renorm:
                r, d = self._renorm_correction(new_mean, new_variance)
                r = pick(r, lambda: _creation.ones_like(r))
                d = pick(d, lambda: _creation.zeros_like(d))
                scale, offset = _compose(broadcast(r), broadcast(d), scale, offset)
            if backend.is_graph_tensor(new_mean):  # TF1: an op of layer.updates, as TF's
                self.add_update(self._graph_update(x, new_mean, new_variance, reduction_axes,
                                                   training if per_run else None))
            else:
                self._update_moving_averages(x, new_mean, new_variance, reduction_axes)
            mean = pick(mean, lambda: _m.cast(self.moving_mean, mean.dtype))
            variance = pick(variance, lambda: _m.cast(self.moving_variance, variance.dtype))
        else:
            mean, variance = self.moving_mean, self.moving_variance
        outputs = _normalize(x, broadcast(_m.cast(mean, x.dtype)),
                             broadcast(_m.cast(variance, x.dtype)), offset, scale, self.epsilon)
        if virtual:
            outputs = _shape.reshape(outputs, [-1] + original_shape[1:])
        return _m.cast(outputs, input_dtype) if input_dtype == np.float16 else outputs

    def _renorm_correction(self, mean, variance):
        """Keras's renorm ``r`` and ``d`` (clipped, without gradient) from the batch
        statistics and the renorm moving statistics before this step; then moves those."""
        eps = backend._constant_like(self.epsilon, variance)
        stddev = _m.sqrt(variance + eps)
        renorm_stddev = _m.maximum(self.renorm_stddev, _m.sqrt(eps))
        r = stddev / renorm_stddev
        d = (mean - self.renorm_mean) / renorm_stddev
        rmin, rmax, dmax = (self.renorm_clipping.get(k) for k in ("rmin", "rmax", "dmax"))
        if rmin is not None:
            r = _m.maximum(r, backend._constant_like(rmin, r))
        if rmax is not None:
            r = _m.minimum(r, backend._constant_like(rmax, r))
        if dmax is not None:
            d = _m.maximum(d, backend._constant_like(-dmax, d))
            d = _m.minimum(d, backend._constant_like(dmax, d))
        if not backend.is_graph_tensor(mean):  # in a TF1 graph, the update op moves them
            self._move(self.renorm_mean, mean, self.renorm_momentum)
            self._move(self.renorm_stddev, stddev, self.renorm_momentum)
        return _m.stop_gradient(r), _m.stop_gradient(d)

    def _move(self, variable, value, momentum):
        decay = backend._constant_like(1.0 - momentum, variable)
        value = _m.stop_gradient(_m.cast(value, variable.dtype))
        variable.assign_sub((variable - value) * decay)

    def _graph_update(self, x, mean, variance, reduction_axes, training=None):
        """TF1 graph ops (as TF's two AssignMovingAvg) that move the moving mean (and the
        renorm statistics) and the moving variance by a run's batch statistics; given the
        bool graph tensor ``training``, only in the runs where it is True."""
        core = sys.modules["ipu_gpu.graph.core"]
        gate = [] if training is None else [training]

        def off(flag):
            return bool(flag) and not bool(np.asarray(flag[0]))

        def move_mean(mean, variance, *flag):
            if off(flag):
                return []
            if self.renorm:
                self._renorm_correction(mean, variance)
            self._move(self.moving_mean, mean, self.momentum)
            return []

        def move_variance(x, variance, *flag):
            if not off(flag):
                self._move_variance(x, variance, reduction_axes)
            return []
        name = f"{self.name}/AssignMovingAvg"
        return [core.add_node(mean.graph, "AssignMovingAvg", name, [mean, variance, *gate],
                              move_mean, []),
                core.add_node(mean.graph, "AssignMovingAvg", name, [x, variance, *gate],
                              move_variance, [])]

    def _update_moving_averages(self, x, mean, variance, reduction_axes):
        self._move(self.moving_mean, mean, self.momentum)
        self._move_variance(x, variance, reduction_axes)

    def _move_variance(self, x, variance, reduction_axes):
        if self.fused:  # TF's fused kernel moves the variance by the unbiased estimate
            n = int(np.prod([x.shape[i] for i in reduction_axes]))
            if n > 1:
                variance = variance * backend._constant_like(n / (n - 1), variance)
        if self.renorm:  # the moving variance follows the moving stddev (epsilon inside)
            eps = backend._constant_like(self.epsilon, self.moving_stddev)
            self._move(self.moving_stddev, _m.sqrt(_m.cast(variance, eps.dtype) + eps),
                       self.momentum)
            self.moving_variance.assign(_nn.relu(_m.square(self.moving_stddev) - eps))
        else:
            self._move(self.moving_variance, variance, self.momentum)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            # Keras 2 reports the axis it shifted for the virtual batches, and then cannot
            # rebuild the layer from its own config: the emulator reports the axis it was given
            "axis": self.__dict__.get("_config_axis", self.axis), "momentum": self.momentum,
            "epsilon": self.epsilon, "center": self.center, "scale": self.scale,
            **weight_args_config(self, ("beta", "gamma"),
                                 initializers_only=("moving_mean", "moving_variance")),
        })
        if self.renorm:
            config.update(renorm=True, renorm_clipping=self.renorm_clipping,
                          renorm_momentum=self.renorm_momentum)
        if self.virtual_batch_size is not None:
            config["virtual_batch_size"] = self.virtual_batch_size
        if self.adjustment is not None:
            _log.warning("The `adjustment` function of this `BatchNormalization` layer cannot "
                         "be serialized and has been omitted from the layer config. It will "
                         "not be included when re-creating the layer from the saved config.")
        return config


def _compose(scale, offset, then_scale, then_offset):
    """The affine map ``x * scale + offset`` followed by ``then_scale``/``then_offset``
    (either may be None), as one scale and offset."""
    if then_scale is not None:
        scale, offset = scale * then_scale, offset * then_scale
    if then_offset is not None:
        offset = offset + then_offset
    return scale, offset


def _sync_moments(x, axes, keepdims, weights):
    """Mean and variance of ``x`` over ``axes`` and over the replicas in sync (Keras's
    ``_sync_calculate_mean_and_var``); a cross-replica context takes the local moments."""
    from ... import distribute

    ctx = distribute.get_replica_context()
    if ctx is None:
        if weights is not None:
            return _weighted_moments(x, axes, weights, keepdims)
        return _r.moments(x, axes, keepdims=keepdims)
    y = x
    if weights is not None:
        y = y * weights
        count = _array.broadcast_to(weights, _array.shape(y))
    else:
        count = _creation.ones_like(y)
    local = [_r.reduce_sum(y, axis=axes, keepdims=True),
             _r.reduce_sum(_m.square(y), axis=axes, keepdims=True),
             _r.reduce_sum(count, axis=axes, keepdims=True)]
    total, squared, n = (ctx.all_reduce("SUM", v) for v in local)
    n = _m.maximum(n, 1.0)  # counts are 0 or >= 1: Keras's divide_no_nan
    mean = total / n
    variance = _m.maximum(squared / n - _m.square(mean), 0.0)
    if not keepdims:
        mean, variance = _shape.squeeze(mean, axes), _shape.squeeze(variance, axes)
    return mean, variance


def _weighted_moments(x, axes, weights, keepdims):
    """``tf.nn.weighted_moments``: the mean and variance of x weighted by ``weights``."""
    weights = _array.broadcast_to(weights, _array.shape(x))
    total = _r.reduce_sum(weights, axis=axes, keepdims=True)
    mean = _r.reduce_sum(weights * x, axis=axes, keepdims=True) / total
    variance = _r.reduce_sum(weights * _m.square(x - mean), axis=axes, keepdims=True) / total
    if not keepdims:
        mean, variance = _shape.squeeze(mean, axes), _shape.squeeze(variance, axes)
    return mean, variance


class LayerNormalization(Layer):
    """Normalize each example over ``axis`` (the last by default), then scale by ``gamma``
    and shift by ``beta`` (shaped like the normalised axes)."""

    _shape_inference = True

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.axis = _axis_config(axis)
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        set_weight_args(self, ("beta", "gamma"), locals())
        self.supports_masking = True

    def build(self, input_shape):
        self.axis = _validate_axis(self.axis, input_shape)
        input_shape = as_shape(input_shape)
        param_shape = [input_shape[dim] for dim in self.axis]
        self.gamma = self.add_weight(name="gamma", shape=param_shape,
                                     initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint,
                                     trainable=True,
                                     experimental_autocast=False) if self.scale else None
        self.beta = self.add_weight(name="beta", shape=param_shape,
                                    initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint,
                                    trainable=True,
                                    experimental_autocast=False) if self.center else None
        self.built = True

    def call(self, inputs):
        ndims = inputs.ndim
        broadcast_shape = [1] * ndims
        for dim in self.axis:
            broadcast_shape[dim] = inputs.shape[dim]

        def broadcast(v):
            if v is not None and v.ndim != ndims and self.axis != [ndims - 1]:
                return _shape.reshape(v, broadcast_shape)
            return v

        input_dtype = inputs.dtype
        x = inputs
        if input_dtype == np.float16 and self.dtype == "float32":
            x = _m.cast(x, "float32")
        mean, variance = _r.moments(x, self.axis, keepdims=True)
        outputs = _normalize(x, mean, variance, broadcast(self.beta), broadcast(self.gamma),
                             self.epsilon)
        return _m.cast(outputs, input_dtype) if outputs.dtype != input_dtype else outputs

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "axis": self.axis, "epsilon": self.epsilon, "center": self.center,
            "scale": self.scale, **weight_args_config(self, ("beta", "gamma")),
        })
        return config
