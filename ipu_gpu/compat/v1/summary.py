"""``tf.compat.v1.summary`` (TF 1.15's ``tf.summary``): summary ops whose values are serialised
``Summary`` protocol buffers, ``merge``/``merge_all``, the ``Summary`` message itself, and
``FileWriter``, which writes summaries to TensorBoard event files (``summary/events.py``).

In a graph an op is a node (its value exists when a ``Session`` runs it) added to the
``summaries`` collection; outside one it runs at once and returns the bytes. ``scalar``
writes a ``simple_value``, ``histogram`` a ``HistogramProto`` with TensorFlow's buckets (limits
growing by 10% from 1e-12 to 1e20, mirrored for negatives; runs of empty buckets collapsed),
``text`` a string tensor for TensorBoard's text plugin. Tags are the name-scoped, uniquified
op names TF gives (``family/scope/name`` with a family).

``FileWriter.add_graph`` records nothing: ipu_gpu's graphs have no ``GraphDef`` to write, so
TensorBoard's graph tab stays empty."""

from __future__ import annotations

import re
import struct
import sys
import time

import numpy as np

from ...errors import InvalidArgumentError
from ...summary import events as _events

__all__ = ["FileWriter", "FileWriterCache", "HistogramProto", "Summary", "histogram", "image",
           "merge", "merge_all", "scalar", "text"]

SUMMARIES = "summaries"  # GraphKeys.SUMMARIES


# ---- the messages ------------------------------------------------------------------------
class HistogramProto:
    """``tensorflow.HistogramProto``: ``min``, ``max``, ``num``, ``sum``, ``sum_squares`` and
    the parallel lists ``bucket_limit`` (right edges) and ``bucket`` (counts)."""

    _SCALARS = ("min", "max", "num", "sum", "sum_squares")

    def __init__(self, min=0.0, max=0.0, num=0.0, sum=0.0,  # noqa: A002 - proto field names
                 sum_squares=0.0, bucket_limit=(), bucket=()):
        self.min, self.max, self.num, self.sum = float(min), float(max), float(num), float(sum)
        self.sum_squares = float(sum_squares)
        self.bucket_limit, self.bucket = [float(x) for x in bucket_limit], [float(x) for x in
                                                                             bucket]

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's name
        out = b"".join(_events._double_field(j + 1, getattr(self, name))
                       for j, name in enumerate(self._SCALARS))
        return (out + _events._packed_doubles(6, self.bucket_limit)
                + _events._packed_doubles(7, self.bucket))

    @classmethod
    def FromString(cls, data: bytes) -> HistogramProto:  # noqa: N802
        h = cls()
        for field, wire, value in _events.read_fields(data):
            if 1 <= field <= 5 and wire == 1:
                setattr(h, cls._SCALARS[field - 1], struct.unpack("<d", value)[0])
            elif field in (6, 7):
                target = h.bucket_limit if field == 6 else h.bucket
                if wire == 2:
                    target.extend(struct.unpack(f"<{len(value) // 8}d", value))
                elif wire == 1:
                    target.append(struct.unpack("<d", value)[0])
        return h

    def __eq__(self, other):
        return isinstance(other, HistogramProto) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return (f"HistogramProto(min={self.min}, max={self.max}, num={self.num}, "
                f"sum={self.sum}, sum_squares={self.sum_squares}, "
                f"bucket_limit={self.bucket_limit}, bucket={self.bucket})")


