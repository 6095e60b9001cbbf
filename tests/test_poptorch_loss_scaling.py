"""PopTorch loss scaling typed as PopART types it, and automatic loss scaling's gradient
tracking methods (issue 18).

PopART's loss-scale tensor takes the final loss's dtype and ALS's update factor the loss
scale's: a float16 loss makes both float16 (the factor overflows to inf past 32768, the
scale ``loss_scaling * factor`` past 65504). ``gradientTensorTrackingMethod`` picks the
gradients whose histogram drives the factor. The references are plain float16 PyTorch
loops doing PopART's arithmetic by hand (numpy float16 for the scale and the factor)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

import ipu_gpu.poptorch as poptorch  # noqa: E402

EDGE = 0.125 * 65504  # PopART's default bin edge for float16 gradients
TRACKING = "automaticLossScalingSettings.gradientTensorTrackingMethod"


class Lin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, y):
        out = self.fc(x)
        return out, F.mse_loss(out, y)


class Shrink(torch.nn.Module):
    def forward(self, x):
        return x * 0.0625


class Shrunk(torch.nn.Module):
    """fc's output shrunk by 1/16 in a module of its own: the gradient of Shrink's output
    (tracked by AllNonViewChangingGradientTensors, the module outputs) is 16x those of
    fc's weight (tracked by ConvAndMatmulGradients), so the two methods part ways."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(4)
        self.fc = torch.nn.Linear(4, 3)
        self.shrink = Shrink()

    def forward(self, x, y):
        z = self.shrink(self.fc(x))
        return z, F.mse_loss(z, y)


