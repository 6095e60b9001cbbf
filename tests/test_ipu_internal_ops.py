"""``ipu.internal_ops`` (print_tensor eagerly and as a TF1 op: fetched, as a control
dependency, returned from a compiled program; remap), ``ipu.control_flow_ops.barrier`` and the
``ipu.sharding`` helpers on TF1 graphs."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import ipu
from ipu_gpu.ipu import control_flow_ops, internal_ops, sharding


def test_print_tensor_eagerly(capsys):
    assert internal_ops.print_tensor(np.array([[1, 2], [3, 4]], np.int32), name="w") is None
    assert capsys.readouterr().err == "w: [[1 2]\n [3 4]]\n"
    internal_ops.print_tensor(np.arange(12, dtype=np.float32))
    assert capsys.readouterr().err == "[0 1 2 3 4 5 6 7 8 9 10 11]\n"  # never summarised


def test_print_tensor_in_a_tf1_graph(capsys):
    with v1.Graph().as_default():
        pa = v1.placeholder(np.float32, [2, 2], name="a")
        print_op = ipu.internal_ops.print_tensor(pa, name="pa")
        x = pa + 1
        with v1.control_dependencies([internal_ops.print_tensor(pa * 2, name="dep")]):
            y = pa - 1
        assert capsys.readouterr().err == ""  # nothing printed while building
        with v1.Session() as sess:
            got, _ = sess.run([x, print_op], {pa: np.ones((2, 2))})
            assert capsys.readouterr().err == "pa: [[1 1]\n [1 1]]\n"
            sess.run(y, {pa: np.zeros((2, 2))})
            assert capsys.readouterr().err == "dep: [[0 0]\n [0 0]]\n"
    np.testing.assert_array_equal(got, np.full((2, 2), 2.0))


def test_print_tensor_returned_from_a_compiled_program(capsys, fresh_ipu_system):
    from conftest import configure_ipus

    from ipu_gpu.ipu import ipu_compiler, scopes

    configure_ipus(1)
    with v1.Graph().as_default():
        v = v1.placeholder(np.float32, [3])

        def my_net(v):
            print_op = internal_ops.print_tensor(v, name="v")
            return v + 1, print_op

        with scopes.ipu_scope("/device:IPU:0"):
            res = ipu_compiler.compile(my_net, inputs=[v])
        with v1.Session() as sess:
            for k in range(2):
                out = sess.run(res, {v: np.full(3, k, np.float32)})
                assert capsys.readouterr().err.endswith(f"v: [{k} {k} {k}]\n")
    np.testing.assert_array_equal(out[0], [2, 2, 2])


def test_print_tensor_refuses_other_dtypes():
    with pytest.raises(TypeError, match="DataType float64 not in list of allowed values"):
        internal_ops.print_tensor(np.ones(2))


def test_remap_copies(caplog):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        np.testing.assert_array_equal(np.asarray(internal_ops.remap(x)), x)
    assert "remap is a Graphcore internal op" in caplog.text
    np.testing.assert_array_equal(np.asarray(internal_ops.remap_deduce(x)), x)


def test_barrier_keeps_structure_values_and_gradients():
    a, b = ig.Variable(np.array([1.0, 2.0], np.float32)), ig.constant(3.0)
    with ig.GradientTape() as tape:
        out = control_flow_ops.barrier({"a": a * 2.0, "pair": (b, a)})
        loss = ig.reduce_sum(out["a"] * out["pair"][1])
    assert set(out) == {"a", "pair"} and isinstance(out["pair"], tuple)
    np.testing.assert_array_equal(np.asarray(out["a"]), [2, 4])
    assert float(out["pair"][0]) == 3.0
    np.testing.assert_array_equal(np.asarray(tape.gradient(loss, a)), [4, 8])
    single = ipu.ops.control_flow_ops.barrier(b, insert_barrier_for_gradients=True)
    assert float(single) == 3.0
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32, [2])
        f, q = control_flow_ops.barrier([p + 1, p])
        with v1.Session() as sess:
            got = sess.run([f, q], {p: [1.0, 2.0]})
    np.testing.assert_array_equal(got, [[2, 3], [1, 2]])


def test_sharding_helpers_on_a_tf1_graph():
    with v1.Graph().as_default() as g:
        p = v1.placeholder(np.float32, [2], name="p")
        fwd = ig.exp(p)
        bwd = ig.multiply(fwd, 2.0)
        other = v1.placeholder(np.float32, [2], name="other")
        deps = sharding.dependencies([bwd])
        assert fwd.op in deps and p.op in deps and bwd.op in deps
        assert other.op not in deps
        assert not sharding.has_attr(fwd.op, "_XlaSharding")
        assert sharding.get_shard_from_colocation(bwd.op) is None
        sharding.propagate_sharding(g)  # nothing to move: no operation has attributes
        assert sharding.get_sharding(bwd.op) is None
        # an operation co-located with a sharded one takes its shard
        sharding.set_attr(fwd.op, "_XlaSharding", [1])
        sharding.set_attr(other.op, "_class", [f"loc:@{fwd.op.name}".encode()])
        sharding.set_attr(bwd.op, "_class", [b"loc:@missing"])
        assert sharding.get_shard_from_colocation(bwd.op) == [1]  # through its input
        sharding.propagate_sharding(g)
        assert sharding.get_sharding(other.op) == [1]
        assert sharding.get_sharding(bwd.op) == [1]
        assert sharding.get_sharding(p.op) is None  # not co-located with anything
