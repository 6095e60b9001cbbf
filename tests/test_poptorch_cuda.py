"""PopTorch models on a CUDA device (``make test-gpu``; skipped without a CUDA build of
torch and a GPU): a model moved to ``cuda`` trains as the same model on the CPU, and the
device's random streams (one per replica, ``rng_state``) run on the GPU's generator."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402

pytestmark = pytest.mark.gpu
F = torch.nn.functional


@pytest.fixture
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs torch with CUDA and a GPU")
    return torch.device("cuda")


class BNNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(6, 16)
        self.bn = torch.nn.BatchNorm1d(16)
        self.fc2 = torch.nn.Linear(16, 3)

    def forward(self, x, y):
        out = self.fc2(F.relu(self.bn(self.fc1(x))))
        return out, F.cross_entropy(out, y)


def _train(device):
    net = BNNet().to(device)
    opts = poptorch.Options().deviceIterations(2).replicationFactor(2)
    opts.Training.gradientAccumulation(2)
    opts.outputMode(poptorch.OutputMode.All)
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1,
                                                                 momentum=0.9))
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(32, 6, generator=g), torch.randint(0, 3, (32,), generator=g)
    outs = [model(x.to(device), y.to(device)) for _ in range(3)]
    return net.cpu().state_dict(), [(o.cpu(), loss.cpu()) for o, loss in outs]


def test_training_on_cuda_equals_the_cpu(cuda):
    state, outs = _train(cuda)
    ref_state, ref_outs = _train(torch.device("cpu"))
    for name, want in ref_state.items():
        torch.testing.assert_close(state[name], want, rtol=1e-4, atol=1e-5)
    for (o, loss), (ro, rl) in zip(outs, ref_outs):
        torch.testing.assert_close(o, ro, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(loss, rl, rtol=1e-4, atol=1e-5)


class DropNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x)


def test_dropout_streams_on_cuda(cuda):
    def run(seed, r):
        opts = poptorch.Options().replicationFactor(r).randomSeed(seed)
        model = poptorch.inferenceModel(DropNet().train(), opts)
        return model, model(torch.ones(4 * r, 64, device=cuda))

    model, first = run(5, 2)
    assert first.is_cuda
    # replica 1 of seed 5 draws what replica 0 of seed 6 draws
    assert torch.equal(first[4:], run(6, 1)[1])
    assert not torch.equal(first[:4], first[4:])
    state = model.rng_state
    second = model(torch.ones(8, 64, device=cuda))
    model.rng_state = state
    assert torch.equal(model(torch.ones(8, 64, device=cuda)), second)
