"""``ipu.normalization_ops``: group/layer/instance norm against the float64 reference (values
and finite-difference gradients), tf-keras's GroupNormalization / LayerNormalization, the
variables Graphcore's implementation makes (names, shapes, initialisers, collections, reuse)
in TF1 graphs, and Graphcore's errors."""

from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu.ipu import normalization_ops as norm
from tests.reference import ipu_ops as ref

RNG = np.random.default_rng(7)
_SCOPES = itertools.count()


def _eager_scope() -> str:
    # eager variables live in one process-wide store: a fresh scope per call
    return f"eager_norm_{next(_SCOPES)}"


def _x(shape, dtype=np.float32, shift=0.0):
    return (RNG.standard_normal(shape) * 2.0 + shift).astype(dtype)


def _params(c):
    gamma = (RNG.standard_normal(c) + 1.0).astype(np.float32)
    beta = RNG.standard_normal(c).astype(np.float32)
    return gamma, beta


def _init(gamma, beta):
    return {"gamma": v1.constant_initializer(gamma), "beta": v1.constant_initializer(beta)}


CASES = [  # fn, shape, channels_axis, groups (None: instance), strided
    ("group_norm", (2, 5, 4, 6), -1, 3, True),
    ("group_norm", (2, 5, 4, 6), -1, 3, False),
    ("group_norm", (3, 8, 2, 5), 1, 4, True),
    ("group_norm", (3, 8, 2, 5), 1, 2, False),
    ("group_norm", (4, 6), -1, 2, True),
    ("group_norm", (2, 3, 4), -1, 2, False),
    ("layer_norm", (2, 5, 4, 6), -1, 1, False),
    ("layer_norm", (3, 8, 2, 5), 1, 1, False),
    ("layer_norm", (5, 7), -1, 1, False),
    ("instance_norm", (2, 5, 4, 6), -1, None, False),
    ("instance_norm", (3, 8, 2, 5), 1, None, False),
]


def _call(name, x, axis, groups, strided, **kwargs):
    fn = getattr(norm, name)
    if name == "group_norm":
        kwargs.update(groups=groups, strided_channel_grouping=strided)
    return fn(x, channels_axis=axis, **kwargs)


@pytest.mark.parametrize("name, shape, axis, groups, strided", CASES)
def test_values_and_gradients_match_the_reference(name, shape, axis, groups, strided):
    x = _x(shape, shift=3.0)
    c = shape[axis]
    groups_ = c if groups is None else groups
    gamma, beta = _params(c)
    eps = 1e-3
    scope = _eager_scope()
    xv = ig.Variable(x)
    with ig.GradientTape() as tape:
        y = _call(name, xv, axis, groups, strided, epsilon=eps,
                  param_initializers=_init(gamma, beta), scope=scope)
        u = RNG.standard_normal(shape).astype(np.float32)
        loss = ig.reduce_sum(y * u)
    variables = {v.name: v for v in v1.global_variables()}
    grads = tape.gradient(loss, [xv, variables[f"{scope}/gamma:0"],
                                 variables[f"{scope}/beta:0"]])
    want = ref.group_norm(x, gamma, beta, groups_, axis, eps, strided)
    assert y.dtype == np.float32 and tuple(y.shape) == shape
    np.testing.assert_allclose(np.asarray(y), want, rtol=2e-5, atol=2e-5)
    # <u, dy> against central differences of the float64 reference along random directions
    h = 1e-6
    dx, dg, db = (RNG.standard_normal(s) for s in (shape, c, c))

    def f(t):
        return ref.group_norm(x + t * dx, gamma + t * dg, beta + t * db, groups_, axis, eps,
                              strided)

    numeric = np.sum(u * (f(h) - f(-h)) / (2 * h))
    analytic = (np.sum(np.asarray(grads[0]) * dx) + np.sum(np.asarray(grads[1]) * dg)
                + np.sum(np.asarray(grads[2]) * db))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-3, atol=1e-3)


