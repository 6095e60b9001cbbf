"""``tf.train.Example`` and its parts, with the protobuf wire format written and read by hand
(TensorFlow's ``example.proto``; protobuf itself is not a dependency).

    Example   { Features features = 1; }
    Features  { map<string, Feature> feature = 1; }     // entries: key = 1, value = 2
    Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                             Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    FloatList { repeated float value = 1 [packed = true]; }
    Int64List { repeated int64 value = 1 [packed = true]; }

Writing packs repeated numbers (as protobuf does for these fields); reading accepts packed and
unpacked encodings and skips unknown fields. Map entries are written in insertion order.
``decode_example`` turns serialized bytes straight into ``{key: (kind, values)}`` with numpy
values, without building message objects (what parsing uses).
"""

from __future__ import annotations

import numpy as np

__all__ = ["BytesList", "Example", "Feature", "Features", "FloatList", "Int64List",
           "decode_example"]


class DecodeError(ValueError):
    """Bytes that are not a valid serialized message (protobuf's DecodeError)."""


# ---- wire format ------------------------------------------------------------------------------
def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_varint(buf, pos: int):
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("Truncated message.")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("Too many bytes when decoding varint.")


def _fields(buf):
    """(field number, wire type, value) for each field of a message; length-delimited values
    are memoryview slices, varints ints, fixed32/64 raw bytes."""
    pos, n = 0, len(buf)
    while pos < n:
        key, pos = _read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(buf, pos)
        elif wire == 2:
            length, pos = _read_varint(buf, pos)
            if pos + length > n:
                raise DecodeError("Truncated message.")
            value = buf[pos:pos + length]
            pos += length
        elif wire == 5:
            value = buf[pos:pos + 4]
            pos += 4
        elif wire == 1:
            value = buf[pos:pos + 8]
            pos += 8
        else:
            raise DecodeError(f"Unexpected wire type {wire}.")
        if pos > n:
            raise DecodeError("Truncated message.")
        yield field, wire, value


def _decode_varints(buf) -> np.ndarray:
    """Packed varints as int64 (vectorised: each varint ends at a byte below 0x80)."""
    b = np.frombuffer(buf, dtype=np.uint8)
    if b.size == 0:
        return np.zeros(0, np.int64)
    ends = np.flatnonzero(b < 0x80)
    if ends.size == 0 or ends[-1] != b.size - 1:
        raise DecodeError("Truncated message.")
    starts = np.concatenate(([0], ends[:-1] + 1))
    pos = np.arange(b.size) - np.repeat(starts, ends - starts + 1)
    if pos.max() > 9:
        raise DecodeError("Too many bytes when decoding varint.")
    parts = (b & 0x7F).astype(np.uint64) << (7 * pos).astype(np.uint64)
    return np.add.reduceat(parts, starts).view(np.int64)


def _field(number: int, payload: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


# ---- messages ---------------------------------------------------------------------------------
class _Message:
    def SerializeToString(self, deterministic=None) -> bytes:  # noqa: N802 - protobuf's name
        return self._encode()

    def SerializePartialToString(self, deterministic=None) -> bytes:  # noqa: N802
        return self._encode()

    def ByteSize(self) -> int:  # noqa: N802
        return len(self._encode())

    @classmethod
    def FromString(cls, data):  # noqa: N802
        m = cls()
        m.ParseFromString(data)
        return m

    def ParseFromString(self, data) -> int:  # noqa: N802
        self.Clear()
        return self.MergeFromString(data)

    def MergeFromString(self, data) -> int:  # noqa: N802
        buf = memoryview(bytes(data))
        self._merge(buf)
        return len(buf)

    def CopyFrom(self, other) -> None:  # noqa: N802
        self.ParseFromString(other.SerializeToString())

    def MergeFrom(self, other) -> None:  # noqa: N802
        self.MergeFromString(other.SerializeToString())

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._canonical() == other._canonical()

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __str__(self) -> str:
        return "".join(line + "\n" for line in self._text())

    def __repr__(self) -> str:
        return self.__str__()


class _List(_Message):
    _number_format = None

    def __init__(self, value=None):
        self.value = [] if value is None else [self._item(v) for v in value]

    def Clear(self) -> None:  # noqa: N802
        self.value = []

    def _text(self):
        return [f"value: {self._format(v)}" for v in self.value]

    def _canonical(self):
        return tuple(self.value)

    def __len__(self):
        return len(self.value)


class BytesList(_List):
    """``tf.train.BytesList(value=[bytes, ...])``."""

    @staticmethod
    def _item(v):
        if isinstance(v, (bytes, bytearray, np.bytes_)):
            return bytes(v)
        raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: bytes")

    @staticmethod
    def _format(v):
        return '"' + "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:03o}"
                             for c in v) + '"'

    def _encode(self) -> bytes:
        return b"".join(_field(1, v) for v in self.value)

    def _merge(self, buf) -> None:
        for field, wire, value in _fields(buf):
            if field == 1 and wire == 2:
                self.value.append(bytes(value))


