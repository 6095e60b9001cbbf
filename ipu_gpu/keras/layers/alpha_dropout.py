"""``AlphaDropout``: dropout that keeps a SELU network's self-normalising mean and variance
(Klambauer et al. 2017), as tf-keras: dropped inputs are set to SELU's negative saturation
value, then everything is scaled and shifted back to the input's mean and variance."""

from __future__ import annotations

from ...ops import math as _m
from ...ops import random as _random
from .. import backend
from ._graph_shapes import call_on_values
from .regularization import _RandomLayer

__all__ = ["AlphaDropout"]

_ALPHA = 1.6732632423543772848170429916717
_SCALE = 1.0507009873554804934193349852946


class AlphaDropout(_RandomLayer):
    """In training, keep each input with probability ``1 - rate`` (a draw per element, or
    per ``noise_shape`` entry broadcast over the input), set the others to
    ``-alpha * scale`` of SELU, and return ``a * x + b`` with tf-keras's ``a`` and ``b``;
    the identity at inference and for ``rate`` outside (0, 1) (tf-keras does not check
    ``rate``). ``seed`` as the other random layers (the op seed of the first call, then
    one more per call). ``noise_shape`` is not part of the config, as in tf-keras."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape

    def call(self, inputs, training=None):
        if not 0.0 < self.rate < 1.0:
            return inputs
        if training is None:
            training = backend.learning_phase()
        if not training:
            return inputs
        seed = self._legacy_seed()
        return call_on_values(lambda x: self._dropped(x, seed), inputs)

    def _dropped(self, x, seed):
        rate = self.rate
        shape = list(self.noise_shape) if self.noise_shape else list(x.shape)
        kept = _m.cast(_random.uniform(shape, seed=seed) >= rate, x.dtype)
        alpha_p = -_ALPHA * _SCALE
        a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * rate
        one = backend._constant_like(1, x)
        dropped = x * kept + backend._constant_like(alpha_p, x) * (one - kept)
        return backend._constant_like(a, x) * dropped + backend._constant_like(b, x)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed)
        return config
