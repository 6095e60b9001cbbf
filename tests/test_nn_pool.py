"""``tf.nn.pool`` and ``tf.compat.v1.nn.pool`` (issue 17): N-D max/average pooling with
strides or dilations, both data formats, against real TensorFlow (values and gradients),
eagerly and in a TF1 graph of unknown spatial size, and TF's argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1

CASES = [  # (input shape, window, pooling, strides, padding, data format, dilations)
    ((2, 9, 3), [2], "MAX", [2], "VALID", None, None),
    ((2, 9, 3), [3], "AVG", [1], "SAME", "NWC", None),
    ((2, 3, 9), [2], "MAX", None, "VALID", "NCW", [3]),
    ((2, 10, 3), [3], "AVG", None, "VALID", None, [2]),
    ((1, 7, 8, 2), [2, 3], "MAX", None, "VALID", None, [2, 2]),
    ((1, 7, 8, 2), [2, 2], "AVG", [2, 1], "SAME", None, None),
    ((1, 2, 7, 8), [3, 2], "AVG", None, "VALID", "NCHW", [1, 3]),
    ((1, 5, 6, 7, 2), [2, 2, 2], "MAX", None, "VALID", None, [2, 1, 3]),
]


def _data(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _ours(x, case):
    _, window, kind, strides, padding, fmt, rates = case
    return ig.nn.pool(x, window, kind, strides=strides, padding=padding, data_format=fmt,
                      dilations=rates)


def _channels_first_on_cpu(case):
    return case[5] is not None and case[5].startswith("NC")


@pytest.mark.parametrize("case", CASES, ids=str)
def test_pool_equals_tensorflow(case, real_tf):
    x_val = _data(case[0], 0)
    x = ig.constant(x_val)
    with ig.GradientTape() as tape:
        tape.watch(x)
        y = _ours(x, case)
    cot = _data(y.shape, 1)
    grad = tape.gradient(y, x, output_gradients=ig.constant(cot)).numpy()
    if _channels_first_on_cpu(case):  # TF's CPU kernels take NHWC: compare transposed
        n = len(case[0]) - 2
        to_last, to_first = [0, *range(2, n + 2), 1], [0, n + 1, *range(1, n + 1)]
        last = (case[0], case[1], case[2], case[3], case[4],
                None if n > 1 else "NWC", case[6])
        tx = real_tf.constant(np.transpose(x_val, to_last))
        with real_tf.GradientTape() as t_tape:
            t_tape.watch(tx)
            ty = real_tf.nn.pool(tx, last[1], last[2], strides=last[3], padding=last[4],
                                 dilations=last[6])
        t_grad = t_tape.gradient(ty, tx, output_gradients=np.transpose(cot, to_last))
        expected, expected_grad = (np.transpose(ty.numpy(), to_first),
                                   np.transpose(t_grad.numpy(), to_first))
    else:
        tx = real_tf.constant(x_val)
        with real_tf.GradientTape() as t_tape:
            t_tape.watch(tx)
            ty = real_tf.nn.pool(tx, case[1], case[2], strides=case[3], padding=case[4],
                                 data_format=case[5], dilations=case[6])
        expected = ty.numpy()
        expected_grad = t_tape.gradient(ty, tx, output_gradients=cot).numpy()
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [c for c in CASES if c[5] is None], ids=str)
def test_v1_pool_in_a_graph_of_unknown_size_equals_eager(case, real_tf):
    x_val = _data(case[0], 2)
    expected = _ours(ig.constant(x_val), case).numpy()
    _, window, kind, strides, padding, fmt, rates = case
    results = []
    for tf_v1 in (v1, real_tf.compat.v1):
        with tf_v1.Graph().as_default():
            x = tf_v1.placeholder(np.float32, [None] * (len(case[0]) - 1) + [case[0][-1]])
            y = tf_v1.nn.pool(x, window, kind, padding, dilation_rate=rates, strides=strides)
            (g,) = tf_v1.gradients(tf_v1.reduce_sum(y * y), [x])
            with tf_v1.Session() as sess:
                results.append((y.shape.as_list(), *sess.run([y, g], {x: x_val})))
    (static, out, grad), (t_static, t_out, t_grad) = results
    assert static == t_static
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    np.testing.assert_allclose(out, t_out, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(grad, t_grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs, message", [
    (dict(window_shape=[2, 2, 2, 2], pooling_type="MAX"), "must be 1, 2, or 3"),
    (dict(window_shape=[2], pooling_type="MAX", strides=[2], dilations=[2]),
     "not supported in conjunction"),
    (dict(window_shape=[2], pooling_type="MAX", padding="SAME", dilations=[2]),
     "'SAME' padding is not implemented"),
    (dict(window_shape=[2], pooling_type="MAX", strides=[3]), "`strides` > `window_shape`"),
    (dict(window_shape=[2], pooling_type="MIN"), "1-D MIN pooling is not supported"),
    (dict(window_shape=[2], pooling_type="MAX", dilations=[1, 1]),
     r"`len\(dilation_rate\)` should be 1"),
    (dict(window_shape=[2], pooling_type="MAX", strides=[0]),
     "all values of `strides` must be positive"),
    (dict(window_shape=[2], pooling_type="AVG", data_format="NHWC"),
     "data_format must be either 'NWC' or 'NCW'"),
])
def test_pool_argument_errors_as_tensorflow(kwargs, message, real_tf):
    x = _data((1, 6, 2), 3)
    with pytest.raises(ValueError, match=message):
        ig.nn.pool(ig.constant(x), **kwargs)
    with pytest.raises(ValueError, match=message):
        real_tf.nn.pool(x, **kwargs)
