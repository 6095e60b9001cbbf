"""kernels/matmul_cpu's tiled GEMM gives bits that depend only on the shapes: the same under
any OpenBLAS and Numba thread count, equal bit for bit to a tile-wise numpy reference (each
tile of ``matmul_cpu.tiles`` one numpy GEMM on one BLAS thread), and close to a float64
product. (Not yet under tf.matmul: see the kernel's docstring.)"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ipu_gpu.kernels import matmul_cpu
from ipu_gpu.kernels._blas import single_threaded_blas

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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bits_do_not_depend_on_the_blas_or_numba_thread_count(dtype):
    """The MLP bench's GEMMs (forward and both gradients' transposed operands), where numpy's
    threaded GEMM gives other bits on 1, 2 and 3 OpenBLAS threads with its Haswell/Zen
    kernels."""
    a, b = _operands(((), 256, 784, 512), dtype, 7)
    u = np.random.default_rng(6).standard_normal((256, 512)).astype(dtype)
    pairs = [(a, b), (u, b.T), (a.T, u)]
    runs = {}
    before = numba.get_num_threads()
    try:
        for numba_threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(numba_threads)
            for blas in (1, 2, 3):
                with threadpool_limits(blas, "blas"):
                    runs[numba_threads, blas] = [matmul_cpu.matmul(x, y).tobytes()
                                                 for x, y in pairs]
    finally:
        numba.set_num_threads(before)
    assert len({tuple(r) for r in runs.values()}) == 1
    want = [_tilewise(np.ascontiguousarray(x), np.ascontiguousarray(y)) for x, y in pairs]
    assert runs[1, 1] == [w.tobytes() for w in want]