class FloatList(_List):
    """``tf.train.FloatList(value=[float, ...])`` (stored as float32)."""

    @staticmethod
    def _item(v):
        if isinstance(v, (str, bytes)) or not np.isscalar(v) and np.ndim(v) != 0:
            raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: int, float")
        return float(np.float32(v))

    @staticmethod
    def _format(v):
        return repr(v)

    def _encode(self) -> bytes:
        if not self.value:
            return b""
        return _field(1, np.asarray(self.value, dtype="<f4").tobytes())

    def _merge(self, buf) -> None:
        self.value.extend(float(v) for v in _float_values(buf))


class Int64List(_List):
    """``tf.train.Int64List(value=[int, ...])``."""

    @staticmethod
    def _item(v):
        if isinstance(v, (float, np.floating, str, bytes)):
            raise TypeError(f"{v!r} has type {type(v).__name__}, but expected one of: int")
        i = int(v)
        if not -(2**63) <= i < 2**63:
            raise ValueError(f"Value out of range: {i}")
        return i

    @staticmethod
    def _format(v):
        return str(v)

    def _encode(self) -> bytes:
        if not self.value:
            return b""
        return _field(1, b"".join(_varint(v) for v in self.value))

    def _merge(self, buf) -> None:
        self.value.extend(int(v) for v in _int64_values(buf))


def _float_values(buf) -> np.ndarray:
    parts = []
    for field, wire, value in _fields(buf):
        if field == 1 and wire == 2:
            if len(value) % 4:
                raise DecodeError("Truncated message.")
            parts.append(np.frombuffer(value, dtype="<f4"))
        elif field == 1 and wire == 5:
            parts.append(np.frombuffer(value, dtype="<f4"))
    if not parts:
        return np.zeros(0, np.float32)
    return np.concatenate(parts).astype(np.float32) if len(parts) > 1 else parts[0].astype(
        np.float32)


def _int64_values(buf) -> np.ndarray:
    parts = []
    for field, wire, value in _fields(buf):
        if field == 1 and wire == 2:
            parts.append(_decode_varints(value))
        elif field == 1 and wire == 0:
            parts.append(np.array([value - (1 << 64) if value >= 1 << 63 else value],
                                  dtype=np.int64))
    if not parts:
        return np.zeros(0, np.int64)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


_KINDS = ("bytes_list", "float_list", "int64_list")
_KIND_CLASSES = {"bytes_list": BytesList, "float_list": FloatList, "int64_list": Int64List}


class Feature(_Message):
    """``tf.train.Feature(bytes_list=..., float_list=..., int64_list=...)``: one of the three
    (the ``kind`` oneof)."""

    def __init__(self, bytes_list=None, float_list=None, int64_list=None):
        self._lists = {}
        self._kind = None
        given = [(k, v) for k, v in zip(_KINDS, (bytes_list, float_list, int64_list))
                 if v is not None]
        if len(given) > 1:
            raise ValueError("Feature: only one of bytes_list, float_list, int64_list may be "
                             "set")
        for k, v in given:
            self._set(k, v)

    def _set(self, kind, value):
        cls = _KIND_CLASSES[kind]
        if not isinstance(value, cls):
            raise TypeError(f"Feature: {kind} must be a {cls.__name__}, got "
                            f"{type(value).__name__}")
        self._lists = {kind: value}
        self._kind = kind

    def _get(self, kind):
        if kind not in self._lists:
            self._lists[kind] = _KIND_CLASSES[kind]()
        return self._lists[kind]

    bytes_list = property(lambda self: self._get("bytes_list"),
                          lambda self, v: self._set("bytes_list", v))
    float_list = property(lambda self: self._get("float_list"),
                          lambda self, v: self._set("float_list", v))
    int64_list = property(lambda self: self._get("int64_list"),
                          lambda self, v: self._set("int64_list", v))

    def WhichOneof(self, name: str):  # noqa: N802
        if name != "kind":
            raise ValueError(f'Protocol message has no oneof "{name}" field.')
        if self._kind is not None:
            return self._kind
        return next((k for k in _KINDS if len(self._lists.get(k, ()))), None)

    def HasField(self, name: str) -> bool:  # noqa: N802
        if name == "kind":
            return self.WhichOneof("kind") is not None
        if name not in _KINDS:
            raise ValueError(f'Protocol message has no "{name}" field.')
        return self.WhichOneof("kind") == name

    def Clear(self) -> None:  # noqa: N802
        self._lists, self._kind = {}, None

    def _encode(self) -> bytes:
        kind = self.WhichOneof("kind")
        if kind is None:
            return b""
        return _field(_KINDS.index(kind) + 1, self._lists[kind]._encode())

    def _merge(self, buf) -> None:
        for field, wire, value in _fields(buf):
            if 1 <= field <= 3 and wire == 2:
                kind = _KINDS[field - 1]
                if self._kind != kind:
                    self._lists, self._kind = {kind: _KIND_CLASSES[kind]()}, kind
                self._lists[kind]._merge(value)

    def _canonical(self):
        kind = self.WhichOneof("kind")
        return None if kind is None else (kind, self._lists[kind]._canonical())

    def _text(self):
        kind = self.WhichOneof("kind")
        if kind is None:
            return []
        return [f"{kind} {{", *("  " + line for line in self._lists[kind]._text()), "}"]


