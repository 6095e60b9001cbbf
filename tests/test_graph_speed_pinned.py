"""A short TF1 training loop (``ipu_compiler.compile`` of a ``loops.repeat`` over an infeed,
the loss sent to an outfeed), pinned bit for bit by references that share none of issue 17's
speed paths: the same steps run eagerly (the eager tape and ``apply_gradients`` executing
now, no graph, plan or update node) on the elements the prefetch thread reads, and for
``GradientDescentOptimizer`` TF's update ``var - lr * grad`` in numpy. The graph run takes
the fast paths: the consumer reading the in-memory dataset, replayed plans, update nodes
called by position with no tape recording their arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu
import ipu_gpu.compat.v1 as v1
from ipu_gpu.core import backend
from ipu_gpu.emulation import system
from ipu_gpu.ipu import config, ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops
from ipu_gpu.ipu import scopes

STEPS, RUNS, BATCH = 4, 3, 8


def _data():
    g = np.random.default_rng(1717)
    x = g.standard_normal((6 * BATCH, 8), dtype=np.float32)
    y = g.integers(0, 4, 6 * BATCH).astype(np.int32)
    w1 = (g.standard_normal((8, 16)) * 0.3).astype(np.float32)
    w2 = (g.standard_normal((16, 4)) * 0.3).astype(np.float32)
    return x, y, w1, w2


OPTIMIZERS = {
    "sgd": lambda: v1.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: v1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adam": lambda: v1.train.AdamOptimizer(0.01),
    "rmsprop": lambda: v1.train.RMSPropOptimizer(0.01, momentum=0.5),
    "adagrad": lambda: v1.train.AdagradOptimizer(0.1),
}


def _loss(xb, yb, w1, w2):
    h = ipu_gpu.nn.relu(ipu_gpu.matmul(xb, w1))
    return ipu_gpu.reduce_mean(ipu_gpu.nn.sparse_softmax_cross_entropy_with_logits(
        labels=yb, logits=ipu_gpu.matmul(h, w2)))


def _dataset(x, y):
    return ipu_gpu.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, True).repeat()


def _graph_run(opt):
    """(losses, final weights) of RUNS Session.runs of a STEPS-iteration program."""
    x, y, w1_0, w2_0 = _data()
    system.reset()
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(_dataset(x, y))
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        w1, w2 = v1.Variable(w1_0), v1.Variable(w2_0)

        def body(xb, yb):
            loss = _loss(xb, yb, w1, w2)
            train = OPTIMIZERS[opt]().minimize(loss)
            with v1.control_dependencies([train]):
                return outfeed.enqueue(loss)
        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda: loops.repeat(STEPS, body, [], infeed), [])
        dequeue = outfeed.dequeue()
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            losses = []
            for _ in range(RUNS):
                sess.run(program)
                losses.extend(np.asarray(sess.run(dequeue)).ravel())
            weights = sess.run([w1, w2])
        assert isinstance(infeed._prefetcher, ipu_infeed_queue._InlineReader) or \
            backend.backend_name() != "cpu"
    return np.array(losses, np.float32), weights


def _eager_run(opt, monkeypatch):
    """The same steps eagerly, on the elements the prefetch thread reads."""
    monkeypatch.setattr(ipu_infeed_queue.IPUInfeedQueue, "_reader",
                        lambda self: ipu_infeed_queue._Prefetcher(
                            self._source, self._prefetch_depth, self._name))
    x, y, w1_0, w2_0 = _data()
    queue = ipu_infeed_queue.IPUInfeedQueue(_dataset(x, y))
    w1, w2 = ipu_gpu.Variable(w1_0), ipu_gpu.Variable(w2_0)
    optimizer = OPTIMIZERS[opt]()
    losses, sgd_checked = [], 0
    for _ in range(STEPS * RUNS):
        xb, yb = queue._next_element()
        with ipu_gpu.GradientTape() as tape:
            loss = _loss(xb, yb, w1, w2)
        grads = tape.gradient(loss, [w1, w2])
        before = [w1.numpy(), w2.numpy()]
        optimizer.apply_gradients(zip(grads, [w1, w2]))
        if opt == "sgd":  # TF's ApplyGradientDescent: var - lr * grad, in float32
            for w, b, g in zip((w1, w2), before, grads):
                np.testing.assert_array_equal(w.numpy(), b - np.float32(0.1) * g.numpy())
                sgd_checked += 1
        losses.append(loss.numpy())
    assert isinstance(queue._prefetcher, ipu_infeed_queue._Prefetcher)
    queue.deleter.run()
    assert sgd_checked == (2 * STEPS * RUNS if opt == "sgd" else 0)
    return np.array(losses, np.float32), [w1.numpy(), w2.numpy()]


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_graph_training_loop_equals_the_eager_steps_bit_for_bit(opt, monkeypatch):
    losses, weights = _graph_run(opt)
    want_losses, want_weights = _eager_run(opt, monkeypatch)
    assert losses.shape == (STEPS * RUNS,) and np.all(np.isfinite(losses))
    assert len(set(losses.tolist())) > STEPS  # the weights moved: the losses differ
    np.testing.assert_array_equal(losses, want_losses)
    for got, want in zip(weights, want_weights):
        np.testing.assert_array_equal(got, want)