class _Value:
    """``Summary.Value``: a ``tag`` and one of ``simple_value``, ``histo``; fields ipu_gpu
    does not model (``tensor``, ``image``, ``metadata``, ...) are kept as their bytes."""

    def __init__(self, tag="", simple_value=None, histo=None, node_name="", _raw=b""):
        self.tag, self.node_name = tag, node_name
        self.simple_value = None if simple_value is None else float(simple_value)
        self.histo = histo
        self._raw = _raw

    def HasField(self, name) -> bool:  # noqa: N802 - protobuf's name
        return getattr(self, name, None) is not None

    def SerializeToString(self) -> bytes:  # noqa: N802
        out = _events._bytes_field(1, _events._text(self.tag))
        if self.simple_value is not None:  # explicitly set: written even when 0
            out += _events._key(2, 5) + struct.pack("<f", self.simple_value)
        if self.histo is not None:
            out += _events._bytes_field(5, self.histo.SerializeToString(), keep_empty=True)
        out += _events._bytes_field(7, _events._text(self.node_name))
        return out + self._raw

    @classmethod
    def FromString(cls, data: bytes) -> _Value:  # noqa: N802
        v, raw = cls(), []
        for field, wire, value in _events.read_fields(data):
            if field == 1 and wire == 2:
                v.tag = value.decode("utf-8")
            elif field == 2 and wire == 5:
                v.simple_value = struct.unpack("<f", value)[0]
            elif field == 5 and wire == 2:
                v.histo = HistogramProto.FromString(value)
            elif field == 7 and wire == 2:
                v.node_name = value.decode("utf-8")
            else:
                raw.append(_events._key(field, wire) + (
                    _events._varint(value) if wire == 0 else
                    _events._varint(len(value)) + value if wire == 2 else value))
        v._raw = b"".join(raw)
        return v

    def __eq__(self, other):
        return isinstance(other, _Value) and vars(self) == vars(other)

    def __repr__(self) -> str:
        kind = (f"simple_value={self.simple_value}" if self.simple_value is not None
                else f"histo={self.histo!r}" if self.histo is not None else "...")
        return f"Summary.Value(tag={self.tag!r}, {kind})"


class Summary:
    """``tf.compat.v1.Summary``: a list ``value`` of ``Summary.Value``; programs build one by
    hand (``Summary(value=[Summary.Value(tag="acc", simple_value=0.9)])``) for
    ``FileWriter.add_summary``."""

    Value = _Value

    def __init__(self, value=None):
        self.value = list(value or [])

    def SerializeToString(self) -> bytes:  # noqa: N802 - protobuf's name
        return b"".join(_events._bytes_field(1, v.SerializeToString(), keep_empty=True)
                        for v in self.value)

    def ParseFromString(self, data: bytes) -> None:  # noqa: N802
        self.value = []
        self.MergeFromString(data)

    def MergeFromString(self, data: bytes) -> None:  # noqa: N802
        for field, wire, value in _events.read_fields(bytes(data)):
            if field == 1 and wire == 2:
                self.value.append(_Value.FromString(value))

    @classmethod
    def FromString(cls, data: bytes) -> Summary:  # noqa: N802
        s = cls()
        s.MergeFromString(data)
        return s

    def __eq__(self, other):
        return isinstance(other, Summary) and self.value == other.value

    def __repr__(self) -> str:
        return f"Summary(value={self.value!r})"


# ---- TensorFlow's histogram --------------------------------------------------------------
def _default_limits() -> np.ndarray:
    positive, v = [], 1.0e-12
    while v < 1.0e20:
        positive.append(v)
        v *= 1.1
    positive.append(sys.float_info.max)
    negative = [-x for x in reversed(positive)]
    return np.array([*negative, 0.0, *positive])


_LIMITS = None


def _histogram_proto(values: np.ndarray) -> HistogramProto:
    global _LIMITS
    if _LIMITS is None:
        _LIMITS = _default_limits()
    x = values.astype(np.float64).reshape(-1)
    counts = np.bincount(np.searchsorted(_LIMITS, x, side="right"),
                         minlength=len(_LIMITS)).astype(np.float64)
    h = HistogramProto(min=x.min() if x.size else sys.float_info.max,
                       max=x.max() if x.size else -sys.float_info.max,
                       num=x.size, sum=float(np.sum(x)), sum_squares=float(np.sum(x * x)))
    i, n = 0, len(counts)
    while i < n:  # runs of empty buckets collapse into their last one, as TF encodes them
        end, count = _LIMITS[i], counts[i]
        i += 1
        if count <= 0.0:
            while i < n and counts[i] <= 0.0:
                end, count = _LIMITS[i], counts[i]
                i += 1
        h.bucket_limit.append(float(end))
        h.bucket.append(float(count))
    if not h.bucket:
        h.bucket_limit.append(sys.float_info.max)
        h.bucket.append(0.0)
    return h


