"""serialized_matmul (Graphcore's ipu.math_ops.serialized_matmul): every case of Graphcore's
shape table under every factor against matmul, the split-k order bit for bit (also through
the k split's beta = 1 CBLAS GEMMs, kernels/_blas_gemm.py, and its row tiles for big
products, for any thread count), int32 and float16, gradients
(against plain matmul, finite differences, second derivatives) and the split each backward
matmul takes, errors with Graphcore's wording, a hypothesis property, torch/TF, the GPU twin
through the CUDA emulator, and a gpu-marked public-API test."""

from __future__ import annotations

import tracemalloc

import numpy as np
import opdb  # noqa: F401  (before opdb_serialized_matmul: opdb imports the row files)
import pytest
from cuda_emulator import install_fake_cupy
from hypothesis import given
from hypothesis import strategies as st
from opdb_serialized_matmul import table_cases
from reference import serialized_matmul as ref

import ipu_gpu
from threadpoolctl import threadpool_limits

from ipu_gpu.kernels import _blas_gemm, conv_cpu, matmul_cpu, serialized_matmul_cpu
from ipu_gpu.kernels._blas import single_threaded_blas
from ipu_gpu.ops import serialized_matmul as sm_op
from ipu_gpu.ops.serialized_matmul import serialized_matmul

DIMS = ("a_columns", "a_rows_b_columns", "b_rows")


def _split_size(dim, a_shape, b_shape, ta, tb):
    """The length of the dimension ``dim`` splits (m, k or n, after the transposes)."""
    if dim == "a_columns":
        return a_shape[-1] if ta else a_shape[-2]
    if dim == "a_rows_b_columns":
        return a_shape[-2] if ta else a_shape[-1]
    return b_shape[-2] if tb else b_shape[-1]


def _divisors(n):
    return [f for f in range(1, n + 1) if n % f == 0]


def _op(x, t):
    return np.swapaxes(x, -1, -2) if t else x


def _normal(rng, shape, dtype=np.float32):
    return rng.normal(2.0, 2.0, shape).astype(dtype)  # Graphcore's test draws N(2, 2)


# every table case x batch variant x every factor that divides its split dimension
WIDE = [pytest.param(sa, sb, ta, tb, f, dim, id=f"{cid}-F{f}")
        for cid, sa, sb, ta, tb, _, dim in table_cases()
        for f in _divisors(_split_size(dim, sa, sb, ta, tb))]
# the table itself (its own factors), for the slower gradient checks
TABLE = [pytest.param(sa, sb, ta, tb, f, dim, id=cid)
         for cid, sa, sb, ta, tb, f, dim in table_cases()]


# ---- forward -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("a_shape", "b_shape", "ta", "tb", "factor", "dim"), WIDE)
def test_shape_table_matches_matmul(a_shape, b_shape, ta, tb, factor, dim):
    rng = np.random.default_rng(len(a_shape) * 1000 + factor)
    a, b = _normal(rng, a_shape), _normal(rng, b_shape)
    got = serialized_matmul(a, b, factor, dim, transpose_a=ta, transpose_b=tb)
    want = np.matmul(_op(a, ta).astype(np.float64), _op(b, tb).astype(np.float64))
    assert got.dtype == np.float32 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-4)
    # and the float64 definition (slices concatenated or summed in order) agrees
    np.testing.assert_allclose(ref.serialized_matmul(a, b, factor, dim, ta, tb), want,
                               rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (False, True), (True, False),
                                        (True, True)])
@pytest.mark.parametrize("factor", [2, 3, 4, 6, 12])
def test_split_k_is_the_ordered_sum_of_slice_products_bitwise(factor, ta, tb, dtype):
    """'a_rows_b_columns' adds the slice products left to right in the output dtype:
    ((p0 + p1) + p2) + ..., exactly what Graphcore's Python += builds."""
    rng = np.random.default_rng(factor)
    m, k, n = 9, 48, 7
    a = _normal(rng, (2, k, m) if ta else (2, m, k), dtype)
    b = _normal(rng, (n, k) if tb else (k, n), dtype)
    x, y = _op(a, ta), _op(b, tb)
    s = k // factor

    def product(p, q):  # float16: float32 products (float32 partials), rounded to float16
        return np.matmul(p.astype(np.float32), q.astype(np.float32)).astype(dtype)

    want = product(x[..., :, :s], y[:s, :])
    for i in range(1, factor):
        want = want + product(x[..., :, i * s:(i + 1) * s], y[i * s:(i + 1) * s, :])
    got = serialized_matmul(a, b, factor, "a_rows_b_columns", ta, tb).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)
    if dtype == np.float32 and factor > 2:  # the order is visible: not the one-GEMM sum
        assert not np.array_equal(got, np.matmul(x, y))


