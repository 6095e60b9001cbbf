"""``CategoryEncoding``: integer indices in [0, ``num_tokens``) encoded per sample as
one-hot, multi-hot or (optionally weighted) count vectors."""

from __future__ import annotations

import logging

import numpy as np

from ....errors import InvalidArgumentError
from ... import backend
from ...engine.base_layer import Layer
from . import categorical as _cat
from .base import on_values

__all__ = ["CategoryEncoding"]


class CategoryEncoding(Layer):
    """Encode integer indices by ``output_mode`` ("one_hot", "multi_hot", "count"; the old
    name "binary" is "multi_hot"); ``count_weights`` weigh the counts.

    Raises:
      ValueError: an unknown ``output_mode``; ``num_tokens`` missing or below 1;
        ``count_weights`` outside "count".
      InvalidArgumentError: an index outside [0, num_tokens) (TF's failed assertion).
    """

    _shape_inference = True

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        if "max_tokens" in kwargs:
            logging.warning("max_tokens is deprecated, please use num_tokens instead.")
            num_tokens = kwargs.pop("max_tokens")
        if "dtype" not in kwargs:
            kwargs["dtype"] = backend.floatx()
        super().__init__(**kwargs)
        if output_mode == "binary":
            output_mode = _cat.MULTI_HOT
        _cat.validate_string_arg(output_mode, (_cat.COUNT, _cat.ONE_HOT, _cat.MULTI_HOT),
                                 "CategoryEncoding", "output_mode")
        if num_tokens is None:
            raise ValueError("num_tokens must be set to use this layer. If the number of tokens "
                             "is not known beforehand, use the IntegerLookup layer instead.")
        if num_tokens < 1:
            raise ValueError(f"`num_tokens` must be >= 1. Received: num_tokens={num_tokens}.")
        self.num_tokens = num_tokens
        self.output_mode = output_mode
        self.sparse = sparse

    def call(self, inputs, count_weights=None):
        if count_weights is not None and self.output_mode != _cat.COUNT:
            raise ValueError("`count_weights` is not used when `output_mode` is not `'count'`. "
                             f"Received `count_weights={count_weights}`.")
        if count_weights is None:
            return on_values(self._call, inputs)
        return on_values(self._call, inputs, count_weights)

    def _call(self, inputs, count_weights=None):
        values = _cat.host(inputs)
        if values.size and (values.max() >= self.num_tokens or values.min() < 0):
            raise InvalidArgumentError("assertion failed: [Input values must be in the range 0 "
                                       "<= values < num_tokens with num_tokens="
                                       f"{self.num_tokens}]")
        weights = None if count_weights is None else np.asarray(
            _cat.host(count_weights), np.dtype(self.compute_dtype))
        return _cat.encode_categorical_inputs(values, self.output_mode, self.num_tokens,
                                              dtype=self.compute_dtype, sparse=self.sparse,
                                              count_weights=weights)

    def compute_output_shape(self, input_shape):
        return _cat.encoded_shape(input_shape, self.output_mode, self.num_tokens)

    def compute_output_signature(self, input_signature):
        from ....core.spec import TensorSpec

        return TensorSpec(self.compute_output_shape(input_signature.shape), self.compute_dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_tokens=self.num_tokens, output_mode=self.output_mode,
                      sparse=self.sparse)
        return config