# ---- the ops -----------------------------------------------------------------------------
def _clean_tag(name):
    if name is None:
        return None
    cleaned = re.sub(r"[^-/\w\.]", "_", name).lstrip("/")
    return cleaned


def _array(value) -> np.ndarray:
    if hasattr(value, "read_value"):
        value = value.read_value()
    return np.asarray(value.numpy() if hasattr(value, "numpy") else value)


def _summary_op(kind, name, inputs, encode, collections, family):
    """A node (in a graph) or the bytes (eagerly) of ``encode(tag, *input arrays)``."""
    from ... import graph as _graph

    base = _clean_tag(name) if family is None else f"{_clean_tag(family)}/{_clean_tag(name)}"
    if not _graph.core.building():
        return encode(base, *[_array(x) for x in inputs])
    g = _graph.get_default_graph()
    holder = {}

    def run(*values):
        return encode(holder["tag"], *[_array(v) for v in values])
    op = _graph.core.add_node(g, kind, base, list(inputs), run, [(object, [])])
    holder["tag"] = op.name if family is None else f"{_clean_tag(family)}/{op.name}"
    out = op.outputs[0]
    for key in collections if collections is not None else [SUMMARIES]:
        g.add_to_collection(key, out)
    return out


def _encode_scalar(tag, value):
    if value.shape != ():
        raise InvalidArgumentError(f"tags and values not the same shape: [] != "
                                   f"{list(value.shape)} (tag '{tag}')")
    if value.dtype.kind not in "fiub":
        raise InvalidArgumentError(f"scalar summary '{tag}': a real number is needed, got "
                                   f"{value.dtype}")
    return Summary([_Value(tag=tag, simple_value=np.float32(value))]).SerializeToString()


def scalar(name, tensor, collections=None, family=None):
    """A ``Summary`` with one scalar ``simple_value`` tagged by the name-scoped ``name``.

    Raises:
      InvalidArgumentError: when it runs, ``tensor`` is not a scalar."""
    return _summary_op("ScalarSummary", name, [tensor], _encode_scalar, collections, family)


def _encode_histogram(tag, values):
    if values.dtype.kind not in "fiub":
        raise InvalidArgumentError(f"histogram summary '{tag}': real numbers are needed, got "
                                   f"{values.dtype}")
    if values.size and not np.all(np.isfinite(values.astype(np.float64))):
        raise InvalidArgumentError(f"Nan in summary histogram for: {tag}")
    return Summary([_Value(tag=tag, histo=_histogram_proto(values))]).SerializeToString()


def histogram(name, values, collections=None, family=None):
    """A ``Summary`` with a histogram of ``values`` in TensorFlow's buckets.

    Raises:
      InvalidArgumentError: when it runs, ``values`` holds a NaN or an infinity (TF's
        message)."""
    return _summary_op("HistogramSummary", name, [values], _encode_histogram, collections,
                       family)


def text(name, tensor, collections=None):
    """A ``Summary`` holding the string(s) ``tensor`` for TensorBoard's text plugin."""
    def encode(tag, value):
        strings = np.asarray(value, dtype=object)
        meta = _events.summary_metadata("text")
        return _events.encode_summary_value(tag, _events.tensor_proto(strings), meta)
    if isinstance(tensor, (str, bytes)):
        tensor = np.asarray(tensor, dtype=object)
    return _summary_op("TensorSummaryV2", name, [tensor], encode, collections, None)


def _merge_bytes(*parts):
    seen = set()
    for part in parts:
        for v in Summary.FromString(bytes(part)).value:
            if v.tag in seen:
                raise InvalidArgumentError(f"Duplicate tag {v.tag} found in summary inputs")
            seen.add(v.tag)
    return b"".join(bytes(p) for p in parts)