class TwoLayer(torch.nn.Module):
    """fc2 reads fc1's output, which a residual also reads: ConvAndMatmulGradients tracks
    fc2's own contribution to that gradient (its matmul's output), not the sum."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.fc1, self.fc2 = torch.nn.Linear(4, 3), torch.nn.Linear(3, 3)

    def forward(self, x, y):
        h = self.fc1(x)
        out = self.fc2(h) + 64 * h
        return out, F.mse_loss(out, y)


def _data(rows, seed, x_scale=1.0, y_scale=4.0):
    g = torch.Generator().manual_seed(seed)
    x = (x_scale * torch.randn(rows, 4, generator=g)).half()
    y = (y_scale * torch.randn(rows, 3, generator=g)).half()
    return x, y


def _trained(net, steps, loss_scaling, method=None, anchors=()):
    opts = poptorch.Options().deviceIterations(steps)
    opts.Training.setAutomaticLossScaling(True)
    if method is not None:
        opts._Popart.set(TRACKING, method)
    for name, tensor in anchors:
        opts.anchorTensor(name, tensor, poptorch.OutputMode.All)
    opt = poptorch.optim.SGD(net.parameters(), lr=0.0, loss_scaling=loss_scaling)
    return opt, poptorch.trainingModel(net, opts, opt)


def _factor(opt):
    return opt.state_dict()["ipu_state"]["lossScaleUpdateFactor"]


def _reference_factors(net, x, y, steps, loss_scaling, tracked):
    """PopART's factor trajectory with lr 0: per step the float16 scale ls16 * factor16
    seeds the backward; ``tracked(net, x, y, seed)`` returns the tracked gradients; the
    float16 factor halves if upper > t/(1-t) * lower, else doubles."""
    f = np.float32(1e-7) / (np.float32(1) - np.float32(1e-7))
    factor, factors = np.float16(1.0), []
    b = x.shape[0] // steps
    for step in range(steps):
        factors.append(float(factor))
        seed = float(np.float16(loss_scaling) * factor)
        rows = slice(step * b, (step + 1) * b)
        upper = lower = 0
        for g in tracked(net, x[rows], y[rows], seed):
            big = int((g.abs().float() >= EDGE).sum())
            upper, lower = upper + big, lower + g.numel() - big
        with np.errstate(over="ignore"):
            down = np.float32(upper) > np.float32(lower) * f
            factor = factor * np.float16(0.5 if down else 2.0)
    return factors, float(factor)


def _outputs_and_params(net, x, y, seed):
    """AllNonViewChangingGradientTensors as the emulator tracks it: the parameters'
    gradients and the modules' outputs' gradients."""
    outs = []
    handle = torch.nn.modules.module.register_module_forward_hook(
        lambda m, i, o: outs.append(o) if m is not net else None)
    try:
        _, loss = net(x, y)
    finally:
        handle.remove()
    return torch.autograd.grad(loss * seed, [*outs, *net.parameters()])


def _matmuls_shrunk(net, x, y, seed):
    z, loss = net(x, y)
    return torch.autograd.grad(loss * seed, [net.fc.weight])


def _matmuls_two_layer(net, x, y, seed):
    h = net.fc1(x)
    h2 = h.detach().requires_grad_()  # fc2's own input: its matmul's gradient alone
    out = net.fc2(h2) + 64 * h
    loss = F.mse_loss(out, y) * seed
    g_w1, g_w2, g_h2 = torch.autograd.grad(loss, [net.fc1.weight, net.fc2.weight, h2])
    return g_w1, g_w2, g_h2


# ---- the loss scale's dtype -----------------------------------------------------------------
def test_float16_loss_types_the_loss_scale_and_factor_as_float16():
    x, y = _data(4 * 4, seed=0)
    opt, model = _trained(Lin().half(), 4, 3.3, anchors=[("ls", "finalLossScale")])
    model(x, y)
    ls = model.getAnchoredTensor("ls")
    factor = _factor(opt)
    assert ls.dtype == torch.float16 and factor.dtype == torch.float16
    # loss_scaling 3.3 is float16's 3.30078125; the scale is the float16 product
    want = [float(np.float16(3.3) * np.float16(2.0 ** k)) for k in range(4)]
    assert ls.tolist() == want and want[0] == 3.30078125
    assert float(factor) == 16.0


def test_float32_loss_keeps_the_loss_scale_float32():
    class Lin32(Lin):
        def forward(self, x, y):  # a float16 model whose loss is computed in float32
            out = self.fc(x)
            return out, F.mse_loss(out.float(), y.float())

    x, y = _data(2 * 4, seed=1)
    opt, model = _trained(Lin32().half(), 2, 3.3, anchors=[("ls", "finalLossScale")])
    model(x, y)
    ls = model.getAnchoredTensor("ls")
    assert ls.dtype == torch.float32 and _factor(opt).dtype == torch.float32
    assert ls.tolist() == [float(np.float32(3.3)), float(np.float32(3.3) * 2)]


def test_ensure_fp32_loss_scale_tensor_keeps_the_factor_float32():
    x, y = _data(2 * 4, seed=1)
    net = Lin().half()
    opts = poptorch.Options().deviceIterations(2)
    opts.Training.setAutomaticLossScaling(True)
    opts._Popart.set("ensureFp32LossScaleTensor", True)
    opts.anchorTensor("ls", "finalLossScale", poptorch.OutputMode.All)
    opt = poptorch.optim.SGD(net.parameters(), lr=0.0, loss_scaling=3.3)
    model = poptorch.trainingModel(net, opts, opt)
    model(x, y)
    assert model.getAnchoredTensor("ls").dtype == torch.float32
    assert _factor(opt).dtype == torch.float32


def test_float16_factor_overflows_to_inf_and_stays_there():
    """Tiny gradients: the factor doubles every step; as a float16 it reaches 32768 after
    15 steps and inf on the 16th, and halving inf is inf (a float would go on to 65536,
    then 131072 and come back down once the gradients overflow)."""
    x, y = _data(18 * 2, seed=2, x_scale=1e-3, y_scale=0.0)
    net = Lin().half()
    with torch.no_grad():
        net.fc.weight.mul_(1e-3)
        net.fc.bias.mul_(1e-3)
    opt, model = _trained(net, 18, 1.0, anchors=[("ls", "finalLossScale")])
    model(x, y)
    ls = model.getAnchoredTensor("ls").tolist()
    assert ls[:16] == [2.0 ** k for k in range(16)]
    assert ls[16] == ls[17] == float("inf")
    assert float(_factor(opt)) == float("inf")


def test_float16_scale_overflows_before_the_factor():
    """loss_scaling 4096 x factor 16 = 65536 is inf in float16 (the factor is not): that
    step's gradients overflow, the upper bin counts them and the factor halves back."""
    x, y = _data(8 * 2, seed=3, x_scale=1e-3, y_scale=0.0)
    net = Lin().half()
    with torch.no_grad():
        net.fc.weight.mul_(1e-3)
        net.fc.bias.mul_(1e-3)
    opt, model = _trained(net, 5, 4096.0, anchors=[("ls", "finalLossScale")])
    model(x[:10], y[:10])
    # the factor itself stays finite: 16 on the overflowing step, then 8
    assert model.getAnchoredTensor("ls").tolist() == [4096.0, 8192.0, 16384.0, 32768.0,
                                                      float("inf")]
    assert float(_factor(opt)) == 8.0


