"""poptorch.optim: the update rules (numpy float64 references of PopART's SGD, Adam and LAMB
arithmetic, and plain torch.optim), the accumulation dtypes, constant/variable attributes,
the supported-type checks and warnings, and the IPU optimizer state (research section 6.2;
PopTorch's python/optim.py, python/_optimizer_attributes.py, tests/optimizers_test.py)."""

from __future__ import annotations

import copy
import logging
import os
import pathlib
import pickle
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402

optim = poptorch.optim
LOGGER = "poptorch::python"


# ---- numpy float64 references ------------------------------------------------------------
def sgd_ref(w, g, st, lr, mm=0.0, dm=0.0, wd=0.0, nesterov=False, combined=False, vs=1.0,
            velocity_fp16=False):
    """PopART's SGD (sgd.hpp): velocity from zero, dampening from the first step; combined
    pre-computes mm * v + (1 - dm) * wd * vs * w after the update."""
    if mm == 0 and not st.get("accl"):
        return w - lr * (1 - dm) * (g + wd * w)
    if combined:
        v = st.get("v", (1 - dm) * wd * vs * w) + (1 - dm) * vs * g
        upd = vs * (g + wd * w) + mm * v if nesterov else v
        w = w - lr / vs * upd
        st["v"] = v * mm + (1 - dm) * wd * vs * w
        return w
    d = g + wd * w
    v = st.get("v", np.zeros_like(w)) * mm + (1 - dm) * vs * d
    if velocity_fp16:
        v = v.astype(np.float16).astype(np.float64)
    st["v"] = v
    upd = vs * d + mm * v if nesterov else v
    return w - lr / vs * upd


def adam_ref(w, g, st, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, decoupled=False,
             lamb=False, bias=True, mwn=65500.0, m_fp16=False, v_fp16=False):
    """Adam (L2 or decoupled) and PopTorch's LAMB: upd = m_hat / (sqrt(v_hat) + eps) + wd * w,
    w -= lr * min(|w|, mwn) / |upd| * upd (ratio 1 when a norm is 0)."""
    def r16(x, flag):
        return x.astype(np.float16).astype(np.float64) if flag else x
    if not decoupled:
        g = g + wd * w
    t = st["t"] = st.get("t", 0) + 1
    m = st["m"] = r16(b1 * st.get("m", 0.0) + (1 - b1) * g, m_fp16)
    v = st["v"] = r16(b2 * st.get("v", 0.0) + (1 - b2) * g * g, v_fp16)
    if bias:
        m, v = m / (1 - b1 ** t), v / (1 - b2 ** t)
    upd = m / (np.sqrt(v) + eps)
    if decoupled:
        upd = upd + wd * w
    if not lamb:
        return w - lr * upd
    r1 = np.linalg.norm(w)
    if mwn is not None:
        r1 = min(r1, mwn)
    r2 = np.linalg.norm(upd)
    trust = 1.0 if r1 == 0 or r2 == 0 else r1 / r2
    return w - lr * trust * upd


def _steps(opt_factory, ref, shape=(4, 3), n=10, seed=0, w0=None, **ref_kw):
    """Run n steps of an optimizer on fixed random gradients (float64) against ref."""
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal(shape) if w0 is None else w0
    grads = [rng.standard_normal(shape) for _ in range(n)]
    p = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = opt_factory([p])
    w, st = w0.copy(), {}
    for g in grads:
        p.grad = torch.from_numpy(g.copy())
        opt.step()
        w = ref(w, g, st, **ref_kw)
    return p.detach().numpy(), w, opt


# ---- LAMB ------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mwn", [None, 0.5, 2.0])
def test_lamb_matches_numpy_reference(bias, mwn):
    got, want, _ = _steps(
        lambda ps: optim.LAMB(ps, lr=0.02, weight_decay=0.1, bias_correction=bias,
                              max_weight_norm=mwn, betas=(0.8, 0.95), eps=1e-6),
        adam_ref, lr=0.02, b1=0.8, b2=0.95, eps=1e-6, wd=0.1, decoupled=True, lamb=True,
        bias=bias, mwn=65500.0 if mwn is None else mwn)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_lamb_defaults_and_none_is_fp16_max():
    p = torch.nn.Parameter(torch.zeros(2))
    opt = optim.LAMB([p])
    assert opt.defaults == {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8,
                            "weight_decay": 1e-2, "max_weight_norm": 65500.0}
    assert opt.bias_correction is True and opt.loss_scaling == 1.0
    # a weight norm above 65500 is clamped there (what PopTorch stores for None)
    w0 = np.full((4,), 40000.0)
    got, want, _ = _steps(lambda ps: optim.LAMB(ps, lr=0.1), adam_ref, shape=(4,), w0=w0,
                          lr=0.1, wd=1e-2, decoupled=True, lamb=True, mwn=65500.0, n=3)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    unclamped = adam_ref(w0.copy(), np.ones(4), {}, lr=0.1, wd=1e-2, decoupled=True, lamb=True,
                         mwn=None)
    assert not np.allclose(got, unclamped)


