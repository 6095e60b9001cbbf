"""``Dropout``: Keras's dropout layer on the IPU's dropout (``ipu.rand_ops.dropout``)."""

from __future__ import annotations

from ipu_gpu.ipu import rand_ops
from ipu_gpu.keras import backend
from ipu_gpu.keras.engine.base_layer import Layer
from ipu_gpu.ops import math as _m

__all__ = ["Dropout"]


class Dropout(Layer):
    """Zero each input unit with probability ``rate`` while training and scale the kept ones
    by ``1 / (1 - rate)``; the identity in inference.

    Args:
      rate: the fraction of units to drop, in [0, 1).
      noise_shape: the shape of the binary mask (each dimension the input's or 1).
      seed: an optional pair of 32-bit integers seeding the mask (the same mask each call).
      **kwargs: Keras layer arguments, and ``ref`` (passed to ``rand_ops.dropout``).
    """

    _shape_inference = True

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        self.seed = seed
        self.rate = rate
        self.noise_shape = noise_shape
        self.ref = kwargs.pop("ref", True)
        super().__init__(**kwargs)

    def call(self, inputs, training=None):
        """The inputs with dropout applied when training, else unchanged."""
        if training is None:
            training = backend.learning_phase()
        if not training:
            return _m.identity(inputs)
        return rand_ops.dropout(inputs, seed=self.seed, rate=self.rate,
                                noise_shape=self.noise_shape, ref=self.ref, name=self.name)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {"rate": self.rate, "noise_shape": self.noise_shape, "seed": self.seed,
                "ref": self.ref}
