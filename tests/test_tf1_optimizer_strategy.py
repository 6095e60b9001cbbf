"""TF1 ``tf.train`` optimizers executing eagerly (TF 2 programs using ``tf.compat.v1.train``)
and under a strategy, as TF 1.15's ``Optimizer`` with Graphcore's ``IPUStrategy``: eager
``minimize`` of a callable loss steps at once (against real TF); in a replica context
``apply_gradients`` sums the gradients over the replicas (``merge_call`` ->
``batch_reduce_to(SUM)`` -> ``cross_replica_sum`` on the IPU, ``num_replicas_in_sync`` 1 so
the loss is not scaled); outside a strategy replicas keep their own updates."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1

OPTIMIZERS = {
    "sgd": lambda c: c.train.GradientDescentOptimizer(0.1),
    "nesterov": lambda c: c.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "adam": lambda c: c.train.AdamOptimizer(0.05),
    "rmsprop_centered": lambda c: c.train.RMSPropOptimizer(0.01, momentum=0.5,
                                                           centered=True),
    "adagrad": lambda c: c.train.AdagradOptimizer(0.1),
    "adadelta": lambda c: c.train.AdadeltaOptimizer(0.5),
    "ftrl": lambda c: c.train.FtrlOptimizer(0.1),
}

RNG = np.random.default_rng(5)
XS = RNG.standard_normal((3, 6, 3)).astype(np.float32)
YS = RNG.standard_normal((3, 6, 2)).astype(np.float32)
W0 = (RNG.standard_normal((3, 2)) * 0.5).astype(np.float32)


def _eager_steps(tf, optimizer):
    """Three eager ``minimize`` steps of a linear least-squares model; returns the losses,
    the weights, the global step and Adam's/the slots' names."""
    w = tf.Variable(W0, name="w")
    step = tf.Variable(np.int64(0), name="global_step")
    opt = OPTIMIZERS[optimizer](tf.compat.v1)
    losses = []
    for x, y in zip(XS, YS):
        def loss(x=x, y=y):
            return tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
        losses.append(float(loss()))
        assert opt.minimize(loss, global_step=step, var_list=[w]) is None
    return np.array(losses), w.numpy(), int(step.numpy()), opt.get_slot_names()


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_eager_minimize_steps_at_once_as_real_tf(real_tf, optimizer):
    ours = _eager_steps(ig, optimizer)
    theirs = _eager_steps(real_tf, optimizer)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, atol=1e-7)
    assert ours[2:] == theirs[2:] == (3, ours[3])


@pytest.mark.parametrize("library", ["ipu_gpu", "tensorflow"])
def test_eager_compute_gradients_wants_a_callable_loss(real_tf, library):
    tf = ig if library == "ipu_gpu" else real_tf
    w = tf.Variable(np.ones(2, np.float32))
    loss = tf.reduce_sum(w * w)
    with pytest.raises(RuntimeError, match="should be a function when eager execution"):
        tf.compat.v1.train.GradientDescentOptimizer(0.1).compute_gradients(loss, [w])
    pairs = tf.compat.v1.train.GradientDescentOptimizer(0.1).compute_gradients(
        lambda: tf.reduce_sum(w * w * 3.0))  # var_list: the variables the loss read
    assert len(pairs) == 1 and pairs[0][1] is w
    np.testing.assert_array_equal(pairs[0][0].numpy(), [6.0, 6.0])


class _PlainSGD(v1.train.Optimizer):
    """An ``Optimizer`` subclass as programs write them."""

    def __init__(self, lr):
        super().__init__(False, "PlainSGD")
        self._lr = lr

    def _apply_dense(self, grad, var):
        return var.assign_sub(grad * self._lr)


def _replicated(replicas, make_opt, strategy=True, steps=2, lr=0.5):
    """``steps`` iterations of ``loops.repeat`` over an infeed (replica r takes element
    step * R + r), a tf.train ``make_opt(lr)`` minimizing a linear loss, in an
    ``IPUStrategy.run`` of a tf.function (or an ``ipu_compiler.compile`` without a
    strategy). Returns the host's weights and the data."""
    from conftest import configure_ipus

    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import ipu_compiler, ipu_infeed_queue, ipu_strategy, loops, scopes

    system.reset()
    configure_ipus(replicas)
    x_all = (np.arange(2 * steps * replicas * 2, dtype=np.float32).reshape(-1, 2) / 10)
    ds = ig.data.Dataset.from_tensor_slices(x_all).batch(2, drop_remainder=True)
    infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
    w = ig.Variable(np.ones((2, 1), np.float32))
    opt = make_opt(lr)

    def body(x):
        return opt.minimize(lambda: ig.reduce_sum(ig.matmul(x, w)), var_list=[w])

    def program():
        return loops.repeat(steps, body, [], infeed)

    if strategy:
        strategy = ipu_strategy.IPUStrategy()
        with strategy.scope():
            strategy.run(ig.function(program))
    else:
        with scopes.ipu_scope("/device:IPU:0"):
            ipu_compiler.compile(program, [])
    result = w.numpy().ravel()
    system.reset()
    return result, x_all


@pytest.mark.parametrize("replicas", [1, 2, 4])
@pytest.mark.parametrize("make_opt", [v1.train.GradientDescentOptimizer, _PlainSGD],
                         ids=["GradientDescent", "subclass"])
def test_ipu_strategy_sums_the_replicas_gradients(replicas, make_opt, fresh_ipu_system):
    """d loss / d w of sum(x @ w) is the column sums of x; each step every replica's
    copy takes lr times the sum over the replicas' batches (numpy model of R replicas)."""
    steps, lr = 2, 0.5
    got, x_all = _replicated(replicas, make_opt, steps=steps, lr=lr)
    want = np.ones(2, np.float32)
    for step in range(steps):
        batches = x_all.reshape(-1, 2, 2)[step * replicas:(step + 1) * replicas]
        want = want - np.float32(lr) * batches.sum(axis=(0, 1))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_without_a_strategy_each_replica_applies_its_own_gradient(fresh_ipu_system):
    """``ipu_compiler.compile`` outside a strategy: no all-reduce, the host sees replica
    0's copy, which took only replica 0's batches."""
    steps, lr, replicas = 2, 0.5, 2
    got, x_all = _replicated(replicas, v1.train.GradientDescentOptimizer, strategy=False,
                             steps=steps, lr=lr)
    batches = x_all.reshape(-1, 2, 2)
    want = np.ones(2, np.float32)
    for step in range(steps):
        want = want - np.float32(lr) * batches[step * replicas].sum(axis=0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
