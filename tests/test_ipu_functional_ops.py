"""``ipu.outlined_function``: the function's numbers eagerly, in tf.function and in TF1 graphs
(inside ipu_compiler.compile / loops.repeat as Graphcore's documentation example), gradients
through it, variables shared between calls unless each call has its own variable scope, and
the argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import ipu
from ipu_gpu.ipu import functional_ops

RNG = np.random.default_rng(11)


def _np(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def test_both_names_are_one_function():
    assert ipu.outlined_function is functional_ops.outlined_function
    assert ipu.ops.functional_ops is functional_ops


def test_eager_values_and_gradients_equal_the_plain_function():
    a, b = _np((3, 4)), _np((4, 2))

    def plain(x, w):
        return ig.nn.relu(ig.matmul(x, w)) * 2.0, ig.reduce_sum(x)

    outlined = ipu.outlined_function(plain)
    w = ig.Variable(b)
    results = []
    for fn in (plain, outlined):
        with ig.GradientTape() as tape:
            y, s = fn(ig.constant(a), w)
            loss = ig.reduce_sum(y * y) + s
        results.append((np.asarray(y), np.asarray(s), np.asarray(tape.gradient(loss, w))))
    for want, got in zip(*results):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(results[1][0], np.maximum(a @ b, 0) * 2, rtol=1e-6)


def test_decorator_with_arguments_converts_arguments_and_keeps_structure():
    @ipu.outlined_function(unique_sharding=True, keep_input_layouts=False, name="blk")
    def f(x, y):
        assert isinstance(x, ig.Tensor) and isinstance(y, ig.Tensor)
        return {"sum": x + y, "none": None, "pair": (x * 2.0, y)}

    out = f(np.ones(2, np.float32), [1.0, 2.0])
    assert out["none"] is None
    np.testing.assert_array_equal(np.asarray(out["sum"]), [2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(out["pair"][0]), [2.0, 2.0])


def test_inside_tf_function_and_gradients():
    w = ig.Variable(_np((3, 3)))

    @ipu.outlined_function
    def layer(x):
        return ig.tanh(ig.matmul(x, w))

    @ig.function
    def step(x):
        with ig.GradientTape() as tape:
            loss = ig.reduce_sum(layer(layer(x)))
        return loss, tape.gradient(loss, w)

    x = _np((2, 3))
    loss, grad = step(ig.constant(x))
    wv = np.asarray(w, np.float64)
    h1 = np.tanh(x @ wv)
    h2 = np.tanh(h1 @ wv)
    d2 = 1 - h2 ** 2
    d1 = (d2 @ wv.T) * (1 - h1 ** 2)
    np.testing.assert_allclose(float(loss), h2.sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(grad), h1.T @ d2 + x.T @ d1, rtol=1e-4, atol=1e-5)


def test_tf1_variables_are_shared_unless_each_call_has_its_own_scope():
    """Graphcore's documentation: a function body is reused, and with it a variable made in
    it; a variable_scope opened around each call (through the closure) separates them."""
    x = _np((2, 4))
    with v1.Graph().as_default():
        batch = v1.placeholder(np.float32, [2, 4])

        @ipu.outlined_function
        def shared(a):
            with v1.variable_scope("vs", use_resource=True):
                w = v1.get_variable("w", shape=[4, 4], initializer=v1.ones_initializer())
            return ig.matmul(a, w)

        out = shared(shared(batch))

        def per_call(a, name):
            @ipu.outlined_function
            def f(a):
                with v1.variable_scope(name, use_resource=True):
                    w = v1.get_variable("w", shape=[4, 4],
                                        initializer=v1.constant_initializer(0.5))
                return ig.matmul(a, w)
            return f(a)

        out2 = per_call(per_call(batch, "one"), "two")
        names = [v.name for v in v1.global_variables()]
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            got, got2 = sess.run([out, out2], {batch: x})
    assert names == ["vs/w:0", "one/w:0", "two/w:0"]
    np.testing.assert_allclose(got, x @ np.ones((4, 4)) @ np.ones((4, 4)), rtol=1e-5)
    np.testing.assert_allclose(got2, x @ np.full((4, 4), 0.5) @ np.full((4, 4), 0.5),
                               rtol=1e-5)


def test_tf1_ops_are_named_in_the_functions_name_scope():
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32, [2])
        y = ipu.outlined_function(lambda a: a * 2.0, name="double")(p)
        z = ipu.outlined_function(lambda a: a + 1.0)(p)
    assert y.name.startswith("double/") and z.name.startswith("function/")


def test_tf1_program_of_graphcores_function_example(fresh_ipu_system):
    """Graphcore's outlined-function example: a function called twice with different weights
    inside loops.repeat over an infeed, compiled once, its results through an outfeed; then
    training through the function in the graph equals the numpy model."""
    from conftest import configure_ipus

    from ipu_gpu.ipu import (ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops,
                             normalization_ops, scopes)

    configure_ipus(1)
    data = _np((4, 8, 8))
    ds = ig.data.Dataset.from_tensor_slices(data)
    w1, w2 = _np((8, 8)), _np((8, 8))
    with v1.Graph().as_default():
        infeed = ipu_infeed_queue.IPUInfeedQueue(ds)
        outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

        def body(x):
            v_1 = v1.get_variable("w1", initializer=w1)
            v_2 = v1.get_variable("w2", initializer=w2)

            @ipu.outlined_function
            def func(a, b):
                y = ig.matmul(a, b)
                y = normalization_ops.layer_norm(y)
                return ig.nn.relu(y)

            return outfeed.enqueue(func(func(x, v_1), v_2))

        with scopes.ipu_scope("/device:IPU:0"):
            run_loop = ipu_compiler.compile(lambda: loops.repeat(4, body, [], infeed), [])
        dequeue = outfeed.dequeue()
        names = [v.name for v in v1.global_variables()]
        with v1.Session() as sess:
            sess.run(infeed.initializer)
            sess.run(v1.global_variables_initializer())
            sess.run(run_loop)
            got = sess.run(dequeue)

    def ln(y):
        m = y.mean(axis=1, keepdims=True)
        return (y - m) / np.sqrt(((y - m) ** 2).mean(axis=1, keepdims=True) + 1e-6)

    want = [np.maximum(ln(np.maximum(ln(d @ w1), 0) @ w2), 0) for d in data]
    # a default-named scope is made unique per call, as TF's variable_scope does
    assert names == ["w1:0", "w2:0", "LayerNorm/beta:0", "LayerNorm/gamma:0",
                     "LayerNorm_1/beta:0", "LayerNorm_1/gamma:0"]
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-4, atol=1e-4)


def test_tf1_gradients_through_the_function_equal_eager():
    x, wv = _np((3, 4)), _np((4, 4))

    @ipu.outlined_function
    def f(a, w):
        return ig.sigmoid(ig.matmul(a, w))

    w = ig.Variable(wv)
    with ig.GradientTape() as tape:
        loss = ig.reduce_sum(f(f(ig.constant(x), w), w))
    eager = np.asarray(tape.gradient(loss, w))
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32, [3, 4])
        gw = v1.Variable(wv)
        loss = ig.reduce_sum(f(f(p, gw), gw))
        (grad,) = v1.gradients(loss, [gw])
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            graph = sess.run(grad, {p: x})
    np.testing.assert_allclose(graph, eager, rtol=1e-5, atol=1e-6)


def test_argument_errors():
    f = ipu.outlined_function(lambda a: a)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        f(a=np.ones(2))
    with pytest.raises(TypeError, match="convert_to_tensor"):
        f(object())
