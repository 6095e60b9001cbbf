"""``tf.strings``: elementwise string ops on host object arrays of ``bytes``, with TF's
results and errors. Strings never reach a device; inside an IPU program these ops raise as
Graphcore's XLA compiler does. No gradients (TF defines none)."""

from __future__ import annotations

import functools
import re

import numpy as np

from .core import dtypes
from .core.convert import convert_to_tensor
from .core.registry import _has_symbolic, symbolic_call
from .core.strings import check_host, string_array
from .core.tensor import Tensor, wrap
from .errors import InvalidArgumentError, OutOfRangeError
from .fingerprint import fingerprint64, siphash24
from .ragged import RaggedTensor

__all__ = ["as_string", "format", "join", "length", "lower", "ngrams", "reduce_join",
           "regex_full_match", "regex_replace", "split", "strip", "substr", "to_hash_bucket_fast",
           "to_hash_bucket_strong", "to_number", "unicode_split", "upper"]

_UNITS = ("BYTE", "UTF8_CHAR")


def _host_op(tf_name, graph=True):
    """A TF1 graph records the call as a node (``graph``: the op's outputs are Tensors, else
    a TypeError); in an IPU program it is refused."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not graph and _has_symbolic(list(args) + list(kwargs.values())):
                raise TypeError(f"tf.strings.{fn.__name__}: a RaggedTensor result cannot be a "
                                f"node of a TF1 graph here; split the strings before feeding "
                                f"them, or use the shape-keeping tf.strings ops")
            node = symbolic_call(wrapper, args, kwargs)
            if node is not NotImplemented:
                return node
            check_host(tf_name)
            return fn(*args, **kwargs)
        return wrapper
    return deco


def _strings(x, op: str, arg: str = "input") -> np.ndarray:
    if isinstance(x, Tensor):
        a = x._value
        if a.dtype is not dtypes.string:
            raise TypeError(f"{op}: {arg} must be a string tensor, got {a.dtype.name}")
        return a
    try:
        return string_array(x, op, arg)
    except ValueError:
        raise TypeError(f"{op}: {arg}: Cannot convert {x!r:.60} to EagerTensor of dtype "
                        f"string") from None


def _map(fn, a: np.ndarray, otype=object) -> np.ndarray:
    out = np.empty(a.shape, otype)
    flat = out.reshape(-1)
    for i, v in enumerate(a.reshape(-1)):
        flat[i] = fn(v)
    return out


def _unit(unit, op):
    if unit not in _UNITS:
        raise ValueError(f"{op}: unit must be one of {list(_UNITS)}, got {unit!r}")
    return unit


@_host_op("StringLength")
def length(input, unit="BYTE", name=None):  # noqa: A002 - TF's name
    """The length of each string (int32), in bytes or (``UTF8_CHAR``) in code points."""
    a = _strings(input, "length")
    if _unit(unit, "length") == "BYTE":
        return wrap(_map(len, a, np.int32))
    return wrap(_map(lambda v: len(v.decode("utf-8", "replace")), a, np.int32))


def _case(fn_ascii, fn_utf8, tf_name, public):
    def op(input, encoding="", name=None):  # noqa: A002
        a = _strings(input, tf_name)
        if encoding == "":
            return wrap(_map(fn_ascii, a))  # ASCII letters only, as TF without an encoding
        if encoding.lower().replace("-", "") != "utf8":
            raise InvalidArgumentError(None, None, f"encoding must be one of '', 'utf-8', got "
                                       f"'{encoding}'")
        return wrap(_map(lambda v: fn_utf8(v.decode("utf-8", "replace")).encode("utf-8"), a))
    op.__name__ = op.__qualname__ = public  # a SavedModel finds it again by name
    return _host_op(tf_name)(op)


lower = _case(bytes.lower, str.lower, "StringLower", "lower")
lower.__doc__ = "Each string in lower case (ASCII letters; all with ``encoding='utf-8'``)."
upper = _case(bytes.upper, str.upper, "StringUpper", "upper")
upper.__doc__ = "Each string in upper case (ASCII letters; all with ``encoding='utf-8'``)."


@_host_op("StringStrip")
def strip(input, name=None):  # noqa: A002
    """Each string without leading and trailing ASCII whitespace."""
    return wrap(_map(bytes.strip, _strings(input, "strip")))


@_host_op("StringJoin")
def join(inputs, separator="", name=None):
    """The elementwise join of the tensors ``inputs`` (broadcast) with ``separator``."""
    arrays = [_strings(x, "join", f"inputs[{i}]") for i, x in enumerate(inputs)]
    sep = _to_bytes(separator)
    if not arrays:
        raise InvalidArgumentError(None, None, "Expected at least one input")
    try:
        parts = np.broadcast_arrays(*arrays)
    except ValueError:
        raise InvalidArgumentError(None, None, "Input shapes do not match: "
                                   + " vs. ".join(str(list(a.shape)) for a in arrays)) from None
    out = np.empty(parts[0].shape, object)
    flat = out.reshape(-1)
    cols = [p.reshape(-1) for p in parts]
    for i in range(flat.size):
        flat[i] = sep.join(c[i] for c in cols)
    return wrap(out)


def _to_bytes(s) -> bytes:
    if isinstance(s, Tensor):
        s = s.numpy()
    return s.encode("utf-8") if isinstance(s, str) else bytes(s)


@_host_op("ReduceJoin")
def reduce_join(inputs, axis=None, keepdims=False, separator="", name=None):
    """The strings joined along ``axis`` (all axes when None) with ``separator``."""
    a = _strings(inputs, "reduce_join", "inputs")
    sep = _to_bytes(separator)
    axes = tuple(range(a.ndim)) if axis is None else tuple(
        int(ax) for ax in np.atleast_1d(np.asarray(axis)))
    for ax in axes:
        if not -a.ndim <= ax < max(a.ndim, 1):
            raise OutOfRangeError(None, None, f"Invalid reduction dimension {ax} for input "
                                  f"with {a.ndim} dimension(s)")
    axes = tuple(sorted({ax % a.ndim for ax in axes})) if a.ndim else ()
    keep = [d for d in range(a.ndim) if d not in axes]
    moved = np.transpose(a, keep + list(axes))
    kept_shape = moved.shape[:len(keep)]
    rows = moved.reshape(int(np.prod(kept_shape, dtype=np.int64)), -1)
    out = np.empty(rows.shape[0], object)
    for i in range(out.size):
        out[i] = sep.join(rows[i])
    out = out.reshape(kept_shape)
    if keepdims:
        out = out.reshape([1 if d in axes else a.shape[d] for d in range(a.ndim)])
    return wrap(out)


@_host_op("StringSplit", graph=False)
def split(input, sep=None, maxsplit=-1, name=None):  # noqa: A002
    """Each string split at ``sep`` (None: runs of ASCII whitespace, empty pieces dropped);
    at most ``maxsplit`` splits when it is >= 0. A scalar gives a 1-D tensor, a vector a
    RaggedTensor of its rows, as TF2's ``tf.strings.split``."""
    a = _strings(input, "split")
    if a.ndim > 1:
        raise ValueError(f"split: input must be a scalar or a vector here (ragged rank 1), got "
                         f"rank {a.ndim}")
    s = None if sep is None else _to_bytes(sep)
    if s == b"":
        s = None
    n = -1 if maxsplit is None else int(maxsplit)
    pieces = [v.split(s, n) if s is not None else _split_whitespace(v, n)
              for v in a.reshape(-1)]
    if a.ndim == 0:
        return wrap(_object_vector(pieces[0]))
    splits = np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)
    values = _object_vector([x for p in pieces for x in p])
    return RaggedTensor(wrap(values), wrap(splits))


