"""Host embeddings in TF1 graphs (Graphcore's host_embedding_example.py pattern): the table
made while the graph is built, lookups compiled into IPU programs, `with
embedding.register(sess):` around the Session runs; SGD on the looked-up rows against numpy
and against the same model with an on-device embedding trained by GradientDescent; SGD+GA;
errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compile_on_ipu, configure_ipus

import ipu_gpu.compat.v1 as v1
from ipu_gpu import errors
from ipu_gpu.ipu import embedding_ops, ipu_infeed_queue, loops

pytestmark = pytest.mark.usefixtures("fresh_ipu_system")

TABLE = (np.arange(24, dtype=np.float32).reshape(6, 4) - 10.0) / 8.0
W0 = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(4, 2)
IDS = [np.array([[1, 1], [3, 5]], np.int32), np.array([[0, 5], [5, 2]], np.int32),
       np.array([[4, 1], [9, -2]], np.int32)]  # 9 and -2 are clipped to 5 and 0
LR = 0.25


def _model(rows, w):
    return v1.reduce_sum(v1.square(v1.matmul(v1.reshape(rows, [-1, 4]), w) - 1.0))


def _numpy_reference():
    table, w, losses = TABLE.astype(np.float64), W0.astype(np.float64), []
    for ids in IDS:
        flat = np.clip(ids.ravel(), 0, 5)
        rows = table[flat]
        err = rows @ w - 1.0
        losses.append(np.sum(err ** 2))
        g_rows, g_w = 2 * err @ w.T, rows.T @ (2 * err)
        np.add.at(table, flat, -LR * g_rows)
        w = w - LR * g_w
    return losses, table, w


def _host_embedding_run(compiled):
    configure_ipus(1)
    with v1.Graph().as_default():
        emb = embedding_ops.create_host_embedding(
            "table", [6, 4], v1.float32,
            optimizer_spec=embedding_ops.HostEmbeddingOptimizerSpec(LR),
            initializer=v1.constant_initializer(TABLE))
        ids = v1.placeholder(v1.int32, [2, 2])

        def step(i):
            w = v1.get_variable("w", initializer=v1.constant(W0))
            loss = _model(emb.lookup(i), w)
            return loss, v1.train.GradientDescentOptimizer(LR).minimize(loss)

        out = compile_on_ipu(step, [ids]) if compiled else step(ids)
        assert emb.get_embedding_tensor() in v1.global_variables()
        assert emb.get_embedding_tensor() in v1.trainable_variables()  # as Graphcore's
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            with emb.register(sess) as registered:
                assert registered is emb
                losses = [float(np.ravel(sess.run(out, {ids: i})[0])[0]) for i in IDS]
            table = sess.run(emb.get_embedding_tensor())
            w = sess.run([v for v in v1.global_variables() if v.op.name == "w"][0])
    return losses, table, w


def _device_embedding_run():
    configure_ipus(1)
    with v1.Graph().as_default():
        table = v1.get_variable("table", initializer=v1.constant(TABLE))
        ids = v1.placeholder(v1.int32, [2, 2])

        def step(i):
            w = v1.get_variable("w", initializer=v1.constant(W0))
            rows = v1.nn.embedding_lookup(table, v1.clip_by_value(i, 0, 5))
            loss = _model(rows, w)
            return loss, v1.train.GradientDescentOptimizer(LR).minimize(loss)

        out = compile_on_ipu(step, [ids])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            losses = [float(np.ravel(sess.run(out, {ids: i})[0])[0]) for i in IDS]
            return losses, sess.run(table)


@pytest.mark.parametrize("compiled", [True, False])
def test_sgd_on_looked_up_rows_equals_numpy_and_a_device_embedding(compiled):
    losses, table, w = _host_embedding_run(compiled)
    ref_losses, ref_table, ref_w = _numpy_reference()
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    np.testing.assert_allclose(table, ref_table, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, ref_w, rtol=1e-5, atol=1e-6)
    device_losses, device_table = _device_embedding_run()
    np.testing.assert_allclose(losses, device_losses, rtol=1e-6)
    np.testing.assert_allclose(table, device_table, rtol=1e-6, atol=1e-7)


def test_a_repeat_loop_over_an_infeed_updates_the_table_every_iteration():
    configure_ipus(1)
    batches = np.array([[1, 2], [2, 2], [0, 1], [2, 5]], np.int32)
    with v1.Graph().as_default():
        emb = embedding_ops.create_host_embedding(
            "emb", [6, 4], np.float32,
            optimizer_spec=embedding_ops.HostEmbeddingOptimizerSpec(0.5),
            initializer=lambda shape, dtype: TABLE)
        infeed = ipu_infeed_queue.IPUInfeedQueue(v1.data.Dataset.from_tensor_slices(batches))

        def body(total, i):
            loss = v1.reduce_sum(v1.square(emb.lookup(i)))
            return total + loss, v1.train.GradientDescentOptimizer(0.5).minimize(loss)

        run = compile_on_ipu(lambda: loops.repeat(2, body, [0.0], infeed))
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            with emb.register(sess):
                totals = [float(np.ravel(sess.run(run))[0]) for _ in range(2)]
            table = sess.run(emb.get_embedding_tensor())
    ref, want = TABLE.astype(np.float64), []
    for start in (0, 2):
        total = 0.0
        for ids in batches[start:start + 2]:
            total += np.sum(ref[ids] ** 2)
            np.add.at(ref, ids, -0.5 * 2 * ref[ids])  # lr 0.5, d(x^2) = 2x: rows zeroed
        want.append(total)
    np.testing.assert_allclose(totals, want, rtol=1e-6)
    np.testing.assert_allclose(table, ref, atol=1e-6)


def test_sgd_ga_applies_the_sum_of_updates_every_accumulation_factor_runs():
    with v1.Graph().as_default():
        emb = embedding_ops.create_host_embedding(
            "ga", [6, 4], v1.float32,
            optimizer_spec=embedding_ops.HostEmbeddingSGDGAOptimizerSpec(0.5, 2),
            initializer=v1.constant_initializer(TABLE))
        ids = v1.placeholder(v1.int32, [2])
        loss = v1.reduce_sum(emb.lookup(ids))
        train = v1.train.GradientDescentOptimizer(0.5).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            with emb.register(sess):
                sess.run(train, {ids: [1, 3]})
                after_one = sess.run(emb.get_embedding_tensor())
                sess.run(train, {ids: [1, 4]})
                after_two = sess.run(emb.get_embedding_tensor())
    np.testing.assert_array_equal(after_one, TABLE)  # buffered until the second mini-batch
    want = TABLE.copy()
    for i in (1, 3, 1, 4):
        want[i] -= 0.5
    np.testing.assert_allclose(after_two, want)


def test_graph_errors():
    with v1.Graph().as_default():
        emb = embedding_ops.create_host_embedding(
            "e", [6, 4], v1.float32, initializer=v1.constant_initializer(TABLE))
        assert emb.trainable_variables == []
        rows = emb.lookup(v1.constant([0, 2]))
        assert rows.shape.as_list() == [2, 4]
        with pytest.raises(TypeError, match="must be int32"):
            emb.lookup(v1.constant([0.0]))
        with v1.Session() as sess:
            with pytest.raises(errors.FailedPreconditionError, match="uninitialized"):
                with emb.register(sess):
                    pass
            sess.run(v1.global_variables_initializer())
            with pytest.raises(RuntimeError, match="is not registered"):
                sess.run(rows)
            with emb.register(sess):
                np.testing.assert_array_equal(sess.run(rows), TABLE[[0, 2]])
        with pytest.raises(ValueError, match="rank 2"):
            embedding_ops.create_host_embedding("bad", [6], v1.float32)
