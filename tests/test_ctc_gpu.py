"""The CTC loss GPU twin (kernels/ctc_gpu.py + kernels/cuda/ctc.cu) against the CPU twin.

Without a GPU the CUDA source runs in tests/cuda_emulator (numpy stands in for cupy); the
`gpu`-marked tests run the public ops on real cupy arrays and compare them with the numpy
path."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emulator import compiler_available, install_fake_cupy
from reference import ctc as ref

import ipu_gpu
from ipu_gpu.kernels import ctc_cpu

needs_gxx = pytest.mark.skipif(not compiler_available(), reason="no g++")


@pytest.fixture
def ctc_gpu(monkeypatch):
    mod = install_fake_cupy(monkeypatch, ["ipu_gpu.kernels.ctc_gpu"]).ctc_gpu
    # few blocks a launch (each emulated block is a batch of OS threads); the row kernels
    # then also cover their grid-stride loop
    monkeypatch.setattr(mod, "ROW_BLOCKS_MAX", 3)
    return mod


def _case(rng, n_t, n_b, n_c, max_l, blank, *, n_labels=None):
    """Random time-major logits, labels drawn from a few classes (repeats are common, the
    blank is avoided), lengths covering 0, padding and infeasible alignments."""
    x = (2.0 * rng.standard_normal((n_t, n_b, n_c))).astype(np.float32)
    pool = [c for c in range(n_c) if c != blank][: n_labels or n_c]
    labels = rng.choice(pool, (n_b, max_l)).astype(np.int32)
    label_length = rng.integers(0, max_l + 1, n_b).astype(np.int32)
    data_length = rng.integers(0, n_t + 1, n_b).astype(np.int32)
    return x, labels, label_length, data_length


def _run(mod, x, labels, ll, dl, blank, logits, want_grad=True):
    loss = np.full(x.shape[1], np.nan, np.float32)
    grad = np.full(x.shape, np.nan, np.float32) if want_grad else None
    out = mod.ctc_loss_fwd_bwd(np.ascontiguousarray(x, np.float32), labels, ll, dl, blank,
                               logits, loss, grad)
    assert out[0] is loss and out[1] is grad
    return loss, grad


def _assert_twins_agree(mod, x, labels, ll, dl, blank, logits, *, grad_tol=None):
    got_loss, got_grad = _run(mod, x, labels, ll, dl, blank, logits)
    want_loss, want_grad = _run(ctc_cpu, x, labels, ll, dl, blank, logits)
    # float32 log-space (GPU) against the CPU twin's rescaled linear space
    np.testing.assert_allclose(got_loss, want_loss, rtol=2e-5, atol=1e-4)
    np.testing.assert_allclose(got_grad, want_grad, **(grad_tol or dict(rtol=1e-4, atol=2e-5)))
    for b, n in enumerate(dl):
        assert np.all(got_grad[n:, b] == 0)
    # the forward-only call gives the same loss, bit for bit
    fwd_loss, none = _run(mod, x, labels, ll, dl, blank, logits, want_grad=False)
    assert none is None
    np.testing.assert_array_equal(fwd_loss, got_loss)
    return got_loss, got_grad


def _log_probs(x):
    return ref.log_softmax(x).astype(np.float32)


@needs_gxx
@pytest.mark.parametrize("variant", ["logits", "log_probs"])
@pytest.mark.parametrize("blank_pos", ["first", "middle", "last"])
def test_twins_agree_on_random_batches(ctc_gpu, blank_pos, variant):
    rng = np.random.default_rng(["first", "middle", "last"].index(blank_pos) * 2
                                + (variant == "logits"))
    n_c = 7
    blank = {"first": 0, "middle": 3, "last": n_c - 1}[blank_pos]
    x, labels, ll, dl = _case(rng, 17, 5, n_c, 6, blank, n_labels=3)
    data = x if variant == "logits" else _log_probs(x)
    _assert_twins_agree(ctc_gpu, data, labels, ll, dl, blank, variant == "logits")


@needs_gxx
def test_twins_agree_on_special_entries(ctc_gpu):
    """One entry each: repeats, label length 0, infeasible (too long; repeats needing an
    extra step), data_length 0 with and without labels, a single step, full length."""
    rng = np.random.default_rng(11)
    n_t, n_c = 8, 5
    x = (2.0 * rng.standard_normal((n_t, 9, n_c))).astype(np.float32)
    labels = np.array([[1, 1, 1, 2], [3, 4, 0, 0], [1, 2, 3, 4], [2, 2, 2, 2], [1, 0, 0, 0],
                       [2, 3, 0, 0], [4, 0, 0, 0], [3, 3, 4, 1], [1, 2, 1, 2]], np.int32)
    ll = np.array([3, 0, 4, 4, 0, 2, 1, 4, 4], np.int32)
    dl = np.array([8, 6, 3, 6, 0, 0, 1, 8, 8], np.int32)
    loss, grad = _assert_twins_agree(ctc_gpu, x, labels, ll, dl, 0, True,
                                     grad_tol=dict(rtol=1e-2, atol=1e-2))
    assert loss[4] == 0 and loss[5] == 65504  # data_length 0: log-one / log-zero
    for b in (2, 3):  # infeasible: large finite loss and gradient
        assert 60000 < loss[b] < 70000 and np.isfinite(grad[:, b]).all()
    lp = ref.log_softmax(x)
    np.testing.assert_allclose(loss[1], -lp[:6, 1, 0].sum(), rtol=1e-5)  # all-blank path


@needs_gxx
def test_infeasible_gradient_matches_the_exact_cpu_path_closely(ctc_gpu):
    # both twins run the log-space recursion here; exponents near 65504 are exact to
    # float32's ulp there (0.004), so the log-zero term agrees to ~1e-2 relative
    x = np.zeros((2, 2, 3), np.float32)
    labels = np.array([[1, 1], [1, 2]], np.int32)
    ll, dl = np.array([2, 2], np.int32), np.array([2, 2], np.int32)
    loss, grad = _run(ctc_gpu, x, labels, ll, dl, 0, True)
    want_loss, want_grad = _run(ctc_cpu, x, labels, ll, dl, 0, True)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-6)
    assert 65000 < loss[0] < 65504
    np.testing.assert_allclose(grad, want_grad, rtol=1e-2, atol=1e-2)


@needs_gxx
def test_labels_equal_to_the_blank(ctc_gpu):
    # labels may hold the blank's id (only [0, C) is checked): those positions share the
    # blank's class in the gradient's per-class walk
    rng = np.random.default_rng(12)
    x = rng.standard_normal((9, 3, 4)).astype(np.float32)
    labels = np.array([[2, 2, 1], [1, 2, 2], [2, 0, 2]], np.int32)
    ll = np.array([3, 3, 3], np.int32)
    dl = np.array([9, 9, 7], np.int32)
    _assert_twins_agree(ctc_gpu, x, labels, ll, dl, 2, True)


@needs_gxx
def test_global_memory_fallbacks(ctc_gpu, monkeypatch):
    # no dynamic shared memory: alpha/beta rows and the occupancies live in the workspaces;
    # 32 threads for up to 161 positions: positions past the prefetched 4 per thread
    monkeypatch.setattr(ctc_gpu, "SHARED_BYTES_MAX", 0)
    monkeypatch.setattr(ctc_gpu, "_position_block", lambda n: 32)
    rng = np.random.default_rng(13)
    x, labels, ll, dl = _case(rng, 90, 2, 6, 80, 5)
    labels[0] = np.arange(80) % 5  # no adjacent repeats: feasible in 90 steps
    ll[:] = [80, 31]
    dl[:] = [90, 70]
    loss, _ = _assert_twins_agree(ctc_gpu, x, labels, ll, dl, 5, True,
                                  grad_tol=dict(rtol=1e-3, atol=2e-4))
    assert np.all(loss < 60000)  # both feasible: the recursions were really exercised


@needs_gxx
def test_prefetch_overflow_with_shared_memory(ctc_gpu, monkeypatch):
    monkeypatch.setattr(ctc_gpu, "_position_block", lambda n: 32)
    rng = np.random.default_rng(14)
    x, labels, ll, dl = _case(rng, 80, 1, 5, 70, 0)
    labels[0, ::2] = 3  # no adjacent repeats: feasible in 80 steps
    labels[0, 1::2] = np.where(labels[0, 1::2] == 3, 4, labels[0, 1::2])
    ll[:], dl[:] = 70, 80
    _assert_twins_agree(ctc_gpu, _log_probs(x), labels, ll, dl, 0, False,
                        grad_tol=dict(rtol=1e-3, atol=2e-4))


@needs_gxx
def test_empty_label_tensor_and_empty_time(ctc_gpu):
    x = np.random.default_rng(15).standard_normal((4, 2, 3)).astype(np.float32)
    labels = np.zeros((2, 0), np.int32)
    zeros = np.zeros(2, np.int32)
    _assert_twins_agree(ctc_gpu, x, labels, zeros, np.array([4, 2], np.int32), 1, True)
    loss, grad = _run(ctc_gpu, x[:0], np.ones((2, 1), np.int32), np.array([0, 1], np.int32),
                      zeros, 0, True)
    np.testing.assert_array_equal(loss, [0, 65504])
    assert grad.shape == (0, 2, 3)


@needs_gxx
@pytest.mark.parametrize("name", ["ctc_loss_v2", "ctc_loss_with_log_probs"])
def test_value_checks_match_the_cpu_messages(ctc_gpu, name):
    labels = np.array([[1, 2, 3], [1, 1, 0]], np.int32)
    good = dict(labels=labels, label_length=np.array([3, 2], np.int32),
                data_length=np.array([5, 4], np.int32))
    bad_cases = [dict(data_length=np.array([5, 6], np.int32)),
                 dict(data_length=np.array([-1, 6], np.int32)),
                 dict(label_length=np.array([4, 1], np.int32)),
                 dict(label_length=np.array([3, -1], np.int32)),
                 dict(labels=np.array([[1, 2, 4], [1, 1, 0]], np.int32)),
                 dict(labels=np.array([[1, 2, 3], [1, -5, 9]], np.int32)),
                 dict(data_length=np.array([9, 4], np.int32), labels=labels - 9)]
    ctc_gpu.ctc_loss_check_values(name, *good.values(), 5, 4)
    # labels past label_length are not checked
    ctc_gpu.ctc_loss_check_values(name, np.array([[1, 2, 3], [1, 1, -9]], np.int32),
                                  good["label_length"], good["data_length"], 5, 4)
    for bad in bad_cases:
        args = {**good, **bad}
        with pytest.raises(ValueError) as want:
            ctc_cpu.ctc_loss_check_values(name, *args.values(), 5, 4)
        with pytest.raises(ValueError) as got:
            ctc_gpu.ctc_loss_check_values(name, *args.values(), 5, 4)
        assert str(got.value) == str(want.value)
        assert str(got.value).startswith(f"{name}: ")


@needs_gxx
@pytest.mark.parametrize("logits", [True, False])
def test_the_op_runs_unchanged_on_the_gpu_twin(ctc_gpu, logits):
    # ops/ctc.py's forward/backward with k = the GPU twin and xp = the cupy stand-in, as the
    # registry calls them for cupy inputs (float16 data, non-contiguous labels and lengths)
    import sys

    from ipu_gpu.ops import ctc as op

    xp = sys.modules["cupy"]
    rng = np.random.default_rng(16)
    x, labels, ll, dl = _case(rng, 10, 3, 5, 3, 0)
    data = (x if logits else _log_probs(x)).astype(np.float16)
    wide = np.zeros((3, 6), np.int32)
    wide[:, ::2] = labels
    lengths = np.stack([ll, dl], 1)
    static = dict(blank_index=0, out_dtype=np.float16, logits=logits)
    with ipu_gpu.GradientTape():  # a recording tape: the gradient comes with the forward
        loss, res = op._forward(ctc_gpu, xp, wide[:, ::2], data, lengths[:, 0], lengths[:, 1],
                                **static)
    g = np.array([1.0, -2.0, 0.5], np.float16)
    grads = op._backward(ctc_gpu, xp, res, g, **static)
    want_loss, want_grad = _run(ctc_cpu, data.astype(np.float32), labels, ll, dl, 0, logits)
    assert loss.dtype == np.float16 and grads[1].dtype == np.float16
    np.testing.assert_allclose(loss.astype(np.float32), want_loss, rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(grads[1].astype(np.float32),
                               want_grad * g.astype(np.float32)[None, :, None],
                               rtol=1e-2, atol=2e-3)
    assert grads[0] is None and grads[2] is None and grads[3] is None


@needs_gxx
@pytest.mark.parametrize("want_grad", [True, False])
def test_bad_entries_give_nan_instead_of_out_of_bounds_accesses(ctc_gpu, want_grad):
    # the bounds rule of cuda/ctc.cu, for callers that skip ctc_loss_check_values
    rng = np.random.default_rng(17)
    n_t, n_c, max_l = 6, 5, 3
    x, labels, ll, dl = _case(rng, n_t, 9, n_c, max_l, 0)
    ll[1] = max_l + 1
    labels[2, 0], ll[2] = n_c, max(ll[2], 1)
    dl[3] = n_t + 3
    dl[4] = -1
    labels[5, 1], ll[5] = -2, max_l
    ll[6] = -1
    labels[7, 2], ll[7] = 2**31 - 1, max_l
    labels[8, 2], ll[8] = n_c + 4, 2  # past its label_length: not checked, a valid entry
    bad = [1, 2, 3, 4, 5, 6, 7]
    good = [0, 8]
    loss, grad = _run(ctc_gpu, x, labels, ll, dl, 0, True, want_grad=want_grad)
    assert np.isnan(loss[bad]).all()
    want_loss, want_grad_ = _run(ctc_cpu, np.ascontiguousarray(x[:, good]), labels[good],
                                 ll[good], dl[good], 0, True)
    np.testing.assert_allclose(loss[good], want_loss, rtol=2e-5, atol=1e-4)
    if want_grad:
        assert np.isnan(grad[:, bad]).all()
        np.testing.assert_allclose(grad[:, good], want_grad_, rtol=1e-4, atol=2e-5)


@needs_gxx
def test_host_side_checks_match_the_cpu_twin(ctc_gpu):
    rng = np.random.default_rng(18)
    x, labels, ll, dl = _case(rng, 6, 3, 5, 3, 0)
    good = dict(data=x, labels=labels, label_length=ll, data_length=dl, blank_index=0,
                logits=True, loss=np.empty(3, np.float32), grad=np.empty_like(x))
    for bad in (dict(blank_index=5), dict(blank_index=-1), dict(labels=labels[:2]),
                dict(label_length=ll[:2]), dict(data_length=np.zeros(4, np.int32)),
                dict(loss=np.empty(2, np.float32)), dict(grad=np.empty((6, 3, 4), np.float32)),
                dict(data=x[0])):
        args = {**good, **bad}
        with pytest.raises(ValueError) as want:
            ctc_cpu.ctc_loss_fwd_bwd(**args)
        with pytest.raises(ValueError) as got:
            ctc_gpu.ctc_loss_fwd_bwd(**args)
        assert str(got.value) == str(want.value)
        assert str(got.value).startswith("ctc_loss_fwd_bwd: ")
    # what only the raw kernels take on trust
    with pytest.raises(TypeError, match="ctc_loss_fwd_bwd: label_length must be int32"):
        ctc_gpu.ctc_loss_fwd_bwd(**{**good, "label_length": ll.astype(np.int64)})
    with pytest.raises(TypeError, match="ctc_loss_fwd_bwd: data must be float32"):
        ctc_gpu.ctc_loss_fwd_bwd(**{**good, "data": x.astype(np.float64)})
    with pytest.raises(ValueError, match="ctc_loss_fwd_bwd: grad must be C-contiguous"):
        ctc_gpu.ctc_loss_fwd_bwd(**{**good, "grad": np.empty((5, 3, 6), np.float32).T})
    with pytest.raises(ValueError, match="ctc_loss_v2: labels must be \\[B, Lmax\\] and"):
        ctc_gpu.ctc_loss_check_values("ctc_loss_v2", labels, ll[:2], dl, 6, 5)


def test_shared_check_helper_finds_the_first_bad_label():
    from ipu_gpu.kernels import _ctc_checks

    labels = np.array([[0, 7, 9], [5, -1, 2]], np.int32)
    assert _ctc_checks.first_bad_label(labels, np.array([1, 3], np.int32), 6) == (1, 1)
    assert _ctc_checks.first_bad_label(labels, np.array([1, 3], np.int32), 5) == (1, 0)
    assert _ctc_checks.first_bad_label(labels, np.array([2, 1], np.int32), 5) == (0, 1)
    assert _ctc_checks.first_bad_label(labels, np.array([1, 1], np.int32), 6) == (-1, -1)


# ---- on a real GPU ---------------------------------------------------------------------------
def _api_loss_and_grad(xp, fn, labels, data, ll, dl, blank, **kw):
    previous = ipu_gpu.backend_name()
    ipu_gpu.set_backend("cpu" if xp is np else "gpu")
    try:
        xt = ipu_gpu.constant(xp.asarray(data))
        with ipu_gpu.GradientTape() as tape:
            tape.watch(xt)
            loss = fn(xp.asarray(labels), xt, xp.asarray(ll), xp.asarray(dl), blank, **kw)
        grad = tape.gradient(loss, xt)
        plain = fn(xp.asarray(labels), xt, xp.asarray(ll), xp.asarray(dl), blank, **kw)
        return loss.numpy(), grad.numpy(), plain.numpy()
    finally:
        ipu_gpu.set_backend(previous)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("variant", ["logits", "log_probs"])
@pytest.mark.parametrize("blank_pos", ["first", "middle", "last"])
def test_gpu_public_api_matches_numpy(blank_pos, variant, dtype):
    from conftest import require_gpu

    from ipu_gpu.ipu import nn_ops

    cupy = require_gpu()
    rng = np.random.default_rng(40 + ["first", "middle", "last"].index(blank_pos))
    n_c = 30
    blank = {"first": 0, "middle": 13, "last": n_c - 1}[blank_pos]
    x, labels, ll, _ = _case(rng, 120, 16, n_c, 40, blank, n_labels=12)
    need = [n + np.sum(labels[b, 1:n] == labels[b, : max(n - 1, 0)]) for b, n in enumerate(ll)]
    dl = np.array([rng.integers(n, 121) for n in need], np.int32)  # feasible, some padding
    # full length; no steps; one step with 3 labels (infeasible: loss 65504 - log 2, and the
    # log-zero term exp(-log 2) in the gradient); padding with the empty label
    dl[:4] = [120, 0, 1, 119]
    ll[:4] = [40, 0, 3, 0]
    fn = nn_ops.ctc_loss_v2 if variant == "logits" else nn_ops.ctc_loss_with_log_probs
    data = (x if variant == "logits" else _log_probs(x)).astype(dtype)
    want = _api_loss_and_grad(np, fn, labels, data, ll, dl, blank)
    got = _api_loss_and_grad(cupy, fn, labels, data, ll, dl, blank)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
    f16 = dtype == np.float16
    np.testing.assert_allclose(got[0].astype(np.float32), want[0].astype(np.float32),
                               rtol=2e-3 if f16 else 2e-5, atol=1e-2 if f16 else 1e-4)
    np.testing.assert_array_equal(got[2], got[0])
    np.testing.assert_allclose(got[1].astype(np.float32), want[1].astype(np.float32),
                               rtol=1e-2 if f16 else 1e-3, atol=2e-3 if f16 else 5e-4)


@pytest.mark.gpu
def test_gpu_long_labels_and_determinism():
    """L = 1000 (1024 threads a block) and a long entry that overflows shared memory
    (7001 positions: global-memory rows, more positions than threads), twice, bitwise."""
    from conftest import require_gpu

    cupy = require_gpu()
    from ipu_gpu.kernels import ctc_gpu
    rng = np.random.default_rng(50)
    for n_t, n_b, n_c, n_l in ((2400, 3, 60, 1000), (4000, 2, 40, 3500)):
        x = rng.standard_normal((n_t, n_b, n_c)).astype(np.float32)
        labels = (1 + (np.arange(n_l) + rng.integers(0, 2, (n_b, n_l)).cumsum(1))
                  % (n_c - 1)).astype(np.int32)
        ll = np.full(n_b, n_l, np.int32)
        dl = np.full(n_b, n_t, np.int32)
        ll[-1], dl[-1] = n_l // 3, n_t - 17
        outs = []
        for _ in range(2):
            loss = cupy.empty(n_b, np.float32)
            grad = cupy.empty(x.shape, np.float32)
            ctc_gpu.ctc_loss_fwd_bwd(cupy.asarray(x), cupy.asarray(labels), cupy.asarray(ll),
                                     cupy.asarray(dl), 0, True, loss, grad)
            outs.append((loss.get(), grad.get()))
        np.testing.assert_array_equal(outs[0][0], outs[1][0])
        np.testing.assert_array_equal(outs[0][1], outs[1][1])
        fwd = cupy.empty(n_b, np.float32)  # forward only: two alpha rows an entry
        ctc_gpu.ctc_loss_fwd_bwd(cupy.asarray(x), cupy.asarray(labels), cupy.asarray(ll),
                                 cupy.asarray(dl), 0, True, fwd, None)
        np.testing.assert_array_equal(fwd.get(), outs[0][0])
        want_loss, want_grad = _run(ctc_cpu, x, labels, ll, dl, 0, True)
        np.testing.assert_allclose(outs[0][0], want_loss, rtol=1e-4)
        # log-space values reach ~1e4 here: float32 exponents carry ~1e-2 relative error
        np.testing.assert_allclose(outs[0][1], want_grad, rtol=2e-2, atol=2e-2)


@pytest.mark.gpu
def test_gpu_errors_match_numpy():
    from conftest import require_gpu

    from ipu_gpu.ipu import nn_ops

    cupy = require_gpu()
    x = np.zeros((5, 2, 4), np.float32)
    for labels, ll, dl in (([[1, 4, 0], [1, 1, 1]], [2, 2], [5, 4]),
                           ([[1, 1, 0], [1, 1, 1]], [2, 2], [6, 4]),
                           ([[1, 1, 0], [1, 1, 1]], [4, 2], [5, 4])):
        args = [np.array(labels, np.int32), x, np.array(ll, np.int32), np.array(dl, np.int32)]
        with pytest.raises(ValueError) as want:
            nn_ops.ctc_loss_v2(*args, 0)
        with pytest.raises(ValueError) as got:
            nn_ops.ctc_loss_v2(*[cupy.asarray(a) for a in args], 0)
        assert str(got.value) == str(want.value)
