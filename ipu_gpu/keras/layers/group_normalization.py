"""``GroupNormalization``: the channels of ``axis`` split into ``groups``, each normalised
over itself and the other non-batch axes (masked positions left out of the moments), then
scaled by ``gamma`` and shifted by ``beta`` per channel, as tf-keras's layer."""

from __future__ import annotations

from ...core.spec import as_shape
from ...ops import array as _array
from ...ops import creation as _creation
from ...ops import math as _m
from ...ops import shape as _shape
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from ._weight_args import set_weight_args, weight_args_config
from .normalization import _normalize, _weighted_moments

__all__ = ["GroupNormalization"]


class GroupNormalization(Layer):
    """Group normalization (Wu and He, 2018); ``groups=-1`` is one group per channel
    (instance normalization), ``groups=1`` layer normalization over all non-batch axes.

    Raises:
      ValueError (at build): an axis outside the input's rank, an undefined channel count,
        more groups than channels, or channels not divisible by the groups.
    """

    _shape_inference = True

    def __init__(self, groups=32, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.groups = groups
        self.axis = axis
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        set_weight_args(self, ("beta", "gamma"), locals())

    def build(self, input_shape):
        dims = as_shape(input_shape).as_list()
        rank = len(dims)
        axis = self.axis + rank if self.axis < 0 else self.axis
        if axis < 0 or axis >= rank:
            raise ValueError("Invalid value for `axis` argument. Expected 0 <= axis < "
                             f"inputs.rank (with inputs.rank={rank}). Received: "
                             f"axis={(axis,)}")
        dim = dims[self.axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined "
                             "dimension but the layer received an input with shape "
                             f"{as_shape(input_shape)}.")
        if self.groups == -1:
            self.groups = dim
        if dim < self.groups:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the "
                             f"number of channels ({dim}).")
        if dim % self.groups != 0:
            raise ValueError(f"Number of groups ({self.groups}) must be a multiple of the "
                             f"number of channels ({dim}).")
        self.input_spec = InputSpec(ndim=rank, axes={self.axis: dim})
        self.gamma = self.add_weight(shape=(dim,), name="gamma",
                                     initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight(shape=(dim,), name="beta",
                                    initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None
        super().build(input_shape)

    def _grouped(self, shape):
        """``shape`` with the channel axis split into (groups, channels per group)."""
        grouped = list(shape)
        grouped[self.axis] = shape[self.axis] // self.groups
        grouped.insert(self.axis, self.groups)
        return grouped

    def call(self, inputs, mask=None):
        shape = list(inputs.shape)
        grouped = self._grouped(shape)
        if mask is None:
            mask = _creation.ones_like(inputs)
        else:
            mask = _array.broadcast_to(_m.cast(mask, inputs.dtype), shape)
        x = _shape.reshape(inputs, grouped)
        axes = list(range(1, len(grouped)))
        axes.pop(self.axis - 1)  # keep the groups axis (tf-keras's index arithmetic)
        mean, variance = _weighted_moments(x, axes, _shape.reshape(mask, grouped), True)
        base = [1] * len(shape)
        base[self.axis] = shape[self.axis]
        broadcast = self._grouped(base)  # gamma and beta per (group, channel in group)
        gamma = None if self.gamma is None else _shape.reshape(self.gamma, broadcast)
        beta = None if self.beta is None else _shape.reshape(self.beta, broadcast)
        return _shape.reshape(_normalize(x, mean, variance, beta, gamma, self.epsilon), shape)

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(groups=self.groups, axis=self.axis, epsilon=self.epsilon,
                      center=self.center, scale=self.scale,
                      **weight_args_config(self, ("beta", "gamma")))
        return config
