"""TFRecord files: the framing TensorFlow's ``tf.io.TFRecordWriter`` writes and
``tf.data.TFRecordDataset`` reads, optionally GZIP or ZLIB compressed.

Each record is::

    uint64 length (little-endian)
    uint32 masked CRC-32C of the 8 length bytes
    byte   data[length]
    uint32 masked CRC-32C of data

Reading checks both checksums and raises TF's errors: ``DataLossError`` "corrupted record at
<offset>" for a bad checksum, "truncated record at <offset>" when the file ends inside a record;
a file ending inside a record's 12-byte header ends the records, as in TF.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib

from ._crc32c import masked_crc32c
from ..errors import DataLossError, NotFoundError

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "read_records",
           "tf_record_iterator"]

_COMPRESSIONS = ("", "GZIP", "ZLIB")


class TFRecordCompressionType:
    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """``tf.io.TFRecordOptions``: the compression of a TFRecord file ("", "GZIP", "ZLIB")."""

    compression_type_map = {TFRecordCompressionType.ZLIB: "ZLIB",
                            TFRecordCompressionType.GZIP: "GZIP",
                            TFRecordCompressionType.NONE: ""}

    def __init__(self, compression_type=None, flush_mode=None, input_buffer_size=None,
                 output_buffer_size=None, window_bits=None, compression_level=None,
                 compression_method=None, mem_level=None, compression_strategy=None):
        self.compression_type = compression_name(compression_type)
        self.compression_level = compression_level

    @classmethod
    def get_compression_type_string(cls, options) -> str:
        if isinstance(options, TFRecordOptions):
            return options.compression_type
        return compression_name(options)


def compression_name(value) -> str:
    """"", "GZIP" or "ZLIB" from None, a name, a TFRecordCompressionType or options."""
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    if value is None:
        return ""
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, int):
        value = TFRecordOptions.compression_type_map.get(value, value)
    if not isinstance(value, str) or value.upper() not in _COMPRESSIONS:
        raise ValueError(f"compression_type must be one of '', 'GZIP', 'ZLIB', got {value!r}")
    return value.upper()


def _open_read(path: str, compression: str):
    if not os.path.exists(path):
        raise NotFoundError(f"{path}; No such file or directory")
    if os.path.isdir(path):
        raise DataLossError(f"{path}; Is a directory")
    if compression == "GZIP":
        return gzip.open(path, "rb")
    if compression == "ZLIB":
        with open(path, "rb") as f:
            import io

            return io.BytesIO(zlib.decompress(f.read()))
    return open(path, "rb", buffering=1 << 20)


def read_records(path: str, compression_type=None):
    """The records of one TFRecord file, as bytes, checksums verified."""
    compression = compression_name(compression_type)
    with _open_read(path, compression) as f:
        offset = 0
        while True:
            header = f.read(12)
            if len(header) < 12:
                return
            (length,) = struct.unpack("<Q", header[:8])
            (length_crc,) = struct.unpack("<I", header[8:])
            if masked_crc32c(header[:8]) != length_crc:
                raise DataLossError(f"corrupted record at {offset} (Is this even a TFRecord "
                                    "file?)")
            body = f.read(length + 4)
            if len(body) < length + 4:
                raise DataLossError(f"truncated record at {offset}' failed with Read less "
                                    f"bytes than requested")
            data = body[:length]
            (data_crc,) = struct.unpack("<I", body[length:])
            if masked_crc32c(data) != data_crc:
                raise DataLossError(f"corrupted record at {offset + 12}")
            yield data
            offset += 16 + length


def tf_record_iterator(path, options=None):
    """``tf.compat.v1.io.tf_record_iterator``: the records of a file as bytes."""
    return read_records(os.fspath(path), compression_name(options))


def encode_record(data: bytes) -> bytes:
    """One record in TFRecord framing."""
    length = struct.pack("<Q", len(data))
    return b"".join((length, struct.pack("<I", masked_crc32c(length)), data,
                     struct.pack("<I", masked_crc32c(data))))


class TFRecordWriter:
    """``tf.io.TFRecordWriter(path, options=None)``: writes records (bytes, e.g. a serialized
    ``tf.train.Example``) to a TFRecord file that TensorFlow can read. ``options`` is a
    compression name ("", "GZIP", "ZLIB") or a ``TFRecordOptions``."""

    def __init__(self, path, options=None):
        path = os.fspath(path)
        self._compression = compression_name(options)
        level = getattr(options, "compression_level", None)
        self._path = path
        if self._compression == "GZIP":
            self._file = gzip.open(path, "wb", compresslevel=9 if level is None else level)
        else:
            try:
                self._file = open(path, "wb")
            except FileNotFoundError:
                raise NotFoundError(f"{path}; No such file or directory") from None
        self._zlib = (zlib.compressobj(-1 if level is None else level)
                      if self._compression == "ZLIB" else None)

    def write(self, record) -> None:
        """Appends one record (bytes, or a string Tensor/array of one element)."""
        if self._file is None:
            raise ValueError("TFRecordWriter: write called after close")
        data = _record_bytes(record)
        framed = encode_record(data)
        self._file.write(self._zlib.compress(framed) if self._zlib else framed)

    def flush(self) -> None:
        if self._file is not None:
            if self._zlib:
                self._file.write(self._zlib.flush(zlib.Z_SYNC_FLUSH))
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            if self._zlib:
                self._file.write(self._zlib.flush())
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _record_bytes(record) -> bytes:
    if isinstance(record, (bytes, bytearray, memoryview)):
        return bytes(record)
    if isinstance(record, str):
        return record.encode("utf-8")
    value = getattr(record, "_value", record)
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "size", 0) == 1:
        return _record_bytes(value.reshape(()).item())
    raise TypeError(f"TFRecordWriter.write: record must be bytes, got {type(record).__name__}")
