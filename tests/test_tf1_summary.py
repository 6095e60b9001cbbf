"""TF1's tf.summary (tf.compat.v1.summary): serialised Summary protocol buffers from graph
ops, merge/merge_all, the Summary message, FileWriter event files; against real TF 1-style
graph mode where it can run."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1
from ipu_gpu.errors import InvalidArgumentError


def _values():
    g = np.random.default_rng(0)
    return np.concatenate([g.standard_normal(50) * 3, [0.0, 0.0, 1e-13, -5e3, 7.0]]).astype(
        np.float32)


def _ours(loss, hist):
    g = v1.Graph()
    with g.as_default():
        p = v1.placeholder(tf.float32, [])
        h = v1.placeholder(tf.float32, [None])
        with v1.name_scope("train"):
            v1.summary.scalar("loss", p)
            v1.summary.scalar("loss", p * 2.0)
        v1.summary.histogram("weights", h, family="layer1")
        merged = v1.summary.merge_all()
        with v1.Session() as sess:
            return sess.run(merged, {p: loss, h: hist})


def _theirs(tf_real, loss, hist):
    c = tf_real.compat.v1
    g = tf_real.Graph()
    with g.as_default():
        p = c.placeholder(tf_real.float32, [])
        h = c.placeholder(tf_real.float32, [None])
        with tf_real.name_scope("train"):
            c.summary.scalar("loss", p)
            c.summary.scalar("loss", p * 2.0)
        c.summary.histogram("weights", h, family="layer1")
        merged = c.summary.merge_all()
        with c.Session(graph=g) as sess:
            return sess.run(merged, {p: loss, h: hist})


def test_merged_summary_bytes_equal_tensorflows(real_tf):
    hist = _values()
    ours, theirs = _ours(0.25, hist), _theirs(real_tf, 0.25, hist)
    assert isinstance(ours, bytes)
    parsed = real_tf.compat.v1.Summary.FromString(ours)
    assert [v.tag for v in parsed.value] == ["train/loss", "train/loss_1", "layer1/layer1/weights"]
    assert parsed == real_tf.compat.v1.Summary.FromString(theirs)
    assert ours == theirs


def test_histogram_against_numpy():
    hist = _values()
    h = v1.Summary.FromString(_ours(1.0, hist)).value[2].histo
    x = hist.astype(np.float64)
    assert (h.min, h.max, h.num) == (x.min(), x.max(), x.size)
    np.testing.assert_allclose([h.sum, h.sum_squares], [x.sum(), (x * x).sum()], rtol=1e-12)
    assert sum(h.bucket) == x.size
    assert h.bucket_limit == sorted(h.bucket_limit)
    edges = [-np.inf, *h.bucket_limit]
    for lo, hi, count in zip(edges, edges[1:], h.bucket):
        assert count == np.sum((x >= lo) & (x < hi))


def test_summary_message_round_trip_and_hand_built_summaries(tmp_path, real_tf):
    s = v1.Summary(value=[v1.Summary.Value(tag="acc", simple_value=0.0),
                          v1.Summary.Value(tag="lr", simple_value=0.125)])
    data = s.SerializeToString()
    assert v1.Summary.FromString(data) == s
    theirs = real_tf.compat.v1.Summary(value=[
        real_tf.compat.v1.Summary.Value(tag="acc", simple_value=0.0),
        real_tf.compat.v1.Summary.Value(tag="lr", simple_value=0.125)])
    assert data == theirs.SerializeToString()
    g = v1.Graph()
    with g.as_default():
        writer = v1.summary.FileWriter(str(tmp_path), g)
        writer.add_summary(s, global_step=7)
        writer.add_summary(_ours(0.5, _values()), 8)
        writer.flush()
        writer.close()
        writer.add_summary(s, 9)  # dropped after close, as TF
    (path,) = tmp_path.iterdir()
    events = list(real_tf.compat.v1.train.summary_iterator(str(path)))
    assert events[0].file_version == "brain.Event:2"
    assert [e.step for e in events[1:]] == [7, 8]
    assert [v.tag for v in events[1].summary.value] == ["acc", "lr"]
    assert events[2].summary.value[0].simple_value == 0.5


def test_errors_and_empty_merge(tmp_path):
    g = v1.Graph()
    with g.as_default():
        assert v1.summary.merge_all() is None
        vec = v1.placeholder(tf.float32, [None])
        bad = v1.summary.scalar("v", vec)
        nan = v1.summary.histogram("h", vec)
        dup = v1.summary.merge([v1.summary.scalar("a", 1.0, collections=[]),
                                v1.summary.scalar("a", 2.0, collections=[])])
        with v1.Session() as sess:
            with pytest.raises(InvalidArgumentError, match=r"not the same shape: \[\] != \[2\]"):
                sess.run(bad, {vec: np.ones(2, np.float32)})
            with pytest.raises(InvalidArgumentError, match="Nan in summary histogram for: h"):
                sess.run(nan, {vec: np.array([1.0, np.nan], np.float32)})
            assert sess.run(dup) is not None  # "a" and "a_1": distinct tags
    with pytest.raises(InvalidArgumentError, match="Duplicate tag a found"):
        v1.summary.merge([v1.Summary([v1.Summary.Value(tag="a", simple_value=1.0)])
                          .SerializeToString()] * 2)
    with pytest.raises(RuntimeError, match="not compatible with eager execution"):
        v1.summary.FileWriter(str(tmp_path))


def test_executing_eagerly():
    assert tf.executing_eagerly()
    with v1.Graph().as_default():
        assert not tf.executing_eagerly()
        assert not v1.executing_eagerly()
    assert tf.executing_eagerly()


def test_tf1_program_writes_summaries_through_ipu_gpu_run(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    prog = tmp_path / "summaries.py"
    prog.write_text(
        "import numpy as np\nimport tensorflow as tf\n"
        "x = tf.placeholder(tf.float32, [None, 3])\n"
        "w = tf.get_variable('w', [3, 1], initializer=tf.zeros_initializer())\n"
        "loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))\n"
        "train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)\n"
        "tf.summary.scalar('loss', loss)\n"
        "tf.summary.histogram('w', w)\n"
        "merged = tf.summary.merge_all()\n"
        "with tf.Session() as sess:\n"
        "    writer = tf.summary.FileWriter('logs', sess.graph)\n"
        "    sess.run(tf.global_variables_initializer())\n"
        "    for step in range(5):\n"
        "        s, _ = sess.run([merged, train], {x: np.ones((4, 3), np.float32)})\n"
        "        writer.add_summary(s, step)\n"
        "    writer.close()\n"
        "print(len(tf.Summary.FromString(s).value))\n")
    root = str(Path(__file__).resolve().parents[1])
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", str(prog)], cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": root}, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2"]
    assert len(list((tmp_path / "logs").iterdir())) == 1
