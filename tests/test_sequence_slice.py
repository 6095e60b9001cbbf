"""Sequence slicing (ipu.slicing_ops: sequence_slice, sequence_slice_unpack,
sequence_slice_pack): Graphcore's documented examples and test cases, the float64 reference
on random entries (clipping, zero-length, undefined cases as we define them), Graphcore's
gradient rules, adjointness, the debug-mode value checks, the CPU kernel's paths and the GPU
twin through the CUDA emulator. The op-table rows (tests/opdb_sequence_slice.py) add the
generic forward/dtype/VJP/error checks."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emulator import compiler_available, install_fake_cupy
from hypothesis import given
from hypothesis import strategies as st
from reference import sequence_slice as ref

import ipu_gpu
from ipu_gpu.ipu import slicing_ops
from ipu_gpu.kernels import sequence_slice_cpu

I32 = np.int32
DOC_SRC = [[0, 0, 0, 0, 0, 0],
           [1, 1, 1, 1, 1, 1],
           [2, 2, 2, 2, 2, 2],
           [3, 3, 3, 3, 3, 3],
           [4, 4, 4, 4, 4, 4],
           [5, 5, 5, 5, 5, 5]]


def _i(*v):
    return np.asarray(v, I32)


def _grads(fn, dst, src, *rest, upstream):
    """(output, d/d dst, d/d src) through a GradientTape with ``upstream`` as cotangent."""
    d, s = ipu_gpu.constant(dst), ipu_gpu.constant(src)
    with ipu_gpu.GradientTape() as tape:
        tape.watch([d, s])
        out = fn(d, s, *rest)
    gd, gs = tape.gradient(out, [d, s], output_gradients=upstream)
    return out.numpy(), gd, None if gs is None else gs.numpy()


# ---- Graphcore's documented examples, verbatim ---------------------------------------------
def test_documented_sequence_slice_example():
    dst = ipu_gpu.zeros([6, 6])
    dst = slicing_ops.sequence_slice(dst, DOC_SRC, [2, 2], [2, 1], [0, 4], False)
    assert dst.dtype == np.float32 and tuple(dst.shape) == (6, 6)
    np.testing.assert_array_equal(dst.numpy(), [[2.] * 6, [3.] * 6, [0.] * 6, [0.] * 6,
                                                [1.] * 6, [2.] * 6])


def test_documented_sequence_slice_pack_example():
    src = [[2, 2, 2, 2, 2, 2],
           [3, 3, 3, 3, 3, 3],
           [1, 1, 1, 1, 1, 1],
           [2, 2, 2, 2, 2, 2]]
    dst = ipu_gpu.zeros([6, 6])
    dst = slicing_ops.sequence_slice_pack(dst, src, [2, 2], [2, 1],
                                          False)
    assert dst.dtype == np.float32
    np.testing.assert_array_equal(dst.numpy(), [[0.] * 6, [1.] * 6, [2.] * 6, [3.] * 6,
                                                [0.] * 6, [0.] * 6])


def test_documented_sequence_slice_unpack_example():
    want = [[2.] * 6, [3.] * 6, [1.] * 6, [2.] * 6]
    dst = slicing_ops.sequence_slice_unpack(np.asarray(DOC_SRC, np.float32), [2, 2], [2, 1], 4)
    assert dst.dtype == np.float32 and tuple(dst.shape) == (4, 6)
    np.testing.assert_array_equal(dst.numpy(), want)
    # the Python list itself is int32, as TF converts it
    dst = slicing_ops.sequence_slice_unpack(DOC_SRC, [2, 2], [2, 1], 4)
    assert dst.dtype == np.int32
    np.testing.assert_array_equal(dst.numpy(), want)


def test_documented_unpack_call_with_the_stray_argument_fails_as_in_graphcore():
    # the docs call sequence_slice_unpack(src, num_elems, src_offsets, False, total_elements)
    with pytest.raises(TypeError):
        slicing_ops.sequence_slice_unpack(DOC_SRC, [2, 2], [2, 1], False, 4)


def test_facade_names_and_signatures():
    import inspect

    assert slicing_ops.__all__ == ["sequence_slice", "sequence_slice_pack",
                                   "sequence_slice_unpack"]
    params = {n: list(inspect.signature(getattr(slicing_ops, n)).parameters)
              for n in slicing_ops.__all__}
    assert params == {
        "sequence_slice": ["dst", "src", "num_elems", "src_offsets", "dst_offsets",
                           "zero_unused"],
        "sequence_slice_pack": ["dst", "src", "num_elems", "dst_offsets", "zero_unused"],
        "sequence_slice_unpack": ["src", "num_elems", "src_offsets", "total_elements"]}


# ---- Graphcore's test cases (sequence_slice_test.py): parameters as data ---------------------
def _sequences(n, length, dtype):
    return np.repeat(np.arange(n, dtype=np.float64)[:, None], length, 1).astype(dtype)


GRAPHCORE_CASES = [
    (6, np.float16, (6, 6), [2, 2], [2, 1], [0, 4], False),
    (6, np.float32, (6, 6), [2, 2], [2, 1], [0, 4], False),
    (6, np.int32, (6, 6), [2, 2], [2, 1], [0, 4], False),
    (6, np.float16, (6, 6), [2, 2], [2, 1], [0, 4], True),
    (6, np.float32, (6, 6), [2, 2], [2, 1], [0, 4], True),
    (6, np.int32, (6, 6), [2, 2], [2, 1], [0, 4], True),
    (3, np.float16, (3, 3), [1, 1, 1], [0, 1, 2], [0, 1, 2], True),
    (3, np.float16, (9, 3), [1, 1, 1], [0, 1, 2], [1, 3, 5], True),
]


@pytest.mark.parametrize("case", GRAPHCORE_CASES, ids=[f"case{i + 1}" for i in range(8)])
def test_graphcore_cases(case):
    n_seq, dtype, out_shape, n, so, do, zero = case
    seq = _sequences(n_seq, n_seq, dtype)
    dst = np.zeros(out_shape, dtype)
    out = slicing_ops.sequence_slice(dst, seq, n, so, do, zero).numpy()
    for m, s, d in zip(n, so, do):
        np.testing.assert_array_equal(out[d:d + m], seq[s:s + m])
    np.testing.assert_array_equal(out, ref.sequence_slice(dst, seq, n, so, do, zero))
    unpacked = slicing_ops.sequence_slice_unpack(seq, n, so, sum(n)).numpy()
    np.testing.assert_array_equal(unpacked, np.concatenate([seq[s:s + m]
                                                            for m, s in zip(n, so)]))
    # pack is the inverse of unpack
    packed = slicing_ops.sequence_slice_pack(np.zeros_like(seq), unpacked, n, so, zero).numpy()
    for m, s in zip(n, so):
        np.testing.assert_array_equal(packed[s:s + m], seq[s:s + m])
    if dtype != np.int32:  # the backward passes run and give src-shaped gradients
        _, gd, gs = _grads(lambda d_, s_: slicing_ops.sequence_slice(d_, s_, n, so, do, zero),
                           dst, seq, upstream=np.ones(out_shape, dtype))
        assert gd is None and gs.shape == seq.shape and gs.dtype == dtype


# ---- against the float64 reference on random entries ----------------------------------------
@st.composite
def slice_cases(draw, max_rows=8):
    s_rows, d_rows = draw(st.integers(0, max_rows)), draw(st.integers(0, max_rows))
    inner = draw(st.sampled_from([(1,), (3,), (2, 2), (0,)]))
    k = draw(st.integers(1, 4))
    n = draw(st.lists(st.integers(-1, max_rows), min_size=k, max_size=k))
    so = draw(st.lists(st.integers(-1, max_rows + 1), min_size=k, max_size=k))
    do = draw(st.lists(st.integers(-1, max_rows + 1), min_size=k, max_size=k))
    zero = draw(st.booleans())
    return s_rows, d_rows, inner, _i(*n), _i(*so), _i(*do), zero


def _data(rows, inner, offset=0.0):
    return (np.arange(rows * int(np.prod(inner)), dtype=np.float32).reshape((rows,) + inner)
            + offset)


@given(slice_cases())
def test_sequence_slice_matches_reference(case):
    s_rows, d_rows, inner, n, so, do, zero = case
    src, dst = _data(s_rows, inner), _data(d_rows, inner, 1000.0)
    out = slicing_ops.sequence_slice(dst, src, n, so, do, zero)
    assert out.dtype == np.float32 and tuple(out.shape) == dst.shape
    np.testing.assert_array_equal(out.numpy(), ref.sequence_slice(dst, src, n, so, do, zero))
    packed = slicing_ops.sequence_slice_pack(dst, src, n, do, zero).numpy()
    np.testing.assert_array_equal(packed, ref.sequence_slice_pack(dst, src, n, do, zero))


@given(slice_cases(), st.integers(0, 10))
def test_sequence_slice_unpack_matches_reference(case, total):
    s_rows, _, inner, n, so, _, _ = case
    src = _data(s_rows, inner)
    out = slicing_ops.sequence_slice_unpack(src, n, so, total)
    assert tuple(out.shape) == (total,) + inner
    np.testing.assert_array_equal(out.numpy(), ref.sequence_slice_unpack(src, n, so, total))


def test_unpack_rows_past_the_data_are_zero():
    src = np.full((4, 3), 7.0, np.float32)
    out = slicing_ops.sequence_slice_unpack(src, [1, 2], [3, 0], 6).numpy()
    np.testing.assert_array_equal(out[:3], 7.0)
    np.testing.assert_array_equal(out[3:], 0.0)
    assert not np.signbit(out[3:]).any()


def test_clipping_and_zero_length_entries():
    src, dst = _data(5, (2,)), _data(4, (2,), 100.0)
    # 3 rows from src row 3 (2 exist) to dst row 1; 4 rows to dst row 2 (2 fit); a 0-count
    # entry; an entry at the end of src; an entry at the end of dst
    n, so, do = _i(3, 4, 0, 2, 2), _i(3, 0, 1, 5, 0), _i(1, 2, 0, 0, 4)
    out = slicing_ops.sequence_slice(dst, src, n, so, do, False).numpy()
    want = dst.copy()
    want[1:3] = src[3:5]
    want[2:4] = src[0:2]
    np.testing.assert_array_equal(out, want)


def test_undefined_cases_as_we_define_them():
    src, dst = _data(4, (2,)), _data(4, (2,), 100.0)
    # a negative count, a negative offset, an offset past the end: each copies nothing
    for n, so, do in ((_i(-1), _i(0), _i(0)), (_i(2), _i(-1), _i(0)), (_i(2), _i(0), _i(-2)),
                      (_i(2), _i(5), _i(0)), (_i(2), _i(0), _i(9))):
        out = slicing_ops.sequence_slice(dst, src, n, so, do, False).numpy()
        np.testing.assert_array_equal(out, dst)
    # overlapping destination rows: the later entry wins
    out = slicing_ops.sequence_slice(dst, src, [3, 2], [0, 2], [0, 1], True).numpy()
    np.testing.assert_array_equal(out, [src[0], src[2], src[3], [0, 0]])


def test_inputs_are_not_modified_and_copies_are_bitwise():
    bits = np.asarray([0x7E01, 0x8000, 0xFC00, 0x0001, 0x7BFF, 0xFE33], np.uint16)
    src = bits.view(np.float16).reshape(3, 2)  # a NaN payload, -0, -inf, subnormal, max
    dst = np.ones((3, 2), np.float16)
    keep_src, keep_dst = src.copy(), dst.copy()
    out = slicing_ops.sequence_slice(dst, src, [3], [0], [0], False).numpy()
    np.testing.assert_array_equal(out.view(np.uint16), src.view(np.uint16))
    np.testing.assert_array_equal(src.view(np.uint16), keep_src.view(np.uint16))
    np.testing.assert_array_equal(dst, keep_dst)
    ints = np.asarray([[np.iinfo(I32).min, np.iinfo(I32).max]], I32)
    np.testing.assert_array_equal(slicing_ops.sequence_slice_unpack(ints, [1], [0], 1).numpy(),
                                  ints)


def test_python_list_follows_the_other_operand():
    src = np.asarray([[1.5, 2.5]], np.float64)
    out = slicing_ops.sequence_slice([[0, 0], [0, 0]], src, [1], [0], [1], False)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.numpy(), [[0, 0], [1.5, 2.5]])
    with pytest.raises(TypeError, match="^sequence_slice: src must be convertible to int32"):
        slicing_ops.sequence_slice(np.zeros((2, 2), I32), [[1.5, 2.5]], [1], [0], [0], True)


def test_tensors_and_variables_as_inputs():
    src = ipu_gpu.Variable(_data(3, (2,)))
    with ipu_gpu.GradientTape() as tape:
        out = slicing_ops.sequence_slice_unpack(src, ipu_gpu.constant(_i(2)),
                                                ipu_gpu.constant(_i(1)), 2)
        loss = ipu_gpu.reduce_sum(out)
    np.testing.assert_array_equal(tape.gradient(loss, src).numpy(), [[0, 0], [1, 1], [1, 1]])


# ---- gradients: Graphcore's rules --------------------------------------------------------------
def test_slice_gradient_with_zero_unused_false_keeps_forward_src_values():
    src, dst = _data(6, (2,)), _data(5, (2,), 100.0)
    n, so, do = _i(2, 1), _i(1, 1), _i(0, 3)  # src row 1 read twice, rows 0, 3-5 unread
    g = np.arange(10, dtype=np.float32).reshape(5, 2) * 10 + 5
    _, gd, gs = _grads(lambda d, s: slicing_ops.sequence_slice(d, s, n, so, do, False),
                       dst, src, upstream=g)
    assert gd is None
    np.testing.assert_array_equal(gs, ref.sequence_slice_grad(src, g, n, so, do, False))
    np.testing.assert_array_equal(gs[[0, 3, 4, 5]], src[[0, 3, 4, 5]])  # the quirk
    np.testing.assert_array_equal(gs[1], g[3])  # the later read, not g[0] + g[3]
    np.testing.assert_array_equal(gs[2], g[1])


def test_slice_gradient_with_zero_unused_true_is_zero_on_unread_rows():
    src, dst = _data(6, (2,)), _data(5, (2,), 100.0)
    n, so, do = _i(2, 1), _i(1, 1), _i(0, 3)
    g = np.arange(10, dtype=np.float32).reshape(5, 2) + 1
    _, gd, gs = _grads(lambda d, s: slicing_ops.sequence_slice(d, s, n, so, do, True),
                       dst, src, upstream=g)
    assert gd is None
    np.testing.assert_array_equal(gs, ref.sequence_slice_grad(src, g, n, so, do, True))
    np.testing.assert_array_equal(gs[[0, 3, 4, 5]], 0)


@pytest.mark.parametrize("zero", [False, True])
def test_pack_gradient(zero):
    src, dst = _data(5, (3,)), _data(6, (3,), 100.0)
    n, do = _i(2, 1, 1), _i(3, 0, 3)  # src row 4 unread; dst row 3 written twice
    g = np.arange(18, dtype=np.float32).reshape(6, 3) + 1
    _, gd, gs = _grads(lambda d, s: slicing_ops.sequence_slice_pack(d, s, n, do, zero),
                       dst, src, upstream=g)
    assert gd is None
    np.testing.assert_array_equal(gs, ref.sequence_slice_pack_grad(src, g, n, do, zero))
    np.testing.assert_array_equal(gs[4], 0 if zero else src[4])


def test_unpack_gradient_fills_unread_rows_with_zeros():
    src = _data(6, (2,), 1.0)
    n, so = _i(2, 2), _i(2, 1)  # the documented example: src row 2 read twice
    s = ipu_gpu.constant(src)
    g = np.arange(8, dtype=np.float32).reshape(4, 2) + 1
    with ipu_gpu.GradientTape() as tape:
        tape.watch(s)
        out = slicing_ops.sequence_slice_unpack(s, n, so, 4)
    gs = tape.gradient(out, s, output_gradients=g).numpy()
    np.testing.assert_array_equal(gs, ref.sequence_slice_unpack_grad(src, g, n, so))
    np.testing.assert_array_equal(gs[[0, 4, 5]], 0)
    np.testing.assert_array_equal(gs[2], g[3])  # the later read wins


def test_no_second_derivatives():
    x = ipu_gpu.constant(_data(3, (2,)))
    with ipu_gpu.GradientTape() as outer:
        outer.watch(x)
        with ipu_gpu.GradientTape() as inner:
            inner.watch(x)
            y = ipu_gpu.reduce_sum(ipu_gpu.square(slicing_ops.sequence_slice_unpack(x, [2], [0],
                                                                                  2)))
        with pytest.raises(LookupError, match="sequence_slice_unpack: its gradient is not "
                                              "differentiable"):
            inner.gradient(y, x)


# ---- adjointness (where Graphcore's rule is the adjoint) ---------------------------------------
@st.composite
def disjoint_entries(draw, max_rows=10):
    """Entries reading disjoint source ranges (some empty), in random order."""
    rows = draw(st.integers(1, max_rows))
    cuts = sorted(draw(st.lists(st.integers(0, rows), min_size=1, max_size=5)))
    bounds = [0, *cuts, rows]
    segments = [(bounds[j], bounds[j + 1] - bounds[j]) for j in range(len(bounds) - 1)]
    order = draw(st.permutations(range(len(segments))))
    last = len(segments) - 1  # the one ending at the last row: it may ask for more (clipped)
    so = _i(*(segments[j][0] for j in order))
    n = _i(*(segments[j][1] + (draw(st.integers(0, 2)) if j == last else 0) for j in order))
    return rows, n, so


@given(disjoint_entries(), st.integers(0, 12), st.integers(0, 2**31 - 1))
def test_unpack_and_pack_are_adjoint(entries, total, seed):
    rows, n, so = entries
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((rows, 3)), rng.standard_normal((total, 3))
    ux = slicing_ops.sequence_slice_unpack(x, n, so, total).numpy()
    py = slicing_ops.sequence_slice_pack(np.zeros_like(x), y, n, so, True).numpy()
    assert np.vdot(ux, y) == pytest.approx(np.vdot(x, py), rel=1e-12, abs=1e-12)
    # and the tape's gradient of unpack is that adjoint
    xt = ipu_gpu.constant(x)
    with ipu_gpu.GradientTape() as tape:
        tape.watch(xt)
        out = slicing_ops.sequence_slice_unpack(xt, n, so, total)
    np.testing.assert_array_equal(tape.gradient(out, xt, output_gradients=y).numpy(), py)


@given(disjoint_entries(), st.integers(0, 2**31 - 1), st.data())
def test_sequence_slice_is_adjoint_to_the_swapped_slice(entries, seed, data):
    rows, n, so = entries
    d_rows = data.draw(st.integers(0, 12))
    # destination ranges disjoint too: consecutive blocks in a random order with gaps
    gaps = data.draw(st.lists(st.integers(0, 2), min_size=len(n), max_size=len(n)))
    order = data.draw(st.permutations(range(len(n))))
    do, at = np.zeros(len(n), I32), 0
    for j in order:
        do[j] = at + gaps[j]
        at = int(do[j]) + max(int(n[j]), 0)
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((rows, 2)), rng.standard_normal((d_rows, 2))
    sx = slicing_ops.sequence_slice(np.zeros((d_rows, 2)), x, n, so, do, True).numpy()
    ty = slicing_ops.sequence_slice(np.zeros((rows, 2)), y, n, do, so, True).numpy()
    assert np.vdot(sx, y) == pytest.approx(np.vdot(x, ty), rel=1e-12, abs=1e-12)


# ---- debug mode: what the IPU leaves undefined raises -----------------------------------------
@pytest.mark.parametrize(("call", "match"), [
    (lambda: slicing_ops.sequence_slice(np.zeros((3, 2)), np.zeros((4, 2)), [-1], [0], [0],
                                        True),
     r"^sequence_slice: num_elems must be >= 0 \(undefined on the IPU\), got -1 at position 0"),
    (lambda: slicing_ops.sequence_slice(np.zeros((3, 2)), np.zeros((4, 2)), [1, 1], [0, 5],
                                        [0, 0], True),
     (r"^sequence_slice: src_offsets must be in \[0, 4\] \(undefined on the IPU\), got 5 at "
      r"position 1")),
    (lambda: slicing_ops.sequence_slice(np.zeros((3, 2)), np.zeros((4, 2)), [1], [0], [-1],
                                        True),
     r"^sequence_slice: dst_offsets must be in \[0, 3\]"),
    (lambda: slicing_ops.sequence_slice_unpack(np.zeros((4, 2)), [1], [-3], 1),
     r"^sequence_slice_unpack: src_offsets must be in \[0, 4\]"),
    (lambda: slicing_ops.sequence_slice_pack(np.zeros((3, 2)), np.zeros((4, 2)), [1], [4],
                                             True),
     r"^sequence_slice_pack: dst_offsets must be in \[0, 3\]"),
    (lambda: slicing_ops.sequence_slice_pack(np.zeros((3, 2)), np.zeros((4, 2)), [2, -2],
                                             [0, 0], True),
     r"^sequence_slice_pack: num_elems must be >= 0"),
])
def test_debug_mode_rejects_undefined_values(monkeypatch, call, match):
    call()  # defined by us without the switch
    monkeypatch.setenv("IPU_GPU_DEBUG", "1")
    with pytest.raises(ValueError, match=match):
        call()


def test_debug_mode_accepts_offsets_at_the_end(monkeypatch):
    monkeypatch.setenv("IPU_GPU_DEBUG", "1")
    out = slicing_ops.sequence_slice(np.ones((3, 2)), np.zeros((4, 2)), [2, 0], [4, 0], [3, 1],
                                     False)
    np.testing.assert_array_equal(out.numpy(), 1)


# ---- errors not in the op table --------------------------------------------------------------
def test_graphcore_error_messages_match_graphcores_tests():
    seq = _sequences(3, 3, np.float16)
    with pytest.raises(ValueError, match="num_elems, src_offsets and dst_offsets must have "):
        slicing_ops.sequence_slice(np.zeros((3, 3), np.float16), seq, [0, 1], [0], [0, 1],
                                   False)
    with pytest.raises(ValueError, match="num_elems and src_offsets must have matching"):
        slicing_ops.sequence_slice_unpack(seq, [0, 1], [0], 0)
    with pytest.raises(ValueError, match="num_elems and dst_offsets must have matching"):
        slicing_ops.sequence_slice_pack(np.zeros((3, 3), np.float16), seq, [0], [0, 1], False)
    with pytest.raises(ValueError, match="src and dst inner shapes must match."):
        slicing_ops.sequence_slice(np.zeros((3, 2), np.float16), seq, [0, 1], [0, 1], [0, 1],
                                   False)
    with pytest.raises(ValueError, match="src and dst inner shapes must match."):
        slicing_ops.sequence_slice_pack(np.zeros((3, 2), np.float16), seq, [0, 1], [0, 1],
                                        False)


def test_rank_and_dtype_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"^sequence_slice: src must have rank >= 2 \(rows "
                                         r"first\), got shape \[4\]"):
        slicing_ops.sequence_slice(np.zeros((3, 2)), np.zeros(4), [1], [0], [0], True)
    with pytest.raises(TypeError, match=r"^sequence_slice_pack: dst must be float16, float32, "
                                        r"float64 or int32, got bool"):
        slicing_ops.sequence_slice_pack(np.zeros((3, 2), bool), np.zeros((4, 2), bool), [1],
                                        [0], True)
    with pytest.raises(TypeError, match=r"^sequence_slice_pack: num_elems must be int32"):
        slicing_ops.sequence_slice_pack(np.zeros((3, 2)), np.zeros((4, 2)), [1.0], [0], True)


# ---- the CPU kernel's paths ----------------------------------------------------------------------
def _kernel_case(rng, dtype, s_rows=40, d_rows=50, inner=6, k=7):
    src = rng.standard_normal((s_rows, inner)).astype(dtype)
    fill = rng.standard_normal((d_rows, inner)).astype(dtype)
    n = rng.integers(-1, 12, k).astype(I32)
    so = rng.integers(-1, s_rows + 2, k).astype(I32)
    do = rng.integers(-1, d_rows + 2, k).astype(I32)
    return src, fill, n, so, do


def _expected(fill, src, n, so, do):
    out = np.zeros_like(fill) if fill is None else fill.copy()
    return ref._copy_entries(out, src, n, so, do)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_cpu_kernel_parallel_and_serial_paths_agree(monkeypatch, dtype):
    rng = np.random.default_rng(5)
    src, fill, n, so, do = _kernel_case(rng, dtype)
    for zero in (False, True):
        want = _expected(np.zeros_like(fill) if zero else fill, src, n, so, do)
        serial = sequence_slice_cpu.sequence_slice_copy(np.empty_like(fill),
                                                        None if zero else fill, src, n, so, do)
        monkeypatch.setattr(sequence_slice_cpu, "PARALLEL_MIN_BYTES", 0)
        parallel = sequence_slice_cpu.sequence_slice_copy(np.empty_like(fill),
                                                          None if zero else fill, src, n, so, do)
        monkeypatch.undo()
        np.testing.assert_array_equal(serial.view(np.uint8), want.view(np.uint8))
        np.testing.assert_array_equal(parallel.view(np.uint8), want.view(np.uint8))


def test_cpu_kernel_above_the_threshold():
    rng = np.random.default_rng(6)
    rows = sequence_slice_cpu.PARALLEL_MIN_BYTES // (64 * 4) + 3
    src = rng.standard_normal((rows, 64)).astype(np.float32)
    n, so, do = _i(rows // 2, rows), _i(rows // 2, 0), _i(0, rows // 3)
    got = slicing_ops.sequence_slice(np.zeros_like(src), src, n, so, do, True).numpy()
    np.testing.assert_array_equal(got, _expected(np.zeros_like(src), src, n, so, do))


@pytest.mark.parametrize("inner", [1, 3, 4])
def test_cpu_kernel_word_views_of_misaligned_float16(inner):
    # views starting one float16 into a buffer: rows move as 2-byte words, never wider
    rng = np.random.default_rng(7)
    base = rng.standard_normal(6 * inner + 1).astype(np.float16)
    src = base[1:].reshape(6, inner)
    out_base = np.zeros(5 * inner + 1, np.float16)
    out = out_base[1:].reshape(5, inner)
    assert src.ctypes.data % 4 == 2
    assert sequence_slice_cpu._word_views(out, out, src)[0].dtype == np.uint16
    sequence_slice_cpu.sequence_slice_copy(out, None, src, _i(3, 2), _i(1, 4), _i(0, 3))
    np.testing.assert_array_equal(out, _expected(np.zeros((5, inner), np.float16), src,
                                                 _i(3, 2), _i(1, 4), _i(0, 3)))
    assert out_base[0] == 0


def test_cpu_kernel_word_width():
    a = np.zeros((3, 4), np.float16)  # 8-byte rows: moved as uint64
    assert sequence_slice_cpu._word_views(a, a, a)[0].dtype == np.uint64
    b = np.zeros((3, 3), np.float32)  # 12-byte rows: uint32
    assert sequence_slice_cpu._word_views(b, b, b)[0].dtype == np.uint32


# ---- the GPU twin, through the CUDA emulator ----------------------------------------------------
needs_gxx = pytest.mark.skipif(not compiler_available(), reason="no g++ for the CUDA emulator")


@pytest.fixture
def gpu_kernel(monkeypatch):
    ns = install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.sequence_slice_gpu"])
    k = ns.sequence_slice_gpu
    # small blocks and grids: fast OS-thread emulation, and the grid-stride loops iterate
    monkeypatch.setattr(k, "THREADS", 16)
    monkeypatch.setattr(k, "MAX_BLOCKS", 3)
    return k


@needs_gxx
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_gpu_twin_matches_cpu_twin(gpu_kernel, dtype):
    rng = np.random.default_rng(11)
    for inner, zero in ((3, False), (4, True), (1, True)):
        src, fill, n, so, do = _kernel_case(rng, dtype, s_rows=9, d_rows=11, inner=inner, k=4)
        fill_arg = None if zero else fill
        want = sequence_slice_cpu.sequence_slice_copy(np.empty_like(fill), fill_arg, src, n,
                                                      so, do)
        got = gpu_kernel.sequence_slice_copy(np.empty_like(fill), fill_arg, src, n, so, do)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@needs_gxx
def test_gpu_twin_overlaps_clipping_and_empty(gpu_kernel):
    src = np.arange(12, dtype=np.float32).reshape(6, 2)
    fill = np.full((5, 2), -1.0, np.float32)
    n, so, do = _i(3, 2, 0, -1, 4), _i(0, 4, 1, 0, 5), _i(0, 1, 4, 3, 4)  # later entry wins
    got = gpu_kernel.sequence_slice_copy(np.empty_like(fill), fill, src, n, so, do)
    np.testing.assert_array_equal(got, _expected(fill, src, n, so, do))
    np.testing.assert_array_equal(got[1:3], src[4:6])
    empty = np.empty((0, 2), np.float32)
    assert gpu_kernel.sequence_slice_copy(empty, None, src, n, so, do) is empty
    got = gpu_kernel.sequence_slice_copy(np.empty((3, 2), np.float32), None,
                                         np.empty((0, 2), np.float32), _i(2), _i(0), _i(0))
    np.testing.assert_array_equal(got, 0)


@needs_gxx
def test_gpu_twin_misaligned_float16(gpu_kernel):
    base = np.arange(19, dtype=np.float16)
    src = base[1:].reshape(6, 3)
    assert gpu_kernel._word_views(src, src, src)[0] == "u16"
    got = gpu_kernel.sequence_slice_copy(np.empty((4, 3), np.float16), None, src, _i(2, 2),
                                         _i(4, 0), _i(0, 2))
    np.testing.assert_array_equal(got, np.concatenate([src[4:6], src[0:2]]))


# ---- peers -----------------------------------------------------------------------------------
def test_matches_torch_index_copy():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    src = rng.standard_normal((20, 5)).astype(np.float32)
    n, so, do = _i(4, 3, 6), _i(10, 0, 14), _i(0, 9, 4)  # disjoint destination rows
    src_rows = np.concatenate([np.arange(s, s + m) for m, s in zip(n, so)])
    dst_rows = np.concatenate([np.arange(d, d + m) for m, d in zip(n, do)])
    want = torch.zeros(16, 5).index_copy_(0, torch.from_numpy(dst_rows),
                                          torch.from_numpy(src).index_select(
                                              0, torch.from_numpy(src_rows)))
    got = slicing_ops.sequence_slice(np.zeros((16, 5), np.float32), src, n, so, do, True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    unpacked = slicing_ops.sequence_slice_unpack(src, n, so, int(n.sum()))
    np.testing.assert_array_equal(unpacked.numpy(),
                                  torch.from_numpy(src)[torch.from_numpy(src_rows)].numpy())


# ---- on a GPU (skipped without one) ---------------------------------------------------------
@pytest.mark.gpu
def test_gpu_public_api_matches_cpu():
    from conftest import require_gpu

    cupy = require_gpu()
    rng = np.random.default_rng(13)
    for dtype in (np.float16, np.float32, np.float64, np.int32):
        src, fill, n, so, do = _kernel_case(rng, dtype, s_rows=300, d_rows=257, inner=33, k=9)
        for zero in (False, True):
            cpu = slicing_ops.sequence_slice(fill, src, n, so, do, zero)
            gpu = slicing_ops.sequence_slice(cupy.asarray(fill), cupy.asarray(src),
                                             cupy.asarray(n), cupy.asarray(so),
                                             cupy.asarray(do), zero)
            assert gpu.dtype == cpu.dtype and isinstance(gpu._value, cupy.ndarray)
            np.testing.assert_array_equal(gpu._value.get().view(np.uint8),
                                          cpu.numpy().view(np.uint8))
        cpu = slicing_ops.sequence_slice_unpack(src, n, so, 100).numpy()
        gpu = slicing_ops.sequence_slice_unpack(cupy.asarray(src), cupy.asarray(n),
                                                cupy.asarray(so), 100)._value.get()
        np.testing.assert_array_equal(gpu.view(np.uint8), cpu.view(np.uint8))
    # gradients on the device follow the same rules
    src = rng.standard_normal((50, 8))
    g = rng.standard_normal((40, 8))
    n, so, do = _i(10, 10, 5), _i(0, 5, 30), _i(0, 20, 35)
    want = ref.sequence_slice_grad(src, g, n, so, do, False)
    s = ipu_gpu.constant(cupy.asarray(src))
    with ipu_gpu.GradientTape() as tape:
        tape.watch(s)
        out = slicing_ops.sequence_slice(cupy.zeros((40, 8)), s, cupy.asarray(n),
                                         cupy.asarray(so), cupy.asarray(do), False)
    got = tape.gradient(out, s, output_gradients=cupy.asarray(g))
    np.testing.assert_array_equal(got._value.get(), want)


@needs_gxx
def test_gpu_twin_clips_extreme_counts_and_offsets(gpu_kernel):
    # any count or offset is clipped on the device, as on the CPU: nothing written outside out
    big, small = 2**31 - 1, -(2**31)
    entries = [(big, 0, 0), (big, 5, 3), (big, big, 0), (big, 0, big), (4, 6, 0), (4, 0, 5),
               (4, 7, 2), (-1, 0, 0), (small, 0, 0), (2, -1, 0), (2, 0, -1), (2, small, 1),
               (2, 1, small), (big, small, small), (1, 2, 4)]
    src = np.arange(12, dtype=np.float32).reshape(6, 2)
    fill = np.full((5, 2), -1.0, np.float32)
    for n, so, do in [tuple(_i(v) for v in e) for e in entries] + [
            tuple(_i(*col) for col in zip(*entries))]:
        guard = np.full((7, 2), 99.0, np.float32)  # rows 0 and 6 fence the output
        got = gpu_kernel.sequence_slice_copy(guard[1:6], fill, src, n, so, do)
        want = sequence_slice_cpu.sequence_slice_copy(np.empty_like(fill), fill, src, n, so, do)
        np.testing.assert_array_equal(got, want)
        assert (guard[[0, 6]] == 99.0).all()


@needs_gxx
def test_gpu_twin_rejects_what_its_raw_kernels_would_misread(gpu_kernel):
    src, out, i = np.zeros((6, 3), np.float32), np.zeros((5, 3), np.float32), _i(1, 2)
    with pytest.raises(ValueError, match="sequence_slice_copy: out \\(and fill\\) must be"):
        gpu_kernel.sequence_slice_copy(out, np.zeros((4, 3), np.float32), src, i, i, i)
    with pytest.raises(ValueError, match="must be 1-D of one length"):
        gpu_kernel.sequence_slice_copy(out, None, src, i, i[:1], i)
    with pytest.raises(TypeError, match="sequence_slice_copy: num_elems must be int32"):
        gpu_kernel.sequence_slice_copy(out, None, src, i.astype(np.int64), i, i)
    with pytest.raises(TypeError, match="sequence_slice_copy: src must have out's dtype"):
        gpu_kernel.sequence_slice_copy(out, None, src.astype(np.float64), i, i, i)
    with pytest.raises(ValueError, match="sequence_slice_copy: src must be C-contiguous"):
        gpu_kernel.sequence_slice_copy(out, None, np.zeros((3, 6), np.float32).T, i, i, i)
    with pytest.raises(ValueError, match="sequence_slice_copy: src_offsets must be C-contiguous"):
        gpu_kernel.sequence_slice_copy(out, None, src, i, _i(1, 0, 2, 0)[::2], i)
    # no entries at all: every row is the fill's (the CPU twin's answer)
    fill = np.full((5, 3), 7.0, np.float32)
    none = np.zeros(0, np.int32)
    got = gpu_kernel.sequence_slice_copy(np.empty_like(fill), fill, src, none, none, none)
    np.testing.assert_array_equal(got, fill)
