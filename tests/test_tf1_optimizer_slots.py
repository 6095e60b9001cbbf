"""TF1 ``tf.train`` optimizer slots as TF 1.15 makes them: graph variables named
``<var>/<optimizer>`` (Adam's ``beta1_power``/``beta2_power`` besides), in the global
variables, so ``global_variables_initializer``, ``Saver`` and SavedModel see them; a checkpoint
saved mid-training resumes bit-identically, in a Session and in a replicated
``ipu_compiler.compile`` program. Names, values and checkpoint keys against real
``tf.compat.v1``."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1

OPTIMIZERS = {
    "sgd": lambda c: c.train.GradientDescentOptimizer(0.1),
    "momentum": lambda c: c.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda c: c.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adam": lambda c: c.train.AdamOptimizer(0.05),
    "rmsprop": lambda c: c.train.RMSPropOptimizer(0.01, momentum=0.5),
    "rmsprop_centered": lambda c: c.train.RMSPropOptimizer(0.01, momentum=0.5,
                                                           centered=True),
    "adagrad": lambda c: c.train.AdagradOptimizer(0.1),
    "adadelta": lambda c: c.train.AdadeltaOptimizer(0.5),
    "ftrl": lambda c: c.train.FtrlOptimizer(0.1),
    "proximal_adagrad": lambda c: c.train.ProximalAdagradOptimizer(0.1),
}

RNG = np.random.default_rng(11)
XS = RNG.standard_normal((6, 8, 3)).astype(np.float32)  # 6 batches
YS = RNG.standard_normal((6, 8, 2)).astype(np.float32)
W0 = (RNG.standard_normal((3, 2)) * 0.5).astype(np.float32)


def _model(c, optimizer, scope=None):
    """A dense layer's kernel and bias (get_variable), a squared loss, ``optimizer``'s
    ``minimize`` (inside variable scope ``scope``) with a global step."""
    x = c.placeholder(np.float32, [None, 3], name="x")
    y = c.placeholder(np.float32, [None, 2], name="y")
    w = c.get_variable("dense/kernel", initializer=W0)
    b = c.get_variable("dense/bias", [2], initializer=c.zeros_initializer())
    loss = c.reduce_mean(c.square(c.matmul(x, w) + b - y))
    step = c.train.get_or_create_global_step()
    opt = OPTIMIZERS[optimizer](c)
    if scope is None:
        train = opt.minimize(loss, global_step=step)
    else:
        with c.variable_scope(scope):
            train = opt.minimize(loss, global_step=step)
    return x, y, loss, train, opt, (w, b)


def _describe(c, optimizer):
    """Names of the global variables, the slot names, ``variables()``, each slot's name by
    ``get_slot``, and the slots' values after two steps, of ``optimizer`` in ``c``."""
    with c.Graph().as_default():
        x, y, loss, train, opt, (w, b) = _model(c, optimizer, scope="train")
        opt2 = OPTIMIZERS[optimizer](c)  # a second optimizer's slots are named _1, ...
        opt2.minimize(loss)
        slots = {(name, v.name): opt.get_slot(v, name) for name in opt.get_slot_names()
                 for v in (w, b)}
        with c.Session() as sess:
            sess.run(c.global_variables_initializer())
            for i in range(2):
                sess.run(train, {x: XS[i], y: YS[i]})
            values = {k: sess.run(s) for k, s in slots.items()}
            non_slots = {v.name: sess.run(v) for v in opt.variables()
                         if v not in slots.values()}
        return ([v.name for v in c.global_variables()], opt.get_slot_names(),
                [v.name for v in opt.variables()], [v.name for v in opt2.variables()],
                {k: s.name for k, s in slots.items()}, values, non_slots)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_slot_variables_are_named_and_collected_as_tf1s(real_tf, optimizer):
    ours = _describe(v1, optimizer)
    theirs = _describe(real_tf.compat.v1, optimizer)
    assert ours[:5] == theirs[:5]
    for key, value in theirs[5].items():
        np.testing.assert_allclose(ours[5][key], value, rtol=2e-6, atol=1e-7)
    assert ours[6].keys() == theirs[6].keys()
    for key, value in theirs[6].items():  # Adam's beta powers: b ** (steps + 1) in float32
        np.testing.assert_array_equal(ours[6][key], value)


def test_adam_slots_and_beta_powers_follow_tf_kernels_float32_arithmetic():
    """m = g (1 - b1) with 1 - b1 taken in float32 (0.100000024), as TF's ApplyAdam."""
    with v1.Graph().as_default():
        w = v1.Variable(np.ones(3, np.float32), name="w")
        opt = v1.train.AdamOptimizer(0.1)
        train = opt.minimize(v1.reduce_sum(w * 6.0))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train)
            m, v, (b1, b2) = sess.run([opt.get_slot(w, "m"), opt.get_slot(w, "v"),
                                       opt.variables()[:2]])
    one = np.float32(1)
    np.testing.assert_array_equal(m, np.float32(6) * (one - np.float32(0.9)))
    np.testing.assert_array_equal(v, np.float32(36) * (one - np.float32(0.999)))
    assert b1 == np.float32(0.9) * np.float32(0.9) and b1.dtype == np.float32
    assert b2 == np.float32(0.999) * np.float32(0.999)


