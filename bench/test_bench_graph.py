"""TF1 graph mode (issue 17's speed row): one ``Session.run`` of a compiled 100-iteration
``loops.repeat`` training loop of a small MLP (64-128-10, batch 32, GradientDescent) over an
infeed, against real TensorFlow's tf.compat.v1 graph mode on the CPU running the same graph
the way a CPU user does: a Python loop of 100 ``sess.run(train_op)`` on a dataset iterator.

Group ``tf1_graph_train-mlp-b32``; target (bench/report.py): at most 1.0x TensorFlow's time.
"""

from __future__ import annotations

import numpy as np
import pytest
from benchutil import impl_params, paired_with, require, rng

STEPS, BATCH, IN, HIDDEN, OUT = 100, 32, 64, 128, 10
IMPLS = impl_params(cpu=("ipu_gpu", "tensorflow"), gpu=())


def _data():
    g = rng(17)
    x = g.standard_normal((STEPS * BATCH, IN), dtype=np.float32)
    y = g.integers(0, OUT, STEPS * BATCH).astype(np.int32)
    w1 = (g.standard_normal((IN, HIDDEN)) * 0.1).astype(np.float32)
    w2 = (g.standard_normal((HIDDEN, OUT)) * 0.1).astype(np.float32)
    return x, y, w1, w2


def _loss(tf, x, y, w1, w2):
    h = tf.nn.relu(tf.matmul(x, w1))
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=y, logits=tf.matmul(h, w2)))


def _ours():
    import ipu_gpu
    import ipu_gpu.compat.v1 as v1
    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import config, ipu_compiler, ipu_infeed_queue, loops, scopes

    x, y, w1_0, w2_0 = _data()
    system.reset()
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    graph = v1.Graph()
    with graph.as_default():
        ds = ipu_gpu.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True)
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds.repeat())
        w1, w2 = v1.Variable(w1_0), v1.Variable(w2_0)

        def body(total, xb, yb):
            loss = _loss(ipu_gpu, xb, yb, w1, w2)
            train = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
            with v1.control_dependencies([train]):
                return total + loss

        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(
                lambda: loops.repeat(STEPS, body, [ipu_gpu.constant(0.0)], infeed), [])
        sess = v1.Session()
        sess.run(infeed.initializer)
        sess.run(v1.global_variables_initializer())
    return lambda: sess.run(program)


def _tensorflow():
    tf = require("tensorflow").tf
    c = tf.compat.v1
    x, y, w1_0, w2_0 = _data()
    graph = tf.Graph()
    with graph.as_default():
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True)
        xb, yb = c.data.make_one_shot_iterator(ds.repeat()).get_next()
        w1, w2 = tf.Variable(w1_0), tf.Variable(w2_0)
        loss = _loss(tf, xb, yb, w1, w2)
        train = c.train.GradientDescentOptimizer(0.01).minimize(loss)
        sess = c.Session(graph=graph)
        sess.run(c.global_variables_initializer())

    def steps():
        for _ in range(STEPS):
            sess.run(train)
    return steps


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.benchmark(group=f"tf1_graph_train-mlp-b{BATCH}")
def test_tf1_graph_training_loop(run, ipu_backend, impl):
    make = {"ipu_gpu": _ours, "tensorflow": _tensorflow}[impl]
    fn = make()
    fn()
    paired = paired_with(impl, lambda peer: {"tensorflow": _tensorflow}[peer](),
                         peer="tensorflow")
    run(fn, impl=impl, paired=paired, warmup=1,
        sizes={"steps": STEPS, "batch": BATCH, "mlp": f"{IN}-{HIDDEN}-{OUT}"})