@pytest.mark.parametrize("batch", [(), (3,)])
@pytest.mark.parametrize(("m", "k", "n"), [(12, 10, 8), (512, 256, 512)])
@pytest.mark.parametrize("dim", ["a_columns", "b_rows"])
def test_m_and_n_splits_are_the_unsplit_matmul_bitwise(dim, m, k, n, batch):
    """Splitting m or n changes no element's arithmetic: the result is ipu_gpu's one matmul
    (``matmul_cpu.matmul``) bit for bit (not the concatenated slice GEMMs, whose bits
    OpenBLAS's edge tiles can move), and matches the slice products to rounding."""
    rng = np.random.default_rng(3)
    a, b = _normal(rng, batch + (m, k)), _normal(rng, (k, n))
    got = serialized_matmul(a, b, 4, dim).numpy()
    np.testing.assert_array_equal(got, matmul_cpu.matmul(a, b))
    pieces = (np.split(a, 4, axis=-2) if dim == "a_columns" else np.split(b, 4, axis=-1))
    sliced = (np.concatenate([np.matmul(p, b) for p in pieces], axis=-2) if dim == "a_columns"
              else np.concatenate([np.matmul(a, p) for p in pieces], axis=-1))
    np.testing.assert_allclose(got, sliced, rtol=1e-5, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("dim", DIMS)
def test_int32_is_exact_and_wraps_like_int32(dim):
    rng = np.random.default_rng(4)
    a = rng.integers(-1000, 1000, (2, 6, 12)).astype(np.int32)
    b = rng.integers(-1000, 1000, (12, 6)).astype(np.int32)
    got = serialized_matmul(a, b, 3, dim)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), np.matmul(a.astype(np.int64), b))
    big = np.full((2, 4), 2**30, np.int32)  # 4 * 2**60 wraps to 0 in int32, as TF's int matmul
    np.testing.assert_array_equal(
        serialized_matmul(big, big.T.copy(), 2, dim).numpy(),
        np.matmul(big.astype(np.int64), big.T).astype(np.int32))


@pytest.mark.parametrize("dim", DIMS)
def test_float16_keeps_its_dtype_and_accuracy(dim):
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (3, 8, 16)).astype(np.float16)
    b = rng.uniform(-1, 1, (16, 8)).astype(np.float16)
    got = serialized_matmul(a, b, 4, dim)
    assert got.dtype == np.float16
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=1e-2, atol=1e-2)


def test_empty_sizes():
    z = np.zeros
    assert serialized_matmul(z((0, 4), np.float32), z((4, 3), np.float32), 2,
                             "a_columns").shape == (0, 3)
    out = serialized_matmul(np.ones((3, 0), np.float32), np.ones((0, 2), np.float32), 2,
                            "a_rows_b_columns").numpy()
    np.testing.assert_array_equal(out, np.zeros((3, 2), np.float32))
    assert serialized_matmul(z((2, 0, 3, 4), np.int32), z((4, 6), np.int32), 3,
                             "b_rows").shape == (2, 0, 3, 6)


def test_factor_is_converted_with_int_like_graphcore():
    a, b = np.ones((4, 6), np.float32), np.ones((6, 2), np.float32)
    for f in (2.0, 2.7, "3", np.int64(6)):
        np.testing.assert_array_equal(serialized_matmul(a, b, f, "a_rows_b_columns").numpy(),
                                      np.full((4, 2), 6, np.float32))


def test_accepts_tensors_variables_and_lists():
    a = ipu_gpu.Variable(np.ones((2, 4), np.float32))
    got = serialized_matmul(a, [[1.0], [2.0], [3.0], [4.0]], 2, "a_rows_b_columns")
    np.testing.assert_array_equal(got.numpy(), [[10.0], [10.0]])


# ---- errors: Graphcore's wording ----------------------------------------------------------------
@pytest.mark.parametrize(("args", "kwargs", "message"), [
    (((2, 4), (4, 2), 0, "a_columns"), {},
     "serialization_factor has to be at least 1, but was 0."),
    (((2, 4), (4, 2), -3, "b_rows"), {}, "serialization_factor has to be at least 1, but was -3."),
    (((4,), (4, 2), 1, "a_columns"), {}, "Expected tensor 'a' to have a minimum rank of 2"),
    (((2, 4), (4,), 1, "a_columns"), {}, "Expected tensor 'b' to have a minimum rank of 2"),
    (((2, 4), (4, 2), 1, "columns"), {},
     ("Invalid serialization_dimension=columns, expected one of: 'a_columns', "
      "'a_rows_b_columns', 'b_rows'.")),
    (((6, 4), (4, 2), 4, "a_columns"), {},
     "Expected 'serialization_factor' (4) to divide the columns dimension of 'a' (6)."),
    (((4, 6), (4, 2), 4, "a_columns"), {"transpose_a": True},  # m is a's last axis here
     "Expected 'serialization_factor' (4) to divide the columns dimension of 'a' (6)."),
    (((2, 6), (6, 2), 4, "a_rows_b_columns"), {},
     "Expected 'serialization_factor' (4) to divide the rows dimension of 'a' (6)."),
    (((2, 6), (2, 5), 1, "a_rows_b_columns"), {"transpose_b": True},
     "Expected the number of columns in 'a' (6) to match the number of rows in 'b' (5)."),
    (((2, 4), (4, 6), 4, "b_rows"), {},
     "Expected 'serialization_factor' (4) to divide the rows dimension of 'b' (6)."),
    (((2, 4), (6, 4), 4, "b_rows"), {"transpose_b": True},
     "Expected 'serialization_factor' (4) to divide the rows dimension of 'b' (6)."),
])
def test_graphcore_value_errors_verbatim(args, kwargs, message):
    sa, sb, f, dim = args
    with pytest.raises(ValueError) as e:
        serialized_matmul(np.zeros(sa, np.float32), np.zeros(sb, np.float32), f, dim, **kwargs)
    assert str(e.value) == f"serialized_matmul: {message}"


