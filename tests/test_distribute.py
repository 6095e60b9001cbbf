"""tf.distribute: the default strategy and replica context (against real TF), strategy
scopes and run, ReduceOp, InputContext, and all_reduce inside a 2-replica IPU program."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import compile_on_ipu, configure_ipus

import ipu_gpu as tf
from ipu_gpu import distribute
from ipu_gpu.device import device
from ipu_gpu.ipu import cross_replica_ops, replication_ops


class _OneReplica(distribute.Strategy):
    """A minimal non-default strategy, as a strategy implementation would subclass."""

    def __init__(self):
        super().__init__(distribute.StrategyExtended(self))


def test_default_context_matches_tf(real_tf):
    for d, t in ((distribute, real_tf.distribute),):
        assert d.has_strategy() is t.has_strategy() is False
        assert d.in_cross_replica_context() is t.in_cross_replica_context() is False
        rc, trc = d.get_replica_context(), t.get_replica_context()
        assert rc.replica_id_in_sync_group == trc.replica_id_in_sync_group == 0
        assert isinstance(rc.replica_id_in_sync_group, int)
        assert rc.num_replicas_in_sync == trc.num_replicas_in_sync == 1
        assert rc.strategy is d.get_strategy()
        assert d.get_strategy().num_replicas_in_sync == 1
    out = distribute.get_replica_context().all_reduce("sum", [1, 2.0, {"a": 3.0}])
    want = real_tf.distribute.get_replica_context().all_reduce("sum", [1, 2.0, {"a": 3.0}])
    assert [np.asarray(x).dtype for x in (out[0], out[1], out[2]["a"])] == \
        [np.asarray(x).dtype for x in (want[0], want[1], want[2]["a"])]
    assert [float(out[0]), float(out[1]), float(out[2]["a"])] == [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(
        distribute.get_replica_context().all_reduce(distribute.ReduceOp.MEAN,
                                                    tf.constant([1.0, 2.0])), [1.0, 2.0])


def test_reduce_op(real_tf):
    assert [op.value for op in distribute.ReduceOp] == \
        [op.value for op in real_tf.distribute.ReduceOp] == ["SUM", "MEAN"]
    assert distribute.ReduceOp("SUM") is distribute.ReduceOp.SUM
    for bad in ("max", "MAX"):
        with pytest.raises(ValueError, match="is not a valid ReduceOp"):
            distribute.get_replica_context().all_reduce(bad, 1.0)
    with pytest.raises(ValueError, match="'MAX' is not a valid ReduceOp"):
        distribute.get_replica_context().all_reduce("max", 1.0)
    with pytest.raises(ValueError, match="'MAX' is not a valid ReduceOp"):
        real_tf.distribute.get_replica_context().all_reduce("max", 1.0)
    assert distribute.ReduceOp.from_variable_aggregation(
        real_tf.VariableAggregation.MEAN) is distribute.ReduceOp.MEAN


def test_input_context_matches_tf(real_tf):
    for args in ((), (2, 1, 4)):
        ours, theirs = distribute.InputContext(*args), real_tf.distribute.InputContext(*args)
        assert (ours.num_input_pipelines, ours.input_pipeline_id, ours.num_replicas_in_sync) \
            == (theirs.num_input_pipelines, theirs.input_pipeline_id,
                theirs.num_replicas_in_sync)
        assert ours.get_per_replica_batch_size(8) == theirs.get_per_replica_batch_size(8)
        assert str(ours) == str(theirs)
    with pytest.raises(ValueError) as mine:
        distribute.InputContext(2, 1, 4).get_per_replica_batch_size(7)
    with pytest.raises(ValueError) as want:
        real_tf.distribute.InputContext(2, 1, 4).get_per_replica_batch_size(7)
    assert str(mine.value) == str(want.value)
    ctxs = distribute.get_strategy().distribute_datasets_from_function(
        lambda c: (c.num_input_pipelines, c.input_pipeline_id, c.num_replicas_in_sync))
    assert ctxs == (1, 0, 1)


def test_strategy_scope_and_run_contexts(real_tf):
    s = _OneReplica()
    other = _OneReplica()
    with s.scope():
        assert distribute.get_strategy() is s and distribute.has_strategy()
        assert distribute.in_cross_replica_context()
        assert distribute.get_replica_context() is None
        with s.scope():  # re-entering the same strategy is fine
            assert distribute.get_strategy() is s
        with pytest.raises(RuntimeError, match="Mixing different tf.distribute.Strategy"):
            with other.scope():
                pass

        def step(x):
            rc = distribute.get_replica_context()
            merged = rc.merge_call(lambda strategy, v: (strategy is s,
                                                        distribute.in_cross_replica_context(),
                                                        v), args=(1,))
            return (distribute.in_cross_replica_context(), int(rc.replica_id_in_sync_group),
                    rc.num_replicas_in_sync, merged, x * 2)

        out = s.run(step, args=(tf.constant(3.0),))
        assert out[:4] == (False, 0, 1, (True, True, 1)) and float(out[4]) == 6.0

        seen = []
        t = threading.Thread(target=lambda: seen.append(distribute.has_strategy()))
        t.start()
        t.join()
        assert seen == [False]  # scopes are per thread, as TF's
    assert not distribute.has_strategy()
    with distribute.get_strategy().scope():  # the default strategy's scope changes nothing
        assert not distribute.has_strategy()
    # TF agrees on the per-thread stack and on the context inside run
    strategy = real_tf.distribute.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        seen = []
        t = threading.Thread(target=lambda: seen.append(real_tf.distribute.has_strategy()))
        t.start()
        t.join()
        assert seen == [False] and real_tf.distribute.get_replica_context() is None


def test_reduce_and_local_results(real_tf):
    s = distribute.get_strategy()
    t = real_tf.distribute.get_strategy()
    assert float(s.reduce("MEAN", tf.constant([1.0, 3.0]), axis=0)) == \
        float(t.reduce("MEAN", real_tf.constant([1.0, 3.0]), axis=0)) == 2.0
    assert float(s.reduce("SUM", tf.constant([1.0, 3.0]), axis=0)) == 4.0
    assert s.reduce("SUM", 2.0, axis=None) == t.reduce("SUM", 2.0, axis=None) == 2.0
    assert s.experimental_local_results(3) == t.experimental_local_results(3) == (3,)
    assert s.experimental_distribute_dataset([1, 2]) == [1, 2]


def test_experimental_set_strategy():
    s = _OneReplica()
    distribute.experimental_set_strategy(s)
    try:
        assert distribute.get_strategy() is s
    finally:
        distribute.experimental_set_strategy(None)
    assert not distribute.has_strategy()


@pytest.mark.usefixtures("fresh_ipu_system")
def test_all_reduce_in_a_two_replica_program():
    """Inside an IPU program all_reduce is the cross-replica collective, while the replica
    context reports replica 0 of 1 (Graphcore's IPUStrategy: the replicated program is one
    TF replica)."""
    configure_ipus(2)

    def program(x):
        rc = distribute.get_replica_context()
        r = tf.cast(replication_ops.replication_index(), tf.float32)
        return [rc.all_reduce(distribute.ReduceOp.SUM, x + r),
                rc.all_reduce("mean", x * (r + 1.0)),
                rc.all_reduce("sum", {"n": tf.constant(1)})["n"],
                tf.constant(rc.replica_id_in_sync_group), tf.constant(rc.num_replicas_in_sync),
                tf.constant(distribute.in_cross_replica_context())]

    out = compile_on_ipu(program, [np.ones(3, np.float32)])
    np.testing.assert_array_equal(out[0], [3.0, 3.0, 3.0])  # (1 + 0) + (1 + 1)
    np.testing.assert_array_equal(out[1], [1.5, 1.5, 1.5])  # mean of 1 and 2
    assert int(out[2]) == 2
    assert int(out[3]) == 0 and int(out[4]) == 1 and not bool(out[5])

    def per_replica():  # every replica holds the same reduced value: summing it doubles it
        r = tf.cast(replication_ops.replication_index(), tf.float32)
        total = distribute.get_replica_context().all_reduce("SUM", r + 1.0)
        return total, cross_replica_ops.cross_replica_sum(total)

    total, doubled = compile_on_ipu(per_replica)
    assert float(total) == 3.0 and float(doubled) == 6.0


@pytest.mark.usefixtures("fresh_ipu_system")
def test_all_reduce_gradient_and_strategy_run_in_a_program():
    configure_ipus(2)
    s = _OneReplica()

    def program(x):
        def step(v):
            with tf.GradientTape() as tape:
                tape.watch(v)
                y = distribute.get_replica_context().all_reduce("SUM", v * v)
            return tape.gradient(y, v)
        return s.run(step, args=(x,))

    # d/dv of sum_r v_r^2 summed over replicas, then the collective's gradient sums again
    np.testing.assert_array_equal(compile_on_ipu(program, [np.full(2, 3.0, np.float32)])[0],
                                  [12.0, 12.0])

    def host_side(x):
        with device("cpu"):
            return distribute.get_replica_context().all_reduce("SUM", x)

    np.testing.assert_array_equal(compile_on_ipu(host_side, [np.ones(2, np.float32)])[0],
                                  [1.0, 1.0])
