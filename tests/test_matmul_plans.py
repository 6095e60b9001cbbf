"""kernels/matmul_cpu's plan cache: a repeated 2-D product of aligned operands used as they
are skips the operand, tile and kernel choice (``_PLANS``) and gives the same bits as the
first call and the tile-wise numpy reference; every other call takes the full path."""

from __future__ import annotations

import numpy as np
import pytest

from ipu_gpu.kernels import _matmul_tiles, matmul_cpu
from ipu_gpu.kernels._blas import single_threaded_blas

from test_matmul_determinism import _tilewise, _unaligned


@pytest.fixture
def plans(monkeypatch):
    fresh = {}
    monkeypatch.setattr(matmul_cpu, "_PLANS", fresh)
    return fresh


def _key(x, y):
    return (x.shape, x.strides, y.shape, y.strides, x.dtype, y.dtype)


def _spy_full_path(monkeypatch):
    """Counts calls of the full 2-D path (``_matmul_2d``)."""
    calls = []
    real = matmul_cpu._matmul_2d

    def spy(*args):
        calls.append(args[2:5])
        return real(*args)

    monkeypatch.setattr(matmul_cpu, "_matmul_2d", spy)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,transpose", [((256, 784, 512), (False, False)),
                                             ((784, 256, 512), (True, False)),
                                             ((256, 512, 784), (False, True)),
                                             ((256, 512, 10), (False, False)),
                                             ((2048, 512, 2048), (True, True))])  # 2 x 2 tiles
def test_repeated_product_takes_the_plan_with_the_same_bits(plans, monkeypatch, dtype, shape,
                                                            transpose):
    m, k, n = shape
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal((k, m) if transpose[0] else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if transpose[1] else (k, n)).astype(dtype)
    x = a.T if transpose[0] else a
    y = b.T if transpose[1] else b
    full = _spy_full_path(monkeypatch)
    first = matmul_cpu.matmul(x, y)
    assert full == [(m, k, n)] and _key(x, y) in plans
    again = matmul_cpu.matmul(x, y)
    other = matmul_cpu.matmul(x.copy(order="K"), y.copy(order="K"))  # same layout, new memory
    assert len(full) == 1  # both from the plan
    want = _tilewise(np.ascontiguousarray(x), np.ascontiguousarray(y))
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(again, want)
    np.testing.assert_array_equal(other, want)
    assert again.dtype == dtype and again.shape == (m, n) and again.flags.c_contiguous
    assert not np.shares_memory(again, first)
    with single_threaded_blas():  # the plan still runs the tiles on the calling thread
        np.testing.assert_array_equal(matmul_cpu.matmul(x, y), want)


def test_plan_runs_the_serial_loop_inside_a_section(plans, monkeypatch):
    a = np.random.default_rng(1).standard_normal((256, 784)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal((784, 512)).astype(np.float32)
    matmul_cpu.matmul(a, b)
    used = []
    shape, dtype, fields, serial, parallel = plans[_key(a, b)]
    assert parallel is not None and fields[6] * fields[7] >= 2  # two tiles at least
    assert serial is _matmul_tiles.gemm_plan_serial and parallel is _matmul_tiles.gemm_plan

    def spy(kernel, name):
        def run(*args):
            used.append(name)
            return kernel(*args)
        return run

    plans[_key(a, b)] = (shape, dtype, fields, spy(serial, "serial"), spy(parallel, "parallel"))
    free = matmul_cpu.matmul(a, b)
    with single_threaded_blas():
        inside = matmul_cpu.matmul(a, b)
    monkeypatch.setattr(matmul_cpu, "_serial_only", lambda: True)  # a forked child
    child = matmul_cpu.matmul(a, b)
    assert used == ["parallel", "serial", "serial"]
    np.testing.assert_array_equal(inside, free)
    np.testing.assert_array_equal(child, free)


def test_copied_unaligned_small_and_other_dtype_operands_make_no_plan(plans, monkeypatch):
    rng = np.random.default_rng(3)
    big = rng.standard_normal((600, 900)).astype(np.float32)
    w = rng.standard_normal((900, 700)).astype(np.float32)
    cases = [
        (big[::2, ::2], w[::2, :350]),  # no unit stride: copied
        (big[::-1, :400], w[:400, ::-1]),  # negative strides: copied
        (_unaligned(big[:300, :600])[:, :300], w[:300, :200]),  # unaligned, strided: copied
        (big[:8, :8], w[:8, :8]),  # below the tiling threshold: numpy.matmul
        (big[:300, :400].astype(np.float64), w[:400, :300]),  # mixed dtypes: numpy.matmul
        (big[:300, :400].astype(np.int64), w[:400, :300].astype(np.int64)),
        (big[None, :300, :400], w[:400, :300]),  # batched: the general path
    ]
    for x, y in cases:
        got = matmul_cpu.matmul(x, y)
        assert not plans
        if matmul_cpu.deterministic(x, y):
            want = _tilewise(np.ascontiguousarray(x), np.ascontiguousarray(y))
        else:
            want = np.matmul(x, y)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(matmul_cpu.matmul(x, y), want)
        assert got.dtype == want.dtype


def test_unaligned_operand_with_a_planned_layout_is_copied(plans):
    """(An unaligned C-contiguous operand goes to the kernel as it is, as before the plans:
    numpy's ascontiguousarray returns it unchanged.)"""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((200, 300)).astype(np.float64)
    b = rng.standard_normal((300, 200)).astype(np.float64)
    want = matmul_cpu.matmul(a, b)
    assert _key(a, b) in plans
    u = _unaligned(a)
    assert _key(u, b) == _key(a, b)
    np.testing.assert_array_equal(matmul_cpu.matmul(u, b), want)
    np.testing.assert_array_equal(matmul_cpu.matmul(a, _unaligned(b)), want)
    t = a.T.copy().T  # a's values in Fortran order
    want_t = matmul_cpu.matmul(t, b)
    np.testing.assert_array_equal(want_t, want)
    ut = _unaligned(a.T).T  # unaligned and transposed: copied, not the plan's transpose flag
    assert _key(ut, b) == _key(t, b)
    np.testing.assert_array_equal(matmul_cpu.matmul(ut, b), want)


def test_out_argument_and_bad_shapes_skip_the_plan(plans):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((256, 784)).astype(np.float32)
    b = rng.standard_normal((784, 512)).astype(np.float32)
    want = matmul_cpu.matmul(a, b)
    out = np.full((256, 512), np.nan, np.float32)
    assert matmul_cpu.matmul(a, b, out=out) is out
    np.testing.assert_array_equal(out, want)
    with pytest.raises(ValueError):
        matmul_cpu.matmul(a, b[:500])
    with pytest.raises(ValueError):
        matmul_cpu.matmul(a, b, out=np.empty((256, 511), np.float32))


def test_the_cache_is_bounded(plans, monkeypatch):
    monkeypatch.setattr(matmul_cpu, "_PLANS_MAX", 3)
    rng = np.random.default_rng(6)
    b = rng.standard_normal((300, 300)).astype(np.float32)
    for m in range(100, 108):
        a = rng.standard_normal((m, 300)).astype(np.float32)
        np.testing.assert_array_equal(matmul_cpu.matmul(a, b), _tilewise(a, b))
        assert 1 <= len(plans) <= 3