def test_slots_need_the_initializer_run_after_minimize():
    """As in TF, the slots are variables of their own: initialising before ``minimize``
    leaves them uninitialised (FailedPreconditionError naming the slot)."""
    with v1.Graph().as_default():
        w = v1.Variable(np.ones(3, np.float32), name="w")
        init = v1.global_variables_initializer()
        train = v1.train.MomentumOptimizer(0.1, 0.9).minimize(v1.reduce_sum(w * w))
        with v1.Session() as sess:
            sess.run(init)
            with pytest.raises(ig.errors.FailedPreconditionError, match="w/Momentum"):
                sess.run(train)


def _train(c, optimizer, batches, save=None, restore=None):
    """Trains on ``batches`` (indices into XS/YS); with ``restore`` a checkpoint prefix
    restored first (instead of the initializer), with ``save`` a prefix saved after. Returns
    the losses and every global variable's value by name."""
    with c.Graph().as_default():
        x, y, loss, train, _, _ = _model(c, optimizer)
        saver = c.train.Saver()
        with c.Session() as sess:
            if restore is None:
                sess.run(c.global_variables_initializer())
            else:
                saver.restore(sess, restore)
            losses = [sess.run([loss, train], {x: XS[i], y: YS[i]})[0] for i in batches]
            path = None if save is None else saver.save(
                sess, save, global_step=c.train.get_global_step())
            values = {v.op.name: sess.run(v) for v in c.global_variables()}
    return np.array(losses), values, path


@pytest.mark.parametrize("optimizer", ["adam", "momentum", "rmsprop_centered", "adagrad",
                                       "ftrl", "adadelta"])
def test_a_checkpoint_saved_mid_training_resumes_bit_identically(tmp_path, optimizer):
    straight, want, _ = _train(v1, optimizer, range(6))
    first, _, path = _train(v1, optimizer, range(3), save=str(tmp_path / "model"))
    assert path.endswith("model-3")
    keys = [name for name, _ in v1.train.list_variables(str(tmp_path))]
    assert keys == sorted(want)  # the slots (and beta powers, global step) are saved
    resumed, got, _ = _train(v1, optimizer, range(3, 6), restore=v1.train.latest_checkpoint(
        str(tmp_path)))
    np.testing.assert_array_equal(np.concatenate([first, resumed]), straight)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_checkpoint_keys_equal_real_tf1s(real_tf, tmp_path):
    for c, where in ((v1, tmp_path / "ours"), (real_tf.compat.v1, tmp_path / "tf")):
        _train(c, "adam", range(2), save=str(where / "model"))
    ours = v1.train.list_variables(str(tmp_path / "ours"))
    theirs = real_tf.compat.v1.train.list_variables(str(tmp_path / "tf"))
    assert ours == [(name, list(shape)) for name, shape in theirs]
    for name, _ in theirs:
        np.testing.assert_allclose(
            v1.train.load_variable(str(tmp_path / "ours"), name),
            real_tf.compat.v1.train.load_variable(str(tmp_path / "tf"), name),
            rtol=2e-6, atol=1e-7)


def _replicated_adam(replicas, executions, skip=0, save=None, restore=None, steps=3,
                     accumulate=None):
    """Graphcore's TF1 replication pattern with Adam: loops.repeat over an infeed compiled
    on an ipu_scope, CrossReplicaOptimizer (or, with ``accumulate`` N,
    CrossReplicaGradientAccumulationOptimizerV2 of N mini-batches); ``executions`` Session
    runs, starting ``skip`` batches into the data. Returns the losses and the weights and
    slots by name."""
    from conftest import configure_ipus

    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import (ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops,
                             optimizers, scopes)

    system.reset()
    configure_ipus(replicas)
    rng = np.random.default_rng(3)
    x_all = rng.standard_normal((400, 5)).astype(np.float32)
    y_all = (x_all @ np.array([1.0, -2.0, 0.5, 0.0, 3.0], np.float32))[:, None]
    ds = ig.data.Dataset.from_tensor_slices((x_all, y_all)).batch(4, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.skip(skip).repeat())
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

        def body(x, y):
            w = v1.get_variable("w", initializer=np.full((5, 1), 0.1, np.float32))
            loss = ig.reduce_mean((ig.matmul(x, w) - y) ** 2)
            if accumulate:
                opt = optimizers.CrossReplicaGradientAccumulationOptimizerV2(
                    v1.train.AdamOptimizer(0.05), accumulate)
            else:
                opt = optimizers.CrossReplicaOptimizer(v1.train.AdamOptimizer(0.05))
            train = opt.minimize(loss)
            return outfeed.enqueue(loss), train

        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda: loops.repeat(steps, body, [], infeed), [])
        losses = outfeed.dequeue()
        saver = v1.train.Saver()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            if restore is None:
                sess.run(v1.global_variables_initializer())
            else:
                saver.restore(sess, restore)
            per_run = []
            for _ in range(executions):
                sess.run(program)
                per_run.append(np.asarray(sess.run(losses)))
            if save is not None:
                saver.save(sess, save)
            values = {v.op.name: sess.run(v) for v in v1.global_variables()}
    system.reset()
    return per_run, values


