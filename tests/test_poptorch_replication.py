"""PoplarExecutor's device-side numerics (research/poptorch_semantics.md sections 1.2-1.4, 2.2,
3.3-3.5, 7): per-replica buffers, output modes in training, the device's random stream
(``randomSeed``), stochastic rounding of float16 updates, synthetic data, automatic loss
scaling, input replica grouping, and the partials type (no numeric effect in float32).
References are plain PyTorch loops written out by hand."""

from __future__ import annotations

import logging

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402
from ipu_gpu.poptorch.device_state import stochastic_round_half  # noqa: E402

F = torch.nn.functional


def _opts(s=1, r=1, a=1):
    o = poptorch.Options().deviceIterations(s).replicationFactor(r)
    o.Training.gradientAccumulation(a)
    return o


class BNNet(torch.nn.Module):
    """A small CNN with BatchNorm: its running statistics change in every training forward."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(3)
        self.fc = torch.nn.Linear(3 * 4 * 4, 4)

    def forward(self, x, y):
        h = F.relu(self.bn(self.conv(x)))
        out = self.fc(h.flatten(1))
        return out, F.cross_entropy(out, y)


def _buffers(model):
    return {k: v.detach().clone() for k, v in model.named_buffers()}


def _reference_bn_training(ref, x, y, s, a, r, lr, calls):
    """PopTorch's training calls written out: replica r keeps its own buffers, gradients are
    averaged over the A * R micro-batches, one SGD step per device iteration."""
    opt = torch.optim.SGD(ref.parameters(), lr=lr)
    replica_buffers = [_buffers(ref) for _ in range(r)]
    b = x.shape[0] // (s * a * r)
    xs = x.reshape(s, a, r, b, *x.shape[1:])
    ys = y.reshape(s, a, r, b)
    micro = {}
    for si in [i % s for i in range(s * calls)]:
        opt.zero_grad()
        for ai in range(a):
            for ri in range(r):
                with torch.no_grad():
                    for k, v in ref.named_buffers():
                        v.copy_(replica_buffers[ri][k])
                out, loss = ref(xs[si, ai, ri], ys[si, ai, ri])
                (loss / (a * r)).backward()
                replica_buffers[ri] = _buffers(ref)
                micro[(si, ai, ri)] = (out.detach(), loss.detach())
        opt.step()
    return replica_buffers, micro


def test_batchnorm_buffers_are_per_replica_and_host_reads_replica_0():
    s, a, r, b = 2, 2, 2, 3
    ours, ref = BNNet(), BNNet()
    torch.manual_seed(1)
    x = torch.randn(s * a * r * b, 2, 4, 4)
    x[x.shape[0] // 2:] += 3.0  # replicas see differently distributed data
    y = torch.randint(0, 4, (s * a * r * b,))
    model = poptorch.trainingModel(ours, _opts(s, r, a),
                                   poptorch.optim.SGD(ours.parameters(), lr=0.1))
    model(x, y)
    out, loss = model(x, y)
    replica_buffers, micro = _reference_bn_training(ref, x, y, s, a, r, lr=0.1, calls=2)

    for p, q in zip(ours.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    # the host module holds replica 0's buffers; replica 1 kept its own
    for k, v in ours.named_buffers():
        torch.testing.assert_close(v, replica_buffers[0][k], rtol=1e-5, atol=1e-6)
    device_replica_1 = model._device_state.buffers.replica(1)
    for k, v in replica_buffers[1].items():
        torch.testing.assert_close(device_replica_1[k], v, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(replica_buffers[0]["bn.running_mean"],
                              replica_buffers[1]["bn.running_mean"])
    # each replica counted only its own S * A micro-batches per call
    assert int(ours.bn.num_batches_tracked) == 2 * s * a
    assert int(device_replica_1["bn.num_batches_tracked"]) == 2 * s * a
    # Final output mode: the last micro-batch of each replica
    torch.testing.assert_close(loss, torch.stack([micro[(s - 1, a - 1, ri)][1]
                                                  for ri in range(r)]))
    torch.testing.assert_close(out, torch.cat([micro[(s - 1, a - 1, ri)][0]
                                               for ri in range(r)]))


def test_per_replica_buffers_carry_over_calls_and_take_host_writes():
    """PopTorch's buffers_test.py::test_unsynchronised_replicated_buffers, then the host's
    buffers read back (replica 0's) and written to every replica."""

    class ReplicaBufferModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buffer", torch.zeros(1, 2))

        def forward(self, x):
            self.buffer.copy_(self.buffer + x)
            return poptorch.identity_loss(self.buffer, reduction="none")

    opts = poptorch.Options().replicationFactor(2).broadcastBuffers(False)
    net = ReplicaBufferModel()
    model = poptorch.inferenceModel(net, opts)
    x = torch.tensor([[9.0], [2.0]])
    for _ in range(50):
        y = model(x)
    assert y.shape == (2, 2)
    assert y[0][-1] == 9 * 50 and y[1][-1] == 2 * 50
    model.copyWeightsToHost()
    assert net.buffer.tolist() == [[450.0, 450.0]]  # replica 0's
    net.buffer.zero_()
    model.copyWeightsToDevice()
    y = model(x)
    assert y.tolist() == [[9.0, 9.0], [2.0, 2.0]]


class BufferUpdatingModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.register_buffer("test_buff", torch.zeros(2))

    def forward(self, x):
        with torch.no_grad():
            self.test_buff += 1.0
        out = self.lin(x)
        return out, F.l1_loss(out, torch.zeros_like(out))


def test_buffers_changed_in_place_under_replication_need_broadcast_buffers_off():
    net = BufferUpdatingModel()
    model = poptorch.trainingModel(net, _opts(r=2))
    x = torch.ones(4, 2)
    with pytest.raises(poptorch.Error, match=r"PopTorch does not support broadcasting buffers\. "
                                             r"If your model is able to tolerate buffers "
                                             r"becoming out of sync between replicas, you can "
                                             r"disable buffer broadcasting using "
                                             r"poptorch.Options.broadcastBuffers\(False\)\."):
        model(x)
    assert net.test_buff.tolist() == [0.0, 0.0]  # the module is as before the call
    assert not model.isCompiled()
    model.destroy()
    net2 = BufferUpdatingModel()
    model2 = poptorch.trainingModel(net2, _opts(r=2).broadcastBuffers(False))
    model2(x)
    model2(x)
    assert net2.test_buff.tolist() == [2.0, 2.0]
    # one replica: nothing to broadcast
    net3 = BufferUpdatingModel()
    poptorch.trainingModel(net3, _opts(r=1))(x)
    assert net3.test_buff.tolist() == [1.0, 1.0]


def test_buffer_reassigned_or_removed_in_forward_is_refused():
    class Reassigns(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("y", torch.tensor([2.0]))

        def forward(self, x):
            self.y = x + 1
            return x

    class Removes(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("y", torch.tensor([2.0]))

        def forward(self, x):
            if "y" in self._buffers:
                del self._buffers["y"]
            return x + 1

    net = Reassigns()
    with pytest.raises(poptorch.Error, match=r"Buffer y is reassigned within the model when "
                                             r"calling the forward method\. This is not "
                                             r"supported\. Consider using self\.y\.copy_\(src\)"):
        poptorch.inferenceModel(net)(torch.tensor([5.0]))
    assert net.y.tolist() == [2.0]
    net = Removes()
    with pytest.raises(poptorch.Error, match=r"Buffer y is removed from the model when calling "
                                             r"the forward method\."):
        poptorch.inferenceModel(net)(torch.tensor([5.0]))
    assert net.y.tolist() == [2.0]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(5, 3)

    def forward(self, x, y):
        out = self.fc(x)
        return out, F.cross_entropy(out, y)


def _reference_training(s, a, r, x, y, lr=0.1):
    ref = Net()
    opt = torch.optim.SGD(ref.parameters(), lr=lr)
    b = x.shape[0] // (s * a * r)
    xs, ys = x.reshape(s, a, r, b, 5), y.reshape(s, a, r, b)
    micro = {}
    for si in range(s):
        opt.zero_grad()
        for ai in range(a):
            for ri in range(r):
                out, loss = ref(xs[si, ai, ri], ys[si, ai, ri])
                (loss / (a * r)).backward()
                micro[(si, ai, ri)] = (out.detach(), loss.detach())
        opt.step()
    return micro


@pytest.mark.parametrize("mode", ["All", "Final", "Sum", "EveryN"])
@pytest.mark.parametrize("s, a, r", [(4, 2, 2), (4, 1, 1)])
def test_training_output_modes_shapes_and_values(mode, s, a, r):
    b, period = 2, 2
    torch.manual_seed(3)
    x = torch.randn(s * a * r * b, 5)
    y = torch.randint(0, 3, (s * a * r * b,))
    opts = _opts(s, r, a)
    if mode == "EveryN":
        opts.outputMode(poptorch.OutputMode.EveryN, period)
    else:
        opts.outputMode(getattr(poptorch.OutputMode, mode))
    ours = Net()
    out, loss = poptorch.trainingModel(ours, opts,
                                       poptorch.optim.SGD(ours.parameters(), lr=0.1))(x, y)
    micro = _reference_training(s, a, r, x, y)
    keys_all = [(si, ai, ri) for si in range(s) for ai in range(a) for ri in range(r)]
    if mode == "All":
        keys = keys_all
    elif mode == "EveryN":
        keys = [k for k in keys_all if k[0] % period == period - 1]
    else:
        keys = [(s - 1, a - 1, ri) for ri in range(r)]
    if mode == "Sum":
        want_out = [sum(micro[(si, ai, ri)][0] for si in range(s) for ai in range(a))
                    for ri in range(r)]
        want_loss = [sum(micro[(si, ai, ri)][1] for si in range(s) for ai in range(a))
                     for ri in range(r)]
    else:
        want_out = [micro[k][0] for k in keys]
        want_loss = [micro[k][1] for k in keys]
    k = len(want_loss)
    assert k == {"All": s * a * r, "EveryN": s // period * a * r, "Final": r, "Sum": r}[mode]
    if k == 1:  # a scalar stays 0-dim, a tensor keeps the micro-batch shape
        assert loss.shape == () and out.shape == (b, 3)
    else:
        assert loss.shape == (k,) and out.shape == (k * b, 3)
    torch.testing.assert_close(loss.reshape(-1), torch.stack(want_loss), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(out, torch.cat(want_out), rtol=1e-5, atol=1e-6)


def test_sum_output_keeps_integer_dtype():
    class Counts(torch.nn.Module):
        def forward(self, x):
            return (x > 0).to(torch.int32)

    opts = poptorch.Options().deviceIterations(3).outputMode(poptorch.OutputMode.Sum)
    x = torch.tensor([[1.0, -1.0], [2.0, 3.0], [-1.0, 5.0]])
    out = poptorch.inferenceModel(Counts(), opts)(x)
    assert out.dtype == torch.int32 and out.tolist() == [[2, 2]]


def test_every_n_period_must_divide_device_iterations():
    x, y = torch.randn(6, 5), torch.randint(0, 3, (6,))
    opts = _opts(s=3).outputMode(poptorch.OutputMode.EveryN, 2)
    model = poptorch.trainingModel(Net(), opts)
    with pytest.raises(poptorch.Error, match="Return period must be a factor of the number of "
                                             "batches per step"):
        model(x, y)
    opts = _opts(s=3).outputMode(poptorch.OutputMode.EveryN, 4)
    with pytest.raises(poptorch.Error, match="Return period must be <= to the number of "
                                             "batches per step"):
        poptorch.trainingModel(Net(), opts)(x, y)


class DropNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(8, 8)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        out = self.drop(self.fc(x))
        return out, out.pow(2).mean()


def _train_dropout(seed, calls=2, r=1, host_seed=None):
    opts = _opts(s=2, r=r)
    if seed is not None:
        opts.randomSeed(seed)
    net = DropNet()
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    if host_seed is not None:
        torch.manual_seed(host_seed)
    x = torch.ones(2 * r * 4, 8)
    outs = [model(x)[0] for _ in range(calls)]
    return outs, [p.detach().clone() for p in net.parameters()]


def test_random_seed_makes_dropout_repeatable_and_distinct():
    outs1, params1 = _train_dropout(42)
    torch.manual_seed(1234)  # the host's generator is not the device's
    host_state = torch.get_rng_state()
    outs2, params2 = _train_dropout(42)
    outs3, params3 = _train_dropout(43)
    for o1, o2 in zip(outs1, outs2):
        assert torch.equal(o1, o2)
    for p1, p2 in zip(params1, params2):
        assert torch.equal(p1, p2)
    assert not torch.equal(outs1[0], outs3[0])
    assert not all(torch.equal(p1, p3) for p1, p3 in zip(params1, params3))
    # the stream advances from call to call
    assert not torch.equal(outs1[0] != 0, outs1[1] != 0)
    # a call leaves the host's generator where it was
    net = DropNet()
    model = poptorch.inferenceModel(net.train(), poptorch.Options().randomSeed(5))
    torch.manual_seed(99)
    before = torch.get_rng_state()
    model(torch.ones(4, 8))
    assert torch.equal(torch.get_rng_state(), before)
    assert not torch.equal(host_state, before)


def test_replicas_draw_different_dropout_masks():
    (out,), _ = _train_dropout(7, calls=1, r=2)
    first, second = out.chunk(2)
    assert not torch.equal(first != 0, second != 0)


def _dropout_inference(seed, r=1, s=2, calls=2):
    """An inference model of DropNet in train mode (dropout on): its outputs per call."""
    model = poptorch.inferenceModel(DropNet().train(), _opts(s=s, r=r).randomSeed(seed))
    return [model(torch.ones(s * r * 4, 8))[0] for _ in range(calls)]


def test_replica_r_draws_the_stream_seeded_with_seed_plus_r():
    """PopART seeds replica r's random ops with randomSeed + r (IrLowering adds the
    replication index to the streamed seed): replica 1 of seed 7 draws what replica 0 of
    seed 8 draws."""
    two = _dropout_inference(7, r=2)
    one7, one8 = _dropout_inference(7), _dropout_inference(8)
    for call in range(2):
        # OutputMode.All: rows [S, R, B]; one replica per 4 rows
        per = two[call].view(2, 2, 4, 8)
        torch.testing.assert_close(per[:, 0], one7[call].view(2, 4, 8), rtol=0, atol=0)
        torch.testing.assert_close(per[:, 1], one8[call].view(2, 4, 8), rtol=0, atol=0)
    assert not torch.equal(one7[0] != 0, one8[0] != 0)


def test_rng_state_reads_and_restores_the_device_streams():
    net = DropNet().train()
    model = poptorch.inferenceModel(net, _opts(s=2, r=2).randomSeed(3))
    x = torch.ones(16, 8)
    with pytest.raises(poptorch.Error, match="Model has not been compiled or has been "
                                             "destroyed."):
        _ = model.rng_state
    with pytest.raises(poptorch.Error, match="Model has not been compiled"):
        model.rng_state = [1]
    model.compile(x)
    assert model.rng_state == [3]  # before the first run: the seed only, as PopTorch
    first = model(x)[0]
    state = model.rng_state
    assert state[0] == 3 and all(isinstance(w, int) and 0 <= w < 2 ** 32 for w in state)
    assert len(state) > 1
    second, third = model(x)[0], model(x)[0]
    assert not torch.equal(second, third)
    model.rng_state = state  # back to after the first call
    assert model.rng_state == state
    assert torch.equal(model(x)[0], second) and torch.equal(model(x)[0], third)
    model.rng_state = [3]  # the seed alone restarts every stream
    assert torch.equal(model(x)[0], first)
    fresh = poptorch.inferenceModel(DropNet().train(), _opts(s=2, r=2).randomSeed(11))
    fresh.compile(x)
    fresh.rng_state = [3]  # set before the first run: used by it
    assert torch.equal(fresh(x)[0], first)
    with pytest.raises(poptorch.Error, match="Invalid RNG state"):
        model.rng_state = state[:-1]
    unseeded = poptorch.inferenceModel(DropNet(), _opts())
    unseeded.compile(torch.ones(4, 8))
    assert unseeded.rng_state is None


def test_save_keeps_the_rng_state_for_poptorch_load(tmp_path):
    model = poptorch.inferenceModel(DropNet().train(), _opts(s=2).randomSeed(5))
    x = torch.ones(8, 8)
    model(x)
    model.save(str(tmp_path / "m.poptorch"))
    expected = model(x)[0]
    loaded = poptorch.load(str(tmp_path / "m.poptorch"))
    assert torch.equal(loaded(x)[0], expected)
    model.save(str(tmp_path / "no_rng.poptorch"), save_rng_state=False)
    again = poptorch.load(str(tmp_path / "no_rng.poptorch"))
    assert again.rng_state == [5]


def test_unseeded_device_stream_follows_torch_manual_seed():
    """Without randomSeed the device's seed is drawn from the host's generator at the first
    call (PopART would pick a nondeterministic one)."""
    outs1, _ = _train_dropout(None, host_seed=11)
    outs2, _ = _train_dropout(None, host_seed=11)
    outs3, _ = _train_dropout(None, host_seed=12)
    assert torch.equal(outs1[0], outs2[0]) and torch.equal(outs1[1], outs2[1])
    assert not torch.equal(outs1[0], outs3[0])


def test_stochastic_round_half_is_unbiased_and_reproducible():
    lo, hi = 1.0, 1.0 + 2.0 ** -10  # neighbouring float16 values
    exact = lo + 0.3 * (hi - lo)
    x = torch.full((200_000,), exact, dtype=torch.float32)
    torch.manual_seed(5)
    r1 = stochastic_round_half(x)
    torch.manual_seed(5)
    r2 = stochastic_round_half(x)
    torch.manual_seed(6)
    r3 = stochastic_round_half(x)
    assert torch.equal(r1, r2) and not torch.equal(r1, r3)
    assert r1.dtype == torch.float16
    assert set(np.unique(r1.float().numpy()).tolist()) == {lo, hi}
    # unbiased: the mean is the exact value (binomial standard error ~ 2e-6 here)
    mean = r1.double().mean().item()
    assert abs(mean - float(np.float32(exact))) < 5 * (hi - lo) * np.sqrt(0.21 / x.numel())
    # round-to-nearest would give lo everywhere
    assert torch.equal(x.half(), torch.full_like(r1, lo))
    # exactly representable values, infinities and NaN are kept
    special = torch.tensor([0.5, -2.0, 0.0, float("inf"), -float("inf"), 65504.0, 1e6])
    out = stochastic_round_half(special)
    assert out[:6].tolist() == special[:6].tolist()
    assert out[6] == torch.tensor(1e6).half()
    assert torch.isnan(stochastic_round_half(torch.tensor([float("nan")]))).all()
    # subnormals: between 0 and the smallest float16 subnormal
    tiny = torch.full((100_000,), 2.0 ** -25, dtype=torch.float32)  # half of 2**-24
    frac = (stochastic_round_half(tiny).float() > 0).double().mean().item()
    assert abs(frac - 0.5) < 0.01


class HalfLinear(torch.nn.Module):
    def __init__(self, n=4096):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(n, dtype=torch.float16))

    def forward(self, x):
        return poptorch.identity_loss((self.w * x).sum(), reduction="sum")


def _train_half(sr, seed, lr=1e-4, steps=1):
    opts = _opts(s=steps).randomSeed(seed)
    opts.Precision.enableStochasticRounding(sr)
    net = HalfLinear()
    x = torch.ones(steps, 4096, dtype=torch.float16)
    poptorch.trainingModel(net, opts, torch.optim.SGD(net.parameters(), lr=lr))(x)
    return net.w.detach().clone()


def test_stochastic_rounding_of_float16_updates():
    # the update (1e-4) is below half a float16 ulp at 1.0: round-to-nearest loses it
    plain = _train_half(False, 1)
    assert torch.equal(plain, torch.ones(4096, dtype=torch.float16))
    a, b, c = _train_half(True, 1), _train_half(True, 1), _train_half(True, 2)
    assert a.dtype == torch.float16 and torch.equal(a, b) and not torch.equal(a, c)
    # every value is one of the two float16 neighbours of the exact update, mean = exact
    below = 1.0 - 2.0 ** -11
    assert set(np.unique(a.float().numpy()).tolist()) == {below, 1.0}
    se = (1.0 - below) * np.sqrt(0.25 / a.numel())
    assert abs(a.double().mean().item() - (1.0 - 1e-4)) < 5 * se


class Mixed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.a = torch.nn.Parameter(torch.randn(64))
        self.h = torch.nn.Parameter(torch.randn(64).half())

    def forward(self, x):
        return poptorch.identity_loss((self.a * x).sum() + (self.h.float() * x).sum().pow(2),
                                      reduction="sum")


def _train_mixed(sr, steps):
    opts = _opts(s=steps).randomSeed(3)
    opts.Precision.enableStochasticRounding(sr)
    net = Mixed()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    poptorch.trainingModel(net, opts, opt)(torch.linspace(-1, 1, 64 * steps).reshape(steps, 64))
    return net, opt


def test_stochastic_rounding_leaves_float32_weights_and_keeps_float32_optimizer_state():
    on, opt_on = _train_mixed(True, steps=3)
    off, _ = _train_mixed(False, steps=3)
    assert torch.equal(on.a, off.a)  # float32 weights: stochastic rounding changes nothing
    assert on.h.dtype == torch.float16 and not torch.equal(on.h, off.h)
    assert opt_on.state[on.h]["exp_avg"].dtype == torch.float32


def test_stochastic_rounding_is_within_one_float16_ulp_of_the_float32_update():
    on, _ = _train_mixed(True, steps=1)
    # plain torch: the same step computed in float32 from the float16 start
    ref = Mixed()
    h = torch.nn.Parameter(ref.h.detach().float())
    opt = torch.optim.Adam([ref.a, h], lr=1e-2)
    x = torch.linspace(-1, 1, 64)
    ((ref.a * x).sum() + (h * x).sum().pow(2)).backward()
    opt.step()
    exact = h.detach().double()
    got = on.h.detach().double()
    ulp = (torch.nextafter(exact.half(), torch.full_like(exact.half(), float("inf"))).double()
           - exact.half().double()).abs()
    assert ((got - exact).abs() <= ulp * (1 + 1e-3)).all()
    # round-to-nearest stays within half an ulp; stochastic rounding goes past it somewhere
    assert ((got - exact).abs() > ulp / 2 * (1 + 1e-3)).any()


def test_synthetic_data_feeds_the_model_without_reading_the_host():
    seen = []

    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(64, 3)

        def forward(self, x, y):
            seen.append((x.clone(), y.clone()))
            out = self.fc(x)
            return out, F.cross_entropy(out, y)

    opts = _opts(s=2, r=2).enableSyntheticData(True)
    net = Recorder()
    before = [p.detach().clone() for p in net.parameters()]
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    x = torch.full((2 * 2 * 8, 64), float("nan"))
    y = torch.full((2 * 2 * 8,), -7, dtype=torch.int64)
    out, loss = model(x, y)
    model(x, y)
    assert len(seen) >= 8  # 2 calls of S * R micro-batches (plus the compile-time traces)
    # the labels PopART draws (rounded normal samples) include negatives, which torch's
    # cross_entropy rejects: after the first trace the labels are zeros (see below)
    assert (seen[0][1] < 0).any()
    seen = seen[1:]
    x0, y0 = seen[0]
    assert x0.shape == (8, 64) and x0.dtype == torch.float32
    assert y0.shape == (8,) and y0.dtype == torch.int64 and torch.equal(y0, torch.zeros(8,
                                                                                     dtype=torch.int64))
    assert torch.isfinite(x0).all()
    assert abs(x0.mean().item()) < 0.2 and abs(x0.std().item() - 1.0) < 0.2  # N(0, 1)
    for xi, yi in seen:
        assert torch.equal(xi, x0) and torch.equal(yi, y0)
    # training ran on the synthetic data; nothing is written back to the host outputs
    after = list(net.parameters())
    assert all(torch.isfinite(p).all() for p in after)
    assert not all(torch.equal(p, q) for p, q in zip(before, after))
    assert out.shape == (2 * 8, 3) and loss.shape == (2,)
    assert torch.equal(out, torch.zeros_like(out)) and torch.equal(loss, torch.zeros(2))


def test_synthetic_zeros_mode_and_inference():
    seen = []

    class Echo(torch.nn.Module):
        def forward(self, x):
            seen.append(x.clone())
            return x * 2

    opts = poptorch.Options().deviceIterations(2)
    opts._Popart.set("syntheticDataMode", 1)  # PopART's Zeros
    out = poptorch.inferenceModel(Echo(), opts)(torch.ones(4, 3, dtype=torch.float16))
    assert out.shape == (4, 3) and out.dtype == torch.float16
    assert all(torch.equal(x, torch.zeros(2, 3, dtype=torch.float16)) for x in seen)


def _round_half_away(x):
    """numpy reference of C's roundf (halves away from zero)."""
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def test_synthetic_random_normal_per_input_as_popart():
    """PopART restarts its normal generator for every input and converts each sample to the
    input's type (``convertFloatToDataType``): two float inputs of one shape see the same
    values, bool inputs are True (sample != 0), integer inputs are roundf(sample), an
    unsigned one wrapped around."""
    seen = []

    class Echo(torch.nn.Module):
        def forward(self, a, b, mask, idx, h, u):
            seen.append((a, b, mask, idx, h, u))
            return a + b

    opts = poptorch.Options().deviceIterations(2).enableSyntheticData(True)
    poptorch.inferenceModel(Echo(), opts)(
        torch.zeros(4, 5), torch.zeros(4, 5), torch.zeros(4, 5, dtype=torch.bool),
        torch.full((4, 5), 9, dtype=torch.int32), torch.zeros(4, 5, dtype=torch.float16),
        torch.zeros(4, 5, dtype=torch.uint8))
    a, b, mask, idx, h, u = seen[-1]
    assert torch.equal(a, b) and a.shape == (2, 5) and a.std() > 0.3
    assert mask.dtype == torch.bool and bool(mask.all())
    want = _round_half_away(a.numpy().astype(np.float64))
    assert idx.dtype == torch.int32 and np.array_equal(idx.numpy(), want.astype(np.int32))
    assert (idx < 0).any() and (idx != 0).any()  # the rounded samples, not zeros
    assert u.dtype == torch.uint8 and np.array_equal(u.numpy(), (want.astype(np.int64) % 256))
    assert h.dtype == torch.float16 and torch.equal(h, a.half())


def test_synthetic_integers_round_halves_away_from_zero():
    from ipu_gpu.poptorch.device_state import _round_half_away as ours

    x = torch.tensor([-2.5, -1.5, -0.5, -0.49, 0.0, 0.5, 1.5, 2.5, 2.49], dtype=torch.float32)
    assert np.array_equal(ours(x).numpy(), _round_half_away(x.numpy()))
    assert not torch.equal(ours(x), torch.round(x))  # torch.round rounds halves to even


def test_synthetic_random_uniform_covers_each_dtype_range():
    """PopART's RandomUniform (syntheticDataMode 3): float16 in [-65504, 65504], float32
    over its finite range, integers over their whole range (int64 as the int32 PopTorch
    streams), bool both values."""
    seen = []

    class Echo(torch.nn.Module):
        def forward(self, f, h, i, b, u):
            seen.append((f, h, i, b, u))
            return f

    opts = poptorch.Options()
    opts._Popart.set("syntheticDataMode", 3)
    n = 4096
    poptorch.inferenceModel(Echo(), opts)(
        torch.zeros(n), torch.zeros(n, dtype=torch.float16), torch.zeros(n, dtype=torch.int64),
        torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.uint8))
    f, h, i, b, u = seen[-1]
    f64 = f.double().numpy()
    assert np.isfinite(f64).all() and f64.min() < -1e37 and f64.max() > 1e37
    assert torch.isfinite(h).all() and h.min() < -30000 and h.max() > 30000
    assert i.dtype == torch.int64
    assert int(i.min()) >= -2 ** 31 and int(i.max()) < 2 ** 31
    assert int(i.min()) < -2 ** 30 and int(i.max()) > 2 ** 30
    assert b.dtype == torch.bool and bool(b.any()) and not bool(b.all())
    assert u.dtype == torch.uint8 and int(u.min()) < 8 and int(u.max()) > 247


def test_synthetic_labels_torch_rejects_fall_back_to_zeros(caplog):
    """Rounded normal labels include negatives: torch's cross_entropy raises where the IPU
    reads them out of range; the model then trains on zero labels, with a warning."""
    seen = []

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 3)

        def forward(self, x, y):
            seen.append(y.clone())
            out = self.fc(x)
            return out, F.cross_entropy(out, y)

    torch.manual_seed(3)
    net = Classifier()
    opts = poptorch.Options().deviceIterations(2).enableSyntheticData(True)
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        model(torch.zeros(8, 6), torch.ones(8, dtype=torch.int64))
    assert "index-checked ops reject" in caplog.text
    assert (seen[0] < 0).any()  # the first trace saw PopART's rounded samples
    assert all(torch.equal(y, torch.zeros(4, dtype=torch.int64)) for y in seen[1:])
    assert all(torch.isfinite(p).all() for p in net.parameters())


def test_synthetic_data_does_not_hide_the_models_own_errors():
    class Broken(torch.nn.Module):
        def forward(self, x, idx):
            return x @ torch.ones(3, 3)  # x has 4 columns

    opts = poptorch.Options().enableSyntheticData(True)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        poptorch.inferenceModel(Broken(), opts)(torch.zeros(2, 4),
                                                torch.zeros(2, dtype=torch.int64))


def _train_fp32(configure):
    ours = Net()
    opts = _opts(s=3, a=2)
    configure(opts)
    torch.manual_seed(8)
    x, y = torch.randn(12, 5), torch.randint(0, 3, (12,))
    out, loss = poptorch.trainingModel(
        ours, opts, poptorch.optim.SGD(ours.parameters(), lr=0.3, momentum=0.9))(x, y)
    return [p.detach() for p in ours.parameters()] + [out, loss]


def test_partials_type_changes_nothing_in_float32():
    plain = _train_fp32(lambda o: None)
    partials = _train_fp32(lambda o: o.Precision.setPartialsType(torch.half))
    for p, t in zip(plain, partials):
        assert torch.equal(p, t)
    opts = poptorch.Options()
    opts.Training.setAutomaticLossScaling(True)
    opts.Precision.setPartialsType(torch.half)
    assert opts._Popart.options["automaticLossScalingSettings.enabled"] is True
    assert opts._Popart.options["partialsTypeMatMuls"] == "half"
    # and the unscaled run is the hand-written loop
    ref = Net()
    opt = torch.optim.SGD(ref.parameters(), lr=0.3, momentum=0.9)
    torch.manual_seed(8)
    x, y = torch.randn(12, 5), torch.randint(0, 3, (12,))
    for si in range(3):
        opt.zero_grad()
        for ai in range(2):
            rows = slice((2 * si + ai) * 2, (2 * si + ai + 1) * 2)
            out, loss = ref(x[rows], y[rows])
            (loss / 2).backward()
        opt.step()
    for p, q in zip(plain, list(ref.parameters()) + [out, loss]):
        torch.testing.assert_close(p, q.detach(), rtol=1e-6, atol=1e-6)


def test_each_of_four_replicas_keeps_its_own_buffer_tensors():
    net = BNNet()
    model = poptorch.trainingModel(net, _opts(r=4))
    model(torch.randn(8, 2, 4, 4), torch.randint(0, 4, (8,)))
    replicas = [model._device_state.buffers.replica(i) for i in range(4)]
    assert all(len(rep) == len(dict(net.named_buffers())) for rep in replicas)
    ids = {id(rep["bn.running_mean"]) for rep in replicas}
    assert len(ids) == 4  # four separate tensors
    for rep in replicas:  # one forward each
        assert int(rep["bn.num_batches_tracked"]) == 1
    assert int(net.bn.num_batches_tracked) == 1


def test_parameter_reassigned_in_forward_is_refused():
    class Rebinds(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(2))

        def forward(self, x):
            self.w = torch.nn.Parameter(self.w.detach() * 2)
            return x * self.w

    net = Rebinds()
    original = net.w
    with pytest.raises(poptorch.Error, match=r"Parameter w is reassigned within the model when "
                                             r"calling the forward method\."):
        poptorch.inferenceModel(net)(torch.ones(2))
    assert net.w is original and net.w.tolist() == [1.0, 1.0]


# ---- input replica grouping -----------------------------------------------------------------
class _Echo(torch.nn.Module):
    def forward(self, x):
        return x * 1


def _grouped(s, r, g, cgt, b=2):
    opts = _opts(s=s, r=r).inputReplicaGrouping(g, cgt)
    x = torch.arange(s * (r // g) * b, dtype=torch.float32).view(-1, 1)
    out = poptorch.inferenceModel(_Echo(), opts)(x)
    # OutputMode.All: [S, R, B] rows; the micro-batch index (of B rows) each replica read
    return (out.view(s, r, b)[..., 0] // b).long().tolist()


def test_input_replica_grouping_shares_micro_batches_within_a_group():
    consecutive, orthogonal = poptorch.CommGroupType.Consecutive, poptorch.CommGroupType.Orthogonal
    # S = A = 1: replica r reads region r // G (Consecutive) or r % (R / G) (Orthogonal)
    assert _grouped(1, 4, 2, consecutive) == [[0, 0, 1, 1]]
    assert _grouped(1, 4, 2, orthogonal) == [[0, 1, 0, 1]]
    assert _grouped(1, 4, 4, consecutive) == [[0, 0, 0, 0]]
    assert _grouped(1, 4, 1, poptorch.CommGroupType.NoGrouping) == [[0, 1, 2, 3]]
    # S = 2: PopTorch's StepIO reads each region sequentially, moving to the next replica's
    # region at a region's end (research 2.1 leaves this case open; this is its code's order)
    assert _grouped(2, 4, 2, consecutive) == [[0, 1, 0, 1], [2, 3, 2, 3]]
    assert _grouped(2, 4, 2, orthogonal) == [[0, 1, 2, 3], [0, 1, 2, 3]]
    # G = 1 stays the [S, R, B] layout
    assert _grouped(2, 2, 1, consecutive) == [[0, 1], [2, 3]]


def test_input_replica_grouping_batch_size_and_training():
    opts = _opts(r=4).inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)
    with pytest.raises(AssertionError, match=r"must be a multiple of Options\.deviceIterations"
                                             r"\(1\) \* \(Options\.replicationFactor\(4\) / "
                                             r"Options\.inputReplicaGrouping\.input_group_size"
                                             r"\(2\)\) \* Options\.Training\."
                                             r"gradientAccumulation\(1\) = 2 because"):
        poptorch.inferenceModel(_Echo(), opts)(torch.ones(3, 1))
    # two replicas in one group see the same micro-batch: the mean of their gradients is the
    # gradient of that micro-batch alone
    ours, ref = Net(), Net()
    opts = _opts(r=2).inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)
    x, y = torch.randn(4, 5), torch.randint(0, 3, (4,))
    model = poptorch.trainingModel(ours, opts, poptorch.optim.SGD(ours.parameters(), lr=0.5))
    _, loss = model(x, y)
    opt = torch.optim.SGD(ref.parameters(), lr=0.5)
    ref_loss = ref(x, y)[1]
    ref_loss.backward()
    opt.step()
    torch.testing.assert_close(loss, torch.stack([ref_loss.detach()] * 2))
    for p, q in zip(ours.parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-6, atol=1e-7)


# ---- automatic loss scaling -----------------------------------------------------------------
class ALSNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, y):
        out = self.fc(x)
        return out, F.mse_loss(out, y)


def _als_reference(x, y, steps, lr, loss_scaling, a=1, period=1, edge=0.125 * 65504,
                   t=1e-7):
    """Plain PyTorch in float16: PopART's automatic loss scaling by hand. Per step the loss
    scale is loss_scaling * factor; each micro-batch's scaled loss (ReductionType.Mean: / a)
    is back-propagated; the tracked float16 gradients (the output of fc, its weight and
    bias; PopART's tensors are not divided by a) are counted below/above the bin edge; the
    gradients, unscaled, make one SGD step; then the factor halves if upper > t/(1-t) * lower,
    else doubles (on the first step of every ``period``)."""
    ref = ALSNet().half()
    factor, factors = 1.0, []
    b = x.shape[0] // (steps * a)
    for step in range(steps):
        ls = loss_scaling * factor
        factors.append(factor)
        grads = [torch.zeros_like(p) for p in ref.parameters()]
        lower = upper = 0
        for ai in range(a):
            rows = slice((step * a + ai) * b, (step * a + ai + 1) * b)
            out = ref.fc(x[rows])
            loss = F.mse_loss(out, y[rows]) * (ls / a)
            g_out, g_w, g_b = torch.autograd.grad(loss, [out, ref.fc.weight, ref.fc.bias])
            for g in (g_out, g_w, g_b):
                big = int((g.abs().float() * a >= edge).sum())
                upper, lower = upper + big, lower + g.numel() - big
            grads[0] += g_w
            grads[1] += g_b
        with torch.no_grad():
            for p, g in zip(ref.parameters(), grads):
                p.sub_(lr * (g / ls))
        if step % period == 0:
            factor *= 0.5 if upper > t / (1 - t) * lower else 2.0
    return ref, factors, factor


def _als_model(steps, lr, loss_scaling, a=1, configure=None):
    opts = _opts(s=steps, a=a)
    opts.Training.setAutomaticLossScaling(True)
    if configure is not None:
        configure(opts)
    net = ALSNet().half()
    opt = poptorch.optim.SGD(net.parameters(), lr=lr, loss_scaling=loss_scaling)
    return net, opt, poptorch.trainingModel(net, opts, opt)


def _als_data(rows, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, 4, generator=g).half()
    y = (4 * torch.randn(rows, 3, generator=g)).half()
    return x, y


def test_automatic_loss_scaling_doubles_until_gradients_reach_the_bin_edge():
    x, y = _als_data(8 * 4)
    ref, factors, final = _als_reference(x, y, steps=8, lr=0.0, loss_scaling=64.0)
    # the scale climbs x2 per step, then oscillates around the bin edge
    assert factors[:3] == [1.0, 2.0, 4.0] and max(factors) > 4.0
    assert any(b < a for a, b in zip(factors, factors[1:]))
    net, opt, model = _als_model(8, 0.0, 64.0)
    model.compile(x, y)
    model(x, y)
    state = opt.state_dict()["ipu_state"]
    assert state["lossScaleUpdateFactor"].dtype == torch.float16  # the float16 loss's
    assert float(state["lossScaleUpdateFactor"]) == final
    # one call of 8 device iterations is 8 steps; the next call goes on from the factor
    model(x, y)
    _, _, final16 = _als_reference(torch.cat([x, x]), torch.cat([y, y]), steps=16, lr=0.0,
                                   loss_scaling=64.0)
    assert float(opt.state_dict()["ipu_state"]["lossScaleUpdateFactor"]) == final16


def test_automatic_loss_scaling_trains_as_the_reference():
    x, y = _als_data(6 * 2 * 4, seed=1)
    ref, factors, final = _als_reference(x, y, steps=6, lr=0.05, loss_scaling=128.0, a=2)
    assert len(set(factors)) > 2
    net, opt, model = _als_model(6, 0.05, 128.0, a=2)
    model(x, y)
    assert float(opt.state_dict()["ipu_state"]["lossScaleUpdateFactor"]) == final
    for p, q in zip(net.parameters(), ref.parameters()):
        assert p.dtype == torch.float16
        torch.testing.assert_close(p.detach(), q.detach(), rtol=2e-3, atol=1e-4)


def test_automatic_loss_scaling_update_period_and_settings():
    x, y = _als_data(6 * 4, seed=2)
    _, factors, final = _als_reference(x, y, steps=6, lr=0.0, loss_scaling=64.0, period=2)
    assert factors[2] == factors[1] and factors[4] == factors[3]  # steps 0, 2, 4 update
    _, opt, model = _als_model(
        6, 0.0, 64.0,
        configure=lambda o: o._Popart.set("automaticLossScalingSettings.updatePeriod", 2))
    model(x, y)
    assert float(opt.state_dict()["ipu_state"]["lossScaleUpdateFactor"]) == final
    # a lower bin edge: the gradients reach it at a smaller scale
    _, _, low = _als_reference(x, y, steps=6, lr=0.0, loss_scaling=64.0, edge=0.01 * 65504)
    _, opt, model = _als_model(
        6, 0.0, 64.0,
        configure=lambda o: o._Popart.set("automaticLossScalingSettings.binEdgeLocation", 0.01))
    model(x, y)
    assert float(opt.state_dict()["ipu_state"]["lossScaleUpdateFactor"]) == low
    _, _, model = _als_model(
        1, 0.0, 64.0,
        configure=lambda o: o._Popart.set("automaticLossScalingSettings.binEdgeLocation", 1.5))
    with pytest.raises(poptorch.Error, match=r"Out of range value for 'binEdgeLocation'\. The "
                                             r"current value is 1\.5, but it should be in the "
                                             r"range \[0, 1\]\."):
        model(x[:4], y[:4])


def test_automatic_loss_scaling_update_period_counts_steps_across_calls():
    """PopART's counters start with the executable and count steps, not calls: with
    updatePeriod 2 and 3 device iterations per call, steps 0, 2 and 4 (the second call's
    middle step) gather statistics and update."""
    x, y = _als_data(6 * 4, seed=4)
    _, factors, final = _als_reference(x, y, steps=6, lr=0.0, loss_scaling=64.0, period=2)
    _, opt, model = _als_model(
        3, 0.0, 64.0,
        configure=lambda o: o._Popart.set("automaticLossScalingSettings.updatePeriod", 2))
    model(x[:12], y[:12])
    assert float(opt.state_dict()["ipu_state"]["lossScaleUpdateFactor"]) == factors[3]
    model(x[12:], y[12:])
    assert float(opt.state_dict()["ipu_state"]["lossScaleUpdateFactor"]) == final


def test_automatic_loss_scaling_counts_in_float32_as_popart():
    """Each micro-batch's histogram sum is cast to float32 and accumulated in float32 (per
    replica, then over the replicas): 2**24 + 1 elements below the edge count 2**24, and
    the halving test is float32's upper > lower * t / (1 - t)."""
    from ipu_gpu.poptorch.loss_scaling import AutomaticLossScaling

    opts = poptorch.Options()
    opts._Popart.set("automaticLossScalingSettings.thresholdUpperCountProportion", 0.5)
    net = torch.nn.Linear(1, 1).half()
    als = AutomaticLossScaling(opts, net)
    big = torch.full((2 ** 24 + 2,), 60000.0, dtype=torch.float16)  # all above the edge
    with als.tracking(0):
        als._count(torch.zeros(2 ** 24, dtype=torch.float16))
    with als.tracking(0):  # a second accumulation step: 2**24 + 1 rounds to 2**24
        als._count(torch.zeros(1, dtype=torch.float16))
    with als.tracking(1):
        als._count(big)
    lower, upper = als.counts()
    assert lower.dtype == np.float32 and float(lower) == 2.0 ** 24
    assert float(upper) == 2.0 ** 24 + 2
    als.update()  # f = 1: 2**24 + 2 > 2**24 halves
    assert als.factor == 0.5 and als.counts() == (0.0, 0.0)
    with als.tracking(0):
        als._count(torch.zeros(2 ** 24, dtype=torch.float16))
    with als.tracking(1):
        als._count(big[: 2 ** 24 + 1])
    # exact counts would halve (2**24 + 1 > 2**24); in float32 both are 2**24: doubles
    als.update()
    assert als.factor == 1.0


def test_automatic_loss_scaling_needs_float16_gradients():
    """PopART tracks float16 gradients only: a float32 model fails to compile."""
    opts = poptorch.Options()
    opts.Training.setAutomaticLossScaling(True)
    model = poptorch.trainingModel(Net(), opts)
    with pytest.raises(poptorch.Error, match=r"^\[AutomaticLossScale transform\] No tracked "
                                             r"gradient tensors of type fp16 were found\.$"):
        model(torch.randn(2, 5), torch.randint(0, 3, (2,)))
    assert not model.isCompiled()


# ---- replica-grouped weights ----------------------------------------------------------------
class _XW(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.W = torch.nn.Parameter(w)

    def forward(self, x):
        z = x @ self.W
        return z, poptorch.identity_loss(z ** 2, reduction="mean")


def test_replica_grouped_weights_reproduce_the_full_model():
    """PopTorch's docs example (user_guide/replica_grouped_weights.py): 8 replicas, W split
    in 4 column shards (Orthogonal groups of 2), the input rows in 2 halves (input groups of
    4): losses and weights equal plain PyTorch on the whole problem."""
    rng = np.random.RandomState(seed=100)
    x = torch.tensor(rng.normal(size=(24, 40)).astype(np.float32))
    w = torch.tensor(rng.normal(size=(40, 56)).astype(np.float32) * (5 * 8) ** -0.5)
    shards, halves = 4, 2
    m = _XW(w.reshape(40, shards, 14).transpose(0, 1).contiguous())
    opts = _opts(r=8).inputReplicaGrouping(shards, poptorch.CommGroupType.Consecutive)
    opts.outputMode(poptorch.OutputMode.All)
    model = poptorch.trainingModel(m, opts, torch.optim.SGD(m.parameters(), lr=0.01))
    assert model.W.shape == (4, 40, 14)  # other attributes are the parameter's
    model.W.replicaGrouping(poptorch.CommGroupType.Orthogonal, halves,
                            poptorch.VariableRetrievalMode.OnePerGroup)
    ref = _XW(w.clone())
    opt = torch.optim.SGD(ref.parameters(), lr=0.01)
    for _ in range(4):
        _, loss = model(x.reshape(halves, 12, 40))
        opt.zero_grad()
        _, ref_loss = ref(x)
        ref_loss.backward()
        opt.step()
        assert loss.shape == (8,)
        torch.testing.assert_close(loss.sum() / 8, ref_loss.detach(), rtol=1e-6, atol=1e-7)
    got = m.W.detach().transpose(0, 1).reshape(40, 56)
    torch.testing.assert_close(got, ref.W.detach(), rtol=1e-6, atol=1e-7)


def test_replica_grouped_weight_slices_per_replica():
    """Replica r reads slice r // size (Consecutive), r % (R / size) (Orthogonal), r
    (NoGrouping); All keeps one value."""
    def seen(cgt, size, w):
        m = _XW(w)
        model = poptorch.inferenceModel(m, _opts(r=4))
        model.W.replicaGrouping(cgt, size, poptorch.VariableRetrievalMode.AllReplicas)
        out, _ = model(torch.ones(4, 1))
        return out[:, 0].tolist()

    slices = torch.tensor([[[10.0]], [[20.0]]])
    assert seen(poptorch.CommGroupType.Consecutive, 2, slices) == [10, 10, 20, 20]
    assert seen(poptorch.CommGroupType.Orthogonal, 2, slices) == [10, 20, 10, 20]
    assert seen(poptorch.CommGroupType.NoGrouping, 1,
                torch.tensor([[[1.0]], [[2.0]], [[3.0]], [[4.0]]])) == [1, 2, 3, 4]
    assert seen(poptorch.CommGroupType.All, 4, torch.tensor([[7.0]])) == [7, 7, 7, 7]
    with pytest.raises(poptorch.Error, match=r"Return mismatch with possibly appended outer "
                                             r"dimension \(2\) of Tensor: \"W\"\. should "
                                             r"match numGroups: 4"):
        seen(poptorch.CommGroupType.NoGrouping, 1, slices)

    class Scalar(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.s = torch.nn.Parameter(torch.tensor(2.0))

        def forward(self, x):
            return x * self.s

    model = poptorch.inferenceModel(Scalar(), _opts(r=2))
    model.s.replicaGrouping(poptorch.CommGroupType.NoGrouping, 1,
                            poptorch.VariableRetrievalMode.OnePerGroup)
    with pytest.raises(poptorch.Error, match="Scalars cannot be passed as per-replica weight "
                                             "tensor values"):
        model(torch.ones(2))
