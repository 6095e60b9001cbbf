"""The base of the random preprocessing layers (tf-keras's ``BaseRandomLayer`` with
``force_generator=True``): each layer draws from its own ``tf.random.Generator`` (Philox)
made from ``seed`` on the first draw, so a seeded layer draws the numbers tf-keras's layer
of the same seed draws; unseeded layers take a seed from ``keras.utils.set_random_seed``'s
generator, else from Python's ``random``. Inside an IPU program they draw from the replica's
stream instead (deterministic after ``reset_ipu_seed``). ``training`` defaults to True; when
it is False the layer is the identity (after the cast to its compute dtype).

In a tf.data function the layer's Generator goes on from element to element and from one
iteration to the next (its state is a variable, as tf-keras's), and the calls that find the
dataset's spec do not advance it (ops/random.py)."""

from __future__ import annotations

import random

import numpy as np

from ....core.tensor import Tensor
from ....emulation import context
from ....ops import math as _m
from ....ops import random as _random
from ... import backend
from ...engine.base_layer import Layer
from .base import on_values

__all__ = ["BaseRandomLayer", "as_compute_dtype", "check_image"]


def as_compute_dtype(layer: Layer, inputs: Tensor) -> Tensor:
    """``inputs`` in the layer's compute dtype (tf-keras's ``convert_inputs``)."""
    dtype = np.dtype(layer.compute_dtype)
    return inputs if inputs.dtype == dtype else _m.cast(inputs, dtype)


def check_image(layer: Layer, inputs) -> None:
    """tf-keras's refusal of dict inputs (use KerasCV for images with boxes and labels).

    Raises:
      ValueError: ``inputs`` is a dict.
    """
    if isinstance(inputs, dict):
        raise ValueError("This layer can only process a tensor representing an image or a "
                         f"batch of images. Received: type(inputs)={type(inputs)}.If you need "
                         "to pass a dict containing images, labels, and bounding boxes, you "
                         "should instead use the preprocessing and augmentation layers from "
                         "`keras_cv.layers`. See docs at https://keras.io/api/keras_cv/layers/")


def _create_seed(seed):
    """tf-keras's ``RandomGenerator._create_seed``."""
    if seed is not None:
        return seed
    generator = backend._SEED_GENERATOR.generator
    if generator is not None:
        return generator.randint(1, int(1e9))
    return random.randint(1, int(1e9))


class BaseRandomLayer(Layer):
    """A layer drawing random numbers from its own generator: ``seed`` (an int or None) is
    in its config; ``force_generator`` and ``rng_type`` (tf-keras's) are accepted.
    Subclasses define ``_call(inputs, training)`` on concrete values."""

    _shape_inference = True
    _float_output = True

    def __init__(self, seed=None, force_generator=False, rng_type=None, **kwargs):
        super().__init__(**kwargs)
        if rng_type not in (None, "stateful", "stateless", "legacy_stateful"):
            raise ValueError('Invalid `rng_type` received. Valid `rng_type` are ["stateless", '
                             f'"stateful", "legacy_stateful"]. Got: {rng_type}')
        self.seed = seed
        self._generator = None

    def _rng(self) -> _random.Generator:
        if self._generator is None:
            self._generator = _random.Generator.from_seed(_create_seed(self.seed),
                                                          alg=_random.Algorithm.AUTO_SELECT)
        return self._generator

    def _uniform(self, shape, minval, maxval, dtype="float32") -> np.ndarray:
        """Draws uniform in [minval, maxval), on the host. Inside an IPU program each replica
        draws from its own stream (the IPU's per-replica seeds, as the stateful random ops):
        the replicas' threads must not race for one generator."""
        if context.current() is not None and not _random.in_dataset_function():
            return np.asarray(_random.uniform(list(shape), minval, maxval, dtype=dtype).numpy())
        return np.asarray(self._rng().uniform(list(shape), minval, maxval, dtype=dtype).numpy())

    def _stateless_uniform(self, shape, minval=0.0, maxval=1.0) -> np.ndarray:
        """float32 draws uniform in [minval, maxval) of a stateless op seeded by the
        generator (tf-keras's ``make_seed_for_stateless_op``), on the host."""
        if context.current() is not None and not _random.in_dataset_function():
            return self._uniform(shape, minval, maxval)
        seed = self._rng().make_seeds()[:, 0]
        return np.asarray(_random.stateless_uniform(list(shape), seed, minval,
                                                    maxval).numpy())

    def call(self, inputs, training=True):
        check_image(self, inputs)
        return on_values(lambda x: self._call(x, training), inputs)

    def compute_output_shape(self, input_shape):
        return input_shape