def test_lamb_trust_ratio_is_one_for_zero_weights_and_group_max_weight_norm():
    p = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    q = torch.nn.Parameter(torch.full((3,), 3.0, dtype=torch.float64))
    opt = optim.LAMB([{"params": [p]}, {"params": [q], "max_weight_norm": 1.0}], lr=0.1,
                     weight_decay=0.0)
    p.grad = q.grad = torch.ones(3, dtype=torch.float64)
    opt.step()
    upd = 1.0 / (1.0 + 1e-8)  # m_hat = v_hat = 1 on the first step
    np.testing.assert_allclose(p.detach().numpy(), -0.1 * upd)  # trust 1
    # |q| = sqrt(27) clamped to 1, |upd| = sqrt(3) * upd
    np.testing.assert_allclose(q.detach().numpy(), 3.0 - 0.1 / np.sqrt(3.0), rtol=1e-12)


# ---- SGD ---------------------------------------------------------------------------------
@pytest.mark.parametrize("combined", [False, True])
@pytest.mark.parametrize("mm, dm, wd, nesterov", [(0.9, 0.0, 0.0, False),
                                                  (0.9, 0.0, 0.05, True),
                                                  (0.5, 0.3, 0.1, False)])
def test_sgd_variants_match_popart_arithmetic(combined, mm, dm, wd, nesterov):
    vs = 4.0 if combined else None
    got, want, _ = _steps(
        lambda ps: optim.SGD(ps, lr=0.1, momentum=mm, dampening=dm, weight_decay=wd,
                             nesterov=nesterov, use_combined_accum=combined,
                             velocity_scaling=vs, loss_scaling=8.0),
        sgd_ref, lr=0.1, mm=mm, dm=dm, wd=wd, nesterov=nesterov, combined=combined,
        vs=4.0 if combined else 8.0)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("combined", [False, True])
def test_sgd_without_dampening_equals_torch_sgd(combined):
    torch_ref, _, _ = _steps(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                        weight_decay=0.01, nesterov=True),
                             sgd_ref, lr=0.1)
    got, _, _ = _steps(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01,
                                            nesterov=True, use_combined_accum=combined,
                                            velocity_scaling=16.0 if combined else None),
                       sgd_ref, lr=0.1)
    np.testing.assert_allclose(got, torch_ref, rtol=1e-12, atol=1e-12)


def test_sgd_dampening_applies_from_the_first_step_unlike_torch():
    got, want, _ = _steps(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.5),
                          sgd_ref, lr=0.1, mm=0.9, dm=0.5, n=1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    torch_ref, _, _ = _steps(lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                        dampening=0.5), sgd_ref, lr=0.1, n=1)
    assert not np.allclose(got, torch_ref)


def test_sgd_without_momentum_is_plain_sgd_with_dampening_factor():
    got, want, opt = _steps(lambda ps: optim.SGD(ps, lr=0.1, dampening=0.25, weight_decay=0.1),
                            sgd_ref, lr=0.1, dm=0.25, wd=0.1)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not opt.state  # no velocity tensor without momentum


def test_combined_variant_lags_a_hyper_parameter_change_by_one_step():
    """PopART pre-computes mm * v + (1 - dm) * wd * vs * w with the old values."""
    rng = np.random.default_rng(1)
    w0, grads = rng.standard_normal(5), [rng.standard_normal(5) for _ in range(4)]
    results = {}
    for combined in (False, True):
        p = torch.nn.Parameter(torch.from_numpy(w0.copy()))
        opt = optim.SGD([p], lr=0.1, momentum=0.9, weight_decay=0.1,
                        use_combined_accum=combined)
        w, st = w0.copy(), {}
        for i, g in enumerate(grads):
            hp = {"mm": 0.9, "wd": 0.1} if i < 2 else {"mm": 0.5, "wd": 0.3}
            opt.param_groups[0]["momentum"] = hp["mm"]
            opt.param_groups[0]["weight_decay"] = hp["wd"]
            p.grad = torch.from_numpy(g.copy())
            opt.step()
            w = sgd_ref(w, g, st, lr=0.1, combined=combined, **hp)
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-12)
        results[combined] = w
    assert not np.allclose(results[False], results[True])


def test_sgd_velocity_is_stored_in_velocity_accum_type():
    got, want, opt = _steps(
        lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, velocity_accum_type=torch.float16,
                             loss_scaling=4.0),
        sgd_ref, lr=0.1, mm=0.9, vs=4.0, velocity_fp16=True)
    (state,) = opt.state.values()
    assert state["velocity"].dtype == torch.float16
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    exact, _, _ = _steps(lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), sgd_ref, lr=0.1)
    assert not np.array_equal(got, exact)


def test_sgd_defaults_and_signature():
    p = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(TypeError):
        optim.SGD([p])  # lr is required, as in PopTorch
    opt = optim.SGD([p], lr=0.1)
    group = opt.param_groups[0]
    assert (group["momentum"], group["dampening"], group["weight_decay"],
            group["nesterov"]) == (0, 0, 0, False)
    assert "velocity_scaling" not in group and opt.use_combined_accum is False
    assert (opt.loss_scaling, opt.max_grad_norm) == (1.0, float("inf"))
    assert (opt.accum_type, opt.velocity_accum_type) == (torch.float32, torch.float32)
    combined = optim.SGD([p], lr=0.1, use_combined_accum=True, velocity_scaling=2.0)
    assert combined.param_groups[0]["velocity_scaling"] == 2.0
    assert combined.defaults["velocity_scaling"] == 2.0


