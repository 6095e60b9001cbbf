"""A gradients node in a replayed loop or program body (program.Body) skips the tape
signature its backward plan is looked up by: the body's plan records the same ops, wired the
same way, on each evaluation's fresh tape, so the signature of the plan's first replay is
the signature of every later one. That holds only while the fed values (loop-carried values,
infeed elements) are distinct objects and none is an outer value (a variable): otherwise the
tape's wiring differs and the signature is computed again. Either way the numbers are those
of the signature path, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu.graph import backward, plan, program

RNG = np.random.default_rng(1719)
X = RNG.standard_normal((8, 4, 3)).astype(np.float32)
Y = RNG.integers(0, 2, (8, 4)).astype(np.int32)
W0 = (RNG.standard_normal((3, 2)) * 0.5).astype(np.float32)
S0 = RNG.standard_normal((3, 2)).astype(np.float32)
STEPS, RUNS = 4, 2


def _counting(monkeypatch):
    calls = []
    signature = backward._signature

    def counted(*args):
        calls.append(1)
        return signature(*args)
    monkeypatch.setattr(backward, "_signature", counted)
    return calls


def _infeed_loop():
    """(losses, weights) of RUNS runs of a STEPS-iteration training loop over an infeed."""
    from conftest import configure_ipus

    from ipu_gpu.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops, scopes

    configure_ipus(1)
    ds = ig.data.Dataset.from_tensor_slices((X.reshape(-1, 3), Y.reshape(-1))).batch(
        4, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        w = v1.Variable(W0)

        def body(total, xb, yb):
            loss = ig.reduce_mean(ig.nn.sparse_softmax_cross_entropy_with_logits(
                labels=yb, logits=ig.nn.relu(ig.matmul(xb, w))))
            train = v1.train.MomentumOptimizer(0.5, 0.9).minimize(loss)
            with v1.control_dependencies([train]):
                return total + loss, outfeed.enqueue(loss)

        with scopes.ipu_scope("/device:IPU:0"):
            run = ipu_compiler.compile(
                lambda: loops.repeat(STEPS, body, [ig.constant(0.0)], infeed), [])
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(w.initializer)
            sess.run(v1.variables_initializer(v1.global_variables()))
            totals = [sess.run(run) for _ in range(RUNS)]
            losses = np.asarray(sess.run(outfeed.dequeue()))
            return np.ravel(totals), losses, sess.run(w)


def test_replayed_body_computes_the_signature_once(fresh_ipu_system, monkeypatch):
    calls = _counting(monkeypatch)
    totals, losses, w = _infeed_loop()
    assert len(calls) == 2  # the walk, then the first replay: none for the other 6
    monkeypatch.setattr(program, "_replay_key", lambda *args: None)  # every time
    calls.clear()
    want_totals, want_losses, want_w = _infeed_loop()
    assert len(calls) == STEPS * RUNS
    np.testing.assert_array_equal(totals, want_totals)
    np.testing.assert_array_equal(losses, want_losses)
    np.testing.assert_array_equal(w, want_w)
    assert losses.shape == (STEPS * RUNS,) and len(set(losses.tolist())) == STEPS * RUNS


def _aliasing_loop(carry_variable):
    """A while-loop body fed its loop-carried value: the variable itself (the feed aliases
    an outer value from the second iteration on) or a copy of it."""
    with v1.Graph().as_default():
        w = v1.Variable(W0)

        def body(i, s):
            loss = ig.reduce_sum(ig.tanh(s * w))
            train = v1.train.GradientDescentOptimizer(0.25).minimize(loss, var_list=[w])
            with v1.control_dependencies([train]):
                out = w if carry_variable else ig.identity(w)
                return i + 1, out
        start = [v1.placeholder_with_default(np.int32(0), []),
                 v1.placeholder_with_default(S0, [3, 2])]
        _, s = v1.while_loop(lambda i, s: i < STEPS, body, start)
        with v1.Session() as sess:
            sess.run(w.initializer)
            got = [sess.run(s) for _ in range(RUNS)]
            return np.asarray(got), sess.run(w)


@pytest.mark.parametrize("carry_variable", [False, True])
def test_aliased_feeds_compute_the_signature_again(monkeypatch, carry_variable):
    calls = _counting(monkeypatch)
    got, w = _aliasing_loop(carry_variable)
    replayed_calls = len(calls)
    monkeypatch.setattr(program, "_replay_key", lambda *args: None)
    calls.clear()
    want, want_w = _aliasing_loop(carry_variable)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(w, want_w)
    assert len(calls) == STEPS * RUNS
    # the walk and the first replay; a run's first iteration is fed the loop's initial
    # values, outer values too; a carried variable is an outer value in every iteration
    assert replayed_calls == (STEPS * RUNS if carry_variable else 3)


def _function_node(x):
    """A node calling a Python function (what it does is not known to the plan)."""
    from ipu_gpu.graph.core import add_node

    return add_node(x.graph, "Call", "call", [x], lambda v: v, [(ig.float32, [3])])


def test_only_plans_of_registered_ops_before_the_gradients_are_tape_stable():
    with v1.Graph().as_default():
        x = v1.placeholder(ig.float32, [3])
        w = v1.Variable(np.ones(3, np.float32))
        loss = ig.reduce_sum(x * w)
        (g,) = v1.gradients(loss, [w])
        (g2,) = v1.gradients(loss * 2.0, [w])
        other = _function_node(x)  # not a registered op: its function may touch the tape
        nodes = [loss.op.inputs[0].op, loss.op, g.op]
        assert plan.Plan(nodes).tape_stable
        assert plan.Plan([v1.no_op(), w.op, *nodes]).tape_stable  # these record nothing
        assert plan.Plan([*nodes, (loss * 2.0).op, g2.op, other]).tape_stable
        assert not plan.Plan([other, *nodes]).tape_stable
        assert not plan.Plan(nodes[:2]).tape_stable  # no gradients node: nothing to skip


def test_replay_keys_name_the_plan_and_the_kinds_of_its_inputs():
    with v1.Graph().as_default():
        x = v1.placeholder(ig.float32, [3])
        w = v1.Variable(np.ones(3, np.float32))
        (g,) = v1.gradients(ig.reduce_sum(x * w), [w])
        p = plan.Plan([g.op])
    a, b = ig.constant([1.0, 2.0]), ig.constant([1.0, 2.0])
    c = ig.constant([1, 2])
    var = ig.Variable([1.0, 2.0])
    base = (var,)
    key = program._replay_key(p, [a, b], 2, {id(var)}, program._kinds(base))
    assert key == (p, ((ig.Variable, var.dtype),), (a.dtype, b.dtype))
    assert program._replay_key(p, [a, c], 2, set(), ()) != program._replay_key(
        p, [a, b], 2, set(), ())  # another dtype fed: another key
    assert program._replay_key(p, [a, a], 2, set(), ()) is None  # one value fed twice
    assert program._replay_key(p, [a, var], 2, {id(var)}, ()) is None  # an outer value
    assert program._replay_key(p, [a, ig.Variable([3.0, 4.0])], 2, set(), ()) is None
    assert program._replay_key(p, [], 0, set(), ()) == (p, (), ())


def _feed_steps(feed_tensors=False, same_tensor=False):
    """Losses and weights of training steps by Session.run([loss, train], feed_dict)."""
    with v1.Graph().as_default():
        x = v1.placeholder(ig.float32, [None, 3])
        x2 = v1.placeholder(ig.float32, [None, 3])
        y = v1.placeholder(ig.int32, [None])
        w = v1.Variable(W0)
        logits = ig.nn.relu(ig.matmul(x, w)) + ig.matmul(x2, w) * 0.5
        loss = ig.reduce_mean(ig.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits))
        train = v1.train.AdamOptimizer(0.1).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            losses = []
            for i, (xb, yb) in enumerate(zip(X, Y)):
                x2b = X[-1 - i]
                if feed_tensors:
                    xb = ig.constant(xb)
                    x2b = xb if same_tensor else ig.constant(x2b)
                losses.append(sess.run([loss, train], {x: xb, x2: x2b, y: yb})[0])
            return np.array(losses), sess.run(w)


@pytest.mark.parametrize("feeds", ["arrays", "tensors", "one tensor twice"])
def test_session_replays_compute_the_signature_once(monkeypatch, feeds):
    from ipu_gpu.graph import session

    calls = _counting(monkeypatch)
    kwargs = {"feed_tensors": feeds != "arrays", "same_tensor": feeds == "one tensor twice"}
    losses, w = _feed_steps(**kwargs)
    # the walk and the first replay; a tensor fed to two placeholders: every step
    assert len(calls) == (len(X) if feeds == "one tensor twice" else 2)
    monkeypatch.setattr(session, "_feed_replay_key", lambda *args: None)
    calls.clear()
    want_losses, want_w = _feed_steps(**kwargs)
    assert len(calls) == len(X)
    np.testing.assert_array_equal(losses, want_losses)
    np.testing.assert_array_equal(w, want_w)
    assert len(set(losses.tolist())) == len(X)


def test_session_replay_tokens_need_fixed_records_up_to_the_gradients():
    from ipu_gpu.graph import session

    with v1.Graph().as_default():
        x = v1.placeholder(ig.float32, [3])
        w = v1.Variable(np.ones(3, np.float32))
        product = x * w
        loss = ig.reduce_sum(product)
        (g,) = v1.gradients(loss, [w])
        other = _function_node(x)
        forward = plan.Plan([w.op, product.op, loss.op])
        backward_plan = plan.Plan([g.op, other])
        assert session._replay_token([forward, backward_plan]) is forward
        assert session._replay_token([backward_plan]) is backward_plan
        assert session._replay_token([forward]) is None  # no gradients node
        assert session._replay_token([plan.Plan([other]), backward_plan]) is None
        assert session._replay_token([plan.Plan([other, g.op])]) is None
