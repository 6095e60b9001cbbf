"""tf.summary: event files read back by real TensorFlow's summary_iterator (record checksums
included), compared with the events TF's own summary.write makes, TensorBoard's histogram
bucketing re-run with TF ops, and the writer/step/record_if semantics."""

from __future__ import annotations

import glob
import os
import re
import socket
import threading
from pathlib import Path

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import summary


def _events(real_tf, logdir):
    (path,) = glob.glob(os.path.join(str(logdir), "events.out.tfevents.*"))
    return list(real_tf.compat.v1.train.summary_iterator(path))


def _values(real_tf, logdir):
    """(step, tag, plugin, data_class, value) of every summary value in the file."""
    out = []
    for e in _events(real_tf, logdir)[1:]:
        for v in e.summary.value:
            out.append((e.step, v.tag, v.metadata.plugin_data.plugin_name,
                        v.metadata.data_class, real_tf.make_ndarray(v.tensor)))
    return out


def test_file_header_and_name(real_tf, tmp_path):
    w = summary.create_file_writer(str(tmp_path))
    w.close()
    (name,) = os.listdir(tmp_path)
    assert re.fullmatch(rf"events\.out\.tfevents\.\d+\.{re.escape(socket.gethostname())}\."
                        rf"{os.getpid()}\.\d+\.v2", name)
    (header,) = _events(real_tf, tmp_path)
    assert header.file_version == "brain.Event:2"
    assert header.source_metadata.writer == "tensorflow.core.util.events_writer"
    w2 = summary.create_file_writer(tmp_path / "sub", filename_suffix=".foo")
    w2.close()
    assert os.listdir(tmp_path / "sub")[0].endswith(".foo")
    with pytest.raises(ValueError, match="Argument `logdir` cannot be None"):
        summary.create_file_writer(None)


def test_scalar_histogram_text_read_back(real_tf, tmp_path):
    w = summary.create_file_writer(str(tmp_path))
    with w.as_default(step=3):
        assert bool(summary.scalar("loss", tf.constant(0.5)))
        assert bool(summary.scalar("lr", 0.25, step=4, description="rate"))
        assert bool(summary.histogram("w", np.arange(10.0), step=5, buckets=3))
        assert bool(summary.text("note", "**hello**", step=6))
        assert bool(summary.text("table", ["a", "b"], step=7))
        assert bool(summary.write("raw", tf.constant([1, 2]), step=8))
    values = _values(real_tf, tmp_path)
    assert [(s, tag, plugin, dc) for s, tag, plugin, dc, _ in values] == [
        (3, "loss", "scalars", 1), (4, "lr", "scalars", 1), (5, "w", "histograms", 2),
        (6, "note", "text", 2), (7, "table", "text", 2), (8, "raw", "", 0)]
    assert values[0][4].dtype == np.float32 and values[0][4] == 0.5
    np.testing.assert_array_equal(values[2][4], [[0, 3, 3], [3, 6, 3], [6, 9, 4]])
    assert values[3][4] == b"**hello**"
    np.testing.assert_array_equal(values[4][4], [b"a", b"b"])
    np.testing.assert_array_equal(values[5][4], [1, 2])
    assert _events(real_tf, tmp_path)[2].summary.value[0].metadata.summary_description == "rate"


def test_write_matches_tf_summary_write(real_tf, tmp_path):
    """The events of write() equal those of TF's own tf.summary.write, wall time aside."""
    def emit(t, writer, step_fn):
        with writer.as_default(step=1):
            t.summary.write("x", 1.0)
            t.summary.write("y", step_fn([1, 2]), step=5)
            t.summary.write("s", "hello", step=6)
            t.summary.write("m", step_fn(np.arange(6.0).reshape(2, 3)), step=7)
            t.summary.write("h", step_fn(np.array([1.5], np.float16)), step=-2)
            t.summary.write("b", step_fn(np.array([True, False])), step=9)
        writer.close()

    emit(tf, summary.create_file_writer(str(tmp_path / "ours")), tf.constant)
    emit(real_tf, real_tf.summary.create_file_writer(str(tmp_path / "tf")), real_tf.constant)

    ours = _events(real_tf, tmp_path / "ours")
    theirs = _events(real_tf, tmp_path / "tf")
    assert len(ours) == len(theirs) == 7
    for a, b in zip(ours[1:], theirs[1:]):
        assert a.step == b.step
        assert a.summary == b.summary