@pytest.mark.parametrize("accumulate", [None, 2])
@pytest.mark.parametrize("replicas", [1, 2])
def test_replicated_program_resumes_from_a_checkpoint_bit_identically(
        tmp_path, replicas, accumulate, fresh_ipu_system):
    """Every replica's copies (weights, Adam's slots and beta powers) are restored from the
    host's saved value; with all-reduced gradients the replicas stay equal, so the resumed
    run equals the straight one. Under gradient accumulation the wrapped Adam's slots are
    the model's variables too and its beta powers advance once per update."""
    steps = 4 if accumulate else 3
    straight, want = _replicated_adam(replicas, 2, steps=steps, accumulate=accumulate)
    assert sorted(want) == ["beta1_power", "beta2_power", "w", "w/Adam", "w/Adam_1"]
    first, _ = _replicated_adam(replicas, 1, save=str(tmp_path / "ckpt"), steps=steps,
                                accumulate=accumulate)
    resumed, got = _replicated_adam(replicas, 1, skip=steps * replicas,
                                    restore=str(tmp_path / "ckpt"), steps=steps,
                                    accumulate=accumulate)
    np.testing.assert_array_equal(first[0], straight[0])
    np.testing.assert_array_equal(resumed[0], straight[1])
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
    updates = 2 * steps // (accumulate or 1)
    np.testing.assert_allclose(got["beta1_power"], np.float32(0.9) ** (updates + 1),
                               rtol=1e-6)


def test_accumulated_adam_equals_numpy(fresh_ipu_system):
    """CrossReplicaGradientAccumulationOptimizerV2(Adam, 2) on 2 replicas: every second
    step Adam takes the replicas' mean of their summed gradients, bias-corrected by the
    update count (numpy model)."""
    replicas, steps, n = 2, 4, 2
    _, got = _replicated_adam(replicas, 2, steps=steps, accumulate=n)
    rng = np.random.default_rng(3)
    x_all = rng.standard_normal((400, 5)).astype(np.float32)
    y_all = (x_all @ np.array([1.0, -2.0, 0.5, 0.0, 3.0], np.float32))[:, None]
    xb, yb = x_all.reshape(-1, 4, 5).astype(np.float64), y_all.reshape(-1, 4, 1)
    w, m, v = np.full((5, 1), 0.1), 0.0, 0.0
    acc = [np.zeros((5, 1)) for _ in range(replicas)]
    for step in range(2 * steps):
        for r in range(replicas):
            i = step * replicas + r
            acc[r] = acc[r] + 2 * xb[i].T @ (xb[i] @ w - yb[i]) / 4
        if step % n == n - 1:
            g, t = sum(acc) / replicas, step // n + 1
            acc = [np.zeros((5, 1)) for _ in range(replicas)]
            m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
            w = w - 0.05 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(got["w"], w, rtol=1e-5, atol=1e-6)


def test_one_optimizer_in_two_graphs_makes_each_graphs_slots():
    """The slots (and Adam's beta powers) of a graph's variables are that graph's, also when
    the first graph is gone (a variable's id never finds another graph's slot)."""
    import gc

    opt = v1.train.AdamOptimizer(0.1)
    for k in range(2):
        with v1.Graph().as_default() as g:
            w = v1.Variable(np.full(2, k + 1.0, np.float32), name="w")
            train = opt.minimize(v1.reduce_sum(w * w))
            assert opt.get_slot(w, "m").graph is g
            assert [v.name for v in opt.variables()] == ["beta1_power:0", "beta2_power:0",
                                                         "w/Adam:0", "w/Adam_1:0"]
            with v1.Session() as sess:
                sess.run(v1.global_variables_initializer())
                sess.run(train)
                np.testing.assert_allclose(sess.run(opt.get_slot(w, "m")),
                                           np.float32(2 * (k + 1)) * np.float32(0.1),
                                           rtol=1e-6)
        del g, w, train
        gc.collect()
