"""tf.math.unsorted_segment_max/min/prod and tf.linalg.matvec (issue 17 sweep): against a
plain numpy reference, against the real TensorFlow, float64 finite-difference gradients,
TF1 graph nodes, and TF's errors."""

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as tf1
from ipu_gpu.errors import InvalidArgumentError

KINDS = ("max", "min", "prod")


def _np_segment(kind, data, ids, n):
    """Loop reference: the identity for empty segments (lowest/highest/1), ids < 0 dropped."""
    data = np.asarray(data)
    ids = np.asarray(ids)
    tail = data.shape[ids.ndim:]
    rows = data.reshape((-1,) + tail)
    if kind == "prod":
        out = np.ones((n,) + tail, data.dtype)
    else:
        info = np.finfo(data.dtype) if data.dtype.kind == "f" else np.iinfo(data.dtype)
        out = np.full((n,) + tail, info.min if kind == "max" else info.max, data.dtype)
    seen = np.zeros(n, bool)
    for row, i in zip(rows, ids.reshape(-1)):
        if i < 0:
            continue
        if not seen[i]:
            out[i], seen[i] = row, True
        elif kind == "max":
            out[i] = np.maximum(out[i], row)
        elif kind == "min":
            out[i] = np.minimum(out[i], row)
        else:
            out[i] = out[i] * row
    return out


def _fn(kind):
    return getattr(ig.math, f"unsorted_segment_{kind}")


CASES = [  # (data shape, ids, num_segments)
    ((7,), [3, 0, 3, -1, 1, 0, 3], 5),
    ((6, 3), [2, 2, 0, 5, 2, 0], 7),
    ((2, 3, 2), [[1, 0, 1], [-1, 1, 0]], 3),
    ((0, 2), [], 2),
    ((1,), [0], 1),
    ((33, 2), list(np.random.default_rng(3).integers(-1, 4, 33)), 4),
]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_matches_numpy(kind, dtype, case):
    shape, ids, n = CASES[case]
    rng = np.random.default_rng(case)
    data = rng.integers(-3, 4, shape).astype(dtype) if np.dtype(dtype).kind == "i" \
        else rng.uniform(-2, 2, shape).astype(dtype)
    ids = np.asarray(ids, np.int32).reshape(shape[:np.asarray(ids).ndim] if ids else (0,))
    got = _fn(kind)(data, ids, n)
    want = _np_segment(kind, data, ids, n)
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    tol = 2e-3 if dtype == np.float16 else 1e-6
    np.testing.assert_allclose(got.numpy(), want, rtol=tol)


