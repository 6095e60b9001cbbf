"""PopTorch programs in the style of Graphcore's tutorials (tests/programs/poptorch_*.py), run
through ``ipu-gpu run`` exactly as users run them (``import poptorch``, ``import torch``),
each checked against plain PyTorch doing the same arithmetic by hand in this process:

* poptorch_mnist_training.py: an MNIST-style CNN, 50 device iterations, OutputMode.All, then
  an inference model (simple_applications/pytorch/mnist);
* poptorch_replicated_async_loading.py: two replicas fed by an Async DataLoader
  (tutorials/pytorch/efficient_data_loading);
* poptorch_mixed_precision.py: ``model.half()``, float16 inputs, ``poptorch.optim.SGD`` with
  ``loss_scaling`` (tutorials/pytorch/mixed_precision).
* poptorch_pipelined_training.py: a CNN in four ``poptorch.Block``s, one ``Stage`` per IPU
  under ``PipelinedExecution``, gradient accumulation 8, then a pipelined inference model
  (tutorials/pytorch/pipelining).

The MNIST-style and pipelined programs must reach the test accuracy plain PyTorch reaches
on the same data (within one prediction) with the same weights.

The datasets are synthetic and written by the test (no download). Programs and references
run with one torch thread: the results then do not depend on how a reduction is split
between threads, and a loaded 2-core machine does not make them crawl.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = Path(__file__).resolve().parent / "programs"


def run_program(name, tmp_path):
    """Run tests/programs/``name`` with ``ipu-gpu run`` in ``tmp_path``; its stdout."""
    prog = tmp_path / name
    shutil.copy(PROGRAMS / name, prog)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", str(prog)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


@contextlib.contextmanager
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def images_like_digits(n, classes, size, seed, generator_seed=0):
    """``n`` noisy, randomly shifted copies of ``classes`` fixed blob patterns (size x size,
    normalised like MNIST) and their labels: a task a small CNN learns in one epoch."""
    protos_gen = torch.Generator().manual_seed(generator_seed)
    blobs = (torch.rand(classes, 1, size, size, generator=protos_gen) < 0.06).float()
    protos = nn.functional.conv2d(blobs, torch.ones(1, 1, 5, 5) / 5, padding=2).clamp(max=1)
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (n,), generator=g)
    shifts = torch.randint(-2, 3, (n, 2), generator=g).tolist()
    images = torch.stack([torch.roll(protos[c], tuple(s), dims=(1, 2))
                          for c, s in zip(labels.tolist(), shifts)])
    images = (images + 0.6 * torch.randn(images.shape, generator=g)).clamp(0, 1)
    return (images - 0.1307) / 0.3081, labels


# ---- (a) MNIST-style training, 50 device iterations, OutputMode.All --------------------------
class _Block(nn.Module):
    def __init__(self, cin, cout, k, pool):
        super().__init__()
        self.conv, self.pool, self.relu = nn.Conv2d(cin, cout, k), nn.MaxPool2d(pool), nn.ReLU()

    def forward(self, x):
        return self.relu(self.pool(self.conv(x)))


class _MnistNetwork(nn.Module):
    """The program's Network, with the same parameter creation order."""

    def __init__(self):
        super().__init__()
        self.layer1 = _Block(1, 8, 3, 2)
        self.layer2 = _Block(8, 16, 3, 2)
        self.layer3 = nn.Linear(400, 64)
        self.layer3_act = nn.ReLU()
        self.layer4 = nn.Linear(64, 10)

    def forward(self, x):
        return self.layer4(self.layer3_act(self.layer3(self.layer2(self.layer1(x)).flatten(1))))


def sgd_step(params, lr, loss_scaling=1.0):
    """PopART's SGD update without momentum (research section 6.2): the gradients are
    divided by the loss scaling, then ``w -= lr * g``. (``torch.optim.SGD`` computes
    ``w + (-lr) * g`` in one fused step, which rounds differently in the last bit; over
    hundreds of steps, through max-pool ties, that alone moves a few test predictions.)"""
    with torch.no_grad():
        for p in params:
            g = p.grad if loss_scaling == 1.0 else p.grad / loss_scaling
            p.sub_(lr * g)
            p.grad = None


def _mnist_reference(data, lr=0.05, batch=8, iterations=50, epochs=1):
    """Plain PyTorch: the same initialisation and shuffled order, one SGD step per
    micro-batch of 8 (what 50 device iterations do), then the test accuracy."""
    torch.manual_seed(0)
    model = _MnistNetwork()
    train = torch.utils.data.TensorDataset(data["train_images"], data["train_labels"])
    loader = torch.utils.data.DataLoader(train, batch_size=batch * iterations, shuffle=True,
                                         drop_last=True)
    for _ in range(epochs):
        for images, labels in loader:
            for i in range(iterations):
                rows = slice(i * batch, (i + 1) * batch)
                nn.functional.cross_entropy(model(images[rows]), labels[rows]).backward()
                sgd_step(model.parameters(), lr)
    return model, *_count_correct(model, data["test_images"], data["test_labels"], 80)


