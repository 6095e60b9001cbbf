"""``tf.io.parse_single_example`` / ``parse_example`` and the feature configurations
``FixedLenFeature``, ``VarLenFeature``, ``FixedLenSequenceFeature``.

Results are host Tensors: float32, int64, or strings (object arrays of bytes); a
``VarLenFeature`` gives a ``SparseTensor``. Errors are TF's ``InvalidArgumentError`` with TF's
wording (missing required feature, wrong value count, wrong data type).
"""

from __future__ import annotations

import collections

import numpy as np

from .. import errors
from ..core.spec import spec_dtype, string
from ..core.tensor import Tensor, wrap
from .example import DecodeError, decode_example
from .sparse import SparseTensor

__all__ = ["FixedLenFeature", "FixedLenSequenceFeature", "VarLenFeature", "decode_raw",
           "parse_example", "parse_single_example"]

_KIND_OF = {np.dtype(np.float32): "float_list", np.dtype(np.int64): "int64_list",
            string: "bytes_list"}
_TYPE_NAME = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}


def _feature_dtype(dtype) -> np.dtype:
    d = spec_dtype(dtype)
    if d not in _KIND_OF:
        raise ValueError(f"Unsupported dtype {d.name if d != string else 'string'}: a feature's "
                         "dtype must be float32, int64 or string")
    return d


