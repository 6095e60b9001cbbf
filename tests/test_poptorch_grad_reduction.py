"""Gradients reduced in PopART's order under gradient accumulation and replication
(issue 18): the backward seeded with the loss scale alone, the A micro-batches of each
replica summed in the optimizer's ``accum_type`` (a running mean under
``MeanReductionStrategy.Running``), the replicas summed, and one float32 scalar
``1 / (loss_scaling * A * R)`` (Post, Mean) applied before the update.

The model is ``sum(t * (x @ W^T))`` on one row per micro-batch, so a micro-batch's weight
gradient is ``f16(f16(ls * t_i) * x_j)``, one float16 product per element; the references
below are numpy float16/float32 written from PopART's order, with A * R = 3 (not a power of
two) and inputs whose gradients are float16 subnormals; float32 weights take the same
order."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402

f16, f32 = np.float16, np.float32
LR = 1.0  # lr * g is exact: the update rounds once, w - g


class Bilinear(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.fc = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
        with torch.no_grad():
            self.fc.weight.copy_(torch.from_numpy(w))
        self.half()

    def forward(self, x, t):
        return poptorch.identity_loss((self.fc(x) * t).sum(), reduction="sum")


def _data(seed, rows, x_scale):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((3, 4)).astype(f16)
    x = (x_scale * rng.standard_normal((rows, 4))).astype(f16)
    t = rng.standard_normal((rows, 3)).astype(f16)
    return w, x, t


def _micro_grad(ls, x_row, t_row):
    """A micro-batch's float16 weight gradient at the loss scale ``ls`` (float16 seed)."""
    g_out = (f32(f16(ls)) * t_row.astype(f32)).astype(f16)
    return (g_out.astype(f32)[:, None] * x_row.astype(f32)[None, :]).astype(f16)


def _trained(w, x, t, ls, a, r, *, reduction=None, strategy=None, accum_type=None):
    opts = poptorch.Options().replicationFactor(r).autoRoundNumIPUs(True)
    opts.Training.gradientAccumulation(a)
    if reduction is not None:
        opts.Training.accumulationAndReplicationReductionType(reduction)
    if strategy is not None:
        opts.Training.setMeanAccumulationAndReplicationReductionStrategy(strategy)
    net = Bilinear(w)
    opt = poptorch.optim.SGD(net.parameters(), lr=LR, loss_scaling=ls, accum_type=accum_type)
    model = poptorch.trainingModel(net, opts, opt)
    model(torch.from_numpy(x), torch.from_numpy(t))
    model.copyWeightsToHost()
    weight = net.fc.weight.detach().numpy().copy()
    model.destroy()
    return weight


def _grads(ls, x, t, a, r):
    """[replica][step] micro-batch gradients (host row a * R + r)."""
    return [[_micro_grad(ls, x[ai * r + ri], t[ai * r + ri]) for ai in range(a)]
            for ri in range(r)]


def _post_reference(w, x, t, ls, a, r, divisor):
    grads = _grads(ls, x, t, a, r)
    dtype = f32 if a > 1 else f16  # accum_type float32; no accumulator when A is 1
    per_replica = []
    for ri in range(r):
        acc = grads[ri][0].astype(dtype)
        for g in grads[ri][1:]:
            acc = (acc + g.astype(dtype)).astype(dtype)
        per_replica.append(acc)
    total = per_replica[0]
    for part in per_replica[1:]:
        total = (total + part).astype(dtype)
    grad = (total.astype(f32) * (f32(1.0) / (f32(ls) * f32(divisor)))).astype(f16)
    return (w.astype(f32) - grad.astype(f32)).astype(f16)


def _old_order(w, x, t, ls, a, r):
    """The emulator's former order: float16 seed ls / (A R), float16 sums, then / ls."""
    seed = float(f16(ls / (a * r)))
    total = None
    for ai in range(a):
        for ri in range(r):
            g = _micro_grad(seed, x[ai * r + ri], t[ai * r + ri])
            total = g if total is None else (total.astype(f32) + g.astype(f32)).astype(f16)
    grad = (total.astype(f32) / f32(ls)).astype(f16)
    return (w.astype(f32) - grad.astype(f32)).astype(f16)


