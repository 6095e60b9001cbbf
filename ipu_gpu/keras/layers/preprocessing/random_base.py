"""The base of the random preprocessing layers (tf-keras's ``BaseRandomLayer``): a
``seed`` that makes the draws reproducible, and ``training`` that defaults to True, the
layer being the identity (after the cast to its compute dtype) when it is False.

Draws come from ipu_gpu's stateful random ops with tf-keras's legacy seed rule: the op seed
of the first call is ``seed``, then seed + 1, ...; unseeded layers follow
``tf.random.set_seed``. The streams are ipu_gpu's, not TF's; the distributions are TF's."""

from __future__ import annotations

import numpy as np

from ....core.tensor import Tensor
from ....ops import math as _m
from ....ops import random as _random
from ...engine.base_layer import Layer

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


class BaseRandomLayer(Layer):
    """A layer drawing random numbers: ``seed`` (an int or None) is in its config."""

    _shape_inference = True
    _float_output = True

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.seed = seed
        self._next_seed = seed

    def _legacy_seed(self):
        """The op seed of the next draw: the seed, then seed + 1, ... (None: unseeded)."""
        seed = self._next_seed
        if seed is not None:
            self._next_seed = seed + 1
        return seed

    def _uniform(self, shape, minval, maxval) -> np.ndarray:
        """float32 draws uniform in [minval, maxval), on the host."""
        return np.asarray(_random.uniform(list(shape), minval, maxval, dtype="float32",
                                          seed=self._legacy_seed()).numpy())

    def _uniform_int(self, shape, maxval) -> np.ndarray:
        """int32 draws uniform in [0, maxval), on the host."""
        return np.asarray(_random.uniform(list(shape), 0, maxval, dtype="int32",
                                          seed=self._legacy_seed()).numpy())

    def compute_output_shape(self, input_shape):
        return input_shape