# ---- gradientTensorTrackingMethod --------------------------------------------------------------
def test_tracking_methods_change_the_factor_trajectory():
    x, y = _data(8 * 4, seed=6)
    ref_all, final_all = _reference_factors(Shrunk().half(), x, y, 8, 256.0,
                                            _outputs_and_params)
    ref_mm, final_mm = _reference_factors(Shrunk().half(), x, y, 8, 256.0, _matmuls_shrunk)
    assert ref_all != ref_mm  # the model tells the methods apart
    for method, final in ((None, final_all), (0, final_all), (1, final_mm)):
        opt, model = _trained(Shrunk().half(), 8, 256.0, method=method,
                              anchors=[("ls", "finalLossScale")])
        model(x, y)
        want = ref_all if method != 1 else ref_mm
        assert model.getAnchoredTensor("ls").tolist() == [256.0 * f for f in want]
        assert float(_factor(opt)) == final


def _summed_two_layer(net, x, y, seed):
    h = net.fc1(x)
    out = net.fc2(h) + 64 * h
    loss = F.mse_loss(out, y) * seed
    return torch.autograd.grad(loss, [net.fc1.weight, net.fc2.weight, h])


def test_conv_and_matmul_tracks_each_matmuls_own_input_gradient():
    # tiny inputs: fc1's weight gradient stays small, h's total gradient (64x through the
    # residual) is large, fc2's own contribution to it is not. Five steps: on the fifth,
    # fc1's bias gradient (a reduction, untracked) overflows float16
    x, y = _data(5 * 4, seed=7, x_scale=1e-3)
    ref, final = _reference_factors(TwoLayer().half(), x, y, 5, 4.0, _matmuls_two_layer)
    summed, _ = _reference_factors(TwoLayer().half(), x, y, 5, 4.0, _summed_two_layer)
    assert len(set(ref)) > 2 and ref != summed
    opt, model = _trained(TwoLayer().half(), 5, 4.0, method=1,
                          anchors=[("ls", "finalLossScale")])
    model(x, y)
    assert model.getAnchoredTensor("ls").tolist() == [4.0 * f for f in ref]
    assert float(_factor(opt)) == final


def test_conv_and_matmul_tracks_convolutions():
    class Conv(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(8)
            self.conv = torch.nn.Conv2d(1, 2, 3)

        def forward(self, x, y):
            out = self.conv(x).mean((2, 3))
            return out, F.mse_loss(out, y)

    g = torch.Generator().manual_seed(9)
    x = torch.randn(8 * 2, 1, 5, 5, generator=g).half()
    y = (8 * torch.randn(8 * 2, 2, generator=g)).half()

    def tracked(net, xb, yb, seed):
        _, loss = net(xb, yb)
        return torch.autograd.grad(loss * seed, [net.conv.weight])

    ref, final = _reference_factors(Conv().half(), x, y, 8, 1024.0, tracked)
    assert len(set(ref)) > 2
    opt, model = _trained(Conv().half(), 8, 1024.0, method=1,
                          anchors=[("ls", "finalLossScale")])
    model(x, y)
    assert model.getAnchoredTensor("ls").tolist() == [1024.0 * f for f in ref]


def test_conv_and_matmul_needs_a_float16_matmul():
    class NoMatmul(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3, dtype=torch.float16))

        def forward(self, x, y):
            out = x[:, :3] * self.w
            return out, F.mse_loss(out, y)

    x, y = _data(4, seed=10)
    _, model = _trained(NoMatmul(), 1, 1.0, method=1)
    with pytest.raises(poptorch.Error, match=r"^\[AutomaticLossScale transform\] No tracked "
                                             r"gradient tensors of type fp16 were found\.$"):
        model(x, y)


def test_user_specified_tensors_and_out_of_range_methods_fail_to_compile():
    x, y = _data(4, seed=11)
    _, model = _trained(Lin().half(), 1, 1.0, method=2)
    with pytest.raises(poptorch.Error, match=r"gradientTensorTrackingMethod set to "
                                             r"'GradientTensorTrackingMethod::"
                                             r"GradientsOfUserSpecifiedTensors' but "
                                             r"'toTrackTensors' has not been set"):
        model(x, y)
    assert not model.isCompiled()
    _, model = _trained(Lin().half(), 1, 1.0, method=3)
    with pytest.raises(poptorch.Error, match="Value for GradientTensorTrackingMethod out of "
                                             "range"):
        model(x, y)
