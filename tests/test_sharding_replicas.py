"""A program sharded with ``ipu.scopes.ipu_shard`` takes IPUs, as on the SDK: a replica takes
the highest shard index + 1 IPUs (rounded up to a power of two, Graphcore's
``NumIPUsInShards``), the device runs IPUs / shards replicas, a count that does not divide the
device's IPUs is the SDK's ``InternalError``; tensors made in a shard's scope are charged to
that IPU's memory; no number changes (checked against numpy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ipu_gpu as tf
import ipu_gpu.compat.v1 as v1
from ipu_gpu import errors
from ipu_gpu.emulation import context, system
from ipu_gpu.ipu import (config, cross_replica_ops, ipu_compiler, ipu_outfeed_queue,
                         ipu_strategy, loops, scopes)

pytestmark = pytest.mark.usefixtures("fresh_ipu_system")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAM = os.path.join(ROOT, "tests", "programs", "tf1_sharding.py")
_IPU_GPU_RUN = "import sys\nfrom ipu_gpu.cli import main\nsys.exit(main(['run', *sys.argv[1:]]))\n"
_TOO_MANY = (r"Trying to compile a graph for an IPU device with {} IPUs and {} shards\. The "
             r"number of shards needs to divide the number of IPUs\.")

_X = np.arange(6, dtype=np.float32).reshape(2, 3)


def _configure(n):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = n
    cfg.configure_ipu_system()
    return system.current_system()


def _sharded(x, last_shard=1, seen=None):
    with scopes.ipu_shard(0):
        a = x * 2.0 + 1.0
    with scopes.ipu_shard(last_shard):
        b = tf.reduce_sum(a * a, axis=1)
        if seen is not None:
            seen.append(context.current().replication_factor)
        return b, cross_replica_ops.cross_replica_sum(b)


def _reference():
    a = _X.astype(np.float64) * 2.0 + 1.0
    return (a * a).sum(axis=1)


@pytest.mark.parametrize("ipus,last_shard,replicas", [
    (2, 1, 1), (4, 1, 2), (4, 2, 1), (4, 3, 1), (8, 2, 2), (2, 0, 2)])
def test_eager_compile_runs_ipus_over_shards_replicas(ipus, last_shard, replicas):
    _configure(ipus)
    seen = []
    with scopes.ipu_scope("/device:IPU:0"):
        b, total = ipu_compiler.compile(lambda x: _sharded(x, last_shard, seen), [_X])
    # a program stopped for more shards is run again: the last start's replicas finished
    assert seen[-replicas:] == [replicas] * replicas
    np.testing.assert_allclose(b.numpy(), _reference(), rtol=1e-6)
    np.testing.assert_allclose(total.numpy(), replicas * _reference(), rtol=1e-6)


@pytest.mark.parametrize("ipus,last_shard,shards", [(1, 1, 2), (2, 2, 4), (4, 4, 8)])
def test_more_shards_than_ipus_is_the_sdk_internal_error(ipus, last_shard, shards):
    _configure(ipus)
    with scopes.ipu_scope("/device:IPU:0"):
        with pytest.raises(errors.InternalError, match=_TOO_MANY.format(ipus, shards)):
            ipu_compiler.compile(lambda x: _sharded(x, last_shard), [_X])


def test_sharding_outside_a_program_takes_no_ipus():
    _configure(2)
    with scopes.ipu_shard(5):  # only a scope: no program is running or traced
        pass
    with scopes.ipu_scope("/device:IPU:0"):
        (out,) = ipu_compiler.compile(
            lambda x: cross_replica_ops.cross_replica_sum(x), [_X])
    np.testing.assert_array_equal(out.numpy(), 2 * _X)  # unsharded: 2 replicas


def test_tensors_of_a_shard_are_charged_to_its_ipu():
    s = _configure(2)
    ledgers = [ipu.memory for ipu in s.devices[0].ipus]
    used = []

    def comp():
        with scopes.ipu_shard(0):
            a = tf.zeros((100,), tf.float32)  # 400 bytes on the replica's first IPU
        with scopes.ipu_shard(1):
            b = tf.ones((2000,), tf.float32)  # 8000 bytes on its second
            used.append([ipu.memory.used for ipu in context.current().ipus])
        return a, b

    _, b = ipu_compiler_compile(comp)
    assert used[-1] == [400, 8000]
    assert [ledger.used for ledger in ledgers] == [0, 0]
    assert ledgers[1].peak >= 8000 > ledgers[0].peak
    assert b.numpy().sum() == 2000


def ipu_compiler_compile(fn, inputs=None):
    with scopes.ipu_scope("/device:IPU:0"):
        return ipu_compiler.compile(fn, inputs)


def _tf1_program(ipus, last_shard, steps=3):
    """The tutorial's shape of program in a TF1 graph: a loop of sharded steps with an
    outfeed, run by a Session; the dequeued outfeed."""
    with v1.Graph().as_default():
        with v1.device("cpu"):
            x = v1.placeholder(np.float32, [2, 3], name="x")
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

        def body(x):
            b, total = _sharded(x, last_shard)
            return outfeed.enqueue([b, total])

        with scopes.ipu_scope("/device:IPU:0"):
            program = ipu_compiler.compile(lambda x: loops.repeat(steps, lambda: body(x)), [x])
        dequeue = outfeed.dequeue()
        _configure(ipus)
        with v1.Session() as sess:
            sess.run(program, {x: _X})
            return sess.run(dequeue)


@pytest.mark.parametrize("ipus,replicas", [(2, 1), (4, 2)])
def test_tf1_graph_outfeed_has_a_replica_dimension_only_when_replicated(ipus, replicas):
    b, total = _tf1_program(ipus, 1)
    if replicas == 1:  # the SDK's outfeed: [steps, ...] without replication
        assert b.shape == (3, 2)
        np.testing.assert_allclose(b, np.broadcast_to(_reference(), (3, 2)), rtol=1e-6)
    else:  # [steps, replicas, ...]
        assert b.shape == (3, replicas, 2)
        np.testing.assert_allclose(b, np.broadcast_to(_reference(), (3, replicas, 2)),
                                   rtol=1e-6)
    np.testing.assert_allclose(total, replicas * np.asarray(b), rtol=1e-6)


def test_tf1_graph_with_too_many_shards_fails_when_run():
    with pytest.raises(errors.InternalError, match=_TOO_MANY.format(2, 4)):
        _tf1_program(2, 2)


@pytest.mark.parametrize("ipus,replicas", [(2, 1), (4, 2)])
def test_tf2_function_under_ipu_strategy(ipus, replicas):
    _configure(ipus)
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        @tf.function
        def step(x):
            return _sharded(x)

        b, total = strategy.run(step, args=[tf.constant(_X)])
    np.testing.assert_allclose(b.numpy(), _reference(), rtol=1e-6)
    np.testing.assert_allclose(total.numpy(), replicas * _reference(), rtol=1e-6)


def test_tf2_function_with_too_many_shards():
    _configure(2)
    strategy = ipu_strategy.IPUStrategy()
    with strategy.scope():
        step = tf.function(lambda x: _sharded(x, 3))
        with pytest.raises(errors.InternalError, match=_TOO_MANY.format(2, 4)):
            strategy.run(step, args=[tf.constant(_X)])


def _ipu_gpu_run(tmp_path, ipus, *options):
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS",
                        "IPU_GPU_REPORT_DIR")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", _IPU_GPU_RUN, *options, PROGRAM, str(ipus)],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines()
                 if line.split(" ", 1)[0] in ("FIRST_SHAPE", "SECOND_SHAPE", "SECOND"))
    return r, {k: json.loads(v) for k, v in lines.items()}


def _program_reference(replicas, steps=3):
    """tests/programs/tf1_sharding.py in numpy: replica r of step s takes element
    (s * replicas + r) mod 3 of the repeated 3-element dataset."""
    features = np.arange(12, dtype=np.float64).reshape(3, 4)
    second = ((features * 2.0 + 1.0) ** 2).sum(axis=1)
    return [second[(s * replicas + r) % 3] for s in range(steps) for r in range(replicas)]


@pytest.mark.slow  # three programs in subprocesses; the in-process tests above are fast
def test_sharding_tutorial_through_ipu_gpu_run(tmp_path):
    r, out = _ipu_gpu_run(tmp_path, 2, "--report", str(tmp_path / "report"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert out["FIRST_SHAPE"] == [3, 4] and out["SECOND_SHAPE"] == [3]  # one replica
    np.testing.assert_allclose(out["SECOND"], _program_reference(1), rtol=1e-6)
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary["throughput"]["replicas"] == 1
    assert len(summary["memory"]) == 2  # one replica on both IPUs
    # IPU 0: the infeed element, x * scale and + 1 (16 bytes each); IPU 1, shard 1's ops:
    # first * first (16 bytes) and its sum (4)
    assert [m["peak_bytes"] for m in summary["memory"]] == [48, 20], summary["memory"]
    r, out = _ipu_gpu_run(tmp_path, 4)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert out["FIRST_SHAPE"] == [3, 2, 4] and out["SECOND_SHAPE"] == [3, 2]
    np.testing.assert_allclose(out["SECOND"], _program_reference(2), rtol=1e-6)
    r, _ = _ipu_gpu_run(tmp_path, 1)
    assert r.returncode != 0
    assert "InternalError: Trying to compile a graph for an IPU device with 1 IPUs and 2 " \
           "shards" in r.stderr


def test_strategy_with_fixed_shards_and_too_many_is_the_sdk_error():
    _configure(2)
    strategy = ipu_strategy.IPUStrategy()
    with pytest.raises(errors.InternalError, match=_TOO_MANY.format(2, 4)):
        strategy.extended._call_for_each_replica(lambda x: _sharded(x, 3), (_X,), {},
                                                 num_shards=2)


@pytest.mark.parametrize("num_shards,last_shard,replicas", [(2, 1, 2), (2, 3, 1), (4, 0, 1)])
def test_strategy_with_fixed_shards_takes_the_program_shards_too(num_shards, last_shard,
                                                                 replicas):
    _configure(4)
    strategy = ipu_strategy.IPUStrategy()
    seen = []
    b, total = strategy.extended._call_for_each_replica(
        lambda x: _sharded(x, last_shard, seen), (_X,), {}, num_shards=num_shards)
    assert seen[-replicas:] == [replicas] * replicas
    np.testing.assert_allclose(total.numpy(), replicas * _reference(), rtol=1e-6)


def test_saved_model_engine_with_too_many_shards_is_the_sdk_error():
    from ipu_gpu.saved_model import engine as saved_engine

    _configure(2)
    with pytest.raises(errors.InternalError, match=_TOO_MANY.format(2, 4)):
        saved_engine._on_device(lambda x: _sharded(x, 2), _X)
    b, total = saved_engine._on_device(lambda x: _sharded(x, 1), _X)  # one replica of 2
    np.testing.assert_allclose(total.numpy(), _reference(), rtol=1e-6)


@pytest.mark.parametrize("steps", [1, 3])
def test_tf1_graph_nodes_run_on_their_shard(steps):
    """A TF1 graph's nodes built under ipu_shard(k) are charged to the replica's IPU k, in
    the Session's first walk and in the plans that replay it (a loop's later iterations,
    the next run): each execution's per-IPU peak is the bytes of that shard's tensors."""
    from ipu_gpu.emulation import observe
    from ipu_gpu.report import Recorder

    s = _configure(2)
    ipus = [ipu.id for ipu in s.devices[0].ipus]
    with v1.Graph().as_default():
        with v1.device("cpu"):
            x = v1.placeholder(np.float32, [1000], name="x")

        def step(total):
            with scopes.ipu_shard(0):
                a = x * 2.0 + 1.0  # two 4000-byte tensors on IPU 0
            with scopes.ipu_shard(1):
                b = tf.tile(a, [3])  # 12000 bytes on IPU 1, a 4-byte sum and total
                return total + tf.reduce_sum(b)

        with scopes.ipu_scope("/device:IPU:0"):
            (out,) = ipu_compiler.compile(lambda: loops.repeat(steps, step, [0.0]), [])
        rec = Recorder()
        observe.install(rec)
        try:
            with v1.Session() as sess:
                feed = np.linspace(-1.0, 1.0, 1000, dtype=np.float32)
                results = [sess.run(out, {x: feed}) for _ in range(2)]
        finally:
            observe.uninstall()
    expected = steps * np.tile(feed.astype(np.float64) * 2.0 + 1.0, 3).sum()
    np.testing.assert_allclose(results, [expected] * 2, rtol=1e-5)
    assert rec.errors == [] and rec.executions == 2
    for execution in range(2):
        peaks = {m.ipu: m.peak for m in rec.memory[2 * execution:2 * execution + 2]}
        # a later iteration also holds the last one's 4-byte total
        assert peaks == {ipus[0]: 8000, ipus[1]: 12008 if steps == 1 else 12012}


@pytest.mark.parametrize("replicas,num_shards,last_shard,ipus,shards", [
    (1, 1, 1, 1, 2), (1, 2, 2, 2, 4), (2, 1, 2, 2, 4)])
def test_estimator_model_sharded_past_num_shards_is_the_sdk_error(
        tmp_path, replicas, num_shards, last_shard, ipus, shards):
    """IPUEstimator checks IPURunConfig's IPUs (num_replicas * num_shards) only; a model_fn
    using more ipu_shard indices than the device's IPUs allow fails when its graph compiles
    (the SDK's InternalError), as in a plain TF1 program."""
    from ipu_gpu.ipu import ipu_estimator, ipu_run_config, optimizers

    def model_fn(features, labels, mode):
        with scopes.ipu_shard(0):
            h = features * v1.get_variable("w", [], initializer=v1.ones_initializer())
        with scopes.ipu_shard(last_shard):
            loss = tf.reduce_mean(h * labels)
        opt = v1.train.GradientDescentOptimizer(0.1)
        if replicas > 1:
            opt = optimizers.CrossReplicaOptimizer(opt)
        train = opt.minimize(loss)
        return v1.estimator.EstimatorSpec(mode, loss=loss, train_op=train)

    cfg = config.IPUConfig()
    cfg.auto_select_ipus = replicas * num_shards
    run = ipu_run_config.IPURunConfig(iterations_per_loop=1, num_replicas=replicas,
                                      num_shards=num_shards, ipu_options=cfg)
    e = ipu_estimator.IPUEstimator(model_fn, config=ipu_run_config.RunConfig(
        ipu_run_config=run, model_dir=str(tmp_path), log_step_count_steps=None))
    x = np.ones((8, 3), np.float32)

    def input_fn():
        return v1.data.Dataset.from_tensor_slices((x, x)).repeat().batch(2,
                                                                         drop_remainder=True)
    with pytest.raises(errors.InternalError, match=_TOO_MANY.format(ipus, shards)):
        e.train(input_fn, steps=1)
