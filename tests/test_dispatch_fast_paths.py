"""The op-call path's shortcuts (issue 15) give what the general paths give: an op's kernel
module looked up once, one-output tape records without output metadata, a dense cotangent
handed straight to its rule, a learning rate's scalar array shared between steps, and the
emulated memory ledger's per-tensor fast path."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.core import backend, registry, tape
from ipu_gpu.core import tensor as core_tensor
from ipu_gpu.emulation.memory import MemoryLedger


def test_kernel_module_looked_up_once_per_array_type(monkeypatch):
    calls = []
    real = backend.kernels_for

    def counting(family, xp):
        calls.append((family, xp))
        return real(family, xp)

    monkeypatch.setattr(backend, "kernels_for", counting)
    seen = []

    def forward(k, xp, x):
        seen.append(k)
        return xp.negative(x), ()

    op = registry.Op("probe_negative", ("x",), lambda x: None, forward, None, "elementwise",
                     False, False)
    plain = registry.Op("probe_identity", ("x",), lambda x: None, lambda k, xp, x: (x, ()),
                        None, None, False, False)
    x = tf.constant(np.arange(3.0, dtype=np.float32))
    for _ in range(3):
        np.testing.assert_array_equal(op(x).numpy(), -np.arange(3.0, dtype=np.float32))
        np.testing.assert_array_equal(plain(x).numpy(), np.arange(3.0, dtype=np.float32))
    assert calls == [("elementwise", np)]
    assert len({id(k) for k in seen}) == 1 and seen[0] is real("elementwise", np)
    assert plain.kernels(np) is None


def test_kernel_module_missing_on_gpu_still_raises_each_call():
    class FakeCupyArray:  # the module check reads the array type only
        pass

    op = registry.Op("probe_nogpu", ("x",), lambda x: None, lambda k, xp, x: (x, ()), None,
                     "no_such_family", False, False)
    for _ in range(2):  # not cached as "no module": the same error every call
        with pytest.raises(TypeError, match="probe_nogpu: inputs must be numpy arrays"):
            op.kernels(FakeCupyArray)
    assert FakeCupyArray not in op._kernel_modules


def test_one_output_records_keep_no_output_metadata_and_many_outputs_do():
    x = tf.Variable(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    with tf.GradientTape(persistent=True) as tp:
        y = tf.nn.relu(x)
        a, b, c = tf.unstack(y, axis=1)  # three outputs, one left unused below
        loss = tf.reduce_sum(a * 2.0 + c)
    records = tp._records
    by_op = {r.op.name: r for r in records}
    assert by_op["relu"].out_meta is None and by_op["relu"].out_ids == (y._id,)
    multi = [r for r in records if len(r.out_ids) > 1]
    assert multi and multi[0].out_meta == [((2,), np.dtype(np.float32))] * 3
    # the unused output b gets zeros built from out_meta; the others their cotangents
    g = tp.gradient(loss, x).numpy()
    want = np.array([[2.0, 0.0, 1.0], [2.0, 0.0, 1.0]], np.float32) * (x.numpy() > 0)
    np.testing.assert_array_equal(g, want)
    del b


def _dense_loss(tf_mod, x, w, b):
    return tf_mod.reduce_sum(tf_mod.nn.relu(tf_mod.nn.bias_add(tf_mod.matmul(x, w), b)) ** 2)


def test_dense_cotangent_path_gives_the_nested_tapes_gradients():
    g = np.random.default_rng(15)
    x = tf.constant(g.standard_normal((5, 4)).astype(np.float64))
    w = tf.Variable(g.standard_normal((4, 3)))
    b = tf.Variable(g.standard_normal(3))
    with tf.GradientTape() as inner:  # the direct rule calls: no tape around gradient()
        loss = _dense_loss(tf, x, w, b)
    direct = inner.gradient(loss, [w, b])
    with tf.GradientTape() as outer:  # the general path: rules run on Tensors for the outer
        with tf.GradientTape() as inner:
            loss = _dense_loss(tf, x, w, b)
        nested = inner.gradient(loss, [w, b])
    for d, n in zip(direct, nested):
        np.testing.assert_allclose(d.numpy(), n.numpy(), rtol=1e-12, atol=0)
    del outer
    # numpy reference
    z = x.numpy() @ w.numpy() + b.numpy()
    dz = 2 * np.maximum(z, 0) * (z > 0)
    np.testing.assert_allclose(direct[0].numpy(), x.numpy().T @ dz, rtol=1e-12)
    np.testing.assert_allclose(direct[1].numpy(), dz.sum(0), rtol=1e-12)


def test_record_one_appends_to_watching_tapes_only():
    x = tf.constant(np.ones(2, np.float32))
    u = tf.constant(np.ones(2, np.float32))
    with tf.GradientTape() as t1, tf.GradientTape() as t2:
        t1.watch(x)
        y = tf.nn.relu(x)
        z = tf.nn.relu(u)  # watched by neither tape
        assert len(t1._records) == 1 and t2._records == []
        assert y._id in t1._watched and z._id not in t1._watched
    assert tape.recording_tapes() == []


def test_learning_rate_scalar_array_shared_only_for_the_same_number():
    t = tf.constant(np.array([1.0, -2.0], np.float32))
    t2 = tf.constant(np.array([1.0, -2.0], np.float32))  # a product holds t's array: t is held
    lr = 0.25
    p, q = lr * t, t2 * lr
    assert p._pending()[1] is q._pending()[1]  # the same number object: one array
    assert not p._pending()[1].flags.writeable
    np.testing.assert_array_equal(p.numpy(), [0.25, -0.5])
    zero, neg_zero = 0.0, -0.0
    a = (zero * t).numpy()
    b = (neg_zero * t).numpy()  # equal to 0.0 but not the same bits: a product of its own
    np.testing.assert_array_equal(np.signbit(a), np.signbit(np.float32(0.0) * t.numpy()))
    np.testing.assert_array_equal(np.signbit(b), np.signbit(np.float32(-0.0) * t.numpy()))
    c = (float("nan") * t).numpy()
    assert np.isnan(c).all()
    d = tf.constant(np.array([4.0], np.float64)) * lr  # per dtype
    assert d.dtype == np.float64 and d.numpy()[0] == 1.0


def test_assign_sub_fast_path_refuses_a_shared_or_read_only_buffer():
    w = np.arange(4.0, dtype=np.float32)
    v = tf.Variable(w)
    g = tf.constant(np.ones(4, np.float32))
    held = v._value  # another holder: the update must make a new buffer
    v.assign_sub(0.5 * g)
    assert v._value is not held
    np.testing.assert_array_equal(held, w)
    np.testing.assert_array_equal(v.numpy(), w - 0.5)
    del held
    buf = v._value
    del buf
    before = id(v._value)
    v.assign_sub(0.5 * g)  # sole owner again: in place
    assert id(v._value) == before
    np.testing.assert_array_equal(v.numpy(), w - 1.0)


def test_ledger_fast_path_keeps_used_peak_and_counts():
    ledger = MemoryLedger(0, 100)
    ledger._charge(30, "tensors")
    ledger._charge(50, "tensors")
    ledger._charge(10, "program inputs")
    assert (ledger.used, ledger.peak) == (90, 90)
    assert ledger.report().by_label == (("tensors", 80, 2), ("program inputs", 10, 1))
    ledger._release(50, "tensors")
    assert ledger.report().by_label == (("tensors", 30, 1), ("program inputs", 10, 1))
    ledger._release(30, "tensors")
    assert (ledger.used, ledger.peak) == (10, 90)
    assert ledger.report().by_label == (("program inputs", 10, 1),)
    with pytest.raises(MemoryError, match="Out of memory on IPU 0"):
        ledger._charge(91, "tensors")
    assert (ledger.used, ledger.peak) == (10, 90)
    with pytest.raises(ValueError, match="holds 0 bytes"):
        ledger._release(1, "tensors")
    ledger._charge(90, "tensors")  # exactly full is allowed
    assert (ledger.used, ledger.peak) == (100, 100)


def test_allocation_hook_sees_every_op_output():
    seen = []
    core_tensor.set_allocation_hook(seen.append)
    try:
        x = tf.constant(np.ones((2, 2), np.float32))
        y = tf.nn.relu(x)
        parts = tf.unstack(y)
    finally:
        core_tensor.set_allocation_hook(None)
    ids = {t._id for t in seen}
    assert x._id in ids and y._id in ids and all(p._id in ids for p in parts)


def test_gradient_keeps_the_sources_structure_on_the_flat_fast_path():
    import collections

    a = tf.Variable(np.float32(2.0))
    b = tf.Variable(np.float32(3.0))
    Pair = collections.namedtuple("Pair", "x y")
    for sources, kind in (([a, b], list), ((a, b), tuple), ([], list), ((), tuple),
                          (Pair(a, b), Pair), ([a, [b]], list), ({"p": a, "q": b}, dict)):
        with tf.GradientTape() as tp:
            loss = a * b * 2.0
        got = tp.gradient(loss, sources)
        assert type(got) is kind
        leaves = tf.nest.flatten(got)
        assert [float(g) for g in leaves] == [6.0, 4.0][:len(leaves)]  # d/da, d/db
    with tf.GradientTape() as tp:
        loss = a * 2.0
    with pytest.raises(ValueError, match="sources must be Tensors or Variables, got float"):
        tp.gradient(loss, [a, 1.0])


def test_replica_slot_reads_the_replicas_copy_of_a_variable():
    v = tf.Variable(np.array([1.0, 2.0], np.float32))
    core_tensor.set_replica_slot((99, 1, 2))  # replica 1 of 2: its own copy
    try:
        v.assign(np.array([5.0, 5.0], np.float32))
        np.testing.assert_array_equal(tf.nn.relu(v).numpy(), [5.0, 5.0])
    finally:
        core_tensor.set_replica_slot(None)
    np.testing.assert_array_equal(tf.nn.relu(v).numpy(), [1.0, 2.0])  # the host value