def test_velocity_scaling_with_the_separate_variant_warns(caplog):
    p = torch.nn.Parameter(torch.zeros(2))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        opt = optim.SGD([p], lr=0.1, velocity_scaling=2.0)
    assert "velocity_scaling value ignored when using the separate variant " \
           "(use_combined_accum=False)" in caplog.text
    assert "velocity_scaling" not in opt.param_groups[0]


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, accum_type=torch.bfloat16),
    lambda ps: optim.SGD(ps, lr=0.1, velocity_accum_type=torch.float64),
    lambda ps: optim.Adam(ps, accum_type=torch.int32),
    lambda ps: optim.AdamW(ps, first_order_momentum_accum_type=torch.bfloat16),
    lambda ps: optim.RMSprop(ps, second_order_momentum_accum_type=torch.float64),
    lambda ps: optim.LAMB(ps, accum_type=torch.bfloat16)])
def test_accumulation_types_must_be_float16_or_float32(make):
    with pytest.raises(AssertionError, match="Accumulation types must be either torch.float32 "
                                             "or torch.float16"):
        make([torch.nn.Parameter(torch.zeros(2))])


# ---- Adam / AdamW / RMSprop ----------------------------------------------------------------
@pytest.mark.parametrize("cls, torch_cls, decoupled", [(optim.Adam, torch.optim.Adam, False),
                                                       (optim.AdamW, torch.optim.AdamW, True)])
def test_adam_family_matches_torch_and_numpy(cls, torch_cls, decoupled):
    kw = dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1)
    got, want, _ = _steps(lambda ps: cls(ps, **kw), adam_ref, lr=0.01, b1=0.8, b2=0.9,
                          eps=1e-6, wd=0.1, decoupled=decoupled)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    torch_got, _, _ = _steps(lambda ps: torch_cls(ps, **kw), adam_ref)
    np.testing.assert_allclose(got, torch_got, rtol=1e-12, atol=1e-12)


def test_adamw_without_bias_correction_still_corrects_the_bias():
    got, _, _ = _steps(lambda ps: optim.AdamW(ps, lr=0.01, bias_correction=False), adam_ref)
    want, _, _ = _steps(lambda ps: torch.optim.AdamW(ps, lr=0.01), adam_ref)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("m16, v16", [(True, False), (False, True), (True, True)])
def test_adam_moments_are_stored_in_their_accumulation_types(m16, v16):
    half, full = torch.float16, torch.float32
    got, want, opt = _steps(
        lambda ps: optim.Adam(ps, lr=0.01, first_order_momentum_accum_type=half if m16 else full,
                              second_order_momentum_accum_type=half if v16 else full),
        adam_ref, lr=0.01, m_fp16=m16, v_fp16=v16)
    (state,) = opt.state.values()
    assert state["exp_avg"].dtype == (half if m16 else torch.float64)
    assert state["exp_avg_sq"].dtype == (half if v16 else torch.float64)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_rmsprop_without_tf_variant_is_torch_rmsprop():
    kw = dict(lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.1)
    got, _, _ = _steps(lambda ps: optim.RMSprop(ps, **kw), adam_ref)
    want, _, _ = _steps(lambda ps: torch.optim.RMSprop(ps, **kw), adam_ref)
    np.testing.assert_array_equal(got, want)


def test_apply_update_with_a_snapshot_uses_the_device_hyper_parameters():
    """Host edits not passed to setOptimizer do not reach the device."""
    rng = np.random.default_rng(5)
    w0, g = rng.standard_normal(4), rng.standard_normal(4)
    p = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = optim.SGD([p], lr=0.1, momentum=0.9, loss_scaling=2.0)
    device = optim.hyperparameters(opt)
    opt.param_groups[0]["lr"] = 10.0
    opt.param_groups[0]["momentum"] = 0.0
    opt.loss_scaling = 64.0
    p.grad = torch.from_numpy(g.copy())
    optim.apply_update(opt, device)
    np.testing.assert_allclose(p.detach().numpy(), sgd_ref(w0, g, {}, lr=0.1, mm=0.9, vs=2.0),
                               rtol=1e-12)
    assert opt.param_groups[0]["lr"] == 10.0 and opt.loss_scaling == 64.0  # host untouched
    assert device["attributes"]["loss_scaling"] == 2.0


# ---- 10 steps through trainingModel, as PopTorch's test_optimizer_results -----------------
class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(42)
        self.lin = torch.nn.Linear(10, 10)

    def forward(self, x):
        out = torch.log_softmax(self.lin(x), dim=-1)
        return out, poptorch.identity_loss(out, reduction="sum")


class LAMBNoBias(optim.LAMB):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, bias_correction=False, **kwargs)


class AdamWNoBias(optim.AdamW):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, bias_correction=False, **kwargs)


def _lamb_cpu(bias):
    def step(model, grads, states):
        with torch.no_grad():
            for (name, p), g in zip(model.named_parameters(), grads):
                w = adam_ref(p.detach().double().numpy(), g.double().numpy(),
                             states.setdefault(name, {}), lr=0.01, wd=1e-2, decoupled=True,
                             lamb=True, bias=bias)
                p.copy_(torch.from_numpy(w))
    return step


def _torch_cpu(cls, **kw):
    def step(model, grads, states):
        if "opt" not in states:
            states["opt"] = cls(model.parameters(), lr=0.01, **kw)
        for p, g in zip(model.parameters(), grads):
            p.grad = g
        states["opt"].step()
    return step


