"""``name=`` of TF1's op functions in a graph: node names (unique in the name scope, a
composite function's inner nodes under its name), ``get_tensor_by_name`` /
``get_operation_by_name`` and fetching by name, against real TF1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_X = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)
_W = np.arange(12, dtype=np.float32).reshape(3, 4) / 10.0
_B = np.array([0.5, -0.5, 1.0, 0.0], np.float32)


def _named(c):
    """(tensor names, operation names, values fetched by name) of a small named graph."""
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(np.float32, [2, 3], name="x")
        with c.name_scope("block"):
            s = c.add(x, x, name="sum")
            s1 = c.add(s, 1.0, name="sum")  # unique: sum_1
            m = c.matmul(s1, _W, name="mm")
            r = c.nn.relu(m, name="act")
            sm = c.nn.softmax(r, name="probs")
            mean = c.reduce_mean(sm, axis=1, name="mean")
            cat = c.concat([x, x], axis=1, name="joined")
            cast = c.cast(x, np.int32, name="as_int")
            eq = c.equal(cast, 0, name="is_zero")
            pad = c.pad(x, [[1, 0], [0, 2]], name="padded")
            xw = c.nn.xw_plus_b(x, _W, _B, name="affine")
            inner = xw.op.inputs[0]
        with c.variable_scope("vs"):
            t = c.transpose(x, name="xt")
            sq = c.squeeze(c.reshape(x, [1, 2, 3]), axis=0, name="flat")
        outs = [s, s1, m, r, sm, mean, cat, cast, eq, pad, xw, inner, t, sq]
        names = [o.name for o in outs]
        op_names = [o.op.name for o in outs]
        found = [g.get_tensor_by_name(n) is o for n, o in zip(names, outs)]
        found += [g.get_operation_by_name(n) is o.op for n, o in zip(op_names, outs)]
        with c.Session(graph=g) as sess:
            values = sess.run(["block/mean:0", "block/affine:0", "vs/xt:0", "block/padded:0"],
                              {"x:0": _X})
        return names, op_names, found, values


def test_op_names_equal_real_tensorflow(real_tf):
    ours = _named(v1)
    theirs = _named(real_tf.compat.v1)
    assert ours[0] == theirs[0]
    assert ours[1] == theirs[1]
    assert all(ours[2]) and all(theirs[2])
    for a, b in zip(ours[3], theirs[3]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_named_values_equal_numpy():
    with v1.Graph().as_default() as g:
        x = v1.placeholder(np.float32, [2, 3], name="x")
        v1.nn.xw_plus_b(x, _W, _B, name="affine")
        v1.reduce_mean(x, axis=0, name="col_mean")
        with v1.Session(graph=g) as sess:
            a, m = sess.run(["affine:0", "col_mean:0"], {"x:0": _X})
    np.testing.assert_allclose(a, _X @ _W + _B, rtol=1e-6)
    np.testing.assert_allclose(m, _X.mean(0), rtol=1e-6)


def test_positional_name_and_scope_reentry(real_tf):
    def build(c):
        g = c.Graph()
        with g.as_default():
            x = c.placeholder(np.float32, [2], name="x")
            with c.name_scope("outer") as scope:
                pass
            with c.name_scope(scope):
                y = c.add(x, x, "twice")  # positional name, re-entered scope
            z = c.reduce_sum(x, 0, False, "total")  # noqa: FBT003 - TF1's signature
            return y.name, z.name
    assert build(v1) == build(real_tf.compat.v1)


def test_name_is_ignored_eagerly():
    out = v1.add(np.float32(1.0), np.float32(2.0), name="sum")
    assert float(out) == 3.0


def test_unknown_tensor_name_raises_as_tf():
    with v1.Graph().as_default() as g:
        x = v1.placeholder(np.float32, [2], name="x")
        v1.add(x, x, name="sum")
        with pytest.raises(KeyError, match="refers to a Tensor which does not exist"):
            g.get_tensor_by_name("Add:0")
        with pytest.raises(KeyError, match="refers to an Operation not in the graph"):
            g.get_operation_by_name("Add")


def test_default_node_names_equal_real_tensorflow(real_tf):
    def names(c, tf_mod):
        g = c.Graph()
        with g.as_default():
            x = c.placeholder(tf_mod.float32, [2, 3], name="x")
            i = c.placeholder(tf_mod.int32, [2], name="i")
            outs = [c.add(x, x), c.subtract(x, x), c.multiply(x, x), c.divide(x, x),
                    c.matmul(x, x, transpose_b=True), c.nn.relu(x), c.nn.softmax(x),
                    c.sigmoid(x), c.tanh(x), c.reduce_sum(x), c.reduce_mean(x, 1),
                    c.reduce_max(x), c.reshape(x, [3, 2]), c.cast(x, tf_mod.int32),
                    c.square(x), c.sqrt(x), c.exp(x), c.log(x), c.equal(x, x), c.greater(x, x),
                    c.argmax(x, 1), c.nn.bias_add(x, [1.0, 2.0, 3.0]), c.tile(x, [1, 2]),
                    c.gather(x, i), c.negative(x), c.maximum(x, x), c.stop_gradient(x),
                    c.pow(x, x), c.rsqrt(x), c.nn.log_softmax(x), c.logical_not(x > 0.0),
                    c.where(x > 0.0, x, x), c.reverse(x, [0]), c.slice(x, [0, 0], [1, 1]),
                    x[0], c.add(x, x)]
            return [o.op.name for o in outs]
    assert names(v1, __import__("ipu_gpu")) == names(real_tf.compat.v1, real_tf)
