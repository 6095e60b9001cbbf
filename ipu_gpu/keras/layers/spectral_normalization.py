"""``SpectralNormalization``: a wrapper that divides a layer's kernel (or embeddings) by its
largest singular value, estimated by power iteration (Miyato et al. 2018), as tf-keras.

Each training call runs ``power_iterations`` steps from the stored ``vector_u`` (a
non-trainable ``(1, out)`` weight), then assigns ``kernel / sigma`` to the wrapped layer's
kernel and the new ``u`` to ``vector_u`` before calling the layer (an all-zero kernel is
left as it is); inference calls (the default) use the kernel as it stands. The iteration
is outside the gradient: the layer's gradients are those of its kernel variable.
"""

from __future__ import annotations

from ...core.spec import as_shape
from ...ops import indexing as _idx
from ...ops import math as _m
from ...ops import matmul as _matmul
from ...ops import nn as _nn
from ...ops import reduction as _reduction
from ...ops import shape as _shape
from .. import backend, initializers
from ..engine.base_layer import Layer
from ..engine.input_spec import InputSpec
from ..engine.keras_tensor import KerasTensor

__all__ = ["SpectralNormalization"]


class SpectralNormalization(Layer):
    """Wraps ``layer`` (one with a ``kernel`` or ``embeddings`` weight).

    Raises:
      ValueError: ``layer`` is not a layer; ``power_iterations`` below 1; a layer with
        neither weight (at build).
    """

    def __init__(self, layer, power_iterations=1, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Layer {layer} supplied to wrapper is not a supported layer "
                             "type. Please ensure wrapped layer is a valid TF-Keras layer.")
        self.layer = layer
        super().__init__(**kwargs)
        if power_iterations <= 0:
            raise ValueError("`power_iterations` should be greater than zero. Received: "
                             f"`power_iterations={power_iterations}`")
        self.power_iterations = power_iterations

    @property
    def activity_regularizer(self):
        return getattr(self.layer, "activity_regularizer", None)

    @activity_regularizer.setter
    def activity_regularizer(self, value):
        if value is not None:
            self.layer.activity_regularizer = value

    def build(self, input_shape):
        input_shape = as_shape(input_shape)
        if not self.layer.built:  # in this wrapper's name scope: spectral_normalization/kernel
            self.layer._maybe_build(KerasTensor(input_shape.as_list(), self.compute_dtype))
            self.layer.built = True
        self.input_spec = InputSpec(shape=[None] + input_shape.as_list()[1:])
        kernel = getattr(self.layer, "kernel", None)
        if kernel is None:
            kernel = getattr(self.layer, "embeddings", None)
        if kernel is None:
            raise ValueError(f"{type(self.layer).__name__} object has no attribute 'kernel' "
                             "nor 'embeddings'")
        object.__setattr__(self, "kernel", kernel)  # the layer's own weight, not a new one
        self.kernel_shape = as_shape(kernel.shape).as_list()
        self.vector_u = self.add_weight(
            shape=(1, self.kernel_shape[-1]),
            initializer=initializers.TruncatedNormal(stddev=0.02), trainable=False,
            name="vector_u", dtype=getattr(kernel, "true_dtype", kernel.dtype))
        self.built = True

    def call(self, inputs, training=False):
        if training:
            self._update_weights()
        return self.layer(inputs)

    def normalize_weights(self):
        """(the normalised kernel, the new ``vector_u``) from the current weights."""
        weights = _shape.reshape(self.kernel, [-1, self.kernel_shape[-1]])
        vector_u = vector_v = self.vector_u.read_value()
        for _ in range(self.power_iterations):
            vector_v = _nn.l2_normalize(_matmul.matmul(vector_u, weights, transpose_b=True))
            vector_u = _nn.l2_normalize(_matmul.matmul(vector_v, weights))
        vector_u, vector_v = _m.stop_gradient(vector_u), _m.stop_gradient(vector_v)
        sigma = _matmul.matmul(_matmul.matmul(vector_v, weights), vector_u, transpose_b=True)
        return _shape.reshape(weights / sigma, self.kernel_shape), vector_u

    def _update_weights(self):
        kernel, vector_u = self.kernel.read_value(), self.vector_u.read_value()
        zero = _reduction.reduce_all(_m.equal(kernel, backend._constant_like(0, kernel)))
        normalized, new_u = self.normalize_weights()
        for variable, value in ((self.kernel, _idx.where(zero, kernel, normalized)),
                                (self.vector_u, _idx.where(zero, vector_u, new_u))):
            # mixed precision: computed in the compute dtype, stored in the variable's
            variable.assign(_m.cast(value, getattr(variable, "true_dtype", variable.dtype)))

    def compute_output_shape(self, input_shape):
        return as_shape(self.layer.compute_output_shape(input_shape))

    def get_config(self) -> dict:
        from . import serialize

        config = super().get_config()
        config["layer"] = serialize(self.layer)
        config["power_iterations"] = self.power_iterations
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from . import deserialize

        config = dict(config)
        layer = deserialize(config.pop("layer"), custom_objects=custom_objects)
        return cls(layer, **config)
