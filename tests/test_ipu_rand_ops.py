"""``ipu.rand_ops.dropout``: the kept fraction and scale (against real tf.nn.dropout too), the
seed contract (same seed, same mask; seed_modifier; a fresh mask per execution without a
seed, reproducible under tf.random.set_seed), noise_shape, gradients through the mask
(eagerly and in a TF1 graph, one mask per Session.run) and Graphcore's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import ipu
from ipu_gpu.ipu import rand_ops


def _mask(y):
    return np.asarray(y) != 0


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_drops_the_rate_and_scales_the_rest(rate):
    x = np.ones(200_000, np.float32)
    y = np.asarray(rand_ops.dropout(x, rate=rate, seed=[5, 6]))
    assert y.dtype == np.float32 and y.shape == x.shape
    assert abs((y == 0).mean() - rate) < 0.005  # 5 standard deviations at most
    np.testing.assert_array_equal(np.unique(y[y != 0]), [np.float32(1 / (1 - rate))])


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_kept_values_equal_tf_nn_dropout(real_tf, dtype):
    x = (np.random.default_rng(1).standard_normal((64, 32)) + 3).astype(dtype)
    ours = np.asarray(rand_ops.dropout(x, rate=0.3, seed=[1, 2]))
    theirs = real_tf.nn.dropout(x, rate=0.3, seed=1).numpy()
    assert ours.dtype == theirs.dtype == dtype
    both = (ours != 0) & (theirs != 0)
    assert both.sum() > 500
    np.testing.assert_array_equal(ours[both], theirs[both])


def test_seed_contract():
    x = np.ones((50, 40), np.float32)
    a = _mask(rand_ops.dropout(x, seed=[3, 4]))
    np.testing.assert_array_equal(a, _mask(rand_ops.dropout(x, seed=np.array([3, 4]))))
    np.testing.assert_array_equal(a, _mask(rand_ops.dropout(x, seed=ig.constant([3, 4]))))
    assert (a != _mask(rand_ops.dropout(x, seed=[3, 5]))).any()
    assert (a != _mask(rand_ops.dropout(x, seed=[3, 4], seed_modifier=2))).any()
    np.testing.assert_array_equal(a, _mask(rand_ops.dropout(x, seed=[3, 4], ref=False)))
    assert (_mask(rand_ops.dropout(x)) != _mask(rand_ops.dropout(x))).any()


def test_unseeded_masks_follow_the_global_seed():
    x = np.ones((30, 30), np.float32)
    ig.random.set_seed(42)
    first = [_mask(rand_ops.dropout(x)) for _ in range(2)]
    ig.random.set_seed(42)
    again = [_mask(rand_ops.dropout(x)) for _ in range(2)]
    np.testing.assert_array_equal(first, again)
    assert (first[0] != first[1]).any()


def test_noise_shape_broadcasts_the_mask():
    x = np.ones((20, 30), np.float32)
    y = np.asarray(rand_ops.dropout(x, rate=0.5, noise_shape=[1, 30], seed=[7, 8]))
    assert (y == y[0]).all() and 0 < (y[0] == 0).sum() < 30
    y = np.asarray(rand_ops.dropout(x, rate=0.5, noise_shape=(20, 1), seed=[7, 8]))
    assert (y == y[:, :1]).all()


def test_rate_zero_copies():
    x = np.random.default_rng(2).standard_normal((4, 5)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(rand_ops.dropout(x, rate=0.0, seed=[1, 1])), x)


def test_eager_gradient_is_the_mask_times_the_scale():
    x = ig.Variable(np.random.default_rng(3).standard_normal((40, 10)).astype(np.float32))
    u = np.random.default_rng(4).standard_normal((40, 10)).astype(np.float32)
    with ig.GradientTape() as tape:
        y = rand_ops.dropout(x, rate=0.25, seed=[9, 9], noise_shape=[40, 1])
        loss = ig.reduce_sum(y * u)
    keep = (np.asarray(y) != 0).astype(np.float32)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, x)),
                               u * keep * np.float32(1 / 0.75), rtol=1e-6)


def test_tf1_graph_one_mask_per_run_shared_by_the_gradient():
    x = np.ones((8, 16), np.float32)
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32, [8, 16])
        seed = v1.placeholder(np.int32, [2])
        y = ipu.rand_ops.dropout(p, rate=0.5)
        (g,) = v1.gradients(ig.reduce_sum(y), [p])
        seeded = ipu.ops.rand_ops.dropout(p, rate=0.5, seed=seed)
        with v1.Session() as sess:
            y1, g1 = sess.run([y, g], {p: x})
            y2 = sess.run(y, {p: x})
            s1 = sess.run(seeded, {p: x, seed: [1, 2]})
            s2 = sess.run(seeded, {p: x, seed: [1, 2]})
    np.testing.assert_array_equal(g1, y1)  # d(sum y)/dx = mask * 2 = y for x = 1
    assert (y1 != y2).any()
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(s1, np.asarray(rand_ops.dropout(x, rate=0.5, seed=[1, 2])))


@pytest.mark.parametrize("kwargs, match", [
    (dict(rate=1.0), r"The rate must be in the range \[0, 1\), but was 1.0"),
    (dict(rate=-0.1), r"The rate must be in the range \[0, 1\), but was -0.1"),
    (dict(noise_shape=[4]), "The length of noise_shape must equal the rank of x."),
    (dict(noise_shape=[4, 3]), "Dimension mismatch, 5 != 3."),
    (dict(noise_shape=[None, 5]), "Dimension mismatch, 4 != None."),
    (dict(seed=[1, 2, 3]), r"Expected the seed to have a shape \[2\], but got \(3,\)."),
    (dict(seed=[[1, 2]]), r"Expected the seed to have a shape \[2\], but got \(1, 2\)."),
])
def test_graphcore_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rand_ops.dropout(np.ones((4, 5), np.float32), **kwargs)


def test_integer_input_is_a_type_error():
    with pytest.raises(TypeError, match="floating-point"):
        rand_ops.dropout(np.ones((4, 5), np.int32), seed=[1, 2])