_ALL = [
    ("poptorch.SGD", lambda ps: optim.SGD(ps, lr=0.01), _torch_cpu(torch.optim.SGD)),
    ("poptorch.SGD combined momentum",
     lambda ps: optim.SGD(ps, lr=0.01, momentum=0.9, use_combined_accum=True),
     _torch_cpu(torch.optim.SGD, momentum=0.9)),
    ("poptorch.SGD separate momentum", lambda ps: optim.SGD(ps, lr=0.01, momentum=0.9),
     _torch_cpu(torch.optim.SGD, momentum=0.9)),
    ("poptorch.Adam", lambda ps: optim.Adam(ps, lr=0.01), _torch_cpu(torch.optim.Adam)),
    ("poptorch.AdamW", lambda ps: optim.AdamW(ps, lr=0.01), _torch_cpu(torch.optim.AdamW)),
    ("AdamWNoBias", lambda ps: AdamWNoBias(ps, lr=0.01), _torch_cpu(torch.optim.AdamW)),
    ("poptorch.RMSprop", lambda ps: optim.RMSprop(ps, lr=0.01),
     _torch_cpu(torch.optim.RMSprop)),
    ("poptorch.LAMB", lambda ps: optim.LAMB(ps, lr=0.01), _lamb_cpu(True)),
    ("LAMBNoBias", lambda ps: LAMBNoBias(ps, lr=0.01), _lamb_cpu(False)),
    ("torch.SGD", lambda ps: torch.optim.SGD(ps, lr=0.01), _torch_cpu(torch.optim.SGD)),
    ("torch.Adam", lambda ps: torch.optim.Adam(ps, lr=0.01), _torch_cpu(torch.optim.Adam)),
    ("torch.AdamW", lambda ps: torch.optim.AdamW(ps, lr=0.01), _torch_cpu(torch.optim.AdamW)),
    ("torch.RMSprop", lambda ps: torch.optim.RMSprop(ps, lr=0.01),
     _torch_cpu(torch.optim.RMSprop)),
]


@pytest.mark.parametrize("name, make, cpu_step", _ALL, ids=[a[0] for a in _ALL])
def test_optimizer_results_over_ten_steps(name, make, cpu_step):
    x = torch.rand(10)
    ipu_model, cpu_model = _Model(), _Model()
    training = poptorch.trainingModel(ipu_model, optimizer=make(ipu_model.parameters()))
    states, ipu_loss, cpu_loss = {}, [], []
    for _ in range(10):
        ipu_loss.append(float(training(x)[1]))
        cpu_model.zero_grad()
        loss = cpu_model(x)[1]
        loss.backward()
        cpu_loss.append(float(loss.detach()))
        cpu_step(cpu_model, [p.grad.clone() for p in cpu_model.parameters()], states)
        for p, q in zip(ipu_model.parameters(), cpu_model.parameters()):
            torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ipu_loss, cpu_loss, rtol=1e-5, atol=1e-5)
    assert ipu_loss[-1] != ipu_loss[0]  # it trained


def test_training_model_never_runs_a_subclass_step(caplog):
    class Custom(optim.SGD):
        def step(self, closure=None):
            raise RuntimeError("Python step code must not run")

    model, ref = _Model(), _Model()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        training = poptorch.trainingModel(model, optimizer=Custom(model.parameters(), lr=0.1))
    assert "Optimizer `Custom` subclassed from classes in poptorch.optim or torch.optim are " \
           "unlikely to behave as intended. Poptorch does not run Python optimizer code " \
           "directly; but instead uses IPU native optimisers implemented in PopART." \
           in caplog.text
    x = torch.rand(10)
    training(x)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    ref(x)[1].backward()
    ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach())


# ---- supported types ------------------------------------------------------------------
_UNSUPPORTED = ("Unsupported optimizer type. Types supported _OptimizerType.SGD1, "
                "_OptimizerType.SGD2, _OptimizerType.ADAM, _OptimizerType.ADAMW, "
                "_OptimizerType.ADAMW_NO_BIAS, _OptimizerType.RMSPROP, "
                "_OptimizerType.RMSPROP_CENTERED, _OptimizerType.LAMB, "
                "_OptimizerType.LAMB_NO_BIAS")


def test_check_supported_names_and_rejects():
    ps = [torch.nn.Parameter(torch.zeros(2))]
    cases = [(optim.SGD(ps, lr=0.1), "SGD2"),
             (optim.SGD(ps, lr=0.1, use_combined_accum=True), "SGD1"),
             (torch.optim.SGD(ps, lr=0.1), "SGD2"), (optim.Adam(ps), "ADAM"),
             (torch.optim.Adam(ps), "ADAM"), (optim.AdamW(ps), "ADAMW"),
             (torch.optim.AdamW(ps), "ADAMW"),
             (optim.AdamW(ps, bias_correction=False), "ADAMW_NO_BIAS"),
             (optim.RMSprop(ps), "RMSPROP"), (torch.optim.RMSprop(ps, centered=True),
                                               "RMSPROP_CENTERED"),
             (optim.LAMB(ps), "LAMB"), (optim.LAMB(ps, bias_correction=False), "LAMB_NO_BIAS")]
    for opt, kind in cases:
        assert optim.check_supported(opt) == kind
    with pytest.raises(AssertionError) as info:
        optim.check_supported(torch.optim.Adagrad(ps))
    assert str(info.value) == _UNSUPPORTED
    model = _Model()
    with pytest.raises(AssertionError, match="Unsupported optimizer type"):
        poptorch.trainingModel(model, optimizer=torch.optim.Adagrad(model.parameters()))


