"""Image augmentation layers: ``RandomFlip``, ``RandomTranslation``, ``RandomRotation``,
``RandomZoom``, ``RandomContrast``, ``RandomBrightness``. In training they draw their
parameters (one per image; one per call for contrast) and transform; at inference they
are the identity. Rotation, zoom and translation use the projective transform of
``image_transform`` with tf-keras's matrices, fill modes and interpolations."""

from __future__ import annotations

import numpy as np

from ....image import ops as _image
from ....ops import array as _array
from ....ops import indexing as _indexing
from ....ops import math as _m
from ....ops import shape as _shape
from . import image_transform as _transform
from .random_base import BaseRandomLayer, as_compute_dtype

__all__ = ["RandomBrightness", "RandomContrast", "RandomFlip", "RandomRotation",
           "RandomTranslation", "RandomZoom"]

HORIZONTAL = "horizontal"
VERTICAL = "vertical"
HORIZONTAL_AND_VERTICAL = "horizontal_and_vertical"


class RandomFlip(BaseRandomLayer):
    """In training, mirror each image left-right and/or up-down with probability 1/2
    (``mode``: "horizontal", "vertical" or "horizontal_and_vertical").

    Raises:
      ValueError: an unknown ``mode``.
    """

    def __init__(self, mode=HORIZONTAL_AND_VERTICAL, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        if mode not in (HORIZONTAL, VERTICAL, HORIZONTAL_AND_VERTICAL):
            raise ValueError(f"RandomFlip layer {self.name} received an unknown mode argument "
                             f"{mode}")
        self.mode = mode
        self.horizontal = mode in (HORIZONTAL, HORIZONTAL_AND_VERTICAL)
        self.vertical = mode in (VERTICAL, HORIZONTAL_AND_VERTICAL)

    def _random_flip(self, x, axis: int):
        """tf.image's stateless random flip: in a batch an image is flipped when its draw
        rounds (half to even) to 1; a single image when its draw is below 1/2."""
        batched = len(x.shape) == 4
        u = self._stateless_uniform([int(x.shape[0])] if batched else [])
        flips = np.round(u) == 1 if batched else u < 0.5
        if not flips.any():
            return x
        flipped = _array.reverse(x, [axis + 1 if batched else axis])
        if not batched or flips.all():
            return flipped
        mask = _transform._on_device(x, flips.reshape(-1, 1, 1, 1))
        return _indexing.where(mask, flipped, x)

    def _call(self, inputs, training):
        x = as_compute_dtype(self, inputs)
        if not training:
            return x
        if self.horizontal:
            x = self._random_flip(x, 1)
        if self.vertical:
            x = self._random_flip(x, 0)
        return x

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(mode=self.mode, seed=self.seed)
        return config


def _bounds(factor):
    if isinstance(factor, (tuple, list)):
        return factor[0], factor[1]
    return -factor, factor


class _AffineLayer(BaseRandomLayer):
    """A layer transforming each image of a batch by its own drawn projective transform
    (subclasses define ``_matrices(batch, height, width)``, the [batch, 8] transforms)."""

    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, **kwargs):
        super().__init__(seed=seed, **kwargs)
        _transform.check_fill_mode_and_interpolation(fill_mode, interpolation)
        self.fill_mode = fill_mode
        self.fill_value = fill_value
        self.interpolation = interpolation

    def _call(self, inputs, training):
        x = as_compute_dtype(self, inputs)
        if not training:
            return x
        unbatched = len(x.shape) == 3
        if unbatched:
            x = _shape.expand_dims(x, 0)
        n, h, w = (int(d) for d in x.shape[:3])
        out = _transform.transform(x, self._matrices(n, h, w), fill_mode=self.fill_mode,
                                   fill_value=self.fill_value,
                                   interpolation=self.interpolation)
        return _shape.squeeze(out, [0]) if unbatched else out

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(fill_mode=self.fill_mode, fill_value=self.fill_value,
                      interpolation=self.interpolation, seed=self.seed)
        return config