def _bits(a):
    return np.asarray(a, dtype=f16).view(np.uint16)


@pytest.mark.parametrize("a,r", [(3, 1), (1, 3)])
@pytest.mark.parametrize("ls", [1.0, 1000.0])
def test_post_mean_sums_unnormalised_then_divides_once(a, r, ls):
    w, x, t = _data(11, a * r, x_scale=2e-6)  # gradients are float16 subnormals
    got = _trained(w, x, t, ls, a, r)
    want = _post_reference(w, x, t, ls, a, r, a * r)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_the_order_changes_bits_near_underflow():
    """The test above can fail: the former order's bits differ on these inputs."""
    w, x, t = _data(11, 3, x_scale=2e-6)
    w = np.zeros_like(w)  # the update is the gradient itself
    assert not np.array_equal(_bits(_post_reference(w, x, t, 1.0, 3, 1, 3)),
                              _bits(_old_order(w, x, t, 1.0, 3, 1)))
    got = _trained(w, x, t, 1.0, 3, 1)
    np.testing.assert_array_equal(_bits(got), _bits(_post_reference(w, x, t, 1.0, 3, 1, 3)))


def test_post_mean_accumulation_and_replication_together():
    w, x, t = _data(12, 6, x_scale=3e-6)
    got = _trained(w, x, t, 8.0, 3, 2)
    np.testing.assert_array_equal(_bits(got), _bits(_post_reference(w, x, t, 8.0, 3, 2, 6)))


def test_sum_reduction_divides_by_the_loss_scale_only():
    w, x, t = _data(13, 3, x_scale=1e-3)
    got = _trained(w, x, t, 4.0, 3, 1, reduction=poptorch.ReductionType.Sum)
    np.testing.assert_array_equal(_bits(got), _bits(_post_reference(w, x, t, 4.0, 3, 1, 1)))


def _running_reference(w, x, t, ls, a, r):
    grads = _grads(ls, x, t, a, r)
    per_replica = []
    for ri in range(r):
        acc = grads[ri][0].copy()
        for c, g in enumerate(grads[ri][1:], start=1):
            b = f32(1.0 / (c + 1))
            acc = (acc.astype(f32) * f32(1.0 - 1.0 / (c + 1))).astype(f16)
            acc = (acc.astype(f32) + b * g.astype(f32)).astype(f16)
        per_replica.append(acc)
    total = per_replica[0]
    for part in per_replica[1:]:
        total = (total.astype(f32) + part.astype(f32)).astype(f16)
    if r > 1:
        total = (total.astype(f32) * f32(1.0 / r)).astype(f16)
    grad = (total.astype(f32) * (f32(1.0) / f32(ls))).astype(f16)
    return (w.astype(f32) - grad.astype(f32)).astype(f16)


@pytest.mark.parametrize("a,r", [(3, 1), (3, 2)])
def test_float16_accum_type_takes_the_running_mean(a, r):
    w, x, t = _data(14, a * r, x_scale=1e-3)
    got = _trained(w, x, t, 2.0, a, r, accum_type=torch.float16)
    np.testing.assert_array_equal(_bits(got), _bits(_running_reference(w, x, t, 2.0, a, r)))


def test_explicit_running_strategy_with_float32_accumulator():
    w, x, t = _data(15, 3, x_scale=1e-3)
    got = _trained(w, x, t, 2.0, 3, 1,
                   strategy=poptorch.MeanReductionStrategy.Running)
    grads = _grads(2.0, x, t, 3, 1)[0]
    acc = grads[0].astype(f32)
    for c, g in enumerate(grads[1:], start=1):
        acc = (acc * f32(1.0 - 1.0 / (c + 1)) + f32(1.0 / (c + 1)) * g.astype(f32)).astype(f32)
    want = (w.astype(f32) - (acc * f32(0.5)).astype(f16).astype(f32)).astype(f16)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_matches_a_float64_mean_away_from_underflow():
    """In ordinary ranges the order is the mean of the micro-batch gradients."""
    w, x, t = _data(16, 6, x_scale=1.0)
    got = _trained(w, x, t, 16.0, 3, 2)
    exact = np.mean([np.outer(t[i].astype(np.float64), x[i].astype(np.float64))
                     for i in range(6)], axis=0)
    np.testing.assert_allclose(got.astype(np.float64), w.astype(np.float64) - exact,
                               rtol=0, atol=4e-3)