@pytest.mark.parametrize("kind", KINDS)
def test_matches_real_tensorflow(kind, real_tf):
    rng = np.random.default_rng(11)
    for dtype in (np.float32, np.int32, np.float64):
        data = rng.integers(-3, 4, (9, 2)).astype(dtype)  # ties and zeros
        ids = rng.integers(-1, 5, 9).astype(np.int64)
        want = getattr(real_tf.math, f"unsorted_segment_{kind}")(data, ids, 6).numpy()
        got = _fn(kind)(data, ids, 6).numpy()
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_matches_real_tensorflow(kind, real_tf):
    """Ties (max/min split the cotangent) and one and two zeros in a segment (prod)."""
    data = np.array([[1.0, 0.0], [2.0, 3.0], [2.0, 0.0], [-1.5, 4.0], [0.5, 0.0]])
    ids = np.array([0, 0, 0, 2, -1])
    cot = np.random.default_rng(4).normal(size=(3, 2))
    x = real_tf.Variable(data)
    with real_tf.GradientTape() as t:
        y = real_tf.reduce_sum(getattr(real_tf.math, f"unsorted_segment_{kind}")(x, ids, 3) * cot)
    want = t.gradient(y, x).numpy()
    v = ig.Variable(data)
    with ig.GradientTape() as t:
        y = ig.reduce_sum(_fn(kind)(v, ids, 3) * ig.constant(cot))
    np.testing.assert_allclose(t.gradient(y, v).numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_gradient_matches_finite_differences(kind):
    rng = np.random.default_rng(8)
    data = rng.uniform(0.5, 2.0, (8, 3)) * rng.choice([-1, 1], (8, 3))  # distinct, nonzero
    ids = np.array([1, 3, 1, 0, 3, -1, 1, 3], np.int32)
    cot = rng.normal(size=(4, 3))
    x = ig.Variable(data)
    with ig.GradientTape() as t:
        y = ig.reduce_sum(_fn(kind)(x, ids, 4) * ig.constant(cot))
    got = t.gradient(y, x).numpy()
    eps, want = 1e-6, np.zeros_like(data)
    for i in np.ndindex(data.shape):
        hi, lo = data.copy(), data.copy()
        hi[i] += eps
        lo[i] -= eps
        want[i] = np.sum((_np_segment(kind, hi, ids, 4) - _np_segment(kind, lo, ids, 4))
                         * cot) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind", KINDS)
def test_errors(kind, real_tf):
    fn = _fn(kind)
    with pytest.raises(InvalidArgumentError, match=r"segment_ids\[1\] = 5 is out of range "
                                                   r"\[0, 4\)"):
        fn([1.0, 2.0, 3.0], [0, 5, 2], 4)
    with pytest.raises(real_tf.errors.InvalidArgumentError,
                       match=r"segment_ids\[1\] = 5 is out of range \[0, 4\)"):
        getattr(real_tf.math, f"unsorted_segment_{kind}")([1.0, 2.0, 3.0], [0, 5, 2], 4)
    with pytest.raises(TypeError, match="segment_ids must be an integer tensor"):
        fn([1.0, 2.0], [0.0, 1.0], 2)
    with pytest.raises(TypeError, match="data must be float16"):
        fn([True, False], [0, 1], 2)
    with pytest.raises(InvalidArgumentError, match="must start with segment_ids.shape"):
        fn(np.ones((3, 2)), [0, 1], 2)
    with pytest.raises(InvalidArgumentError, match="num_segments must not be negative"):
        fn([1.0], [0], -1)
    with pytest.raises(TypeError, match="num_segments must be an int"):
        fn([1.0], [0], 1.5)


def test_tf1_names_and_graph_nodes():
    data = np.array([[1.0, 5.0], [3.0, -2.0], [0.5, 4.0]], np.float32)
    ids = np.array([1, 0, 1])
    with tf1.Graph().as_default():
        x = tf1.placeholder(tf1.float32, [3, 2])
        outs = [getattr(tf1, f"unsorted_segment_{k}")(x, ids, 2) for k in KINDS]
        grads = tf1.gradients(tf1.reduce_sum(outs[2]), x)
        with tf1.Session() as sess:
            got = sess.run(outs + grads, {x: data})
    for kind, g in zip(KINDS, got):
        np.testing.assert_allclose(g, _np_segment(kind, data, ids, 2), rtol=1e-6)
    np.testing.assert_allclose(got[3], [[0.5, 4.0], [1.0, 1.0], [1.0, 5.0]], rtol=1e-6)


# ---- tf.linalg.matvec ------------------------------------------------------------------------

@pytest.mark.parametrize("a_shape,b_shape,kw", [
    ((3, 4), (4,), {}),
    ((4, 3), (4,), {"transpose_a": True}),
    ((4, 3), (4,), {"adjoint_a": True}),
    ((2, 3, 4), (2, 4), {}),
    ((2, 3, 4), (4,), {}),
    ((3, 4), (5, 4), {}),
    ((0, 4), (4,), {}),
])
def test_matvec_matches_numpy_and_tensorflow(a_shape, b_shape, kw, real_tf):
    rng = np.random.default_rng(len(a_shape) + len(b_shape))
    a = rng.normal(size=a_shape).astype(np.float32)
    b = rng.normal(size=b_shape).astype(np.float32)
    got = ig.linalg.matvec(a, b, **kw)
    mat = np.swapaxes(a, -1, -2) if kw else a
    want = np.einsum("...ij,...j->...i", mat.astype(np.float64), b.astype(np.float64))
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.numpy(), real_tf.linalg.matvec(a, b, **kw).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_matvec_gradient_and_errors(real_tf):
    rng = np.random.default_rng(9)
    a0, b0 = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 4))
    cot = rng.normal(size=(2, 3))
    a, b = ig.Variable(a0), ig.Variable(b0)
    with ig.GradientTape() as t:
        y = ig.reduce_sum(ig.linalg.matvec(a, b) * ig.constant(cot))
    ga, gb = t.gradient(y, [a, b])
    np.testing.assert_allclose(ga.numpy(), cot[:, :, None] * b0[:, None, :], rtol=1e-12)
    np.testing.assert_allclose(gb.numpy(), np.einsum("bij,bi->bj", a0, cot), rtol=1e-12)
    with pytest.raises(ValueError, match="Only one of `transpose_a` and `adjoint_a` can be "
                                         "True"):
        ig.linalg.matvec(a0, b0, transpose_a=True, adjoint_a=True)
    with pytest.raises(ValueError, match="Only one of `transpose_a` and `adjoint_a` can be "
                                         "True"):
        real_tf.linalg.matvec(a0, b0, transpose_a=True, adjoint_a=True)
    with pytest.raises((ValueError, InvalidArgumentError)):
        ig.linalg.matvec(np.ones((1, 2)), np.ones(3))
    np.testing.assert_allclose(tf1.linalg.matvec(a0, b0).numpy(), np.einsum("bij,bj->bi", a0, b0))