class RandomTranslation(_AffineLayer):
    """In training, shift each image by fractions of its height and width drawn in
    ``height_factor`` and ``width_factor`` (a pair, or f for (-f, f)), filling by
    ``fill_mode``.

    Raises:
      ValueError: a factor's upper bound below its lower, or a bound outside [-1, 1].
      NotImplementedError: an unknown ``fill_mode`` or ``interpolation``.
    """

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        self.height_factor = height_factor
        self.width_factor = width_factor
        self.height_lower, self.height_upper = _bounds(height_factor)
        if self.height_upper < self.height_lower:
            raise ValueError("`height_factor` cannot have upper bound less than lower bound, "
                             f"got {height_factor}")
        if abs(self.height_lower) > 1.0 or abs(self.height_upper) > 1.0:
            raise ValueError("`height_factor` argument must have values between [-1, 1]. "
                             f"Received: height_factor={height_factor}")
        self.width_lower, self.width_upper = _bounds(width_factor)
        if self.width_upper < self.width_lower:
            raise ValueError("`width_factor` cannot have upper bound less than lower bound, "
                             f"got {width_factor}")
        if abs(self.width_lower) > 1.0 or abs(self.width_upper) > 1.0:
            raise ValueError(f"`width_factor` must have values between [-1, 1], got "
                             f"{width_factor}")
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)

    def _matrices(self, batch, height, width):
        dy = self._uniform([batch, 1], self.height_lower, self.height_upper) * np.float32(height)
        dx = self._uniform([batch, 1], self.width_lower, self.width_upper) * np.float32(width)
        return _transform.translation_matrix(np.concatenate([dx, dy], axis=1))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height_factor=self.height_factor, width_factor=self.width_factor)
        return config


class RandomRotation(_AffineLayer):
    """In training, rotate each image by an angle drawn in ``factor`` (a pair, or f for
    (-f, f)) times 2 pi, counter-clockwise for positive values, about its centre.

    Raises:
      ValueError: the upper bound below the lower.
      NotImplementedError: an unknown ``fill_mode`` or ``interpolation``.
    """

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, **kwargs):
        self.factor = factor
        self.lower, self.upper = _bounds(factor)
        if self.upper < self.lower:
            raise ValueError("`factor` argument cannot have a negative value. Received: "
                             f"factor={factor}")
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)

    def _matrices(self, batch, height, width):
        angles = self._uniform([batch], self.lower * 2.0 * np.pi, self.upper * 2.0 * np.pi)
        return _transform.rotation_matrix(angles, height, width)

    def get_config(self) -> dict:
        config = super().get_config()
        config["factor"] = self.factor
        return config


class RandomZoom(_AffineLayer):
    """In training, zoom each image by 1 + a factor drawn in ``height_factor`` (and
    ``width_factor``; None keeps the aspect ratio): positive values zoom out.

    Raises:
      ValueError: a height bound outside [-1, 1], or a width bound below -1.
      NotImplementedError: an unknown ``fill_mode`` or ``interpolation``.
    """

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, **kwargs):
        self.height_factor = height_factor
        self.height_lower, self.height_upper = _bounds(height_factor)
        if abs(self.height_lower) > 1.0 or abs(self.height_upper) > 1.0:
            raise ValueError("`height_factor` argument must have values between [-1, 1]. "
                             f"Received: height_factor={height_factor}")
        self.width_factor = width_factor
        if width_factor is not None:
            self.width_lower, self.width_upper = _bounds(width_factor)
            if self.width_lower < -1.0 or self.width_upper < -1.0:
                raise ValueError("`width_factor` argument must have values larger than -1. "
                                 f"Received: width_factor={width_factor}")
        super().__init__(fill_mode, interpolation, seed, fill_value, **kwargs)

    def _matrices(self, batch, height, width):
        zy = self._uniform([batch, 1], 1.0 + self.height_lower, 1.0 + self.height_upper)
        if self.width_factor is not None:
            zx = self._uniform([batch, 1], 1.0 + self.width_lower, 1.0 + self.width_upper)
        else:
            zx = zy
        return _transform.zoom_matrix(np.concatenate([zx, zy], axis=1), height, width)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height_factor=self.height_factor, width_factor=self.width_factor)
        return config


