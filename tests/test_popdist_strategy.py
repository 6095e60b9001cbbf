"""ipu.horovod, ipu.distributed (PopDistStrategy, host_collective_ops) and
tf.nn.compute_average_loss on the emulator's one popdist instance: the collectives over one
instance against numpy, the strategy's reductions on the host and in an IPU program of R
replicas, TF1 graphs, and Graphcore's PopDist example shapes run through `ipu-gpu run` with
the numbers of the same program under IPUStrategy and of plain gradient descent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import compile_on_ipu, configure_ipus

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1
from ipu_gpu import distribute
from ipu_gpu.core.indexed_slices import IndexedSlices
from ipu_gpu.ipu import horovod as hvd
from ipu_gpu.ipu import replication_ops
from ipu_gpu.ipu.distributed import host_collective_ops, popdist_strategy
from ipu_gpu.ipu.horovod import popdist_strategy as hvd_popdist_strategy

PROGRAMS = Path(__file__).with_name("programs")
ROOT = str(Path(__file__).resolve().parents[1])
_POPDIST_ENV = ("POPDIST_NUM_INSTANCES", "POPDIST_INSTANCE_INDEX", "POPDIST_NUM_LOCAL_REPLICAS",
                "POPDIST_NUM_IPUS_PER_REPLICA")


@pytest.fixture(autouse=True)
def one_instance(monkeypatch):
    for name in _POPDIST_ENV:
        monkeypatch.delenv(name, raising=False)
    hvd.shutdown()
    yield
    hvd.shutdown()


# ---- horovod --------------------------------------------------------------------------------
def test_horovod_needs_init_and_reports_one_process():
    with pytest.raises(ValueError, match=r"Horovod has not been initialized; use hvd.init\(\)"):
        hvd.size()
    with pytest.raises(ValueError, match="not been initialized"):
        hvd.allreduce(tf.constant([1.0]))
    hvd.init()
    assert hvd.is_initialized()
    assert (hvd.size(), hvd.rank(), hvd.local_size(), hvd.local_rank()) == (1, 0, 1, 0)
    assert hvd.is_homogeneous() and not hvd.mpi_enabled()


def test_horovod_rank_follows_poprun(monkeypatch):
    monkeypatch.setenv("POPDIST_NUM_INSTANCES", "4")
    monkeypatch.setenv("POPDIST_INSTANCE_INDEX", "2")
    hvd.init()
    assert (hvd.size(), hvd.rank()) == (4, 2)
    with pytest.raises(RuntimeError, match="4 instances were launched"):
        hvd.allreduce(tf.constant([1.0]))
    with pytest.raises(RuntimeError, match="instances"):
        host_collective_ops.all_reduce(tf.constant(1.0), distribute.ReduceOp.SUM)


def test_horovod_collectives_over_one_process_equal_numpy():
    hvd.init()
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    for op in (None, hvd.Average, hvd.Sum):
        out = hvd.allreduce(tf.constant(x), op=op)
        assert out.dtype == tf.float32
        np.testing.assert_array_equal(out.numpy(), x / 1 if op != hvd.Sum else x)
    # Horovod's Average is summed / size: integers average to float64 (true division)
    ints = hvd.allreduce(tf.constant([3, 4], tf.int32))
    assert ints.dtype == tf.float64 and ints.numpy().tolist() == [3.0, 4.0]
    assert hvd.allreduce(tf.constant([3, 4]), op=hvd.Sum).dtype == tf.int32
    np.testing.assert_array_equal(hvd.allreduce(tf.Variable(x), op=hvd.Sum).numpy(), x)
    np.testing.assert_array_equal(hvd.allgather(tf.constant(x)).numpy(), x)
    np.testing.assert_array_equal(hvd.broadcast(tf.constant(x), root_rank=0).numpy(), x)
    with pytest.raises(ValueError, match="root_rank"):
        hvd.broadcast(tf.constant(x), root_rank=1)
    with pytest.raises(NotImplementedError, match="The Adasum reduction is not implemented."):
        hvd.allreduce(tf.constant(x), op=hvd.Adasum)
    sparse = IndexedSlices(tf.constant(x), tf.constant([4, 1]), dense_shape=tf.constant([5, 3]))
    got = hvd.allreduce(sparse)
    assert isinstance(got, IndexedSlices)
    np.testing.assert_array_equal(got.values.numpy(), x)
    np.testing.assert_array_equal(got.indices.numpy(), [4, 1])


def test_broadcast_variables_eagerly_and_in_a_graph():
    hvd.init()
    v = tf.Variable([1.0, 2.0])
    assert hvd.broadcast_variables([v], root_rank=0) is None
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not support eager execution"):
        hvd.broadcast_global_variables(0)
    with v1.Graph().as_default():
        w = v1.get_variable("w", initializer=v1.constant([3.0, -1.0]))
        total = hvd.allreduce(w * 2.0, op=hvd.Sum)
        sync = hvd.broadcast_global_variables(0)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            sess.run(sync)
            np.testing.assert_array_equal(sess.run(total), [6.0, -2.0])
            np.testing.assert_array_equal(sess.run(w), [3.0, -1.0])


# ---- compute_average_loss -------------------------------------------------------------------
def test_compute_average_loss_equals_numpy_and_real_tf(real_tf):
    losses = np.array([0.5, 1.5, 2.0, 4.0], np.float32)
    weights = np.array([1.0, 0.0, 2.0, 0.5], np.float32)
    cases = [dict(), dict(global_batch_size=8), dict(sample_weight=weights),
             dict(sample_weight=2.0, global_batch_size=3), dict(global_batch_size=0)]
    expected = [losses.sum() / 4, losses.sum() / 8, (losses * weights).sum() / 4,
                2 * losses.sum() / 3, 0.0]
    for kwargs, want in zip(cases, expected):
        got = tf.nn.compute_average_loss(tf.constant(losses), **kwargs)
        ref = real_tf.nn.compute_average_loss(real_tf.constant(losses), **kwargs)
        assert float(got) == pytest.approx(want, rel=1e-6)
        assert float(got) == float(ref.numpy())
    with pytest.raises(ValueError, match="at least rank 1"):
        tf.nn.compute_average_loss(tf.constant(1.0))
    with pytest.raises(ValueError, match="must be an integer"):
        tf.nn.compute_average_loss(tf.constant(losses), global_batch_size=2.0)
    assert float(tf.nn.scale_regularization_loss(tf.constant([1.0, 3.0]))) == 4.0


@pytest.mark.usefixtures("fresh_ipu_system")
def test_compute_average_loss_uses_the_global_replica_count(monkeypatch):
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    monkeypatch.setenv("POPDIST_NUM_INSTANCES", "3")
    configure_ipus(2)
    strategy = popdist_strategy.PopDistStrategy()
    assert strategy.num_replicas_in_sync == 6
    got = strategy.run(lambda: tf.nn.compute_average_loss(tf.constant([1.0, 2.0, 3.0])))
    assert float(got) == pytest.approx(6.0 / 18)
    with strategy.scope(), pytest.raises(RuntimeError, match="cross replica context"):
        tf.nn.compute_average_loss(tf.constant([1.0]))


# ---- PopDistStrategy ------------------------------------------------------------------------
@pytest.mark.usefixtures("fresh_ipu_system")
def test_popdist_strategy_reduces_across_replicas_in_a_program():
    configure_ipus(2)
    strategy = popdist_strategy.PopDistStrategy()
    assert strategy.num_replicas_in_sync == 1  # one instance, one local replica (no poprun)
    assert strategy.supports_loss_scaling

    def program(x):
        def step(v):
            r = tf.cast(replication_ops.replication_index(), tf.float32)
            rc = distribute.get_replica_context()
            return rc.all_reduce("SUM", v + r), rc.all_reduce("MEAN", v * (r + 1.0)), r
        with strategy.scope():
            summed, mean, r = strategy.run(step, args=(x,))
            return [summed, mean, strategy.reduce("SUM", r), strategy.reduce("MEAN", r + 1.0),
                    strategy.reduce("SUM", x * (r + 1.0), axis=0)]

    out = compile_on_ipu(program, [np.ones(3, np.float32)])
    np.testing.assert_array_equal(out[0], [3.0, 3.0, 3.0])  # (1 + 0) + (1 + 1)
    np.testing.assert_array_equal(out[1], [1.5, 1.5, 1.5])
    assert float(out[2]) == 1.0 and float(out[3]) == 1.5
    assert float(out[4]) == 9.0  # 3 * 1 + 3 * 2
    # on the host: reductions over the one instance leave the value
    with strategy.scope():
        assert float(strategy.reduce(distribute.ReduceOp.SUM, tf.constant(2.5))) == 2.5
        np.testing.assert_array_equal(strategy.reduce("MEAN", tf.constant([1.0, 3.0]), axis=0)
                                      .numpy(), 2.0)


@pytest.mark.usefixtures("fresh_ipu_system")
def test_popdist_strategy_without_ipu_reductions_and_bad_ops():
    configure_ipus(2)
    strategy = popdist_strategy.PopDistStrategy(add_ipu_cross_replica_reductions=False)

    def program():
        r = tf.cast(replication_ops.replication_index(), tf.float32)
        with strategy.scope():
            return strategy.reduce("SUM", r + 1.0)

    assert float(compile_on_ipu(program)[0]) == 1.0  # replica 0's own value
    s = popdist_strategy.PopDistStrategy()
    with pytest.raises(ValueError, match="is not a valid ReduceOp"):
        s.reduce("MAX", tf.constant(1.0))


@pytest.mark.usefixtures("fresh_ipu_system")
def test_popdist_strategy_run_eagerly_is_one_program_on_every_replica():
    configure_ipus(4)
    strategy = popdist_strategy.PopDistStrategy()

    def step(x):
        r = tf.cast(replication_ops.replication_index(), tf.float32)
        return distribute.get_replica_context().all_reduce("SUM", x * r)

    assert float(strategy.run(step, args=(tf.constant(2.0),))) == 12.0  # 2 * (0+1+2+3)
    assert float(strategy.experimental_run_v2(step, args=(tf.constant(1.0),))) == 6.0
    from ipu_gpu.ipu import config as ipu_config

    config = strategy.update_ipu_config(ipu_config.IPUConfig())
    mrd = config.experimental.multi_replica_distribution
    assert (mrd.process_count, mrd.process_index) == (1, 0)


@pytest.mark.usefixtures("fresh_ipu_system")
def test_tf1_popdist_strategy_needs_horovod_and_all_reduces_in_a_graph():
    with pytest.raises(ValueError, match="not been initialized"):
        hvd_popdist_strategy.PopDistStrategy()
    hvd.init()
    configure_ipus(2)
    assert hvd_popdist_strategy.IPUMultiReplicaStrategy is hvd_popdist_strategy.PopDistStrategy
    strategy = hvd_popdist_strategy.PopDistStrategy()
    with v1.Graph().as_default():
        x = v1.placeholder(v1.float32, [2])

        def step(v):
            r = v1.cast(replication_ops.replication_index(), v1.float32)
            return distribute.get_replica_context().all_reduce("SUM", v * (r + 1.0))

        def model(v):
            out = strategy.experimental_run_v2(step, args=(v,))
            return strategy.reduce("SUM", out)

        with strategy.scope():
            compiled = compile_on_ipu(model, [x])
            host = strategy.reduce("MEAN", x * 2.0)
        with v1.Session() as sess:
            got = sess.run(compiled, {x: [1.0, -2.0]})
            np.testing.assert_array_equal(got[0], [6.0, -12.0])  # (1 + 2) summed twice
            np.testing.assert_array_equal(sess.run(host, {x: [1.0, -2.0]}), [2.0, -4.0])


def test_tf1_gradient_tape_in_a_graph_equals_the_eager_tape():
    w0 = np.array([[0.5], [-1.0]], np.float32)
    x0 = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    w = tf.Variable(w0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(tf.matmul(tf.constant(x0), w)))
    eager = tape.gradient(loss, [w])[0].numpy()
    with v1.Graph().as_default():
        gw = v1.get_variable("w", initializer=v1.constant(w0))
        with v1.GradientTape() as gtape:
            gloss = v1.reduce_sum(v1.square(v1.matmul(v1.constant(x0), gw)))
        grads = gtape.gradient(gloss, [gw])
        with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
            gtape.gradient(gloss, [gw])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(grads)[0], eager)


# ---- Graphcore's PopDist examples through `ipu-gpu run` ----------------------------------
def _run(program, *argv, env_extra=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS", *_POPDIST_ENV)}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", program, *map(str, argv)],
                       cwd=PROGRAMS, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _numbers(stdout, key):
    line = next(li for li in stdout.splitlines() if li.startswith(key))
    return [float(v) for v in line.split()[1:]]


@pytest.mark.parametrize("replicas", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_tf1_popdist_example_equals_ipu_strategy_and_gradient_descent(replicas):
    env = {"POPDIST_NUM_LOCAL_REPLICAS": str(replicas)}
    popdist_out = _run("popdist_tf1_training.py", "--replicas", replicas, env_extra=env)
    ipu_out = _run("popdist_tf1_training.py", "--strategy", "ipu", "--replicas", replicas)
    assert popdist_out == ipu_out
    rng = np.random.default_rng(3)
    x = rng.standard_normal((256, 6)).astype(np.float32)
    y = (x @ rng.standard_normal((6, 1)).astype(np.float32)).astype(np.float64)
    x = x.astype(np.float64)
    w, n, losses = np.zeros((6, 1)), 4 * replicas, []
    for epoch in range(3):
        total = 0.0
        for step in range(epoch * 4, epoch * 4 + 4):
            xb, yb = x[step * n:(step + 1) * n], y[step * n:(step + 1) * n]
            total += np.mean((xb @ w - yb) ** 2)
            w = w - 0.05 * 2 * xb.T @ (xb @ w - yb) / n
        losses.append(total / 4)
    got_losses = [float(li.split("=")[1]) for li in popdist_out.splitlines()
                  if li.startswith("Epoch")]
    np.testing.assert_allclose(got_losses, losses, rtol=1e-5)
    np.testing.assert_allclose(_numbers(popdist_out, "weights"), w.ravel(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("replicas", [1, 2])
def test_tf2_popdist_examples_equal_ipu_strategy(replicas, tmp_path):
    env = {"POPDIST_NUM_LOCAL_REPLICAS": str(replicas)}
    saved = tmp_path / "saved_model.h5"
    popdist_out = _run("popdist_tf2_training.py", "--save", saved, env_extra=env)
    ipu_out = _run("popdist_tf2_training.py", "--strategy", "ipu", env_extra=env)
    assert _numbers(popdist_out, "losses") == _numbers(ipu_out, "losses")
    assert _numbers(popdist_out, "weights") == _numbers(ipu_out, "weights")
    assert f"Steps per execution:\t{32 // replicas}" in popdist_out
    assert saved.is_file()
    infer = _run("popdist_tf2_inference.py", "--model", saved, env_extra=env)
    infer_ipu = _run("popdist_tf2_inference.py", "--model", saved, "--strategy", "ipu",
                     env_extra=env)
    assert infer == infer_ipu and infer.startswith("accuracy ")


@pytest.mark.parametrize("replicas", [1, 2])
def test_keras_fit_under_popdist_strategy_equals_ipu_strategy(replicas, monkeypatch):
    """Keras compile/fit/evaluate in a PopDistStrategy's scope run as device programs of
    steps_per_execution steps, with the numbers of the same model under IPUStrategy at the
    learning rate divided by the replica count: PopDistStrategy's num_replicas_in_sync makes
    Keras divide the loss by it (the replicas' gradients averaged), IPUStrategy's 1 leaves
    them summed (issue 16)."""
    from ipu_gpu import keras
    from ipu_gpu.emulation import system
    from ipu_gpu.ipu import ipu_strategy
    from ipu_gpu.popdist import tensorflow as popdist_tf

    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", str(replicas))
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    y = rng.integers(0, 3, 64).astype(np.int32)

    def train(make_strategy, lr):
        system.reset()
        from ipu_gpu.ipu import config as ipu_config

        cfg = ipu_config.IPUConfig()
        popdist_tf.set_ipu_config(cfg)
        cfg.configure_ipu_system()
        strategy = make_strategy()
        with strategy.scope():
            model = keras.Sequential([
                keras.layers.Dense(8, activation="relu",
                                   kernel_initializer=keras.initializers.Constant(0.1)),
                keras.layers.Dense(3, kernel_initializer="ones")])
            model.compile(optimizer=keras.optimizers.SGD(lr),
                          loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                          steps_per_execution=4 // replicas)
            data = tf.data.Dataset.from_tensor_slices((x, y)).batch(8, drop_remainder=True)
            history = model.fit(data, epochs=2, verbose=0)
            return history.history["loss"], model.evaluate(data, verbose=0), \
                model.get_weights()

    popdist_run = train(popdist_strategy.PopDistStrategy, 0.05)
    ipu_run = train(ipu_strategy.IPUStrategy, 0.05 / replicas)
    assert popdist_run[0] == ipu_run[0] and popdist_run[1] == ipu_run[1]
    for a, b in zip(popdist_run[2], ipu_run[2]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.usefixtures("fresh_ipu_system")
def test_ipu_horovod_strategy_reduces_over_workers_only():
    from ipu_gpu.ipu.horovod import ipu_horovod_strategy

    with pytest.raises(ValueError, match="not been initialized"):
        ipu_horovod_strategy.IPUHorovodStrategy()
    hvd.init()
    configure_ipus(2)
    strategy = ipu_horovod_strategy.IPUHorovodStrategy(variables_on_host=True)
    assert strategy.num_replicas_in_sync == 1

    def program():
        r = tf.cast(replication_ops.replication_index(), tf.float32)
        with strategy.scope():
            return [strategy.reduce("SUM", r + 1.0),
                    strategy.run(lambda: distribute.get_replica_context().all_reduce(
                        "MEAN", r + 2.0))]

    out = compile_on_ipu(program)
    assert float(out[0]) == 1.0 and float(out[1]) == 2.0  # replica 0's own values


@pytest.mark.usefixtures("fresh_ipu_system")
def test_popdist_strategy_reduces_a_list_as_one_tensor():
    configure_ipus(2)
    strategy = popdist_strategy.PopDistStrategy()

    def program():
        r = tf.cast(replication_ops.replication_index(), tf.float32)
        return strategy.reduce("SUM", [r + 1.0, 2.0 * r])

    out = compile_on_ipu(program)
    np.testing.assert_array_equal(out[0], [3.0, 2.0])  # [1 + 2, 0 + 2]
