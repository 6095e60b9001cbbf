"""linalg.diag, diag_part, band_part, tensor_diag(_part) and TF 1's names for them (issue 17)
against the real TensorFlow (CPU): values and gradients on fresh random inputs, TF's error
classes, the causal-mask idiom, and where TF exports them. The op table (tests/opdb_diag.py)
checks them against loop references, finite differences and graph mode."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.compat import v1
from ipu_gpu.errors import InvalidArgumentError


def _run(lib, fn, x, seed=0):
    xt = lib.constant(x)
    with lib.GradientTape() as tape:
        tape.watch(xt)
        y = fn(lib, xt)
    u = np.random.default_rng(seed).standard_normal(tuple(y.shape)).astype(x.dtype)
    return y.numpy(), tape.gradient(y, xt, output_gradients=lib.constant(u)).numpy()


def _compare(fn, x, real_tf):
    (y0, g0), (y1, g1) = _run(tf, fn, x), _run(real_tf, fn, x)
    for a, b in ((y0, y1), (g0, g1)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)  # copies and zeros: exact


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_diag_diag_part_band_part_equal_tensorflow(dtype, real_tf):
    rng = np.random.default_rng(7)
    vec = rng.standard_normal((2, 3)).astype(dtype)
    for kwargs in ({}, {"k": 1}, {"k": -2}, {"k": 2, "num_cols": 5}, {"k": -1, "num_rows": 4},
                   {"k": 1, "padding_value": 3}, {"k": (-1, 0), "num_rows": 3}):
        _compare(lambda lib, x, kw=kwargs: lib.linalg.diag(x, **kw), vec, real_tf)
    mat = rng.standard_normal((2, 3, 5)).astype(dtype)
    for k in (0, 1, 4, -1, -2):
        _compare(lambda lib, x, k=k: lib.linalg.diag_part(x, k=k), mat, real_tf)
    for k in ((-1, 1), (0, 3), (-2, -1), (2, 2)):
        for align in ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT"):
            _compare(lambda lib, x, k=k, a=align: lib.linalg.diag_part(
                x, k=k, padding_value=7, align=a), mat, real_tf)
    bands = rng.standard_normal((2, 3, 4)).astype(dtype)
    for k, kwargs in (((-1, 1), {}), ((0, 2), {"num_cols": 6}), ((-2, 0), {"num_rows": 6}),
                      ((1, 3), {"padding_value": 4})):
        for align in ("RIGHT_LEFT", "LEFT_RIGHT"):
            _compare(lambda lib, x, k=k, a=align, kw=kwargs: lib.linalg.diag(
                x, k=k, align=a, **kw), bands, real_tf)
    for lower, upper in ((-1, 0), (0, -1), (2, 1), (0, 0), (-1, -1), (3, 5)):
        _compare(lambda lib, x, lo=lower, up=upper: lib.linalg.band_part(x, lo, up), mat,
                 real_tf)
    _compare(lambda lib, x: lib.linalg.band_part(x, -1, 0), np.zeros((0, 2, 2), dtype), real_tf)


def test_tf1_tensor_diag_and_diag_part_equal_tensorflow(real_tf):
    rng = np.random.default_rng(8)
    d = rng.standard_normal((2, 3)).astype(np.float32)
    _compare(lambda lib, x: lib.compat.v1.diag(x), d, real_tf)
    _compare(lambda lib, x: lib.compat.v1.diag_part(x), rng.standard_normal(
        (2, 3, 2, 3)).astype(np.float32), real_tf)
    _compare(lambda lib, x: lib.linalg.tensor_diag(x), d, real_tf)


def test_causal_mask_idiom_equals_tensorflow(real_tf):
    ours = tf.linalg.band_part(tf.ones((4, 4)), -1, 0).numpy()
    theirs = real_tf.linalg.band_part(real_tf.ones((4, 4)), -1, 0).numpy()
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(ours, np.tril(np.ones((4, 4))))


def test_errors_are_tensorflows(real_tf):
    cases = [
        (lambda lib: lib.linalg.band_part(np.ones((3, 4)), 5, 0), InvalidArgumentError),
        (lambda lib: lib.linalg.band_part(np.ones(4), 1, 0), ValueError),
        (lambda lib: lib.linalg.diag_part(np.ones((3, 4)), k=5), InvalidArgumentError),
        (lambda lib: lib.linalg.diag_part(np.ones(3)), ValueError),
        (lambda lib: lib.linalg.diag([1, 2, 3], k=1, num_rows=2, num_cols=2),
         InvalidArgumentError),
        (lambda lib: lib.compat.v1.diag_part(np.ones((2, 3))), InvalidArgumentError),
        (lambda lib: lib.compat.v1.diag(np.float32(2)), InvalidArgumentError),
    ]
    for call, ours_exc in cases:
        with pytest.raises(ours_exc):
            call(tf)
        # TF raises InvalidArgumentError (a ValueError subclass here) for all of them
        with pytest.raises((real_tf.errors.InvalidArgumentError, ValueError)):
            call(real_tf)


def test_exported_where_tensorflow_exports_them(real_tf):
    for name in ("diag", "diag_part", "band_part", "tensor_diag", "tensor_diag_part"):
        assert hasattr(real_tf.linalg, name) and callable(getattr(tf.linalg, name))
    for name in ("diag", "diag_part", "matrix_band_part", "matrix_diag", "matrix_diag_part"):
        assert hasattr(real_tf.compat.v1, name) and callable(getattr(v1, name))
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(v1.matrix_band_part(x, 0, 1).numpy(),
                                  real_tf.compat.v1.matrix_band_part(x, 0, 1).numpy())
    np.testing.assert_array_equal(v1.matrix_diag_part(x).numpy(),
                                  real_tf.compat.v1.matrix_diag_part(x).numpy())