def test_error_order_follows_graphcore():
    """The factor is checked before the ranks, the ranks before the dimension name, and the
    divisibility before the inner sizes under 'a_columns' (tf.matmul checks those later)."""
    z = np.zeros
    with pytest.raises(ValueError, match="has to be at least 1"):
        serialized_matmul(z(3, np.float32), z(3, np.float32), 0, "nope")
    with pytest.raises(ValueError, match="minimum rank of 2"):
        serialized_matmul(z(3, np.float32), z((3, 2), np.float32), 1, "nope")
    with pytest.raises(ValueError, match="to divide the columns dimension"):
        serialized_matmul(z((3, 4), np.float32), z((5, 2), np.float32), 2, "a_columns")


def test_other_errors():
    z = np.zeros
    with pytest.raises(ValueError, match=r"^serialized_matmul: b must have 4 rows"):
        serialized_matmul(z((2, 4), np.float32), z((5, 2), np.float32), 1, "b_rows")
    with pytest.raises(ValueError, match=r"^serialized_matmul: b's batch dimensions"):
        serialized_matmul(z((2, 2, 4), np.float32), z((3, 4, 2), np.float32), 1, "a_columns")
    with pytest.raises(TypeError, match=r"^serialized_matmul: b must have the dtype of a"):
        serialized_matmul(z((2, 4), np.float32), z((4, 2), np.int32), 1, "a_columns")
    with pytest.raises(TypeError, match=r"^serialized_matmul: a must be float16, float32 or "
                                        r"int32, got float64"):
        serialized_matmul(z((2, 4)), z((4, 2)), 1, "a_columns")
    with pytest.raises(ValueError):  # int("two"), as Graphcore's int(serialization_factor)
        serialized_matmul(z((2, 4), np.float32), z((4, 2), np.float32), "two", "a_columns")


# ---- gradients ---------------------------------------------------------------------------------
def _grads(fn, a, b, u):
    at, bt = ipu_gpu.constant(a), ipu_gpu.constant(b)
    with ipu_gpu.GradientTape() as tape:
        tape.watch([at, bt])
        c = fn(at, bt)
    return [g.numpy() for g in tape.gradient(c, [at, bt], output_gradients=ipu_gpu.constant(u))]


