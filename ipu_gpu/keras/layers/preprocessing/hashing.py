"""``Hashing``: integer inputs hashed into ``num_bins`` bins as TF hashes them (the
FarmHash fingerprint, or with ``salt`` SipHash, of each value's decimal string), with an
optional ``mask_value`` mapped to bin 0; as indices or encoded by ``output_mode``.

String inputs (``tf.string``) are hashed as they are (UTF-8 bytes)."""

from __future__ import annotations

import numpy as np

from ....core.convert import convert_to_tensor
from ....core.dtypes import as_dtype
from ....errors import InvalidArgumentError
from ... import backend
from ...engine.base_layer import Layer
from . import categorical as _cat
from .base import on_values
from .string_hash import fingerprint64_ints, siphash24_ints

__all__ = ["Hashing"]

_TF_NAMES = {"float16": "half", "float32": "float", "float64": "double"}


class Hashing(Layer):
    """Hash integers into ``num_bins`` bins (bin 0 reserved for ``mask_value`` when given);
    ``salt`` (an int or a pair) selects the keyed strong hash.

    Raises:
      ValueError: ``num_bins`` missing or not positive; an unknown ``output_mode``; "int"
        with a non-integer ``dtype``; ``sparse`` with "int"; a bad ``salt``.
      InvalidArgumentError: non-integer inputs (TF hashes only strings and integers).
    """

    _shape_inference = True

    def __init__(self, num_bins, mask_value=None, salt=None, output_mode="int", sparse=False,
                 **kwargs):
        if num_bins is None or num_bins <= 0:
            raise ValueError("The `num_bins` for `Hashing` cannot be `None` or non-positive "
                             f"values. Received: num_bins={num_bins}.")
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == _cat.INT else backend.floatx()
        elif output_mode == _cat.INT and as_dtype(kwargs["dtype"]).kind not in "iu":
            kwargs["dtype"] = "int64"
        super().__init__(**kwargs)
        if output_mode == _cat.INT and as_dtype(self.compute_dtype).kind not in "iu":
            raise ValueError('When `output_mode="int"`, `dtype` should be an integer type. '
                             f"Received: dtype={kwargs['dtype']}")
        _cat.validate_string_arg(output_mode, (_cat.INT, _cat.ONE_HOT, _cat.MULTI_HOT,
                                               _cat.COUNT), type(self).__name__, "output_mode")
        if sparse and output_mode == _cat.INT:
            raise ValueError('`sparse` may only be true if `output_mode` is `"one_hot"`, '
                             f'`"multi_hot"`, or `"count"`. Received: sparse={sparse} and '
                             f"output_mode={output_mode}")
        self.num_bins = num_bins
        self.mask_value = mask_value
        self.strong_hash = salt is not None
        self.output_mode = output_mode
        self.sparse = sparse
        self.salt = None
        if salt is not None:
            if isinstance(salt, (tuple, list)) and len(salt) == 2:
                self.salt = salt
            elif isinstance(salt, int):
                self.salt = [salt, salt]
            else:
                raise ValueError("The `salt` argument for `Hashing` can only be a tuple of size "
                                 f"2 integers, or a single integer. Received: salt={salt}.")

    def _hash(self, values: np.ndarray, bins: int) -> np.ndarray:
        if values.dtype == object:  # strings
            from ....fingerprint import fingerprint64, siphash24

            if self.strong_hash:
                key0, key1 = int(self.salt[0]), int(self.salt[1])
                return np.array([siphash24(key0, key1, v) % bins for v in values], np.int64)
            return np.array([fingerprint64(v) % bins for v in values], np.int64)
        if self.strong_hash:
            hashed = siphash24_ints(int(self.salt[0]), int(self.salt[1]), values)
        else:
            hashed = fingerprint64_ints(values)
        return (hashed % np.uint64(bins)).astype(np.int64)

    def _hash_values_to_bins(self, values: np.ndarray) -> np.ndarray:
        bins = self.num_bins
        mask = None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            mask_value = self.mask_value
            if values.dtype == object and isinstance(mask_value, str):
                mask_value = mask_value.encode("utf-8")
            mask = values == mask_value
        unique, inverse = np.unique(values, return_inverse=True)
        out = self._hash(unique, bins)[inverse.reshape(-1)].reshape(values.shape)
        if mask is not None:
            out = np.where(mask, 0, out + 1)
        return out

    def call(self, inputs):
        return on_values(self._call, inputs)

    def _call(self, inputs):
        values = _cat.host(inputs)
        if values.dtype.kind in "OSU":
            from ....core.strings import string_array

            values = string_array(values)
        elif values.dtype.kind not in "iu":  # TF hashes strings, and integers as strings
            name = _TF_NAMES.get(values.dtype.name, values.dtype.name)
            raise InvalidArgumentError("cannot compute StringToHashBucketFast as input "
                                       "#0(zero-based) was expected to be a string tensor but "
                                       f"is a {name} tensor [Op:StringToHashBucketFast]")
        return _cat.encode_categorical_inputs(
            convert_to_tensor(self._hash_values_to_bins(values)), output_mode=self.output_mode,
            depth=self.num_bins, sparse=self.sparse, dtype=self.compute_dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_output_signature(self, input_signature):
        from ....core.spec import TensorSpec

        return TensorSpec(self.compute_output_shape(input_signature.shape), self.compute_dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_bins=self.num_bins, salt=self.salt, mask_value=self.mask_value,
                      output_mode=self.output_mode, sparse=self.sparse)
        return config
