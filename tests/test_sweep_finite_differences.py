"""Finite-difference gradient checks of the differentiable functions the portability sweep
added (relu6, ipu.nn_ops.gelu/swish, unsorted_segment_mean, add_n), in float64."""

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.ipu import nn_ops


def _fd_check(fn, x0, eps=1e-6):
    """The tape's gradient of sum(fn(x) * w) against central differences."""
    rng = np.random.default_rng(5)
    out_shape = np.asarray(fn(ig.constant(x0)).numpy()).shape
    w = rng.normal(size=out_shape)
    x = ig.Variable(x0)
    with ig.GradientTape() as tape:
        loss = ig.reduce_sum(fn(x) * ig.constant(w))
    got = tape.gradient(loss, x).numpy()
    want = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        hi, lo = x0.copy(), x0.copy()
        hi[i] += eps
        lo[i] -= eps
        want[i] = (np.sum(np.asarray(fn(ig.constant(hi)).numpy()) * w)
                   - np.sum(np.asarray(fn(ig.constant(lo)).numpy()) * w)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def _away_from(points, x):
    """x moved off the functions' kinks (relu6 at 0 and 6) by at least 0.05."""
    for p in points:
        x = np.where(np.abs(x - p) < 0.05, x + 0.1, x)
    return x


X = _away_from([0.0, 6.0], np.random.default_rng(0).uniform(-3, 9, size=(3, 4)))


@pytest.mark.parametrize("fn", [
    ig.nn.relu6,
    lambda x: nn_ops.gelu(x),
    lambda x: nn_ops.gelu(x, approximate=False),
    lambda x: nn_ops.swish(x),
], ids=["relu6", "gelu_tanh", "gelu_erf", "swish"])
def test_activation_gradient_matches_finite_differences(fn):
    _fd_check(fn, X.copy())


def test_unsorted_segment_mean_gradient_matches_finite_differences():
    ids = ig.constant(np.array([0, 2, 0, 1, 2, 2], np.int32))
    data = np.random.default_rng(1).normal(size=(6, 3))
    _fd_check(lambda x: ig.math.unsorted_segment_mean(x, ids, 4), data)


def test_add_n_gradient_matches_finite_differences():
    b = ig.constant(np.random.default_rng(2).normal(size=(2, 3)))
    _fd_check(lambda x: ig.add_n([x, b, x * x]), np.random.default_rng(3).normal(size=(2, 3)))
