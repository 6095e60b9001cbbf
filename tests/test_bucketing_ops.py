"""unique, searchsorted and histogram_fixed_width (issue 17) against the real TensorFlow
(CPU) on fresh random inputs and edge values (NaN, -0.0, +-inf, ties, empty), TF's error
classes and where TF exports them. The op table (tests/opdb_bucketing.py) checks them against
loop references and graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.compat import v1
from ipu_gpu.errors import InvalidArgumentError


def _equal(ours, theirs):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs)) if ours.dtype.kind == \
        "f" else None


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool"])
def test_unique_equals_tensorflow(dtype, real_tf):
    rng = np.random.default_rng(9)
    cases = [rng.integers(-4, 5, 30).astype(dtype), np.zeros(0, dtype),
             np.asarray([1], dtype)]
    if dtype.startswith("float"):
        cases.append(np.asarray([3.0, np.nan, -0.0, 0.0, np.inf, np.nan, -np.inf, 3.0], dtype))
    for x in cases:
        for out_idx in ("int32", "int64"):
            ours, theirs = tf.unique(x, out_idx), real_tf.unique(x, out_idx)
            _equal(ours.y.numpy(), theirs.y.numpy())
            _equal(ours.idx.numpy(), theirs.idx.numpy())


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_searchsorted_equals_tensorflow(dtype, real_tf):
    rng = np.random.default_rng(10)
    seq = np.sort(rng.integers(-5, 6, (3, 8)), axis=-1).astype(dtype)
    values = rng.integers(-7, 8, (3, 6)).astype(dtype)
    for side in ("left", "right"):
        for out_type in ("int32", "int64"):
            _equal(tf.searchsorted(seq, values, side, out_type).numpy(),
                   real_tf.searchsorted(seq, values, side, out_type).numpy())
        _equal(tf.searchsorted(seq[0], values[1], side).numpy(),
               real_tf.searchsorted(seq[0], values[1], side).numpy())
    if dtype.startswith("float"):
        special = np.asarray([np.nan, -np.inf, np.inf, -0.0], dtype)
        for side in ("left", "right"):
            _equal(tf.searchsorted(seq[0], special, side).numpy(),
                   real_tf.searchsorted(seq[0], special, side).numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_histogram_fixed_width_equals_tensorflow(dtype, real_tf):
    rng = np.random.default_rng(11)
    scale = 1 if dtype.startswith("float") else 10
    values = (rng.uniform(-3, 4, (7, 9)) * scale).astype(dtype)
    value_range = np.asarray([-2 * scale, 3 * scale], dtype)
    for nbins in (1, 5, 7, 100):
        for out in ("int32", "int64"):
            _equal(tf.histogram_fixed_width(values, value_range, nbins, out).numpy(),
                   real_tf.histogram_fixed_width(values, value_range, nbins, out).numpy())
    if dtype.startswith("float"):
        edges = np.asarray([-2.0, 3.0, -np.inf, np.inf, 0.5, 2.9999], dtype)
        _equal(tf.histogram_fixed_width(edges, value_range, 5).numpy(),
               real_tf.histogram_fixed_width(edges, value_range, 5).numpy())


def test_errors_are_tensorflows(real_tf):
    cases = [
        (lambda lib: lib.unique(np.zeros((2, 2))), InvalidArgumentError),
        (lambda lib: lib.searchsorted([1, 2, 3], [2], side="mid"), ValueError),
        (lambda lib: lib.searchsorted([[1, 2, 3]], [[2], [3]]), InvalidArgumentError),
        (lambda lib: lib.histogram_fixed_width([1, 2, 3], [0, 4], nbins=0),
         InvalidArgumentError),
        (lambda lib: lib.histogram_fixed_width([1.0, 2.0], [3.0, 1.0]), InvalidArgumentError),
        (lambda lib: lib.histogram_fixed_width([np.nan, 1.0], [0.0, 4.0]), InvalidArgumentError),
        (lambda lib: lib.histogram_fixed_width(np.ones(2, np.float16),
                                               np.asarray([0, 2], np.float16)), TypeError),
    ]
    for call, exc in cases:
        with pytest.raises(exc):
            call(tf)
        with pytest.raises((real_tf.errors.InvalidArgumentError, ValueError)):
            call(real_tf)


def test_exported_where_tensorflow_exports_them(real_tf):
    for name in ("unique", "searchsorted", "histogram_fixed_width"):
        assert hasattr(real_tf, name) and hasattr(real_tf.compat.v1, name)
        assert callable(getattr(tf, name)) and callable(getattr(v1, name))
    y, idx = v1.unique([2, 1, 2])
    np.testing.assert_array_equal(y.numpy(), [2, 1])
    np.testing.assert_array_equal(idx.numpy(), [0, 1, 0])


def test_in_a_tf1_graph_they_give_the_eager_numbers():
    rng = np.random.default_rng(12)
    x0 = rng.integers(0, 5, 10).astype(np.int32)
    v0 = rng.uniform(-1, 6, (3, 4)).astype(np.float32)
    with v1.Graph().as_default():
        x = v1.placeholder(tf.int32, [10])
        v = v1.placeholder(tf.float32, [3, 4])
        y, idx = v1.unique(x)
        counts = v1.histogram_fixed_width(v, [0.0, 5.0], nbins=5)
        where = v1.searchsorted(v1.constant([[0.0, 1.0, 2.5, 5.0]]), v1.reshape(v, [1, -1]))
        with v1.Session() as sess:
            got = sess.run([y, idx, counts, where], {x: x0, v: v0})
    want = [tf.unique(x0).y, tf.unique(x0).idx,
            tf.histogram_fixed_width(v0, [0.0, 5.0], nbins=5),
            tf.searchsorted([[0.0, 1.0, 2.5, 5.0]], v0.reshape(1, -1))]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b.numpy())
