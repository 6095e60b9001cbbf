"""``GroupNormalization``, ``InstanceNormalization``, ``LayerNormalization`` (and the short
names ``GroupNorm``, ``InstanceNorm``, ``LayerNorm``): Popnn's normalisations as Keras layers.

Each normalises every example by the statistics of its own values (no moving statistics),
with PopLibs' arithmetic (``ipu.normalization_ops``: float32 statistics, biased variance
``E[x^2] - mean^2``), then scales by ``gamma`` and shifts by ``beta``. Training and inference
compute the same values.

As Graphcore's layers: Group and Instance normalisation default ``beta_initializer`` and
``gamma_initializer`` to None, which Keras's ``add_weight`` turns into ``glorot_uniform`` (so
gamma and beta start random); ``get_config`` holds only the layers' own arguments.
"""

from __future__ import annotations

import math

from ipu_gpu.core.convert import constant
from ipu_gpu.core.spec import as_shape
from ipu_gpu.ipu.normalization_ops import _normalise
from ipu_gpu.keras import constraints, initializers, regularizers
from ipu_gpu.ops import shape as _shape

from .ipu_layer import IPULayer

__all__ = ["GroupNorm", "GroupNormalization", "InstanceNorm", "InstanceNormalization",
           "LayerNorm", "LayerNormalization"]


def _invert_permutation(perm) -> list:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return inverse


class GroupNormalization(IPULayer):
    """Group normalisation (Wu & He 2018) over ``groups`` groups of channels.

    Args:
      groups: the number of groups (it must divide the channel count).
      channels_axis: the channels axis, 1 (NCHW) or the last (NHWC).
      center, scale: use ``beta`` / ``gamma``.
      epsilon: added to the variance.
      beta_initializer, gamma_initializer: the weights' initializers.
      strided_channel_grouping: channel c is in group ``c % groups`` (PopLibs' efficient
        grouping) instead of ``c // (channels / groups)``.
      trainable: whether gamma and beta are trained.

    Raises (at build):
      ValueError: channels axis out of bounds or neither 1 nor the last; more groups than
        channels, or groups not dividing them (Graphcore's messages).
    """

    def __init__(self, groups=2, channels_axis=-1, center=True, scale=True, epsilon=1e-3,
                 beta_initializer=None, gamma_initializer=None, strided_channel_grouping=True,
                 trainable=True, **kwargs):
        super().__init__(**kwargs)
        self.groups = groups
        self.channels_axis = channels_axis
        self.center = center
        self.scale = scale
        self.epsilon = epsilon
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.strided_channel_grouping = strided_channel_grouping
        self.data_format = ""
        self.channels = 1
        self.trainable = trainable

    def build(self, input_shape):
        return self._build_impl(input_shape)

    def _build_impl(self, input_shape, parameter_shape=None):
        if input_shape is None:
            raise ValueError("Input has undefined rank.")
        input_shape = list(as_shape(input_shape).as_list())
        if self.channels_axis > len(input_shape) - 1:
            raise ValueError("Axis is out of bounds.")
        if self.channels_axis < 0:
            self.channels_axis = len(input_shape) + self.channels_axis
        self.channels = input_shape[self.channels_axis]
        if self.groups > self.channels:
            raise ValueError(f"Invalid groups {self.groups} for {self.channels} channels.")
        if self.channels % self.groups != 0:
            raise ValueError(f"{self.channels} channels is not commensurate with "
                             f"{self.groups} groups.")
        if self.channels_axis == 1:
            self.data_format = "NCHW"
        elif self.channels_axis == len(input_shape) - 1:
            self.data_format = "NHWC"
        else:
            raise ValueError("Unsupported data format, group norm only supports NCHW"
                             "(channel axis 1) and NHWC (channel axis -1).")
        parameter_shape = parameter_shape or [self.channels]
        if self.scale:
            self.gamma = self.add_weight("gamma", dtype=self.dtype,
                                         initializer=self.gamma_initializer,
                                         shape=parameter_shape, trainable=self.trainable)
        if self.center:
            self.beta = self.add_weight("beta", dtype=self.dtype,
                                        initializer=self.beta_initializer,
                                        shape=parameter_shape, trainable=self.trainable)
        self.built = True

    def call(self, inputs, training=None):
        """The normalised inputs (same shape and dtype)."""
        shape = [self.channels]
        beta = self.beta if self.center else constant(0.0, dtype=self.dtype, shape=shape)
        gamma = self.gamma if self.scale else constant(1.0, dtype=self.dtype, shape=shape)
        dims = [None if d is None else int(d) for d in inputs.shape]
        return _normalise(inputs, _shape.reshape(gamma, [-1]), _shape.reshape(beta, [-1]),
                          dims, self.data_format, self.groups, self.epsilon,
                          self.strided_channel_grouping)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self) -> dict:
        return {"groups": self.groups, "channels_axis": self.channels_axis,
                "center": self.center, "scale": self.scale, "epsilon": self.epsilon,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "strided_channel_grouping": self.strided_channel_grouping,
                "trainable": self.trainable}