class _FeatureMap(dict):
    """``Features.feature``: reading a missing key adds an empty Feature (protobuf maps)."""

    def __missing__(self, key):
        f = Feature()
        self[key] = f
        return f

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"feature keys must be str, got {type(key).__name__}")
        if not isinstance(value, Feature):
            raise TypeError(f"feature values must be Feature, got {type(value).__name__}")
        super().__setitem__(key, value)


class Features(_Message):
    """``tf.train.Features(feature={name: Feature})``."""

    def __init__(self, feature=None):
        self.feature = _FeatureMap()
        for k, v in (feature or {}).items():
            self.feature[k] = v

    def Clear(self) -> None:  # noqa: N802
        self.feature = _FeatureMap()

    def _encode(self) -> bytes:
        return b"".join(_field(1, _field(1, k.encode("utf-8")) + _field(2, v._encode()))
                        for k, v in self.feature.items())

    def _merge(self, buf) -> None:
        for field, wire, entry in _fields(buf):
            if field != 1 or wire != 2:
                continue
            key, value = "", Feature()
            for f, w, v in _fields(entry):
                if f == 1 and w == 2:
                    key = bytes(v).decode("utf-8")
                elif f == 2 and w == 2:
                    value = Feature()
                    value._merge(v)
            self.feature[key] = value

    def _canonical(self):
        return {k: v._canonical() for k, v in self.feature.items()}

    def _text(self):
        lines = []
        for k, v in self.feature.items():
            lines += ["feature {", f'  key: "{k}"', "  value {",
                      *("    " + line for line in v._text()), "  }", "}"]
        return lines


class Example(_Message):
    """``tf.train.Example(features=Features(...))``: what TFRecord files usually hold."""

    def __init__(self, features=None):
        if features is not None and not isinstance(features, Features):
            raise TypeError(f"Example: features must be a Features, got "
                            f"{type(features).__name__}")
        self._features = features

    @property
    def features(self) -> Features:
        if self._features is None:
            self._features = Features()
        return self._features

    @features.setter
    def features(self, value: Features):
        self._features = value

    def HasField(self, name: str) -> bool:  # noqa: N802
        if name != "features":
            raise ValueError(f'Protocol message has no "{name}" field.')
        return self._features is not None

    def Clear(self) -> None:  # noqa: N802
        self._features = None

    def _encode(self) -> bytes:
        if self._features is None:
            return b""
        return _field(1, self._features._encode())

    def _merge(self, buf) -> None:
        for field, wire, value in _fields(buf):
            if field == 1 and wire == 2:
                self.features._merge(value)

    def _canonical(self):
        return None if self._features is None else self._features._canonical()

    def _text(self):
        if self._features is None:
            return []
        return ["features {", *("  " + line for line in self._features._text()), "}"]


def decode_example(data) -> dict:
    """``{key: (kind, values)}`` of a serialized Example: kind is "bytes_list" (a list of
    bytes), "float_list" (float32 array), "int64_list" (int64 array) or None (no kind set).
    A key given twice keeps the last entry, as protobuf maps."""
    buf = memoryview(data if isinstance(data, (bytes, bytearray)) else bytes(data))
    out = {}
    for field, wire, features in _fields(buf):
        if field != 1 or wire != 2:
            continue
        for f, w, entry in _fields(features):
            if f != 1 or w != 2:
                continue
            key, kind, payload = "", None, None
            for ef, ew, ev in _fields(entry):
                if ef == 1 and ew == 2:
                    key = bytes(ev).decode("utf-8")
                elif ef == 2 and ew == 2:
                    kind, payload = None, None
                    for ff, fw, fv in _fields(ev):
                        if 1 <= ff <= 3 and fw == 2:
                            k = _KINDS[ff - 1]
                            if k != kind:
                                kind, payload = k, []
                            payload.append(fv)
            if kind == "bytes_list":
                values = [bytes(v) for p in payload for ff, fw, v in _fields(p)
                          if ff == 1 and fw == 2]
            elif kind == "float_list":
                values = np.concatenate([_float_values(p) for p in payload]) if len(
                    payload) > 1 else _float_values(payload[0])
            elif kind == "int64_list":
                values = np.concatenate([_int64_values(p) for p in payload]) if len(
                    payload) > 1 else _int64_values(payload[0])
            else:
                values = None
            out[key] = (kind, values)
    return out

