"""File datasets: ``TextLineDataset`` (lines, without the newline and a trailing carriage
return) and ``TFRecordDataset`` (records of TFRecord files, checksums verified). Elements are
string scalars (0-d object arrays of bytes). ``filenames`` is a name, a list or string
tensor of names, or a dataset of names; files are read one after another, or interleaved one
element at a time from ``num_parallel_reads`` of them (TF's order). A missing file raises
``NotFoundError`` when it is reached, as TF."""

from __future__ import annotations

import gzip
import io
import os
import zlib

import numpy as np

from ..core.spec import TensorSpec, string
from ..errors import NotFoundError
from ..io.tfrecord import compression_name, read_records
from . import structure
from .dataset import AUTOTUNE, UNKNOWN, Dataset, as_int


def _filenames(value, op: str):
    """A Dataset of names, or a list of str."""
    if isinstance(value, Dataset):
        return value
    if isinstance(value, (str, bytes, os.PathLike)):
        value = [value]
    if isinstance(value, (list, tuple)):
        names = value
    else:
        a = structure.to_numpy(value, op)
        if a.dtype != object or a.ndim > 1:
            raise TypeError(f"{op}: filenames must be a string, a list of strings, a string "
                            f"vector or a dataset of strings, got {value!r}")
        names = list(a.reshape(-1))
    return path_strings(names, lambda n: f"{op}: filenames must be strings, got "
                                         f"{type(n).__name__}")


def path_strings(items, message) -> list:
    """``items`` as ``str`` paths (bytes decoded as UTF-8, path-likes through ``os.fspath``);
    anything else raises TypeError with ``message(item)``."""
    out = []
    for n in items:
        if isinstance(n, bytes):
            n = n.decode("utf-8")
        elif isinstance(n, os.PathLike):
            n = os.fspath(n)
        if not isinstance(n, str):
            raise TypeError(message(n))
        out.append(n)
    return out


def _scalar(b: bytes) -> np.ndarray:
    a = np.empty((), dtype=object)
    a[()] = b
    return a


def _lines(path: str, compression: str):
    if not os.path.exists(path):
        raise NotFoundError(f"{path}; No such file or directory")
    if compression == "GZIP":
        f = gzip.open(path, "rb")
    elif compression == "ZLIB":
        with open(path, "rb") as raw:
            f = io.BytesIO(zlib.decompress(raw.read()))
    else:
        f = open(path, "rb", buffering=1 << 20)
    with f:
        for line in f:
            if line.endswith(b"\n"):
                line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
            yield _scalar(line)


def _records(path: str, compression: str):
    for record in read_records(path, compression):
        yield _scalar(record)


class _SingleFile(Dataset):
    def __init__(self, path: str, read, compression: str):
        self._path, self._read, self._compression = path, read, compression

    def _compute_spec(self):
        return TensorSpec([], string)

    def _iter_elements(self):
        return self._read(self._path, self._compression)


class _FileDataset(Dataset):
    _op = ""
    _read = None

    def __init__(self, filenames, compression_type=None, buffer_size=None,
                 num_parallel_reads=None, name=None):
        self._files = _filenames(filenames, self._op)
        self._inputs = (self._files,) if isinstance(self._files, Dataset) else ()
        self._compression = compression_name(compression_type)
        if buffer_size is not None:
            as_int(buffer_size, "buffer_size", self._op)
        self._parallel = None
        if num_parallel_reads is not None:
            n = as_int(num_parallel_reads, "num_parallel_reads", self._op)
            self._parallel = (os.cpu_count() or 1) if n == AUTOTUNE else n
            if self._parallel <= 0:
                from .. import errors

                raise errors.InvalidArgumentError("num_parallel_reads must be greater than "
                                                  "zero.")

    def _compute_spec(self):
        return TensorSpec([], string)

    def _cardinality(self) -> int:
        return UNKNOWN

    def _names(self):
        if isinstance(self._files, Dataset):
            for a in self._files._elements():
                v = a[()] if isinstance(a, np.ndarray) else a
                yield v.decode("utf-8") if isinstance(v, bytes) else str(v)
        else:
            yield from self._files

    def _iter_elements(self):
        read = type(self)._read
        if self._parallel is None or self._parallel == 1:
            for path in self._names():
                yield from read(path, self._compression)
            return
        from .mapping import Interleave
        from .sources import TensorSlices

        names = list(self._names())
        if not names:
            return
        ds = Interleave(TensorSlices(names), lambda p: _SingleFile(
            np.asarray(p).reshape(()).item().decode("utf-8"), read, self._compression),
            self._parallel, 1, op=self._op)
        yield from ds._elements()

    def _probe(self):
        it = self._iter_elements()
        try:
            return next(it)
        except Exception:
            return _scalar(b"")
        finally:
            it.close()


class TextLineDataset(_FileDataset):
    """``tf.data.TextLineDataset(filenames, compression_type=None, buffer_size=None,
    num_parallel_reads=None)``: the lines of text files as string scalars."""

    _op = "TextLineDataset"
    _read = staticmethod(_lines)


class TFRecordDataset(_FileDataset):
    """``tf.data.TFRecordDataset(filenames, compression_type=None, buffer_size=None,
    num_parallel_reads=None)``: the records of TFRecord files as string scalars (parse them
    with ``tf.io.parse_single_example`` in ``map``)."""

    _op = "TFRecordDataset"
    _read = staticmethod(_records)