@pytest.mark.parametrize(("a_shape", "b_shape", "ta", "tb", "factor", "dim"), TABLE)
def test_gradient_equals_the_unserialized_gradient(a_shape, b_shape, ta, tb, factor, dim):
    rng = np.random.default_rng(len(a_shape) + 10 * factor)
    a, b = _normal(rng, a_shape), _normal(rng, b_shape)
    out_shape = np.matmul(_op(a, ta), _op(b, tb)).shape
    u = rng.standard_normal(out_shape).astype(np.float32)
    got = _grads(lambda x, y: serialized_matmul(x, y, factor, dim, ta, tb), a, b, u)
    plain = _grads(lambda x, y: ipu_gpu.matmul(x, y, transpose_a=ta, transpose_b=tb), a, b, u)
    want = ref.matmul_grads(a, b, u, ta, tb)
    for g, p, w, x in zip(got, plain, want, (a, b)):
        assert g.shape == x.shape and g.dtype == np.float32
        np.testing.assert_allclose(g, p, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(("a_shape", "b_shape", "ta", "tb", "factor", "dim"), TABLE[::3])
def test_vjp_matches_finite_differences_in_float64(a_shape, b_shape, ta, tb, factor, dim):
    """float64 is not an IPU dtype, so the public op refuses it; the op's forward and backward
    rules run on float64 arrays directly (the residuals are explicit for this)."""
    rng = np.random.default_rng(len(b_shape) + factor)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    static = {"serialization_factor": factor, "serialization_dimension": dim,
              "transpose_a": ta, "transpose_b": tb}
    k = serialized_matmul_cpu

    def f(x, y):
        return sm_op._forward(k, np, x, y, **static)[0]

    u = rng.standard_normal(f(a, b).shape)
    va, vb = rng.standard_normal(a.shape), rng.standard_normal(b.shape)
    eps = 1e-6
    diff = f(a + eps * va, b + eps * vb) - f(a - eps * va, b - eps * vb)
    numeric = np.vdot(u, diff / (2 * eps))
    ga, gb = sm_op._backward(k, np, (a, b), u, **static)
    assert ga.shape == a.shape and gb.shape == b.shape
    assert np.vdot(ga, va) + np.vdot(gb, vb) == pytest.approx(numeric, rel=1e-6, abs=1e-8)


def test_gradient_skips_an_operand_the_tape_does_not_need():
    rng = np.random.default_rng(6)
    a, b = ipu_gpu.constant(_normal(rng, (8, 6))), ipu_gpu.constant(_normal(rng, (6, 4)))
    calls = []
    original = serialized_matmul_cpu.serialized_matmul

    def spy(x, y, dimension, factor, out, reduce_axes=()):
        calls.append(dimension)
        return original(x, y, dimension, factor, out, reduce_axes)

    mp = pytest.MonkeyPatch()
    mp.setattr(serialized_matmul_cpu, "serialized_matmul", spy)
    try:
        with ipu_gpu.GradientTape() as tape:
            tape.watch(b)
            c = serialized_matmul(a, b, 2, "a_columns")
        gb = tape.gradient(c, b)
    finally:
        mp.undo()
    assert calls == ["a_columns", "a_rows_b_columns"]  # forward, then grad b only
    np.testing.assert_allclose(gb.numpy(), np.broadcast_to(a.numpy().sum(0)[:, None], (6, 4)),
                               rtol=1e-5)


def test_second_derivatives_match_plain_matmul():
    rng = np.random.default_rng(7)
    a0, b0 = _normal(rng, (2, 6, 4)), _normal(rng, (4, 6))
    v = rng.standard_normal((4, 6)).astype(np.float32)

    def hvp(fn):
        a, b = ipu_gpu.constant(a0), ipu_gpu.constant(b0)
        with ipu_gpu.GradientTape() as outer:
            outer.watch(a)
            with ipu_gpu.GradientTape() as inner:
                inner.watch(b)
                c = fn(a, b)
                loss = ipu_gpu.reduce_sum(c * c)
            gb = inner.gradient(loss, b)
            s = ipu_gpu.reduce_sum(gb * ipu_gpu.constant(v))
        return outer.gradient(s, a).numpy()

    for dim in DIMS:
        got = hvp(lambda x, y, d=dim: serialized_matmul(x, y, 2, d))
        want = hvp(lambda x, y: ipu_gpu.matmul(x, y))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


# ---- the split each backward matmul takes -----------------------------------------------------
# Graphcore's custom-gradient table (tf_ipu_semantics.md section 1), written out again here
# so the test does not read the op's own copy: (dimension, ta, tb) -> (grad_a, grad_b) split.
GRAPHCORE_GRAD_TABLE = {
    "a_columns": {(False, False): ("a_columns", "a_rows_b_columns"),
                  (False, True): ("a_columns", "a_rows_b_columns"),
                  (True, False): ("b_rows", "a_rows_b_columns"),
                  (True, True): ("b_rows", "a_rows_b_columns")},
    "a_rows_b_columns": {(False, False): ("b_rows", "a_columns"),
                         (False, True): ("b_rows", "b_rows"),
                         (True, False): ("a_columns", "a_columns"),
                         (True, True): ("a_columns", "b_rows")},
    "b_rows": {(False, False): ("a_rows_b_columns", "b_rows"),
               (False, True): ("a_rows_b_columns", "a_columns"),
               (True, False): ("a_rows_b_columns", "b_rows"),
               (True, True): ("a_rows_b_columns", "a_columns")},
}


def _split_len(dimension, x, y):
    return {"a_columns": x.shape[-2], "a_rows_b_columns": x.shape[-1],
            "b_rows": y.shape[-1]}[dimension]


@pytest.mark.parametrize("batch", ["none", "a", "b"])
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (False, True), (True, False),
                                        (True, True)])
@pytest.mark.parametrize("dim", DIMS)
def test_backward_matmuls_take_graphcores_split(dim, ta, tb, batch, monkeypatch):
    """A spy on the kernel records each serialized matmul (its split and operands) and each
    GEMM inside it: the forward and both gradients are serialized along the same problem
    dimension, the gradients with Graphcore's serialisation function and operands; k splits
    issue F slice GEMMs, m and n splits one GEMM."""
    m, k, n, f = 6, 9, 12, 3
    rng = np.random.default_rng(8)
    sa = (k, m) if ta else (m, k)
    sb = (n, k) if tb else (k, n)
    sa = (2,) + sa if batch == "a" else sa
    sb = (3,) + sb if batch == "b" else sb
    a, b = _normal(rng, sa), _normal(rng, sb)
    u = rng.standard_normal(np.matmul(_op(a, ta), _op(b, tb)).shape).astype(np.float32)

    calls, gemms = [], []
    original, product = serialized_matmul_cpu.serialized_matmul, serialized_matmul_cpu._product
    accumulate = serialized_matmul_cpu._gemm_accumulate

    def spy(x, y, dimension, factor, out, reduce_axes=()):
        calls.append((dimension, factor, np.array(x), np.array(y), reduce_axes, len(gemms)))
        return original(x, y, dimension, factor, out, reduce_axes)

    def product_spy(x, y, out, unreduced, reduce_axes, *gemm):
        gemms.append((x.shape, y.shape))
        return product(x, y, out, unreduced, reduce_axes, *gemm)

    def accumulate_spy(x, y, out):  # the k split's beta = 1 GEMMs (big products only)
        gemms.append((x.shape, y.shape))
        return accumulate(x, y, out)

    monkeypatch.setattr(serialized_matmul_cpu, "serialized_matmul", spy)
    monkeypatch.setattr(serialized_matmul_cpu, "_product", product_spy)
    monkeypatch.setattr(serialized_matmul_cpu, "_gemm_accumulate", accumulate_spy)
    _grads(lambda x, y: serialized_matmul(x, y, f, dim, ta, tb), a, b, u)

    assert [c[0] for c in calls] == [dim, *GRAPHCORE_GRAD_TABLE[dim][ta, tb]]
    split = {"a_columns": m, "a_rows_b_columns": k, "b_rows": n}[dim]
    for dimension, factor, x, y, _, _ in calls:
        assert factor == f and _split_len(dimension, x, y) == split  # the same problem dim
    # the operands Graphcore feeds to each gradient matmul (the standard matmul gradients)
    _, _, xa, ya, ra, _ = calls[1]
    _, _, xb, yb, rb, _ = calls[2]
    def mt(t):
        return np.swapaxes(t, -1, -2)

    x_, y_ = _op(a, ta), _op(b, tb)  # op(a), op(b)
    np.testing.assert_allclose(xa @ ya, u @ mt(y_) if not ta else mt(u @ mt(y_)), rtol=1e-5,
                               atol=1e-4)
    np.testing.assert_allclose(xb @ yb, mt(x_) @ u if not tb else mt(mt(x_) @ u), rtol=1e-5,
                               atol=1e-4)
    # a broadcast operand's gradient is summed over the batch axis (slice by slice)
    assert ra == ((0,) if batch == "b" else ()) and rb == ((0,) if batch == "a" else ())
    # inside the kernel: a k split is exactly F slice GEMMs of the right size; an m or n
    # split is one GEMM of the whole problem (every element is the same dot product)
    bounds = [c[5] for c in calls] + [len(gemms)]
    for (dimension, _, x, y, _, _), lo, hi in zip(calls, bounds, bounds[1:]):
        split_k = dimension == "a_rows_b_columns"
        assert hi - lo == (f if split_k else 1)
        for xs, ys in gemms[lo:hi]:
            want_x = list(x.shape)
            want_y = list(y.shape)
            if split_k:
                want_x[-1] //= f
                want_y[-2] //= f
            assert (list(xs), list(ys)) == (want_x, want_y)


