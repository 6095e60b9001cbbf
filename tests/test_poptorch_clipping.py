"""``max_grad_norm`` as PopART's ``ClipWeightGradientsByNorm`` applies it per optimizer: the
factor ``max / max(max, norm)`` on what enters each weight's update (SGD1/SGD2: the
velocity after this step's gradient, for the weight's step only; with ``nesterov`` the
Nesterov gradient ``SGD1Nesterov`` makes from it, ``vs * (g + wd * w) + mm * v`` (PopART's
``SGD2Decompose::nesterovGradUpdate``: it replaces the velocity as the ``SGD1VarUpdate``'s
updater, which ``ClipWeightGradientsByNorm`` clips), the velocity kept unclipped; Adam/AdamW: the
unscaled gradient, plus ``wd * w`` under Adam's L2 decay; PopTorch's LAMB and RMSprop take no
``max_grad_norm``). Each case puts ``max_grad_norm``
between PopART's clip-input norm and the other candidate (the mean gradient's for SGD
with momentum and Adam with L2; the loss-scaled one for AdamW), against a float64
numpy reference, for A in {1, 3}, R in {1, 2} and ``loss_scaling`` 4."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402

LS = 4.0
LR = 0.05
MICRO = 2


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 5)
        self.fc2 = torch.nn.Linear(5, 2)

    def forward(self, x, y):
        out = self.fc2(torch.tanh(self.fc1(x)))
        return out, torch.nn.functional.mse_loss(out, y)


def _mean_gradient(weights, x, y, chunks):
    """The mean over the A * R micro-batches of each micro-batch's gradient, in float64."""
    net = Net().double()
    with torch.no_grad():
        for p, w in zip(net.parameters(), weights):
            p.copy_(torch.from_numpy(w))
    params = list(net.parameters())
    total = [np.zeros(w.shape) for w in weights]
    for xs, ys in zip(x.double().chunk(chunks), y.double().chunk(chunks)):
        _, loss = net(xs, ys)
        for acc, g in zip(total, torch.autograd.grad(loss, params)):
            acc += g.numpy()
    return [t / chunks for t in total]


def _norm(ts):
    return float(np.sqrt(sum((t * t).sum() for t in ts)))


def _factor(ts, max_norm):
    return max_norm / max(max_norm, _norm(ts))


class Reference:
    """PopART's update with clipping, in float64 (``kind`` as in ``CASES``)."""

    def __init__(self, kind, weights, hyper):
        self.kind, self.w, self.h = kind, [w.copy() for w in weights], hyper
        self.m = [np.zeros_like(w) for w in weights]
        self.v = [np.zeros_like(w) for w in weights]
        self.t = 0
        if kind.startswith("sgd_combined"):  # the combined velocity starts at wd * vs * w
            self.v = [self.h["wd"] * self.h["vs"] * w for w in self.w]

    def clip_input(self, g):
        """What ClipWeightGradientsByNorm measures at this step (no state change)."""
        h = self.h
        if self.kind == "sgd_separate":
            return [LS * (h["mm"] * v + gi + h["wd"] * w) for v, gi, w in zip(self.v, g, self.w)]
        if self.kind == "sgd_combined":
            return [v + h["vs"] * gi for v, gi in zip(self.v, g)]
        if self.kind == "sgd_separate_nesterov":  # vs = ls: vs * (g + wd * w) + mm * v
            return [LS * (gi + h["wd"] * w + h["mm"] * (h["mm"] * v + gi + h["wd"] * w))
                    for v, gi, w in zip(self.v, g, self.w)]
        if self.kind == "sgd_combined_nesterov":
            return [h["vs"] * (gi + h["wd"] * w) + h["mm"] * (v + h["vs"] * gi)
                    for v, gi, w in zip(self.v, g, self.w)]
        if self.kind == "adam_l2":
            return [gi + h["wd"] * w for gi, w in zip(g, self.w)]
        return list(g)

    def step(self, g, max_norm):
        h = self.h
        u = self.clip_input(g)
        f = _factor(u, max_norm)
        if self.kind == "sgd_separate":
            self.v = [x / LS for x in u]  # the velocity kept is not clipped
            self.w = [w - LR * f * v for w, v in zip(self.w, self.v)]
            return
        if self.kind == "sgd_combined":
            self.w = [w - LR / h["vs"] * f * v for w, v in zip(self.w, u)]
            self.v = [h["mm"] * v + h["wd"] * h["vs"] * w for v, w in zip(u, self.w)]
            return
        if self.kind == "sgd_separate_nesterov":  # velocity mm * v + g + wd * w, unclipped
            self.v = [h["mm"] * v + gi + h["wd"] * w for v, gi, w in zip(self.v, g, self.w)]
            self.w = [w - LR / LS * f * ui for w, ui in zip(self.w, u)]
            return
        if self.kind == "sgd_combined_nesterov":
            velocity = [v + h["vs"] * gi for v, gi in zip(self.v, g)]
            self.w = [w - LR / h["vs"] * f * ui for w, ui in zip(self.w, u)]
            self.v = [h["mm"] * v + h["wd"] * h["vs"] * w for v, w in zip(velocity, self.w)]
            return
        b1, b2, eps = 0.9, 0.999, 1e-8
        self.t += 1
        new = []
        for i, (w, gi) in enumerate(zip(self.w, u)):
            gi = f * gi
            self.m[i] = b1 * self.m[i] + (1 - b1) * gi
            self.v[i] = b2 * self.v[i] + (1 - b2) * gi * gi
            m = self.m[i] / (1 - b1 ** self.t)
            v = self.v[i] / (1 - b2 ** self.t)
            upd = m / (np.sqrt(v) + eps)
            if self.kind == "adamw":
                upd = upd + h["wd"] * w
            new.append(w - LR * upd)
        self.w = new