def _tensorboard_buckets(t, data, bucket_count):
    """TensorBoard's histogram summary_v2 ``_buckets`` (TB >= 2.12), step by step in TF ops."""
    bucket_count = t.math.maximum(0, bucket_count)
    data = t.cast(t.reshape(data, shape=[-1]), t.float64)
    data_size = t.size(input=data)
    if bool(t.logical_or(t.equal(data_size, 0), t.less_equal(bucket_count, 0))):
        return t.zeros((bucket_count, 3), dtype=t.float64).numpy()
    min_, max_ = t.reduce_min(data), t.reduce_max(data)
    range_ = max_ - min_
    if bool(t.equal(range_, 0)):
        edges = t.fill([bucket_count], max_)
        zeroes = t.fill([bucket_count], 0)
        counts = t.cast(t.concat([zeroes[:-1], [data_size]], 0)[:bucket_count], t.float64)
        return t.transpose(t.stack([edges, edges, counts])).numpy()
    bucket_width = range_ / t.cast(bucket_count, t.float64)
    indices = t.cast(t.floor((data - min_) / bucket_width), dtype=t.int32)
    clamped = t.minimum(indices, bucket_count - 1)
    counts = t.cast(t.reduce_sum(t.one_hot(clamped, depth=bucket_count, dtype=t.float64),
                                 axis=0), t.float64)
    edges = t.linspace(min_, max_, bucket_count + 1)
    edges = t.concat([edges[:-1], [max_]], 0)
    return t.transpose(t.stack([edges[:-1], edges[1:], counts])).numpy()


@pytest.mark.parametrize("data, buckets", [
    (np.random.default_rng(0).normal(size=1000).astype(np.float32), 30),
    (np.random.default_rng(1).uniform(-3, 7, size=(20, 5)), 7),
    (np.array([2.0, 2.0, 2.0]), 4),
    (np.array([], np.float32), 30),
    (np.array([1.0, 2.0]), 0),
    (np.array([1.0, 2.0]), -3),
    (np.arange(100, dtype=np.int32), 10),
    (np.array([0.1, 0.2, 0.30000000000000004, 1e-300, 5e300]), 13),
])
def test_histogram_buckets_match_tensorboard(real_tf, data, buckets):
    want = _tensorboard_buckets(real_tf, real_tf.constant(data), buckets)
    got = summary._buckets(np.asarray(data), buckets)
    assert got.shape == want.shape and got.dtype == np.float64
    np.testing.assert_array_equal(got, want)


def test_steps_and_recording(tmp_path):
    assert not bool(summary.scalar("x", 1.0, step=1))  # no default writer
    assert not bool(summary.should_record_summaries())
    w = summary.create_file_writer(str(tmp_path))
    with w.as_default():
        assert bool(summary.should_record_summaries())
        with pytest.raises(ValueError, match="No step set. Please specify one either through "
                                             "the `step` argument or through "
                                             r"tf.summary.experimental.set_step\(\)"):
            summary.scalar("x", 1.0)
        with summary.record_if(False):
            assert not bool(summary.scalar("x", 1.0))  # off: not even the step is needed
            assert not bool(summary.should_record_summaries())
        with summary.record_if(lambda: tf.constant(False)):
            assert not bool(summary.histogram("h", [1.0], step=1))
        with summary.record_if(tf.constant(True)):
            assert bool(summary.scalar("x", 1.0, step=1))
        with pytest.raises(ValueError, match=r"Expected scalar shape, saw shape: \(2,\)"):
            summary.scalar("v", [1.0, 2.0], step=1)
        with pytest.raises(TypeError, match="summary.text: data must be a string"):
            summary.text("t", 3.0, step=1)
    assert summary.experimental.get_step() is None
    with w.as_default(step=7):
        assert summary.experimental.get_step() == 7
    assert summary.experimental.get_step() is None
    summary.experimental.set_step(tf.Variable(4, dtype=tf.int64))
    try:
        with w.as_default():
            assert bool(summary.scalar("x", 2.0))
    finally:
        summary.experimental.set_step(None)

    seen = []

    def other_thread():  # the default writer and step belong to the thread that set them
        seen.append((bool(summary.scalar("x", 1.0, step=1)),
                     summary.experimental.get_step()))

    w.set_as_default(step=3)
    try:
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    finally:
        summary._STATE.writer = None
        summary.experimental.set_step(None)
    assert seen == [(False, None)]
    w.close()
    with pytest.raises(RuntimeError, match="is already closed"):
        with w.as_default():
            pass
    noop = summary.create_noop_writer()
    with noop.as_default(step=1):
        assert not bool(summary.scalar("x", 1.0))