def _split_whitespace(v: bytes, maxsplit: int) -> list:
    """TF's whitespace split: tokens between runs of ASCII whitespace; after ``maxsplit``
    tokens the rest (leading whitespace dropped, possibly empty) is one more piece."""
    if maxsplit < 0:
        return v.split()
    if maxsplit == 0:
        return [v]
    out, rest = [], v.lstrip()
    while rest:
        token = rest.split(None, 1)[0]
        out.append(token)
        rest = rest[token.__len__():].lstrip()
        if out.__len__() == maxsplit:
            out.append(rest)
            break
    return out


def _object_vector(items) -> np.ndarray:
    out = np.empty(len(items), object)
    out[:] = items
    return out


@_host_op("Substr")
def substr(input, pos, len, unit="BYTE", name=None):  # noqa: A002
    """``len`` bytes (or UTF-8 characters) of each string from ``pos`` (negative: from the
    end); ``pos`` beyond a string is InvalidArgumentError, as TF."""
    a = _strings(input, "substr")
    utf8 = _unit(unit, "substr") == "UTF8_CHAR"
    p, n = np.broadcast_arrays(a, np.asarray(convert_to_tensor(pos)), np.asarray(
        convert_to_tensor(len)))[1:]
    out = np.empty(a.shape, object)
    flat, fp, fn = out.reshape(-1), p.reshape(-1), n.reshape(-1)
    for i, v in enumerate(a.reshape(-1)):
        text = v.decode("utf-8", "replace") if utf8 else v
        size = text.__len__()
        start = int(fp[i])
        if start < 0:
            start += size
        if not 0 <= start <= size:
            raise InvalidArgumentError(None, None, f"pos {int(fp[i])} out of range for string "
                                       f"{v!r} at index {i}")
        piece = text[start:start + max(int(fn[i]), 0)]
        flat[i] = piece.encode("utf-8") if utf8 else piece
    return wrap(out)


