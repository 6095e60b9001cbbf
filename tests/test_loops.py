"""loops.repeat / loops.while_loop: loop-carried values, infeed elements as arguments, the
documented errors, replicas, and the documented 18.4 example with the real feeds."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compile_on_ipu, configure_ipus

import ipu_gpu as tf
from ipu_gpu.emulation import context, engine
from ipu_gpu.ipu import loops


pytestmark = pytest.mark.usefixtures("fresh_ipu_system")


class FakeQueue:
    """The infeed interface loops use: ``_next_element()`` for the current replica
    (element step*R + r), raising when the data runs out."""

    def __init__(self, elements):
        self.elements = elements
        self.steps = {}

    def _next_element(self):
        ctx = context.current()
        r, n = (0, 1) if ctx is None else (ctx.replica_index, ctx.replication_factor)
        step = self.steps.get(r, 0)
        self.steps[r] = step + 1
        i = step * n + r
        if i >= len(self.elements):
            raise IndexError(f"fake queue exhausted at step {step}")
        return self.elements[i]


def test_repeat_carries_values():
    out = loops.repeat(5, lambda a, b: (a + 1, b * 2.0), [0, 1.0])
    assert int(out[0]) == 5 and float(out[1]) == 32.0
    single = loops.repeat(3, lambda x: x + 1.0, (tf.constant(1.0)))
    assert float(single) == 4.0  # one value comes back unwrapped
    assert isinstance(loops.repeat(2, lambda: None), engine.Operation)
    assert float(loops.repeat(0, lambda x: x + 1.0, [2.0])) == 2.0


def test_while_loop_condition_and_maximum_iterations():
    out = loops.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), [0, 0])
    assert [int(v) for v in out] == [4, 6]
    out = loops.while_loop(lambda i: i < 100, lambda i: i + 1, [0], maximum_iterations=7)
    assert int(out) == 7
    assert int(loops.while_loop(lambda i: False, lambda i: i + 1, [0])) == 0


def test_body_may_return_operations_after_tensors():
    op = engine.Operation("enqueue")
    assert float(loops.repeat(2, lambda x: (x + 1.0, op), [0.0])) == 2.0
    assert isinstance(loops.repeat(2, lambda: op), engine.Operation)
    with pytest.raises(ValueError, match="^IPU loop body must return zero or more Tensor values "
                                         "followed by zero or more Operations.$"):
        loops.repeat(2, lambda x: (op, x), [0.0])


def test_type_mismatch_is_type_error():
    with pytest.raises(TypeError, match="Mismatch between input types and output types for "
                                        "loop body"):
        loops.repeat(2, lambda x: x > 0.0, [1.0])
    with pytest.raises(TypeError, match="Mismatch between input types and output types"):
        loops.repeat(2, lambda x: (x, x), [1.0])
    with pytest.raises(TypeError, match="Mismatch between input types and output types"):
        loops.while_loop(lambda i: i < 3, lambda i: tf.cast(i, tf.float32), [0])
    with pytest.raises(ValueError, match="must keep the shape"):
        loops.repeat(2, lambda x: tf.concat([x, x], 0), [np.ones(2, np.float32)])


def test_argument_errors():
    with pytest.raises(TypeError, match="repeat: n must be an int"):
        loops.repeat(2.5, lambda: None)
    with pytest.raises(ValueError, match="repeat: n must be >= 0"):
        loops.repeat(-1, lambda: None)
    with pytest.raises(TypeError, match="repeat: body must be callable"):
        loops.repeat(1, None)
    with pytest.raises(TypeError, match="while_loop: condition must be callable"):
        loops.while_loop(1, lambda: None)
    with pytest.raises(ValueError, match="maximum_iterations must be >= 0"):
        loops.while_loop(lambda: True, lambda: None, maximum_iterations=-2)
    with pytest.raises(TypeError, match="infeed_queue must be an IPUInfeedQueue"):
        loops.repeat(1, lambda: None, infeed_queue=[1, 2])


def test_infeed_elements_become_arguments():
    q = FakeQueue([(tf.constant(float(i)), tf.constant(2.0)) for i in range(4)])
    out = loops.repeat(4, lambda acc, x, y: acc + x * y, [0.0], infeed_queue=q)
    assert float(out) == 12.0
    q = FakeQueue([{"a": tf.constant(float(i)), "b": tf.constant(1.0)} for i in range(3)])
    out = loops.repeat(3, lambda acc, a, b: acc + a - b, [0.0], infeed_queue=q)
    assert float(out) == 0.0
    q = FakeQueue([tf.constant(float(i)) for i in range(3)])
    assert float(loops.repeat(3, lambda acc, x: acc + x, [0.0], infeed_queue=q)) == 3.0


def test_infeed_not_dequeued_and_exhaustion():
    q = FakeQueue([tf.constant(1.0)])
    with pytest.raises(ValueError, match="^The infeed queue has not been dequeued.$"):
        loops.repeat(0, lambda x: x, infeed_queue=q)
    with pytest.raises(IndexError, match="exhausted at step 1"):
        loops.repeat(2, lambda acc, x: acc + x, [0.0], infeed_queue=q)


def test_replicas_take_interleaved_elements():
    configure_ipus(2)
    q = FakeQueue([tf.constant(float(i)) for i in range(8)])
    seen = {}

    def comp():
        def body(acc, x):
            return acc + x

        total = loops.repeat(4, body, [0.0], infeed_queue=q)
        seen[context.current().replica_index] = float(total)
        return total

    out = compile_on_ipu(comp)
    assert seen == {0: 0 + 2 + 4 + 6, 1: 1 + 3 + 5 + 7}
    assert float(out[0]) == 12.0


def test_documented_outfeed_example_with_real_feeds():
    outfeed_mod = pytest.importorskip("ipu_gpu.ipu.ipu_outfeed_queue")
    infeed_mod = pytest.importorskip("ipu_gpu.ipu.ipu_infeed_queue")
    configure_ipus(1)
    data = [np.full((4, 4), i, np.float32) for i in range(10)] * 2
    infeed = infeed_mod.IPUInfeedQueue(data)
    outfeed = outfeed_mod.IPUOutfeedQueue()
    infeed.initializer.run()

    def body(v, x):
        v = v + x
        return v, outfeed.enqueue(v)

    def my_net(v):
        return loops.repeat(20, body, (v), infeed_queue=infeed)

    res = compile_on_ipu(my_net, [np.ones((4, 4), np.float32)])
    outfed = np.asarray(outfeed.dequeue())
    assert outfed.shape == (20, 4, 4)
    assert outfed[5, 0, 0] == 16 and outfed[-1, 0, 0] == 91
    np.testing.assert_array_equal(res[0], np.full((4, 4), 91, np.float32))
