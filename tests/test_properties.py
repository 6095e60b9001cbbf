"""Property tests (hypothesis, small shapes): invariants that hold for any valid input."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import ipu_gpu as tf

_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=6)
_floats = st.floats(-20, 20, width=32)


@given(hnp.arrays(np.float32, _shapes, elements=_floats))
def test_softmax_rows_sum_to_one(x):
    y = tf.nn.softmax(x).numpy()
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)
    assert (y >= 0).all()


@given(hnp.arrays(np.float32, st.tuples(st.integers(1, 5), st.integers(1, 7)), elements=_floats),
       st.floats(-50, 50, width=32), st.data())
def test_sparse_xent_invariant_to_shifting_logits(logits, shift, data):
    labels = np.asarray(data.draw(st.lists(st.integers(0, logits.shape[1] - 1),
                                           min_size=logits.shape[0], max_size=logits.shape[0])),
                        np.int32)
    a = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits).numpy()
    b = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits + np.float32(shift)).numpy()
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@given(hnp.arrays(np.float64, _shapes, elements=st.floats(-5, 5)), st.data())
def test_split_and_concat_are_adjoint(x, data):
    axis = data.draw(st.integers(0, x.ndim - 1))
    n = x.shape[axis]
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
    sizes = np.diff([0, *cuts, n]).tolist()
    parts = tf.split(x, sizes, axis=axis)
    assert [p.shape[axis] for p in parts] == sizes
    np.testing.assert_array_equal(tf.concat(parts, axis).numpy(), x)
    # <concat(u), x> == sum_i <u_i, split(x)_i>
    us = [np.random.default_rng(0).normal(size=p.shape) for p in parts]
    lhs = float(np.sum(tf.concat(us, axis).numpy() * x))
    rhs = sum(float(np.sum(u * p.numpy())) for u, p in zip(us, parts))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10, atol=1e-10)


@given(hnp.arrays(np.float64, _shapes, elements=st.floats(-5, 5)))
def test_reduce_sum_gradient_is_ones(x):
    t = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(t)
        y = tf.reduce_sum(t)
    np.testing.assert_array_equal(tape.gradient(y, t).numpy(), np.ones_like(x))


@given(st.lists(st.integers(0, 9), min_size=0, max_size=30))
def test_gather_gradient_counts_duplicate_ids(ids):
    params = tf.Variable(np.zeros((10, 3), np.float32))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.gather(params, np.asarray(ids, np.int32)))
    counts = np.bincount(np.asarray(ids, np.int64), minlength=10).astype(np.float32)
    g = tape.gradient(y, params)  # an IndexedSlices, as TF's: its dense value
    np.testing.assert_array_equal(tf.convert_to_tensor(g).numpy(), counts[:, None] * np.ones(3))