def _count_correct(model, images, labels, batch):
    """(correct, total) over the whole batches of ``batch`` (what a drop_last loader gives)."""
    correct = total = 0
    with torch.no_grad():
        for i in range(0, len(labels) - batch + 1, batch):
            out = model(images[i:i + batch]).float()
            correct += int((out.argmax(1) == labels[i:i + batch]).sum())
            total += batch
    return correct, total


@pytest.mark.slow
def test_mnist_program_reaches_the_accuracy_of_plain_torch(tmp_path):
    train_x, train_y = images_like_digits(2000, 10, 28, seed=1)
    test_x, test_y = images_like_digits(400, 10, 28, seed=2)
    data = {"train_images": train_x, "train_labels": train_y,
            "test_images": test_x, "test_labels": test_y}
    torch.save(data, tmp_path / "mnist_like.pt")
    out = run_program("poptorch_mnist_training.py", tmp_path)
    assert "steps per epoch: 5, combined batch: 400" in out
    correct, total = map(int, re.search(r"test accuracy: (\d+)/(\d+)", out).groups())
    with one_thread():
        ref, ref_correct, ref_total = _mnist_reference(data)
    assert total == ref_total == 400
    # Same initialisation, order and operations: equal up to float rounding, which could flip
    # at most a prediction sitting on a decision boundary (1 of 400).
    assert abs(correct - ref_correct) <= 1, (correct, ref_correct)
    assert ref_correct / ref_total > 0.8  # it did learn: chance is 0.1
    trained = torch.load(tmp_path / "trained.pt")
    for name, want in ref.state_dict().items():
        torch.testing.assert_close(trained[name], want, rtol=1e-4, atol=1e-5)


# ---- (b) two replicas fed by an Async DataLoader ---------------------------------------------
class _ClassificationModel(nn.Module):
    """The program's model, with the same parameter creation order."""

    def __init__(self):
        super().__init__()
        self.conv1, self.pool = nn.Conv2d(1, 4, 3), nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.norm, self.fc1 = nn.GroupNorm(2, 8), nn.Linear(200, 32)
        self.relu, self.fc2 = nn.ReLU(), nn.Linear(32, 10)

    def forward(self, x, labels):
        x = self.norm(self.relu(self.conv2(self.pool(self.relu(self.conv1(x))))))
        x = nn.functional.log_softmax(self.fc2(self.relu(self.fc1(x.flatten(1)))), dim=1)
        return nn.functional.nll_loss(x, labels)


def _replicated_reference(dataset, s=10, r=2, b=4, epochs=2):
    """Plain PyTorch: each combined batch is viewed as [S, R, B]; per device iteration the
    two replicas' gradients are averaged (ReductionType.Mean) before one SGD-momentum step.
    The loader is torch's, with the program's sampler generator and workers (the workers'
    base seed is drawn from that generator too, once: they persist)."""
    torch.manual_seed(0)
    model = _ClassificationModel()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = torch.utils.data.DataLoader(dataset, batch_size=s * r * b, shuffle=True,
                                         drop_last=True, num_workers=2,
                                         persistent_workers=True,
                                         generator=torch.Generator().manual_seed(1))
    for _ in range(epochs):
        for x, y in loader:
            x, y = x.view(s, r, b, *x.shape[1:]), y.view(s, r, b)
            for si in range(s):
                opt.zero_grad()
                for ri in range(r):
                    (model(x[si, ri], y[si, ri]) / r).backward()
                opt.step()
    return model


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_replicated_async_loading_program_trains_as_the_mean_over_replicas(tmp_path):
    g = torch.Generator().manual_seed(3)
    features = torch.randn(800, 1, 16, 16, generator=g)
    labels = torch.randint(0, 10, (800,), generator=g)
    torch.save({"features": features, "labels": labels}, tmp_path / "features.pt")
    out = run_program("poptorch_replicated_async_loading.py", tmp_path)
    assert "10 steps of 80 items, DataLoader throughput" in out
    assert out.count("losses of the replicas [2]") == 2  # Final: one loss per replica
    with one_thread():
        ref = _replicated_reference(torch.utils.data.TensorDataset(features, labels))
    trained = torch.load(tmp_path / "trained.pt")
    for name, want in ref.state_dict().items():
        # 200 momentum steps; the replica mean may be summed in another order (float32)
        torch.testing.assert_close(trained[name], want, rtol=1e-4, atol=1e-6)


# ---- (c) half precision with loss scaling ----------------------------------------------------
class _CustomModel(nn.Module):
    """The program's model, with the same parameter creation order."""

    def __init__(self):
        super().__init__()
        self.conv1, self.pool = nn.Conv2d(1, 6, 3), nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 12, 3)
        self.norm, self.fc1 = nn.GroupNorm(3, 12), nn.Linear(300, 32)
        self.relu, self.fc2 = nn.ReLU(), nn.Linear(32, 10)

    def forward(self, x):
        x = self.norm(self.relu(self.conv2(self.pool(self.relu(self.conv1(x))))))
        return nn.functional.log_softmax(self.fc2(self.relu(self.fc1(x.flatten(1)))), dim=1)