# ---- memory: slices are views, outputs written in place ----------------------------------------
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, True)])
@pytest.mark.parametrize("dim", DIMS)
def test_kernel_makes_no_full_size_copies(dim, ta, tb):
    rng = np.random.default_rng(9)
    m = k = n = 256
    a, b = _normal(rng, (k, m) if ta else (m, k)), _normal(rng, (n, k) if tb else (k, n))
    x, y = _op(a, ta), _op(b, tb)
    out = np.empty((m, n), np.float32)
    serialized_matmul_cpu.serialized_matmul(x, y, dim, 4, out)  # warm numpy's caches
    tracemalloc.start()
    try:
        assert serialized_matmul_cpu.serialized_matmul(x, y, dim, 4, out) is out
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # m/n splits (one GEMM): nothing output-sized; k split: one reused partial-product buffer
    limit = out.nbytes * (1.1 if dim == "a_rows_b_columns" else 0.1)
    assert peak < limit, (dim, peak)
    np.testing.assert_allclose(out, np.matmul(x.astype(np.float64), y), rtol=1e-4, atol=1e-3)


# ---- the k split's accumulating GEMMs (beta = 1 through CBLAS, kernels/_blas_gemm.py) -----------
def _ordered_sum(x, y, f, gemm=matmul_cpu.matmul):
    """((p0 + p1) + p2) + ... with p_i ipu_gpu's matmul of slice i (``matmul_cpu.matmul``:
    bits independent of the thread count; tests/test_matmul_determinism.py), or ``gemm``'s."""
    s = x.shape[-1] // f
    want = gemm(x[..., :s], y[..., :s, :])
    for i in range(1, f):
        want = want + gemm(x[..., i * s:(i + 1) * s], y[..., i * s:(i + 1) * s, :])
    return want


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("ta", "tb", "batch"), [(False, False, ()), (True, False, (2,)),
                                                 (False, True, (2,)), (True, True, ())])
@pytest.mark.parametrize(("m", "k", "n", "f"), [(256, 1024, 256, 8), (64, 4096, 64, 2)])
def test_split_k_accumulating_gemms_keep_the_ordered_sum_bitwise(m, k, n, f, ta, tb, batch,
                                                                 dtype, monkeypatch):
    """Products big enough for the beta = 1 path (m*n*s = 2**23): still ((p0 + p1) + ...)
    bit for bit; the path is taken exactly when OpenBLAS runs slice length s as one k-block
    (s = 128 here; s = 2048 is longer than GEMM_Q on most CPUs: then the buffered adds)."""
    rng = np.random.default_rng(m + f)
    a = _normal(rng, batch + ((k, m) if ta else (m, k)), dtype)
    b = _normal(rng, (n, k) if tb else (k, n), dtype)
    x, y = _op(a, ta), _op(b, tb)
    accumulated = []
    original = serialized_matmul_cpu._gemm_accumulate

    def spy(xi, yi, out):
        accumulated.append(xi.shape)
        return original(xi, yi, out)

    monkeypatch.setattr(serialized_matmul_cpu, "_gemm_accumulate", spy)
    out = np.empty(batch + (m, n), dtype)
    assert serialized_matmul_cpu.serialized_matmul(x, y, "a_rows_b_columns", f, out) is out
    np.testing.assert_array_equal(out, _ordered_sum(x, y, f))
    s = k // f
    one_pass = _blas_gemm.available(dtype) and _blas_gemm.one_k_block(dtype, s)
    assert accumulated == ([(m, s)] * ((f - 1) * int(np.prod(batch)))
                           if one_pass else [])
    if _blas_gemm.available(dtype):  # GEMM_Q is at least 56 on every CPU OpenBLAS knows
        assert _blas_gemm.one_k_block(dtype, 32)


