"""Node names in a TF1 graph as TF gives them: a named ``tf.constant`` is a ``Const`` node
(``x:0``, ``x_1:0``, inside name scopes, fetched by name, usable as a shape), Python operators
on graph tensors are ``add``/``sub``/``mul``/... while ``tf.add`` is ``Add``; against real
TensorFlow's tf.compat.v1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1


def _names(tf, c):
    with c.Graph().as_default() as g:
        x = c.placeholder(tf.float32, [2, 3], name="x")
        a = c.constant(1.5, name="k")
        b = c.constant([1.0, 2.0, 3.0], name="k")
        with c.name_scope("block"):
            s = c.constant([[1.0], [2.0], [3.0]], name="scale")
            r = c.matmul(x, s)
        tensors = {
            "k": a, "k_1": b, "scale": s, "matmul": r, "add": x + b, "radd": 1.0 + x,
            "sub": x - a, "rsub": 2.0 - x, "mul": x * x, "truediv": x / a, "pow": x ** 2.0,
            "neg": -x, "Add": c.add(x, x), "named": c.add(x, a, name="sum"),
            "sum": c.reduce_sum(x * b), "cmp": x < a}
        out = {k: (t.name, t.op.name) for k, t in tensors.items()}
        out["shape_static"] = r.shape.as_list()
        out["by_name"] = g.get_tensor_by_name("k_1:0").op.type
        with c.Session() as sess:
            values = sess.run({"k": "k:0", "k_1": b, "sum": tensors["sum"],
                               "add": tensors["add"]},
                              feed_dict={x: np.ones((2, 3), np.float32)})
    return out, {k: np.asarray(v).tolist() for k, v in values.items()}


def test_names_and_values_match_real_tf1(real_tf):
    ours, our_values = _names(ig, v1)
    theirs, their_values = _names(real_tf, real_tf.compat.v1)
    assert ours == theirs
    assert our_values == their_values
    assert ours["k_1"] == ("k_1:0", "k_1") and ours["scale"] == ("block/scale:0", "block/scale")
    assert our_values["sum"] == 12.0  # numpy: 2 rows of 1 + 2 + 3


def test_a_named_constant_in_the_tf2_namespace_graph_is_a_node():
    with v1.Graph().as_default() as g:
        c = ig.constant(np.arange(3, dtype=np.int32), name="c")
        d = ig.constant(1.0, name="c")
        assert (c.name, d.name) == ("c:0", "c_1:0")
        assert g.get_operation_by_name("c").type == "Const"
        assert c.shape.as_list() == [3] and c.dtype == ig.int32
        with v1.Session() as sess:
            np.testing.assert_array_equal(sess.run(c * 2), [0, 2, 4])
    eager = ig.constant(2.0, name="c")  # eagerly a name changes nothing
    assert float(eager) == 2.0


def test_constant_errors_are_unchanged_in_a_graph():
    with v1.Graph().as_default():
        with pytest.raises(TypeError):
            ig.constant(ig.constant(1, ig.int32), dtype=ig.float32, name="bad")
        with pytest.raises((TypeError, ValueError)):
            ig.constant([1.0, 2.0], shape=[3, 5], name="bad")