class _Regex:
    """A pattern matched as RE2 matches it: over UTF-8 characters (``.``, ``\\S`` take a
    whole character), ASCII classes (``\\s``, ``\\w``, ``\\d``); a string that is not
    UTF-8 is matched byte by byte."""

    def __init__(self, pattern, op):
        raw = _to_bytes(pattern)
        try:
            self.text = re.compile(raw.decode("utf-8"), re.ASCII)
            self.raw = re.compile(raw)
        except (re.error, UnicodeDecodeError) as e:
            raise InvalidArgumentError(None, None, f"Invalid pattern: "
                                       f"{raw.decode('utf-8', 'replace')}, error: {e} "
                                       f"[Op:{op}]") from None

    def fullmatch(self, v: bytes) -> bool:
        try:
            return self.text.fullmatch(v.decode("utf-8")) is not None
        except UnicodeDecodeError:
            return self.raw.fullmatch(v) is not None

    def sub(self, parts, v: bytes, count: int) -> bytes:
        try:
            text = v.decode("utf-8")
        except UnicodeDecodeError:
            return self.raw.sub(_expander(parts, b""), v, count=count)
        return self.text.sub(_expander(parts, ""), text, count=count).encode("utf-8")


def _rewrite(template: bytes) -> list:
    """RE2's rewrite string (``\\0`` the match, ``\\1``..``\\9`` groups, ``\\\\`` a
    backslash) as literal bytes and group numbers."""
    parts, i = [], 0
    while i < template.__len__():
        c = template[i:i + 1]
        if c == b"\\" and i + 1 < template.__len__():
            nxt = template[i + 1:i + 2]
            if nxt.isdigit():
                parts.append(int(nxt))
            elif nxt == b"\\":
                parts.append(b"\\")
            else:
                raise InvalidArgumentError(None, None, f"Invalid rewrite pattern: "
                                           f"{template.decode('utf-8', 'replace')}")
            i += 2
        else:
            parts.append(c)
            i += 1
    return parts


