"""``tf.summary``: TensorBoard summaries written to event files (TF2 API).

``create_file_writer(logdir)`` opens an event file in ``logdir`` (``summary/events.py``: the
TFRecord framing of ``Event`` protocol buffers, written here without TensorFlow, TensorBoard
or protobuf). ``scalar``, ``histogram`` and ``text`` write the tensors and metadata
TensorBoard's own summary ops write (plugins ``scalars``, ``histograms`` with TensorBoard's
bucketing, ``text``), so TensorBoard's dashboards and ``tf.compat.v1.train.summary_iterator``
read them; ``write`` writes any tensor under a tag.

As in TensorFlow, the default writer, the default step (``experimental.set_step``) and the
recording condition (``record_if``) belong to the thread that set them, a summary op without
a default writer returns False, and one with a writer but no step raises ValueError. Ops
return a bool Tensor: whether they wrote. ``as_default`` flushes the writer when it exits;
events are also written every ``max_queue`` events or ``flush_millis``, and at exit.

Not provided: ``image``, ``audio``, ``graph`` (no graphs exist to write); ``trace_on``,
``trace_off`` and ``trace_export`` are accepted and write nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import types

import numpy as np

from ..core.convert import constant
from ..core.tensor import Tensor
from . import events as _events

__all__ = ["SummaryWriter", "create_file_writer", "create_noop_writer", "experimental",
           "flush", "histogram", "image", "record_if", "scalar", "should_record_summaries", "text",
           "trace_export", "trace_off", "trace_on", "write"]

atexit.register(_events.flush_all)


class _State(threading.local):
    def __init__(self):
        self.writer = None
        self.step = None
        self.is_recording = None  # None: always; else a bool or a callable


_STATE = _State()


# ---- writers --------------------------------------------------------------------------------


class SummaryWriter:
    """Interface representing a stateful summary writer object
    (``tf.summary.SummaryWriter``)."""

    def set_as_default(self, step=None) -> None:
        """Enables this summary writer for the current thread (and sets the default step
        when ``step`` is given)."""
        self._check_open()
        _STATE.writer = self
        if step is not None:
            _STATE.step = step

    @contextlib.contextmanager
    def as_default(self, step=None):
        """Returns a context manager that enables summary writing with this writer (and
        ``step`` as the default step); the writer is flushed when it exits."""
        self._check_open()
        old_writer, old_step = _STATE.writer, _STATE.step
        _STATE.writer = self
        if step is not None:
            _STATE.step = step
        try:
            yield self
        finally:
            _STATE.writer = old_writer
            if step is not None:
                _STATE.step = old_step
            self.flush()

    def init(self) -> None:
        """Initializes the summary writer (nothing to do: it is open once made)."""

    def flush(self) -> None:
        """Flushes any buffered data."""

    def close(self) -> None:
        """Flushes and closes the summary writer."""

    def _check_open(self) -> None:
        pass

    def _write(self, step: int, summary: bytes) -> bool:
        return False


class _FileWriter(SummaryWriter):
    """A SummaryWriter writing one event file (``create_file_writer``)."""

    def __init__(self, logdir, max_queue, flush_millis, filename_suffix):
        self._file = _events.EventFile(logdir, max_queue, flush_millis, filename_suffix)
        self._lock = threading.Lock()

    @property
    def path(self) -> str:
        """The event file's path."""
        return self._file.path

    def _check_open(self) -> None:
        if self._file.closed:
            raise RuntimeError(f"SummaryWriter {self!r} is already closed")

    def _write(self, step: int, summary: bytes) -> bool:
        self._check_open()
        self._file.add(_events.encode_event(time.time(), step, summary=summary))
        return True

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __repr__(self) -> str:
        return f"<ipu_gpu.summary.SummaryWriter {self._file.path!r}>"


class _NoopSummaryWriter(SummaryWriter):
    """A writer that writes nothing (``create_noop_writer``)."""


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None,
                       name=None, experimental_trackable=False, experimental_mesh=None):
    """Creates a summary file writer for the given log directory.

    Args:
      logdir: a string (or path): the directory, created if missing.
      max_queue: the largest number of summaries to keep in a queue before writing them
        (default 10).
      flush_millis: the largest interval between writes, in milliseconds (default 120000).
      filename_suffix: the event file name's suffix (default ``.v2``).
      name, experimental_trackable, experimental_mesh: accepted.

    Returns:
      A SummaryWriter.

    Raises:
      ValueError: ``logdir`` is None.
    """
    if logdir is None:
        raise ValueError("Argument `logdir` cannot be None")
    if isinstance(logdir, Tensor):
        logdir = np.asarray(logdir).reshape(()).item()  # a string tensor's bytes
    if isinstance(logdir, bytes):
        logdir = logdir.decode()
    return _FileWriter(os.fspath(logdir), 10 if max_queue is None else max_queue,
                       120000 if flush_millis is None else flush_millis,
                       ".v2" if filename_suffix is None else filename_suffix)


