"""loops.repeat replayed from a CUDA graph (emulation/graph_replay.py): which path a loop
takes and why, and on a GPU the same numbers, bit for bit, as the loop run eagerly.

The CPU tests check the decisions and the recorder (core/capture.py); the gpu-marked ones
run the captured path on a device against ``IPU_GPU_LOOP_GRAPHS=0``.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compile_on_ipu, configure_ipus, require_gpu

import ipu_gpu as tf
from ipu_gpu.core import capture
from ipu_gpu.emulation import graph_replay
from ipu_gpu.ipu import ipu_infeed_queue, ipu_outfeed_queue, loops

pytestmark = pytest.mark.usefixtures("fresh_ipu_system")


# ---- decisions and the recorder (any machine) ------------------------------------------------

def test_host_loop_is_not_captured_and_says_why():
    out = loops.repeat(3, lambda x: x + 1.0, [0.0])
    assert float(out) == 3.0
    report = graph_replay.last_loop()
    assert report.iterations == 3 and not report.captured
    assert "not inside an IPU program" in report.reason


def test_cpu_executor_loop_is_not_captured():
    tf.set_backend("cpu")
    configure_ipus(1)
    reports = []

    def program():
        out = loops.repeat(4, lambda x: x * 2.0, [1.0])
        reports.append(graph_replay.last_loop())
        return out
    assert float(compile_on_ipu(program)[0]) == 16.0
    assert reports[0].reason == "the IPU runs on a CPU executor"


def test_switch_off_is_reported(monkeypatch):
    monkeypatch.setenv("IPU_GPU_LOOP_GRAPHS", "0")
    loops.repeat(2, lambda x: x, [1.0])
    assert graph_replay.last_loop().reason == "IPU_GPU_LOOP_GRAPHS=0"
    assert not graph_replay.enabled()
    monkeypatch.setenv("IPU_GPU_LOOP_GRAPHS", "1")
    assert graph_replay.enabled()


def test_recorder_notes_refusals_and_variable_writes():
    v = tf.Variable(np.ones(3, np.float32))
    before = v._value
    with capture.recording() as rec:
        v.assign_add(np.ones(3, np.float32))
        v.assign(np.zeros(3, np.float32))
        capture.refuse("a reason")
        assert not capture.capturing()
    assert rec.refusals == ["a reason"]
    assert list(rec.writes.values()) == [(v, before)]  # the buffer before the first write
    rec.restore_variables()
    assert v._value is before
    capture.refuse("nobody records: nothing happens")


def test_refusal_raises_while_capturing():
    with capture.recording(True) as rec:
        assert capture.capturing()
        with pytest.raises(capture.CaptureRefused, match="^why$"):
            capture.refuse("why")
    assert rec.refusals == ["why"] and not capture.capturing()


def test_random_ops_and_outfeeds_refuse():
    with capture.recording() as rec:
        tf.random.uniform([2])
    assert "random" in rec.refusals[0]
    q = ipu_outfeed_queue.IPUOutfeedQueue()
    with capture.recording() as rec:
        q.enqueue(tf.constant(1.0))
    assert "outfeed" in rec.refusals[0]


# ---- the captured path on a GPU --------------------------------------------------------------

def _on_gpu_ipus(n=1):
    require_gpu()
    tf.set_backend("gpu")
    configure_ipus(n)


def _both_ways(monkeypatch, build):
    """(captured result, its report, eager result): ``build()`` makes fresh state and returns
    a function of no arguments that runs the program and returns numpy arrays."""
    results = []
    for graphs in ("1", "0"):
        monkeypatch.setenv("IPU_GPU_LOOP_GRAPHS", graphs)
        run = build()
        reports = []

        def program(run=run, reports=reports):
            out = run()
            reports.append(graph_replay.last_loop())
            return out
        results.append((compile_on_ipu(program), reports[0]))
    (captured, report), (eager, eager_report) = results
    assert eager_report.reason == "IPU_GPU_LOOP_GRAPHS=0"
    return captured, report, eager


def _assert_bitwise(a, b):
    for x, y in zip(a, b):
        x, y = np.atleast_1d(np.asarray(x)), np.atleast_1d(np.asarray(y))
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.mark.gpu
def test_training_loop_is_captured_and_bitwise_equal(monkeypatch):
    _on_gpu_ipus()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    y = rng.integers(0, 10, 64).astype(np.int32)
    w1_0 = rng.standard_normal((32, 48)).astype(np.float32) * 0.2
    w2_0 = rng.standard_normal((48, 10)).astype(np.float32) * 0.2

    def build():
        w1, w2 = tf.Variable(tf.constant(w1_0)), tf.Variable(tf.constant(w2_0))
        b1 = tf.Variable(tf.zeros([48]))
        xs, ys = tf.constant(x), tf.constant(y)

        def body(total):
            with tf.GradientTape() as tape:
                h = tf.nn.relu(tf.matmul(xs, w1) + b1)
                logits = tf.matmul(h, w2)
                loss = tf.reduce_mean(
                    tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ys, logits=logits))
            grads = tape.gradient(loss, [w1, b1, w2])
            for v, g in zip((w1, b1, w2), grads):
                v.assign_sub(0.1 * g)
            return total + loss

        def run():
            total = loops.repeat(20, body, [tf.constant(0.0)])
            return [total.numpy(), w1.numpy(), b1.numpy(), w2.numpy()]
        return run

    captured, report, eager = _both_ways(monkeypatch, build)
    assert report.captured, report.reason
    _assert_bitwise(captured, eager)
    assert float(captured[0]) > 0 and np.isfinite(captured[1]).all()


@pytest.mark.gpu
def test_swapped_values_and_infeed_elements(monkeypatch):
    _on_gpu_ipus()
    data = [np.full((4,), i, np.float32) for i in range(12)]

    class Data:
        def __iter__(self):
            return iter(data)

    def build():
        q = ipu_infeed_queue.IPUInfeedQueue(Data())

        def run():
            a, b, s = loops.repeat(10, lambda a, b, s, e: (b, a, s + e * a),
                                   [tf.constant(1.0), tf.constant(2.0), tf.zeros([4])],
                                   infeed_queue=q)
            return [a.numpy(), b.numpy(), s.numpy()]
        return run

    captured, report, eager = _both_ways(monkeypatch, build)
    assert report.captured, report.reason
    _assert_bitwise(captured, eager)
    expected = sum(i * (1.0 if i % 2 == 0 else 2.0) for i in range(10))
    assert float(captured[2][0]) == expected


@pytest.mark.gpu
@pytest.mark.parametrize("what", ["random", "host_read", "outfeed", "conv"])
def test_bodies_a_replay_cannot_repeat_run_eagerly(monkeypatch, what):
    _on_gpu_ipus()
    x0 = np.ones((1, 6, 6, 2), np.float32)
    k = np.full((3, 3, 2, 2), 0.1, np.float32)

    def build():
        tf.random.set_seed(3)
        q = ipu_outfeed_queue.IPUOutfeedQueue()

        def body(x):
            if what == "random":
                return x + tf.random.uniform([1, 6, 6, 2], seed=1)
            if what == "host_read":
                return x * (2.0 if float(tf.reduce_sum(x)) > 0 else 1.0)
            if what == "outfeed":
                return x + 1.0, q.enqueue(x)
            return tf.nn.conv2d(x, tf.constant(k), 1, "SAME")

        def run():
            return [loops.repeat(5, body, [tf.constant(x0)]).numpy()]
        return run

    captured, report, eager = _both_ways(monkeypatch, build)
    if what == "conv":  # cupy's cuDNN/cuBLAS calls refuse a capturing stream, if they still do
        assert report.captured or "capture failed" in report.reason, report.reason
    else:
        expected = {"random": "random", "host_read": "host read", "outfeed": "outfeed"}[what]
        assert not report.captured and expected in report.reason, report.reason
    if what != "random":  # each run draws from its own program's stream
        _assert_bitwise(captured, eager)


@pytest.mark.gpu
def test_replicas_capture_their_own_loops(monkeypatch):
    _on_gpu_ipus(4)
    from ipu_gpu.emulation import context

    def build():
        def run():
            r = float(context.current().replica_index)
            out = loops.repeat(50, lambda x: x * 0.5 + r, [tf.constant(np.zeros(8, np.float32))])
            return [out.numpy(), np.array(graph_replay.last_loop().captured)]
        return run

    captured, report, eager = _both_ways(monkeypatch, build)
    assert report.captured and bool(captured[1])
    _assert_bitwise(captured[:1], eager[:1])