def _expander(parts, empty):
    if isinstance(empty, str):
        parts = [p.decode("utf-8", "replace") if isinstance(p, bytes) else p for p in parts]
    if all(not isinstance(p, int) for p in parts):
        literal = empty.join(parts)
        if "\\" not in str(literal):  # no escapes for re to read: the text as it is
            return literal

    def expand(m):
        return empty.join(p if not isinstance(p, int) else (m.group(p) or empty) for p in parts)
    return expand


@_host_op("RegexReplace")
def regex_replace(input, pattern, rewrite, replace_global=True, name=None):  # noqa: A002
    """Each string with the matches of ``pattern`` (RE2 syntax, matched by Python's ``re``
    for the common subset) replaced by ``rewrite`` (``\\0``-``\\9`` back-references)."""
    a = _strings(input, "regex_replace")
    rx = _Regex(pattern, "RegexReplace")
    parts = _rewrite(_to_bytes(rewrite))
    count = 0 if replace_global else 1
    return wrap(_map(lambda v: rx.sub(parts, v, count), a))


@_host_op("RegexFullMatch")
def regex_full_match(input, pattern, name=None):  # noqa: A002
    """Whether each whole string matches ``pattern`` (bool)."""
    a = _strings(input, "regex_full_match")
    rx = _Regex(pattern, "StaticRegexFullMatch")
    return wrap(_map(rx.fullmatch, a, bool))


_NUMBER_TYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def _parse(v: bytes, d):
    text = v.decode("ascii", "replace").strip()
    if "_" in text or not text:
        raise ValueError
    if d.kind == "i":
        value = int(text, 10)
        info = np.iinfo(d)
        if not info.min <= value <= info.max:
            raise ValueError
        return value
    if text.lstrip("+-")[:2].lower() == "0x":  # strtod reads hexadecimal
        return float.fromhex(text)
    return float(text)


@_host_op("StringToNumber")
def to_number(string_tensor, out_type=dtypes.float32, name=None):
    """Each string parsed as a number of ``out_type`` (float32, float64, int32, int64);
    InvalidArgumentError when one is not, as TF."""
    a = _strings(string_tensor, "to_number", "string_tensor")
    d = dtypes.as_dtype(out_type, "to_number: out_type")
    if d not in _NUMBER_TYPES:
        raise TypeError(f"to_number: out_type must be one of "
                        f"{[t.name for t in _NUMBER_TYPES]}, got {d.name}")
    out = np.empty(a.shape, d)
    flat = out.reshape(-1)
    for i, v in enumerate(a.reshape(-1)):
        try:
            with np.errstate(over="ignore"):
                flat[i] = _parse(v, d)
        except (ValueError, OverflowError):
            raise InvalidArgumentError(None, None, f"StringToNumberOp could not correctly "
                                       f"convert string: {v.decode('utf-8', 'replace')} "
                                       f"[Op:StringToNumber]") from None
    return wrap(out)


@_host_op("AsString")
def as_string(input, precision=-1, scientific=False, shortest=False, width=-1,  # noqa: A002
              fill="", name=None):
    """Each number as a string, printf-style as TF: floats ``%f`` (``%.<precision>f``,
    ``%e`` when ``scientific``, ``%g`` when ``shortest``), integers in decimal, bools
    ``true``/``false``; ``width`` pads with ``fill`` (one of '', ' ', '0', '-')."""
    a = np.asarray(convert_to_tensor(input).numpy())
    if a.dtype is dtypes.string:
        raise TypeError("as_string: input must be a number or bool tensor, got string")
    if scientific and shortest:
        raise InvalidArgumentError(None, None, "Cannot select both scientific and shortest "
                                   "notation")
    if fill not in ("", " ", "0", "-"):
        raise InvalidArgumentError(None, None, f"Fill argument not supported: \"{fill}\"")
    flags = fill + (str(width) if width > -1 else "")
    if a.dtype.kind == "b":
        spec = "%" + flags + "s"
        return wrap(_map(lambda v: (spec % ("true" if v else "false")).encode(), a))
    if a.dtype.kind in "iu":
        spec = "%" + flags + "d"
        return wrap(_map(lambda v: (spec % int(v)).encode(), a))
    if precision > -1:
        flags += f".{precision}"
    conv = "e" if scientific else ("g" if shortest else "f")
    spec = "%" + flags + conv
    return wrap(_map(lambda v: (spec % float(v)).encode(), a))