def create_noop_writer() -> SummaryWriter:
    """Returns a summary writer that does nothing."""
    return _NoopSummaryWriter()


def flush(writer=None, name=None) -> None:
    """Forces summary writer to send any buffered data to storage (the default writer when
    ``writer`` is None)."""
    writer = _STATE.writer if writer is None else writer
    if writer is not None:
        writer.flush()


# ---- steps and recording ----------------------------------------------------------------


def get_step():
    """Returns the default summary step for the current thread (None if unset)."""
    return _STATE.step


def set_step(step) -> None:
    """Sets the default summary step for the current thread (an int, a Tensor or a
    Variable such as ``optimizer.iterations``, read when a summary is written)."""
    _STATE.step = step


@contextlib.contextmanager
def record_if(condition):
    """Sets summary recording on or off per the provided boolean value (a bool, a bool
    Tensor or a callable returning one, evaluated when a summary is written)."""
    old = _STATE.is_recording
    _STATE.is_recording = condition
    try:
        yield
    finally:
        _STATE.is_recording = old


def _recording() -> bool:
    writer = _STATE.writer
    if writer is None or isinstance(writer, _NoopSummaryWriter):
        return False
    condition = _STATE.is_recording
    if condition is None:
        return True
    if callable(condition):
        condition = condition()
    return bool(np.asarray(condition))


def should_record_summaries():
    """Returns a bool Tensor: whether summary ops would write now (a default writer exists
    and ``record_if`` allows it)."""
    return constant(_recording())


def _step_value(step) -> int:
    if step is None:
        step = _STATE.step
    if step is None:
        raise ValueError("No step set. Please specify one either through the `step` argument "
                         "or through tf.summary.experimental.set_step()")
    return int(np.asarray(step))


def _metadata_bytes(metadata) -> bytes:
    if metadata is None:
        return b""
    if isinstance(metadata, (bytes, bytearray)):
        return bytes(metadata)
    serialize = getattr(metadata, "SerializeToString", None)
    if serialize is None:
        raise TypeError(f"summary.write: metadata must be a SummaryMetadata protocol buffer "
                        f"or its serialised bytes, got {type(metadata).__name__}")
    return serialize()


def _as_array(value) -> np.ndarray:
    if isinstance(value, Tensor):
        return np.array(value)  # syncs device; a scalar string stays a 0-d array
    if isinstance(value, (str, bytes)):
        return np.array(value, dtype=object)
    a = np.asarray(value)
    if a.dtype.kind == "f" and not isinstance(value, np.ndarray) and a.dtype == np.float64 \
            and not isinstance(value, np.generic):
        a = a.astype(np.float32)  # a Python float is float32, as convert_to_tensor makes it
    elif a.dtype == np.int64 and not isinstance(value, (np.ndarray, np.generic)):
        a = a.astype(np.int32)
    return a


def write(tag, tensor, step=None, metadata=None, name=None):
    """Writes a generic summary to the default SummaryWriter if one exists.

    Args:
      tag: the summary's tag.
      tensor: a Tensor, an array, a Python value or a string (or a callable returning one,
        called only when the summary is written).
      step: the int64-castable step; defaults to ``experimental.get_step()``.
      metadata: a ``SummaryMetadata`` protocol buffer or its serialised bytes.
      name: ignored.

    Returns:
      A bool Tensor: True when written, False with no default writer or recording off.

    Raises:
      ValueError: a default writer exists, but no step was provided and
        ``experimental.get_step()`` is None.
    """
    if not _recording():
        return constant(False)
    step = _step_value(step)
    value = tensor() if callable(tensor) else tensor
    summary = _events.encode_summary_value(str(tag), _events.tensor_proto(_as_array(value)),
                                           _metadata_bytes(metadata))
    return constant(_STATE.writer._write(step, summary))


# ---- the plugins' summaries ---------------------------------------------------------------


def scalar(name, data, step=None, description=None):
    """Write a scalar summary (TensorBoard's ``scalars`` plugin; the value as float32).

    Returns:
      A bool Tensor: True on success, False when no summary was written.

    Raises:
      ValueError: ``data`` is not a scalar; a default writer exists but no step is set.
    """
    if not _recording():
        return constant(False)
    a = np.asarray(_as_array(data), dtype=np.float32)
    if a.ndim != 0:
        raise ValueError(f"Expected scalar shape, saw shape: {tuple(a.shape)}.")
    metadata = _events.summary_metadata("scalars", display_name="", description=description,
                                        data_class=_events.DATA_CLASS_SCALAR)
    return write(name, a, step=step, metadata=metadata)


DEFAULT_BUCKET_COUNT = 30


