"""``tf.data.FixedLengthRecordDataset``: the fixed-size records of binary files (CIFAR-10's
``data_batch_*.bin``), each a string scalar; ``header_bytes`` at the start and
``footer_bytes`` at the end of every file are skipped. The files are read as the other file
datasets read them (``readers.py``: names, order, ``num_parallel_reads``, GZIP/ZLIB)."""

from __future__ import annotations

import gzip
import os
import zlib

import numpy as np

from ..errors import DataLossError, InvalidArgumentError, NotFoundError
from .dataset import as_int
from .readers import _FileDataset, _scalar, _SingleFile

__all__ = ["FixedLengthRecordDataset"]


def _body(path: str, compression: str) -> bytes:
    if not os.path.exists(path):
        raise NotFoundError(f"{path}; No such file or directory")
    with open(path, "rb") as f:
        data = f.read()
    if compression == "GZIP":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise DataLossError(f"inflate() failed with error -3: {e}") from e
    if compression == "ZLIB":
        try:
            return zlib.decompress(data)
        except zlib.error as e:
            raise DataLossError(f"inflate() failed with error -3: {e}") from e
    return data


def _records(path, compression, record, header, footer):
    data = _body(path, compression)
    body = len(data) - header - footer
    if body < 0 or body % record:
        error = DataLossError if compression else InvalidArgumentError
        raise error(f"Excluding the header ({header} bytes) and footer ({footer} bytes), input "
                    f"file \"{path}\" has body length {body % (1 << 64)} bytes, which is not "
                    f"an exact multiple of the record length ({record} bytes).")
    for start in range(header, header + body, record):
        yield _scalar(data[start:start + record])


class FixedLengthRecordDataset(_FileDataset):
    """``tf.data.FixedLengthRecordDataset(filenames, record_bytes, header_bytes=None,
    footer_bytes=None, buffer_size=None, compression_type=None, num_parallel_reads=None)``.

    Raises:
      InvalidArgumentError: ``record_bytes`` <= 0, negative ``header_bytes``/``footer_bytes``;
        when reached, a file whose body is not a whole number of records (DataLossError when
        compressed). NotFoundError: a missing file, when reached."""

    _op = "FixedLengthRecordDataset"

    def __init__(self, filenames, record_bytes, header_bytes=None, footer_bytes=None,
                 buffer_size=None, compression_type=None, num_parallel_reads=None, name=None):
        super().__init__(filenames, compression_type, buffer_size, num_parallel_reads, name)
        self._record = as_int(record_bytes, "record_bytes", self._op)
        self._header = as_int(header_bytes or 0, "header_bytes", self._op)
        self._footer = as_int(footer_bytes or 0, "footer_bytes", self._op)
        if self._record <= 0:
            raise InvalidArgumentError("`record_bytes` must be > 0")
        for label, value in (("header_bytes", self._header), ("footer_bytes", self._footer)):
            if value < 0:
                raise InvalidArgumentError(f"`{label}` must be >= 0")

    def _read_file(self, path, compression):
        return _records(path, compression, self._record, self._header, self._footer)

    def _iter_elements(self):
        if self._parallel is None or self._parallel == 1:
            for path in self._names():
                yield from self._read_file(path, self._compression)
            return
        from .mapping import Interleave
        from .sources import TensorSlices

        names = list(self._names())
        if not names:
            return
        ds = Interleave(TensorSlices(names), lambda p: _SingleFile(
            np.asarray(p).reshape(()).item().decode("utf-8"), self._read_file,
            self._compression), self._parallel, 1, op=self._op)
        yield from ds._elements()
