"""``TextVectorization``: strings standardized (lower case, punctuation stripped), split into
tokens (whitespace or characters), optionally into n-grams, then looked up in a
``StringLookup`` vocabulary (given or learnt by ``adapt``) and emitted as padded index
sequences or per-sample multi-hot/count/TF-IDF vectors, as tf-keras does. Host only."""

from __future__ import annotations

import numpy as np

from .... import strings as _strings
from ....core.convert import convert_to_tensor
from ....core.spec import TensorShape, TensorSpec, as_shape
from ....core.strings import string_array
from ....core.tensor import Tensor
from ....ragged import RaggedTensor
from ... import backend
from . import categorical as _cat
from .base import PreprocessingLayer, adapt_batches, on_values
from .string_lookup import StringLookup

__all__ = ["TextVectorization"]

LOWER_AND_STRIP_PUNCTUATION = "lower_and_strip_punctuation"
STRIP_PUNCTUATION = "strip_punctuation"
LOWER = "lower"
WHITESPACE = "whitespace"
CHARACTER = "character"
DEFAULT_STRIP_REGEX = r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']'
_MODES = (_cat.INT, _cat.MULTI_HOT, _cat.COUNT, _cat.TF_IDF)


class TextVectorization(PreprocessingLayer):
    """Text to token indices or token-count vectors.

    Raises:
      ValueError: a non-string ``dtype``; an unknown ``standardize``, ``split`` or
        ``output_mode``; ``output_sequence_length`` or ``ragged`` outside "int";
        ``output_sequence_length`` with ``ragged``; ``ngrams`` neither None, an int nor a
        tuple of ints; inputs of rank > 1 whose last dimension is not 1 when splitting.
    """

    def __init__(self, max_tokens=None, standardize=LOWER_AND_STRIP_PUNCTUATION,
                 split=WHITESPACE, ngrams=None, output_mode=_cat.INT,
                 output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", **kwargs):
        if kwargs.get("dtype") not in (None, "string", object, np.dtype(object)):
            raise ValueError("`TextVectorization` may only have a dtype of string. Received "
                             f"dtype: {kwargs['dtype']}.")
        kwargs.pop("dtype", None)
        kwargs.pop("vocabulary_size", None)
        has_vocabulary = kwargs.pop("has_input_vocabulary", vocabulary is not None)
        if output_mode == "binary":
            output_mode = _cat.MULTI_HOT
        if output_mode == "tf-idf":
            output_mode = _cat.TF_IDF
        if not (callable(standardize) or standardize in (
                None, LOWER_AND_STRIP_PUNCTUATION, LOWER, STRIP_PUNCTUATION)):
            raise ValueError("Unkown value for `standardize` argument of layer "
                             "TextVectorization. Allowed values are: None, "
                             f"'{LOWER_AND_STRIP_PUNCTUATION}', '{LOWER}', "
                             f"'{STRIP_PUNCTUATION}' or a callable. Received: {standardize}")
        if not (callable(split) or split in (None, WHITESPACE, CHARACTER)):
            raise ValueError("Unkown value for `split` argument of layer TextVectorization. "
                             f"Allowed values are: None, '{WHITESPACE}', '{CHARACTER}' or a "
                             f"callable. Received: {split}")
        _cat.validate_string_arg(output_mode, _MODES, "TextVectorization", "output_mode")
        if not (ngrams is None or (isinstance(ngrams, int) and ngrams > 0)
                or (isinstance(ngrams, (tuple, list))
                    and all(isinstance(n, int) and n > 0 for n in ngrams))):
            raise ValueError("`ngrams` must be None, an integer, or a tuple of integers. "
                             f"Received: ngrams={ngrams}")
        if output_mode == _cat.INT and not (output_sequence_length is None or (
                isinstance(output_sequence_length, int) and output_sequence_length > 0)):
            raise ValueError("`output_sequence_length` must be either None or an integer when "
                             f"`output_mode` is 'int'. Received: "
                             f"output_sequence_length={output_sequence_length}")
        if output_mode != _cat.INT and output_sequence_length is not None:
            raise ValueError("`output_sequence_length` must not be set if `output_mode` is not "
                             f"'int'. Received output_sequence_length={output_sequence_length}.")
        if ragged and output_mode != _cat.INT:
            raise ValueError("`ragged` must not be true if `output_mode` is "
                             f"`'{output_mode}'`. Received: ragged={ragged} and "
                             f"output_mode={output_mode}")
        if ragged and output_sequence_length is not None:
            raise ValueError("`output_sequence_length` must not be set if ragged is True. "
                             f"Received: ragged={ragged} and "
                             f"output_sequence_length={output_sequence_length}")
        kwargs["dtype"] = "int64" if output_mode == _cat.INT else backend.floatx()
        super().__init__(**kwargs)
        self._standardize = standardize
        self._split = split
        self._ngrams_arg = ngrams
        self._ngrams = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else (
            None if ngrams is None else tuple(ngrams))
        self._output_mode = output_mode
        self._output_sequence_length = output_sequence_length
        self._ragged = ragged
        self._encoding = encoding
        self._lookup_layer = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, mask_token="", output_mode=output_mode,
            sparse=sparse, has_input_vocabulary=has_vocabulary, encoding=encoding)

    # ---- vocabulary --------------------------------------------------------------------------
    def vocabulary_size(self) -> int:
        return self._lookup_layer.vocabulary_size()

    def get_vocabulary(self, include_special_tokens=True) -> list:
        return self._lookup_layer.get_vocabulary(include_special_tokens)

    def set_vocabulary(self, vocabulary, idf_weights=None) -> None:
        self._lookup_layer.set_vocabulary(vocabulary, idf_weights=idf_weights)

    # ---- tokens ------------------------------------------------------------------------------
    def _preprocess(self, inputs) -> list | np.ndarray:
        """Standardized strings, then (when splitting) a list of token arrays per row."""
        x = convert_to_tensor(inputs if isinstance(inputs, Tensor) else string_array(
            np.asarray(inputs) if not isinstance(inputs, (str, bytes)) else inputs))
        if x.dtype != object:
            raise ValueError(f"TextVectorization: inputs must be strings, got {x.dtype}")
        if self._standardize in (LOWER, LOWER_AND_STRIP_PUNCTUATION):
            x = _strings.lower(x)
        if self._standardize in (STRIP_PUNCTUATION, LOWER_AND_STRIP_PUNCTUATION):
            x = _strings.regex_replace(x, DEFAULT_STRIP_REGEX, "")
        if callable(self._standardize):
            x = convert_to_tensor(self._standardize(x))
        if self._split is None:
            a = np.asarray(x.numpy(), object)
            if self._ngrams is None:
                return a  # looked up elementwise (or encoded by the lookup layer)
            if a.ndim == 0:
                a = a.reshape(1, 1)
            rows = list(a.reshape(a.shape[0], -1))
        else:
            if x.ndim > 1:
                if x.shape[-1] != 1:
                    raise ValueError("When using `TextVectorization` to tokenize strings, the "
                                     "input rank must be 1 or the last shape dimension must be "
                                     f"1. Received: inputs.shape={tuple(x.shape)} with "
                                     f"rank={x.ndim}")
                x = convert_to_tensor(x.numpy().reshape(x.shape[:-1]))
            if self._split == WHITESPACE:
                split = _strings.split(x)
            elif self._split == CHARACTER:
                split = _strings.unicode_split(x, "UTF-8")
            else:
                split = self._split(x)
            if isinstance(split, RaggedTensor):
                rows = [np.asarray(r, object) for r in split.numpy()]
            else:
                a = np.asarray(convert_to_tensor(split).numpy(), object)
                rows = [a] if a.ndim == 1 and x.ndim == 0 else list(a)
        if self._ngrams is not None:
            rows = [_ngrams(r, self._ngrams) for r in rows]
        return rows

    # ---- adapt -------------------------------------------------------------------------------
    def update_state(self, data) -> None:
        lookup = self._lookup_layer
        if lookup._has_input_vocabulary:
            raise ValueError("Cannot adapt StringLookup layer after setting a static "
                             "vocabulary via init argument or `set_vocabulary`.")
        rows = self._preprocess(data)
        for row in rows:
            lookup._token_counts.update(np.asarray(row, object).reshape(-1).tolist())
        if lookup.output_mode == _cat.TF_IDF:
            for row in rows:
                lookup._document_counts.update(set(np.asarray(row, object).reshape(-1).tolist()))
            lookup._num_documents += len(rows)

    def finalize_state(self) -> None:
        self._lookup_layer.finalize_state()

    def reset_state(self) -> None:
        self._lookup_layer.reset_state()

    def adapt(self, data, batch_size=None, steps=None) -> None:
        self.reset_state()
        for batch in adapt_batches(data, batch_size, steps):
            self.update_state(batch)
        self.finalize_state()
        self._is_adapted = True

    # ---- call --------------------------------------------------------------------------------
    def call(self, inputs):
        return on_values(self._call, inputs)

    def _call(self, inputs):
        rows = self._preprocess(inputs)
        lookup = self._lookup_layer
        if isinstance(rows, np.ndarray):  # no split: an elementwise lookup
            if self._output_mode != _cat.INT:
                return lookup._call(convert_to_tensor(rows))
            return convert_to_tensor(lookup._lookup(rows).astype(np.dtype(self.compute_dtype)))
        lengths = np.array([np.size(r) for r in rows], np.int64)
        flat = (np.concatenate([np.asarray(r, object).reshape(-1) for r in rows]) if rows
                else np.zeros(0, object))  # bytes already: split/ngrams made them
        if flat.size:
            indices = lookup._lookup(flat)
        else:
            indices = np.zeros(0, np.int64)
        if self._output_mode == _cat.INT:
            splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            if self._ragged:
                return RaggedTensor(convert_to_tensor(indices), convert_to_tensor(splits))
            width = (self._output_sequence_length if self._output_sequence_length is not None
                     else int(lengths.max(initial=0)))
            out = np.zeros((len(rows), width), np.int64)
            for i in range(len(rows)):
                row = indices[splits[i]:splits[i + 1]][:width]
                out[i, :row.size] = row
            return convert_to_tensor(out.astype(np.dtype(self.compute_dtype)))
        if not lookup.pad_to_max_tokens and lookup._frozen_vocab_size is None:
            raise RuntimeError(f"When using `output_mode={self._output_mode}` and "
                               "`pad_to_max_tokens=False`, you must set the layer's vocabulary "
                               "before calling it. Either pass a `vocabulary` argument to the "
                               "layer, or call `adapt` with some sample data.")
        depth = lookup.max_tokens if lookup.pad_to_max_tokens else lookup._frozen_vocab_size
        out = np.zeros((len(rows), depth), np.float64)
        row_of = np.repeat(np.arange(len(rows)), lengths)
        keep = (indices >= 0) & (indices < depth)
        np.add.at(out, (row_of[keep], indices[keep]), 1.0)
        if self._output_mode == _cat.MULTI_HOT:
            out = (out > 0).astype(np.float64)
        elif self._output_mode == _cat.TF_IDF:
            out = out * np.asarray(lookup.idf_weights, np.float64)[:depth]
        out = out.astype(np.dtype(self.compute_dtype))
        if lookup.sparse:
            from ....io.sparse import SparseTensor

            nz = np.nonzero(out)
            return SparseTensor(np.stack(nz, axis=1).astype(np.int64),
                                convert_to_tensor(out[nz]), out.shape)
        return convert_to_tensor(out)

    def compute_output_shape(self, input_shape):
        batch = as_shape(input_shape).as_list()[0] if as_shape(input_shape).rank else None
        if self._output_mode == _cat.INT:
            return TensorShape([batch, self._output_sequence_length])
        lookup = self._lookup_layer
        depth = lookup.max_tokens if lookup.pad_to_max_tokens else lookup._frozen_vocab_size
        return TensorShape([batch, depth])

    def compute_output_signature(self, input_spec):
        return TensorSpec(self.compute_output_shape(input_spec.shape), self.compute_dtype)

    def get_config(self) -> dict:
        lookup = self._lookup_layer.get_config()
        config = super().get_config()
        config["dtype"] = "string"  # the input's, as tf-keras writes it
        config.update(max_tokens=lookup["max_tokens"], standardize=self._standardize,
                      split=self._split, ngrams=self._ngrams_arg,
                      output_mode=self._output_mode,
                      output_sequence_length=self._output_sequence_length,
                      pad_to_max_tokens=lookup["pad_to_max_tokens"], sparse=lookup["sparse"],
                      ragged=self._ragged, vocabulary=lookup["vocabulary"],
                      idf_weights=lookup["idf_weights"], encoding=self._encoding,
                      vocabulary_size=self.vocabulary_size())
        return config


def _ngrams(tokens, widths) -> np.ndarray:
    """``tf.strings.ngrams(tokens, widths, separator=" ")`` of one row: every n-gram of each
    width in turn."""
    tokens = list(np.asarray(tokens, object).reshape(-1))
    out = []
    for n in widths:
        out.extend(b" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    arr = np.empty(len(out), object)
    arr[:] = out
    return arr
