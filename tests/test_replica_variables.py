"""Per-replica variables (core/tensor.py, set up by emulation/engine.py): every replica of a
program holds its own copy of each variable, as on an IPU. Checked against a numpy model of
R replicas: copies start equal to the host value, a replica reads and writes only its own,
the host sees replica 0's after a run, copies persist across runs, and a host assignment
between runs sets every replica's copy."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import compile_on_ipu, configure_ipus

import ipu_gpu as tf
from ipu_gpu.emulation import context
from ipu_gpu.ipu import cross_replica_ops

pytestmark = pytest.mark.usefixtures("fresh_ipu_system")

R = 4


def _replica():
    return context.current().replica_index


def test_updates_without_an_all_reduce_diverge_and_persist(backend):
    configure_ipus(R)
    v = tf.Variable(backend.zeros(3, np.float32))
    seen = {}

    def program():
        r = _replica()
        v.assign_add(tf.fill([3], float(r + 1)))
        seen[r] = v.numpy()
        return v.read_value()

    model = np.zeros((R, 3), np.float32)  # the numpy model: one row per replica
    for _ in range(3):
        out = compile_on_ipu(program)
        model += np.arange(1, R + 1, dtype=np.float32)[:, None]
        np.testing.assert_array_equal(np.stack([seen[r] for r in range(R)]), model)
        np.testing.assert_array_equal(v.numpy(), model[0])  # the host sees replica 0
        np.testing.assert_array_equal(out[0].numpy(), model[0])


def test_all_reduced_sgd_updates_once_per_step(backend):
    configure_ipus(R)
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((5, 2)).astype(np.float32)
    xs = rng.standard_normal((R, 8, 5)).astype(np.float32)
    w = tf.Variable(tf.constant(backend.asarray(w0)))
    data = tf.constant(backend.asarray(xs))
    lr, steps = np.float32(0.05), 3

    def program():
        x = data[_replica()]
        for _ in range(steps):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.matmul(x, w) ** 2)
            g = cross_replica_ops.cross_replica_sum(tape.gradient(loss, w))
            w.assign_sub(lr * g)
        return w.read_value()

    model = w0.astype(np.float64)
    for _ in range(2):  # two runs: the copies carry over
        compile_on_ipu(program)
        for _ in range(steps):
            g = sum(2 * xs[r].T.astype(np.float64) @ (xs[r] @ model) for r in range(R))
            model = model - lr * g
        np.testing.assert_allclose(w.numpy(), model, rtol=2e-5, atol=1e-5)


def test_host_assignment_between_runs_sets_every_copy():
    configure_ipus(R)
    v = tf.Variable(np.zeros(2, np.float32))

    def diverge():
        v.assign_add(tf.fill([2], float(_replica() + 1)))
        return v.read_value()
    compile_on_ipu(diverge)
    v.assign(np.full(2, 7.0, np.float32))
    total = compile_on_ipu(lambda: cross_replica_ops.cross_replica_sum(v.read_value()))
    np.testing.assert_array_equal(total[0].numpy(), np.full(2, 7.0 * R))
    v.assign_add(np.ones(2, np.float32))  # an in-place host update counts too
    total = compile_on_ipu(lambda: cross_replica_ops.cross_replica_sum(v.read_value()))
    np.testing.assert_array_equal(total[0].numpy(), np.full(2, 8.0 * R))


def test_variables_made_inside_a_replica_start_from_their_initial_value():
    configure_ipus(R)
    made = {}

    def program():
        v = tf.Variable(np.full(2, 3.0, np.float32))
        v.assign_add(tf.fill([2], float(_replica())))
        made[_replica()] = (v, v.numpy())
        return v.read_value()

    compile_on_ipu(program)
    assert len({id(v) for v, _ in made.values()}) == R  # each replica made its own object
    for r, (_, seen) in made.items():
        assert float(seen[0]) == 3.0 + r


def test_a_shared_variable_is_one_value_for_every_replica():
    configure_ipus(R)
    v = tf.Variable(np.zeros((), np.float32))
    v._per_replica = False

    def program():
        if _replica() == R - 1:
            v.assign_add(5.0)
        cross_replica_ops.cross_replica_sum(tf.constant(0.0))  # after the update
        return v.read_value()

    out = compile_on_ipu(program)
    assert float(out[0]) == 5.0 and float(v.numpy()) == 5.0