def test_post_and_loss_divides_the_loss_by_replicas_and_the_sum_by_accumulation():
    w, x, t = _data(17, 6, x_scale=1e-3)
    got = _trained(w, x, t, 4.0, 3, 2, strategy=poptorch.MeanReductionStrategy.PostAndLoss)
    # the seed is 4 / 2 = 2 (exact); the sum is divided by 4 * 3 = 2 * 6
    want = _post_reference(w, x, t, 2.0, 3, 2, 6)
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_float32_models_take_the_same_order():
    """PopART's order is the same for float32 weights: seed 1, float32 sums, then
    times float32(1/3); the former seed float32(1/3) rounds differently."""
    w, x, t = (v.astype(f32) for v in _data(18, 3, x_scale=1.0))
    net = Bilinear(w).float()
    opts = poptorch.Options()
    opts.Training.gradientAccumulation(3)
    opt = poptorch.optim.SGD(net.parameters(), lr=LR)
    model = poptorch.trainingModel(net, opts, opt)
    model(torch.from_numpy(x), torch.from_numpy(t))
    model.copyWeightsToHost()
    got = net.fc.weight.detach().numpy()
    grads = [np.outer(t[i], x[i]).astype(f32) for i in range(3)]  # one float32 product each
    acc = (grads[0] + grads[1]) + grads[2]
    want = w - acc * (f32(1.0) / f32(3.0))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    third = f32(1.0 / 3.0)
    old = [np.outer((t[i] * third).astype(f32), x[i]).astype(f32) for i in range(3)]
    assert not np.array_equal(want, w - ((old[0] + old[1]) + old[2]))


def _float32_weights(anchored, a=4, r=1):
    w, x, t = (v.astype(f32) for v in _data(19, a * r, x_scale=1.0))
    net = Bilinear(w).float()
    opts = poptorch.Options().replicationFactor(r).autoRoundNumIPUs(True)
    opts.Training.gradientAccumulation(a)
    if anchored:
        opts.anchorTensor("g", "Gradient___fc.weight", poptorch.OutputMode.All)
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.25))
    model(torch.from_numpy(x), torch.from_numpy(t))
    model.copyWeightsToHost()
    grads = model.getAnchoredTensor("g") if anchored else None
    return net.fc.weight.detach().numpy().copy(), grads, x, t, w


def test_gradient_anchors_see_each_micro_batch_and_leave_the_sum_unchanged():
    """With gradient anchors the accumulator is kept apart from p.grad (else autograd sums
    into p.grad): the same additions, the same bits; the anchors are the micro-batch
    gradients at the loss scale (1), not divided by A."""
    plain, _, x, t, _ = _float32_weights(False)
    anchored, grads, _, _, _ = _float32_weights(True)
    np.testing.assert_array_equal(plain.view(np.uint32), anchored.view(np.uint32))
    want = np.concatenate([np.outer(t[i], x[i]).astype(f32) for i in range(4)])
    np.testing.assert_array_equal(grads.numpy(), want)


@pytest.mark.parametrize("anchored", [False, True])
def test_float32_replicas_sum_their_own_accumulators(anchored):
    """Each replica's A micro-batches summed, then the replicas in order, times f32(1/6)
    (p.grad swapped per replica, or the accumulators kept apart under anchors)."""
    got, _, x, t, w = _float32_weights(anchored, a=3, r=2)
    g = [np.outer(t[i], x[i]).astype(f32) for i in range(6)]  # host row a * R + r
    replica = [(g[0 + ri] + g[2 + ri]) + g[4 + ri] for ri in range(2)]
    want = w - f32(0.25) * ((replica[0] + replica[1]) * (f32(1.0) / f32(6.0)))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
