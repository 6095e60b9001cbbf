"""The CPU kernel modules directly: contracts, determinism, thread safety."""

import threading

import numpy as np
import pytest
from reference import sequence_slice as rseq

from ipu_gpu.kernels import indexing_cpu, softmax_cpu


def _run_in_threads(work, n=4):
    """Run ``work`` in ``n`` threads at once; re-raise the first failure."""
    errors = []

    def guarded():
        try:
            work()
        except Exception as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    threads = [threading.Thread(target=guarded) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_threading_layer_is_thread_safe(monkeypatch):
    import numba

    monkeypatch.setattr(indexing_cpu, "PARALLEL_MIN_ELEMENTS", 0)
    out = np.zeros((4, 3), np.float32)
    indexing_cpu.scatter_add_rows(np.ones((8, 3), np.float32), np.arange(8) % 4, out)
    assert numba.threading_layer() in ("omp", "tbb")


@pytest.fixture(params=["serial", "parallel"])
def scatter_path(request, monkeypatch):
    """Run scatter_add_rows on its serial and its parallel path."""
    if request.param == "parallel":
        monkeypatch.setattr(indexing_cpu, "PARALLEL_MIN_ELEMENTS", 0)
    return request.param


def test_scatter_add_rows_accumulates_duplicates_deterministically(scatter_path):
    rng = np.random.default_rng(0)
    grad = rng.normal(size=(500, 7)).astype(np.float32)
    ids = rng.integers(0, 11, 500).astype(np.int32)
    expected = np.zeros((11, 7), np.float64)
    np.add.at(expected, ids, grad.astype(np.float64))
    first = indexing_cpu.scatter_add_rows(grad, ids, np.zeros((11, 7), np.float32))
    np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-5)
    for _ in range(3):
        again = indexing_cpu.scatter_add_rows(grad, ids, np.zeros((11, 7), np.float32))
        assert np.array_equal(first, again)  # bitwise: a fixed summation order


def test_gather_rows_names_the_bad_id():
    params = np.arange(12, dtype=np.float32).reshape(4, 3)
    with pytest.raises(ValueError, match="gather: indices must be in \\[0, 4\\), got 4"):
        indexing_cpu.gather_rows(params, np.array([0, 4], np.int32), np.empty((2, 3), np.float32))
    with pytest.raises(ValueError, match="got -1"):
        indexing_cpu.gather_rows(params, np.array([-1], np.int64), np.empty((1, 3), np.float32))


def _xent_reference(x, ids):
    x = x.astype(np.float64)
    m = x.max(1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(1, keepdims=True)))[:, 0]
    p = np.exp(x - lse[:, None])
    p[np.arange(len(ids)), ids] -= 1
    return lse - x[np.arange(len(ids)), ids], p


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_softmax_xent_kernel_matches_reference(dtype):
    rng = np.random.default_rng(1)
    x = (rng.normal(size=(64, 10)) * 5).astype(dtype)
    ids = rng.integers(0, 10, 64).astype(np.int32)
    loss, d = softmax_cpu.sparse_softmax_xent_fwd(x, ids, np.empty(64, dtype), np.empty_like(x))
    ref_loss, ref_d = _xent_reference(x, ids)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(loss, ref_loss, rtol=tol, atol=tol)
    np.testing.assert_allclose(d, ref_d, rtol=tol, atol=tol)


def test_kernels_run_concurrently_from_threads():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(256, 50)).astype(np.float32)
    ids = rng.integers(0, 50, 256).astype(np.int32)
    expected, _ = _xent_reference(x, ids)

    def work():
        for _ in range(20):
            loss, _ = softmax_cpu.sparse_softmax_xent_fwd(
                x, ids, np.empty(256, np.float32), np.empty_like(x))
            np.testing.assert_allclose(loss, expected, rtol=1e-5, atol=1e-5)

    _run_in_threads(work)


