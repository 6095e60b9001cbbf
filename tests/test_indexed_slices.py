"""``tf.IndexedSlices``: the type (attributes, conversion, ops densifying it) and the tape's
sparse gradients of row gathers (TF's GatherV2 gradient, aggregation and pass-through), with
numpy float64 references and TensorFlow (the ``real_tf`` fixture) as the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from reference import indexed_slices as ref

import ipu_gpu as tf
from ipu_gpu.keras import layers


def _slices(lib, values, indices, dense_shape=None):
    return lib.IndexedSlices(lib.constant(values), lib.constant(indices),
                             None if dense_shape is None else lib.constant(dense_shape))


VALUES = np.arange(1.0, 9.0, dtype=np.float32).reshape(4, 2)
INDICES = np.array([2, 0, 2, 3], np.int32)


# ---- the type -----------------------------------------------------------------------------------
def test_attributes():
    s = _slices(tf, VALUES, INDICES, [5, 2])
    np.testing.assert_array_equal(s.values.numpy(), VALUES)
    np.testing.assert_array_equal(s.indices.numpy(), INDICES)
    np.testing.assert_array_equal(s.dense_shape.numpy(), [5, 2])
    assert s.dtype == tf.float32 and s.shape == [5, 2] and s.device == "/device:CPU:0"
    neg = -s
    assert isinstance(neg, tf.IndexedSlices)
    np.testing.assert_array_equal(neg.values.numpy(), -VALUES)
    assert neg.indices is s.indices and neg.dense_shape is s.dense_shape
    no_shape = _slices(tf, VALUES, INDICES)
    assert no_shape.dense_shape is None and no_shape.shape.rank is None
    with pytest.raises(TypeError, match="indices must be an integer"):
        tf.IndexedSlices(VALUES, np.array([0.5]))


def test_dense_value_sums_repeated_indices():
    s = _slices(tf, VALUES, INDICES, [5, 2])
    expected = ref.dense(VALUES, INDICES, (5, 2))
    np.testing.assert_array_equal(tf.convert_to_tensor(s).numpy(), expected)
    # ops densify it, as TF converts it
    np.testing.assert_array_equal((tf.ones([5, 2]) + s).numpy(), expected + 1)
    assert float(tf.reduce_sum(s)) == expected.sum()
    np.testing.assert_array_equal(tf.multiply(s, 2.0).numpy(), expected * 2)
    with pytest.raises(TypeError, match="dtype float64"):
        tf.convert_to_tensor(s, dtype=tf.float64)
    with pytest.raises(ValueError, match="Tensor conversion requested for IndexedSlices for "
                                         "argument `value` without dense_shape"):
        tf.convert_to_tensor(_slices(tf, VALUES, INDICES))


def test_identity_cast_and_clip_keep_it():
    s = _slices(tf, VALUES, INDICES, [5, 2])
    for out, values in ((tf.identity(s), VALUES), (tf.cast(s, tf.float64), VALUES),
                        (tf.clip_by_value(s, 2.0, 6.5), np.clip(VALUES, 2.0, 6.5))):
        assert isinstance(out, tf.IndexedSlices)
        np.testing.assert_array_equal(out.values.numpy(), values)
        np.testing.assert_array_equal(out.indices.numpy(), INDICES)
    assert tf.cast(s, tf.float64).dtype == tf.float64


def test_type_against_tf(real_tf):
    ours, theirs = _slices(tf, VALUES, INDICES, [5, 2]), _slices(real_tf, VALUES, INDICES, [5, 2])
    assert ours.shape.as_list() == theirs.shape.as_list()
    assert ours.dtype.name == theirs.dtype.name
    for a, b in ((tf.convert_to_tensor(ours), real_tf.convert_to_tensor(theirs)),
                 (tf.convert_to_tensor(-ours), real_tf.convert_to_tensor(-theirs)),
                 (tf.convert_to_tensor(tf.clip_by_value(ours, 2.0, 6.5)),
                  real_tf.convert_to_tensor(real_tf.clip_by_value(theirs, 2.0, 6.5)))):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert str(ours).startswith("IndexedSlices(indices=") and "dense_shape=" in str(ours)
    assert str(theirs).startswith("IndexedSlices(indices=") and "dense_shape=" in str(theirs)
    assert _slices(tf, VALUES, INDICES).shape.rank is None
    assert _slices(real_tf, VALUES, INDICES).shape.rank is None
    spec_ours = tf.IndexedSlicesSpec([5, 2], tf.float32)
    spec_theirs = real_tf.IndexedSlicesSpec([5, 2], real_tf.float32)
    assert repr(spec_ours) == repr(spec_theirs)
    assert repr(ours._type_spec) == repr(theirs._type_spec)
    assert spec_ours == tf.IndexedSlicesSpec(shape=[5, 2])
    assert spec_ours.is_compatible_with(tf.IndexedSlicesSpec([None, 2]))
    assert spec_ours.value_type is tf.IndexedSlices


# ---- the tape -----------------------------------------------------------------------------------
W = np.arange(12.0, dtype=np.float32).reshape(6, 2) / 10


def _grads(lib, make_loss, watch_constant=False):
    """The gradient of ``make_loss(lib, v)`` with respect to a Variable holding W (or to a
    watched constant)."""
    v = lib.constant(W) if watch_constant else lib.Variable(W)
    with lib.GradientTape() as tape:
        if watch_constant:
            tape.watch(v)
        loss = make_loss(lib, v)
    return tape.gradient(loss, v)


CASES = {
    "gather": lambda lib, v: lib.reduce_sum(lib.gather(v, [4, 1, 4]) ** 2),
    "gather_2d_ids": lambda lib, v: lib.reduce_sum(lib.gather(v, [[0, 5], [5, 2]]) * 3.0),
    "embedding_lookup": lambda lib, v: lib.reduce_sum(lib.nn.embedding_lookup(v, [3, 3, 0])),
    "identity": lambda lib, v: lib.reduce_sum(lib.gather(lib.identity(v), [2])),
    "two_gathers": lambda lib, v: (lib.reduce_sum(lib.gather(v, [0, 2]))
                                   + lib.reduce_sum(lib.gather(v, [5]) * 2.0)),
    "gather_and_dense": lambda lib, v: (lib.reduce_sum(lib.gather(v, [1, 1]))
                                        + lib.reduce_sum(v * v)),
    "axis_1": lambda lib, v: lib.reduce_sum(lib.gather(v, [1], axis=1)),
    "through_multiply": lambda lib, v: lib.reduce_sum(lib.gather(v * 2.0, [3])),
    "cast": lambda lib, v: lib.reduce_sum(lib.cast(lib.gather(lib.cast(v, lib.float64),
                                                              [1, 3]), lib.float32)),
}


@pytest.mark.parametrize("watch_constant", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_gradient_structure_against_tf(real_tf, case, watch_constant):
    ours = _grads(tf, CASES[case], watch_constant)
    theirs = _grads(real_tf, CASES[case], watch_constant)
    assert isinstance(ours, tf.IndexedSlices) == isinstance(theirs, real_tf.IndexedSlices)
    if isinstance(ours, tf.IndexedSlices):
        np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
        np.testing.assert_allclose(ours.values.numpy(), theirs.values.numpy(), rtol=1e-6)
        np.testing.assert_array_equal(ours.dense_shape.numpy(), theirs.dense_shape.numpy())
        assert ours.values.dtype.name == theirs.values.dtype.name
        ours, theirs = tf.convert_to_tensor(ours), real_tf.convert_to_tensor(theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_gradient_values_against_numpy():
    g = _grads(tf, CASES["gather"])
    assert isinstance(g, tf.IndexedSlices)
    np.testing.assert_array_equal(g.indices.numpy(), [4, 1, 4])
    np.testing.assert_allclose(g.values.numpy(), 2 * W[[4, 1, 4]], rtol=1e-6)
    expected = ref.dense(2 * W[[4, 1, 4]].astype(np.float64), [4, 1, 4], W.shape)
    np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), expected, rtol=1e-6)


def test_autocast_variable_gradient_is_sparse_in_the_variable_dtype():
    class Lookup(layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", shape=(6, 2))

        def call(self, ids):
            return tf.gather(self.w, ids)

    layer = Lookup(dtype="mixed_float16")
    with tf.GradientTape() as tape:
        y = layer(tf.constant([0, 0, 3]))
        assert y.dtype == tf.float16
        loss = tf.reduce_sum(tf.cast(y, tf.float32))
    g = tape.gradient(loss, layer.w)  # through the read's cast, as TF's Cast gradient
    assert isinstance(g, tf.IndexedSlices) and g.dtype == tf.float32
    np.testing.assert_array_equal(g.indices.numpy(), [0, 0, 3])


def test_finite_differences_of_the_densified_gradient():
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((5, 3))
    ids = np.array([4, 0, 4, 2, 4], np.int32)
    u = rng.standard_normal((5, 3))

    def f(x):
        y = tf.gather(x, ids)
        return tf.reduce_sum(tf.tanh(y) * tf.constant(u)) + tf.reduce_sum(tf.gather(x, [1]) ** 2)

    x = tf.constant(x0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = f(x)
    g = tape.gradient(loss, x)
    assert isinstance(g, tf.IndexedSlices)
    analytic = tf.convert_to_tensor(g).numpy()
    d = rng.standard_normal(x0.shape)
    eps = 1e-6
    numeric = (float(f(tf.constant(x0 + eps * d))) - float(f(tf.constant(x0 - eps * d)))) / (
        2 * eps)
    assert float(np.vdot(analytic, d)) == pytest.approx(numeric, rel=1e-6)


def test_second_derivative_through_a_sparse_gradient():
    x = tf.constant(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(tf.gather(x, [0, 2, 0]) ** 3)
        g = inner.gradient(y, x)
        assert isinstance(g, tf.IndexedSlices)
        z = tf.reduce_sum(tf.convert_to_tensor(g))
    h = outer.gradient(z, x)
    h = tf.convert_to_tensor(h) if isinstance(h, tf.IndexedSlices) else h
    # z = sum over the gathered rows of 3 y^2, so dz/dx = 6 x per gathered occurrence
    expected = ref.dense(6 * x.numpy()[[0, 2, 0]], [0, 2, 0], (3, 2))
    np.testing.assert_allclose(h.numpy(), expected)


def test_unconnected_and_output_gradients():
    v = tf.Variable(W)
    with tf.GradientTape() as tape:
        y = tf.gather(v, [2, 2])
    g = tape.gradient(y, v, output_gradients=_slices(tf, [[1.0, 2.0], [3.0, 4.0]], [0, 1],
                                                     [2, 2]))
    np.testing.assert_array_equal(g.values.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy()[2], [4.0, 6.0])


# ---- Variable's sparse methods ----------------------------------------------------------------
def test_variable_scatter_methods():
    v = tf.Variable(W)
    v.scatter_add(_slices(tf, VALUES, INDICES, [6, 2]))
    expected = W.astype(np.float64) + ref.dense(VALUES, INDICES, W.shape)
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-6)
    v.scatter_sub(_slices(tf, VALUES, INDICES))
    np.testing.assert_allclose(v.numpy(), W, rtol=1e-6, atol=1e-6)
    v.scatter_update(_slices(tf, [[9.0, 9.0]], [5]))
    np.testing.assert_array_equal(v.numpy()[5], [9.0, 9.0])
    np.testing.assert_array_equal(v.sparse_read([5, 1]).numpy(), [[9.0, 9.0], v.numpy()[1]])
    with pytest.raises(TypeError, match="sparse_delta is not IndexedSlices"):
        v.scatter_add(tf.ones([6, 2]))
    with pytest.raises(ValueError, match="values must have shape"):
        v.scatter_add(_slices(tf, [[1.0, 2.0, 3.0]], [0]))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v.sparse_read([1]))
    assert isinstance(tape.gradient(y, v), tf.IndexedSlices)


def test_scatter_keeps_earlier_reads():
    v = tf.Variable(W)
    before = v.read_value()
    v.scatter_add(_slices(tf, [[1.0, 1.0]], [0]))
    np.testing.assert_array_equal(before.numpy(), W)
    np.testing.assert_array_equal(v.numpy()[0], W[0] + 1)
