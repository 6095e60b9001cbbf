"""``IntegerLookup``: integer tokens mapped to contiguous indices by a vocabulary (given, read
from a file of one token a line, or learnt by ``adapt`` from token frequencies), with mask
and out-of-vocabulary (OOV) indices, the inverse mapping with ``invert``, and the
categorical ``output_mode``s. The table lives on the host, as TF's hash tables do."""

from __future__ import annotations

import collections
import logging
import os

import numpy as np

from ....core.convert import convert_to_tensor
from ....core.dtypes import as_dtype
from ....core.spec import TensorShape, TensorSpec, as_shape
from ....errors import InvalidArgumentError
from ... import backend
from . import categorical as _cat
from .base import PreprocessingLayer, on_values

__all__ = ["IntegerLookup"]


class IntegerLookup(PreprocessingLayer):
    """Map integers to indices: index 0 is ``mask_token``'s when one is given (in "int"
    mode), then ``num_oov_indices`` OOV indices (inputs hashed among them by value modulo
    their number), then the vocabulary in order (after ``adapt``: most frequent first, ties
    by larger token first), at most ``max_tokens`` in all.

    Raises:
      ValueError: a non-integer ``vocabulary_dtype``; ``max_tokens`` <= 1; negative
        ``num_oov_indices``; an unknown ``output_mode``; ``invert`` outside "int"; ``sparse``
        with "int"; ``idf_weights`` outside "tf_idf"; a bad vocabulary (empty, repeated
        tokens, special tokens inside it, too long, a missing file); ``adapt`` after a
        vocabulary was set.
      RuntimeError: a counting mode called before the vocabulary is known, or its size
        changed after it was called.
      InvalidArgumentError: an OOV input with ``num_oov_indices=0``.
    """

    _shape_inference = True

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False, **kwargs):
        self._check_vocabulary_dtype(vocabulary_dtype)
        if output_mode != "int" and kwargs.get("dtype") in ("int64", np.int64,
                                                             np.dtype("int64")):
            del kwargs["dtype"]
        for old, new in (("max_values", "max_tokens"), ("mask_value", "mask_token"),
                         ("oov_value", "oov_token")):
            if old in kwargs:
                logging.warning("%s is deprecated, use %s instead.", old, new)
        max_tokens = kwargs.pop("max_values", max_tokens)
        mask_token = kwargs.pop("mask_value", mask_token)
        oov_token = kwargs.pop("oov_value", oov_token)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError("If `max_tokens` is set for `IntegerLookup`, it must be greater "
                             f"than 1. Received: max_tokens={max_tokens}.")
        if num_oov_indices < 0:
            raise ValueError("The value of `num_oov_indices` argument for `IntegerLookup` must "
                             f">= 0. Received num_oov_indices={num_oov_indices}.")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError("If pad_to_max_tokens is True, must set `max_tokens`. Received: "
                             f"max_tokens={max_tokens}")
        if output_mode == "binary":
            output_mode = _cat.MULTI_HOT
        if output_mode == "tf-idf":
            output_mode = _cat.TF_IDF
        _cat.validate_string_arg(output_mode, (_cat.INT, _cat.ONE_HOT, _cat.MULTI_HOT,
                                               _cat.COUNT, _cat.TF_IDF), type(self).__name__,
                                 "output_mode")
        if invert and output_mode != _cat.INT:
            raise ValueError("`output_mode` must be `'int'` when `invert` is true. Received: "
                             f"output_mode={output_mode}")
        if sparse and output_mode == _cat.INT:
            raise ValueError("`sparse` may only be true if `output_mode` is `'one_hot'`, "
                             "`'multi_hot'`, `'count'` or `'tf_idf'`. Received: "
                             f"sparse={sparse} and output_mode={output_mode}")
        if idf_weights is not None and output_mode != _cat.TF_IDF:
            raise ValueError("`idf_weights` should only be set if `output_mode` is "
                             f"`'tf_idf'`. Received: idf_weights={idf_weights} and "
                             f"output_mode={output_mode}")
        self.invert = invert
        self.max_tokens = max_tokens
        self.num_oov_indices = num_oov_indices
        self.mask_token = None if mask_token is None else self._token(mask_token)
        self.oov_token = None if oov_token is None else self._token(oov_token)
        self.output_mode = output_mode
        self.sparse = sparse
        self.pad_to_max_tokens = pad_to_max_tokens
        self.vocabulary_dtype = vocabulary_dtype
        self._frozen_vocab_size = kwargs.pop("vocabulary_size", None)
        self.input_vocabulary = vocabulary
        self.input_idf_weights = idf_weights
        self._has_input_vocabulary = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        kwargs.pop("has_static_table", None)
        if "dtype" not in kwargs:
            kwargs["dtype"] = "int64" if output_mode == _cat.INT else backend.floatx()
        super().__init__(**kwargs)
        if output_mode == _cat.INT and as_dtype(self.compute_dtype).kind not in "iu":
            raise ValueError("When `output_mode='int'`, `dtype` should be an integer type. "
                             f"Received: dtype={kwargs['dtype']}")
        self._tokens = self._as_tokens([])  # the vocabulary without special tokens
        self._order = np.zeros(0, np.int64)  # argsort of the tokens, for lookups
        self.idf_weights = np.zeros(self._token_start_index(), np.dtype(self.compute_dtype))
        self._token_counts = collections.Counter()
        self._document_counts = collections.Counter()
        self._num_documents = 0
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # ---- tokens (StringLookup's differ) ------------------------------------------------------
    @staticmethod
    def _check_vocabulary_dtype(vocabulary_dtype) -> None:
        if as_dtype(vocabulary_dtype).kind not in "iu":
            raise ValueError("`vocabulary_dtype` must be an integer dtype. Received: "
                             f"{vocabulary_dtype}")

    @staticmethod
    def _token(value):
        return int(value)

    @staticmethod
    def _as_tokens(values) -> np.ndarray:
        return np.asarray(values, np.int64).reshape(-1)

    @staticmethod
    def _public(token):
        return int(token)

    def _input_tokens(self, data) -> np.ndarray:
        return _cat.host(data).astype(np.dtype(self.vocabulary_dtype))

    def _call_tokens(self, inputs) -> np.ndarray:
        return _cat.host(inputs).astype(np.int64)

    def _hash_oov(self, values: np.ndarray) -> np.ndarray:
        return np.mod(values, self.num_oov_indices)

    # ---- vocabulary --------------------------------------------------------------------------
    def _oov_start_index(self) -> int:
        return 1 if self.mask_token is not None and self.output_mode == _cat.INT else 0

    def _token_start_index(self) -> int:
        return self._oov_start_index() + self.num_oov_indices

    def vocabulary_size(self) -> int:
        """The number of indices: special ones and the vocabulary's."""
        return len(self._tokens) + self._token_start_index()

    def vocab_size(self) -> int:
        logging.warning("vocab_size is deprecated, please use vocabulary_size.")
        return self.vocabulary_size()

    def get_vocabulary(self, include_special_tokens=True) -> list:
        """The token of each index (special tokens first unless excluded)."""
        start = self._token_start_index()
        vocab = [self.oov_token] * start + [self._public(t) for t in self._tokens]
        if self.mask_token is not None and self.output_mode == _cat.INT:
            vocab[0] = self.mask_token
        return vocab if include_special_tokens else vocab[start:]

    def _set_tokens(self, tokens) -> None:
        self._tokens = self._as_tokens(tokens)
        self._order = np.argsort(self._tokens, kind="stable")
        self._record_vocabulary_size()

    def _record_vocabulary_size(self) -> None:
        self._ensure_vocab_size_unchanged()
        self._frozen_vocab_size = self.vocabulary_size()

    def _ensure_vocab_size_unchanged(self) -> None:
        if self.output_mode == _cat.INT or self.pad_to_max_tokens:
            return
        new = self.vocabulary_size()
        if self._frozen_vocab_size is not None and new != self._frozen_vocab_size:
            raise RuntimeError(f"When using `output_mode={self.output_mode}` and "
                               "`pad_to_max_tokens=False`, the vocabulary size cannot be "
                               "changed after the layer is called. Old vocab size is "
                               f"{self._frozen_vocab_size}, new vocab size is {new}")

    def set_vocabulary(self, vocabulary, idf_weights=None) -> None:
        """Set the vocabulary (a list, array or Tensor of tokens, or a file of one token a
        line), optionally starting with the special tokens, and for "tf_idf" its weights."""
        if self.output_mode == _cat.TF_IDF:
            if idf_weights is None:
                raise ValueError("`idf_weights` must be set if output_mode is TF_IDF")
        elif idf_weights is not None:
            raise ValueError("`idf_weights` should only be set if output_mode is `'tf_idf'`. "
                             f"Received: output_mode={self.output_mode} and "
                             f"idf_weights={idf_weights}")
        if isinstance(vocabulary, (str, os.PathLike)):
            if not os.path.exists(vocabulary):
                raise ValueError(f"Vocabulary file {vocabulary} does not exist.")
            if self.output_mode == _cat.TF_IDF:
                raise ValueError("output_mode `'tf_idf'` does not support loading a "
                                 "vocabulary from file.")
            with open(vocabulary) as f:
                lines = [line for line in f.read().split("\n") if line.strip()]
            self._check_and_set(self._as_tokens(lines), None)
            return
        self._check_and_set(self._as_tokens(_cat.host(vocabulary)), idf_weights)

    def _check_and_set(self, vocabulary: np.ndarray, idf_weights) -> None:
        if vocabulary.size == 0:
            raise ValueError(f"Cannot set an empty vocabulary, you passed {vocabulary}.")
        oov_start, token_start = self._oov_start_index(), self._token_start_index()
        special = [self.mask_token] * oov_start + [self.oov_token] * self.num_oov_indices
        found_special = np.array_equal(special, vocabulary[:token_start])
        tokens = vocabulary[token_start:] if found_special else vocabulary
        repeated = [t for t, c in collections.Counter(tokens.tolist()).items() if c > 1]
        if repeated:
            raise ValueError("The passed vocabulary has at least one repeated term. Please "
                             f"uniquify your dataset. The repeated terms are {repeated}")
        if self.mask_token is not None and self.mask_token in tokens:
            index = np.argwhere(vocabulary == self.mask_token)[-1]
            raise ValueError("Found reserved mask token at unexpected location in "
                             "`vocabulary`. Note that passed `vocabulary` does not need to "
                             "include the OOV and mask tokens. Either remove all mask and OOV "
                             "tokens, or include them only at the start of the vocabulary in "
                             f"precisely this order: {special}. Received: "
                             f"mask_token={self.mask_token} at vocabulary index {index}")
        if self.oov_token is not None and self.invert and self.oov_token in tokens:
            index = np.argwhere(vocabulary == self.oov_token)[-1]
            raise ValueError("Found reserved OOV token at unexpected location in `vocabulary`. "
                             "Note that passed `vocabulary` does not need to include the OOV "
                             "and mask tokens. Either remove all mask and OOV tokens, or "
                             "include them only at the start of the vocabulary in precisely "
                             f"this order: {special}. Received: oov_token={self.oov_token} at "
                             f"vocabulary index {index}")
        size = token_start + len(tokens)
        if self.max_tokens is not None and size > self.max_tokens:
            raise ValueError("Attempted to set a vocabulary larger than the maximum vocab size. "
                             f"Passed vocab size is {size}, max vocab size is "
                             f"{self.max_tokens}.")
        self._set_tokens(tokens)
        if self.output_mode == _cat.TF_IDF and idf_weights is not None:
            weights = _cat.host(idf_weights)
            if len(vocabulary) != len(weights):
                raise ValueError("`idf_weights` must be the same length as vocabulary. "
                                 f"len(idf_weights) is {len(weights)}, len(vocabulary) is "
                                 f"{len(vocabulary)}")
            if weights.ndim != 1:
                raise ValueError("TF-IDF data must be a 1-index array, but received "
                                 f"{type(idf_weights)}")
            front, front_value = (0, 0) if found_special else (token_start,
                                                               np.average(weights))
            back = (self.max_tokens - front - len(weights)
                    if self.pad_to_max_tokens and self.max_tokens is not None else 0)
            self.idf_weights = np.pad(weights, (front, back), "constant",
                                      constant_values=(front_value, 0)).astype(
                                          self.compute_dtype)

    # ---- adapt -------------------------------------------------------------------------------
    def update_state(self, data) -> None:
        """Count a batch's tokens (and, for "tf_idf", the documents holding each).

        Raises:
          ValueError: a vocabulary was set.
        """
        if self._has_input_vocabulary:
            raise ValueError(f"Cannot adapt {type(self).__name__} layer after setting a static "
                             "vocabulary via init argument or `set_vocabulary`.")
        data = self._input_tokens(data)
        if data.ndim < 2:
            data = data.reshape(1, -1)
        self._token_counts.update(data.reshape(-1).tolist())
        if self.output_mode == _cat.TF_IDF:
            for row in data.reshape(data.shape[0], -1):
                self._document_counts.update(set(row.tolist()))
            self._num_documents += data.shape[0]

    def finalize_state(self) -> None:
        if self._has_input_vocabulary or not self._token_counts:
            self._record_vocabulary_size()
            return
        counts = dict(self._token_counts)
        counts.pop(self.mask_token, None)
        counts.pop(self.oov_token, None)
        tokens = self._as_tokens(list(counts))
        freq = np.array(list(counts.values()), np.int64)
        order = np.lexsort((tokens, freq))[::-1]
        if self.max_tokens:
            order = order[:self.max_tokens - self._token_start_index()]
        tokens = tokens[order]
        self._set_tokens(tokens)
        if self.output_mode == _cat.TF_IDF:
            docs = np.array([self._document_counts[t] for t in tokens.tolist()], np.float64)
            idf = np.log(1 + self._num_documents / (1 + docs)).astype(self.compute_dtype)
            idf = np.pad(idf, (self._token_start_index(), 0), constant_values=np.mean(idf))
            if self.pad_to_max_tokens and self.max_tokens is not None:
                idf = np.pad(idf, (0, self.max_tokens - idf.size))
            self.idf_weights = idf.astype(self.compute_dtype)
        self.reset_state()

    def reset_state(self) -> None:
        if self._has_input_vocabulary:
            return
        self._token_counts.clear()
        self._document_counts.clear()
        self._num_documents = 0

    # ---- lookup ------------------------------------------------------------------------------
    def _lookup(self, values: np.ndarray) -> np.ndarray:
        flat = values.reshape(-1)
        if self.invert:
            at = flat - self._token_start_index()
            known = (at >= 0) & (at < len(self._tokens))
            out = np.full(flat.shape, -1 if self.oov_token is None else self.oov_token,
                          self._tokens.dtype)
            out[known] = self._tokens[at[known]]
            if self.mask_token is not None:
                out = np.where(flat == 0, self.mask_token, out)
            return out.reshape(values.shape)
        default = self._oov_start_index() if self.num_oov_indices == 1 else -1
        out = np.full(flat.shape, default, np.int64)
        if len(self._tokens):
            ordered = self._tokens[self._order]
            pos = np.clip(np.searchsorted(ordered, flat), 0, len(ordered) - 1)
            found = ordered[pos] == flat
            out[found] = self._order[pos[found]] + self._token_start_index()
        if self.mask_token is not None:
            mask_value = 0 if self.output_mode == _cat.INT else np.iinfo(np.int64).max
            out = np.where(flat == self.mask_token, mask_value, out)
        if self.num_oov_indices == 0:
            oov = flat[out == -1]
            if oov.size:
                raise InvalidArgumentError("When `num_oov_indices=0` all inputs should be in "
                                           f"vocabulary, found OOV values {oov}, consider "
                                           "setting `num_oov_indices=1`.")
        elif self.num_oov_indices > 1:
            out = np.where(out == -1, self._hash_oov(flat) + self._oov_start_index(), out)
        return out.reshape(values.shape)

    def call(self, inputs):
        return on_values(self._call, inputs)

    def _call(self, inputs):
        if self.output_mode != _cat.INT and not self.pad_to_max_tokens:
            if self._frozen_vocab_size is None:
                raise RuntimeError(f"When using `output_mode={self.output_mode}` and "
                                   "`pad_to_max_tokens=False`, you must set the layer's "
                                   "vocabulary before calling it. Either pass a `vocabulary` "
                                   "argument to the layer, or call `adapt` with some sample "
                                   "data.")
        values = self._call_tokens(inputs)
        lookups = self._lookup(values)
        if self.output_mode == _cat.INT:
            dtype = self.vocabulary_dtype if self.invert else self.compute_dtype
            return convert_to_tensor(lookups.astype(np.dtype(dtype)))
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        idf = self.idf_weights if self.output_mode == _cat.TF_IDF else None
        return _cat.encode_categorical_inputs(lookups, self.output_mode, depth,
                                              dtype=self.compute_dtype, sparse=self.sparse,
                                              idf_weights=idf)

    def compute_output_shape(self, input_shape):
        if self.output_mode == _cat.INT:
            return input_shape
        depth = self.max_tokens if self.pad_to_max_tokens else self._frozen_vocab_size
        return TensorShape([as_shape(input_shape).as_list()[0], depth])

    def compute_output_signature(self, input_signature):
        dtype = self.vocabulary_dtype if self.invert else self.compute_dtype
        return TensorSpec(self.compute_output_shape(input_signature.shape), dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        vocabulary = self.input_vocabulary
        if not isinstance(vocabulary, (type(None), str, list)):
            vocabulary = _cat.host(vocabulary).tolist()
        idf = self.input_idf_weights
        if idf is not None and not isinstance(idf, list):
            idf = _cat.host(idf).tolist()
        config.update(invert=self.invert, max_tokens=self.max_tokens,
                      num_oov_indices=self.num_oov_indices, oov_token=self.oov_token,
                      mask_token=self.mask_token, output_mode=self.output_mode,
                      sparse=self.sparse, pad_to_max_tokens=self.pad_to_max_tokens,
                      vocabulary_dtype=self.vocabulary_dtype, idf_weights=idf,
                      vocabulary=vocabulary, vocabulary_size=self._frozen_vocab_size)
        return config