def _tile_sum(x, y, f, rows):
    """The row-tiled k split: per tile of ``rows`` output rows (each broadcast batch matrix
    on its own), ((p0 + p1) + p2) + ... of the tile's slice products, BLAS on one thread."""
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    xb = np.broadcast_to(x, batch + x.shape[-2:])
    yb = np.broadcast_to(y, batch + y.shape[-2:])
    m = x.shape[-2]
    out = np.empty(batch + (m, y.shape[-1]), x.dtype)
    with single_threaded_blas():
        for idx in np.ndindex(*batch):
            for r0 in range(0, m, rows):
                r = slice(r0, r0 + rows)
                out[idx][r] = _ordered_sum(xb[idx][r], yb[idx], f, np.matmul)
    return out


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("ta", "tb", "batch"), [(False, False, ()), (True, False, (2,)),
                                                 (False, True, (3,)), (True, True, ())])
@pytest.mark.parametrize("f", [2, 3, 4, 8])
def test_split_k_row_tiles_keep_the_ordered_sum_bitwise(f, ta, tb, batch, dtype, threads,
                                                        monkeypatch):
    """Big k splits run as row tiles of the output (here forced on small problems: tiles of
    16 rows, a ragged last one): each tile is ((p0 + p1) + p2) + ... of its own slice
    products, bit for bit, for any number of threads."""
    monkeypatch.setattr(serialized_matmul_cpu, "TILED_MIN_MNK", 0)
    monkeypatch.setattr(serialized_matmul_cpu, "TILE_ROWS", 16)
    monkeypatch.setattr(conv_cpu, "num_threads", lambda: threads)
    rng = np.random.default_rng(f * 11 + threads)
    m, s, n = 41, 6, 23
    k = f * s
    a = _normal(rng, batch + ((k, m) if ta else (m, k)), dtype)
    b = _normal(rng, (n, k) if tb else (k, n), dtype)
    x, y = _op(a, ta), _op(b, tb)
    assert serialized_matmul_cpu._tiled(x, y, batch)
    out = np.empty(batch + (m, n), dtype)
    assert serialized_matmul_cpu.serialized_matmul(x, y, "a_rows_b_columns", f, out) is out
    np.testing.assert_array_equal(out, _tile_sum(x, y, f, 16))
    np.testing.assert_allclose(out, np.matmul(x.astype(np.float64), y), rtol=1e-5, atol=1e-4)


def test_split_k_row_tiles_at_full_size_ignore_blas_threads(monkeypatch):
    """A product above TILED_MIN_MNK takes the tiles by default (512-row tiles, wide outputs
    fewer rows); its bits are the tile sums whatever OpenBLAS's thread count and Numba's: BLAS
    runs on one thread for every tile, where numpy's whole-slice GEMMs give other bits on 1
    and on 2 OpenBLAS threads with OpenBLAS's Haswell/Zen kernels."""
    rng = np.random.default_rng(21)
    m, k, n, f = 1100, 1024, 300, 4
    a, b = _normal(rng, (m, k)), _normal(rng, (k, n))
    assert serialized_matmul_cpu._tiled(a, b, ())
    rows = serialized_matmul_cpu._tile_rows(n)
    assert rows == 512
    want = _tile_sum(a, b, f, rows)
    accumulated = []
    original = serialized_matmul_cpu._tile_accumulate

    def spy(xi, yi, out):
        accumulated.append(xi.shape)
        return original(xi, yi, out)

    monkeypatch.setattr(serialized_matmul_cpu, "_tile_accumulate", spy)
    got = serialized_matmul(a, b, f, "a_rows_b_columns").numpy()
    np.testing.assert_array_equal(got, want)
    # s = 256 is one k-block for float32 on most CPUs: the two full tiles (512 x 300 x 256 is
    # over BLOCKED_MIN_MNK) add their later products by beta = 1 GEMMs, the 76-row tail not
    one_pass = _blas_gemm.available(np.float32) and _blas_gemm.one_k_block(np.float32, 256)
    assert accumulated == ([(512, 256)] * 6 if one_pass else [])
    with threadpool_limits(1):
        np.testing.assert_array_equal(serialized_matmul(a, b, f, "a_rows_b_columns").numpy(),
                                      want)
    monkeypatch.setattr(conv_cpu, "num_threads", lambda: 1)
    np.testing.assert_array_equal(serialized_matmul(a, b, f, "a_rows_b_columns").numpy(), want)
    assert serialized_matmul_cpu._tile_rows(1 << 20) == 16  # a very wide output: thin tiles
    assert serialized_matmul_cpu._tile_rows(5000) == 208


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_k_block_probe_sees_a_split_k(dtype):
    """The probe tells a k that OpenBLAS cuts into blocks (longer than twice the largest
    GEMM_Q, 4096) from one it does not."""
    if not _blas_gemm.available(dtype):
        pytest.skip("numpy's BLAS exports no CBLAS gemm")
    assert not _blas_gemm._measure_one_block(np.dtype(dtype), 2 * 4096 + 1)
    assert _blas_gemm._measure_one_block(np.dtype(dtype), 32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (False, True), (True, False),
                                        (True, True)])
