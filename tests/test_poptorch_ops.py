"""poptorch's tensor ops and compiler hints: values against numpy, gradients against finite
differences, PopTorch's errors, and a program using them through ipu-gpu run."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402

MODE = poptorch.MatMulSerializationMode


def _rand(*shape, dtype=torch.float64, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).to(dtype)


def test_identities_return_the_values_and_pass_gradients():
    x = _rand(3, 4).requires_grad_()
    for op in (poptorch.nop, lambda t: poptorch.set_available_memory(t, 0.2),
               poptorch.recomputationCheckpoint):
        out = op(x)
        np.testing.assert_array_equal(out.detach().numpy(), x.detach().numpy())
        assert torch.autograd.gradcheck(op, (x,))


def test_recomputation_checkpoint_shapes_its_result():
    a, b = torch.ones(2), torch.zeros(3)
    assert isinstance(poptorch.recomputationCheckpoint(a), torch.Tensor)
    assert isinstance(poptorch.recomputationCheckpoint(a, b), tuple)
    as_list = poptorch.recomputationCheckpoint([a, b])
    assert isinstance(as_list, list) and len(as_list) == 2
    assert isinstance(poptorch.recomputationCheckpoint((a,)), tuple)
    with pytest.raises(ValueError, match="All inputs must be tensors"):
        poptorch.recomputationCheckpoint(a, 1.0)


@pytest.mark.parametrize("dim, start, size, step", [(0, 2, 3, 1), (1, 0, 4, 2), (-1, 1, 2, 1),
                                                    (1, 3, 1, 1)])
def test_dynamic_slice_matches_numpy_and_finite_differences(dim, start, size, step):
    x = _rand(6, 4)
    out = poptorch.dynamic_slice(x, dim, torch.tensor([start]), size, step)
    index = [slice(None)] * 2
    index[dim] = slice(start, start + size, step)
    np.testing.assert_array_equal(out.numpy(), x.numpy()[tuple(index)])
    assert torch.autograd.gradcheck(
        lambda t: poptorch.dynamic_slice(t, dim, torch.tensor(start), size, step),
        (x.clone().requires_grad_(),))


def test_dynamic_update_matches_numpy_and_finite_differences():
    x, src = _rand(4, 6), _rand(4, 3, seed=1)
    out = poptorch.dynamic_update(x, src, 1, torch.tensor(2, dtype=torch.int32), 3)
    ref = x.numpy().copy()
    ref[:, 2:5] = src.numpy()
    np.testing.assert_array_equal(out.numpy(), ref)
    assert torch.autograd.gradcheck(
        lambda a, b: poptorch.dynamic_update(a, b, 1, torch.tensor(2), 3),
        (x.clone().requires_grad_(), src.clone().requires_grad_()))


def test_dynamic_slice_and_update_errors():
    x = torch.zeros(4, 8)
    with pytest.raises(poptorch.Error, match="dynamic_slice must take a torch.tensor input"):
        poptorch.dynamic_slice(np.zeros(3), 0, torch.tensor(0), 1, 1)
    with pytest.raises(poptorch.Error, match="Dimension must be an integer"):
        poptorch.dynamic_slice(x, 0.0, torch.tensor(0), 1, 1)
    with pytest.raises(poptorch.Error, match="Slice start argument to dynamic_slice"):
        poptorch.dynamic_slice(x, 0, 0, 1, 1)
    with pytest.raises(poptorch.Error, match="Size must be an integer"):
        poptorch.dynamic_slice(x, 0, torch.tensor(0), 1.0, 1)
    with pytest.raises(poptorch.Error, match="Step must be an integer"):
        poptorch.dynamic_slice(x, 0, torch.tensor(0), 1, None)
    with pytest.raises(poptorch.Error, match="start and end of a slice must be different"):
        poptorch.dynamic_slice(x, 1, torch.tensor(0), 0, 1)
    with pytest.raises(poptorch.Error, match="end less than the start"):
        poptorch.dynamic_slice(x, 1, torch.tensor(0), -2, 1)
    with pytest.raises(poptorch.Error, match=r"size of the slice \(3\) must be a factor of the "
                                             r"slicing dimension \(8\)"):
        poptorch.dynamic_slice(x, 1, torch.tensor(0), 3, 1)
    with pytest.raises(poptorch.Error, match="must be one integer"):
        poptorch.dynamic_slice(x, 1, torch.tensor(0.5), 2, 1)
    with pytest.raises(poptorch.Error, match="same dimensionality"):
        poptorch.dynamic_update(x, torch.zeros(2), 1, torch.tensor(0), 2)
    with pytest.raises(poptorch.Error, match="same dtype"):
        poptorch.dynamic_update(x, torch.zeros(4, 2, dtype=torch.float64), 1, torch.tensor(0),
                                2)
    with pytest.raises(poptorch.Error, match="Src argument to dynamic_update"):
        poptorch.dynamic_update(x, [0.0], 1, torch.tensor(0), 2)


@pytest.mark.parametrize("mode", list(MODE))
@pytest.mark.parametrize("factor", [0, 1, 2, 4])
def test_serialized_matmul_matches_the_product(mode, factor):
    lhs, rhs = _rand(2, 8, 12), _rand(12, 16, seed=1)
    out = poptorch.serializedMatMul(lhs, rhs, mode, factor)
    np.testing.assert_allclose(out.numpy(), lhs.numpy() @ rhs.numpy(), rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(
        lambda a, b: poptorch.serializedMatMul(a, b, mode, factor),
        (lhs.clone().requires_grad_(), rhs.clone().requires_grad_()))


def test_serialized_matmul_float16_partials():
    lhs, rhs = _rand(4, 64, dtype=torch.float16), _rand(64, 4, dtype=torch.float16, seed=1)
    kept = poptorch.serializedMatMul(lhs, rhs, MODE.ReducingDim, 4, keep_precision=True)
    halves = [lhs[:, i:i + 16].float() @ rhs[i:i + 16].float() for i in range(0, 64, 16)]
    ref = (halves[0] + halves[1] + halves[2] + halves[3]).half()
    assert kept.dtype == torch.float16
    np.testing.assert_allclose(kept.float().numpy(), ref.float().numpy(), rtol=2e-3, atol=2e-3)
    exact = lhs.double().numpy() @ rhs.double().numpy()
    plain = poptorch.serializedMatMul(lhs, rhs, MODE.ReducingDim, 4)
    np.testing.assert_allclose(plain.double().numpy(), exact, rtol=0.05, atol=0.1)


def test_serialized_matmul_errors():
    lhs, rhs = torch.zeros(6, 8), torch.zeros(8, 10)
    with pytest.raises(poptorch.Error, match=r"factor \(4\) must divide .* \(6\)"):
        poptorch.serializedMatMul(lhs, rhs, MODE.InputChannels, 4)
    with pytest.raises(poptorch.Error, match=r"\(10\)"):
        poptorch.serializedMatMul(lhs, rhs, MODE.OutputChannels, 4)
    with pytest.raises(AssertionError):
        poptorch.serializedMatMul(lhs, rhs, "reducing_dim", 2)
    with pytest.raises(AssertionError):
        poptorch.serializedMatMul(lhs, rhs, MODE.ReducingDim, 2.0)


def test_multi_conv_validates_and_changes_no_number():
    conv_a, conv_b = torch.nn.Conv2d(2, 3, 3), torch.nn.Conv2d(2, 3, 1)
    x = torch.randn(1, 2, 5, 5)
    multi = (poptorch.MultiConv().availableMemoryProportions((0.8, 0.7))
             .partialsTypes([torch.float, torch.half]).planType(poptorch.MultiConvPlanType.Serial)
             .perConvReservedTiles(100).cycleBackOff(0.3).enableConvDithering(True))
    with multi:
        a, b = conv_a(x), conv_b(x)
    torch.testing.assert_close(a, conv_a(x), rtol=0, atol=0)
    torch.testing.assert_close(b, conv_b(x), rtol=0, atol=0)
    assert multi.settings["available_memory_proportions"] == (0.8, 0.7)
    assert multi.settings["enable_conv_dithering"] == (True,)
    with pytest.raises(AssertionError, match="Invalid available memory proportion!"):
        poptorch.MultiConv().availableMemoryProportions(1)
    with pytest.raises(AssertionError, match="Invalid available memory proportion!"):
        poptorch.MultiConv().availableMemoryProportions([])
    with pytest.raises(ValueError, match="Expecting torch.float or torch.half"):
        poptorch.MultiConv().partialsTypes(torch.int32)
    with pytest.raises(ValueError, match="value must be bool or list of bools"):
        poptorch.MultiConv().enableConvDithering([True, 1])
    with pytest.raises(AssertionError, match="Invalid plan type!"):
        poptorch.MultiConv().planType("parallel")
    with pytest.raises(AssertionError, match="must be a string"):
        poptorch.NameScope(3)
    with poptorch.NameScope("encoder"):
        assert conv_a(x).shape == (1, 3, 3, 3)


def test_set_log_level():
    logger = logging.getLogger("poptorch::python")
    poptorch.setLogLevel("DEBUG")
    assert logger.level == logging.DEBUG
    poptorch.setLogLevel(4)
    assert logger.level == logging.ERROR
    with pytest.raises(ValueError, match="Unknown log level: LOUD. Valid values are DEBUG, "
                                         "ERR, INFO, OFF, TRACE and WARN"):
        poptorch.setLogLevel("LOUD")
    with pytest.raises(ValueError, match="Invalid log level integer"):
        poptorch.setLogLevel(5)
    poptorch.setLogLevel("WARN")


def test_a_program_using_the_ops_trains_through_ipu_gpu_run(tmp_path):
    prog = tmp_path / "ops_program.py"
    prog.write_text(
        "import torch\nimport poptorch\n"
        "poptorch.setLogLevel('ERR')\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.a = torch.nn.Conv2d(1, 2, 3, padding=1)\n"
        "        self.b = torch.nn.Conv2d(1, 2, 1)\n"
        "        self.fc = torch.nn.Linear(32, 3)\n"
        "    def forward(self, x, y):\n"
        "        with poptorch.MultiConv().availableMemoryProportions(0.5):\n"
        "            h = self.a(x) + self.b(x)\n"
        "        h = poptorch.recomputationCheckpoint(torch.relu(h)).flatten(1)\n"
        "        out = poptorch.serializedMatMul(h, self.fc.weight.t(),\n"
        "            poptorch.MatMulSerializationMode.OutputChannels, 3) + self.fc.bias\n"
        "        return out, poptorch.identity_loss(torch.nn.functional.cross_entropy(out, y),"
        " 'none')\n"
        "torch.manual_seed(0)\n"
        "x, y = torch.randn(16, 1, 4, 4), torch.randint(0, 3, (16,))\n"
        "model = M()\n"
        "training = poptorch.trainingModel(model, poptorch.Options(),\n"
        "    poptorch.optim.SGD(model.parameters(), lr=0.1))\n"
        "losses = [float(training(x, y)[1]) for _ in range(10)]\n"
        "print(losses[-1] < losses[0])\n")
    root = str(Path(__file__).resolve().parents[1])
    env = {**__import__("os").environ, "PYTHONPATH": root}
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", str(prog)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True"]
