"""kernels/ordered_add_cpu.add_in_order: ((out + p1) + p2) + ... bit for bit as whole-array
np.add calls in that order, for any thread count, chunk size and ragged last chunk, in
float32, float64, float16 and int32 (wrapping), with inf/NaN/-0.0 passed through as np.add
does; the small-output path and the threaded chunked path alike."""

from __future__ import annotations

import numpy as np
import pytest

from ipu_gpu.kernels import ordered_add_cpu


def _reference(out, addends):
    want = out.copy()
    for p in addends:
        want = want + p  # whole-array adds, left to right
    return want


def _arrays(rng, shape, dtype, count):
    if np.dtype(dtype).kind == "i":
        info = np.iinfo(dtype)
        draw = [rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
                for _ in range(count + 1)]
    else:
        # spread exponents so the order of the additions shows in the bits
        draw = [(rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
                for _ in range(count + 1)]
    return draw[0], draw[1:]


@pytest.fixture
def small_chunks(monkeypatch):
    """Threaded chunked path for small arrays: chunks of 40 elements' bytes (a ragged tail)."""
    monkeypatch.setattr(ordered_add_cpu, "THREADED_MIN_BYTES", 0)
    monkeypatch.setattr(ordered_add_cpu, "CHUNK_BYTES", 160)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32])
@pytest.mark.parametrize("count", [1, 2, 3, 5])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_chunked_threaded_add_is_numpys_ordered_add_bitwise(small_chunks, dtype, count,
                                                             threads):
    rng = np.random.default_rng(count * 10 + threads)
    out, addends = _arrays(rng, (3, 37, 29), dtype, count)  # 3219 elements: ragged chunks
    want = _reference(out, addends)
    assert ordered_add_cpu.add_in_order(out, addends, threads=threads) is out
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


def test_order_is_visible_and_kept(small_chunks):
    """(1 + 2**-24) + 2**-24 rounds twice to 1 in float32; 1 + (2**-24 + 2**-24) would not."""
    out = np.ones(1000, np.float32)
    eps = np.full(1000, 2.0 ** -24, np.float32)
    ordered_add_cpu.add_in_order(out, [eps, eps], threads=2)
    assert np.all(out == 1.0)
    assert np.all(np.float32(1.0) + (eps + eps) != 1.0)


def test_specials_pass_through_as_np_add(small_chunks):
    out = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0, 1.0] * 50, np.float32)
    p1 = np.array([-np.inf, 1.0, 1.0, -0.0, -0.0, np.nan] * 50, np.float32)
    p2 = np.array([1.0, np.inf, 2.0, -0.0, 0.0, 3.0] * 50, np.float32)
    with np.errstate(invalid="ignore"):
        want = _reference(out, [p1, p2])
        ordered_add_cpu.add_in_order(out, [p1, p2], threads=2)
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


def test_pool_threads_take_the_callers_error_state(small_chunks):
    """inf - inf warns (or raises) in every thread as np.errstate says in the caller."""
    out = np.full(400, np.inf, np.float32)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        ordered_add_cpu.add_in_order(out, [np.full(400, -np.inf, np.float32)], threads=2)
    out = np.full(400, np.inf, np.float32)
    with np.errstate(invalid="ignore"):
        ordered_add_cpu.add_in_order(out, [np.full(400, -np.inf, np.float32)], threads=2)
    assert np.isnan(out).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_default_sizes_threaded_path(threads):
    """A real 4 MiB output: CHUNK_BYTES chunks (ragged tail) over the default pool."""
    rng = np.random.default_rng(3)
    n = ordered_add_cpu.THREADED_MIN_BYTES // 4 + 12345
    out, addends = _arrays(rng, (n,), np.float32, 3)
    want = _reference(out, addends)
    ordered_add_cpu.add_in_order(out, addends, threads=threads)
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


def test_nothing_to_add_and_empty():
    out = np.arange(6, dtype=np.float32)
    assert ordered_add_cpu.add_in_order(out, []) is out
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32))
    empty = np.empty((0, 4), np.float32)
    assert ordered_add_cpu.add_in_order(empty, [np.empty((0, 4), np.float32)]) is empty


def test_work_errors_reach_the_caller(small_chunks, monkeypatch):
    """An exception in a pool thread is raised in the caller, after all threads finished."""
    out = np.zeros(400, np.float32)
    calls = []
    real_add = np.add

    def failing_add(a, b, out=None):
        calls.append(1)
        if len(calls) == 3:
            raise FloatingPointError("boom")
        return real_add(a, b, out=out)

    monkeypatch.setattr(ordered_add_cpu.np, "add", failing_add)
    with pytest.raises(FloatingPointError, match="boom"):
        ordered_add_cpu.add_in_order(out, [np.ones(400, np.float32)], threads=2)
