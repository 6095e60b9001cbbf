"""A trainingModel's plain SGD run (PopART's SGD0: no momentum, no weight decay) pinned bit
for bit to PopART's arithmetic, written here in plain torch autograd plus numpy float32
(issue 18): each micro-batch's backward seeded with the loss scale alone, replica r's A
micro-batch gradients summed in order, the replicas summed in replica order, then
``w - f32(slr0 * G)`` with PopART's compound scalar
``slr0 = f32(lr * (1 - dampening)) / f32(loss_scaling * A * R)`` (``ScaledLearningRate0Helper``;
``SGD0VarUpdateOpx`` is one ``scaledAddTo(w, G, -slr0)``, after ``w *= wdsf0`` with weight
decay, ``wdsf0 = f32(1 - lr * (1 - dampening) * wd)``). Every returned loss and output is
compared bit for bit too (OutputMode.All), for an MLP whose first weight is updated in
torch's parallel loop (``fused_sgd``: over 32768 elements) and a small CNN.

A * R * loss_scaling of 3 or 6 is not a power of two: there ``slr0 * G`` rounds differently
from a gradient first multiplied by ``1 / (A * R)`` and then by the learning rate (what the
emulator did before; ``test_the_folded_scalar_differs_from_scaling_the_gradient_first``)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import ipu_gpu.poptorch as poptorch  # noqa: E402

f32 = np.float32
LR = 0.05


class _MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(784, 48), nn.Linear(48, 10)  # fc1: 37632 > 32768

    def forward(self, x, y):
        out = self.fc2(torch.relu(self.fc1(x)))
        return out, nn.functional.cross_entropy(out, y)


class _CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(1, 4, 3), nn.Linear(4 * 13 * 13, 10)

    def forward(self, x, y):
        h = nn.functional.max_pool2d(torch.relu(self.conv(x)), 2)
        out = self.fc(h.flatten(1))
        return out, nn.functional.cross_entropy(out, y)


def _problem(kind, s, a, r, b=4):
    torch.manual_seed(11)
    net = _MLP() if kind == "mlp" else _CNN()
    n = s * a * r * b
    x = torch.randn((n, 784) if kind == "mlp" else (n, 1, 28, 28))
    y = torch.randint(0, 10, (n,))
    return net, x, y


def _slr0(lr, ls, a, r):
    """PopART's ScaledLearningRate0Helper in C++ float: (lr * (1 - dp)) / (ls * af * rf)."""
    return f32(f32(lr) * (f32(1.0) - f32(0.0))) / (f32(ls) * f32(a) * f32(r))


def _wdsf0(lr, wd):
    """PopART's WeightDecayScaleFactor0Helper in C++ float: 1 - lr * (1 - dp) * wd."""
    return f32(1.0) - (f32(lr) * (f32(1.0) - f32(0.0))) * f32(wd)


def _reference(net, x, y, s, a, r, ls, *, folded=True, wd=0.0):
    """PopART's order in plain torch + numpy; ``folded=False`` scales the summed gradient
    by ``f32(1 / (ls * A * R))`` first and then applies ``f32(lr)`` (the old emulation)."""
    params = list(net.parameters())
    xs = x.view(s, a, r, -1, *x.shape[1:])
    ys = y.view(s, a, r, -1)
    outs = []
    for si in range(s):
        per_replica = [None] * r
        for ai in range(a):
            for ri in range(r):
                out, loss = net(xs[si, ai, ri], ys[si, ai, ri])
                seeded = loss if ls == 1.0 else loss * ls
                grads = torch.autograd.grad(seeded, params)
                outs.append((out.detach(), loss.detach()))
                acc = per_replica[ri]
                per_replica[ri] = (list(grads) if acc is None
                                   else [g0 + g for g0, g in zip(acc, grads)])
        total = per_replica[0]
        for part in per_replica[1:]:
            total = [g0 + g for g0, g in zip(total, part)]
        with torch.no_grad():
            for p, g in zip(params, total):
                w, gn = p.detach().numpy(), g.numpy()
                if folded and wd:
                    decayed = w * _wdsf0(LR, wd)
                    new = decayed - _slr0(LR, ls, a, r) * gn
                elif folded:
                    new = w - _slr0(LR, ls, a, r) * gn
                else:
                    scale = f32(1.0) / (f32(ls) * f32(a * r))
                    new = w - f32(LR) * (scale * gn if scale != 1 else gn)
                p.copy_(torch.from_numpy(new.astype(f32)))
    return outs


def _wrapped_run(net, x, y, s, a, r, ls, wd=0.0):
    opts = poptorch.Options().deviceIterations(s).replicationFactor(r).autoRoundNumIPUs(True)
    opts.Training.gradientAccumulation(a)
    opts.outputMode(poptorch.OutputMode.All)
    opt = (torch.optim.SGD(net.parameters(), lr=LR, weight_decay=wd) if ls == 1.0
           else poptorch.optim.SGD(net.parameters(), lr=LR, loss_scaling=ls, weight_decay=wd))
    model = poptorch.trainingModel(net, opts, opt)
    out, loss = model(x, y)
    model.copyWeightsToHost()
    model.destroy()
    return out, loss