def _hash_input(input, num_buckets, op):  # noqa: A002
    a = _strings(input, op)
    n = int(num_buckets)
    if n < 1:
        raise InvalidArgumentError(None, None, f"{op}: num_buckets must be >= 1, got {n}")
    return a, n


@_host_op("StringToHashBucketFast")
def to_hash_bucket_fast(input, num_buckets, name=None):  # noqa: A002
    """FarmHash Fingerprint64 of each string modulo ``num_buckets`` (int64), as TF."""
    a, n = _hash_input(input, num_buckets, "to_hash_bucket_fast")
    return wrap(_map(lambda v: fingerprint64(v) % n, a, np.int64))


@_host_op("StringToHashBucketStrong")
def to_hash_bucket_strong(input, num_buckets, key, name=None):  # noqa: A002
    """SipHash-2-4 of each string under ``key`` (two ints) modulo ``num_buckets``."""
    a, n = _hash_input(input, num_buckets, "to_hash_bucket_strong")
    key = [int(k) for k in key]
    if key.__len__() != 2:
        raise InvalidArgumentError(None, None, f"Key must have 2 elements, got {key.__len__()}")
    return wrap(_map(lambda v: siphash24(key[0], key[1], v) % n, a, np.int64))


@_host_op("StringFormat")
def format(template, inputs, placeholder="{}", summarize=3, name=None):  # noqa: A001
    """``template`` with each ``placeholder`` replaced by the next input, printed as
    ``tf.print`` prints it (numpy's layout, at most ``summarize`` items per end)."""
    values = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    pieces = template.split(placeholder)
    if pieces.__len__() - 1 != values.__len__():
        raise ValueError(f"num placeholders in template and num inputs must match: "
                         f"{pieces.__len__() - 1} vs. {values.__len__()}")
    out = [pieces[0]]
    for v, rest in zip(values, pieces[1:]):
        out.append(_format_value(v, summarize))
        out.append(rest)
    return wrap(string_array("".join(out)))


def _format_value(v, summarize) -> str:
    from .printing import format_tensor

    return format_tensor(convert_to_tensor(v)._value, summarize)


def _rows_of(data, op):
    """(rows of bytes, whether ``data`` was a RaggedTensor) of a vector or ragged batch."""
    if isinstance(data, RaggedTensor):
        return [np.asarray(r, object) for r in data.numpy()], True
    a = _strings(data, op, "data")
    if a.ndim != 1:
        raise ValueError(f"{op}: data must be a vector or a RaggedTensor of rank 2 here, got "
                         f"rank {a.ndim}")
    return [a], False


def _ragged_or_vector(rows, ragged):
    if not ragged:
        return wrap(_object_vector(list(rows[0])))
    splits = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    return RaggedTensor(wrap(_object_vector([v for r in rows for v in r])), wrap(splits))


@_host_op("StringNGrams", graph=False)
def ngrams(data, ngram_width, separator=" ", pad_values=None, padding_width=None,
           preserve_short_sequences=False, name=None):
    """The n-grams of each row (a vector, or each row of a RaggedTensor): for each width in
    ``ngram_width`` in turn, every run of that many tokens joined by ``separator``.

    Raises:
      ValueError: a width < 1; ``pad_values``/``padding_width``/``preserve_short_sequences``
        (not supported here).
    """
    widths = (ngram_width,) if isinstance(ngram_width, int) else tuple(ngram_width)
    if any(w < 1 for w in widths):
        raise ValueError(f"All ngram_widths must be greater than 0. Got {ngram_width}")
    if pad_values is not None or padding_width is not None or preserve_short_sequences:
        raise ValueError("ngrams: pad_values, padding_width and preserve_short_sequences are "
                         "not supported by ipu_gpu")
    rows, ragged = _rows_of(data, "ngrams")
    sep = _to_bytes(separator)
    out = []
    for row in rows:
        tokens = list(row)
        grams = [sep.join(tokens[i:i + n]) for n in widths for i in range(len(tokens) - n + 1)]
        out.append(_object_vector(grams))
    return _ragged_or_vector(out, ragged)