def test_blas_gemm_matches_matmul_for_transposes_and_beta(ta, tb, dtype):
    if not _blas_gemm.available(dtype):
        pytest.skip("numpy's BLAS exports no CBLAS gemm")
    rng = np.random.default_rng(14)
    m, k, n = 7, 5, 6
    x = _op(_normal(rng, (k + 2, m) if ta else (m, k + 2), dtype), ta)[:, 1:k + 1]
    y = _op(_normal(rng, (n, k) if tb else (k, n), dtype), tb)
    big = _normal(rng, (m, n + 3), dtype)
    before = big.copy()
    out = big[:, 2:n + 2]  # a row stride wider than n
    assert _blas_gemm.gemm(x, y, out, 1)
    np.testing.assert_allclose(out, before[:, 2:n + 2] + x @ y, rtol=1e-5)
    assert _blas_gemm.gemm(x, y, out, 0)
    np.testing.assert_allclose(out, x @ y, rtol=1e-5)
    np.testing.assert_array_equal(big[:, :2], before[:, :2])  # the rest of the rows: untouched
    np.testing.assert_array_equal(big[:, n + 2:], before[:, n + 2:])


def test_blas_gemm_refuses_what_cblas_cannot_take():
    rng = np.random.default_rng(15)
    x, y = _normal(rng, (8, 6)), _normal(rng, (6, 4))
    out = np.zeros((4, 4), np.float32)
    assert not _blas_gemm.gemm(x[::2, ::2], y[::2], np.zeros((4, 4), np.float32), 1)  # no unit
    assert not _blas_gemm.gemm(x[:4], y, np.zeros((4, 4), np.float16), 1)  # no float16 gemm
    assert not _blas_gemm.gemm(x[:4], y.astype(np.float64), out, 1)  # mixed dtypes
    assert not _blas_gemm.gemm(x[:4, :0], y[:0], out, 1)  # k = 0: the caller's business
    assert not _blas_gemm.gemm(x[:4], y, np.zeros((4, 8), np.float32)[:, ::2], 1)  # out
    assert not out.any()  # nothing written


# ---- property ------------------------------------------------------------------------------------
@st.composite
def _problems(draw):
    f = draw(st.integers(1, 4))
    dim = draw(st.sampled_from(DIMS))
    sizes = [draw(st.integers(0, 4)) for _ in range(3)]  # m, k, n in slices
    split = DIMS.index(dim)
    sizes[split] *= f
    if sizes[split] == 0:
        sizes[split] = f * draw(st.integers(0, 2))
    m, k, n = sizes
    ta, tb = draw(st.booleans()), draw(st.booleans())
    ba = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    bb = tuple(draw(st.sampled_from([(), ba[-1:], (1,) + ba[-1:]])) if ba else ())
    return m, k, n, f, dim, ta, tb, ba, bb, draw(st.integers(0, 2**31 - 1))


@given(_problems())
def test_property_serialized_equals_matmul_for_every_factor(problem):
    m, k, n, _, dim, ta, tb, ba, bb, seed = problem  # every factor of the split, not just f
    rng = np.random.default_rng(seed)
    a = rng.integers(-50, 50, ba + ((k, m) if ta else (m, k))).astype(np.int32)
    b = rng.integers(-50, 50, bb + ((n, k) if tb else (k, n))).astype(np.int32)
    want = np.matmul(_op(a, ta).astype(np.int64), _op(b, tb))
    split = {"a_columns": m, "a_rows_b_columns": k, "b_rows": n}[dim]
    for factor in _divisors(split) if split else [1, 2, 3]:
        got = serialized_matmul(a, b, factor, dim, ta, tb).numpy()
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want)  # integers: exact for every factor
        gf = serialized_matmul(a.astype(np.float32), b.astype(np.float32), factor, dim, ta, tb)
        np.testing.assert_array_equal(gf.numpy(), want)  # small integers: exact in float32 too


# ---- peers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", DIMS)
def test_against_torch(dim):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    a, b = _normal(rng, (3, 8, 12)), _normal(rng, (12, 4))
    np.testing.assert_allclose(serialized_matmul(a, b, 4, dim).numpy(),
                               torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy(),
                               rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, True)])
@pytest.mark.parametrize("dim", DIMS)
def test_against_tensorflow(real_tf, dim, ta, tb):
    tf = real_tf
    rng = np.random.default_rng(11)
    a = _normal(rng, (2, 12, 8) if ta else (2, 8, 12))
    b = _normal(rng, (4, 12) if tb else (12, 4))
    u = rng.standard_normal((2, 8, 4)).astype(np.float32)
    at, bt = tf.constant(a), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([at, bt])
        c = tf.matmul(at, bt, transpose_a=ta, transpose_b=tb)
    want = [c.numpy()] + [g.numpy() for g in tape.gradient(c, [at, bt], output_gradients=u)]
    got = serialized_matmul(a, b, 2, dim, ta, tb).numpy()
    grads = _grads(lambda x, y: serialized_matmul(x, y, 2, dim, ta, tb), a, b, u)
    for g, w in zip([got, *grads], want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)


