"""``Embedding``: the Keras embedding layer on the IPU's lookup
(``ipu.embedding_ops.embedding_lookup``)."""

from __future__ import annotations

from ipu_gpu.core.spec import as_shape
from ipu_gpu.ipu import embedding_ops
from ipu_gpu.keras import initializers

from .ipu_layer import IPULayer

__all__ = ["Embedding"]


class Embedding(IPULayer):
    """Rows of a trainable (input_dim, output_dim) table, looked up by the int32 ids of a
    (batch, input_length) input.

    Args:
      input_dim: the vocabulary size.
      output_dim: the size of each row.
      embeddings_initializer: the table's initializer (default ``uniform``).
      serialization_factor: split the lookup into this many lookups over the table's rows
        (it must divide ``input_dim``; the values are the same).
      embeddings_regularizer, activity_regularizer, embeddings_constraint, mask_zero,
        input_length: accepted for API consistency with Keras; setting one raises
        NotImplementedError, as Graphcore's layer.

    Raises:
      ValueError (at build): inputs that are not 2-D.
    """

    _float_output = True

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform",
                 embeddings_regularizer=None, activity_regularizer=None,
                 embeddings_constraint=None, mask_zero=False, input_length=None,
                 serialization_factor=1, **kwargs):
        kwargs["autocast"] = False
        super().__init__(**kwargs)
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.serialization_factor = serialization_factor
        self._check_unsupported(embeddings_regularizer, "embeddings_regularizer")
        self._check_unsupported(activity_regularizer, "activity_regularizer")
        self._check_unsupported(embeddings_constraint, "embeddings_constraint")
        self._check_unsupported(mask_zero, "mask_zero")
        self._check_unsupported(input_length, "input_length")

    def build(self, input_shape):
        if len(as_shape(input_shape)) != 2:
            raise ValueError("The input shape should be a tensor of shape [batch, "
                             "input_length]")
        self.embeddings = self.add_weight(shape=(self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          name="embeddings")
        self.built = True

    def call(self, inputs, inputs_are_sorted=False, training=None):
        """The embedding rows of the ids ``inputs`` (``inputs_are_sorted``: a hint)."""
        del training
        return embedding_ops.embedding_lookup(self.embeddings, ids=inputs,
                                              indices_are_sorted=inputs_are_sorted,
                                              name=self.name,
                                              serialization_factor=self.serialization_factor)

    def compute_output_shape(self, input_shape):
        return as_shape(input_shape).concatenate([self.output_dim])

    def get_config(self) -> dict:
        return {"input_dim": self.input_dim, "output_dim": self.output_dim,
                "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
                "serialization_factor": self.serialization_factor}
