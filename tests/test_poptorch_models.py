"""poptorch.trainingModel / inferenceModel / DataLoader / optim / identity_loss: PopTorch's
batching arithmetic (research/poptorch_semantics.md sections 2, 3, 7) against plain PyTorch
computing the same thing by hand."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(5, 3)

    def forward(self, x, y=None):
        out = self.fc(x)
        if y is None:
            return out
        return out, torch.nn.functional.cross_entropy(out, y)


def _opts(s=1, r=1, a=1):
    o = poptorch.Options().deviceIterations(s).replicationFactor(r)
    o.Training.gradientAccumulation(a)
    return o


@pytest.mark.parametrize("s, r, a", [(1, 1, 1), (2, 1, 1), (1, 2, 2), (3, 2, 2)])
def test_training_call_equals_s_steps_on_mean_gradients(s, r, a):
    b = 4
    x = torch.randn(s * a * r * b, 5)
    y = torch.randint(0, 3, (s * a * r * b,))
    ours, ref = Net(), Net()
    model = poptorch.trainingModel(ours, _opts(s, r, a), poptorch.optim.SGD(ours.parameters(),
                                                                             lr=0.1))
    out, loss = model(x, y)
    opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    xs, ys = x.reshape(s, a, r, b, 5), y.reshape(s, a, r, b)
    last = {}
    for si in range(s):
        opt.zero_grad()
        for ai in range(a):
            for ri in range(r):
                o, lo = ref(xs[si, ai, ri], ys[si, ai, ri])
                (lo / (a * r)).backward()
                last[ri] = (o.detach(), lo.detach())
        opt.step()
    for p, q in zip(ours.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6)
    # Final: the last micro-batch of each replica; a scalar loss stays 0-dim when R == 1
    if r == 1:
        assert loss.dim() == 0 and out.shape == (b, 3)
    else:
        assert loss.shape == (r,) and out.shape == (r * b, 3)
    torch.testing.assert_close(loss.reshape(-1), torch.stack([last[i][1] for i in range(r)]))


@pytest.mark.parametrize("mode, k", [("All", 10), ("Final", 1), ("Sum", 1), ("EveryN", 2)])
def test_inference_output_modes(mode, k):
    net = Net()
    opts = poptorch.Options().deviceIterations(10)
    if mode == "EveryN":
        opts.outputMode(poptorch.OutputMode.EveryN, 5)
    else:
        opts.outputMode(getattr(poptorch.OutputMode, mode))
    x = torch.randn(10 * 2, 5)
    out = poptorch.inferenceModel(net, opts)(x)
    native = net(x).detach().reshape(10, 2, 3)
    want = {"All": native.reshape(20, 3), "Final": native[-1],
            "Sum": native.sum(0), "EveryN": native[[4, 9]].reshape(4, 3)}[mode]
    torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)


def test_batch_checks_and_errors():
    net = Net()
    model = poptorch.inferenceModel(net, poptorch.Options().deviceIterations(3))
    with pytest.raises(AssertionError, match=r"Invalid batch dimension: In the input \[4, 5\], "
                                             r"the batch dimension \(4\) must be a multiple of "
                                             r"Options.deviceIterations\(3\)"):
        model(torch.randn(4, 5))
    model(torch.randn(6, 5))
    with pytest.raises(poptorch.Error, match="Shape mismatch"):
        model(torch.randn(9, 5))
    model.destroy()
    assert model(torch.randn(9, 5)).shape == (9, 3)  # recompiled for the new shape
    training = poptorch.trainingModel(Net())
    with pytest.raises(poptorch.Error, match="Couldn't find a loss in graph!"):
        training(torch.randn(2, 5))
    with pytest.raises(RuntimeError, match="Model has already been wrapped"):
        poptorch.trainingModel(training.model)
    with pytest.raises(ValueError, match="Only non-amsgrad Adam/AdamW optimizers are "
                                         "supported."):
        net = Net()  # PopTorch raises when the optimizer reaches the model
        poptorch.trainingModel(net, optimizer=poptorch.optim.Adam(net.parameters(),
                                                                   amsgrad=True))
    with pytest.raises(AssertionError, match="Unsupported reduction type!"):
        poptorch.identity_loss(torch.ones(2), "max")


def test_identity_loss_marks_the_loss_and_sum_reduction_sums():
    class Custom(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3))

        def forward(self, x):
            out = x * self.w
            return out, poptorch.identity_loss(out ** 2, reduction="sum")

    ours = Custom()
    opts = _opts(r=2)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
    model = poptorch.trainingModel(ours, opts, poptorch.optim.SGD(ours.parameters(), lr=0.1))
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    model(x)
    grad = (2 * x ** 2).sum(0)  # summed over both replicas' micro-batches
    torch.testing.assert_close(ours.w.detach(), torch.ones(3) - 0.1 * grad)


def test_dataloader_combines_the_batches_of_one_call():
    data = torch.utils.data.TensorDataset(torch.arange(100.0)[:, None])
    opts = _opts(s=2, r=2, a=3)
    loader = poptorch.DataLoader(opts, data, batch_size=2)
    assert loader.combinedBatchSize == 24 and len(loader) == 100 // 24
    (first,) = next(iter(loader))
    assert first.shape == (24, 1)


def test_loss_scaling_and_max_grad_norm_clip_the_scaled_gradient_as_popart():
    """PopART clips the gradient entering SGD0's update, the loss-scaled one (its
    ClipWeightGradientsByNorm runs after SGD0Decompose; the 1 / loss_scaling is in the
    update's scalar): a max_grad_norm of 0.1 at loss_scaling 128 bounds 128 * |g|."""
    ours, ref = Net(), copy.deepcopy(Net())
    x, y = torch.randn(8, 5), torch.randint(0, 3, (8,))
    opt = poptorch.optim.SGD(ours.parameters(), lr=0.5, loss_scaling=128.0, max_grad_norm=0.1)
    poptorch.trainingModel(ours, optimizer=opt)(x, y)
    _, loss = ref(x, y)
    (loss * 128.0).backward()
    params = list(ref.parameters())
    assert torch.sqrt(sum((p.grad * p.grad).sum() for p in params)) > 0.1  # it clips
    torch.nn.utils.clip_grad_norm_(params, 0.1)
    with torch.no_grad():
        for p in params:
            p.sub_(p.grad, alpha=0.5 / 128.0)
    for p, q in zip(ours.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_import_poptorch_runs_a_training_program(tmp_path):
    """A PopTorch program in the tutorials' style runs through ipu-gpu run."""
    import subprocess
    import sys

    prog = tmp_path / "train.py"
    prog.write_text(
        "import torch\nimport poptorch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(4, 2)\n        self.loss = torch.nn.MSELoss()\n"
        "    def forward(self, x, y):\n        out = self.fc(x)\n"
        "        return out, self.loss(out, y)\n"
        "torch.manual_seed(0)\n"
        "opts = poptorch.Options().deviceIterations(2)\n"
        "data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 2))\n"
        "loader = poptorch.DataLoader(opts, data, batch_size=4, shuffle=False)\n"
        "model = M()\n"
        "training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(),"
        " lr=0.05))\n"
        "losses = [float(training(x, y)[1]) for x, y in loader]\n"
        "print(len(losses), losses[-1] < losses[0])\n")
    root = str(__import__("pathlib").Path(__file__).resolve().parents[1])
    env = {**__import__("os").environ, "PYTHONPATH": root}
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", str(prog)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["8", "True"]


def test_numpy_free_result_types():
    out = poptorch.inferenceModel(Net())(torch.randn(2, 5))
    assert isinstance(out, torch.Tensor) and not out.requires_grad
    assert np.isfinite(out.numpy()).all()


def _tf_rmsprop_numpy(w, grads, lr, rho, eps, momentum, centered, weight_decay):
    w = w.astype(np.float64)
    ms, mom, mg = np.ones_like(w), np.zeros_like(w), np.zeros_like(w)
    for g in grads:
        g = g + weight_decay * w
        ms = rho * ms + (1 - rho) * g * g
        denom = ms
        if centered:
            mg = rho * mg + (1 - rho) * g
            denom = ms - mg * mg
        mom = momentum * mom + lr * g / np.sqrt(denom + eps)
        w = w - mom
    return w


@pytest.mark.parametrize("momentum, centered, weight_decay",
                         [(0.0, False, 0.0), (0.9, False, 0.0), (0.5, True, 0.1)])
def test_rmsprop_tf_variant_matches_tensorflow_arithmetic(momentum, centered, weight_decay):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(5)]
    param = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = poptorch.optim.RMSprop([param], lr=0.02, alpha=0.9, eps=1e-6, momentum=momentum,
                                 centered=centered, weight_decay=weight_decay,
                                 use_tf_variant=True)
    for g in grads:
        param.grad = torch.from_numpy(g.copy())
        opt.step()
    ref = _tf_rmsprop_numpy(w0, grads, 0.02, 0.9, 1e-6, momentum, centered, weight_decay)
    np.testing.assert_allclose(param.detach().numpy(), ref, rtol=1e-12, atol=1e-12)
    plain = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    torch_opt = poptorch.optim.RMSprop([plain], lr=0.02, alpha=0.9, eps=1e-6,
                                       momentum=momentum, centered=centered)
    for g in grads:
        plain.grad = torch.from_numpy(g.copy())
        torch_opt.step()
    assert not np.allclose(plain.detach().numpy(), param.detach().numpy())


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_tf_variant_against_tensorflow_kernels(real_tf, centered):
    tf = real_tf
    rng = np.random.default_rng(4)
    w0 = rng.standard_normal(6).astype(np.float32)
    grads = [rng.standard_normal(6).astype(np.float32) for _ in range(4)]
    var, ms = tf.Variable(w0), tf.Variable(np.ones(6, np.float32))
    mom, mg = tf.Variable(np.zeros(6, np.float32)), tf.Variable(np.zeros(6, np.float32))
    for g in grads:
        args = dict(var=var.handle, ms=ms.handle, mom=mom.handle, lr=0.05, rho=0.9,
                    momentum=0.8, epsilon=1e-7, grad=g)
        if centered:
            tf.raw_ops.ResourceApplyCenteredRMSProp(mg=mg.handle, **args)
        else:
            tf.raw_ops.ResourceApplyRMSProp(**args)
    param = torch.nn.Parameter(torch.from_numpy(w0.copy()))
    opt = poptorch.optim.RMSprop([param], lr=0.05, alpha=0.9, eps=1e-7, momentum=0.8,
                                 centered=centered, use_tf_variant=True)
    for g in grads:
        param.grad = torch.from_numpy(g.copy())
        opt.step()
    np.testing.assert_allclose(param.detach().numpy(), var.numpy(), rtol=1e-6, atol=1e-6)


def test_rmsprop_tf_variant_trains_through_training_model():
    model, ref = Net(), Net()
    x, y = torch.randn(4, 5), torch.randint(0, 3, (4,))
    training = poptorch.trainingModel(
        model, _opts(), poptorch.optim.RMSprop(model.parameters(), lr=0.01, momentum=0.5,
                                               use_tf_variant=True))
    ref_opt = poptorch.optim.RMSprop(ref.parameters(), lr=0.01, momentum=0.5,
                                     use_tf_variant=True)
    for _ in range(3):
        training(x, y)
        ref_opt.zero_grad()
        ref(x, y)[1].backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7)