def test_facade_exports_it():
    math_ops = pytest.importorskip("ipu_gpu.ipu.math_ops")
    assert math_ops.serialized_matmul is serialized_matmul


# ---- the GPU twin, with numpy standing in for cupy -----------------------------------------------
@pytest.fixture
def gpu_kernels(monkeypatch):
    return install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.serialized_matmul_gpu"])


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("dim", DIMS)
def test_gpu_twin_matches_cpu_twin(gpu_kernels, dim, ta, tb, dtype):
    gpu = gpu_kernels.serialized_matmul_gpu
    rng = np.random.default_rng(12)
    m, k, n = 6, 12, 12  # every factor below divides all three
    a = rng.integers(-3, 4, (2, 1, k, m) if ta else (2, 1, m, k)).astype(dtype)
    b = rng.integers(-3, 4, (3, n, k) if tb else (3, k, n)).astype(dtype)
    x, y = _op(a, ta), _op(b, tb)
    for f in (1, 2, 3):
        want = serialized_matmul_cpu.serialized_matmul(x, y, dim, f, np.empty((2, 3, m, n), dtype))
        got = gpu.serialized_matmul(x, y, dim, f, np.empty((2, 3, m, n), dtype))
        np.testing.assert_array_equal(got, want)
        # a gradient's batch reduction: sum over the broadcast axes, kept as 1
        want = serialized_matmul_cpu.serialized_matmul(x, y, dim, f, np.empty((1, 3, m, n), dtype),
                                                       (0,))
        got = gpu.serialized_matmul(x, y, dim, f, np.empty((1, 3, m, n), dtype), (0,))
        np.testing.assert_array_equal(got, want)


def test_gpu_twin_split_k_keeps_the_slice_order(gpu_kernels):
    gpu = gpu_kernels.serialized_matmul_gpu
    rng = np.random.default_rng(13)
    x, y = _normal(rng, (2, 9, 48)), _normal(rng, (48, 7))
    for f in (2, 3, 4, 8):
        want = serialized_matmul_cpu.serialized_matmul(x, y, "a_rows_b_columns", f,
                                                       np.empty((2, 9, 7), np.float32))
        got = gpu.serialized_matmul(x, y, "a_rows_b_columns", f, np.empty((2, 9, 7), np.float32))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, True)])
@pytest.mark.parametrize("dim", DIMS)
def test_gpu_twin_runs_the_op_forward_and_backward(gpu_kernels, dim, ta, tb):
    gpu = gpu_kernels.serialized_matmul_gpu
    rng = np.random.default_rng(14)
    a = _normal(rng, (2, 12, 6) if ta else (2, 6, 12))
    b = _normal(rng, (3, 1, 8, 12) if tb else (3, 1, 12, 8))
    static = {"serialization_factor": 2, "serialization_dimension": dim, "transpose_a": ta,
              "transpose_b": tb}
    outs = []
    for k in (serialized_matmul_cpu, gpu):
        c, res = sm_op._forward(k, np, a, b, **static)
        u = np.random.default_rng(15).standard_normal(c.shape).astype(np.float32)
        outs.append((c, *sm_op._backward(k, np, res, u, **static)))
    for want, got in zip(*outs):
        assert want.shape == got.shape and want.dtype == got.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


# ---- on a real GPU -------------------------------------------------------------------------------
def _api_on(xp, a, b, u, factor, dim, ta, tb):
    """Forward and (float) gradients through the public API with the arrays on ``xp``."""
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("cpu" if xp is np else "gpu")
    try:
        at, bt = ipu_gpu.constant(xp.asarray(a)), ipu_gpu.constant(xp.asarray(b))
        with ipu_gpu.GradientTape() as tape:
            tape.watch([at, bt])
            c = serialized_matmul(at, bt, factor, dim, ta, tb)
        assert isinstance(c._value, xp.ndarray)
        outs = [c]
        if a.dtype.kind == "f":
            outs += tape.gradient(c, [at, bt], output_gradients=ipu_gpu.constant(xp.asarray(u)))
        return [o.numpy() for o in outs]
    finally:
        ipu_gpu.set_backend(previous)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, True)])
@pytest.mark.parametrize("dim", DIMS)
def test_public_api_on_gpu_matches_cpu(dim, ta, tb, dtype):
    from conftest import require_gpu

    cupy = require_gpu()
    rng = np.random.default_rng(16)
    a = rng.integers(-3, 4, (2, 16, 8) if ta else (2, 8, 16)).astype(dtype)
    b = rng.integers(-3, 4, (3, 1, 12, 16) if tb else (3, 1, 16, 12)).astype(dtype)
    u = rng.integers(-2, 3, (3, 2, 8, 12)).astype(dtype)
    want = _api_on(np, a, b, u, 4, dim, ta, tb)
    got = _api_on(cupy, a, b, u, 4, dim, ta, tb)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)  # small integers: exact in every dtype