def _optimizer(kind, params, max_norm, hyper):
    nesterov = kind.endswith("_nesterov")
    if kind.startswith("sgd_separate"):
        return poptorch.optim.SGD(params, lr=LR, momentum=hyper["mm"], weight_decay=hyper["wd"],
                                  loss_scaling=LS, max_grad_norm=max_norm, nesterov=nesterov)
    if kind.startswith("sgd_combined"):
        return poptorch.optim.SGD(params, lr=LR, momentum=hyper["mm"], weight_decay=hyper["wd"],
                                  loss_scaling=LS, velocity_scaling=hyper["vs"],
                                  use_combined_accum=True, max_grad_norm=max_norm,
                                  nesterov=nesterov)
    if kind == "adam_l2":
        return poptorch.optim.Adam(params, lr=LR, weight_decay=hyper["wd"], loss_scaling=LS,
                                   max_grad_norm=max_norm)
    if kind == "adamw":
        return poptorch.optim.AdamW(params, lr=LR, weight_decay=hyper["wd"], loss_scaling=LS,
                                    max_grad_norm=max_norm)
    raise AssertionError(kind)


def _velocity_norm(kind):
    """Nesterov's other candidate: the clip input without Nesterov (the velocity)."""
    def other(g, ref):
        plain = Reference(kind, ref.w, ref.h)
        return _norm(plain.clip_input(g))
    return other


# kind -> (hyper-parameters, the other candidate's norm from the mean gradient g and the
# reference at the first step)
CASES = {
    "sgd_separate": ({"mm": 0.9, "wd": 0.01}, lambda g, ref: _norm(g)),
    "sgd_combined": ({"mm": 0.9, "wd": 0.01, "vs": 4.0}, lambda g, ref: _norm(g)),
    "sgd_separate_nesterov": ({"mm": 0.9, "wd": 0.01}, _velocity_norm("sgd_separate")),
    "sgd_combined_nesterov": ({"mm": 0.9, "wd": 0.01, "vs": 4.0},
                              _velocity_norm("sgd_combined")),
    "adam_l2": ({"wd": 2.0}, lambda g, ref: _norm(g)),
    "adamw": ({"wd": 0.01}, lambda g, ref: LS * _norm(g)),
}


