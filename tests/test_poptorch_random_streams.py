"""The replicas' random streams are switched per micro-batch only for a model that draws
(issue 18, ``device_state.DeviceRandom.draws``): a model whose first call drew nothing is
run on one stream afterwards (no generator state read and written per micro-batch), with the
same numbers; a model that starts drawing later is caught at the call's end, warned about,
and gets its replica streams back from the next call on, as a model that drew from the
start."""

from __future__ import annotations

import copy
import logging

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

import ipu_gpu.poptorch as poptorch  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)
        self.drop = False

    def forward(self, x, y):
        h = self.fc(x)
        if self.drop:
            h = nn.functional.dropout(h, 0.5, True)
        return h, nn.functional.mse_loss(h, y)


def _model(net, r=2):
    opts = poptorch.Options().replicationFactor(r).deviceIterations(2).randomSeed(9)
    opts.outputMode(poptorch.OutputMode.All)
    return poptorch.trainingModel(net, opts, torch.optim.SGD(net.parameters(), lr=0.1))


def _data(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(8, 6, generator=g), torch.randn(8, 3, generator=g)


def test_a_model_that_draws_nothing_is_not_switched_between_replicas(monkeypatch):
    torch.manual_seed(0)
    net = Net()
    model = _model(net)
    model(*_data(0))
    state = model._device_state
    assert state.random.draws is False
    loads = []
    real = torch.set_rng_state
    monkeypatch.setattr(torch, "set_rng_state", lambda s: (loads.append(1), real(s)))
    model(*_data(1))
    assert len(loads) == 2  # the call's start (the device stream) and end (the host's)
    assert model._device_state.random.draws is False


def test_a_model_that_draws_is_switched_and_its_replicas_draw_apart():
    torch.manual_seed(0)
    net = Net()
    net.drop = True
    model = _model(net)
    x, y = _data(0)
    out, _ = model(x, x[:, :3])
    assert model._device_state.random.draws is True
    # replica 0 and 1 see the same micro-batch values where their inputs agree; their
    # dropout masks differ (streams seeded randomSeed + r)
    x2 = torch.cat([x[:2], x[:2], x[4:6], x[4:6]])
    out, _ = model(x2, x2[:, :3])
    assert not torch.equal(out[0:2] == 0, out[2:4] == 0)


def test_the_host_generator_is_left_as_it_was():
    torch.manual_seed(0)
    model = _model(Net())
    torch.manual_seed(123)
    want = torch.rand(3)
    torch.manual_seed(123)
    model(*_data(0))
    model(*_data(1))
    assert torch.equal(torch.rand(3), want)


def test_a_model_that_starts_drawing_later_is_caught(caplog):
    torch.manual_seed(0)
    net = Net()
    reference = copy.deepcopy(net)
    model = _model(net)
    model(*_data(0))
    assert model._device_state.random.draws is False
    net.drop = True
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        model(*_data(1))
    assert "drew random numbers in a call after a first call" in caplog.text
    assert model._device_state.random.draws is True
    # from now on as a model that drew from its first call: replica r on stream seed + r
    reference.drop = True
    ref_model = _model(reference)
    ref_model(*_data(0))
    assert ref_model._device_state.random.draws is True
    ref_model.rng_state = model.rng_state
    with torch.no_grad():
        for p, q in zip(reference.parameters(), net.parameters()):
            p.copy_(q)
    ref_model.copyWeightsToDevice()
    got, _ = model(*_data(2))
    want, _ = ref_model(*_data(2))
    assert torch.equal(got, want)
