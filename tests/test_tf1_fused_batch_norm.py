"""tf.compat.v1.nn.fused_batch_norm (FusedBatchNormV3): outputs, returned statistics
(unbiased batch variance, exponential averaging), gradients (none for the statistics),
formats, float16 and errors, against numpy and real TF1 graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1

_RNG = np.random.default_rng(7)
_X = _RNG.standard_normal((3, 4, 5, 2)).astype(np.float32) * 2.0 + 0.5
_SCALE = np.array([1.5, -0.5], np.float32)
_OFFSET = np.array([0.25, 1.0], np.float32)
_MEAN = np.array([0.1, -0.2], np.float32)
_VAR = np.array([2.0, 0.5], np.float32)
_W = _RNG.standard_normal((3, 4, 5, 2)).astype(np.float32)


def _numpy_train(x, eps=1e-3):
    m, v = x.mean((0, 1, 2)), x.var((0, 1, 2))
    n = x.size / x.shape[-1]
    return (x - m) / np.sqrt(v + eps) * _SCALE + _OFFSET, m, v * n / (n - 1)


def _run(c, tf_mod):
    """Values and gradients of several fused_batch_norm uses in one graph."""
    g = c.Graph()
    with g.as_default():
        x = c.placeholder(tf_mod.float32, [None, 4, 5, 2])
        scale = c.Variable(_SCALE)
        offset = c.Variable(_OFFSET)
        mean = c.Variable(_MEAN)
        var = c.Variable(_VAR)
        w = c.constant(_W)
        y, bm, bv = c.nn.fused_batch_norm(x, scale, offset, epsilon=1e-3)
        yi, im, iv = c.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var,
                                           is_training=False)
        ye, em, ev = c.nn.fused_batch_norm(x, scale, offset, mean=mean, variance=var,
                                           exponential_avg_factor=0.25)
        xt = c.transpose(x, [0, 3, 1, 2])
        yc, cm, cv = c.nn.fused_batch_norm(xt, scale, offset, mean=mean, variance=var,
                                           data_format="NCHW", is_training=False)
        ytiny, _, _ = c.nn.fused_batch_norm(x, scale, offset, epsilon=1e-9)
        loss = c.reduce_sum(y * w) + c.reduce_sum(yi * w * 0.5) + c.reduce_sum(bm + bv)
        grads = c.gradients(loss, [x, scale, offset, mean, var])
        connected = [gr is not None for gr in grads]
        with c.Session(graph=g) as sess:
            sess.run(c.global_variables_initializer())
            values = sess.run([y, bm, bv, yi, im, iv, ye, em, ev, yc, ytiny], {x: _X})
            grad_values = sess.run([gr for gr in grads if gr is not None], {x: _X})
        return values, grad_values, connected, [t.shape.as_list() for t in (y, bm, bv)]


def test_fused_batch_norm_against_numpy():
    with v1.Graph().as_default() as g:
        x = v1.placeholder(np.float32, [3, 4, 5, 2])
        y, m, v = v1.nn.fused_batch_norm(x, _SCALE, _OFFSET)
        with v1.Session(graph=g) as sess:
            yv, mv, vv = sess.run([y, m, v], {x: _X})
    want = _numpy_train(_X.astype(np.float64))
    np.testing.assert_allclose(yv, want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mv, want[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vv, want[2], rtol=1e-5)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_fused_batch_norm_equal_real_tensorflow(real_tf):
    import ipu_gpu as tf

    ours = _run(v1, tf)
    try:
        theirs = _run(real_tf.compat.v1, real_tf)
    except real_tf.errors.InvalidArgumentError as e:  # no NCHW kernel on some CPUs
        pytest.skip(f"TensorFlow cannot run this case on the CPU: {e.message}")
    assert ours[2] == theirs[2] == [True, True, True, False, False]
    assert ours[3] == theirs[3]
    for a, b in zip(ours[0] + ours[1], theirs[0] + theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_float16_input_keeps_its_dtype():
    x16 = _X.astype(np.float16)
    with v1.Graph().as_default() as g:
        x = v1.placeholder(np.float16, [3, 4, 5, 2])
        y, m, v = v1.nn.fused_batch_norm(x, _SCALE, _OFFSET)
        assert (y.dtype.name, m.dtype.name, v.dtype.name) == ("float16", "float32", "float32")
        with v1.Session(graph=g) as sess:
            yv = sess.run(y, {x: x16})
    want = _numpy_train(x16.astype(np.float64))[0]
    np.testing.assert_allclose(yv.astype(np.float64), want, rtol=1e-2, atol=1e-2)


def test_fused_batch_norm_errors_as_tf():
    with v1.Graph().as_default():
        x = v1.placeholder(np.float32, [3, 4, 5, 2])
        with pytest.raises(ValueError, match="Both `mean` and `variance` must be a 1D"):
            v1.nn.fused_batch_norm(x, _SCALE, _OFFSET, is_training=False)
        with pytest.raises(ValueError, match="exponential_avg_factor"):
            v1.nn.fused_batch_norm(x, _SCALE, _OFFSET, exponential_avg_factor=0.5)
        with pytest.raises(ValueError, match="'data_format' of 'FusedBatchNormV3'"):
            v1.nn.fused_batch_norm(x, _SCALE, _OFFSET, data_format="NCW")
        with pytest.raises(ValueError, match="Shape must be rank 4 but is rank 2"):
            v1.nn.fused_batch_norm(v1.placeholder(np.float32, [2, 2]), _SCALE, _OFFSET)
