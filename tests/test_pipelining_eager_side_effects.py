"""A TF2 pipeline (``pipelining_ops.pipeline`` in a function run by ``IPUStrategy.run`` or
``ipu_compiler.compile`` outside a graph) whose function does device work before the pipeline
call: on the IPU the function is compiled whole, so that work happens once per call.
ipu_gpu learns the pipeline's IPUs per replica on the first call (``program_shards``), stops
that run at the pipeline and undoes it (``emulation/rollback.py``) before running the
function again with the pipeline's shards: variables, infeeds, outfeeds and the device's
seed executions are as if the function had run once (issue 17)."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.ipu import (ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, ipu_strategy, loops,
                         pipelining_ops, replication_ops, scopes, utils)


def _stages():
    return [lambda a: a * 2.0, lambda h: (ig.reduce_sum(h),)]


def _feeds(rows=16, start=0.0):
    x = np.arange(start, start + 2 * rows, dtype=np.float32).reshape(rows, 2)
    ds = ig.data.Dataset.from_tensor_slices(x).batch(2, drop_remainder=True)
    return x, ipu_infeed_queue.IPUInfeedQueue(ds.repeat()), ipu_outfeed_queue.IPUOutfeedQueue()


def test_work_before_the_pipeline_happens_once_per_call(fresh_ipu_system):
    from conftest import configure_ipus

    configure_ipus(2)
    x, infeed, outfeed = _feeds()
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        counter = ig.Variable(0.0)

    @ig.function
    def step():
        counter.assign_add(1.0)
        return pipelining_ops.pipeline(_stages(), 2, repeat_count=1, infeed_queue=infeed,
                                       outfeed_queue=outfeed)
    for _ in range(2):
        strategy.run(step)
    assert float(counter.numpy()) == 2.0
    # one replica (2 stages on 2 IPUs), two micro-batches per call: the first four batches
    out = outfeed.dequeue()[0].numpy()
    np.testing.assert_array_equal(out, [2.0 * x[2 * i:2 * i + 2].sum() for i in range(4)])


def test_a_loop_with_its_own_infeed_around_a_pipeline_loses_no_element(fresh_ipu_system):
    """``loops.repeat`` over infeed A whose body calls a pipeline over infeed B: the first
    call's stopped run had taken A's first element; undone, every element of A and B is used
    once, in order (numpy model of two calls of two iterations)."""
    from conftest import configure_ipus

    configure_ipus(2)
    a = np.arange(1.0, 9.0, dtype=np.float32)
    infeed_a = ipu_infeed_queue.IPUInfeedQueue(ig.data.Dataset.from_tensor_slices(a))
    x, infeed_b, outfeed = _feeds(rows=32)
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        total = ig.Variable(0.0)

    def body(element):
        total.assign_add(element)
        return pipelining_ops.pipeline(_stages(), 2, repeat_count=1, infeed_queue=infeed_b,
                                       outfeed_queue=outfeed)

    @ig.function
    def step():
        return loops.repeat(2, body, infeed_queue=infeed_a)
    for _ in range(2):
        strategy.run(step)
    assert float(total.numpy()) == a[:4].sum()
    out = outfeed.dequeue()[0].numpy()
    np.testing.assert_array_equal(out, [2.0 * x[2 * i:2 * i + 2].sum() for i in range(8)])


def test_an_enqueue_before_the_pipeline_is_made_once(fresh_ipu_system):
    """The stopped run enqueued with two replicas; undone, the queue holds only what the
    one-replica runs enqueued (else: a replication-factor mismatch ValueError)."""
    from conftest import configure_ipus

    configure_ipus(2)
    _, infeed, outfeed = _feeds()
    before = ipu_outfeed_queue.IPUOutfeedQueue()
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        counter = ig.Variable(0.0)

    def step():
        before.enqueue(counter.assign_add(1.0).read_value())
        return pipelining_ops.pipeline(_stages(), 2, repeat_count=1, infeed_queue=infeed,
                                       outfeed_queue=outfeed)
    for _ in range(3):
        strategy.run(step)
    np.testing.assert_array_equal(before.dequeue().numpy(), [1.0, 2.0, 3.0])


def test_replica_copies_written_by_the_stopped_run_are_undone(fresh_ipu_system):
    """Four IPUs: the stopped run had four replicas, each writing its own copy; the pipeline
    over two IPUs runs two replicas, whose copies start from the host value (numpy model:
    v_r = 10 + r after the first call, 10 + 2 r after the second; the host sees replica 0)."""
    from conftest import configure_ipus

    configure_ipus(4)
    _, infeed, outfeed = _feeds()
    seen = ipu_outfeed_queue.IPUOutfeedQueue()
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        v = ig.Variable(10.0)

    def step():
        r = ig.cast(replication_ops.replication_index(), ig.float32)
        seen.enqueue(v.assign_add(r).read_value())
        return pipelining_ops.pipeline(_stages(), 2, repeat_count=1, infeed_queue=infeed,
                                       outfeed_queue=outfeed)
    strategy.run(step)
    strategy.run(step)
    np.testing.assert_array_equal(seen.dequeue().numpy(), [[10.0, 11.0], [10.0, 12.0]])
    assert float(v.numpy()) == 10.0


def test_random_numbers_before_the_pipeline_follow_the_seeded_executions(fresh_ipu_system):
    """After ``reset_ipu_seed`` the stopped run's execution does not count: the first call
    draws execution 0's numbers, the numbers a call whose shards are known draws after the
    same reset."""
    from conftest import configure_ipus

    configure_ipus(2)
    _, infeed, outfeed = _feeds()
    drawn = ipu_outfeed_queue.IPUOutfeedQueue()

    def step():
        drawn.enqueue(ig.random.uniform([3]))
        return pipelining_ops.pipeline(_stages(), 2, repeat_count=1, infeed_queue=infeed,
                                       outfeed_queue=outfeed)
    strategy = ipu_strategy.IPUStrategy()
    utils.reset_ipu_seed(5)
    strategy.run(step)  # stopped, undone, run again with two shards
    strategy.run(step)
    first = drawn.dequeue().numpy()
    utils.reset_ipu_seed(5)
    strategy.run(step)  # shards known: runs once
    strategy.run(step)
    again = drawn.dequeue().numpy()
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first[0], first[1])


def test_compile_outside_a_graph_runs_the_work_before_the_pipeline_once(fresh_ipu_system):
    from conftest import configure_ipus

    configure_ipus(2)
    _, infeed, outfeed = _feeds()
    counter = ig.Variable(0.0)

    def computation():
        counter.assign_add(1.0)
        return pipelining_ops.pipeline(_stages(), 2, repeat_count=1, infeed_queue=infeed,
                                       outfeed_queue=outfeed)
    with scopes.ipu_scope("/device:IPU:0"):
        ipu_compiler.compile(computation)
        ipu_compiler.compile(computation)
    assert float(counter.numpy()) == 2.0


@pytest.mark.parametrize("ipus, first_journaled", [(2, True), (1, False)])
def test_a_failing_first_run_is_not_undone_and_later_runs_are_not_journaled(
        fresh_ipu_system, ipus, first_journaled):
    """Only a run stopped for shards is undone: an error keeps what ran before it, as the
    eager program did; a function whose run has finished runs without an undo point. On one
    IPU no larger shard count could fit, so not even the first run is journaled."""
    from conftest import configure_ipus
    from ipu_gpu.emulation import rollback

    configure_ipus(ipus)
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        v = ig.Variable(1.0)

    def failing():
        v.assign(5.0)
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError, match="boom"):
        strategy.run(failing)
    assert float(v.numpy()) == 5.0

    opened = []

    def step():
        opened.append(rollback.is_open())
        v.assign_add(1.0)
    strategy.run(step)
    strategy.run(step)
    per_run = len(opened) // 2  # one entry per replica
    assert opened == [first_journaled] * per_run + [False] * per_run
    assert float(v.numpy()) == 7.0


def test_a_second_pipeline_needing_more_ipus_is_undone_too(fresh_ipu_system):
    """Four IPUs: the first run stops at a 2-IPU pipeline, the second at a 4-IPU one; each
    stopped run is undone, so the counter and the first pipeline's outfeed see one run per
    call."""
    from conftest import configure_ipus

    configure_ipus(4)
    x, infeed, outfeed = _feeds()
    _, infeed4, outfeed4 = _feeds(start=100.0)
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        counter = ig.Variable(0.0)
    four = [lambda a: a + 1.0, lambda a: a * 2.0, lambda a: a - 1.0,
            lambda h: (ig.reduce_sum(h),)]

    def step():
        counter.assign_add(1.0)
        pipelining_ops.pipeline(_stages(), 2, repeat_count=1, infeed_queue=infeed,
                                outfeed_queue=outfeed)
        return pipelining_ops.pipeline(four, 4, repeat_count=1, infeed_queue=infeed4,
                                       outfeed_queue=outfeed4)
    for _ in range(2):
        strategy.run(step)
    assert float(counter.numpy()) == 2.0
    out = outfeed.dequeue()[0].numpy()
    np.testing.assert_array_equal(out, [2.0 * x[2 * i:2 * i + 2].sum() for i in range(4)])
    assert outfeed4.dequeue()[0].shape == (8,)
