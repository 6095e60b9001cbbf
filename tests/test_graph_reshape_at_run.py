"""A reshape in a TF1 graph that no stand-in size of its unknown input fits (issue 17): the
graph builds with TF's static shape (the target's sizes, -1 unknown) and the run decides: it
reshapes an input of the right size, and fails with TF's InvalidArgumentError ("Input to
reshape is a tensor with 10 values, but the requested shape has 35") otherwise. Eagerly the
same error class, as TF's kernel. Compared with real TensorFlow's ``compat.v1`` graphs."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import errors

CASES = [((None,), [5, 7], 35, 10, "has 35"),
         ((None, 3), [5, -1], (10, 3), (4, 3), "requires a multiple of 5"),
         ((None, None), [7, 2, -1], (7, 2), (3, 3), "requires a multiple of 14")]


def _run(tf_v1, in_shape, target, good, bad):
    with tf_v1.Graph().as_default():
        x = tf_v1.placeholder(np.float32, in_shape)
        y = tf_v1.reshape(x, target)
        (g,) = tf_v1.gradients(tf_v1.reduce_sum(y * y), [x])
        good_val = np.arange(np.prod(good), dtype=np.float32).reshape(good)
        with tf_v1.Session() as sess:
            out = sess.run([y, g], {x: good_val})
            with pytest.raises(Exception) as failure:
                sess.run(y, {x: np.ones(bad, np.float32)})
    return y.shape.as_list(), out, failure.value


@pytest.mark.parametrize("in_shape, target, good, bad, requested", CASES)
def test_reshape_no_probe_fits_builds_and_fails_in_the_run(in_shape, target, good, bad,
                                                           requested, real_tf):
    static, (out, grad), error = _run(v1, in_shape, target, good, bad)
    assert isinstance(error, errors.InvalidArgumentError)
    assert f"Input to reshape is a tensor with {int(np.prod(bad))} values, but the requested " \
           f"shape {requested}" in str(error)
    good_val = np.arange(np.prod(good), dtype=np.float32).reshape(good)
    np.testing.assert_array_equal(out, good_val.reshape(target))
    np.testing.assert_array_equal(grad, 2 * good_val)
    t_static, (t_out, t_grad), t_error = _run(real_tf.compat.v1, in_shape, target, good, bad)
    assert static == t_static
    assert isinstance(t_error, real_tf.errors.InvalidArgumentError)
    np.testing.assert_array_equal(out, t_out)
    np.testing.assert_array_equal(grad, t_grad)


def test_eager_reshape_of_the_wrong_size_raises_invalid_argument():
    with pytest.raises(errors.InvalidArgumentError,
                       match="Input to reshape is a tensor with 10 values, but the requested "
                             "shape has 35"):
        ig.reshape(ig.constant(np.ones(10, np.float32)), [5, 7])