def test_check_supported_errors():
    ps = [torch.nn.Parameter(torch.zeros(2))]
    qs = [torch.nn.Parameter(torch.zeros(2))]
    for opt in (torch.optim.Adam(ps, amsgrad=True), optim.AdamW(ps, amsgrad=True)):
        with pytest.raises(ValueError, match="Only non-amsgrad Adam/AdamW optimizers are "
                                             "supported."):
            optim.check_supported(opt)
    mixed = torch.optim.RMSprop([{"params": ps}, {"params": qs, "centered": True}])
    with pytest.raises(AssertionError, match=r"All parameter groups must have the same value "
                                             r"for the 'centered' attribute \(Group 0: False / "
                                             r"Group 1: True\)"):
        optim.check_supported(mixed)
    with pytest.raises(poptorch.Error, match="Maximum norm of gradients cannot be NaN"):
        optim.check_supported(optim.SGD(ps, lr=0.1, max_grad_norm=float("nan")))


# ---- variable and constant attributes -----------------------------------------------------
def test_variable_attributes_follow_the_constructor_arguments():
    ps = [torch.nn.Parameter(torch.zeros(2))]
    opt = optim.SGD(ps, lr=0.01, momentum=0.0)
    assert not opt.variable_attrs.isConstant("lr")
    assert not opt.variable_attrs.isConstant("momentum")
    assert opt.variable_attrs.isConstant("loss_scaling")
    assert opt.variable_attrs.isConstant("weight_decay")
    opt = optim.SGD(ps, lr=0.01, loss_scaling=2.0)
    opt.variable_attrs.markAsConstant("loss_scaling")
    opt.variable_attrs.markAsVariable("momentum")
    assert opt.variable_attrs.isConstant("loss_scaling")
    assert not opt.variable_attrs.isConstant("momentum")
    with pytest.raises(AssertionError, match=r"Unknown attribute nope, allowed values: "
                                             r"\['lr', 'momentum'"):
        opt.variable_attrs.markAsVariable("nope")
    with pytest.raises(AssertionError, match="Unknown attribute velocity_scaling"):
        opt.variable_attrs.markAsConstant("velocity_scaling")  # separate variant: no group key
    for cls in (optim.Adam, optim.AdamW, optim.RMSprop, optim.LAMB):
        opt = cls(ps)
        assert all(opt.variable_attrs.isConstant(a) for a in list(opt.defaults) +
                   ["loss_scaling"])
        assert not cls(ps, lr=0.1).variable_attrs.isConstant("lr")


def test_describe_constness_of_torch_optimizers():
    ps = [torch.nn.Parameter(torch.zeros(2))]

    def const(opt, label):
        return optim.describe(opt)["values"][label][0][1]
    assert const(torch.optim.SGD(ps, lr=0.01), "momentums")
    assert const(torch.optim.SGD(ps, lr=0.01, momentum=0.0), "momentums")
    assert not const(torch.optim.SGD(ps, lr=0.01, momentum=0.9), "momentums")
    assert not const(torch.optim.SGD(ps, lr=0.01), "learning rates")  # lr always variable
    assert const(torch.optim.AdamW(ps), "weight decays")  # AdamW's default 1e-2
    assert not const(torch.optim.Adam(ps, weight_decay=1e-2), "weight decays")
    assert const(torch.optim.Adam(ps, betas=(0.5, 0.6)), "beta1s")  # betas always constant
    snap = optim.describe(optim.SGD(ps, lr=0.1, loss_scaling=4.0))
    assert snap["values"]["velocity scalings"][0] == (4.0, False)  # glued to loss scaling


def _sgd_model():
    model = _Model()
    return model, dict(model.named_parameters())


def test_check_constant_attributes_accepts_variable_changes():
    model, _ = _sgd_model()
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9, loss_scaling=2.0)
    old = optim.describe(opt)
    opt.param_groups[0]["lr"] = 0.5
    opt.param_groups[0]["momentum"] = 0.1
    opt.loss_scaling = 8.0
    optim.check_constant_attributes(old, optim.describe(opt))
    torch_opt = torch.optim.Adam(model.parameters(), lr=0.1)
    old = optim.describe(torch_opt)
    torch_opt.param_groups[0]["lr"] = 0.01
    optim.check_constant_attributes(old, torch_opt)


@pytest.mark.parametrize("change, message", [
    (lambda o: o.param_groups[0].__setitem__("momentum", 0.9),
     "Problem with momentums. OptimizerValue for tensor lin.bias is not a valid "
     "replacement.Values are constant but do not match."),
    (lambda o: setattr(o, "loss_scaling", 2.0),
     "Problem with loss scaling. Values are constant but do not match."),
    (lambda o: o.param_groups[0].__setitem__("weight_decay", 0.1),
     "Problem with weight decays. OptimizerValue for tensor lin.bias is not a valid "
     "replacement.Values are constant but do not match."),
    (lambda o: o.defaults.__setitem__("weight_decay", 0.1),
     "Problem with weight decays. Default value is not a valid replacement. Values are "
     "constant but do not match."),
    (lambda o: setattr(o, "max_grad_norm", 1.0), "Clip norm settings do not match."),
])
def test_changing_a_constant_attribute_raises(change, message):
    model, _ = _sgd_model()
    opt = optim.SGD(model.parameters(), lr=0.01)
    optim.bind_parameter_names(opt, model.named_parameters())
    old = optim.describe(opt)
    change(opt)
    with pytest.raises(poptorch.Error) as info:
        optim.check_constant_attributes(old, optim.describe(opt))
    assert str(info.value) == message


