"""Regularization layers: ``Dropout``, ``SpatialDropout2D``, ``GaussianNoise``,
``GaussianDropout``, ``ActivityRegularization``.

They draw from ipu_gpu's stateful random ops as tf-keras's legacy random generator does:
``seed`` (when given) is the op seed of the first call and grows by one per call; unseeded
layers follow ``tf.random.set_seed``. Inside an IPU program the replica's stream is used.
They are the identity unless called with ``training`` true (or the learning phase is 1).
"""

from __future__ import annotations

import numbers

from ...ops import math as _m
from ...ops import random as _random
from .. import backend, regularizers
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from . import conv_utils
from ._graph_shapes import call_on_values

__all__ = ["ActivityRegularization", "Dropout", "GaussianDropout", "GaussianNoise",
           "SpatialDropout2D"]


class _RandomLayer(Layer):
    _shape_inference = True

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self._next_seed = seed
        self.supports_masking = True

    def _legacy_seed(self):
        """tf-keras's ``make_legacy_seed``: the seed, then seed + 1, ... (None: unseeded)."""
        seed = self._next_seed
        if seed is not None:
            self._next_seed = seed + 1
        return seed

    def compute_output_shape(self, input_shape):
        return input_shape


class Dropout(_RandomLayer):
    """Zero inputs with probability ``rate`` in training and scale the rest by
    ``1 / (1 - rate)``; ``noise_shape`` entries of None take the input's sizes.

    Raises:
      ValueError: ``rate`` outside [0, 1].
    """

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(f"Invalid value {rate} received for `rate`, expected a value "
                             "between 0 and 1.")
        self.rate = rate
        self.noise_shape = noise_shape

    def _get_noise_shape(self, inputs):
        if self.noise_shape is None:
            return None
        return [inputs.shape[i] if v is None else v for i, v in enumerate(self.noise_shape)]

    def call(self, inputs, training=None):
        if isinstance(self.rate, numbers.Real) and self.rate == 0:
            return _m.identity(inputs)
        if training is None:
            training = backend.learning_phase()
        if not training:
            return _m.identity(inputs)
        return _random.dropout(inputs, self.rate, noise_shape=self._get_noise_shape(inputs),
                               seed=self._legacy_seed())

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(rate=self.rate, noise_shape=self.noise_shape, seed=self.seed)
        return config


class SpatialDropout2D(Dropout):
    """Dropout of whole feature maps: one draw per (sample, channel) of a 4-D input."""

    def __init__(self, rate, data_format=None, **kwargs):
        kwargs.pop("noise_shape", None)  # set by the layer itself (get_config lists it)
        super().__init__(rate, **kwargs)
        self.data_format = conv_utils.normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=4)

    def _get_noise_shape(self, inputs):
        shape = inputs.shape
        if self.data_format == "channels_first":
            return [shape[0], shape[1], 1, 1]
        return [shape[0], 1, 1, shape[3]]

    def get_config(self) -> dict:
        config = super().get_config()
        config["data_format"] = self.data_format
        return config


class GaussianNoise(_RandomLayer):
    """Add zero-mean normal noise of ``stddev`` in training."""

    def __init__(self, stddev, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.stddev = stddev

    def call(self, inputs, training=None):
        if training is None:
            training = backend.learning_phase()
        if not training:
            return inputs
        seed = self._legacy_seed()
        return call_on_values(lambda x: x + _random.normal(
            list(x.shape), mean=0.0, stddev=self.stddev, dtype=x.dtype, seed=seed), inputs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(stddev=self.stddev, seed=self.seed)
        return config


class GaussianDropout(_RandomLayer):
    """Multiply by normal noise of mean 1 and stddev ``sqrt(rate / (1 - rate))`` in
    training.

    Raises:
      ValueError: ``rate`` outside [0, 1].
    """

    def __init__(self, rate, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        if isinstance(rate, (int, float)) and not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float "
                             f"value between 0 and 1. Received: rate={rate}")
        self.rate = rate

    def call(self, inputs, training=None):
        if training is None:
            training = backend.learning_phase()
        if not training or not 0 < self.rate < 1:
            return inputs
        stddev = (self.rate / (1.0 - self.rate)) ** 0.5
        seed = self._legacy_seed()
        return call_on_values(lambda x: x * _random.normal(
            list(x.shape), mean=1.0, stddev=stddev, dtype=x.dtype, seed=seed), inputs)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config


class ActivityRegularization(Layer):
    """The identity, adding ``l1 * sum(|x|) + l2 * sum(x**2)`` of its input (divided by the
    batch size) to the losses."""

    _shape_inference = True

    def __init__(self, l1=0.0, l2=0.0, **kwargs):
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1 = l1
        self.l2 = l2

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(l1=self.l1, l2=self.l2)
        return config