def test_parallel_numba_kernel_runs_concurrently_from_threads(monkeypatch):
    monkeypatch.setattr(indexing_cpu, "PARALLEL_MIN_ELEMENTS", 0)
    rng = np.random.default_rng(3)
    grad = rng.normal(size=(300, 5)).astype(np.float32)
    ids = rng.integers(0, 17, 300).astype(np.int32)
    expected = indexing_cpu.scatter_add_rows(grad, ids, np.zeros((17, 5), np.float32))

    def work():
        for _ in range(20):
            got = indexing_cpu.scatter_add_rows(grad, ids, np.zeros((17, 5), np.float32))
            assert np.array_equal(got, expected)

    _run_in_threads(work)


def test_op_without_kernels_for_an_array_type_says_so():
    from ipu_gpu.core.registry import register

    class FakeXp:
        __name__ = "fakecupy"

    op = register("_test_no_gpu_kernels", args=("x",), check=lambda x: None,
                  forward=lambda k, xp, x: (x, None), family="no_such_family")
    with pytest.raises(TypeError, match="_test_no_gpu_kernels: inputs must be numpy arrays"):
        op.kernels(FakeXp())


def test_scatter_add_rows_float16_accumulates_duplicates():
    from ipu_gpu.kernels import indexing_cpu

    rng = np.random.default_rng(11)
    grad = rng.normal(size=(40, 3)).astype(np.float16)
    ids = rng.integers(0, 6, 40).astype(np.int64)
    out = indexing_cpu.scatter_add_rows(grad, ids, np.zeros((6, 3), np.float16))
    want = np.zeros((6, 3))
    np.add.at(want, ids, grad.astype(np.float64))
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, want, rtol=1e-2, atol=2e-2)


# ---- bounds guards: bad indices raise, never write out of bounds (issue 12) ------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("bad", [4, 1000, -1, -5, 2**40])
def test_scatter_add_rows_rejects_out_of_range_ids(scatter_path, dtype, bad):
    grad = np.ones((6, 3), dtype)
    ids = np.array([0, 1, 3, bad, 2, 0], np.int64)
    out = np.zeros((4, 3), dtype)
    with pytest.raises(ValueError, match=rf"scatter_add_rows: ids must be in \[0, 4\), got "
                                         rf"{bad} at position 3"):
        indexing_cpu.scatter_add_rows(grad, ids, out)
    assert np.isfinite(out.astype(np.float64)).all()
    with pytest.raises(ValueError, match=r"scatter_add_rows: ids must be in \[0, 0\)"):
        indexing_cpu.scatter_add_rows(grad, ids % 4, np.zeros((0, 3), dtype))


@pytest.mark.parametrize("grad_shape, ids_len, out_shape", [
    ((6, 3), 7, (4, 3)),  # more ids than gradient rows
    ((6, 3), 5, (4, 3)),  # fewer
    ((6, 4), 6, (4, 3)),  # gradient rows wider than out's
    ((6, 2), 6, (4, 3)),
])
def test_scatter_add_rows_rejects_mismatched_shapes(grad_shape, ids_len, out_shape):
    with pytest.raises(ValueError, match="scatter_add_rows: grad must have shape"):
        indexing_cpu.scatter_add_rows(np.ones(grad_shape, np.float32),
                                      np.zeros(ids_len, np.int32), np.zeros(out_shape, np.float32))
    with pytest.raises(TypeError, match="scatter_add_rows: out must have grad's dtype"):
        indexing_cpu.scatter_add_rows(np.ones((2, 3), np.float16), np.zeros(2, np.int32),
                                      np.zeros((4, 3), np.float32))


def _ctc_case(n_t=6, n_b=3, n_c=5, max_l=3):
    rng = np.random.default_rng(12)
    x = rng.normal(size=(n_t, n_b, n_c)).astype(np.float32)
    labels = rng.integers(1, n_c, (n_b, max_l)).astype(np.int32)
    return dict(data=x, labels=labels, label_length=np.full(n_b, max_l, np.int32),
                data_length=np.full(n_b, n_t, np.int32), blank_index=0, logits=True,
                loss=np.empty(n_b, np.float32), grad=np.empty_like(x))


def _with_entry(a, pos, value):
    a = a.copy()
    a[pos] = value
    return a