def test_queueing_and_flush(real_tf, tmp_path):
    w = summary.create_file_writer(str(tmp_path), max_queue=3, flush_millis=10**9)
    w.set_as_default(step=1)
    try:
        summary.scalar("a", 1.0)
        summary.scalar("b", 2.0)
        assert len(_events(real_tf, tmp_path)) == 1  # queued, not yet written
        summary.scalar("c", 3.0)  # the third fills the queue
        assert len(_events(real_tf, tmp_path)) == 4
        summary.scalar("d", 4.0)
        summary.flush()
        assert len(_events(real_tf, tmp_path)) == 5
        summary.scalar("e", 5.0)
    finally:
        summary._STATE.writer = None
    with w.as_default():  # leaving as_default flushes
        pass
    assert [v[1] for v in _values(real_tf, tmp_path)] == ["a", "b", "c", "d", "e"]
    w.close()


def test_corrupted_record_is_refused_by_tf(real_tf, tmp_path):
    w = summary.create_file_writer(str(tmp_path))
    with w.as_default(step=1):
        summary.scalar("x", 1.0)
    w.close()
    (path,) = glob.glob(str(tmp_path / "*"))
    data = bytearray(Path(path).read_bytes())
    data[-6] ^= 0xFF  # inside the last record's payload
    Path(path).write_bytes(bytes(data))
    with pytest.raises(real_tf.errors.DataLossError):
        list(real_tf.compat.v1.train.summary_iterator(path))


@pytest.mark.parametrize("dtype, channels", [("float32", 3), ("float32", 1), ("uint8", 4),
                                             ("float64", 2)])
def test_image_read_back_and_decoded_by_tensorflow(real_tf, tmp_path, dtype, channels):
    """tf.summary.image (TensorBoard is not installed, so TF cannot write one here): the blob
    sequence TensorBoard's images plugin reads, width and height then one PNG per image, which
    TF's own decoder turns back into TF's uint8 conversion of the data."""
    rng = np.random.default_rng(4)
    shape = (4, 3, 5, channels)
    data = (rng.integers(0, 256, shape).astype(np.uint8) if dtype == "uint8"
            else rng.uniform(-0.2, 1.2, shape).astype(dtype))  # outside [0, 1]: saturated
    w = summary.create_file_writer(str(tmp_path))
    with w.as_default():
        assert bool(summary.image("img", data, step=2, description="inputs"))
        assert bool(summary.image("one", data, step=3, max_outputs=1))
        assert bool(summary.image("none", data, step=4, max_outputs=0))
    (step, tag, plugin, data_class, blobs), one, none = _values(real_tf, tmp_path)
    assert (step, tag, plugin, data_class) == (2, "img", "images", 3)
    assert list(blobs[:2]) == [b"5", b"3"] and len(blobs) == 2 + 3
    want = real_tf.image.convert_image_dtype(data, real_tf.uint8, saturate=True).numpy()
    for k, png in enumerate(blobs[2:]):
        np.testing.assert_array_equal(real_tf.io.decode_png(png).numpy(),
                                      want[k])
    assert len(one[4]) == 3 and len(none[4]) == 2
    assert _events(real_tf, tmp_path)[1].summary.value[0].metadata.summary_description == \
        "inputs"


def test_image_errors(tmp_path):
    w = summary.create_file_writer(str(tmp_path))
    with w.as_default(step=0):
        with pytest.raises(ValueError, match="must have rank 4"):
            summary.image("x", np.zeros((3, 5, 3), np.float32))
        with pytest.raises(tf.errors.InvalidArgumentError, match="1, 2, 3, or 4 channels"):
            summary.image("x", np.zeros((1, 3, 5, 5), np.float32))
        with pytest.raises(tf.errors.InvalidArgumentError, match="x >= 0"):
            summary.image("x", np.zeros((1, 3, 5, 3), np.float32), max_outputs=-1)
    assert not bool(summary.image("x", np.zeros((1, 3, 5, 3), np.float32), step=0))