def test_float16_inputs_keep_their_dtype():
    x = _x((2, 4, 4, 4), np.float16)
    scope = _eager_scope()
    y = norm.group_norm(x, groups=2, scope=scope)
    variables = [v for v in v1.global_variables() if v.name.startswith(scope + "/")]
    assert y.dtype == np.float16
    assert [v.dtype for v in variables] == [ig.float16, ig.float16]
    want = ref.group_norm(x, np.ones(4), np.zeros(4), 2, -1, 1e-6, True)
    np.testing.assert_allclose(np.asarray(y, np.float64), want, atol=1e-2)


def test_normalised_outputs_have_zero_mean_unit_variance():
    x = _x((3, 6, 5, 8), shift=10.0)
    y = np.asarray(norm.group_norm(x, groups=4, strided_channel_grouping=False,
                                   center=False, scale=False), np.float64)
    g = y.reshape(3, 30, 4, 2)
    np.testing.assert_allclose(g.mean(axis=(1, 3)), 0.0, atol=1e-5)
    np.testing.assert_allclose(g.var(axis=(1, 3)), 1.0, atol=1e-3)


def test_matches_tf_keras_group_and_layer_normalization(real_tf):
    tf_keras = pytest.importorskip("tf_keras")
    x = _x((2, 5, 4, 6), shift=1.0)
    gamma, beta = _params(6)
    ours = np.asarray(norm.group_norm(x, groups=3, strided_channel_grouping=False,
                                      epsilon=1e-3, param_initializers=_init(gamma, beta)))
    ours_ln = np.asarray(norm.layer_norm(x[:, 0, 0, :], epsilon=1e-3,
                                         param_initializers=_init(gamma, beta)))
    ours_in = np.asarray(norm.instance_norm(x, epsilon=1e-3,
                                            param_initializers=_init(gamma, beta)))
    layer = tf_keras.layers.GroupNormalization(
        groups=3, axis=-1, epsilon=1e-3, gamma_initializer=tf_keras.initializers.Constant(gamma),
        beta_initializer=tf_keras.initializers.Constant(beta))
    np.testing.assert_allclose(ours, layer(x).numpy(), rtol=1e-5, atol=1e-5)
    ln = tf_keras.layers.LayerNormalization(
        axis=-1, epsilon=1e-3, gamma_initializer=tf_keras.initializers.Constant(gamma),
        beta_initializer=tf_keras.initializers.Constant(beta))
    np.testing.assert_allclose(ours_ln, ln(x[:, 0, 0, :]).numpy(), rtol=1e-5, atol=1e-5)
    inst = tf_keras.layers.GroupNormalization(
        groups=6, axis=-1, epsilon=1e-3, gamma_initializer=tf_keras.initializers.Constant(gamma),
        beta_initializer=tf_keras.initializers.Constant(beta))
    np.testing.assert_allclose(ours_in, inst(x).numpy(), rtol=1e-5, atol=1e-5)


def test_variables_as_graphcores_in_a_tf1_graph():
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32, [None, 4, 4, 6])
        a = norm.group_norm(p, groups=3)
        norm.layer_norm(p)
        norm.instance_norm(p, channels_axis=-1)
        norm.group_norm(p, groups=2, center=False, scope="nobeta")
        norm.group_norm(p, groups=2, scale=False, trainable=False, scope="frozen",
                        variables_collections={"beta": ["mine"]})
        with v1.variable_scope("outer"):
            norm.layer_norm(p, variables_collections=["all_norm"], scope="ln")
        names = [(v.name, tuple(v.shape)) for v in v1.global_variables()]
        trainable = [v.name for v in v1.trainable_variables()]
        mine = [v.name for v in v1.get_collection("mine")]
        all_norm = [v.name for v in v1.get_collection("all_norm")]
        reused = norm.group_norm(p, groups=3, scope="GroupNorm", reuse=True)
        assert len(v1.global_variables()) == len(names)
        with pytest.raises(ValueError, match="already exists"):
            norm.group_norm(p, groups=3, scope="GroupNorm")
        x = _x((2, 4, 4, 6))
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            got, got_reused = sess.run([a, reused], {p: x})
    assert names == [("GroupNorm/beta:0", (6,)), ("GroupNorm/gamma:0", (6,)),
                     ("LayerNorm/beta:0", (6,)), ("LayerNorm/gamma:0", (6,)),
                     ("InstanceNorm/beta:0", (6,)), ("InstanceNorm/gamma:0", (6,)),
                     ("nobeta/gamma:0", (2 * 3,))]
    # given collections replace GLOBAL_VARIABLES, as TF's get_variable does; trainable
    # variables are still in TRAINABLE_VARIABLES
    assert trainable == ["GroupNorm/beta:0", "GroupNorm/gamma:0", "LayerNorm/beta:0",
                         "LayerNorm/gamma:0", "InstanceNorm/beta:0", "InstanceNorm/gamma:0",
                         "nobeta/gamma:0", "outer/ln/beta:0", "outer/ln/gamma:0"]
    assert mine == ["frozen/beta:0"]
    assert all_norm == ["outer/ln/beta:0", "outer/ln/gamma:0"]
    want = ref.group_norm(x, np.ones(6), np.zeros(6), 3, -1, 1e-6, True)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(got, got_reused)