def _buckets(data: np.ndarray, bucket_count: int) -> np.ndarray:
    """TensorBoard's histogram buckets, ``[k, 3]`` float64 rows of (left edge, right edge,
    count): ``bucket_count`` equal-width buckets from min to max (the last one closed); all
    points equal: every edge at the value, all counts in the last bucket; no data (or no
    buckets): zeros of shape ``[bucket_count, 3]``."""
    bucket_count = max(0, bucket_count)
    data = data.reshape(-1).astype(np.float64)
    if data.size == 0 or bucket_count == 0:
        return np.zeros((bucket_count, 3), np.float64)
    lo, hi = data.min(), data.max()
    span = hi - lo
    if span == 0:
        edges = np.full(bucket_count, hi)
        counts = np.zeros(bucket_count)
        counts[-1] = data.size
        return np.stack([edges, edges, counts], axis=1)
    width = span / bucket_count
    with np.errstate(invalid="ignore"):
        index = np.floor((data - lo) / width).astype(np.int32)
    index = np.minimum(index, bucket_count - 1)
    counts = np.bincount(index[(index >= 0)], minlength=bucket_count)[:bucket_count]
    edges = lo + (span / bucket_count) * np.arange(bucket_count + 1, dtype=np.float64)
    edges[-1] = hi
    return np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)


def histogram(name, data, step=None, buckets=None, description=None):
    """Write a histogram summary (TensorBoard's ``histograms`` plugin), computed over all
    elements of ``data`` in float64 with ``buckets`` buckets (default 30).

    Returns:
      A bool Tensor: True on success, False when no summary was written.

    Raises:
      ValueError: a default writer exists but no step is set.
    """
    if not _recording():
        return constant(False)
    metadata = _events.summary_metadata("histograms", description=description,
                                        data_class=_events.DATA_CLASS_TENSOR)
    count = DEFAULT_BUCKET_COUNT if buckets is None else int(buckets)
    return write(name, lambda: _buckets(_as_array(data), count), step=step, metadata=metadata)


def image(name, data, step=None, max_outputs=3, description=None):
    """Write an image summary (TensorBoard's ``images`` plugin): the first ``max_outputs``
    images of the ``[k, height, width, channels]`` batch ``data`` (1 to 4 channels), converted
    to uint8 as ``tf.image.convert_image_dtype(data, uint8, saturate=True)`` and stored as PNG
    files after the width and height strings.

    Returns:
      A bool Tensor: True on success, False when no summary was written.

    Raises:
      ValueError: ``data`` is not of rank 4; a default writer exists but no step is set.
      InvalidArgumentError: ``max_outputs`` is negative; ``data`` has another channel count.
    """
    if not _recording():
        return constant(False)
    from ..errors import InvalidArgumentError
    from ..image import convert_image_dtype
    from .png import encode_png

    a = _as_array(data)
    if a.ndim != 4:
        raise ValueError(f"Tensor  must have rank 4.  Received rank {a.ndim}, shape "
                         f"{tuple(a.shape)}")
    if int(max_outputs) < 0:
        raise InvalidArgumentError("Condition x >= 0 did not hold element-wise: "
                                   f"max_outputs = {int(max_outputs)}")
    if not 1 <= a.shape[3] <= 4:
        raise InvalidArgumentError("image must have 1, 2, 3, or 4 channels, got "
                                   f"{a.shape[3]}")
    metadata = _events.summary_metadata("images", description=description,
                                        data_class=_events.DATA_CLASS_BLOB_SEQUENCE)

    def blobs():
        images = np.asarray(convert_image_dtype(a, "uint8", saturate=True))
        pngs = [encode_png(im) for im in images[:int(max_outputs)]]
        return np.array([str(a.shape[2]), str(a.shape[1]), *pngs], dtype=object)
    return write(name, blobs, step=step, metadata=metadata)


def text(name, data, step=None, description=None):
    """Write a text summary (TensorBoard's ``text`` plugin): ``data`` is a string or an
    array/list of strings (Markdown is rendered).

    Raises:
      TypeError: ``data`` does not hold strings.
      ValueError: a default writer exists but no step is set.
    """
    if not _recording():
        return constant(False)
    a = _as_array(data) if not isinstance(data, (list, tuple)) else np.array(data, dtype=object)
    if not _events.is_string_array(a) or not all(isinstance(s, (str, bytes))
                                                for s in a.reshape(-1)):
        raise TypeError(f"summary.text: data must be a string or strings, got {a.dtype}")
    metadata = _events.summary_metadata("text", description=description,
                                        data_class=_events.DATA_CLASS_TENSOR)
    return write(name, a.astype(object), step=step, metadata=metadata)


def trace_on(graph=True, profiler=False, profiler_outdir=None) -> None:
    """Starts a trace to record computation graphs and profiling information (accepted;
    eager execution records no graph)."""


def trace_off() -> None:
    """Stops the current trace (nothing to stop)."""


def trace_export(name, step=None, profiler_outdir=None) -> None:
    """Writes the collected trace (there is none: nothing is written)."""


experimental = types.SimpleNamespace(get_step=get_step, set_step=set_step)
