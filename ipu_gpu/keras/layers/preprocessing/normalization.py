"""``Normalization``: ``(x - mean) / sqrt(variance)`` per index of the kept axes, with the
mean and variance given or learnt by ``adapt`` (tf-keras's batch-by-batch combination of
moments), or the inverse with ``invert=True``."""

from __future__ import annotations

import numpy as np

from ....core import backend as _backend
from ....core.convert import convert_to_tensor
from ....core.spec import TensorShape
from ....core.tensor import Tensor, Variable, wrap
from ....ops import math as _m
from ....ops import shape as _shape
from ... import backend
from .base import PreprocessingLayer

__all__ = ["Normalization"]


def _listify(value):
    if isinstance(value, Tensor):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    return value


def _on_device_of(x: Tensor, t: Tensor) -> Tensor:
    """``t`` on ``x``'s device (tf.data hands map functions host Tensors even where the
    statistics live on a GPU)."""
    if getattr(x, "_value", None) is None or getattr(t, "_value", None) is None:
        return t  # a TF1 graph tensor: its node runs where its inputs are
    xp = _backend.xp_of(x._value)
    if _backend.xp_of(t._value) is xp:
        return t
    return wrap(_backend.to_device(xp, np.asarray(t.numpy())))


class Normalization(PreprocessingLayer):
    """Shift and scale inputs to mean 0 and standard deviation 1 along ``axis`` (an int, a
    tuple, or None for one scalar mean and variance); the divisor is at least
    ``backend.epsilon()``.

    Raises:
      ValueError: a Variable as ``mean`` or ``variance``; only one of them given; an axis
        out of range or of unknown size at build; ``adapt`` on a layer given ``mean``.
    """

    _shape_inference = True
    _float_output = True

    def __init__(self, axis=-1, mean=None, variance=None, invert=False, **kwargs):
        super().__init__(**kwargs)
        if axis is None:
            axis = ()
        elif isinstance(axis, int):
            axis = (axis,)
        else:
            axis = tuple(axis)
        self.axis = axis
        for arg, value in (("mean", mean), ("variance", variance)):
            if isinstance(value, Variable):
                raise ValueError(f"Normalization does not support passing a Variable for the "
                                 f"`{arg}` init arg.")
        if (mean is not None) != (variance is not None):
            raise ValueError("When setting values directly, both `mean` and `variance` must "
                             f"be set. Got mean: {mean} and variance: {variance}")
        self.input_mean = mean
        self.input_variance = variance
        self.invert = invert

    def build(self, input_shape):
        if isinstance(input_shape, (list, tuple)) and input_shape and all(
                isinstance(s, TensorShape) for s in input_shape):
            raise ValueError("Normalization only accepts a single input. If you are passing a "
                             "python list or tuple as a single input, please convert to a "
                             "numpy array or `tf.Tensor`.")
        dims = TensorShape(input_shape).as_list()
        ndim = len(dims)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError("All `axis` values must be in the range [-ndim, ndim). "
                             f"Found ndim: `{ndim}`, axis: {self.axis}")
        self._keep_axis = sorted(d if d >= 0 else d + ndim for d in self.axis)
        for d in self._keep_axis:
            if dims[d] is None:
                raise ValueError("All `axis` values to be kept must have known shape. Got axis: "
                                 f"{self.axis}, input shape: {dims}, with unknown axis at "
                                 f"index: {d}")
        self._reduce_axis = tuple(d for d in range(ndim) if d not in self._keep_axis)
        self._broadcast_shape = [dims[d] if d in self._keep_axis else 1 for d in range(ndim)]
        shape = tuple(dims[d] for d in self._keep_axis)
        dtype = self.compute_dtype
        if self.input_mean is None:
            self.adapt_mean = self.add_weight(name="mean", shape=shape, dtype=dtype,
                                              initializer="zeros", trainable=False)
            self.adapt_variance = self.add_weight(name="variance", shape=shape, dtype=dtype,
                                                  initializer="ones", trainable=False)
            self.count = self.add_weight(name="count", shape=(), dtype="int64",
                                         initializer="zeros", trainable=False)
            self.built = True
            self.finalize_state()
        else:
            try:
                mean = np.asarray(self.input_mean) * np.ones(shape)
                variance = np.asarray(self.input_variance) * np.ones(shape)
            except ValueError as e:
                raise ValueError(f"Normalization: `mean` and `variance` must broadcast to the "
                                 f"kept axes' shape {shape}: {e}") from None
            self.mean = convert_to_tensor(mean.reshape(self._broadcast_shape).astype(dtype))
            self.variance = convert_to_tensor(variance.reshape(self._broadcast_shape).astype(dtype))
        super().build(input_shape)

    def update_state(self, data) -> None:
        """Fold a batch's moments into the running mean, variance and count.

        Raises:
          ValueError: the layer was given ``mean`` and ``variance``.
          RuntimeError: the layer is not built.
        """
        if self.input_mean is not None:
            raise ValueError("Cannot `adapt` a Normalization layer that is initialized with "
                             "static `mean` and `variance`, you passed mean "
                             f"{self.input_mean} and variance {self.input_variance}.")
        if not self.built:
            raise RuntimeError("`build` must be called before `update_state`.")
        data = data.numpy() if isinstance(data, Tensor) else np.asarray(data)
        data = data.astype(self.compute_dtype).astype(np.float64)
        axes = self._reduce_axis
        batch_mean = data.mean(axis=axes)
        batch_variance = ((data - data.mean(axis=axes, keepdims=True)) ** 2).mean(axis=axes)
        batch_count = int(np.prod([data.shape[d] for d in axes])) if axes else 1
        count = int(self.count.numpy())
        total = batch_count + count
        batch_weight = batch_count / total
        existing_weight = 1.0 - batch_weight
        old_mean = self.adapt_mean.numpy().astype(np.float64)
        old_variance = self.adapt_variance.numpy().astype(np.float64)
        mean = old_mean * existing_weight + batch_mean * batch_weight
        variance = ((old_variance + (old_mean - mean) ** 2) * existing_weight
                    + (batch_variance + (batch_mean - mean) ** 2) * batch_weight)
        dtype = self.adapt_mean.dtype
        self.adapt_mean.assign(np.asarray(mean, dtype=dtype).reshape(old_mean.shape))
        self.adapt_variance.assign(np.asarray(variance, dtype=dtype).reshape(old_mean.shape))
        self.count.assign(np.int64(total))

    def reset_state(self) -> None:
        if self.input_mean is not None or not self.built:
            return
        self.adapt_mean.assign(np.zeros(self.adapt_mean.shape, self.adapt_mean.dtype))
        self.adapt_variance.assign(np.ones(self.adapt_variance.shape, self.adapt_variance.dtype))
        self.count.assign(np.int64(0))

    def finalize_state(self) -> None:
        if self.input_mean is not None or not self.built:
            return
        self.mean = _shape.reshape(_m.cast(self.adapt_mean, self.compute_dtype),
                                   self._broadcast_shape)
        self.variance = _shape.reshape(_m.cast(self.adapt_variance, self.compute_dtype),
                                       self._broadcast_shape)

    def call(self, inputs):
        x = inputs if inputs.dtype == np.dtype(self.compute_dtype) else _m.cast(
            inputs, self.compute_dtype)
        if self.input_mean is None:
            self.finalize_state()  # reads the weights as they are now (set_weights, load)
        mean = _m.cast(_on_device_of(x, self.mean), x.dtype)
        std = _m.maximum(_m.sqrt(_m.cast(_on_device_of(x, self.variance), x.dtype)),
                         backend._constant_like(backend.epsilon(), x))
        if self.invert:
            return mean + x * std
        return (x - mean) / std

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(axis=self.axis, invert=self.invert, mean=_listify(self.input_mean),
                      variance=_listify(self.input_variance))
        return config