class InstanceNormalization(GroupNormalization):
    """Instance normalisation (Ulyanov et al. 2016): one group per channel. Arguments as
    ``GroupNormalization`` without ``groups``."""

    def __init__(self, channels_axis=-1, center=True, scale=True, epsilon=1e-3,
                 beta_initializer=None, gamma_initializer=None, trainable=True, **kwargs):
        super().__init__(groups=0, channels_axis=channels_axis, center=center, scale=scale,
                         epsilon=epsilon, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, trainable=trainable, **kwargs)

    def build(self, input_shape):
        self.groups = as_shape(input_shape).as_list()[self.channels_axis]
        super().build(input_shape)

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("groups", "strided_channel_grouping"):
            config.pop(key)
        return config


class LayerNormalization(GroupNormalization):
    """Layer normalisation (Ba et al. 2016) over ``axis`` (an int or a list of ints), with
    ``gamma``/``beta`` shaped like those axes, as Keras's ``LayerNormalization``.

    Raises:
      ValueError: ``axis`` neither an int nor a list/tuple of ints; (at build) an axis out
        of range, repeated, or of unknown size.
      NotImplementedError: a regularizer or constraint (accepted for API consistency only).
    """

    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", beta_regularizer=None,
                 gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
                 trainable=True, **kwargs):
        if isinstance(axis, (list, tuple)):
            self.axis = axis[:]
        elif isinstance(axis, int):
            self.axis = axis
        else:
            raise ValueError("Expected an int or a list/tuple of ints for the argument "
                             f"'axis', but received instead: {axis}")
        super().__init__(groups=1, channels_axis=-1, center=center, scale=scale,
                         epsilon=epsilon, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, trainable=trainable, **kwargs)
        self._check_unsupported(beta_regularizer, "beta_regularizer")
        self._check_unsupported(gamma_regularizer, "gamma_regularizer")
        self._check_unsupported(beta_constraint, "beta_constraint")
        self._check_unsupported(gamma_constraint, "gamma_constraint")
        self.beta_regularizer = regularizers.get(beta_regularizer)
        self.gamma_regularizer = regularizers.get(gamma_regularizer)
        self.beta_constraint = constraints.get(beta_constraint)
        self.gamma_constraint = constraints.get(gamma_constraint)

    def build(self, input_shape):
        input_shape = as_shape(input_shape).as_list()
        ndims = len(input_shape)
        axis = [self.axis] if isinstance(self.axis, int) else list(self.axis)
        axis = [ndims + a if a < 0 else a for a in axis]
        for a in axis:
            if a < 0 or a >= ndims:
                raise ValueError(f"Invalid axis: {a}")
        parameter_shape = [input_shape[a] for a in axis]
        self.axis = sorted(axis)
        if len(self.axis) != len(set(self.axis)):
            raise ValueError(f"Duplicate axis: {tuple(self.axis)}")
        if any(input_shape[a] is None for a in self.axis):
            raise ValueError(f"Input shape {input_shape} has unknown dimensions - all "
                             "dimensions need to be fully specified.")
        self.non_reduced_dims = sorted(set(range(ndims)) - set(self.axis))
        self.permutation = self.non_reduced_dims + self.axis
        self.num_reduced_elements = math.prod(input_shape[a] for a in self.axis)
        self._build_impl([None, self.num_reduced_elements], parameter_shape)

    def call(self, inputs, training=None):
        """The inputs normalised over ``axis`` (same shape and dtype)."""
        permuted = _shape.transpose(inputs, self.permutation)
        permuted_shape = list(permuted.shape)
        flat = _shape.reshape(permuted, [-1, self.num_reduced_elements])
        outputs = super().call(flat, training)
        outputs = _shape.reshape(outputs, permuted_shape)
        return _shape.transpose(outputs, _invert_permutation(self.permutation))

    def get_config(self) -> dict:
        return {"axis": self.axis, "epsilon": self.epsilon, "center": self.center,
                "scale": self.scale,
                "beta_initializer": initializers.serialize(self.beta_initializer),
                "gamma_initializer": initializers.serialize(self.gamma_initializer),
                "beta_regularizer": regularizers.serialize(self.beta_regularizer),
                "gamma_regularizer": regularizers.serialize(self.gamma_regularizer),
                "beta_constraint": constraints.serialize(self.beta_constraint),
                "gamma_constraint": constraints.serialize(self.gamma_constraint),
                "trainable": self.trainable}


GroupNorm = GroupNormalization
InstanceNorm = InstanceNormalization
LayerNorm = LayerNormalization
