"""ipu_compiler.compile: placement, return conventions, replication, contexts, memory."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.emulation import context, engine, memory, system
from ipu_gpu.ipu import config, ipu_compiler, loops, replication_ops, scopes


pytestmark = pytest.mark.usefixtures("fresh_ipu_system")


def _configure(n=1, **options):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = n
    for k, v in options.items():
        setattr(cfg, k, v)
    cfg.configure_ipu_system()
    return system.current_system()


def _compile(fn, inputs=None, device="/device:IPU:0"):
    with scopes.ipu_scope(device):
        return ipu_compiler.compile(fn, inputs)


def test_needs_an_ipu_scope():
    _configure()
    with pytest.raises(RuntimeError, match="(?s)not placed on an IPU device.*ipu_scope"):
        ipu_compiler.compile(lambda: tf.constant(1.0))
    with scopes.ipu_scope("/device:IPU:0"), scopes.outside_compilation_scope():
        with pytest.raises(RuntimeError, match="not placed on an IPU device"):
            ipu_compiler.compile(lambda: tf.constant(1.0))


def test_argument_errors():
    _configure()
    with pytest.raises(TypeError, match="computation must be callable"):
        _compile(3)
    with pytest.raises(TypeError, match="inputs must be a list"):
        _compile(lambda x: x, inputs=np.ones(2))


def test_return_conventions():
    _configure()
    x = np.ones((2, 2), np.float32)
    single = _compile(lambda v: v * 2.0, [x])
    assert isinstance(single, list) and len(single) == 1
    np.testing.assert_array_equal(single[0], 2 * x)
    (res,) = _compile(lambda v: v + 1.0, [x])  # the documented `res, = compile(...)`
    np.testing.assert_array_equal(res, x + 1)
    pair = _compile(lambda v: (v, v * 3.0), [x])
    assert isinstance(pair, list) and len(pair) == 2
    assert isinstance(_compile(lambda: None), engine.Operation)
    assert isinstance(_compile(lambda: engine.Operation("outfeed")), engine.Operation)
    assert isinstance(_compile(lambda: [engine.Operation(), None]), engine.Operation)
    out = _compile(lambda v: [v, engine.Operation("op")], [x])
    assert len(out) == 1 and isinstance(out[0], tf.Tensor)
    with pytest.raises(ValueError, match="Tensor values followed by zero or more Operations"):
        _compile(lambda v: [engine.Operation(), v], [x])
    d = _compile(lambda v: {"a": v, "b": v * 2.0}, [x])
    assert sorted(d) == ["a", "b"]
    assert _compile(lambda: 3)[0].dtype == np.int32  # Python values become tensors
    nested = _compile(lambda pair: pair[0] + pair[1], [(x, x)])
    np.testing.assert_array_equal(nested[0], 2 * x)


def test_runs_on_the_ipu_worker_threads_with_contexts():
    s = _configure(4)
    seen = {}
    lock = threading.Lock()

    def comp():
        ctx = context.current()
        with lock:
            seen[ctx.replica_index] = (threading.current_thread().name, ctx.replication_factor,
                                       ctx.ipus[0].id, scopes._placement.current().device)
        return replication_ops.replication_index()

    out = _compile(comp)
    assert int(out[0]) == 0
    ipus = [i.id for i in s.devices[0].ipus]
    for r in range(4):
        name, factor, ipu_id, device = seen[r]
        assert factor == 4 and ipu_id == ipus[r] and device == "/device:IPU:0"
        assert name.startswith(f"ipu_gpu-IPU{ipus[r]}")
    assert context.current() is None


def test_second_device_and_default_system():
    _configure([1, 2])
    factors = []
    _compile(lambda: factors.append(context.current().replication_factor), device="/device:IPU:1")
    assert factors == [2, 2]


def test_outputs_are_replica_zero():
    _configure(8)
    out = _compile(lambda: replication_ops.replication_index() * 10)
    assert int(out[0]) == 0


def test_variables_are_shared_and_persist():
    _configure(2)
    v = tf.Variable(np.zeros(3, np.float32))

    def comp():
        return v + 1.0

    np.testing.assert_array_equal(_compile(comp)[0], np.ones(3))

    def step():
        if int(replication_ops.replication_index()) == 0:
            v.assign_add(np.ones(3, np.float32))
        return v.read_value()

    _compile(step)
    _compile(step)
    np.testing.assert_array_equal(v.numpy(), [2.0, 2.0, 2.0])


def test_gradient_tape_inside_replicas():
    _configure(2)
    w = tf.Variable(np.array([1.0, 2.0], np.float32))

    def comp(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        return tape.gradient(loss, w)

    out = _compile(comp, [np.array([3.0, 4.0], np.float32)])
    np.testing.assert_array_equal(out[0], [3.0, 4.0])


def test_exception_carries_replica_index():
    _configure(2)

    def comp():
        if int(replication_ops.replication_index()) == 1:
            raise KeyError("replica one failed")
        return tf.constant(1.0)

    with pytest.raises(KeyError, match="replica one failed") as e:
        _compile(comp)
    assert e.value.replica_index == 1
    assert "raised in replica 1 of 2 on /device:IPU:0" in e.value.__notes__


def test_a_cancelled_loop_stops_early():
    _configure(2)
    counts = {}

    def comp():
        r = int(replication_ops.replication_index())
        if r == 0:
            raise ValueError("stop")

        def body(i):
            counts[r] = counts.get(r, 0) + 1
            return i + 1

        return loops.repeat(10_000_000, body, [0])

    with pytest.raises(ValueError, match="stop"):
        _compile(comp)
    assert counts.get(1, 0) < 10_000_000


def test_outputs_and_inputs_charged_to_the_ipu_ledger():
    s = _configure(1)
    ledger = s.devices[0].ipus[0].memory
    peak = {}

    def comp(x):
        return x * 2.0

    _compile(comp, [np.ones(1000, np.float32)])
    assert ledger.used == 0 and ledger.peak >= 8000
    del peak


def test_tensors_made_in_a_replica_are_charged_while_the_program_runs():
    s = _configure(2)
    ledgers = [ipu.memory for ipu in s.devices[0].ipus]
    seen = []

    def comp():
        a = tf.zeros((1000,), tf.float32)  # 4000 bytes
        b = tf.ones((500,), tf.float32)  # 2000 bytes
        seen.append(context.current().ipus[0].memory.used)
        del a
        return b

    out = _compile(comp)
    assert sorted(seen) == [6000, 6000]
    assert [ledger.used for ledger in ledgers] == [0, 0]
    assert [ledger.peak >= 6000 for ledger in ledgers] == [True, True]
    assert out[0].numpy().sum() == 500


def test_out_of_memory_names_the_replica():
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = 2
    cfg.ipu_model.tiles_per_ipu = 1  # 624 KiB
    cfg.configure_ipu_system()

    def comp():
        return tf.zeros((1 << 20,), tf.float32)  # 4 MiB output

    with pytest.raises(memory.GraphMemoryAllocationError, match="'tensors'") as e:
        _compile(comp)
    assert e.value.replica_index in (0, 1)


def test_nested_compile_runs_inline():
    _configure(2)

    def inner():
        return replication_ops.replication_index()

    def outer():
        with scopes.ipu_scope("/device:IPU:0"):
            return ipu_compiler.compile(inner)[0]

    assert int(_compile(outer)[0]) == 0


def test_concurrent_host_threads_do_not_deadlock():
    _configure(2)
    from ipu_gpu.ipu import cross_replica_ops

    errors = []

    def work():
        try:
            for _ in range(20):
                out = _compile(lambda: cross_replica_ops.cross_replica_sum(tf.constant(1.0)))
                assert float(out[0]) == 2.0
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads) and not errors


def test_numba_kernels_run_in_every_replica():
    from ipu_gpu.ipu import statistics_ops

    _configure(4)
    x = np.random.default_rng(0).standard_normal(2_000_000).astype(np.float32)
    levels = np.linspace(-2, 2, 9).astype(np.float32)
    want = np.asarray(statistics_ops.histogram(x, levels))
    got = {}

    def comp():
        h = statistics_ops.histogram(x, levels)  # above the kernel's parallel threshold
        got[int(replication_ops.replication_index())] = np.asarray(h)
        return h

    _compile(comp)
    assert sorted(got) == [0, 1, 2, 3]
    for h in got.values():
        np.testing.assert_array_equal(h, want)


def test_replicated_programs_run_with_one_blas_thread():
    """OpenBLAS's thread count is process-wide; while replicas run concurrently it is 1, so a
    replica's matmul bits never depend on whether another replica is inside a convolution."""
    from conftest import blas_thread_count_reader

    blas_threads = blas_thread_count_reader()
    before = blas_threads()
    seen = []
    lock = threading.Lock()

    def program():
        with lock:
            seen.append(blas_threads())
        return tf.constant(0.0)

    _configure(2)
    _compile(program)
    assert seen == [1, 1]
    assert blas_threads() == before
    system.reset()
    _configure(1)
    seen.clear()
    _compile(program)
    assert seen == [before]  # one replica: BLAS keeps its threads