_CTC_BAD = {  # name: (changes to the case, the message expected)
    "blank_high": (dict(blank_index=5), r"blank_index must be in \[0, 5\) \(num_classes\), got 5"),
    "blank_negative": (dict(blank_index=-1), r"blank_index must be in \[0, 5\).*got -1"),
    "label_high": (dict(labels=lambda c: _with_entry(c["labels"], (1, 2), 5)),
                   r"labels must be in \[0, 5\) \(num_classes\), got 5 at \[1, 2\]"),
    "label_huge": (dict(labels=lambda c: _with_entry(c["labels"], (0, 0), 2**31 - 1)),
                   r"labels must be in \[0, 5\).*got 2147483647 at \[0, 0\]"),
    "label_negative": (dict(labels=lambda c: _with_entry(c["labels"], (2, 1), -3)),
                       r"labels must be in \[0, 5\).*got -3 at \[2, 1\]"),
    "label_length_past_max": (dict(label_length=lambda c: _with_entry(c["label_length"], 1, 4)),
                              r"label_length must be in \[0, 3\], got 4 at batch entry 1"),
    "label_length_huge": (dict(label_length=lambda c: _with_entry(c["label_length"], 0,
                                                                  2**31 - 1)),
                          r"label_length must be in \[0, 3\], got 2147483647 at batch entry 0"),
    "label_length_negative": (dict(label_length=lambda c: _with_entry(c["label_length"], 2, -1)),
                              r"label_length must be in \[0, 3\], got -1 at batch entry 2"),
    "data_length_past_max": (dict(data_length=lambda c: _with_entry(c["data_length"], 0, 7)),
                             r"data_length must be in \[0, 6\], got 7 at batch entry 0"),
    "data_length_negative": (dict(data_length=lambda c: _with_entry(c["data_length"], 1, -6)),
                             r"data_length must be in \[0, 6\], got -6 at batch entry 1"),
    "labels_short_batch": (dict(labels=lambda c: c["labels"][:2]),
                           r"labels must be \[3, Lmax\], got shape \[2, 3\]"),
    "label_length_short": (dict(label_length=lambda c: c["label_length"][:2]),
                           r"label_length must have shape \[3\], got \[2\]"),
    "data_length_long": (dict(data_length=lambda c: np.full(4, 6, np.int32)),
                         r"data_length must have shape \[3\], got \[4\]"),
    "loss_short": (dict(loss=lambda c: np.empty(2, np.float32)),
                   r"loss must have shape \[3\], got \[2\]"),
    "grad_wrong": (dict(grad=lambda c: np.empty((6, 3, 4), np.float32)),
                   r"grad must have data's shape \[6, 3, 5\], got \[6, 3, 4\]"),
}


def _bad_ctc_case(name):
    case = _ctc_case()
    changes, message = _CTC_BAD[name]
    for k, v in changes.items():
        case[k] = v(case) if callable(v) else v
    return case, message


@pytest.mark.parametrize("want_grad", [True, False])
@pytest.mark.parametrize("parallel", [False, True])
@pytest.mark.parametrize("name", list(_CTC_BAD))
def test_ctc_loss_fwd_bwd_rejects_bad_indices(monkeypatch, name, parallel, want_grad):
    from ipu_gpu.kernels import ctc_cpu

    if parallel:
        monkeypatch.setattr(ctc_cpu, "PARALLEL_MIN_WORK", 0)
    case, message = _bad_ctc_case(name)
    if not want_grad and name != "grad_wrong":
        case["grad"] = None
    case["loss"] = np.full_like(case["loss"], 7.0)
    with pytest.raises(ValueError, match="ctc_loss_fwd_bwd: " + message):
        ctc_cpu.ctc_loss_fwd_bwd(**case)
    if case["loss"].shape == (3,):
        assert (case["loss"] == 7.0).all()  # checked before anything is written


