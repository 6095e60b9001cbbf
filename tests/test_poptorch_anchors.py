"""``Options.anchorTensor`` / ``getAnchoredTensor`` / ``getTensorNames``: the PopART tensors
the emulator offers (parameters, ``Gradient___``, ``UpdatedVar___``, ``finalLossScale``),
per output mode, checked against plain PyTorch loops written out by hand."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402

F = torch.nn.functional


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(5, 3)

    def forward(self, x, y):
        out = self.fc(x)
        return out, F.cross_entropy(out, y)


def _data(rows):
    g = torch.Generator().manual_seed(1)
    return torch.randn(rows, 5, generator=g), torch.randint(0, 3, (rows,), generator=g)


def test_tutorial_style_gradients_and_weights():
    """Graphcore's observing_tensors tutorial: Gradient___ anchors with the default output
    mode (training: Final), one micro-batch per call."""
    opts = poptorch.Options()
    for name in ("Gradient___fc.weight", "Gradient___fc.bias", "fc.weight",
                 "UpdatedVar___fc.weight"):
        opts.anchorTensor(name, name)
    net = Net()
    model = poptorch.trainingModel(net, opts, poptorch.optim.SGD(net.parameters(), lr=0.1))
    x, y = _data(4)
    model.compile(x, y)
    names = model.getTensorNames()
    assert {"fc.weight", "Gradient___fc.bias", "UpdatedVar___fc.weight"} <= set(names)
    model(x, y)
    ref = Net()
    before = ref.fc.weight.detach().clone()
    F.cross_entropy(ref.fc(x), y).backward()
    torch.testing.assert_close(model.getAnchoredTensor("Gradient___fc.weight"),
                               ref.fc.weight.grad, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(model.getAnchoredTensor("Gradient___fc.bias"),
                               ref.fc.bias.grad, rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(model.getAnchoredTensor("fc.weight"), before)
    torch.testing.assert_close(model.getAnchoredTensor("UpdatedVar___fc.weight"),
                               before - 0.1 * ref.fc.weight.grad, rtol=1e-6, atol=1e-7)
    # the host module gets the weights when it reads them (PopTorch's lazy copy)
    assert model.copyWeightsToHostIfNeeded()
    assert not model.copyWeightsToHostIfNeeded()
    torch.testing.assert_close(net.fc.weight.detach(),
                               model.getAnchoredTensor("UpdatedVar___fc.weight"))


def test_anchor_output_modes_per_micro_batch_and_per_step():
    s, a, b, ls = 3, 2, 2, 4.0
    opts = poptorch.Options().deviceIterations(s)
    opts.Training.gradientAccumulation(a)
    opts.anchorTensor("g", "Gradient___fc.bias", poptorch.OutputMode.All)
    opts.anchorTensor("g_last", "Gradient___fc.bias", poptorch.OutputMode.Final)
    opts.anchorTensor("g_sum", "Gradient___fc.bias", poptorch.OutputMode.Sum)
    opts.anchorTensor("w_every2", "UpdatedVar___fc.bias", poptorch.OutputMode.EveryN, 2)
    opts.anchorTensor("w_all", "UpdatedVar___fc.bias", poptorch.OutputMode.All)
    net = Net()
    opt = poptorch.optim.SGD(net.parameters(), lr=0.5, loss_scaling=ls)
    model = poptorch.trainingModel(net, opts, opt)
    x, y = _data(s * a * b)
    model(x, y)
    # plain torch: per micro-batch gradients (times the loss scale), mean over the
    # accumulation before each SGD step
    ref = Net()
    grads, biases = [], []
    for si in range(s):
        step = []
        for ai in range(a):
            rows = slice((si * a + ai) * b, (si * a + ai + 1) * b)
            ref.zero_grad()
            F.cross_entropy(ref.fc(x[rows]), y[rows]).backward()
            step.append([p.grad.clone() for p in ref.parameters()])
            grads.append(step[-1][1] * ls)
        with torch.no_grad():
            for j, p in enumerate(ref.parameters()):
                p.sub_(0.5 * sum(g[j] for g in step) / a)
        biases.append(ref.fc.bias.detach().clone())
    torch.testing.assert_close(model.getAnchoredTensor("g"), torch.cat(grads), rtol=1e-5,
                               atol=1e-6)
    torch.testing.assert_close(model.getAnchoredTensor("g_last"), grads[-1], rtol=1e-5,
                               atol=1e-6)
    torch.testing.assert_close(model.getAnchoredTensor("g_sum"), sum(grads), rtol=1e-5,
                               atol=1e-6)
    torch.testing.assert_close(model.getAnchoredTensor("w_every2"), biases[1], rtol=1e-5,
                               atol=1e-6)
    torch.testing.assert_close(model.getAnchoredTensor("w_all"), torch.cat(biases),
                               rtol=1e-5, atol=1e-6)


def test_inference_anchor_and_errors():
    opts = poptorch.Options().deviceIterations(2)
    opts.anchorTensor("w", "fc.weight")
    net = Net()
    model = poptorch.inferenceModel(net, opts)
    with pytest.raises(AssertionError, match="Model must be compiled before calling "
                                             "getTensorNames"):
        model.getTensorNames()
    x, y = _data(4)
    model(x, y)
    assert model.getTensorNames() == ["fc.weight", "fc.bias"]  # no gradients in inference
    # OutputMode.All (the inference default): one value per device iteration
    torch.testing.assert_close(model.getAnchoredTensor("w"), torch.cat([net.fc.weight] * 2))
    with pytest.raises(AssertionError, match="No tensor with name nope found."):
        model.getAnchoredTensor("nope")
    bad = poptorch.Options()
    bad.anchorTensor("g", "Gradient___fc.weight")
    with pytest.raises(poptorch.Error, match=r"Anchor tensor `Gradient___fc.weight' not in Ir "
                                             r"Tensors\."):
        poptorch.inferenceModel(Net(), bad)(x, y)


def test_final_loss_scale_follows_automatic_loss_scaling():
    class Half(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(3)
            self.fc = torch.nn.Linear(4, 3)

        def forward(self, x, y):
            out = self.fc(x)
            return out, F.mse_loss(out, y)

    opts = poptorch.Options().deviceIterations(4)
    opts.Training.setAutomaticLossScaling(True)
    opts.anchorTensor("ls", "finalLossScale", poptorch.OutputMode.All)
    net = Half().half()
    opt = poptorch.optim.SGD(net.parameters(), lr=0.0, loss_scaling=2.0)
    model = poptorch.trainingModel(net, opts, opt)
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, 4, generator=g).half(), torch.randn(8, 3, generator=g).half()
    model(x, y)
    # small gradients: the factor doubles every step (1, 2, 4, 8), as PopTorch's
    # options_test.py::test_automatic_loss_scaling reads it: ls_final = initial_ls * factor
    assert model.getAnchoredTensor("ls").tolist() == [2.0, 4.0, 8.0, 16.0]
    assert float(opt.state_dict()["ipu_state"]["lossScaleUpdateFactor"]) == 16.0
