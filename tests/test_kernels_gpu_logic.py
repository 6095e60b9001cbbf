"""The GPU kernel twins' logic, checked on a CPU-only machine: cupy is stood in by numpy
(cupyx.scatter_add by np.add.at), and each GPU function must agree with its CPU twin.
This catches indexing and formula mistakes; the real CuPy run is the `gpu`-marked tests."""

import numpy as np
import pytest
from cuda_emulator import compiler_available, install_fake_cupy


@pytest.fixture
def gpu_kernels(monkeypatch):
    # embedding_gpu first: indexing_gpu's scatter-add runs its kernels (cuda/embedding.cu)
    return install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.softmax_gpu",
                                           "ipu_gpu.kernels.embedding_gpu",
                                           "ipu_gpu.kernels.indexing_gpu"])


needs_gxx = pytest.mark.skipif(not compiler_available(), reason="needs g++ for the emulator")


def _xent_case(rng, n=9, c=6):
    x = (rng.normal(size=(n, c)) * 3).astype(np.float32)
    ids = rng.integers(0, c, n).astype(np.int32)
    z = np.abs(rng.normal(size=(n, c))).astype(np.float32)
    return x, ids, z / z.sum(1, keepdims=True)


def test_softmax_xent_twins_agree(gpu_kernels):
    from ipu_gpu.kernels import softmax_cpu

    x, ids, z = _xent_case(np.random.default_rng(0))
    for fn, labels in (("sparse_softmax_xent_fwd", ids), ("softmax_xent_fwd", z)):
        got = getattr(gpu_kernels.softmax_gpu, fn)(x, labels, np.empty(len(x), np.float32),
                                                    np.empty_like(x))
        want = getattr(softmax_cpu, fn)(x, labels, np.empty(len(x), np.float32),
                                        np.empty_like(x))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_sparse_xent_gpu_gives_nan_rows_for_bad_ids(gpu_kernels):
    x, ids, _ = _xent_case(np.random.default_rng(1))
    ids[3] = 99
    loss, d = gpu_kernels.softmax_gpu.sparse_softmax_xent_fwd(
        x, ids, np.empty(len(x), np.float32), np.empty_like(x))
    assert np.isnan(loss[3]) and np.isnan(d[3]).all()
    assert np.isfinite(np.delete(loss, 3)).all()


@needs_gxx
def test_indexing_twins_agree(gpu_kernels):
    from ipu_gpu.kernels import indexing_cpu

    rng = np.random.default_rng(2)
    params = rng.normal(size=(8, 3)).astype(np.float32)
    ids = rng.integers(0, 8, 20).astype(np.int32)
    np.testing.assert_array_equal(
        gpu_kernels.indexing_gpu.gather_rows(params, ids, np.empty((20, 3), np.float32)),
        indexing_cpu.gather_rows(params, ids, np.empty((20, 3), np.float32)))
    out_of_range = gpu_kernels.indexing_gpu.gather_rows(params, np.array([1, 8, -1], np.int32),
                                                        np.empty((3, 3), np.float32))
    np.testing.assert_array_equal(out_of_range[1:], 0)
    assert not np.signbit(out_of_range[1:]).any()
    grad = rng.normal(size=(20, 3)).astype(np.float32)
    np.testing.assert_allclose(
        gpu_kernels.indexing_gpu.scatter_add_rows(grad, ids, np.zeros((8, 3), np.float32)),
        indexing_cpu.scatter_add_rows(grad, ids, np.zeros((8, 3), np.float32)), rtol=1e-6)


@needs_gxx
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("id_dtype", [np.int32, np.int64])
def test_scatter_add_rows_gpu_drops_out_of_range_ids(gpu_kernels, dtype, id_dtype):
    # the adjoint of the GPU gather's zero rows; the emulator's np.add.at would raise on them,
    # and cupyx.scatter_add would wrap them into range
    from ipu_gpu.kernels import indexing_cpu

    rng = np.random.default_rng(5)
    grad = rng.normal(size=(9, 3)).astype(dtype)
    bad = [4, -1, -5, 1000] + ([2**32 + 1, -(2**32) + 2] if id_dtype == np.int64 else [])
    ids = np.array([0, 3, 1, 3, 2, 0, 1, 3, 2], id_dtype)
    keep = ids.copy()
    for pos, b in zip((1, 4, 6, 8, 2, 5), bad):
        ids[pos] = b
    got = gpu_kernels.indexing_gpu.scatter_add_rows(grad, ids, np.zeros((4, 3), dtype))
    valid = (ids >= 0) & (ids < 4)
    want = indexing_cpu.scatter_add_rows(grad[valid], keep[valid], np.zeros((4, 3), dtype))
    np.testing.assert_array_equal(got, want)  # the same order of additions: the same bits


def test_scatter_add_rows_gpu_rejects_mismatched_shapes(gpu_kernels):
    k = gpu_kernels.indexing_gpu
    for grad_shape, n_ids in (((6, 3), 7), ((6, 4), 6), ((6, 2), 6)):
        with pytest.raises(ValueError, match="scatter_add_rows: grad must have shape"):
            k.scatter_add_rows(np.ones(grad_shape, np.float32), np.zeros(n_ids, np.int32),
                               np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        k.scatter_add_rows(np.ones((2, 3), np.float32), np.zeros(2, np.int32),
                           np.zeros((3, 4), np.float32).T)