@_host_op("UnicodeDecodeWithOffsets", graph=False)
def unicode_split(input, input_encoding, errors="replace", replacement_char=65533,  # noqa: A002
                  name=None):
    """Each string split into its characters (each one's UTF-8 bytes): a 1-D tensor for a
    scalar, a RaggedTensor for a vector.

    Raises:
      ValueError: an encoding other than UTF-8; input of rank > 1 (not supported here).
    """
    if input_encoding.upper().replace("-", "") != "UTF8":
        raise ValueError(f"unicode_split: input_encoding must be UTF-8 here, got "
                         f"{input_encoding!r}")
    a = _strings(input, "unicode_split")
    if a.ndim > 1:
        raise ValueError(f"unicode_split: input must be a scalar or a vector here, got rank "
                         f"{a.ndim}")
    mode = errors if errors in ("strict", "ignore") else "replace"
    rows = []
    for v in a.reshape(-1):
        try:
            text = v.decode("utf-8", mode)
        except UnicodeDecodeError as e:
            raise InvalidArgumentError(None, None, f"Invalid formatting on input string: "
                                       f"{e}") from None
        if mode == "replace" and replacement_char != 0xfffd:
            text = text.replace("\ufffd", chr(replacement_char))
        chars = [c.encode("utf-8") for c in text]
        rows.append(_object_vector(chars))
    if a.ndim == 0:
        return wrap(rows[0])
    return _ragged_or_vector(rows, True)


def _split_at_any(v: bytes, chars: bytes, skip_empty: bool) -> list:
    if not chars:  # an empty delimiter: one piece per byte
        return [v[i:i + 1] for i in range(v.__len__())]
    if not v:  # an empty string has no pieces, even kept empty ones
        return []
    pieces = re.split(b"[" + re.escape(chars) + b"]", v)
    return [p for p in pieces if p] if skip_empty else pieces


@_host_op("StringSplit", graph=False)
def string_split_v1(source, sep=None, skip_empty=True, delimiter=None,
                    result_type="SparseTensor", name=None):
    """TF 1's ``tf.string_split``: each string split at every character of ``delimiter``
    (``sep`` is its newer name; default " "; "" splits into bytes), empty pieces dropped when
    ``skip_empty``; a SparseTensor [rows, longest] (or a RaggedTensor)."""
    if sep is not None and delimiter is not None:
        raise ValueError("Cannot specify both 'sep' and 'delimiter'")
    chars = _to_bytes(" " if sep is None and delimiter is None else
                      (sep if sep is not None else delimiter))
    a = _strings(source, "string_split", "source")
    if a.ndim != 1:
        raise ValueError(f"string_split: source must be a vector, got rank {a.ndim}")
    rows = [_split_at_any(v, chars, skip_empty) for v in a]
    if result_type == "RaggedTensor":
        return _ragged_or_vector([_object_vector(r) for r in rows], True)
    if result_type != "SparseTensor":
        raise ValueError(f"result_type must be 'RaggedTensor' or 'SparseTensor', got "
                         f"{result_type!r}")
    from .io.sparse import SparseTensor

    indices = np.array([[i, j] for i, r in enumerate(rows) for j in range(r.__len__())],
                       np.int64).reshape(-1, 2)
    values = _object_vector([p for r in rows for p in r])
    width = max((r.__len__() for r in rows), default=0)
    return SparseTensor(wrap(indices), wrap(values),
                        wrap(np.array([len(rows), width], np.int64)))
