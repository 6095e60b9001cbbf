"""``Embedding``: rows of a trainable ``(input_dim, output_dim)`` table looked up by integer
ids; ``mask_zero`` makes id 0 padding (its positions are masked downstream)."""

from __future__ import annotations

from ...core.spec import TensorShape, as_shape
from ...ops import math as _m
from ...ops import nn as _nn
from .. import regularizers
from ..engine.base_layer import Layer
from ._weight_args import set_weight_args, weight_args_config

__all__ = ["Embedding"]


class Embedding(Layer):
    """Turns ids ``(batch, ...)`` into vectors ``(batch, ..., output_dim)``.

    Args:
      input_dim: the vocabulary size (ids are in [0, input_dim)).
      output_dim: the vector size.
      embeddings_initializer: default ``"uniform"`` (RandomUniform(-0.05, 0.05)).
      mask_zero: id 0 is padding: ``compute_mask`` gives ``inputs != 0``.
      input_length: the sequence length(s), used for output shapes.
      sparse: SparseTensor inputs (not supported; NotImplementedError when true).

    Raises:
      ValueError: a non-positive ``input_dim`` or ``output_dim``.
    """

    _shape_inference = True
    _float_output = True

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, input_length=None, sparse=False,
                 **kwargs):
        if "input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,) if input_length else (None,)
        if input_dim <= 0 or output_dim <= 0:
            raise ValueError("Both `input_dim` and `output_dim` should be positive, Received "
                             f"input_dim = {input_dim} and output_dim = {output_dim}")
        if sparse:
            raise NotImplementedError("Embedding: sparse=True (SparseTensor inputs) is not "
                                      "emulated")
        kwargs["autocast"] = False
        super().__init__(**kwargs)
        self.input_dim = input_dim
        self.output_dim = output_dim
        set_weight_args(self, ("embeddings",), locals())
        self.activity_regularizer = regularizers.get(activity_regularizer)
        self.mask_zero = mask_zero
        self.supports_masking = mask_zero
        self.input_length = input_length
        self.sparse = sparse

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          name="embeddings",
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint,
                                          experimental_autocast=False)  # cast after lookup
        self.built = True

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return _m.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape):
        dims = as_shape(input_shape).as_list()
        if self.input_length is None:
            return TensorShape(dims + [self.output_dim])
        lens = list(self.input_length) if isinstance(self.input_length, (list, tuple)) \
            else [self.input_length]
        if len(lens) != len(dims) - 1:
            raise ValueError(f'"input_length" is {self.input_length}, but received input has '
                             f"shape {tuple(dims)}")
        for i, (s1, s2) in enumerate(zip(lens, dims[1:])):
            if s1 is not None and s2 is not None and s1 != s2:
                raise ValueError(f'"input_length" is {self.input_length}, but received input '
                                 f"has shape {tuple(dims)}")
            if s1 is None:
                lens[i] = s2
        return TensorShape([dims[0], *lens, self.output_dim])

    def call(self, inputs):
        if inputs.dtype.name not in ("int32", "int64"):
            inputs = _m.cast(inputs, "int32")
        out = _nn.embedding_lookup(self.embeddings, inputs)
        if self.compute_dtype != self.dtype:
            out = _m.cast(out, self.compute_dtype)
        return out

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "input_dim": self.input_dim, "output_dim": self.output_dim,
            **weight_args_config(self, ("embeddings",), activity_regularizer=True),
            "mask_zero": self.mask_zero, "input_length": self.input_length,
        })
        return config