def test_mark_as_variable_allows_the_change():
    model, _ = _sgd_model()
    opt = optim.SGD(model.parameters(), lr=0.01)
    opt.variable_attrs.markAsVariable("loss_scaling")
    old = optim.describe(opt)
    opt.loss_scaling = 2.0
    optim.check_constant_attributes(old, opt)


def test_replacing_with_another_kind_of_optimizer_raises():
    model, _ = _sgd_model()
    ps = list(model.parameters())
    cases = [
        (optim.SGD(ps, lr=0.1), optim.Adam(ps),
         "Can not replace optimizer of type SGD with new optimizer of type Adam"),
        (optim.Adam(ps), optim.AdamW(ps), "Weight decay modes do not match"),
        (optim.LAMB(ps), optim.LAMB(ps, bias_correction=False), "Adam modes do not match"),
        (optim.RMSprop(ps), optim.RMSprop(ps, centered=True), "Adaptive modes do not match"),
        (torch.optim.SGD(ps, lr=0.1), torch.optim.SGD(ps, lr=0.1, momentum=0.9),
         "Problem with momentums. Default value is not a valid replacement. Can not replace a "
         "constant value with a non constant value."),
        (optim.SGD(ps, lr=0.1, momentum=0.9), optim.SGD(ps, lr=0.1, momentum=0.9,
                                                        use_combined_accum=True),
         "this has SGDAccumulatorAndMomentum Separate, but other has Combined"),
        (optim.SGD(ps, lr=0.1, momentum=0.9),
         optim.SGD(ps, lr=0.1, momentum=0.9, velocity_accum_type=torch.float16),
         "this has SGDAccumulatorAndMomentum::Separate and sgd2Accl1Type FLOAT, but other "
         "has FLOAT16"),
        (optim.SGD(ps, lr=0.1, max_grad_norm=1.0), optim.SGD(ps, lr=0.1, max_grad_norm=2.0),
         "Clip norm settings at index 0 do not match."),
    ]
    for old, new, message in cases:
        with pytest.raises(poptorch.Error) as info:
            optim.check_constant_attributes(old, new)
        assert str(info.value) == message


def test_check_constant_attributes_uses_bound_parameter_names():
    model = _Model()
    opt = optim.Adam(model.parameters(), lr=0.1)
    optim.bind_parameter_names(opt, model.named_parameters())
    old = optim.describe(opt)
    opt.param_groups[0]["eps"] = 1e-3
    with pytest.raises(poptorch.Error, match="Problem with eps. OptimizerValue for tensor "
                                             "lin.bias is not a valid replacement."):
        optim.check_constant_attributes(old, opt)


def test_float16_accum_type_selects_the_running_mean_reduction():
    ps = [torch.nn.Parameter(torch.zeros(2))]
    running, post = poptorch.MeanReductionStrategy.Running, poptorch.MeanReductionStrategy.Post
    opts = poptorch.Options()
    opts._freeze()
    optim.select_mean_reduction_strategy(optim.Adam(ps, accum_type=torch.float16), opts, False)
    assert opts.Training.meanAccumulationAndReplicationReductionStrategy == running
    with pytest.raises(AttributeError, match="Can't modify frozen Options"):
        opts.deviceIterations(2)  # frozen again
    for opt in (optim.Adam(ps), optim.SGD(ps, lr=0.1, accum_type=torch.float16,
                                          use_combined_accum=True)):
        fresh = poptorch.Options()
        optim.select_mean_reduction_strategy(opt, fresh, False)
        assert fresh.Training.meanAccumulationAndReplicationReductionStrategy == post
    compiled = poptorch.Options()
    compiled.Training.setMeanAccumulationAndReplicationReductionStrategy(post)
    with pytest.raises(ValueError, match="Invalid optimizer: the new optimizer would require "
                                         "changing options.Training.meanAccumulationAndRepl"
                                         "icationReductionStrategy to poptorch.MeanReduction"
                                         "Strategy.Running but the executable is already "
                                         "compiled."):
        optim.select_mean_reduction_strategy(optim.SGD(ps, lr=0.1, accum_type=torch.float16),
                                             compiled, True)
    optim.select_mean_reduction_strategy(optim.Adam(ps, accum_type=torch.float16), opts, True)


# ---- unexpected attributes ---------------------------------------------------------------
def test_unexpected_attributes_warn_once(caplog):
    model = _Model()
    opt = optim.SGD(model.parameters(), lr=0.01)
    tracker = optim.AttributeTracker()
    opt.initial_step = 0  # present at the first check: recorded, no warning
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        tracker.check(opt)
        assert "unexpected" not in caplog.text
        opt.lr = 0.5
        opt.param_groups[0]["initial_lr"] = 0.1
        tracker.check(opt)
        tracker.check(opt)
    warnings = [r for r in caplog.records if "unexpected" in r.getMessage()]
    assert [r.getMessage() for r in warnings] == [
        "Ignoring unexpected optimizer attribute in SGD2 optimizer: ['lr']",
        "Ignoring unexpected group 0 attribute in SGD2 optimizer: ['initial_lr']"]
    assert all(r.levelno == logging.WARNING for r in warnings)