def test_graph_gradients_equal_eager_gradients():
    x = _x((2, 3, 3, 4), shift=2.0)
    gamma, beta = _params(4)
    scope = _eager_scope()
    xv = ig.Variable(x)
    with ig.GradientTape() as tape:
        y = norm.group_norm(xv, groups=2, param_initializers=_init(gamma, beta), scope=scope)
        loss = ig.reduce_sum(y * y * 0.5 + y)
    eager = tape.gradient(loss, [xv] + [v for v in v1.global_variables()
                                        if v.name.startswith(scope + "/")])
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32, x.shape)
        y = norm.group_norm(p, groups=2, param_initializers=_init(gamma, beta), scope="e")
        loss = ig.reduce_sum(y * y * 0.5 + y)
        grads = v1.gradients(loss, [p] + v1.global_variables())
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            graph = sess.run(grads, {p: x})
    for e, g in zip(eager, graph):
        np.testing.assert_allclose(np.asarray(e), g, rtol=1e-5, atol=1e-5)


def test_training_false_uses_batch_statistics():
    x = _x((2, 4, 6), shift=1.0)
    a = np.asarray(norm.group_norm(x, groups=3, training=False))
    b = np.asarray(norm.group_norm(x, groups=3, training=True))
    np.testing.assert_array_equal(a, b)


def test_reduction_axes_is_deprecated_and_ignored(caplog):
    x = _x((2, 4, 6))
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        a = np.asarray(norm.layer_norm(x, reduction_axes=[1]))
    assert "reduction_axes is deprecated as it has no effect." in caplog.text
    np.testing.assert_allclose(a, ref.group_norm(x, np.ones(6), np.zeros(6), 1), atol=1e-5)


@pytest.mark.parametrize("call, error, match", [
    (lambda x: norm.group_norm(x, groups=8), ValueError, "Invalid groups 8 for 6 channels."),
    (lambda x: norm.group_norm(x, groups=4), ValueError,
     "6 channels is not commensurate with 4 groups."),
    (lambda x: norm.group_norm(x, channels_axis=2), ValueError,
     r"Unsupported data format, group norm only supports NCHW\(channel axis 1\) and NHWC"),
    (lambda x: norm.layer_norm(x, channels_axis=4), ValueError, "Axis is out of bounds."),
    (lambda x: norm.instance_norm(x, channels_axis=-5), ValueError, "Axis is out of bounds."),
    (lambda x: norm.group_norm(x.astype(np.float64)), TypeError,
     "has DataType float64 not in list of allowed values"),
    (lambda x: norm.group_norm(x.astype(np.int32)), TypeError,
     "has DataType int32 not in list of allowed values"),
])
def test_graphcore_errors(call, error, match):
    with v1.Graph().as_default():
        with pytest.raises(error, match=match):
            call(_x((2, 3, 4, 6)))


def test_undefined_rank_is_rejected():
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32)
        with pytest.raises(ValueError, match="has undefined rank"):
            norm.group_norm(p)
        q = v1.placeholder(np.float32, [2, 3, None])
        with pytest.raises(ValueError, match="has undefined channel dimension: 2"):
            norm.layer_norm(q)