class FixedLenFeature(collections.namedtuple(
        "FixedLenFeature", ["shape", "dtype", "default_value"])):
    """A feature with a fixed number of values, parsed into a dense Tensor of ``shape``."""

    def __new__(cls, shape, dtype, default_value=None):
        shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else list(shape))]
        return super().__new__(cls, shape, _feature_dtype(dtype), default_value)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature with any number of values, parsed into a SparseTensor."""

    def __new__(cls, dtype):
        return super().__new__(cls, _feature_dtype(dtype))


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """A feature holding a sequence of items of ``shape``, parsed into [n, *shape]."""

    def __new__(cls, shape, dtype, allow_missing=False, default_value=None):
        shape = [int(d) for d in shape]
        return super().__new__(cls, shape, _feature_dtype(dtype), allow_missing, default_value)


def _serialized_items(serialized) -> tuple[list, tuple]:
    """The serialized protos as a flat list of bytes, and the batch shape."""
    value = serialized._value if isinstance(serialized, Tensor) else serialized
    if isinstance(value, (bytes, bytearray, str)):
        value = np.array(value if not isinstance(value, str) else value.encode(), dtype=object)
    a = np.asarray(value, dtype=object)
    if hasattr(value, "get") and not isinstance(value, np.ndarray):
        a = np.asarray(value.get(), dtype=object)  # syncs device
    items = [v.encode() if isinstance(v, str) else bytes(v) for v in a.reshape(-1)]
    return items, a.shape


def _as_values(value, dtype: np.dtype) -> np.ndarray:
    if dtype == string:
        a = np.asarray(value, dtype=object)
        return np.vectorize(lambda v: v.encode() if isinstance(v, str) else bytes(v),
                            otypes=[object])(a) if a.size else a
    return np.asarray(value._value if isinstance(value, Tensor) else value, dtype=dtype)


def _values(decoded: dict, key: str, dtype: np.dtype):
    """The values of feature ``key`` (None when absent), checked against ``dtype``."""
    kind, values = decoded.get(key, (None, None))
    if kind is None:
        return None
    want = _KIND_OF[dtype]
    if kind != want:
        raise errors.InvalidArgumentError(
            f"Key: {key}.  Data types don't match. Data type: {_TYPE_NAME[kind]} but expected "
            f"type: {_TYPE_NAME[want]}")
    if dtype == string:
        a = np.empty(len(values), dtype=object)
        a[:] = values
        return a
    return values


def _required(key: str, dtype: np.dtype) -> errors.InvalidArgumentError:
    name = {"float_list": "float", "int64_list": "int64", "bytes_list": "string"}[
        _KIND_OF[dtype]]
    return errors.InvalidArgumentError(f"Feature: {key} (data type: {name}) is required but "
                                       "could not be found.")


def _fixed(decoded, key, feature: FixedLenFeature) -> np.ndarray:
    values = _values(decoded, key, feature.dtype)
    n = int(np.prod(feature.shape, dtype=np.int64))
    if values is None:
        if feature.default_value is None:
            raise _required(key, feature.dtype)
        default = _as_values(feature.default_value, feature.dtype)
        if default.size == 1 and n != 1:
            default = np.full(n, default.reshape(()).item(), dtype=feature.dtype)
        return default.reshape(feature.shape)
    if len(values) != n:
        raise errors.InvalidArgumentError(f"Key: {key}.  Can't parse serialized Example.")
    return values.reshape(feature.shape)


def _sequence(decoded, key, feature: FixedLenSequenceFeature) -> np.ndarray:
    values = _values(decoded, key, feature.dtype)
    if values is None:
        if not feature.allow_missing:
            raise _required(key, feature.dtype)
        return np.empty([0, *feature.shape], dtype=object if feature.dtype == string
                        else feature.dtype)
    n = int(np.prod(feature.shape, dtype=np.int64))
    if n == 0 or len(values) % n:
        raise errors.InvalidArgumentError(f"Key: {key}.  Can't parse serialized Example.")
    return values.reshape([-1, *feature.shape])


def _varlen(decoded, key, feature: VarLenFeature) -> np.ndarray:
    values = _values(decoded, key, feature.dtype)
    if values is None:
        return np.zeros(0, feature.dtype) if feature.dtype != string else np.empty(0, object)
    return values


def _decode(item: bytes, name) -> dict:
    try:
        return decode_example(item)
    except (DecodeError, UnicodeDecodeError):
        raise errors.InvalidArgumentError(
            f"Could not parse example input, value: '{item[:64]!r}'") from None


def _check_features(features) -> None:
    if not isinstance(features, dict) or not features:
        raise ValueError("Invalid `features`: must be a non-empty dict of feature "
                         "configurations")
    for key, f in features.items():
        if not isinstance(f, (FixedLenFeature, VarLenFeature, FixedLenSequenceFeature)):
            raise ValueError(f"Unsupported feature type for {key!r}: {type(f).__name__}")
        if isinstance(f, FixedLenSequenceFeature) and not f.allow_missing:
            raise ValueError("Unsupported: FixedLenSequenceFeature requires allow_missing to "
                             "be True.")


def parse_single_example(serialized, features, name=None, example_names=None) -> dict:
    """Parses one serialized ``tf.train.Example`` into ``{key: Tensor or SparseTensor}``."""
    _check_features(features)
    items, shape = _serialized_items(serialized)
    if shape != ():
        raise ValueError(f"parse_single_example: serialized must be a scalar string, got shape "
                         f"{list(shape)}")
    decoded = _decode(items[0], name)
    out = {}
    for key, f in features.items():
        if isinstance(f, FixedLenFeature):
            out[key] = wrap(_fixed(decoded, key, f))
        elif isinstance(f, FixedLenSequenceFeature):
            out[key] = wrap(_sequence(decoded, key, f))
        else:
            values = _varlen(decoded, key, f)
            out[key] = SparseTensor(np.arange(len(values), dtype=np.int64).reshape(-1, 1),
                                    wrap(values), [len(values)])
    return out


def parse_example(serialized, features, name=None, example_names=None) -> dict:
    """Parses a vector of serialized Examples: FixedLen features stack to [B, *shape],
    FixedLenSequence features pad to the longest (with default_value, else 0 / b""), VarLen
    features become SparseTensors of dense shape [B, longest]."""
    _check_features(features)
    items, shape = _serialized_items(serialized)
    if len(shape) != 1:
        raise ValueError(f"parse_example: serialized must be a vector of strings, got shape "
                         f"{list(shape)}")
    decoded = [_decode(item, name) for item in items]
    out = {}
    for key, f in features.items():
        if isinstance(f, FixedLenFeature):
            rows = [_fixed(d, key, f) for d in decoded]
            out[key] = wrap(np.stack(rows) if rows else np.zeros(
                [0, *f.shape], f.dtype if f.dtype != string else object))
        elif isinstance(f, FixedLenSequenceFeature):
            rows = [_sequence(d, key, f) for d in decoded]
            longest = max((len(r) for r in rows), default=0)
            pad = f.default_value
            if pad is None:
                pad = b"" if f.dtype == string else 0
            batch = np.empty([len(rows), longest, *f.shape],
                             dtype=object if f.dtype == string else f.dtype)
            batch[...] = pad
            for i, r in enumerate(rows):
                batch[i, :len(r)] = r
            out[key] = wrap(batch)
        else:
            rows = [_varlen(d, key, f) for d in decoded]
            indices = np.array([[i, j] for i, r in enumerate(rows) for j in range(len(r))],
                               dtype=np.int64).reshape(-1, 2)
            values = np.concatenate(rows) if rows else np.zeros(0, f.dtype)
            longest = max((len(r) for r in rows), default=0)
            out[key] = SparseTensor(indices, wrap(values), [len(rows), longest])
    return out


def decode_raw(input_bytes, out_type, little_endian=True, fixed_length=None, name=None):
    """``tf.io.decode_raw``: the bytes of each string reinterpreted as ``out_type`` numbers;
    a string of shape S gives S + [n] (all strings must have the same length)."""
    items, shape = _serialized_items(input_bytes)
    dtype = spec_dtype(out_type, "out_type")
    if dtype == string:
        raise TypeError("decode_raw: out_type must be a numeric dtype, got string")
    dtype = dtype.newbyteorder("<" if little_endian else ">")
    if fixed_length is not None:
        items = [i[:fixed_length].ljust(fixed_length, b"\0") for i in items]
    sizes = {len(i) for i in items}
    if len(sizes) > 1:
        raise errors.InvalidArgumentError("DecodeRaw requires input strings to all be the same "
                                          f"size, but element 0 has size {len(items[0])} != "
                                          f"{sorted(sizes - {len(items[0])})[0]}")
    size = sizes.pop() if sizes else 0
    if size % dtype.itemsize:
        raise errors.InvalidArgumentError(f"Input to DecodeRaw has length {size} that is not a "
                                          f"multiple of {dtype.itemsize}, the size of "
                                          f"{dtype.name}")
    n = size // dtype.itemsize
    flat = np.frombuffer(b"".join(items), dtype=dtype).astype(dtype.newbyteorder("="))
    return wrap(flat.reshape([*shape, n]))