class RandomContrast(BaseRandomLayer):
    """In training, scale each channel about its per-image mean by one factor drawn in
    [1 - lower, 1 + upper) (``factor`` a pair, or f for (f, f)), then clip to [0, 255].

    Raises:
      ValueError: a negative bound, or a lower bound above 1; at call, an empty range
        (``tf.image.random_contrast``'s "upper must be > lower.").
    """

    def __init__(self, factor, seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.factor = factor
        if isinstance(factor, (tuple, list)):
            self.lower, self.upper = factor[0], factor[1]
        else:
            self.lower = self.upper = factor
        if self.lower < 0.0 or self.upper < 0.0 or self.lower > 1.0:
            raise ValueError("`factor` argument cannot have negative values or values greater "
                             f"than 1.Received: factor={factor}")

    def _call(self, inputs, training):
        x = as_compute_dtype(self, inputs)
        if not training:
            return x
        lower, upper = 1.0 - self.lower, 1.0 + self.upper
        if upper <= lower:  # tf.image.stateless_random_contrast's checks
            raise ValueError("upper must be > lower.")
        if lower < 0:
            raise ValueError("lower must be non-negative.")
        factor = self._stateless_uniform([], lower, upper)
        out = _image.adjust_contrast(x, factor)
        return _m.clip_by_value(out, 0, 255)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(factor=self.factor, seed=self.seed)
        return config


class RandomBrightness(BaseRandomLayer):
    """In training, add to each image a delta drawn in ``factor`` (a pair, or f for (-f, f))
    times the width of ``value_range``, then clip to ``value_range``.

    Raises:
      ValueError: a factor outside [-1, 1] or not a number or pair; a ``value_range`` not a
        pair; at call, an input of rank other than 3 or 4.
    """

    _FACTOR_VALIDATION_ERROR = ("The `factor` argument should be a number (or a list of two "
                                "numbers) in the range [-1.0, 1.0]. ")
    _VALUE_RANGE_VALIDATION_ERROR = "The `value_range` argument should be a list of two numbers. "

    def __init__(self, factor, value_range=(0, 255), seed=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self._set_factor(factor)
        self._set_value_range(value_range)

    def _set_value_range(self, value_range) -> None:
        if not isinstance(value_range, (tuple, list)) or len(value_range) != 2:
            raise ValueError(self._VALUE_RANGE_VALIDATION_ERROR + f"Got {value_range}")
        self._value_range = sorted(value_range)

    def _set_factor(self, factor) -> None:
        if isinstance(factor, (tuple, list)):
            if len(factor) != 2:
                raise ValueError(self._FACTOR_VALIDATION_ERROR + f"Got {factor}")
            self._check_factor_range(factor[0])
            self._check_factor_range(factor[1])
            self._factor = sorted(factor)
        elif isinstance(factor, (int, float)):
            self._check_factor_range(factor)
            factor = abs(factor)
            self._factor = [-factor, factor]
        else:
            raise ValueError(self._FACTOR_VALIDATION_ERROR + f"Got {factor}")

    def _check_factor_range(self, number) -> None:
        if number > 1.0 or number < -1.0:
            raise ValueError(self._FACTOR_VALIDATION_ERROR + f"Got {number}")

    def _call(self, inputs, training):
        x = as_compute_dtype(self, inputs)
        if not training:
            return x
        rank = len(x.shape)
        if rank == 3:
            shape = (1, 1, 1)
        elif rank == 4:
            shape = (int(x.shape[0]), 1, 1, 1)
        else:
            raise ValueError("Expected the input image to be rank 3 or 4. Got inputs.shape = "
                             f"{tuple(x.shape)}")
        low, high = self._value_range
        delta = self._uniform(shape, self._factor[0], self._factor[1]) * np.float32(high - low)
        out = x + as_compute_dtype(self, _transform._on_device(x, delta))
        return _m.clip_by_value(out, low, high)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(factor=self._factor, value_range=self._value_range, seed=self.seed)
        return config
