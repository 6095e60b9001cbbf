"""embedding_lookup (ipu.embedding_ops) and segment_sum (ipu.math_ops): the float64
reference, numpy/torch/TensorFlow peers, gradients (finite differences, the one-hot
transpose), determinism of the kernels, the GPU twin through the CUDA emulator, errors and
edge cases. The generic op-table checks are in tests/opdb_embedding.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ipu_gpu
from cuda_emulator import compiler_available, install_fake_cupy
from ipu_gpu.ipu import embedding_ops, math_ops
from ipu_gpu.kernels import embedding_cpu
from reference import embedding as ref

lookup = embedding_ops.embedding_lookup
segment_sum = math_ops.segment_sum


@pytest.fixture(autouse=True)
def _no_debug_mode(monkeypatch):
    """Out-of-range ids give zero rows unless a test turns IPU_GPU_DEBUG on itself."""
    monkeypatch.delenv("IPU_GPU_DEBUG", raising=False)


def _grad(fn, x, *args, cotangent=None, **kwargs):
    """(output, d<cotangent, fn(x)>/dx) as numpy arrays."""
    xt = ipu_gpu.constant(x)
    with ipu_gpu.GradientTape() as tape:
        tape.watch(xt)
        y = fn(xt, *args, **kwargs)
    g = tape.gradient(y, xt, output_gradients=cotangent)
    return y.numpy(), None if g is None else g.numpy()


def _table(rng, v, d, dtype=np.float32):
    return rng.standard_normal((v, d)).astype(dtype)


# ---- forward -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
@pytest.mark.parametrize("factor", [1, 2, 5])
def test_lookup_matches_reference_exactly(dtype, factor):
    rng = np.random.default_rng(factor)
    params = (rng.standard_normal((40, 3, 2)) * 100).astype(dtype)
    ids = rng.integers(0, 40, (7, 5)).astype(np.int32)
    out = lookup(params, ids, serialization_factor=factor)
    assert out.shape == (7, 5, 3, 2) and out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), ref.embedding_lookup(params, ids).astype(dtype))


def test_lookup_matches_numpy_take():
    rng = np.random.default_rng(1)
    params, ids = _table(rng, 100, 16), rng.integers(0, 100, 300).astype(np.int32)
    np.testing.assert_array_equal(lookup(params, ids).numpy(), np.take(params, ids, axis=0))


def test_lookup_matches_torch_index_select_and_embedding():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    params, ids = _table(rng, 50, 8), rng.integers(0, 50, (4, 6)).astype(np.int32)
    want = torch.index_select(torch.from_numpy(params), 0, torch.from_numpy(ids.reshape(-1)))
    np.testing.assert_array_equal(lookup(params, ids).numpy().reshape(-1, 8), want.numpy())
    g = rng.standard_normal((4, 6, 8)).astype(np.float32)
    tp = torch.from_numpy(params.copy()).requires_grad_(True)
    torch.nn.functional.embedding(torch.from_numpy(ids).long(), tp).backward(torch.from_numpy(g))
    _, grad = _grad(lookup, params, ids, cotangent=g)
    np.testing.assert_allclose(grad, tp.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_lookup_matches_tensorflow(real_tf):
    tf = real_tf
    rng = np.random.default_rng(3)
    params, ids = _table(rng, 30, 5), rng.integers(0, 30, (3, 7)).astype(np.int32)
    g = rng.standard_normal((3, 7, 5)).astype(np.float32)
    pt = tf.constant(params)
    with tf.GradientTape() as tape:
        tape.watch(pt)
        want = tf.nn.embedding_lookup(pt, tf.constant(ids))
    want_grad = tf.convert_to_tensor(tape.gradient(want, pt, output_gradients=tf.constant(g)))
    out, grad = _grad(lookup, params, ids, cotangent=g, serialization_factor=3)
    np.testing.assert_array_equal(out, want.numpy())
    np.testing.assert_allclose(grad, want_grad.numpy(), rtol=1e-6, atol=1e-6)


# ---- out-of-range ids ------------------------------------------------------------------------
BAD_IDS = np.asarray([3, -1, 10, 0, 2**31 - 1, -(2**31)], np.int32)


@pytest.mark.parametrize("factor", [1, 2, 10])
def test_out_of_range_ids_give_zero_rows_and_no_gradient(factor):
    params = np.arange(1, 31, dtype=np.float32).reshape(10, 3)
    g = np.ones((6, 3), np.float32)
    out, grad = _grad(lookup, params, BAD_IDS, cotangent=g, serialization_factor=factor)
    np.testing.assert_array_equal(out, ref.embedding_lookup(params, BAD_IDS))
    np.testing.assert_array_equal(out[[1, 2, 4, 5]], 0)
    assert not np.signbit(out).any()
    np.testing.assert_array_equal(grad, ref.embedding_lookup_grad(params.shape, BAD_IDS, g))
    assert grad.sum() == 6.0  # only ids 3 and 0 contribute


def test_debug_mode_raises_for_out_of_range_ids_with_factor_1(monkeypatch):
    monkeypatch.setenv("IPU_GPU_DEBUG", "1")
    params = np.zeros((10, 3), np.float32)
    with pytest.raises(ValueError, match=r"^embedding_lookup: ids must be in \[0, 10\) .*got -1 "
                                         r"at position 1$"):
        lookup(params, BAD_IDS)
    # serialized lookups define those rows (zeros), so debug mode leaves them alone
    np.testing.assert_array_equal(lookup(params, BAD_IDS, serialization_factor=2).numpy(), 0)
    np.testing.assert_array_equal(lookup(params, BAD_IDS[[0, 3]]).numpy(), 0)


def test_serialized_lookup_rows_are_exact_copies_even_with_non_finite_values():
    # documented difference: the IPU's masked chunks (row * 0) would spread NaN from a chunk's
    # first row into other chunks' rows; ours copy rows exactly for every factor
    params = np.arange(8, dtype=np.float32).reshape(4, 2)
    params[0, 0] = np.inf
    params[2, 1] = np.nan
    out = lookup(params, np.asarray([1, 3, 0, 2, 4], np.int32), serialization_factor=2).numpy()
    np.testing.assert_array_equal(out, np.concatenate([params[[1, 3, 0, 2]], np.zeros((1, 2))]))


# ---- gradients ---------------------------------------------------------------------------------
def test_gradient_accumulates_duplicates():
    params = np.zeros((4, 2), np.float32)
    ids = np.asarray([[1, 1], [3, 1]], np.int32)
    g = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    _, grad = _grad(lookup, params, ids, cotangent=g)
    np.testing.assert_array_equal(grad, [[0, 0], [0 + 2 + 6, 1 + 3 + 7], [0, 0], [4, 5]])
    want = np.zeros((4, 2), np.float32)
    np.add.at(want, ids.reshape(-1), g.reshape(-1, 2))
    np.testing.assert_array_equal(grad, want)


def test_gradient_matches_torch_index_add():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    params, ids = _table(rng, 64, 33), rng.integers(0, 64, 500).astype(np.int32)
    g = rng.standard_normal((500, 33)).astype(np.float32)
    want = torch.zeros(64, 33).index_add_(0, torch.from_numpy(ids).long(), torch.from_numpy(g))
    _, grad = _grad(lookup, params, ids, cotangent=g)
    np.testing.assert_allclose(grad, want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("factor", [1, 4])
def test_gradient_finite_differences(factor):
    rng = np.random.default_rng(5)
    params = rng.standard_normal((8, 2, 3))
    ids = np.asarray([[7, 0, 0], [3, 9, 7]], np.int32)  # duplicates and an out-of-range id
    u = rng.standard_normal((2, 3, 2, 3))
    v = rng.standard_normal(params.shape)
    eps = 1e-6

    def f(p):
        return lookup(p, ids, serialization_factor=factor).numpy()

    numeric = np.vdot(u, (f(params + eps * v) - f(params - eps * v)) / (2 * eps))
    _, grad = _grad(lookup, params, ids, cotangent=u, serialization_factor=factor)
    assert grad.dtype == np.float64
    assert np.vdot(grad, v) == pytest.approx(numeric, rel=1e-7)


@given(v=st.integers(1, 12), d=st.integers(0, 5), n=st.integers(0, 20),
       seed=st.integers(0, 2**31 - 1))
def test_gradient_is_the_transpose_of_a_one_hot_matmul(v, d, n, seed):
    rng = np.random.default_rng(seed)
    params = rng.standard_normal((v, d))
    ids = rng.integers(-2, v + 2, n).astype(np.int32)
    g = rng.standard_normal((n, d))
    out, grad = _grad(lookup, params, ids, cotangent=g)
    hot = ref.one_hot_matrix(ids, v)
    np.testing.assert_allclose(out, hot @ params, rtol=0, atol=0)
    np.testing.assert_allclose(grad, hot.T @ g, rtol=1e-12, atol=1e-12)


@given(v_per=st.integers(1, 6), factor=st.integers(1, 6), n=st.integers(0, 15),
       seed=st.integers(0, 2**31 - 1))
def test_serialized_and_unserialized_lookups_agree_on_in_range_ids(v_per, factor, n, seed):
    rng = np.random.default_rng(seed)
    v = v_per * factor
    params = rng.standard_normal((v, 3)).astype(np.float32)
    ids = rng.integers(0, v, n).astype(np.int32)
    g = rng.standard_normal((n, 3)).astype(np.float32)
    a, ga = _grad(lookup, params, ids, cotangent=g)
    b, gb = _grad(lookup, params, ids, cotangent=g, serialization_factor=factor)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ga, gb)
    np.testing.assert_array_equal(a, ref.embedding_lookup(params, ids, serialization_factor=factor))


def test_float16_gradient_adds_in_float16_in_index_order():
    rng = np.random.default_rng(6)
    params = np.zeros((5, 4), np.float16)
    ids = rng.integers(0, 5, 200).astype(np.int32)
    g = (rng.standard_normal((200, 4)) * 50).astype(np.float16)
    _, grad = _grad(lookup, params, ids, cotangent=g)
    want = np.zeros((5, 4), np.float16)
    for i, r in enumerate(ids):  # numpy float16 addition: float32 sum rounded to float16
        want[r] = want[r] + g[i]
    assert grad.dtype == np.float16
    np.testing.assert_array_equal(grad, want)
    np.testing.assert_allclose(grad, ref.embedding_lookup_grad((5, 4), ids, g), rtol=2e-2,
                               atol=0.5)


def test_int32_params_have_no_gradient():
    params = ipu_gpu.constant(np.arange(6, dtype=np.int32).reshape(3, 2))
    with ipu_gpu.GradientTape() as tape:
        tape.watch(params)
        out = lookup(params, np.asarray([2, 0], np.int32))
    np.testing.assert_array_equal(out.numpy(), [[4, 5], [0, 1]])
    assert tape.gradient(out, params) is None


def test_second_derivative_raises():
    p = ipu_gpu.constant(np.ones((3, 2)))
    with ipu_gpu.GradientTape() as outer:
        outer.watch(p)
        with ipu_gpu.GradientTape() as inner:
            inner.watch(p)
            y = ipu_gpu.reduce_sum(lookup(p, np.asarray([0, 0], np.int32)) * p[0])
        with pytest.raises(LookupError, match="^embedding_lookup: its gradient is not "
                                              "differentiable"):
            inner.gradient(y, p)


# ---- edge cases --------------------------------------------------------------------------------
def test_empty_ids_and_empty_rows():
    p = np.ones((4, 3), np.float32)
    out, grad = _grad(lookup, p, np.zeros((2, 0), np.int32))
    assert out.shape == (2, 0, 3)
    np.testing.assert_array_equal(grad, np.zeros((4, 3)))
    out, grad = _grad(lookup, np.ones((4, 0), np.float32), np.asarray([1, 3], np.int32))
    assert out.shape == (2, 0) and grad.shape == (4, 0)
    out = lookup(np.ones((0, 3), np.float32), np.asarray([0], np.int32))  # nothing in range
    np.testing.assert_array_equal(out.numpy(), np.zeros((1, 3)))


def test_scalar_id_and_python_list_ids():
    p = np.arange(6, dtype=np.float32).reshape(3, 2)
    np.testing.assert_array_equal(lookup(p, np.int32(2)).numpy(), [4, 5])
    np.testing.assert_array_equal(lookup(p, [[2], [0]]).numpy(), [[[4, 5]], [[0, 1]]])


def test_variable_params_get_the_gradient():
    w = ipu_gpu.Variable(np.ones((5, 2), np.float32))
    with ipu_gpu.GradientTape() as tape:
        loss = ipu_gpu.reduce_sum(lookup(w, np.asarray([4, 4, 1], np.int32)))
    np.testing.assert_array_equal(tape.gradient(loss, w).numpy(),
                                  [[0, 0], [1, 1], [0, 0], [0, 0], [2, 2]])


def test_facade_paths():
    from ipu_gpu.ops import embedding

    assert embedding_ops.embedding_lookup is embedding.embedding_lookup
    assert math_ops.segment_sum is embedding.segment_sum


# ---- segment_sum ---------------------------------------------------------------------------------
def test_segment_sum_graphcore_example():
    c = np.asarray([[1, 2, 3, 4], [4, 3, 2, 1], [5, 6, 7, 8]], np.float32)
    out = segment_sum(c, np.asarray([0, 0, 1], np.int32), 2)
    assert out.dtype == np.float32 and out.shape == (2, 4)
    np.testing.assert_array_equal(out.numpy(), [[5, 5, 5, 5], [5, 6, 7, 8]])


def test_segment_sum_matches_tensorflow(real_tf):
    tf = real_tf
    rng = np.random.default_rng(7)
    data = rng.standard_normal((12, 3, 2)).astype(np.float32)
    ids = np.sort(rng.integers(0, 5, 12)).astype(np.int32)
    np.testing.assert_allclose(segment_sum(data, ids, 6).numpy(),
                               tf.math.unsorted_segment_sum(data, ids, 6).numpy(), rtol=1e-6)
    np.testing.assert_allclose(segment_sum(data, ids, int(ids.max()) + 1).numpy(),
                               tf.math.segment_sum(data, ids).numpy(), rtol=1e-6)
    shuffled = rng.permutation(12)  # unsorted ids: summed as unsorted_segment_sum does
    np.testing.assert_allclose(segment_sum(data[shuffled], ids[shuffled], 6).numpy(),
                               tf.math.unsorted_segment_sum(data[shuffled], ids[shuffled],
                                                            6).numpy(), rtol=1e-5, atol=1e-6)


def test_segment_sum_matches_np_add_at_and_torch():
    rng = np.random.default_rng(8)
    data = rng.standard_normal((300, 7)).astype(np.float32)
    ids = rng.integers(0, 40, 300).astype(np.int32)
    want = np.zeros((40, 7), np.float32)
    np.add.at(want, ids, data)
    np.testing.assert_array_equal(segment_sum(data, ids, 40).numpy(), want)  # same order
    torch = pytest.importorskip("torch")
    t = torch.zeros(40, 7).index_add_(0, torch.from_numpy(ids).long(), torch.from_numpy(data))
    np.testing.assert_allclose(segment_sum(data, ids, 40).numpy(), t.numpy(), rtol=1e-5,
                               atol=1e-5)


def test_segment_sum_gradient_is_a_gather():
    rng = np.random.default_rng(9)
    data = rng.standard_normal((6, 2)).astype(np.float32)
    ids = np.asarray([0, 0, 2, 5, -1, 1], np.int32)  # 5 and -1 are dropped (num_segments 3)
    g = rng.standard_normal((3, 2)).astype(np.float32)
    out, grad = _grad(segment_sum, data, ids, 3, cotangent=g)
    np.testing.assert_allclose(out, ref.segment_sum(data, ids, 3), rtol=1e-6)
    np.testing.assert_array_equal(grad, ref.segment_sum_grad(ids, 3, g).astype(np.float32))
    np.testing.assert_array_equal(grad[[3, 4]], 0)


def test_segment_sum_finite_differences_in_float32():
    # float32 only (as Graphcore's): a linear op, so central differences with a power-of-two
    # step are exact up to float32 rounding of the sums
    rng = np.random.default_rng(10)
    data = rng.standard_normal((7, 3)).astype(np.float32)
    ids = np.asarray([0, 1, 1, 3, 3, 3, 4], np.int32)
    u = rng.standard_normal((5, 3))
    v = rng.standard_normal(data.shape).astype(np.float32)
    eps = np.float32(2.0**-4)

    def f(x):
        return segment_sum(x, ids, 5).numpy().astype(np.float64)

    numeric = np.vdot(u, (f(data + eps * v) - f(data - eps * v)) / (2 * float(eps)))
    _, grad = _grad(segment_sum, data, ids, 5, cotangent=u.astype(np.float32))
    assert np.vdot(grad.astype(np.float64), v) == pytest.approx(numeric, rel=1e-5)


def test_segment_sum_python_values_and_empty_data():
    out = segment_sum([[1.0, 2.0], [3.0, 4.0]], [1, 1], 3)
    np.testing.assert_array_equal(out.numpy(), [[0, 0], [4, 6], [0, 0]])
    out = segment_sum(np.zeros((0, 2), np.float32), np.zeros(0, np.int32), 2)
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 2)))


# ---- documented errors (each op's rows in tests/opdb_embedding.py cover the rest) ---------------
@pytest.mark.parametrize(("fn", "args", "kwargs", "exc", "match"), [
    (lookup, (np.zeros((4, 2), np.float32), np.asarray([0], np.int64)), {}, TypeError,
     r"ids must be int32"),
    (lookup, (np.zeros((4, 2), np.float32), np.asarray([0], np.int32)),
     {"serialization_factor": -3}, ValueError, r"has to be at least 1, but was -3\."),
    (lookup, (np.zeros((6, 2), np.float32), np.asarray([0], np.int32)),
     {"serialization_factor": 4}, ValueError,
     r"The serialization_factor \(4\) must divide the size of the 0th dimension of params "
     r"\(6\)\."),
    (segment_sum, (np.zeros((2, 2), np.float32), np.asarray([0, 1], np.int32), -1), {},
     ValueError, r"num_segments must be greater than 0; got -1"),
    (segment_sum, (np.zeros((2, 2), np.float32), np.asarray([0], np.int32), 2), {},
     ValueError, r"must have same length as axis 0 of data"),
])
def test_documented_errors(fn, args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


# ---- kernels: determinism, parallel vs serial ----------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize(("rows", "zero_out"), [(300, True), (300, False), (9000, False)],
                         ids=["sorted-zeroing", "sorted-accumulating", "owned-rows"])
def test_parallel_and_serial_kernels_give_the_same_bits(dtype, rows, zero_out, monkeypatch):
    rng = np.random.default_rng(11)
    d, n = 17, 2000
    grad = (rng.standard_normal((n, d)) * 10).astype(dtype)
    ids = rng.zipf(1.3, n).astype(np.int32) - 2  # hot low rows, some negative, some past end
    ids[::7] = rng.integers(0, rows, ids[::7].shape)
    start = rng.standard_normal((rows, d)).astype(dtype)
    params = _table(rng, rows, d, dtype)

    def both(fn):
        monkeypatch.setattr(embedding_cpu, "PARALLEL_MIN_ELEMENTS", 1 << 40)
        serial = fn()
        monkeypatch.setattr(embedding_cpu, "PARALLEL_MIN_ELEMENTS", 0)
        return serial, fn()

    s, p = both(lambda: embedding_cpu.embedding_bwd(grad, ids, start.copy(), zero_out))
    np.testing.assert_array_equal(s.view(np.uint8), p.view(np.uint8))
    want = np.zeros((rows, d), dtype) if zero_out else start.copy()
    for i, r in enumerate(ids):
        if 0 <= r < rows:
            want[r] = want[r] + grad[i]
    np.testing.assert_array_equal(s, want)
    s, p = both(lambda: embedding_cpu.embedding_fwd(params, ids, np.empty((n, d), dtype)))
    np.testing.assert_array_equal(s, p)
    np.testing.assert_array_equal(s, ref.embedding_lookup(params, ids).astype(dtype))


@pytest.mark.parametrize("d", [8, 16, 6])
def test_streaming_gather_matches_the_cached_one(d, monkeypatch):
    rng = np.random.default_rng(18)
    params = rng.standard_normal((50, d)).astype(np.float32)
    ids = rng.integers(-3, 53, 333).astype(np.int32)
    monkeypatch.setattr(embedding_cpu, "PARALLEL_MIN_ELEMENTS", 0)
    monkeypatch.setattr(embedding_cpu, "STREAM_MIN_BYTES", 0)
    aligned = embedding_cpu.empty_rows(333, d, np.float32)
    assert aligned.ctypes.data % 64 == 0 and aligned.flags.c_contiguous
    buf = np.empty(333 * d + 1, np.float32)
    unaligned = buf[1:] if buf.ctypes.data % 32 == 0 else buf[:-1]
    want = ref.embedding_lookup(params, ids).astype(np.float32)
    for out in (aligned, unaligned.reshape(333, d)):
        np.testing.assert_array_equal(embedding_cpu.embedding_fwd(params, ids, out), want)


def test_scatter_add_is_independent_of_the_thread_count(monkeypatch):
    import numba

    rng = np.random.default_rng(12)
    grad = rng.standard_normal((5000, 9)).astype(np.float32)
    ids = (rng.zipf(1.2, 5000) % 50).astype(np.int32)
    monkeypatch.setattr(embedding_cpu, "PARALLEL_MIN_ELEMENTS", 0)
    results = []
    before = numba.get_num_threads()
    try:
        for t in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(t)
            results.append(embedding_cpu.embedding_bwd(grad, ids, np.empty((50, 9), np.float32),
                                                       True))
    finally:
        numba.set_num_threads(before)
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


@pytest.mark.parametrize("zero_out", [True, False])
def test_scatter_add_sort_with_int64_indices_gives_the_int32_bits(zero_out, monkeypatch):
    rng = np.random.default_rng(21)
    rows, d, n = 3000, 40, 30000  # parallel sorted path
    grad = rng.standard_normal((n, d)).astype(np.float32)
    ids = rng.integers(-5, rows + 5, n).astype(np.int32)
    start = rng.standard_normal((rows, d)).astype(np.float32)
    narrow = embedding_cpu.embedding_bwd(grad, ids, start.copy(), zero_out)
    monkeypatch.setattr(embedding_cpu, "_INDEX32_MAX_IDS", 0)
    wide = embedding_cpu.embedding_bwd(grad, ids, start.copy(), zero_out)
    np.testing.assert_array_equal(narrow.view(np.uint32), wide.view(np.uint32))
    want = np.zeros((rows, d), np.float32) if zero_out else start.copy()
    keep = (ids >= 0) & (ids < rows)
    np.add.at(want, ids[keep], grad[keep])
    np.testing.assert_allclose(narrow, want, rtol=1e-5, atol=1e-5)


def test_scatter_add_accumulates_when_not_zeroing():
    out = np.full((3, 2), 10.0, np.float32)
    embedding_cpu.embedding_bwd(np.ones((4, 2), np.float32), np.asarray([0, 0, 2, 7], np.int32),
                                out, False)
    np.testing.assert_array_equal(out, [[12, 12], [10, 10], [11, 11]])


def test_float16_rounding_helper_matches_numpy():
    from numba import njit

    @njit(cache=False)
    def convert(bits, out):
        for i in range(bits.shape[0]):
            out[i] = embedding_cpu._float_bits_to_half(bits[i])

    rng = np.random.default_rng(13)
    bits = np.concatenate([
        rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32),
        np.arange(0x33000000 - 10, 0x38800010, 997, dtype=np.uint32),  # subnormal range
        np.asarray([0x477FEFFF, 0x477FF000, 0x7F800000, 0xFF800000, 0, 0x80000000], np.uint32)])
    values = bits.view(np.float32)
    got = np.empty(bits.shape, np.uint16)
    convert(bits, got)
    with np.errstate(over="ignore"):
        want = values.astype(np.float16)
    finite = ~np.isnan(values)
    np.testing.assert_array_equal(got[finite], want.view(np.uint16)[finite])
    assert np.isnan(got[~finite].view(np.float16)).all()


# ---- the GPU twin, run on the CPU through the CUDA emulator --------------------------------------
needs_gxx = pytest.mark.skipif(not compiler_available(), reason="no g++ for the CUDA emulator")


@pytest.fixture
def gpu_kernels(monkeypatch):
    ns = install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.embedding_gpu"])
    monkeypatch.delenv("IPU_GPU_DETERMINISTIC", raising=False)
    return ns.embedding_gpu


@needs_gxx
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
@pytest.mark.parametrize("d", [1, 3, 4, 300])
def test_gpu_gather_matches_cpu(gpu_kernels, dtype, d):
    rng = np.random.default_rng(d)
    params = (rng.standard_normal((9, d)) * 100).astype(dtype)
    ids = rng.integers(-3, 12, 21).astype(np.int32)
    got = gpu_kernels.embedding_fwd(params, ids, np.full((21, d), 7, dtype))
    want = embedding_cpu.embedding_fwd(params, ids, np.empty((21, d), dtype))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@needs_gxx
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("zero_out", [True, False])
def test_gpu_scatter_add_gives_the_cpu_bits(gpu_kernels, dtype, zero_out):
    rng = np.random.default_rng(14)
    grad = (rng.standard_normal((40, 5)) * 30).astype(dtype)
    ids = (rng.zipf(1.5, 40) - 2).astype(np.int32)  # hot rows, negatives, past the end
    start = rng.standard_normal((8, 5)).astype(dtype)
    got = gpu_kernels.embedding_bwd(grad, ids, start.copy(), zero_out)
    want = embedding_cpu.embedding_bwd(grad, ids, start.copy(), zero_out)
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@needs_gxx
def test_gpu_float16_add_rounds_like_numpy_for_every_half(gpu_kernels):
    # each half value h, added once to 0 and once to itself: checks both conversions exhaustively
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    halves = halves[np.isfinite(halves)].reshape(16, -1)  # few wide rows: few emulated blocks
    n, d = halves.shape
    ids = np.repeat(np.arange(n, dtype=np.int32), 2)
    grad = np.repeat(halves, 2, axis=0)
    got = gpu_kernels.embedding_bwd(grad, ids, np.empty((n, d), np.float16), True)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, halves + halves)


@needs_gxx
def test_gpu_atomics_only_when_asked_for(gpu_kernels, monkeypatch):
    rng = np.random.default_rng(15)
    grad = rng.standard_normal((30, 4)).astype(np.float32)
    ids = rng.integers(-1, 7, 30).astype(np.int32)
    want = embedding_cpu.embedding_bwd(grad, ids, np.empty((6, 4), np.float32), True)
    assert gpu_kernels.deterministic()
    monkeypatch.setenv("IPU_GPU_DETERMINISTIC", "0")
    assert not gpu_kernels.deterministic()
    got = gpu_kernels.embedding_bwd(grad, ids, np.empty((6, 4), np.float32), True)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    monkeypatch.setattr(gpu_kernels, "DETERMINISTIC", True)  # the module flag wins
    assert gpu_kernels.deterministic()
    monkeypatch.setattr(gpu_kernels, "DETERMINISTIC", False)
    monkeypatch.delenv("IPU_GPU_DETERMINISTIC")
    assert not gpu_kernels.deterministic()


@needs_gxx
def test_gpu_kernels_edge_cases(gpu_kernels):
    empty = np.zeros(0, np.int32)
    out = np.full((3, 2), 5.0, np.float32)
    gpu_kernels.embedding_bwd(np.zeros((0, 2), np.float32), empty, out, True)
    np.testing.assert_array_equal(out, 0)
    assert gpu_kernels.embedding_fwd(np.ones((3, 2), np.float32), empty,
                                     np.empty((0, 2), np.float32)).shape == (0, 2)
    assert gpu_kernels.embedding_first_bad_id(np.asarray([0, 2, 3, -1], np.int32), 3) == 2
    assert gpu_kernels.embedding_first_bad_id(np.asarray([0, 2], np.int32), 3) == -1
    assert gpu_kernels.embedding_first_bad_id(empty, 3) == -1
    host = gpu_kernels.to_host(gpu_kernels.to_device(np.arange(3)))
    np.testing.assert_array_equal(host, [0, 1, 2])


# ---- the public API on each backend (the cupy rows run where a GPU exists) -----------------------
def test_lookup_and_gradients_on_backend(backend):
    rng = np.random.default_rng(16)
    params = _table(rng, 20, 6)
    ids = rng.integers(-1, 21, (5, 4)).astype(np.int32)
    g = rng.standard_normal((5, 4, 6)).astype(np.float32)
    for factor in (1, 4):
        pt = ipu_gpu.constant(backend.asarray(params))
        with ipu_gpu.GradientTape() as tape:
            tape.watch(pt)
            out = lookup(pt, backend.asarray(ids), serialization_factor=factor)
        grad = tape.gradient(out, pt, output_gradients=backend.asarray(g))
        assert isinstance(out._value, backend.ndarray) and isinstance(grad._value, backend.ndarray)
        np.testing.assert_array_equal(np.asarray(out.numpy()), ref.embedding_lookup(params, ids))
        np.testing.assert_allclose(np.asarray(grad.numpy()),
                                   ref.embedding_lookup_grad(params.shape, ids, g), rtol=1e-5,
                                   atol=1e-5)
    data = rng.standard_normal((9, 3)).astype(np.float32)
    seg = np.asarray([0, 0, 1, 1, 1, 4, 4, 9, -2], np.int32)
    gs = rng.standard_normal((5, 3)).astype(np.float32)
    dt = ipu_gpu.constant(backend.asarray(data))
    with ipu_gpu.GradientTape() as tape:
        tape.watch(dt)
        out = segment_sum(dt, backend.asarray(seg), 5)
    grad = tape.gradient(out, dt, output_gradients=backend.asarray(gs))
    np.testing.assert_allclose(np.asarray(out.numpy()), ref.segment_sum(data, seg, 5), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(np.asarray(grad.numpy()),
                                  ref.segment_sum_grad(seg, 5, gs).astype(np.float32))


@pytest.mark.gpu
def test_gpu_scatter_add_is_deterministic_and_matches_cpu_bits():
    from conftest import require_gpu

    cupy = require_gpu()
    from ipu_gpu.kernels import embedding_gpu

    rng = np.random.default_rng(17)
    grad = rng.standard_normal((20000, 64)).astype(np.float32)
    ids = (rng.zipf(1.2, 20000) % 3000).astype(np.int32)
    want = embedding_cpu.embedding_bwd(grad, ids, np.empty((3000, 64), np.float32), True)
    g, i = cupy.asarray(grad), cupy.asarray(ids)
    runs = [embedding_gpu.embedding_bwd(g, i, cupy.empty((3000, 64), np.float32), True).get()
            for _ in range(3)]
    for r in runs:
        np.testing.assert_array_equal(r, want)
