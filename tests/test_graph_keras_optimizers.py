"""Keras 2 optimizers (OptimizerV2) in a TF1 graph: ``apply_gradients``, ``minimize`` with a
callable loss and ``get_updates`` build one update operation whose ``Session.run`` steps the
variables, makes the slots once and increments ``iterations``; against a numpy model, the
eager optimizer and real TensorFlow's tf_keras legacy optimizers in tf.compat.v1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import keras

RNG = np.random.default_rng(11)
X = RNG.standard_normal((8, 4)).astype(np.float32)
Y = RNG.standard_normal((8, 2)).astype(np.float32)
W0 = (RNG.standard_normal((4, 2)) * 0.5).astype(np.float32)
B0 = np.zeros(2, np.float32)
STEPS = 4

OPTIMIZERS = {
    "sgd": lambda k: k.SGD(0.1),
    "momentum": lambda k: k.SGD(0.05, momentum=0.9),
    "nesterov": lambda k: k.SGD(0.05, momentum=0.9, nesterov=True),
    "adam": lambda k: k.Adam(0.05),
    "amsgrad": lambda k: k.Adam(0.05, amsgrad=True),
    "rmsprop": lambda k: k.RMSprop(0.01, momentum=0.5),
    "adagrad": lambda k: k.Adagrad(0.1),
}


@pytest.fixture(scope="module")
def tf_keras(real_tf):
    return pytest.importorskip("tf_keras")


def _train(c, tf, make_opt, how, steps=STEPS):
    """Losses, final weights and iterations of a linear least-squares model trained in
    ``c`` (tf.compat.v1 of real TF or ipu_gpu) with the Keras optimizer ``make_opt()``."""
    with c.Graph().as_default():
        x = c.placeholder(np.float32, [None, 4], name="x")
        w = c.Variable(W0, name="w")
        b = c.Variable(B0, name="b")

        def loss_fn():
            return tf.reduce_mean(tf.square(tf.matmul(x, w) + b - Y))
        loss = loss_fn()
        opt = make_opt()
        if how == "apply":
            grads = c.gradients(loss, [w, b])
            train = opt.apply_gradients(zip(grads, [w, b]))
        elif how == "minimize":
            train = opt.minimize(loss_fn, var_list=[w, b])
        else:
            train = opt.get_updates(loss, [w, b])
        names = sorted(v.name for v in c.global_variables())
        with c.Session() as sess:
            sess.run(c.global_variables_initializer())
            losses = []
            for _ in range(steps):
                losses.append(sess.run(loss, feed_dict={x: X}))
                assert sess.run(train, feed_dict={x: X}) in (None, [None])
            return (np.array(losses), sess.run([w, b]), int(sess.run(opt.iterations)),
                    names)


def _numpy_sgd(steps=STEPS, lr=0.1):
    w, b = W0.astype(np.float64), B0.astype(np.float64)
    losses = []
    for _ in range(steps):
        r = X @ w + b - Y
        losses.append(np.mean(r * r))
        g = 2 * r / r.size
        w, b = w - lr * X.T @ g, b - lr * g.sum(0)
    return np.array(losses), [w, b]


@pytest.mark.parametrize("how", ["apply", "minimize", "get_updates"])
def test_sgd_steps_once_per_run_as_numpy(how):
    losses, (w, b), iterations, names = _train(v1, ig, lambda: keras.optimizers.SGD(0.1),
                                               how)
    want_losses, (want_w, want_b) = _numpy_sgd()
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5)
    np.testing.assert_allclose(w, want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b, want_b, rtol=1e-5, atol=1e-6)
    assert iterations == STEPS
    assert "SGD/iter:0" in names and "SGD/learning_rate:0" in names


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_matches_real_tf_keras_in_graph_mode(tf_keras, real_tf, optimizer):
    ours = _train(v1, ig, lambda: OPTIMIZERS[optimizer](keras.optimizers), "apply")
    theirs = _train(real_tf.compat.v1, real_tf,
                    lambda: OPTIMIZERS[optimizer](tf_keras.optimizers.legacy), "apply")
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-7)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours[2] == theirs[2] == STEPS


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "rmsprop"])
def test_graph_weights_are_named_and_initialized_as_tf(tf_keras, real_tf, optimizer):
    ours = _train(v1, ig, lambda: OPTIMIZERS[optimizer](keras.optimizers), "minimize", 1)
    theirs = _train(real_tf.compat.v1, real_tf,
                    lambda: OPTIMIZERS[optimizer](tf_keras.optimizers.legacy), "minimize", 1)
    assert ours[3] == theirs[3]


def test_graph_run_equals_the_eager_optimizer():
    got = _train(v1, ig, lambda: keras.optimizers.Adam(0.05), "apply")
    w, b = ig.Variable(W0), ig.Variable(B0)
    opt = keras.optimizers.Adam(0.05)
    for _ in range(STEPS):
        with ig.GradientTape() as tape:
            loss = ig.reduce_mean(ig.square(ig.matmul(ig.constant(X), w) + b - Y))
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
    np.testing.assert_array_equal(got[1][0], w.numpy())
    np.testing.assert_array_equal(got[1][1], b.numpy())


def test_slots_are_made_once_and_reinitialized_with_the_variables():
    with v1.Graph().as_default():
        w = v1.Variable(np.ones(3, np.float32), name="w")
        opt = keras.optimizers.SGD(0.1, momentum=0.9)
        train = opt.minimize(lambda: ig.reduce_sum(w * w), var_list=[w])
        again = opt.minimize(lambda: ig.reduce_sum(w * w), var_list=[w])
        slots = [v for v in v1.global_variables() if "/w/" in v.name]
        assert [v.name for v in slots] == ["SGD/w/momentum:0"]
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(train)
            sess.run(again)
            np.testing.assert_allclose(sess.run(w), 1 - 0.2 - (0.9 * 0.2 + 0.2 * 0.8),
                                       rtol=1e-6)
            assert sess.run(opt.iterations) == 2
            sess.run(v1.global_variables_initializer())  # slots and iterations start again
            assert sess.run(opt.iterations) == 0
            np.testing.assert_array_equal(sess.run(opt.get_slot(w, "momentum")), 0)


def test_errors_are_tfs():
    with v1.Graph().as_default():
        w = v1.Variable(np.ones(3, np.float32), name="w")
        u = v1.Variable(np.ones(3, np.float32), name="u")
        loss = ig.reduce_sum(w * w)
        opt = keras.optimizers.SGD(0.1)
        with pytest.raises(ValueError, match="`tape` is required"):
            opt.minimize(loss, var_list=[w])
        with pytest.raises(ValueError, match="has `None` for gradient"):
            opt.get_updates(loss, [w, u])
    with pytest.raises(RuntimeError, match="tf.gradients is not supported"):
        keras.optimizers.SGD(0.1).get_gradients(ig.constant(1.0), [ig.Variable(1.0)])


def _replicated_keras_run(replicas, steps=3, executions=2, batch=4, lr=0.05, momentum=0.9,
                          average=True):
    """A loops.repeat over an infeed compiled once with ipu_compiler.compile, stepping a Keras
    SGD (momentum) optimizer on gradients averaged across replicas (or not), run
    ``executions`` times. Returns (the host's weights, iterations, every replica's weights)."""
    from conftest import configure_ipus

    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import ipu_compiler, ipu_infeed_queue, loops, scopes
    from ipu_gpu.ops.collectives import cross_replica_mean

    system.reset()
    configure_ipus(replicas)
    ds = ig.data.Dataset.from_tensor_slices((XR, YR)).batch(batch, drop_remainder=True)
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        opt = keras.optimizers.SGD(lr, momentum=momentum)

        def body(x, y):
            w = v1.Variable(np.zeros((3, 1), np.float32), name="w")
            loss = ig.reduce_mean((ig.matmul(x, w) - y) ** 2)
            (g,) = v1.gradients(loss, [w])
            if average:
                g = cross_replica_mean(g)
            return opt.apply_gradients([(g, w)])

        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda: loops.repeat(steps, body, [], infeed), [])
        (w,) = [v for v in v1.global_variables() if v.name == "w:0"]
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            for _ in range(executions):
                sess.run(program)
            out = sess.run(w), int(sess.run(opt.iterations))
    system.reset()
    return out


RR = np.random.default_rng(4)
XR = RR.standard_normal((96, 3)).astype(np.float32)
YR = (XR @ np.array([1.0, -2.0, 0.5], np.float32))[:, None]


def _numpy_momentum(n, updates, lr=0.05, momentum=0.9):
    """Keras SGD momentum on the consecutive batches of ``n`` rows."""
    w, m = np.zeros((3, 1)), np.zeros((3, 1))
    for step in range(updates):
        xb = XR[step * n:(step + 1) * n].astype(np.float64)
        yb = YR[step * n:(step + 1) * n].astype(np.float64)
        g = 2 * xb.T @ (xb @ w - yb) / n
        m = momentum * m - lr * g
        w = w + m
    return w


@pytest.mark.parametrize("replicas", [1, 2])
def test_replicated_program_steps_once_per_iteration_as_the_combined_batch(
        replicas, fresh_ipu_system):
    steps, executions, batch = 3, 2, 4
    w, iterations = _replicated_keras_run(replicas, steps, executions, batch)
    np.testing.assert_allclose(w, _numpy_momentum(batch * replicas, steps * executions),
                               rtol=2e-5, atol=1e-6)
    assert iterations == steps * executions  # each replica counts its own steps


def test_replicas_without_an_all_reduce_diverge_and_the_host_sees_replica_0(
        fresh_ipu_system):
    """Replica 0 takes infeed elements 0, 2, 4, ...: its own momentum model on those."""
    steps, executions, batch = 3, 2, 4
    w, _ = _replicated_keras_run(2, steps, executions, batch, average=False)
    rows = np.concatenate([np.arange(k * 2 * batch, k * 2 * batch + batch)
                           for k in range(steps * executions)])
    want = np.zeros((3, 1))
    m = np.zeros((3, 1))
    for k in range(steps * executions):
        xb = XR[rows[k * batch:(k + 1) * batch]].astype(np.float64)
        yb = YR[rows[k * batch:(k + 1) * batch]].astype(np.float64)
        g = 2 * xb.T @ (xb @ want - yb) / batch
        m = 0.9 * m - 0.05 * g
        want = want + m
    np.testing.assert_allclose(w, want, rtol=2e-5, atol=1e-6)
