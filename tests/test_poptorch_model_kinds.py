"""The issue's model kinds (an MLP, a CNN with BatchNorm, an LSTM, an embedding model)
trained through ``poptorch.trainingModel`` under deviceIterations / gradientAccumulation /
replication / outputMode combinations, each equal to the plain PyTorch loop written out by
hand: per device iteration, every (accumulation step, replica) micro-batch's loss divided by
A * R and back-propagated, one SGD step; each replica with its own BatchNorm buffers (the
host reads replica 0's); the outputs and losses the output mode returns."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402

nn, F = torch.nn, torch.nn.functional
B = 4  # micro-batch


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 16), nn.Linear(16, 3)

    def forward(self, x, y):
        out = self.fc2(F.relu(self.fc1(x)))
        return out, F.cross_entropy(out, y)


class CNNBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 3 * 3, 3)

    def forward(self, x, y):
        h = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        out = self.fc(h.flatten(1))
        return out, F.cross_entropy(out, y)


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(5, 8, batch_first=True), nn.Linear(8, 3)

    def forward(self, x, y):
        _, (h, _) = self.lstm(x)
        out = self.fc(h[-1])
        return out, F.cross_entropy(out, y)


class EmbeddingModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.fc = nn.Embedding(20, 8), nn.Linear(8, 3)

    def forward(self, tokens, y):
        out = self.fc(self.emb(tokens).mean(1))
        return out, F.cross_entropy(out, y)


def _inputs(kind, n, g):
    if kind is MLP:
        return torch.randn(n, 6, generator=g)
    if kind is CNNBatchNorm:
        return torch.randn(n, 2, 6, 6, generator=g)
    if kind is LSTMModel:
        return torch.randn(n, 7, 5, generator=g)
    return torch.randint(0, 20, (n, 5), generator=g)


def _make(kind):
    torch.manual_seed(0)
    return kind()


def _reference(kind, calls, s, a, r, mode, period, lr=0.2):
    ref = _make(kind)
    opt = torch.optim.SGD(ref.parameters(), lr=lr)
    buffers = [{n: b.detach().clone() for n, b in ref.named_buffers()} for _ in range(r)]
    results = []
    for x, y in calls:
        xs = x.reshape(s, a, r, B, *x.shape[1:])
        ys = y.reshape(s, a, r, B)
        seen = {}
        for si in range(s):
            opt.zero_grad()
            for ai in range(a):
                for ri in range(r):
                    with torch.no_grad():
                        for n, b in ref.named_buffers():
                            b.copy_(buffers[ri][n])
                    out, loss = ref(xs[si, ai, ri], ys[si, ai, ri])
                    (loss / (a * r)).backward()
                    buffers[ri] = {n: b.detach().clone() for n, b in ref.named_buffers()}
                    seen[(si, ai, ri)] = (out.detach(), loss.detach())
            opt.step()
        if mode == "Final":
            keys = [(s - 1, a - 1, ri) for ri in range(r)]
        elif mode == "EveryN":
            keys = [(si, ai, ri) for si in range(period - 1, s, period) for ai in range(a)
                    for ri in range(r)]
        else:
            keys = [(si, ai, ri) for si in range(s) for ai in range(a) for ri in range(r)]
        if mode == "Sum":
            outs = [sum(seen[(si, ai, ri)][0] for si in range(s) for ai in range(a))
                    for ri in range(r)]
            losses = [sum(seen[(si, ai, ri)][1] for si in range(s) for ai in range(a))
                      for ri in range(r)]
        else:
            outs = [seen[k][0] for k in keys]
            losses = [seen[k][1] for k in keys]
        results.append((torch.cat(outs), torch.stack(losses) if len(losses) > 1 else losses[0]))
    with torch.no_grad():
        for n, b in ref.named_buffers():
            b.copy_(buffers[0][n])
    return ref, results


COMBOS = [(2, 1, 1, "All", 1), (1, 2, 2, "Final", 1), (2, 2, 2, "Sum", 1),
          (4, 1, 2, "EveryN", 2)]


@pytest.mark.parametrize("kind", [MLP, CNNBatchNorm, LSTMModel, EmbeddingModel],
                         ids=lambda k: k.__name__)
@pytest.mark.parametrize("s, a, r, mode, period", COMBOS,
                         ids=[f"S{c[0]}A{c[1]}R{c[2]}-{c[3]}" for c in COMBOS])
def test_training_model_equals_the_plain_torch_loop(kind, s, a, r, mode, period):
    g = torch.Generator().manual_seed(7)
    n = s * a * r * B
    calls = [(_inputs(kind, n, g), torch.randint(0, 3, (n,), generator=g)) for _ in range(2)]
    net = _make(kind)
    opts = poptorch.Options().deviceIterations(s).replicationFactor(r)
    opts.Training.gradientAccumulation(a)
    opts.outputMode(getattr(poptorch.OutputMode, mode), period if mode == "EveryN" else None)
    model = poptorch.trainingModel(net, opts, torch.optim.SGD(net.parameters(), lr=0.2))
    got = [model(x, y) for x, y in calls]
    ref, want = _reference(kind, calls, s, a, r, mode, period)
    for (out, loss), (ref_out, ref_loss) in zip(got, want):
        torch.testing.assert_close(out, ref_out, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(net.state_dict().items(), ref.state_dict().values()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=name)