def test_relaxed_attribute_checks_log_at_debug(caplog):
    opt = optim.Adam([torch.nn.Parameter(torch.zeros(2))])
    tracker = optim.AttributeTracker(relax=True)
    tracker.check(opt)
    opt.foo = 1
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        tracker.check(opt)
    (record,) = [r for r in caplog.records if "unexpected" in r.getMessage()]
    assert record.levelno == logging.DEBUG
    assert record.getMessage() == "Ignoring unexpected optimizer attribute in ADAM optimizer: " \
                                  "['foo']"


# ---- optimizer state ------------------------------------------------------------------------
def test_state_dict_has_ipu_state_once_bound():
    model = _Model()
    opt = optim.Adam(model.parameters(), lr=0.05, weight_decay=0.025, loss_scaling=0.75)
    state = opt.state_dict()
    assert state["ipu_state"] is None and state["ipu_param"] is None
    assert "param_groups" in state and "state" in state
    training = poptorch.trainingModel(model, optimizer=opt)
    optim.bind_parameter_names(opt, model.named_parameters())
    training(torch.rand(10))
    s0 = opt.state_dict()
    assert set(s0["ipu_state"]) == {f"{p}___lin.{n}" for p in ("Accl1", "Accl2", "Step")
                                    for n in ("weight", "bias")}
    torch.testing.assert_close(s0["ipu_state"]["Accl1___lin.weight"],
                               opt.state[model.lin.weight]["exp_avg"])
    assert float(s0["ipu_param"]["learningRate___specific___lin.bias"]) == pytest.approx(0.05)
    assert float(s0["ipu_param"]["weightDecay___specific___lin.bias"]) == pytest.approx(0.025)
    assert float(s0["ipu_param"]["lossScaling_FLOAT"]) == pytest.approx(0.75)
    training(torch.rand(10))
    s1 = opt.state_dict()
    assert not torch.equal(s0["ipu_state"]["Accl1___lin.weight"],
                           s1["ipu_state"]["Accl1___lin.weight"])


def test_sgd_ipu_param_is_popart_scaled_learning_rate():
    model = _Model()
    opt = optim.SGD(model.parameters(), lr=0.05, weight_decay=0.025, loss_scaling=0.75)
    optim.bind_parameter_names(opt, model.named_parameters())
    params = opt.state_dict()["ipu_param"]
    assert float(params["scaledLearningRate0___specific___lin.bias"]) == \
        pytest.approx(0.05 / 0.75)
    assert float(params["weightDecayScaleFactor0___specific___lin.weight"]) == \
        pytest.approx(1 - 0.05 * 0.025)


def test_load_state_dict_round_trip_and_errors():
    model = _Model()
    opt = optim.Adam(model.parameters(), lr=0.1)
    optim.bind_parameter_names(opt, model.named_parameters())
    training = poptorch.trainingModel(model, optimizer=opt)
    training(torch.rand(10))
    saved = opt.state_dict()
    saved["ipu_state"]["Accl1___lin.bias"] = torch.full((10,), 7.0)
    fresh = optim.Adam(model.parameters(), lr=0.1)
    optim.bind_parameter_names(fresh, model.named_parameters())
    fresh.load_state_dict(saved)
    torch.testing.assert_close(fresh.state[model.lin.bias]["exp_avg"], torch.full((10,), 7.0))
    torch.testing.assert_close(fresh.state[model.lin.weight]["exp_avg_sq"],
                               opt.state[model.lin.weight]["exp_avg_sq"])
    with pytest.raises(RuntimeError, match="Only IPU optimizer states can be loaded onto the "
                                           "IPU."):
        fresh.load_state_dict(torch.optim.Adam(model.parameters()).state_dict())
    with pytest.raises(RuntimeError, match="Cannot load optimizer state dictionary because it "
                                           "is empty."):
        fresh.load_state_dict({})


def test_copy_keeps_poptorch_attributes():
    opt = optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=0.05, loss_scaling=0.05,
                    velocity_scaling=128.1, use_combined_accum=True)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(opt, 0.5)  # patches opt.step
    for clone in (copy.copy(opt), copy.deepcopy(opt), pickle.loads(pickle.dumps(opt))):
        assert clone.loss_scaling == 0.05 and clone.use_combined_accum is True
        assert clone.param_groups[0]["velocity_scaling"] == 128.1
        assert not clone.variable_attrs.isConstant("velocity_scaling")
    assert scheduler.get_last_lr() == [0.05]