# sequence_slice_copy: any count or offset is clipped to both tensors (its documented rule)
_BIG, _SMALL = 2**31 - 1, -(2**31)
_SEQ_EXTREMES = [  # (num_elems, src_offsets, dst_offsets) of one entry each
    (_BIG, 0, 0), (_BIG, 5, 3), (_BIG, _BIG, 0), (_BIG, 0, _BIG), (4, 6, 0), (4, 0, 5),
    (4, 7, 2), (3, 4, 4), (-1, 0, 0), (_SMALL, 0, 0), (2, -1, 0), (2, 0, -1), (2, _SMALL, 1),
    (2, 1, _SMALL), (_BIG, _SMALL, _SMALL), (6, 0, 0),
]


@pytest.mark.parametrize("parallel", [False, True])
def test_sequence_slice_copy_clips_any_count_and_offset(monkeypatch, parallel):
    from ipu_gpu.kernels import sequence_slice_cpu

    if parallel:
        monkeypatch.setattr(sequence_slice_cpu, "PARALLEL_MIN_BYTES", 0)
    src = np.arange(6 * 3, dtype=np.float32).reshape(6, 3)
    fill = -np.ones((5, 3), np.float32)
    cases = [tuple(np.array([v], np.int32) for v in e) for e in _SEQ_EXTREMES]
    cases.append(tuple(np.array(col, np.int32) for col in zip(*_SEQ_EXTREMES)))  # all at once
    for n, so, do in cases:
        for f in (fill, None):
            guard = np.full((7, 3), 99.0, np.float32)  # rows 0 and 6 fence the output
            out = guard[1:6]
            sequence_slice_cpu.sequence_slice_copy(out, f, src, n, so, do)
            want = rseq._copy_entries((np.zeros_like(fill) if f is None else fill).copy(), src,
                                       n, so, do)
            np.testing.assert_array_equal(out, want)
            assert (guard[[0, 6]] == 99.0).all()


def test_sequence_slice_copy_rejects_mismatched_shapes_and_dtypes():
    from ipu_gpu.kernels import sequence_slice_cpu

    src, out, i = np.zeros((6, 3), np.float32), np.zeros((5, 3), np.float32), np.zeros(2, np.int32)
    k = sequence_slice_cpu.sequence_slice_copy
    for args in ((out, None, np.zeros((6, 4), np.float32), i, i, i),  # src rows wider
                 (out, None, np.zeros((6, 2), np.float32), i, i, i),
                 (out, np.zeros((4, 3), np.float32), src, i, i, i),  # fill with fewer rows
                 (out, np.zeros((5, 4), np.float32), src, i, i, i),
                 (out[0], None, src, i, i, i)):
        with pytest.raises(ValueError, match="sequence_slice_copy: out \\(and fill\\) must be"):
            k(*args)
    for n, so, do in ((i, i[:1], i), (i, i, np.zeros(3, np.int32)), (i[:1], i, i),
                      (np.zeros((2, 1), np.int32), i, i)):
        with pytest.raises(ValueError, match="sequence_slice_copy: num_elems, src_offsets and "
                                             "dst_offsets must be 1-D of one length"):
            k(out, None, src, n, so, do)
    with pytest.raises(TypeError, match="sequence_slice_copy: src must have out's dtype"):
        k(out, None, src.astype(np.float16), i, i, i)
    with pytest.raises(TypeError, match="sequence_slice_copy: fill must have out's dtype"):
        k(out, out.astype(np.float64), src, i, i, i)
    with pytest.raises(TypeError, match="sequence_slice_copy: dst_offsets must be int32"):
        k(out, None, src, i, i, i.astype(np.int64))


def test_bounds_guards_hold_without_numba_boundscheck(tmp_path):
    # NUMBA_BOUNDSCHECK=1 (the test runs) turns a stray index into an IndexError; production
    # runs without it, where the same index would corrupt memory. So the guard tests above run
    # again in a child process without it, with their own Numba cache (the cache key ignores
    # the flag); a crash there shows up as a signal in the return code.
    import os
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parents[1]
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_BOUNDSCHECK"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "numba-cache")
    code = ("import sys, numba, pytest\n"
            "assert not numba.config.BOUNDSCHECK\n"
            "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/test_kernels_cpu.py',"
            " '-k', '(rejects or clips) and not without_numba_boundscheck']))\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "failed" not in run.stdout
