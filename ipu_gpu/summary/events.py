"""TensorBoard event files, written without TensorFlow or protobuf.

An event file is a sequence of TFRecords (``io/tfrecord.py``'s framing: length, masked
CRC-32C of the length, data, masked CRC-32C of the data), each holding one serialised
``tensorflow.Event`` protocol buffer. The first event carries the file version
(``brain.Event:2``); each later one a step, a wall time and a ``Summary``. Only the message
fields written here are encoded (field numbers from ``event.proto``, ``summary.proto``,
``tensor.proto``, ``tensor_shape.proto`` and ``types.proto``), with proto3's rule that
default values are left out. TensorFlow's ``summary_iterator`` and TensorBoard read them.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import threading
import time
import weakref

import numpy as np

from ..io.tfrecord import encode_record

__all__ = ["EventFile", "encode_event", "encode_summary_value", "flush_all", "summary_metadata",
           "tensor_proto"]

# ---- protocol buffer wire format ---------------------------------------------------------


def _varint(n: int) -> bytes:
    n &= 0xFFFFFFFFFFFFFFFF  # negative int64s take ten bytes, two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int_field(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value) if value else b""


def _double_field(field: int, value: float) -> bytes:
    return _key(field, 1) + struct.pack("<d", value) if value else b""


def _bytes_field(field: int, data: bytes, keep_empty: bool = False) -> bytes:
    if not data and not keep_empty:
        return b""
    return _key(field, 2) + _varint(len(data)) + data


def _text(value) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)


def _float_field(field: int, value: float) -> bytes:
    return _key(field, 5) + struct.pack("<f", value) if value else b""


def _packed_doubles(field: int, values) -> bytes:
    return _bytes_field(field, struct.pack(f"<{len(values)}d", *values)) if len(values) else b""


def read_fields(data: bytes) -> list:
    """The fields of a serialised message, in order: ``(field number, wire type, value)``;
    a varint as an int, fixed64/fixed32 as their 8/4 raw bytes, a length-delimited field as
    its bytes. Raises ValueError on a truncated or malformed message."""
    out, i, n = [], 0, len(data)

    def varint():
        nonlocal i
        shift = result = 0
        while True:
            if i >= n or shift > 63:
                raise ValueError("truncated or malformed protocol buffer")
            b = data[i]
            i += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
    while i < n:
        key = varint()
        field, wire = key >> 3, key & 7
        if wire == 0:
            value = varint()
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if i + size > n:
                raise ValueError("truncated or malformed protocol buffer")
            value, i = data[i:i + size], i + size
        elif wire == 2:
            size = varint()
            if i + size > n:
                raise ValueError("truncated or malformed protocol buffer")
            value, i = data[i:i + size], i + size
        else:
            raise ValueError(f"unsupported protocol buffer wire type {wire}")
        out.append((field, wire, value))
    return out


# DataType enum values (types.proto)
_DT = {np.dtype("float32"): 1, np.dtype("float64"): 2, np.dtype("int32"): 3,
       np.dtype("uint8"): 4, np.dtype("int16"): 5, np.dtype("int8"): 6, np.dtype("int64"): 9,
       np.dtype("bool"): 10, np.dtype("uint16"): 17, np.dtype("float16"): 19,
       np.dtype("uint32"): 22, np.dtype("uint64"): 23}
DT_STRING = 7

# SummaryMetadata.DataClass (summary.proto)
DATA_CLASS_SCALAR = 1
DATA_CLASS_TENSOR = 2
DATA_CLASS_BLOB_SEQUENCE = 3


def is_string_array(a: np.ndarray) -> bool:
    return a.dtype.kind in "OSU"


def tensor_proto(a: np.ndarray) -> bytes:
    """A serialised ``TensorProto``: numbers as little-endian ``tensor_content``, strings
    as ``string_val`` entries (UTF-8)."""
    dims = b"".join(_bytes_field(2, _int_field(1, int(d)), keep_empty=True) for d in a.shape)
    shape = _bytes_field(2, dims, keep_empty=True)
    if is_string_array(a):
        strings = b"".join(_bytes_field(8, _text(s), keep_empty=True) for s in a.reshape(-1))
        return _int_field(1, DT_STRING) + shape + strings
    dtype = _DT.get(a.dtype)
    if dtype is None:
        raise TypeError(f"summary: a tensor of dtype {a.dtype} cannot be written")
    content = np.ascontiguousarray(a, a.dtype.newbyteorder("<")).tobytes()
    return _int_field(1, dtype) + shape + _bytes_field(4, content)


def summary_metadata(plugin_name: str = "", content: bytes = b"", display_name: str = "",
                     description: str | None = None, data_class: int = 0) -> bytes:
    """A serialised ``SummaryMetadata`` (the plugin that reads the value, and how)."""
    plugin = _bytes_field(1, _text(plugin_name)) + _bytes_field(2, content)
    return (_bytes_field(1, plugin) + _bytes_field(2, _text(display_name))
            + _bytes_field(3, _text(description or "")) + _int_field(4, data_class))


def encode_summary_value(tag: str, tensor: bytes, metadata: bytes = b"") -> bytes:
    """A serialised ``Summary`` holding one ``Summary.Value`` with a tensor."""
    value = _bytes_field(1, _text(tag)) + _bytes_field(8, tensor, keep_empty=True) + \
        _bytes_field(9, metadata)
    return _bytes_field(1, value, keep_empty=True)


def encode_event(wall_time: float, step: int = 0, *, file_version: str = "",
                 summary: bytes | None = None, source_writer: str = "") -> bytes:
    """A serialised ``Event``."""
    out = _double_field(1, wall_time) + _int_field(2, step) + \
        _bytes_field(3, _text(file_version))
    if summary is not None:
        out += _bytes_field(5, summary, keep_empty=True)
    if source_writer:
        out += _bytes_field(10, _bytes_field(1, _text(source_writer)))
    return out


# ---- the file ------------------------------------------------------------------------------

_uids = itertools.count()
_OPEN: weakref.WeakSet = weakref.WeakSet()


class EventFile:
    """One event file in ``logdir``, named as TensorFlow names it
    (``events.out.tfevents.<seconds>.<host>.<pid>.<n><suffix>``, suffix ``.v2`` by
    default). Events queue in memory and are written when ``max_queue`` are waiting, when
    ``flush_millis`` have passed since the last write, on ``flush``/``close`` and at exit."""

    def __init__(self, logdir: str, max_queue: int = 10, flush_millis: int = 120000,
                 filename_suffix: str = ".v2"):
        os.makedirs(logdir, exist_ok=True)
        name = (f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}."
                f"{os.getpid()}.{next(_uids)}{filename_suffix}")
        self.path = os.path.join(logdir, name)
        self._max_queue = max(1, int(max_queue))
        self._flush_seconds = flush_millis / 1000.0
        self._queue: list = []
        self._lock = threading.Lock()
        self._last_flush = time.time()
        self._file = open(self.path, "ab")  # noqa: SIM115 - closed by close()
        self._file.write(encode_record(encode_event(time.time(), file_version="brain.Event:2",
                                             source_writer="tensorflow.core.util."
                                                           "events_writer")))
        self._file.flush()
        _OPEN.add(self)

    @property
    def closed(self) -> bool:
        return self._file is None

    def add(self, event: bytes) -> None:
        with self._lock:
            if self._file is None:
                raise RuntimeError(f"summary: the event file {self.path} is closed")
            self._queue.append(encode_record(event))
            if (len(self._queue) >= self._max_queue
                    or time.time() - self._last_flush >= self._flush_seconds):
                self._write_queue()

    def _write_queue(self) -> None:
        if self._queue:
            self._file.write(b"".join(self._queue))
            self._queue.clear()
        self._file.flush()
        self._last_flush = time.time()

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._write_queue()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._write_queue()
                self._file.close()
                self._file = None

    def __del__(self):  # a writer dropped without close() still writes its events, as TF's
        if getattr(self, "_file", None) is not None:
            self.close()


def flush_all() -> None:
    """Write every open file's queued events (registered with ``atexit``)."""
    for f in list(_OPEN):
        f.flush()
