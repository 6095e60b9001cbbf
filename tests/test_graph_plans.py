"""Run plans (ipu_gpu/graph/plan.py): a Session.run signature, a loop body or a program body
walks the graph once and replays the recorded plan afterwards. A replayed run must give what
a walk gives, bit for bit (and so the eager tape's numbers), read each fetch when the walk
reads it, and follow the feeds, the graph's growth and failures."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import errors

RNG = np.random.default_rng(17)
X = RNG.standard_normal((6, 4, 3)).astype(np.float32)
Y = RNG.integers(0, 2, (6, 4)).astype(np.int32)
W0 = (RNG.standard_normal((3, 2)) * 0.5).astype(np.float32)


def _train_graph():
    x = v1.placeholder(ig.float32, [None, 3])
    y = v1.placeholder(ig.int32, [None])
    w = v1.Variable(W0)
    loss = ig.reduce_mean(ig.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=ig.nn.relu(ig.matmul(x, w))))
    train = v1.train.GradientDescentOptimizer(0.5).minimize(loss)
    return x, y, w, loss, train


def _eager_steps():
    w = ig.Variable(W0)
    losses = []
    for xb, yb in zip(X, Y):
        with ig.GradientTape() as tape:
            loss = ig.reduce_mean(ig.nn.sparse_softmax_cross_entropy_with_logits(
                labels=ig.constant(yb), logits=ig.nn.relu(ig.matmul(ig.constant(xb), w))))
        (g,) = tape.gradient(loss, [w])
        w.assign_sub(g * 0.5)
        losses.append(loss.numpy())
    return np.array(losses), w.numpy()


def test_replayed_training_steps_equal_walked_ones_and_the_eager_tape():
    """One session (the first step walks, the others replay) against a new session per step
    (every step walks) and against the eager tape: bit for bit."""
    with v1.Graph().as_default():
        x, y, w, loss, train = _train_graph()
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            replayed = [sess.run([loss, train], {x: xb, y: yb})[0] for xb, yb in zip(X, Y)]
            w_replayed = sess.run(w)
            assert len(sess._plans) == 3  # the initializer, the training step, the weights
        sess = v1.Session()
        sess.run(w.initializer)
        walked = []
        for xb, yb in zip(X, Y):
            walked.append(sess.run([loss, train], {x: xb, y: yb})[0])
            sess._plans.clear()
        w_walked = sess.run(w)
    want_losses, want_w = _eager_steps()
    np.testing.assert_array_equal(replayed, walked)
    np.testing.assert_array_equal(replayed, want_losses)
    np.testing.assert_array_equal(w_replayed, w_walked)
    np.testing.assert_array_equal(w_replayed, want_w)


def test_each_fetch_is_read_when_the_walk_reads_it():
    """A variable fetched before the update of the same run shows the value before it, one
    fetched after shows the value after, in a replayed run as in the first."""
    with v1.Graph().as_default():
        v = v1.Variable(np.float32(1.0))
        bump = v.assign_add(2.0)
        with v1.Session() as sess:
            sess.run(v.initializer)
            before = [sess.run([v, bump]) for _ in range(3)]
            after = [sess.run([bump, v]) for _ in range(2)]
    assert [float(a) for a, _ in before] == [1.0, 3.0, 5.0]
    assert [float(b) for _, b in before] == [3.0, 5.0, 7.0]
    assert [(float(a), float(b)) for a, b in after] == [(9.0, 9.0), (11.0, 11.0)]


def test_plans_follow_the_fed_tensors():
    with v1.Graph().as_default():
        scale = v1.placeholder_with_default(np.float32(2.0), [])
        x = v1.placeholder(ig.float32, [2])
        y = x * scale
        with v1.Session() as sess:
            feed = {x: [1.0, 2.0]}
            got = [sess.run(y, feed), sess.run(y, {**feed, scale: 10.0}), sess.run(y, feed),
                   sess.run(y, {y: [7.0, 7.0]})]
            with pytest.raises(errors.InvalidArgumentError, match="must feed a value"):
                sess.run(y)  # a new signature walks: the placeholder is not fed
    np.testing.assert_array_equal(got, [[2.0, 4.0], [10.0, 20.0], [2.0, 4.0], [7.0, 7.0]])


def test_a_failed_run_leaves_no_plan_and_a_grown_graph_gets_new_ones():
    with v1.Graph().as_default():
        v = v1.Variable(np.arange(3, dtype=np.float32))
        y = v * 2.0
        with v1.Session() as sess:
            for _ in range(2):
                with pytest.raises(errors.FailedPreconditionError, match="uninitialized"):
                    sess.run(y)
            assert not sess._plans
            sess.run(v.initializer)
            np.testing.assert_array_equal(sess.run(y), [0.0, 2.0, 4.0])
            z = y + 1.0  # the graph grows: new plans (same fetch included)
            np.testing.assert_array_equal(sess.run([y, z])[1], [1.0, 3.0, 5.0])
            np.testing.assert_array_equal(sess.run(y), [0.0, 2.0, 4.0])
            assert len(sess._plans) == 4  # initializer, y, [y, z], y after growth


def test_loop_and_program_bodies_replay_across_runs(fresh_ipu_system):
    """A compiled loops.repeat over an infeed: every iteration after the first and every
    later Session.run replay the body's plan; the losses and weights are the eager loop's,
    bit for bit, and a body reading a fed tensor plans per feed set."""
    from conftest import configure_ipus

    from ipu_gpu.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops, scopes

    configure_ipus(1)
    ds = ig.data.Dataset.from_tensor_slices((X.reshape(-1, 3), Y.reshape(-1))).batch(
        4, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        scale = v1.placeholder_with_default(np.float32(1.0), [])
        w = v1.Variable(W0)

        def body(xb, yb):
            loss = ig.reduce_mean(ig.nn.sparse_softmax_cross_entropy_with_logits(
                labels=yb, logits=ig.nn.relu(ig.matmul(xb, w)))) * scale
            train = v1.train.GradientDescentOptimizer(0.5).minimize(loss)
            return outfeed.enqueue(loss), train

        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda: loops.repeat(3, body, [], infeed), [])
        losses = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(w.initializer)
            sess.run(program)
            sess.run(program)
            got = np.asarray(sess.run(losses))
            w_got = sess.run(w)
            sess.run(program, {scale: np.float32(0.0)})  # loss * 0: no update
            np.testing.assert_array_equal(sess.run(w), w_got)
            np.testing.assert_array_equal(np.asarray(sess.run(losses)), np.zeros(3))
    want_losses, want_w = _eager_steps()
    np.testing.assert_array_equal(got, want_losses)
    np.testing.assert_array_equal(w_got, want_w)


def test_backward_plans_follow_the_tape_and_leave_it_what_they_do_not_cover(monkeypatch):
    """tf.gradients through a replayed plan, where the tape changes between runs (a cond
    takes the other branch) and where a gradient is sparse (a gather), equals the eager
    tape bit for bit, run after run; a backward plan is made (and checked) once per dense
    signature and used after, never for the sparse one."""
    from ipu_gpu.graph import backward

    calls = []
    plan_run = backward._Backward.run

    def counted(self, *args):
        out = plan_run(self, *args)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(backward._Backward, "run", counted)
    table0 = (RNG.standard_normal((5, 3)) * 0.5).astype(np.float32)
    ids = [np.array(i, np.int32) for i in ([0, 2, 2], [4, 1, 0], [3, 3, 3])]
    flags = [True, False, True, True]
    with v1.Graph().as_default():
        x = v1.placeholder(ig.float32, [None, 3])
        flag = v1.placeholder(ig.bool, [])
        idx = v1.placeholder(ig.int32, [None])
        w = v1.Variable(W0)
        table = v1.Variable(table0)
        h = ig.matmul(x, w)
        dense_loss = ig.reduce_sum(v1.cond(flag, lambda: ig.tanh(h), lambda: h * h))
        (g_dense,) = v1.gradients(dense_loss, [w])
        sparse_loss = ig.reduce_sum(ig.gather(table, idx) * 3.0)
        (g_sparse,) = v1.gradients(sparse_loss, [table])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            dense = [sess.run(g_dense, {x: X[i], flag: f}) for i, f in enumerate(flags)]
            sparse = [sess.run(g_sparse, {idx: i}) for i in ids]
    we, te = ig.Variable(W0), ig.Variable(table0)
    for i, f in enumerate(flags):
        with ig.GradientTape() as tape:
            he = ig.matmul(ig.constant(X[i]), we)
            loss = ig.reduce_sum(ig.tanh(he) if f else he * he)
        np.testing.assert_array_equal(dense[i], tape.gradient(loss, we).numpy())
    for got, i in zip(sparse, ids):
        with ig.GradientTape() as tape:
            loss = ig.reduce_sum(ig.gather(te, ig.constant(i)) * 3.0)
        np.testing.assert_array_equal(got, ig.convert_to_tensor(tape.gradient(loss, te)))
    # dense: made and checked for each branch, then used twice; sparse: refused once
    assert calls == [True, True, True, True, False]
