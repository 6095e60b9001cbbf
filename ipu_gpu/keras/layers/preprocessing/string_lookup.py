"""``StringLookup``: ``IntegerLookup``'s table with string tokens (``tf.string`` inputs,
stored as UTF-8 ``bytes``); OOV strings spread over several OOV indices by FarmHash
``Fingerprint64`` (``tf.strings.to_hash_bucket_fast``), as tf-keras does."""

from __future__ import annotations

import numpy as np

from ....core.convert import convert_to_tensor
from ....core.strings import string_array
from ....core.tensor import Tensor
from ....fingerprint import fingerprint64
from . import categorical as _cat
from .integer_lookup import IntegerLookup

__all__ = ["StringLookup"]


def _utf8(value) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


class StringLookup(IntegerLookup):
    """Map strings to indices (see ``IntegerLookup``): ``oov_token`` "[UNK]", no mask token by
    default; ``get_vocabulary`` gives ``str`` tokens; ``invert`` gives strings."""

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, encoding="utf-8", invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False, **kwargs):
        if kwargs.get("dtype") in ("string", object, np.dtype(object)):
            del kwargs["dtype"]  # legacy configs gave the layer the input's dtype
        kwargs.pop("vocabulary_dtype", None)
        self.encoding = encoding
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices,
                         mask_token=mask_token, oov_token=oov_token, vocabulary=vocabulary,
                         vocabulary_dtype="string", idf_weights=idf_weights, invert=invert,
                         output_mode=output_mode, sparse=sparse,
                         pad_to_max_tokens=pad_to_max_tokens, **kwargs)

    @staticmethod
    def _check_vocabulary_dtype(vocabulary_dtype) -> None:
        pass

    @staticmethod
    def _token(value):
        return _utf8(value)

    @staticmethod
    def _as_tokens(values) -> np.ndarray:
        if isinstance(values, Tensor):
            values = values.numpy()
        if isinstance(values, np.ndarray) and values.dtype.kind in "iuf":
            raise ValueError(f"StringLookup: the vocabulary must hold strings, got "
                             f"{values.dtype}")
        return string_array(values if np.size(values) else np.zeros(0, object)).reshape(-1)

    def _public(self, token):
        return token.decode(self.encoding) if isinstance(token, bytes) else token

    def get_vocabulary(self, include_special_tokens=True) -> list:
        return [self._public(t) for t in super().get_vocabulary(include_special_tokens)]

    def _input_tokens(self, data) -> np.ndarray:
        return self._call_tokens(data)

    def _call_tokens(self, inputs) -> np.ndarray:
        if self.invert:
            return _cat.host(inputs).astype(np.int64)
        values = _cat.host(inputs)
        if values.dtype.kind not in "OSU":
            raise ValueError(f"StringLookup: inputs must be strings, got {values.dtype}")
        return string_array(values)

    def _hash_oov(self, values: np.ndarray) -> np.ndarray:
        n = self.num_oov_indices
        out = np.empty(values.shape, np.int64)
        flat = out.reshape(-1)
        for i, v in enumerate(values.reshape(-1)):
            flat[i] = fingerprint64(v) % n if isinstance(v, bytes) else 0
        return out

    def _call(self, inputs):
        if self.invert:
            return convert_to_tensor(self._lookup(self._call_tokens(inputs)))
        return super()._call(inputs)

    def _lookup(self, values: np.ndarray) -> np.ndarray:
        out = super()._lookup(values)
        if self.invert:
            return out.astype(object)
        return out

    def compute_output_signature(self, input_signature):
        from ....core.spec import TensorSpec

        dtype = "string" if self.invert else self.compute_dtype
        return TensorSpec(self.compute_output_shape(input_signature.shape), dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["vocabulary_dtype"]
        for key in ("mask_token", "oov_token"):
            if isinstance(config[key], bytes):
                config[key] = config[key].decode(self.encoding)
        vocabulary = config["vocabulary"]
        if isinstance(vocabulary, list):
            config["vocabulary"] = [self._public(t) for t in vocabulary]
        config["encoding"] = self.encoding
        return config
