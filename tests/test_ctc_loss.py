"""CTC loss (ipu.nn_ops.ctc_loss_v2 / ctc_loss_with_log_probs and the deprecated aliases)
against the float64 alpha/beta reference, a brute-force path enumeration, TensorFlow and
PyTorch, plus gradients, properties and error inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from reference import ctc as ref

import ipu_gpu
from ipu_gpu import ipu
from ipu_gpu.kernels import ctc_cpu

nn_ops = ipu.nn_ops


def _batch(rng, n_t, n_b, n_c, max_l, blank, *, feasible=True, dtype=np.float32, scale=2.0):
    """Random time-major logits, labels without blank, varied lengths."""
    x = (scale * rng.standard_normal((n_t, n_b, n_c))).astype(dtype)
    labels = rng.integers(0, n_c - 1, (n_b, max_l)).astype(np.int32)
    labels[labels >= blank] += 1  # never the blank
    label_length = rng.integers(0, max_l + 1, n_b).astype(np.int32)
    lo = 2 * label_length + 1 if feasible else np.ones(n_b, np.int64)
    data_length = np.array([rng.integers(min(int(a), n_t), n_t + 1) for a in lo], np.int32)
    if feasible:
        label_length = np.minimum(label_length, (data_length - 1) // 2).astype(np.int32)
    return labels, x, label_length, data_length


def _loss_and_grad(fn, labels, x, label_length, data_length, blank, **kw):
    xt = ipu_gpu.constant(x)
    with ipu_gpu.GradientTape() as tape:
        tape.watch(xt)
        loss = fn(labels, xt, label_length, data_length, blank, **kw)
    return loss.numpy(), tape.gradient(loss, xt).numpy()


# ---- against the float64 reference ---------------------------------------------------------
@pytest.mark.parametrize("blank_pos", ["first", "last", "middle"])
@pytest.mark.parametrize("variant", ["logits", "log_probs"])
def test_matches_reference(blank_pos, variant):
    rng = np.random.default_rng(hash((blank_pos, variant)) % 2**32)
    n_t, n_b, n_c, max_l = 30, 6, 7, 8
    blank = {"first": 0, "last": n_c - 1, "middle": 3}[blank_pos]
    labels, x, ll, dl = _batch(rng, n_t, n_b, n_c, max_l, blank)
    if variant == "logits":
        fn, data = nn_ops.ctc_loss_v2, x
    else:
        fn, data = nn_ops.ctc_loss_with_log_probs, ref.log_softmax(x).astype(np.float32)
    loss, grad = _loss_and_grad(fn, labels, data, ll, dl, blank)
    want_loss, want_grad = ref.ctc_loss(labels, data, ll, dl, blank, logits=variant == "logits")
    assert loss.dtype == np.float32 and loss.shape == (n_b,)
    assert grad.dtype == np.float32 and grad.shape == x.shape
    np.testing.assert_allclose(loss, want_loss, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=2e-5)


def test_parallel_and_serial_kernels_agree():
    rng = np.random.default_rng(7)
    labels, x, ll, dl = _batch(rng, 120, 24, 40, 20, 0)
    assert x.shape[0] * x.shape[1] * (x.shape[2] + 41) >= ctc_cpu.PARALLEL_MIN_WORK
    loss_p, grad_p = np.empty(24, np.float32), np.empty(x.shape, np.float32)
    ctc_cpu.ctc_loss_fwd_bwd(x, labels, ll, dl, 0, True, loss_p, grad_p)
    loss_s, grad_s = np.empty(24, np.float32), np.empty(x.shape, np.float32)
    ctc_cpu._ctc_serial(x, labels, ll, dl, 0, True, True, loss_s, grad_s)
    np.testing.assert_array_equal(loss_p, loss_s)
    np.testing.assert_array_equal(grad_p, grad_s)
    want_loss, want_grad = ref.ctc_loss(labels, x, ll, dl, 0)
    np.testing.assert_allclose(loss_p, want_loss, rtol=2e-5)
    # float32 log-space values of a few hundred: the occupancy exponents carry ~1e-4 error
    np.testing.assert_allclose(grad_p, want_grad, rtol=1e-3, atol=5e-4)


def test_loss_without_tape_equals_loss_with_tape():
    rng = np.random.default_rng(8)
    labels, x, ll, dl = _batch(rng, 20, 4, 5, 4, 4)
    plain = nn_ops.ctc_loss_v2(labels, x, ll, dl, 4).numpy()
    taped, _ = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, ll, dl, 4)
    np.testing.assert_array_equal(plain, taped)


@pytest.mark.parametrize("out_dtype", [None, np.float16, np.float32])
def test_float16(out_dtype):
    rng = np.random.default_rng(3)
    labels, x, ll, dl = _batch(rng, 25, 5, 6, 6, 2, dtype=np.float16)
    loss, grad = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, ll, dl, 2, out_dtype=out_dtype)
    want_loss, want_grad = ref.ctc_loss(labels, x.astype(np.float64), ll, dl, 2)
    assert loss.dtype == (np.float16 if out_dtype is None else out_dtype)
    assert grad.dtype == np.float16
    np.testing.assert_allclose(loss.astype(np.float64), want_loss, rtol=2e-3, atol=1e-2)
    np.testing.assert_allclose(grad.astype(np.float64), want_grad, rtol=1e-2, atol=2e-3)


def test_out_dtype_float32_for_float16_input():
    rng = np.random.default_rng(4)
    labels, x, ll, dl = _batch(rng, 10, 3, 4, 3, 0, dtype=np.float16)
    loss = nn_ops.ctc_loss_with_log_probs(labels, ref.log_softmax(x).astype(np.float16), ll, dl,
                                          0, out_dtype=ipu_gpu.float32)
    assert loss.dtype == np.float32


# ---- brute force ----------------------------------------------------------------------------
@pytest.mark.parametrize("label", [[1], [1, 2], [1, 1], [2, 1, 2], []])
def test_brute_force(label):
    rng = np.random.default_rng(len(label))
    n_t, n_c, blank = 5, 3, 0
    x = rng.standard_normal((n_t, 1, n_c)).astype(np.float32)
    labels = np.array([label + [0] * (3 - len(label))], np.int32)
    loss, grad = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, np.array([len(label)], np.int32),
                                np.array([n_t], np.int32), blank)
    want_loss, want_grad = ref.brute_force_one(ref.log_softmax(x[:, 0]), label, blank)
    np.testing.assert_allclose(loss[0], want_loss, rtol=1e-5)
    np.testing.assert_allclose(grad[:, 0], want_grad, rtol=1e-4, atol=1e-6)


def test_reference_matches_brute_force():
    rng = np.random.default_rng(11)
    lp = ref.log_softmax(rng.standard_normal((4, 3)))
    for label in ([1], [2, 2], [1, 2]):
        want = ref.brute_force_one(lp, label, 0)
        got = ref.ctc_one(lp, label, 0)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-12)
        np.testing.assert_allclose(got[1], want[1], atol=1e-12)


# ---- special cases ---------------------------------------------------------------------------
def test_label_length_zero_is_the_all_blank_path():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 2, 4)).astype(np.float32)
    labels = np.array([[1, 2], [3, 3]], np.int32)
    ll = np.zeros(2, np.int32)
    dl = np.array([6, 4], np.int32)
    loss, grad = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, ll, dl, 1)
    lp = ref.log_softmax(x)
    np.testing.assert_allclose(loss, [-lp[:6, 0, 1].sum(), -lp[:4, 1, 1].sum()], rtol=1e-5)
    sm = np.exp(lp)
    onehot = np.zeros(4)
    onehot[1] = 1
    np.testing.assert_allclose(grad[:4, 1], sm[:4, 1] - onehot, atol=1e-6)


def test_infeasible_alignment_gives_large_finite_loss():
    x = np.zeros((2, 2, 3), np.float32)
    labels = np.array([[1, 1], [1, 2]], np.int32)  # [1, 1] needs 3 steps; [1, 2] fits in 2
    ll = np.array([2, 2], np.int32)
    dl = np.array([2, 2], np.int32)
    loss, grad = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, ll, dl, 0)
    want_loss, want_grad = ref.ctc_loss(labels, x, ll, dl, 0)
    assert np.all(np.isfinite(loss)) and np.all(np.isfinite(grad))
    assert 65000 < loss[0] < 65504
    np.testing.assert_allclose(loss, want_loss, rtol=1e-6)
    # exponents near 65504 are exact to float32's ulp there (0.004), as on the IPU
    np.testing.assert_allclose(grad, want_grad, rtol=1e-2, atol=1e-2)


def test_infeasible_long_label_matches_reference():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 1, 5)).astype(np.float32)
    labels = np.array([[1, 2, 3, 4, 1, 2]], np.int32)
    loss = nn_ops.ctc_loss_v2(labels, x, np.array([6], np.int32), np.array([4], np.int32),
                              0).numpy()
    want, _ = ref.ctc_loss(labels, x, [6], [4], 0)
    assert np.isfinite(loss[0]) and loss[0] > 60000
    np.testing.assert_allclose(loss, want, rtol=1e-6)


def test_infeasible_loss_in_float16_saturates():
    x = np.zeros((2, 1, 3), np.float16)
    loss = nn_ops.ctc_loss_v2(np.array([[1, 1]], np.int32), x, np.array([2], np.int32),
                              np.array([2], np.int32), 0).numpy()
    assert loss.dtype == np.float16 and loss[0] >= 65000


def test_padded_time_steps_get_zero_gradient():
    rng = np.random.default_rng(9)
    labels, x, ll, dl = _batch(rng, 20, 5, 6, 4, 0)
    dl[:] = [20, 7, 1, 0, 12]
    ll[:] = [3, 2, 0, 0, 4]
    _, grad = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, ll, dl, 0)
    for b, n in enumerate(dl):
        assert np.all(grad[n:, b] == 0)
        assert np.all(np.abs(grad[:n, b]).sum(axis=-1) > 0)


def test_zero_data_length():
    x = np.zeros((3, 2, 3), np.float32)
    labels = np.ones((2, 1), np.int32)
    loss = nn_ops.ctc_loss_v2(labels, x, np.array([0, 1], np.int32), np.array([0, 0], np.int32),
                              0).numpy()
    np.testing.assert_array_equal(loss, [0.0, 65504.0])


def test_labels_past_label_length_are_ignored():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((8, 1, 4)).astype(np.float32)
    a = nn_ops.ctc_loss_v2(np.array([[1, 2, 3]], np.int32), x, np.array([2], np.int32),
                           np.array([8], np.int32), 0).numpy()
    b = nn_ops.ctc_loss_v2(np.array([[1, 2, -7]], np.int32), x, np.array([2], np.int32),
                           np.array([8], np.int32), 0).numpy()
    np.testing.assert_array_equal(a, b)


# ---- gradients -------------------------------------------------------------------------------
def test_finite_difference_gradient():
    rng = np.random.default_rng(12)
    labels, x, ll, dl = _batch(rng, 10, 3, 5, 3, 2)
    u = rng.standard_normal(3)  # cotangent
    v = rng.standard_normal(x.shape)  # direction
    xt = ipu_gpu.constant(x)
    with ipu_gpu.GradientTape() as tape:
        tape.watch(xt)
        loss = nn_ops.ctc_loss_v2(labels, xt, ll, dl, 2)
    vjp = tape.gradient(loss, xt, output_gradients=ipu_gpu.constant(u.astype(np.float32)))
    eps = 1e-5
    x64 = x.astype(np.float64)
    plus = ref.ctc_loss(labels, x64 + eps * v, ll, dl, 2)[0]
    minus = ref.ctc_loss(labels, x64 - eps * v, ll, dl, 2)[0]
    fd = np.dot(u, (plus - minus) / (2 * eps))
    np.testing.assert_allclose(np.sum(vjp.numpy() * v), fd, rtol=1e-4, atol=1e-4)


def test_log_probs_gradient_through_log_softmax_is_the_logits_gradient():
    rng = np.random.default_rng(13)
    labels, x, ll, dl = _batch(rng, 15, 4, 6, 4, 5)
    xt = ipu_gpu.constant(x)
    with ipu_gpu.GradientTape() as tape:
        tape.watch(xt)
        loss = nn_ops.ctc_loss_with_log_probs(labels, ipu_gpu.nn.log_softmax(xt), ll, dl, 5)
    got = tape.gradient(loss, xt).numpy()
    _, want = ref.ctc_loss(labels, x, ll, dl, 5)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)


def test_composes_with_reduce_mean():
    rng = np.random.default_rng(14)
    labels, x, ll, dl = _batch(rng, 12, 4, 5, 3, 0)
    w = ipu_gpu.Variable(x)
    with ipu_gpu.GradientTape() as tape:
        loss = ipu_gpu.reduce_mean(nn_ops.ctc_loss_v2(labels, w * 1.0, ll, dl, 0))
    grad = tape.gradient(loss, w).numpy()
    want_loss, want_grad = ref.ctc_loss(labels, x, ll, dl, 0)
    np.testing.assert_allclose(loss.numpy(), want_loss.mean(), rtol=1e-5)
    np.testing.assert_allclose(grad, want_grad / 4, rtol=1e-4, atol=1e-5)


def test_second_derivative_raises():
    rng = np.random.default_rng(15)
    labels, x, ll, dl = _batch(rng, 6, 2, 4, 2, 0)
    xt = ipu_gpu.constant(x)
    with ipu_gpu.GradientTape() as outer:
        outer.watch(xt)
        with ipu_gpu.GradientTape() as inner:
            inner.watch(xt)
            loss = ipu_gpu.reduce_sum(nn_ops.ctc_loss_v2(labels, xt, ll, dl, 0))
        with pytest.raises(LookupError, match="second derivatives of ctc_loss_v2"):
            inner.gradient(loss, xt)


@given(st.integers(0, 2**31 - 1), st.floats(-20, 20))
def test_invariant_to_a_constant_added_to_logits(seed, shift):
    rng = np.random.default_rng(seed)
    labels, x, ll, dl = _batch(rng, 9, 3, 5, 3, 1)
    a, ga = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, ll, dl, 1)
    b, gb = _loss_and_grad(nn_ops.ctc_loss_v2, labels, (x + np.float32(shift)).astype(np.float32),
                           ll, dl, 1)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ga, gb, atol=1e-4)


# ---- peers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("blank_pos", ["first", "last", "middle"])
def test_against_tensorflow(real_tf, blank_pos):
    tf = real_tf
    rng = np.random.default_rng(20 + len(blank_pos))
    n_t, n_b, n_c, max_l = 40, 8, 9, 10
    blank = {"first": 0, "last": n_c - 1, "middle": 4}[blank_pos]
    labels, x, ll, dl = _batch(rng, n_t, n_b, n_c, max_l, blank)
    ll = np.maximum(ll, 1)
    dl = np.maximum(dl, 2 * ll + 1).astype(np.int32)
    loss, grad = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, ll, dl, blank)
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        want = tf.nn.ctc_loss(tf.constant(labels), xt, tf.constant(ll), tf.constant(dl),
                              logits_time_major=True, blank_index=blank)
    want_grad = tape.gradient(want, xt).numpy()
    np.testing.assert_allclose(loss, want.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("blank_pos", ["first", "last", "middle"])
def test_against_torch(blank_pos, dtype):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(30 + len(blank_pos))
    n_t, n_b, n_c, max_l = 50, 7, 12, 12
    blank = {"first": 0, "last": n_c - 1, "middle": 5}[blank_pos]
    labels, x, ll, dl = _batch(rng, n_t, n_b, n_c, max_l, blank, dtype=dtype)
    loss, grad = _loss_and_grad(nn_ops.ctc_loss_v2, labels, x, ll, dl, blank)
    xt = torch.from_numpy(x.astype(np.float32)).requires_grad_(True)
    want = F.ctc_loss(F.log_softmax(xt, -1), torch.from_numpy(labels).long(),
                      torch.from_numpy(dl).long(), torch.from_numpy(ll).long(), blank=blank,
                      reduction="none")
    want.sum().backward()
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=2e-3, atol=2e-2)
    np.testing.assert_allclose(loss.astype(np.float32), want.detach().numpy(), **tol)
    gtol = dict(rtol=1e-3, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-2, atol=2e-3)
    np.testing.assert_allclose(grad.astype(np.float32), xt.grad.numpy(), **gtol)


# ---- the façade and deprecated aliases ------------------------------------------------------
def test_facade_paths():
    assert ipu.ops.nn_ops.ctc_loss_v2 is ipu.nn_ops.ctc_loss_v2
    assert ipu.ops.nn_ops.ctc_loss_with_log_probs is ipu.nn_ops.ctc_loss_with_log_probs
    assert ipu.ops.nn_ops.ctc_loss is ipu.nn_ops.ctc_loss
    assert ipu.ops.nn_ops.ctc_loss_with_logits is ipu.nn_ops.ctc_loss_with_logits


@pytest.mark.parametrize("alias,target,logits", [("ctc_loss", "ctc_loss_with_log_probs", False),
                                                  ("ctc_loss_with_logits", "ctc_loss_v2", True)])
def test_deprecated_aliases_warn(alias, target, logits):
    rng = np.random.default_rng(40)
    labels, x, ll, dl = _batch(rng, 8, 2, 4, 2, 0)
    data = x if logits else ref.log_softmax(x).astype(np.float32)
    with pytest.warns(DeprecationWarning, match="Use ctc_loss_v2 for logits, or "
                                                "ctc_loss_with_log_probs for log probabilities"):
        got = getattr(nn_ops, alias)(labels, data, ll, dl, 0).numpy()
    want = getattr(nn_ops, target)(labels, data, ll, dl, 0).numpy()
    np.testing.assert_array_equal(got, want)


# ---- error inputs ----------------------------------------------------------------------------
def _good():
    return dict(labels=np.ones((2, 3), np.int32), data=np.zeros((5, 2, 4), np.float32),
                label_length=np.array([1, 2], np.int32), data_length=np.array([5, 4], np.int32),
                blank_index=0)


_ERRORS = [
    (dict(data=np.zeros((5, 2, 4), np.float64)), TypeError, "logits must be float16 or float32"),
    (dict(data=np.zeros((5, 2, 4), np.int32)), TypeError, "logits must be float16 or float32"),
    (dict(data=np.zeros((5, 8), np.float32)), ValueError, "logits must have rank 3"),
    (dict(labels=np.ones((2, 3), np.int64)), TypeError, "labels must be int32"),
    (dict(labels=np.ones((2, 3), np.float32)), TypeError, "labels must be int32"),
    (dict(labels=np.ones(2, np.int32)), ValueError, "labels must have rank 2"),
    (dict(labels=np.ones((3, 3), np.int32)), ValueError,
     r"The batch size in the data \(dim1: 2\) and labels \(dim0: 3\)"),
    (dict(label_length=np.array([1, 2], np.int64)), TypeError, "label_length must be int32"),
    (dict(label_length=np.array([1, 2, 1], np.int32)), ValueError,
     r"label_length: The label lengths tensor needs to be of shape \[2\]"),
    (dict(data_length=np.array([[5, 4]], np.int32)), ValueError,
     r"logit_length: The data lengths tensor needs to be of shape \[2\]"),
    (dict(data_length=np.array([5.0, 4.0], np.float32)), TypeError,
     "logit_length must be int32"),
    (dict(data_length=np.array([6, 4], np.int32)), ValueError,
     r"logit_length must be in \[0, 5\], got 6"),
    (dict(data_length=np.array([5, -1], np.int32)), ValueError,
     r"logit_length must be in \[0, 5\], got -1"),
    (dict(label_length=np.array([4, 1], np.int32)), ValueError,
     r"label_length must be in \[0, 3\], got 4"),
    (dict(label_length=np.array([1, -2], np.int32)), ValueError,
     r"label_length must be in \[0, 3\], got -2"),
    (dict(labels=np.array([[1, 4, 0], [1, 1, 1]], np.int32), label_length=np.array([2, 2],
                                                                                    np.int32)),
     ValueError, r"labels must be in \[0, 4\) \(num_classes\), got 4 at \[0, 1\]"),
    (dict(labels=np.array([[1, 1, 0], [-1, 1, 1]], np.int32)), ValueError,
     r"labels must be in \[0, 4\).*got -1"),
    (dict(blank_index=4), ValueError, r"blank_index must be in \[0, 4\)"),
    (dict(blank_index=-1), ValueError, r"blank_index must be in \[0, 4\)"),
    (dict(blank_index=1.0), TypeError, "blank_index must be an int"),
    (dict(blank_index=True), TypeError, "blank_index must be an int"),
    (dict(out_dtype=np.float16), ValueError,
     "out_dtype cannot be float16 when dtype of logits is float32."),
    (dict(out_dtype=np.float64), TypeError, "out_dtype must be float16 or float32"),
    (dict(out_dtype=np.int32), TypeError, "out_dtype must be float16 or float32"),
]


@pytest.mark.parametrize("bad,exc,match", _ERRORS)
def test_error_inputs_ctc_loss_v2(bad, exc, match):
    kw = {**_good(), **bad}
    with pytest.raises(exc, match=match):
        nn_ops.ctc_loss_v2(kw["labels"], kw["data"], kw["label_length"], kw["data_length"],
                           kw["blank_index"], out_dtype=kw.get("out_dtype"))


@pytest.mark.parametrize("bad,exc,match", _ERRORS)
def test_error_inputs_ctc_loss_with_log_probs(bad, exc, match):
    kw = {**_good(), **bad}
    match = match.replace("logit_length", "data_length").replace("logits", "data")
    with pytest.raises(exc, match=match):
        nn_ops.ctc_loss_with_log_probs(kw["labels"], kw["data"], kw["label_length"],
                                       kw["data_length"], kw["blank_index"],
                                       out_dtype=kw.get("out_dtype"))


# ---- which arithmetic an entry takes: float64 linear space, or the exact log-space kernel ----
def _paths(labels, x, ll, dl, blank=0):
    loss, grad = np.empty(x.shape[1], np.float32), np.empty(x.shape, np.float32)
    exact = ctc_cpu._ctc_serial(x, labels, ll, dl, blank, True, True, loss, grad)
    return exact, loss, grad


def test_ordinary_entries_take_the_linear_space_path():
    labels, x, ll, dl = _batch(np.random.default_rng(30), 40, 6, 7, 5, 0)
    exact, loss, grad = _paths(labels, x, ll, dl)
    assert not exact.any()
    want_loss, want_grad = ref.ctc_loss(labels, x, ll, dl, 0)
    np.testing.assert_allclose(loss, want_loss, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=2e-5)


def test_entries_the_linear_space_path_cannot_represent_take_the_exact_path():
    rng = np.random.default_rng(31)
    labels, x, ll, dl = _batch(rng, 12, 5, 6, 3, 0)
    ll[:] = 2
    dl[:] = 12
    labels[:, :2] = [1, 2]
    ll[1], dl[1] = 3, 4                # infeasible: repeated labels need 5 steps, 4 given
    labels[1, :3] = [3, 3, 3]
    dl[2] = 0                          # no time steps
    x[5, 3, 2] = np.nan                # a non-finite input inside the data
    x[:, 4, :] *= 2000.0               # path probabilities far below float64's range
    exact, loss, grad = _paths(labels, x, ll, dl)
    np.testing.assert_array_equal(exact, [False, True, True, True, True])
    want_loss, want_grad = ref.ctc_loss(labels, x, ll, dl, 0)
    ok = [0, 1, 2, 4]                  # entry 3 holds a NaN
    np.testing.assert_allclose(loss[ok], want_loss[ok], rtol=2e-5)
    np.testing.assert_allclose(grad[:, :3], want_grad[:, :3], rtol=1e-3, atol=1e-4)
    # logits of a few thousand carry float32 rounding of ~1e-3 into exp(logit - lse)
    np.testing.assert_allclose(grad[:, 4], want_grad[:, 4], rtol=1e-3, atol=5e-3)
    assert np.isnan(loss[3])


def test_linear_space_and_exact_paths_agree_on_ordinary_entries():
    labels, x, ll, dl = _batch(np.random.default_rng(32), 60, 4, 9, 8, 3)
    exact, loss, grad = _paths(labels, x, ll, dl, 3)
    assert not exact.any()
    loss_e, grad_e = np.empty_like(loss), np.empty_like(grad)
    for b in range(x.shape[1]):
        ctc_cpu._ctc_one(x, labels, ll, dl, 3, True, True, loss_e, grad_e, b)
    np.testing.assert_allclose(loss, loss_e, rtol=1e-5)
    np.testing.assert_allclose(grad, grad_e, rtol=1e-3, atol=2e-5)


def test_a_row_with_a_tiny_probability_stays_on_the_linear_space_path():
    # a softmax entry below 2**-100 at an extended label: that row's probabilities are rebuilt
    # from the log-probabilities in float64 (scaled), and the entry stays on the fast path
    labels, x, ll, dl = _batch(np.random.default_rng(33), 30, 3, 6, 3, 0)
    ll[:], dl[:] = 3, 30
    labels[:, :3] = [[1, 2, 3], [4, 4, 5], [2, 1, 2]]
    x[0, :, 3] = -95.0                 # unreachable at t=0 but gathered there
    x[7, 1, 0] = -80.0                 # the blank, reachable
    x[12, 2, 2] = x[12, 2].max() + 90  # every other class far below
    exact, loss, grad = _paths(labels, x, ll, dl)
    assert not exact.any()
    want_loss, want_grad = ref.ctc_loss(labels, x, ll, dl, 0)
    np.testing.assert_allclose(loss, want_loss, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=2e-5)


def test_fast_exp_within_one_ulp_of_float64():
    rng = np.random.default_rng(34)
    x = np.concatenate([rng.uniform(-110, 90, 200_000), np.linspace(-104.5, 89.0, 20_001),
                        [np.nan, -np.inf, np.inf, 0.0, -0.0, 88.72283, 88.72284, -87.33654,
                         -103.97]]).astype(np.float32)
    got = np.empty_like(x)
    ctc_cpu._exp_row(x, np.float32(0.0), got)
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x.astype(np.float64))
        want32 = want.astype(np.float32)
    normal = np.isfinite(want32) & (want32 >= np.finfo(np.float32).tiny)
    ulp = np.abs(got[normal] - want[normal]) / np.spacing(want32[normal])
    assert ulp.max() <= 1.0
    tiny = ~normal & np.isfinite(want32)  # denormal or 0: within one denormal step
    assert np.abs(got[tiny] - want[tiny]).max() <= np.finfo(np.float32).smallest_subnormal
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))
    np.testing.assert_array_equal(got[np.isinf(want32)], np.inf)


@pytest.mark.parametrize("n", [1, 7, 40, 1000, 1003])
def test_softmax_row_matches_float64(n):
    row = (3 * np.random.default_rng(n).standard_normal(n)).astype(np.float32)
    out = np.empty_like(row)
    lse = ctc_cpu._softmax_row(row, out, True)
    r64 = row.astype(np.float64)
    want_lse = r64.max() + np.log(np.exp(r64 - r64.max()).sum())
    # float32 throughout, like numpy's: row - max rounds to half an ulp of up to ~20
    np.testing.assert_allclose(out, np.exp(r64 - want_lse), rtol=1.5e-6, atol=0)
    np.testing.assert_allclose(lse, want_lse, rtol=2e-7, atol=1e-6)
    for bad in (np.nan, np.inf):
        row2 = row.copy()
        row2[n // 2] = bad
        assert not np.isfinite(ctc_cpu._softmax_row(row2, out, True))