@pytest.mark.parametrize("r", [1, 2])
@pytest.mark.parametrize("a", [1, 3])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_max_grad_norm_clips_what_popart_clips(kind, a, r):
    torch.manual_seed(7)
    net = Net()
    hyper, other = CASES[kind]
    chunks = a * r
    x = torch.randn(2 * MICRO * chunks, 4)
    y = torch.randn(2 * MICRO * chunks, 2)
    batches = [(x[: MICRO * chunks], y[: MICRO * chunks]), (x[MICRO * chunks:], y[MICRO * chunks:])]
    weights = [p.detach().double().numpy().copy() for p in net.parameters()]
    ref = Reference(kind, weights, hyper)
    g0 = _mean_gradient(ref.w, *batches[0], chunks)
    popart_norm, other_norm = _norm(ref.clip_input(g0)), other(g0, ref)
    lo, hi = sorted((popart_norm, other_norm))
    assert hi > 1.5 * lo  # the candidates are apart
    max_norm = float(np.sqrt(lo * hi))  # between them: PopART clips iff its norm is above
    for xs, ys in batches:
        ref.step(_mean_gradient(ref.w, xs, ys, chunks), max_norm)

    opts = poptorch.Options().replicationFactor(r)
    opts.Training.gradientAccumulation(a)
    model = poptorch.trainingModel(
        net, opts, _optimizer(kind, net.parameters(), max_norm, hyper))
    for xs, ys in batches:
        model(xs, ys)
    model.copyWeightsToHost()
    for p, w in zip(net.parameters(), ref.w):
        np.testing.assert_allclose(p.detach().double().numpy(), w, rtol=2e-5, atol=2e-6)


def test_sgd_with_momentum_clips_the_step_not_the_velocity():
    """A threshold far below the velocity's norm: the weight moves by max_grad_norm * lr / vs
    in norm at the first step, and the velocity kept is the unclipped one."""
    torch.manual_seed(3)
    net = Net()
    x, y = torch.randn(MICRO, 4), torch.randn(MICRO, 2)
    before = [p.detach().clone() for p in net.parameters()]
    opt = poptorch.optim.SGD(net.parameters(), lr=LR, momentum=0.9, loss_scaling=LS,
                             max_grad_norm=1e-3)
    model = poptorch.trainingModel(net, optimizer=opt)
    model(x, y)
    model.copyWeightsToHost()
    moved = torch.sqrt(sum(((p.detach() - b) ** 2).sum()
                           for p, b in zip(net.parameters(), before)))
    # (float32 weights: the difference of two weights near 0.3 is good to ~1e-3 here)
    np.testing.assert_allclose(float(moved), LR * 1e-3 / LS, rtol=5e-3)
    g = _mean_gradient([b.double().numpy() for b in before], x, y, 1)
    velocity = [opt.state[p]["velocity"].double().numpy() for p in net.parameters()]
    np.testing.assert_allclose(_norm(velocity), LS * _norm(g), rtol=1e-5)


def test_no_clipping_below_the_threshold_keeps_the_update():
    """A max_grad_norm above every clip input changes nothing (factor exactly 1)."""
    torch.manual_seed(5)
    x, y = torch.randn(MICRO, 4), torch.randn(MICRO, 2)
    nets = [Net(), None]
    nets[1] = copy.deepcopy(nets[0])
    for net, norm in zip(nets, (None, 1e6)):
        opt = poptorch.optim.Adam(net.parameters(), lr=LR, weight_decay=0.1, max_grad_norm=norm)
        model = poptorch.trainingModel(net, optimizer=opt)
        model(x, y)
        model.copyWeightsToHost()
    for p, q in zip(*(n.parameters() for n in nets)):
        assert torch.equal(p, q)


@pytest.mark.parametrize("a", [1, 3])
def test_sgd0_running_mean_clips_the_loss_scaled_accumulator(a):
    """SGD without momentum and a float16 accumulator (MeanReductionStrategy.Running): the
    update's input is the running mean of the loss-scaled gradients, so a threshold between
    the mean gradient's norm and ``loss_scaling`` times it clips (the reduction has already
    divided by the loss scale: the emulator divides the threshold instead)."""
    torch.manual_seed(11)
    net = Net()
    x, y = torch.randn(MICRO * a, 4), torch.randn(MICRO * a, 2)
    w0 = [p.detach().double().numpy().copy() for p in net.parameters()]
    g = _mean_gradient(w0, x, y, a)
    max_norm = float(np.sqrt(LS) * _norm(g))  # between |g| and LS * |g|
    f = max_norm / (LS * _norm(g))
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(a)
    opt = poptorch.optim.SGD(net.parameters(), lr=LR, loss_scaling=LS, max_grad_norm=max_norm,
                             accum_type=torch.float16)
    model = poptorch.trainingModel(net, opts, opt)
    model(x, y)
    model.copyWeightsToHost()
    for p, w, gi in zip(net.parameters(), w0, g):
        # float16 accumulation: compare the steps, to float16's precision
        np.testing.assert_allclose(p.detach().double().numpy() - w, -LR * f * gi,
                                   rtol=2e-2, atol=2e-6)
