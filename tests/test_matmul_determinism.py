"""ipu_gpu's CPU GEMM (kernels/matmul_cpu, under ``tf.matmul``, ``dense_bias`` and the
serialized matmul's whole-product paths) gives bits that depend only on the shapes: the
same under any OpenBLAS and Numba thread count, equal bit for bit to a tile-wise numpy
reference (each tile of ``matmul_cpu.tiles`` one numpy GEMM on one BLAS thread), and close to
a float64 product."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import ipu_gpu as tf
from ipu_gpu.kernels import matmul_cpu
from ipu_gpu.kernels._blas import single_threaded_blas
from ipu_gpu.ops import matmul as matmul_op

SHAPES = [  # (batch, m, k, n): the MLP bench's GEMMs, 2-D tiles, batches, below the threshold
    ((), 256, 784, 512), ((), 784, 256, 512), ((), 256, 512, 784), ((), 256, 512, 10),
    ((), 1000, 300, 700), ((3,), 400, 300, 700), ((2, 5), 40, 50, 60), ((), 64, 64, 64),
]


def _tilewise(x, y):
    """x @ y tile by tile, each tile a numpy GEMM on one BLAS thread, for one batch matrix
    at a time (x, y broadcast first)."""
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    xb = np.broadcast_to(x, batch + (m, k))
    yb = np.broadcast_to(y, batch + (k, n))
    out = np.empty(batch + (m, n), x.dtype)
    rows, cols = matmul_cpu.tiles(m, k, n)
    with single_threaded_blas():
        for idx in np.ndindex(*batch):
            for r0, r1 in zip(rows, rows[1:]):
                for c0, c1 in zip(cols, cols[1:]):
                    out[idx][r0:r1, c0:c1] = np.matmul(xb[idx][r0:r1], yb[idx][:, c0:c1])
    return out


def _operands(shape, dtype, seed, transpose_a=False, transpose_b=False):
    batch, m, k, n = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + ((k, m) if transpose_a else (m, k))).astype(dtype)
    b = rng.standard_normal(batch + ((n, k) if transpose_b else (k, n))).astype(dtype)
    return a, b


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_tiled_product_is_the_tilewise_numpy_reference_bit_for_bit(shape, dtype):
    a, b = _operands(shape, dtype, 1)
    got = matmul_cpu.matmul(a, b)
    assert got.dtype == dtype and got.shape == np.matmul(a, b).shape
    np.testing.assert_array_equal(got, _tilewise(a, b))
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(shape[2]))


@pytest.mark.parametrize("transpose_a,transpose_b", [(True, False), (False, True), (True, True)])
def test_transposed_views_as_the_tape_passes_them(transpose_a, transpose_b):
    a, b = _operands(((), 256, 512, 784), np.float32, 2, transpose_a, transpose_b)
    x = a.swapaxes(-1, -2) if transpose_a else a
    y = b.swapaxes(-1, -2) if transpose_b else b
    got = matmul_cpu.matmul(x, y)
    np.testing.assert_array_equal(got, _tilewise(np.ascontiguousarray(x), np.ascontiguousarray(y)))
    with threadpool_limits(3, "blas"):
        np.testing.assert_array_equal(matmul_cpu.matmul(x, y), got)


def test_broadcast_batch_and_out():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 1, 96, 200)).astype(np.float32)
    b = rng.standard_normal((3, 200, 300)).astype(np.float32)
    want = _tilewise(a, b)
    out = np.full((4, 3, 96, 300), np.nan, np.float32)
    assert matmul_cpu.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(matmul_cpu.matmul(a, b), want)


def test_tiles_cover_the_output_and_depend_on_the_shape_only():
    for m, k, n in [(256, 784, 512), (784, 256, 512), (2048, 2048, 2048), (7, 100000, 9),
                    (100000, 64, 3), (30, 30, 30)]:
        rows, cols = matmul_cpu.tiles(m, k, n)
        assert rows[0] == 0 and rows[-1] == m and cols[0] == 0 and cols[-1] == n
        assert all(r1 > r0 for r0, r1 in zip(rows, rows[1:]))
        assert all(c1 > c0 for c0, c1 in zip(cols, cols[1:]))
        assert all(r % matmul_cpu.ROW_MULTIPLE == 0 for r in rows[1:-1])
        assert all(c % matmul_cpu.COL_MULTIPLE == 0 for c in cols[1:-1])
        count = (len(rows) - 1) * (len(cols) - 1)
        assert count <= matmul_cpu.MAX_TILES
        if m * k * n >= matmul_cpu.SPLIT_MIN_MNK and m >= 48:
            assert count >= 2
    # the MLP bench's GEMMs: two threads evenly loaded (an even count of equal tiles)
    rows, cols = matmul_cpu.tiles(256, 784, 512)
    sizes = {(r1 - r0) * (c1 - c0) for r0, r1 in zip(rows, rows[1:])
             for c0, c1 in zip(cols, cols[1:])}
    assert len(sizes) == 1 and ((len(rows) - 1) * (len(cols) - 1)) % 2 == 0


@pytest.mark.parametrize("dtype", [np.float16, np.int32, np.int64])
def test_other_dtypes_and_small_products_are_numpys(dtype):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((300, 200)) * 4).astype(dtype)
    b = (rng.standard_normal((200, 100)) * 4).astype(dtype)
    assert not matmul_cpu.deterministic(a, b)
    np.testing.assert_array_equal(matmul_cpu.matmul(a, b), np.matmul(a, b))
    small = a[:32, :32].astype(np.float32), b[:32, :32].astype(np.float32)
    assert not matmul_cpu.deterministic(*small)
    np.testing.assert_array_equal(matmul_cpu.matmul(*small), np.matmul(*small))


def test_mismatched_out_raises_as_numpy():
    a, b = _operands(((), 256, 784, 512), np.float32, 5)
    with pytest.raises(ValueError):
        matmul_cpu.matmul(a, b, out=np.empty((256, 511), np.float32))


def _tf_matmul_and_grads(a, b):
    ta, tb = tf.constant(a), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([ta, tb])
        y = tf.matmul(ta, tb)
    u = np.random.default_rng(6).standard_normal(y.shape).astype(a.dtype)
    ga, gb = tape.gradient(y, [ta, tb], output_gradients=u)
    return [np.asarray(v.numpy()).tobytes() for v in (y, ga, gb)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tf_matmul_bits_do_not_depend_on_the_blas_or_numba_thread_count(dtype):
    a, b = _operands(((), 256, 784, 512), dtype, 7)
    runs = {}
    before = numba.get_num_threads()
    try:
        for numba_threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(numba_threads)
            for blas in (1, 2, 3):
                with threadpool_limits(blas, "blas"):
                    runs[numba_threads, blas] = _tf_matmul_and_grads(a, b)
    finally:
        numba.set_num_threads(before)
    assert len({tuple(r) for r in runs.values()}) == 1
    # and they are the tile-wise reference's: the forward product and both gradients
    u = np.random.default_rng(6).standard_normal((256, 512)).astype(dtype)
    want = [_tilewise(a, b), _tilewise(u, np.ascontiguousarray(b.T)),
            _tilewise(np.ascontiguousarray(a.T), u)]
    for got, ref in zip(runs[1, 1], want):
        assert got == ref.tobytes()


def test_dense_bias_uses_the_deterministic_gemm():
    """Keras's Dense runs as ``dense_bias``: its product and kernel gradient are the tiled
    GEMM's, under any OpenBLAS thread count."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((256, 784)).astype(np.float32)
    w = rng.standard_normal((784, 512)).astype(np.float32)
    bias = rng.standard_normal(512).astype(np.float32)
    u = rng.standard_normal((256, 512)).astype(np.float32)
    got = {}
    for blas in (1, 2, 3):
        tw = tf.constant(w)
        with threadpool_limits(blas, "blas"):
            with tf.GradientTape() as tape:
                tape.watch(tw)
                y = matmul_op.dense_bias(tf.constant(x), tw, tf.constant(bias), relu=True)
            dw = tape.gradient(y, tw, output_gradients=u)
        got[blas] = (y.numpy(), dw.numpy())
    y_want = np.maximum(_tilewise(x, w) + bias, 0)
    dw_want = _tilewise(np.ascontiguousarray(x.T), u * (y_want > 0))
    for y, dw in got.values():
        np.testing.assert_array_equal(y, y_want)
        np.testing.assert_array_equal(dw, dw_want)


def test_conv3d_bits_do_not_depend_on_the_blas_thread_count():
    """conv3d's per-tap GEMMs (forward and both gradients) are ipu_gpu's GEMM's too."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 12, 12, 12, 32)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 32, 48)).astype(np.float32)
    runs = set()
    for blas in (1, 2, 3):
        tx, tw = tf.constant(x), tf.constant(w)
        with threadpool_limits(blas, "blas"):
            with tf.GradientTape() as tape:
                tape.watch([tx, tw])
                y = tf.nn.conv3d(tx, tw, [1, 1, 1, 1, 1], "SAME")
            gx, gw = tape.gradient(y, [tx, tw], output_gradients=np.ones(y.shape, np.float32))
        runs.add(tuple(v.numpy().tobytes() for v in (y, gx, gw)))
    assert len(runs) == 1