def _half_reference(data, lr=0.05, loss_scaling=1024.0, s=4, b=12):
    """Plain PyTorch in float16: the loss multiplied by the loss scaling before backward, the
    gradients divided by it before PopART's SGD update, one step per micro-batch."""
    torch.manual_seed(0)
    model = _CustomModel().half()
    train = torch.utils.data.TensorDataset(data["train_images"].half(), data["train_labels"])
    loader = torch.utils.data.DataLoader(train, batch_size=s * b, shuffle=True, drop_last=True)
    for x, y in loader:
        for i in range(s):
            rows = slice(i * b, (i + 1) * b)
            (nn.functional.nll_loss(model(x[rows]), y[rows]) * loss_scaling).backward()
            sgd_step(model.parameters(), lr, loss_scaling)
    model.eval()
    return model, *_count_correct(model, data["test_images"].half(), data["test_labels"], 100)


@pytest.mark.slow
def test_mixed_precision_program_trains_in_half_with_loss_scaling(tmp_path):
    train_x, train_y = images_like_digits(960, 10, 16, seed=4, generator_seed=5)
    test_x, test_y = images_like_digits(400, 10, 16, seed=6, generator_seed=5)
    data = {"train_images": train_x, "train_labels": train_y,
            "test_images": test_x, "test_labels": test_y}
    torch.save(data, tmp_path / "fashion_like.pt")
    out = run_program("poptorch_mixed_precision.py", tmp_path)
    assert "(torch.float16, 20 calls)" in out
    correct, total = map(int, re.search(r"eval accuracy: (\d+)/(\d+)", out).groups())
    with one_thread():
        ref, ref_correct, ref_total = _half_reference(data)
    assert total == ref_total == 400
    assert abs(correct - ref_correct) <= 1, (correct, ref_correct)  # as in the MNIST test
    assert ref_correct / ref_total > 0.5  # it learns in float16: chance is 0.1
    trained = torch.load(tmp_path / "trained.pt")
    for name, want in ref.state_dict().items():
        assert trained[name].dtype == torch.float16
        # float16: a rounding difference is one ulp (2**-10 relative)
        torch.testing.assert_close(trained[name], want, rtol=2e-3, atol=1e-4)


# ---- (d) a CNN pipelined over 4 IPUs -------------------------------------------------------
class _PipelinedNet(nn.Module):
    """The program's model without its Blocks (the same parameter creation order)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc1 = nn.Linear(256, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc2(torch.relu(self.fc1(x.flatten(1))))


def _pipelined_reference(data, b=4, a=8, s=5, epochs=2, lr=0.03):
    """Plain PyTorch: per optimizer step the gradients of ``a`` micro-batches of ``b`` rows
    accumulated, each micro-batch's loss divided by ``a`` (ReductionType.Mean; the same as one
    batch of ``a * b`` rows up to rounding), torch's SGD with momentum; then the test
    accuracy."""
    torch.manual_seed(0)
    model = _PipelinedNet()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    train = torch.utils.data.TensorDataset(data["train_images"], data["train_labels"])
    loader = torch.utils.data.DataLoader(train, batch_size=b * a * s, shuffle=True,
                                         drop_last=True)
    for _ in range(epochs):
        for images, labels in loader:
            for step in torch.arange(len(labels)).view(s, a, b):
                opt.zero_grad()
                for rows in step:
                    (nn.functional.cross_entropy(model(images[rows]), labels[rows]) / a
                     ).backward()
                opt.step()
    return model, *_count_correct(model, data["test_images"], data["test_labels"], 80)


@pytest.mark.slow
def test_pipelined_program_reaches_the_accuracy_of_plain_torch(tmp_path):
    train_x, train_y = images_like_digits(1600, 10, 16, seed=7, generator_seed=8)
    test_x, test_y = images_like_digits(400, 10, 16, seed=9, generator_seed=8)
    data = {"train_images": train_x, "train_labels": train_y,
            "test_images": test_x, "test_labels": test_y}
    torch.save(data, tmp_path / "digits_like.pt")
    out = run_program("poptorch_pipelined_training.py", tmp_path)
    assert "10 calls per epoch, combined batch 160" in out
    correct, total = map(int, re.search(r"test accuracy: (\d+)/(\d+)", out).groups())
    with one_thread():
        ref, ref_correct, ref_total = _pipelined_reference(data)
    assert total == ref_total == 400
    assert abs(correct - ref_correct) <= 1, (correct, ref_correct)  # as in the MNIST test
    assert ref_correct / ref_total > 0.7, ref_correct  # it did learn: chance is 0.1
    trained = torch.load(tmp_path / "trained.pt")
    for name, want in ref.state_dict().items():
        # 100 momentum steps; the accumulation may be summed in another order (float32)
        torch.testing.assert_close(trained[name], want, rtol=1e-4, atol=1e-5)