CASES = [("mlp", 1, 1, 1.0, 0.0), ("mlp", 1, 2, 1.0, 0.0), ("mlp", 4, 1, 1.0, 0.0),
         ("mlp", 4, 2, 1.0, 0.0), ("mlp", 3, 1, 1.0, 0.0), ("mlp", 3, 2, 1.0, 0.0),
         ("mlp", 2, 1, 3.0, 0.0), ("mlp", 1, 1, 1.0, 0.1), ("mlp", 3, 2, 3.0, 0.1),
         ("cnn", 1, 1, 1.0, 0.0), ("cnn", 4, 2, 1.0, 0.0), ("cnn", 3, 1, 1.0, 0.0)]


@pytest.mark.parametrize("kind,a,r,ls,wd", CASES)
def test_sgd_run_is_poparts_arithmetic_bit_for_bit(kind, a, r, ls, wd):
    """With weight decay PopART's SGD0 first multiplies the weight by ``wdsf0``."""
    s = 2
    net, x, y = _problem(kind, s, a, r)
    twin = copy.deepcopy(net)
    out, loss = _wrapped_run(net, x, y, s, a, r, ls, wd)
    want = _reference(twin, x, y, s, a, r, ls, wd=wd)
    assert torch.equal(out, torch.cat([o for o, _ in want]))
    assert torch.equal(loss, torch.stack([v for _, v in want]))
    for p, q in zip(net.parameters(), twin.parameters()):
        assert torch.equal(p.detach(), q.detach())


def test_the_folded_scalar_differs_from_scaling_the_gradient_first():
    """The A=3 pinning cases can fail: the two orders give other bits there."""
    s, a, r = 2, 3, 1
    net, x, y = _problem("mlp", s, a, r)
    folded, scaled_first = copy.deepcopy(net), copy.deepcopy(net)
    _reference(folded, x, y, s, a, r, 1.0)
    _reference(scaled_first, x, y, s, a, r, 1.0, folded=False)
    assert not torch.equal(folded.fc1.weight, scaled_first.fc1.weight)
    torch.testing.assert_close(folded.fc1.weight, scaled_first.fc1.weight,
                               rtol=1e-6, atol=1e-7)


def _clipped_reference(net, x, y, a, max_norm):
    """One step of PopART's SGD0 with clipping, in float64 numpy from torch's micro-batch
    gradients: the summed gradient G is clipped by its own global norm, then
    ``w - slr0 * G``."""
    params = list(net.parameters())
    grads = [np.zeros(p.shape) for p in params]
    for xs, ys in zip(x.chunk(a), y.chunk(a)):
        _, loss = net(xs, ys)
        for acc, g in zip(grads, torch.autograd.grad(loss, params)):
            acc += g.double().numpy()
    norm = np.sqrt(sum((g * g).sum() for g in grads))
    factor = max_norm / max(max_norm, norm)
    return [p.detach().double().numpy() - (LR / a) * factor * g for p, g in zip(params, grads)]


@pytest.mark.parametrize("a", [1, 3])
def test_max_grad_norm_clips_the_unnormalised_sum(a):
    """PopART's ClipWeightGradientsByNorm runs after SGD0Decompose on the update's input,
    the accumulator (the sum of the A micro-batch gradients, 1 / A being in slr0): a
    max_grad_norm between the mean's norm and the sum's clips with A = 3 (the mean alone
    would not be clipped), and clips the mean with A = 1."""
    net, x, y = _problem("mlp", 1, a, 1)
    grads = [np.zeros(p.shape) for p in net.parameters()]
    for xs, ys in zip(x.chunk(a), y.chunk(a)):
        _, loss = net(xs, ys)
        for acc, g in zip(grads, torch.autograd.grad(loss, list(net.parameters()))):
            acc += g.double().numpy()
    sum_norm = np.sqrt(sum((g * g).sum() for g in grads))
    max_norm = float(sum_norm / 2)  # below the sum's norm; above the mean's when A = 3
    if a == 3:
        assert sum_norm / a < max_norm
    want = _clipped_reference(copy.deepcopy(net), x, y, a, max_norm)
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(a)
    model = poptorch.trainingModel(
        net, opts, poptorch.optim.SGD(net.parameters(), lr=LR, max_grad_norm=max_norm))
    model(x, y)
    model.copyWeightsToHost()
    for p, w in zip(net.parameters(), want):
        np.testing.assert_allclose(p.detach().double().numpy(), w, rtol=1e-5, atol=1e-7)


def test_host_parameters_hold_no_gradient_after_a_call():
    """The gradients stay on the device (PopTorch never writes them to the host)."""
    net, x, y = _problem("mlp", 1, 2, 1)
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(2)
    poptorch.trainingModel(net, opts, torch.optim.SGD(net.parameters(), lr=LR))(x, y)
    assert all(p.grad is None for p in net.parameters())