def merge(inputs, collections=None, name=None):
    """One ``Summary`` holding the values of every summary in ``inputs``.

    Raises:
      InvalidArgumentError: when it runs, two inputs share a tag (TF's message)."""
    from ... import graph as _graph

    inputs = list(inputs)
    if not _graph.core.building():
        return _merge_bytes(*[_array(x).item() if not isinstance(x, bytes) else x
                              for x in inputs])
    g = _graph.get_default_graph()
    op = _graph.core.add_node(g, "MergeSummary", name or "Merge/MergeSummary", inputs,
                              lambda *parts: _merge_bytes(*parts), [(object, [])])
    for key in collections or []:
        g.add_to_collection(key, op.outputs[0])
    return op.outputs[0]


def merge_all(key=SUMMARIES, scope=None, name=None):
    """``merge`` of every summary in the graph's ``key`` collection (matching ``scope``), or
    None when there is none."""
    from ... import graph as _graph

    found = _graph.get_default_graph().get_collection(key, scope)
    return merge(found, name=name) if found else None


# ---- writing -----------------------------------------------------------------------------
class FileWriter:
    """Writes ``Summary`` protocol buffers to an event file in ``logdir`` (TF 1.15's
    ``tf.summary.FileWriter``); ``graph``/``graph_def`` are accepted and not written.

    Raises:
      RuntimeError: made while executing eagerly (TF's message)."""

    def __init__(self, logdir, graph=None, max_queue=10, flush_secs=120, graph_def=None,
                 filename_suffix=None, session=None):
        from ...compat import behavior

        if behavior.executing_eagerly():
            raise RuntimeError("tf.summary.FileWriter is not compatible with eager execution. "
                               "Use tf.contrib.summary instead.")
        self._logdir = str(logdir)
        self._settings = (int(max_queue), int(flush_secs * 1000), filename_suffix or "")
        self._file = _events.EventFile(self._logdir, *self._settings)
        self._closed = False

    def get_logdir(self) -> str:
        return self._logdir

    def add_summary(self, summary, global_step=None) -> None:
        """Write ``summary`` (a ``Summary`` or its serialised bytes, as ``Session.run``
        returns them) at step ``global_step``."""
        if isinstance(summary, Summary):
            summary = summary.SerializeToString()
        elif hasattr(summary, "tobytes") and not isinstance(summary, bytes):
            summary = _array(summary).item()
        step = 0 if global_step is None else int(_array(global_step))
        self._write(_events.encode_event(time.time(), step, summary=bytes(summary)))

    def add_event(self, event) -> None:
        """Write a serialised ``Event``."""
        self._write(bytes(event))

    def add_graph(self, graph, global_step=None, graph_def=None) -> None:
        """Accepted: ipu_gpu's graphs have no ``GraphDef`` to write."""

    def add_meta_graph(self, meta_graph_def, global_step=None) -> None:
        """Accepted: nothing to write (no ``MetaGraphDef``)."""

    def add_session_log(self, session_log, global_step=None) -> None:
        """Accepted: session logs are not written."""

    def add_run_metadata(self, run_metadata, tag, global_step=None) -> None:
        """Accepted: ipu_gpu has no run metadata."""

    def _write(self, event: bytes) -> None:
        if self._closed:
            return  # TF drops events written after close()
        self._file.add(event)

    def flush(self) -> None:
        if not self._closed:
            self._file.flush()

    def close(self) -> None:
        if not self._closed:
            self._file.close()
            self._closed = True

    def reopen(self) -> None:
        """Open a new event file in the same directory after ``close``."""
        if self._closed:
            self._file = _events.EventFile(self._logdir, *self._settings)
            self._closed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class FileWriterCache:
    """One ``FileWriter`` per log directory (``get``), dropped by ``clear``."""

    _cache: dict = {}

    @staticmethod
    def get(logdir) -> FileWriter:
        writer = FileWriterCache._cache.get(str(logdir))
        if writer is None:
            writer = FileWriterCache._cache[str(logdir)] = FileWriter(logdir)
        return writer

    @staticmethod
    def clear() -> None:
        for writer in FileWriterCache._cache.values():
            writer.close()
        FileWriterCache._cache.clear()


from .summary_image import image  # noqa: E402  (E2: tf.summary.image in TF 1)
