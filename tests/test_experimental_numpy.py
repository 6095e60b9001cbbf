"""tf.experimental.numpy's joining and splitting functions against real TF's
``tf.experimental.numpy`` and numpy (values, dtypes after promotion, shapes), their
gradients, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf

tnp = tf.experimental.numpy

SHAPES = [(0,), (1,), (4,), (2, 3), (1, 4), (2, 3, 4), (2, 1, 2, 3)]


def _arrays(shape, count, dtypes=("float32",)):
    rng = np.random.default_rng(sum(shape) + count)
    return [rng.normal(size=shape).astype(dtypes[k % len(dtypes)]) for k in range(count)]


def _same(ours, theirs):
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
        return
    theirs = np.asarray(theirs)
    assert isinstance(ours, tf.Tensor)
    assert ours.dtype.name == theirs.dtype.name
    np.testing.assert_array_equal(ours.numpy(), theirs)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fn", ["hstack", "vstack", "dstack", "concatenate", "stack"])
def test_joining_matches_tensorflow_and_numpy(real_tf, fn, shape):
    arrays = _arrays(shape, 3, ("float32", "int32", "float16"))
    _same(getattr(tnp, fn)(arrays), getattr(real_tf.experimental.numpy, fn)(arrays))
    _same(getattr(tnp, fn)(arrays), getattr(np, fn)(arrays))


@pytest.mark.parametrize("shape", [(6,), (6, 4), (2, 6, 4), (4, 2, 6, 1)])
@pytest.mark.parametrize("fn", ["split", "hsplit", "vsplit", "dsplit"])
@pytest.mark.parametrize("sections", [1, 2, [1, 3], [2, 2, 5], [-2], [4, 1]])
def test_splitting_matches_tensorflow(real_tf, fn, shape, sections):
    (a,) = _arrays(shape, 1)
    theirs_fn = getattr(real_tf.experimental.numpy, fn)
    try:
        want = theirs_fn(a, sections)
    except (ValueError, IndexError, real_tf.errors.InvalidArgumentError) as e:
        ours_error = (tf.errors.InvalidArgumentError
                      if isinstance(e, real_tf.errors.InvalidArgumentError) else type(e))
        with pytest.raises(ours_error):
            getattr(tnp, fn)(a, sections)
        return
    _same(getattr(tnp, fn)(a, sections), [np.asarray(w) for w in want])


def test_atleast_and_flattening_concatenate(real_tf):
    for k in (1, 2, 3):
        fn = getattr(tnp, f"atleast_{k}d")
        for x in (np.float32(2.0), np.arange(3), np.ones((2, 3))):
            _same(fn(x), getattr(real_tf.experimental.numpy, f"atleast_{k}d")(x))
    _same(tnp.concatenate([np.ones((2, 2)), np.zeros((1, 2))], axis=None),
          np.concatenate([np.ones((2, 2)), np.zeros((1, 2))], axis=None))


def test_gradients_flow_through_join_and_split():
    a = tf.Variable(np.arange(6.0).reshape(2, 3))
    b = tf.Variable(np.ones((2, 2)))
    w = np.random.default_rng(0).normal(size=(2, 5))
    with tf.GradientTape() as tape:
        joined = tnp.hstack([a, b])
        left, right = tnp.hsplit(joined * w, [3])
        loss = tf.reduce_sum(left * left) + tf.reduce_sum(right)
    ga, gb = tape.gradient(loss, [a, b])
    np.testing.assert_allclose(ga.numpy(), 2 * np.arange(6.0).reshape(2, 3) * w[:, :3] ** 2)
    np.testing.assert_allclose(gb.numpy(), w[:, 3:])


def test_errors_as_tensorflow():
    with pytest.raises(ValueError, match="equal division"):
        tnp.hsplit(np.zeros((2, 5)), 2)
    with pytest.raises(tf.errors.InvalidArgumentError):
        tnp.split(np.zeros(5), 2)
    with pytest.raises(ValueError, match="0-th boundary -2 is smaller"):
        tnp.split(np.zeros(5), [-2])
    with pytest.raises(ValueError, match="axis 2 is out of bound"):
        tnp.dsplit(np.zeros((2, 3)), [1])
    with pytest.raises(IndexError):
        tnp.dsplit(np.zeros((2, 3)), 3)
