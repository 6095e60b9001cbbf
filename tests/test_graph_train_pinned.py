"""A short TF1 training run pinned three ways: the compiled ``loops.repeat`` over an infeed
(plans replayed across iterations and ``Session.run`` calls, the backward plan, update nodes)
and a plain ``Session.run([loss, train_op], feed_dict)`` loop (the session's plans) give the
same losses and weights bit for bit; both equal a float64 numpy model of the training to
float32 accuracy; and both equal, to a few float32 ulps (BLAS sums in a CPU-dependent order),
the values recorded before issue 17's planned-replay work (``PINNED``)."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu
import ipu_gpu.compat.v1 as v1
from ipu_gpu.emulation import system
from ipu_gpu.ipu import config, ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops
from ipu_gpu.ipu import scopes

BATCH, IN, HIDDEN, OUT, STEPS, RUNS = 4, 4, 8, 2, 3, 2
LR, MOMENTUM = 0.125, 0.5


def _data():
    g = np.random.default_rng(1718)
    x = g.standard_normal((2 * BATCH, IN)).astype(np.float32)
    y = g.standard_normal((2 * BATCH, OUT)).astype(np.float32)
    w1 = (g.standard_normal((IN, HIDDEN)) * 0.5).astype(np.float32)
    w2 = (g.standard_normal((HIDDEN, OUT)) * 0.5).astype(np.float32)
    return x, y, w1, w2


def _rows(step):
    return slice((step % 2) * BATCH, (step % 2 + 1) * BATCH)


def _optimizer(name):
    if name == "sgd":
        return v1.train.GradientDescentOptimizer(LR)
    return v1.train.MomentumOptimizer(LR, MOMENTUM)


def _loss(xb, yb, w1, w2):
    pred = ipu_gpu.matmul(ipu_gpu.nn.relu(ipu_gpu.matmul(xb, w1)), w2)
    return ipu_gpu.reduce_mean(ipu_gpu.square(pred - yb))


def _numpy(name, steps):
    """(losses, weights) of ``steps`` steps in float64 numpy."""
    x, y, w1, w2 = (a.astype(np.float64) for a in _data())
    accum = [np.zeros_like(w1), np.zeros_like(w2)]
    losses = []
    for step in range(steps):
        xb, yb = x[_rows(step)], y[_rows(step)]
        z = xb @ w1
        h = np.maximum(z, 0)
        d = h @ w2 - yb
        losses.append(np.mean(d ** 2))
        gp = 2 * d / d.size
        grads = [xb.T @ ((gp @ w2.T) * (z > 0)), h.T @ gp]
        for j, (w, g) in enumerate(zip((w1, w2), grads)):
            if name == "sgd":
                w -= LR * g
            else:  # TF's ApplyMomentum: accum = momentum accum + grad; var -= lr accum
                accum[j] = MOMENTUM * accum[j] + g
                w -= LR * accum[j]
    return np.array(losses), [w1, w2]


def _configure():
    system.reset()
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()


def _program_run(name):
    x, y, w1_0, w2_0 = _data()
    _configure()
    with v1.Graph().as_default():
        ds = ipu_gpu.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, True).repeat()
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()
        w1, w2 = v1.Variable(w1_0), v1.Variable(w2_0)

        def body(xb, yb):
            loss = _loss(xb, yb, w1, w2)
            with v1.control_dependencies([_optimizer(name).minimize(loss)]):
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
            return np.array(losses, np.float32), sess.run([w1, w2])


def _feed_run(name):
    x, y, w1_0, w2_0 = _data()
    with v1.Graph().as_default():
        xb = v1.placeholder(np.float32, [BATCH, IN])
        yb = v1.placeholder(np.float32, [BATCH, OUT])
        w1, w2 = v1.Variable(w1_0), v1.Variable(w2_0)
        loss = _loss(xb, yb, w1, w2)
        train = _optimizer(name).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            losses = []
            for step in range(STEPS * RUNS):
                value, _ = sess.run([loss, train], {xb: x[_rows(step)], yb: y[_rows(step)]})
                losses.append(value)
            return np.array(losses, np.float32), sess.run([w1, w2])


@pytest.mark.parametrize("name", ["sgd", "momentum"])
def test_training_run_is_pinned(name):
    losses, weights = _program_run(name)
    feed_losses, feed_weights = _feed_run(name)
    want_losses, want_weights = _numpy(name, STEPS * RUNS)
    assert losses.dtype == np.float32 and losses.shape == (STEPS * RUNS,)
    np.testing.assert_array_equal(losses, feed_losses)
    for got, other in zip(weights, feed_weights):
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, other)
    np.testing.assert_allclose(losses, want_losses, rtol=2e-6, atol=1e-6)
    for got, want in zip(weights, want_weights):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
    pinned_losses, pinned_w2 = PINNED[name]
    np.testing.assert_allclose(losses, pinned_losses, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(weights[1][:, 0], pinned_w2, rtol=1e-6, atol=1e-7)


# recorded on an AMD EPYC (AVX2, OpenBLAS Haswell kernels) at 587a08e, before the work
PINNED = {
    "sgd": ([1.478585958480835, 2.2040696144104004, 0.7918610572814941, 1.1525607109069824,
             0.633800745010376, 0.9448568224906921],
            [0.019008802250027657, 0.23534458875656128, -0.32887277007102966,
             0.3191055953502655, -0.7309591770172119, 0.02581743337213993, 0.4732014536857605,
             -0.0774528831243515]),
    "momentum": ([1.478585958480835, 2.2040696144104004, 0.6890895366668701,
                  1.1128325462341309, 0.5426912903785706, 0.7387433648109436],
                 [0.0687476098537445, 0.2404337227344513, -0.28578245639801025,
                  0.24325868487358093, -0.6627964377403259, -0.05129851773381233,
                  0.48404601216316223, -0.03063349798321724]),
}