# ---- a program through the CLI ------------------------------------------------------------
@pytest.mark.slow  # a subprocess importing torch: ~20 s on CI's two cores
def test_program_trains_with_lamb(tmp_path):
    prog = tmp_path / "lamb.py"
    prog.write_text(
        "import torch\nimport poptorch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(4, 2)\n        self.loss = torch.nn.MSELoss()\n"
        "    def forward(self, x, y):\n        out = self.fc(x)\n"
        "        return out, self.loss(out, y)\n"
        "torch.manual_seed(0)\n"
        "model = M()\n"
        "opt = poptorch.optim.LAMB(model.parameters(), lr=0.05, max_weight_norm=None)\n"
        "training = poptorch.trainingModel(model, optimizer=opt)\n"
        "x, y = torch.randn(8, 4), torch.randn(8, 2)\n"
        "losses = [float(training(x, y)[1]) for _ in range(20)]\n"
        "print(opt.variable_attrs.isConstant('max_weight_norm'), losses[-1] < losses[0])\n")
    root = str(pathlib.Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", str(prog)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]


def _sgd_update_data(g, dtype, n):
    """Weights over 60 decades, subnormals, signed zeros, infinities and NaN; gradients
    whose products with the learning rates round (and would round differently fused)."""
    tiny = 1e-40 if dtype == torch.float32 else 1e-310
    w = torch.randn(n, generator=g, dtype=dtype)
    grad = torch.randn(n, generator=g, dtype=dtype) * 3
    w[n // 2:] *= torch.logspace(-30, 30, n - n // 2, dtype=dtype)
    w[:5] = tiny
    w[5:9] = torch.tensor([0.0, -0.0, -0.0, 0.0], dtype=dtype)
    grad[5:9] = torch.tensor([0.0, 0.0, -0.0, -0.0], dtype=dtype)
    w[9:12] = torch.tensor([float("inf"), float("-inf"), float("nan")], dtype=dtype)
    grad[12:15] = torch.tensor([float("inf"), float("-inf"), float("nan")], dtype=dtype)
    return w, grad


def test_one_pass_sgd_update_is_bit_for_bit_the_two_torch_ops():
    """fused_sgd.sgd_step (one pass, on the CPU) rounds lr * g, then w - that, as PopART's
    ``w -= lr * g``, the torch ops ``w.sub_(lr * g)`` and numpy's two passes do, on data
    where one rounding (a fused multiply-add) differs; any strides and sizes (one parallel
    loop on large weights); tensors it does not take (float16, bfloat16, mixed dtypes,
    sparse) are left to the torch ops."""
    from ipu_gpu.poptorch.fused_sgd import sgd_step, sgd_steps

    g = torch.Generator().manual_seed(11)
    for dtype in (torch.float32, torch.float64):
        bits = torch.int32 if dtype == torch.float32 else torch.int64
        np_dtype = np.float32 if dtype == torch.float32 else np.float64
        for n in (64, 3 * 32768 + 5):  # serial and parallel TensorIterator loops
            w, grad1 = _sgd_update_data(g, dtype, n)
            for lr in (0.01, 1 / 3, 7.0):
                grad = grad1 / lr  # lr * g about w's size, where the roundings show
                want = w.clone().sub_(lr * grad)
                with np.errstate(all="ignore"):
                    ref = w.numpy() - grad.numpy() * np_dtype(lr)
                assert torch.equal(want.view(bits), torch.from_numpy(ref).view(bits))
                if dtype == torch.float32:  # the data tells one rounding from two
                    wide = w.numpy().astype(np.float64)
                    once = (wide - grad.numpy().astype(np.float64) * np.float32(lr)).astype(
                        np.float32)
                    assert not np.array_equal(once.view(np.int32), ref.view(np.int32))
                got = torch.nn.Parameter(w.clone())
                before = got._version
                with torch.no_grad():
                    assert sgd_step(got, grad, lr)
                assert torch.equal(got.detach().view(bits), want.view(bits))
                assert got._version > before
                # several weights at once, one of them a transposed view
                ws = [w.clone(), w[: n // 2 * 2].clone().view(2, -1).t()]
                gs = [grad, grad[: n // 2 * 2].view(2, -1).t()]
                with torch.no_grad():
                    sgd_steps(ws, gs, lr)
                for got_w, w0, g0 in zip(ws, [w, w[: n // 2 * 2].view(2, -1).t()], gs):
                    assert torch.equal(got_w.reshape(-1).view(bits),
                                       (w0 - lr * g0).reshape(-1).view(bits))
    w = torch.randn(64, generator=g)
    assert not sgd_step(w.half(), w.half(), 0.1)  # float16: addcmul rounds once
    assert not sgd_step(w.bfloat16(), w.bfloat16(), 0.1)
    assert not sgd_step(w, w.double(), 0.1)  # mixed dtypes
    assert not sgd_step(w, w.to_sparse(), 0.1)
    assert not sgd_step(w, w, torch.tensor(0.1))  # a tensor learning rate


def test_sgd_update_of_small_weights_is_bit_for_bit_the_two_torch_ops():
    """PopART's ``w -= lr * g`` for the weights below the one-pass kernel's size (updated
    together, two foreach calls per group) rounds lr * g, then w - that, per weight, in
    every float dtype, a weight without a gradient untouched."""
    from ipu_gpu.poptorch.optim import apply_update

    g = torch.Generator().manual_seed(12)
    for dtype in (torch.float32, torch.float16, torch.float64, torch.bfloat16):
        ws = [torch.nn.Parameter(torch.randn(n, generator=g).to(dtype)) for n in (3, 100, 1)]
        for w in ws[:2]:
            w.grad = (torch.randn(w.shape, generator=g) * 1e-2).to(dtype)
        want = [w.detach().clone() for w in ws]
        for w, gw in zip(want[:2], ws[:2]):
            w.sub_(0.3 * gw.grad)
        apply_update(torch.optim.SGD(ws, lr=0.3))
        for w, v in zip(ws, want):
            assert torch.equal(w.detach(), v)
