"""PopTorch's device lifecycle, weight synchronisation, device pool and executables
(research/poptorch_semantics.md 3.2, 3.5, 3.6, 8): ``compile``/``attachToDevice``/
``detachFromDevice``/``destroy`` holding and releasing emulated IPUs, weights copied between
host and device as PopTorch copies them (checked against plain PyTorch doing the same
arithmetic), ``setOptimizer`` checks, and ``compileAndExport``/``poptorch.load``/
``loadExecutable``/``enableExecutableCaching`` files."""

from __future__ import annotations

import copy
import gc
import logging
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import ipu_gpu.poptorch as poptorch  # noqa: E402
from ipu_gpu.poptorch import device_pool, executable_cache  # noqa: E402

NO_EXECUTABLE = "Model has not been compiled or has been destroyed."


class Net(torch.nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, y=None):
        out = self.fc(x)
        if y is None:
            return out
        return out, torch.nn.functional.mse_loss(out, y)


def _data(seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(3, 4, generator=g), torch.randn(3, 2, generator=g)


def _sgd_reference(net, x, y, lr, steps=1):
    """Plain torch: ``steps`` SGD steps of ``net`` (a copy) on the MSE loss."""
    ref = copy.deepcopy(net)
    opt = torch.optim.SGD(ref.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(ref(x), y).backward()
        opt.step()
    return ref


@pytest.fixture
def pool(monkeypatch):
    """A fresh 2-IPU emulated system for the test."""
    fresh = device_pool.DevicePool(2)
    monkeypatch.setattr(device_pool, "_POOL", fresh)
    return fresh


# ---- the device pool -------------------------------------------------------------------------
def test_system_size_from_the_environment(monkeypatch):
    monkeypatch.delenv("IPU_GPU_POPTORCH_IPUS", raising=False)
    monkeypatch.delenv("IPU_GPU_NUM_IPUS", raising=False)
    assert device_pool.system_size() == 64
    monkeypatch.setenv("IPU_GPU_NUM_IPUS", "4")  # ipu-gpu run --ipus 4
    assert device_pool.system_size() == 4
    monkeypatch.setenv("IPU_GPU_POPTORCH_IPUS", "32")  # PopTorch's own setting wins
    assert device_pool.system_size() == 32
    for bad in ("3", "128", "zero"):
        monkeypatch.setenv("IPU_GPU_POPTORCH_IPUS", bad)
        with pytest.raises(ValueError, match="IPU_GPU_POPTORCH_IPUS must be a power of two"):
            device_pool.system_size()


def test_listing_is_gc_info_order():
    big = device_pool.DevicePool(64)
    assert len(big.devices) == 64 + 32 + 16 + 8 + 4 + 2 + 1
    assert big.devices[:2] == ((0,), (1,)) and big.devices[64] == (0, 1)
    assert sorted(big.devices[-1]) == list(range(64))
    small = device_pool.DevicePool(4)  # `ipu-gpu info`'s listing of a 4-IPU system
    from ipu_gpu.emulation import topology

    assert small.devices == tuple(c.ipus for c in topology._build_listing(4))


def test_hardware_queries(monkeypatch):
    monkeypatch.setattr(device_pool, "_POOL", device_pool.DevicePool(8))
    assert poptorch.ipuHardwareIsAvailable() and poptorch.ipuHardwareIsAvailable(8)
    assert not poptorch.ipuHardwareIsAvailable(3)  # no device of 3 IPUs exists
    assert not poptorch.ipuHardwareIsAvailable(16)
    assert poptorch.ipuHardwareVersion() == 2


def test_compile_holds_ipus_until_detach_destroy_or_collection(pool):
    x, _ = _data()
    model = poptorch.inferenceModel(Net())
    assert not model.isAttachedToDevice() and pool.free_ipus() == 2
    model.compile(x)
    assert model.isCompiled() and model.isAttachedToDevice() and pool.free_ipus() == 1
    model.detachFromDevice()
    assert not model.isAttachedToDevice() and pool.free_ipus() == 2
    model(x)  # a call attaches again
    assert model.isAttachedToDevice() and pool.free_ipus() == 1
    model.destroy()
    assert not model.isCompiled() and pool.free_ipus() == 2
    other = poptorch.inferenceModel(Net())
    other(x)
    assert pool.free_ipus() == 1
    del other
    gc.collect()
    assert pool.free_ipus() == 2


def test_a_full_pool_fails_as_poptorch_and_names_the_holder(monkeypatch):
    monkeypatch.setattr(device_pool, "_POOL", device_pool.DevicePool(1))
    x, y = _data()
    net = Net()
    training = poptorch.trainingModel(net)
    training(x, y)
    inference = poptorch.inferenceModel(net)
    with pytest.raises(poptorch.Error, match=r"Failed to acquire 1 IPU\(s\)") as err:
        inference(x)
    text = str(err.value)
    assert "poptorch.trainingModel(Net) created at test_poptorch_lifecycle.py:" in text
    assert "detachFromDevice()" in text
    assert not inference.isCompiled()
    training.detachFromDevice()  # research pain point 7: the documented remedy
    torch.testing.assert_close(inference(x), net(x).detach())
    with pytest.raises(poptorch.Error, match=r"poptorch.inferenceModel\(Net\) created at"):
        training(x, y)
    inference.detachFromDevice()
    training(x, y)
    assert training.isAttachedToDevice()


def test_ipus_per_model_replication_and_rounding(monkeypatch, caplog):
    monkeypatch.setattr(device_pool, "_POOL", device_pool.DevicePool(8))
    x = torch.randn(12, 4)
    two = poptorch.inferenceModel(Net(), poptorch.Options().replicationFactor(2))
    two(x)
    assert [len(le.ipus) for le in device_pool.pool().leases()] == [2]
    three = poptorch.inferenceModel(Net(), poptorch.Options().replicationFactor(3))
    with pytest.raises(poptorch.Error, match="The model specifies the use of 3 IPUs, however "
                                             "PopTorch must reserve a minimum of 4"):
        three(x)
    opts = poptorch.Options().replicationFactor(3).autoRoundNumIPUs(True)
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        rounded = poptorch.inferenceModel(Net(), opts)
        rounded(x)
    assert "Reserving 4 IPUs" in caplog.text
    assert sorted(len(le.ipus) for le in device_pool.pool().leases()) == [2, 4]


def test_use_ipu_id_picks_the_device(monkeypatch, caplog):
    monkeypatch.setattr(device_pool, "_POOL", device_pool.DevicePool(4))
    x, _ = _data()
    first = poptorch.inferenceModel(Net(), poptorch.Options().useIpuId(1))
    first(x)
    assert [le.device_id for le in device_pool.pool().leases()] == [1]
    second = poptorch.inferenceModel(Net(), poptorch.Options().useIpuId(1))
    with pytest.raises(poptorch.Error, match="Failed to acquire device Id 1") as err:
        second(x)
    assert "poptorch.inferenceModel(Net)" in str(err.value)
    first.detachFromDevice()
    second(x)
    second.detachFromDevice()
    with pytest.raises(poptorch.Error, match="No device with Id 99"):
        poptorch.inferenceModel(Net(), poptorch.Options().useIpuId(99))(x)
    two = poptorch.Options().replicationFactor(2).useIpuId(0)  # device 0 has 1 IPU
    with pytest.raises(poptorch.Error, match="Expected at least replication factor"):
        poptorch.inferenceModel(Net(), two)(torch.randn(6, 4))
    # a 1-IPU model on a 4-IPU device (id 6 of a 4-IPU listing): allowed, with a warning
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        poptorch.inferenceModel(Net(), poptorch.Options().useIpuId(6))(x)
    assert "some of them will not be used" in caplog.text


def test_connection_types(pool):
    x, _ = _data()
    on_demand = poptorch.Options().connectionType(poptorch.ConnectionType.OnDemand)
    model = poptorch.inferenceModel(Net(), on_demand)
    model.compile(x)
    assert model.isCompiled() and not model.isAttachedToDevice() and pool.free_ipus() == 2
    model(x)
    assert model.isAttachedToDevice() and pool.free_ipus() == 1

    offline = poptorch.inferenceModel(Net(), poptorch.Options().useOfflineIpuTarget())
    offline.compile(x)
    assert offline.isCompiled() and not offline.isAttachedToDevice()
    assert pool.free_ipus() == 1
    with pytest.raises(AssertionError, match=r"Trying to run a model on an offline device "
                                             r"\(ConnectionType.Never\): use "
                                             r"model.compile\(inputs\)"):
        offline(x)
    with pytest.raises(AssertionError, match=r"Trying to attach to an offline device"):
        offline.attachToDevice()


def test_ipu_model_takes_no_ipus_and_refuses_what_poptorch_refuses(pool, monkeypatch):
    x, _ = _data()
    models = [poptorch.inferenceModel(Net(), poptorch.Options().useIpuModel(True))
              for _ in range(3)]  # more models than the pool has IPUs
    for m in models:
        m(x)
        assert m.isAttachedToDevice()
    assert pool.free_ipus() == 2
    monkeypatch.setenv("POPTORCH_IPU_MODEL", "1")
    poptorch.inferenceModel(Net())(x)
    assert pool.free_ipus() == 2
    with pytest.raises(poptorch.Error, match="Cycle count logging is only supported on "
                                             "actual IPU hardware."):
        poptorch.inferenceModel(Net(), poptorch.Options().logCycleCount(True)).compile(x)
    never = poptorch.Options().useOfflineIpuTarget()
    with pytest.raises(poptorch.Error, match="not supported for the IPU model"):
        poptorch.inferenceModel(Net(), never).compile(x)
    monkeypatch.delenv("POPTORCH_IPU_MODEL")
    never_id = poptorch.Options().useOfflineIpuTarget().useIpuId(0)
    with pytest.raises(poptorch.Error, match="Offline compilation targeting a specific id "
                                             "not supported"):
        poptorch.inferenceModel(Net(), never_id).compile(x)


def test_lifecycle_errors(pool, caplog):
    x, _ = _data()
    model = poptorch.inferenceModel(Net())
    for method in (model.copyWeightsToHost, model.copyWeightsToDevice,
                   model.detachFromDevice, model.attachToDevice):
        with pytest.raises(poptorch.Error, match=NO_EXECUTABLE):
            method()
    assert not model.isAttachedToDevice()
    model.compile(x)
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        model.compile(x)
    assert "Call to compile() ignored: the executable is already compiled" in caplog.text
    with pytest.raises(poptorch.Error, match="Device is already attached"):
        model.attachToDevice()
    model.detachFromDevice()
    with pytest.raises(poptorch.Error, match="Device is not attached"):
        model.detachFromDevice()
    model.attachToDevice()
    model.destroy()
    with pytest.raises(poptorch.Error, match=NO_EXECUTABLE):
        model.copyWeightsToHost()
    model.destroy()  # nothing compiled: nothing to do


# ---- weights ---------------------------------------------------------------------------------
def test_training_writes_the_weights_back_and_inference_picks_them_up(pool):
    x, y = _data()
    net = Net()
    ref = _sgd_reference(net, x, y, lr=0.1, steps=2)
    training = poptorch.trainingModel(net, optimizer=poptorch.optim.SGD(net.parameters(),
                                                                         lr=0.1))
    training(x, y)
    inference = poptorch.inferenceModel(net)
    torch.testing.assert_close(inference(x), _sgd_reference(net, x, y, 0.1, 0)(x).detach())
    training(x, y)
    for (name, p), q in zip(net.state_dict().items(), ref.state_dict().values()):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-6, msg=name)
    # the inference model re-copies the trained weights before its next call
    torch.testing.assert_close(inference(x), ref(x).detach(), rtol=1e-6, atol=1e-6)


def test_host_edits_reach_the_device_only_through_copy_weights_to_device(pool):
    x, _ = _data()
    net = Net()
    model = poptorch.inferenceModel(net)
    before = model(x)
    with torch.no_grad():
        net.fc.bias.add_(1.0)
    torch.testing.assert_close(model(x), before)  # still the weights copied at attach
    model.copyWeightsToDevice()
    torch.testing.assert_close(model(x), before + 1.0)
    with torch.no_grad():
        net.fc.bias.sub_(1.0)
    model.load_state_dict(net.state_dict())  # the wrapper's load_state_dict copies too
    torch.testing.assert_close(model(x), before)
    model.detachFromDevice()
    with torch.no_grad():
        net.fc.bias.add_(2.0)
    torch.testing.assert_close(model(x), before + 2.0)  # attaching copies the host's weights


def test_a_training_model_overwrites_host_edits_it_was_not_given(pool):
    x, y = _data()
    net = Net()
    model = poptorch.trainingModel(net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1))
    model(x, y)
    after_one = copy.deepcopy(net)
    with torch.no_grad():
        net.fc.weight.zero_()  # not copied to the device
    model(x, y)
    ref = _sgd_reference(after_one, x, y, lr=0.1)
    torch.testing.assert_close(net.fc.weight, ref.fc.weight)
    with torch.no_grad():
        net.fc.weight.zero_()
    model.copyWeightsToDevice()
    edited = copy.deepcopy(net)
    model(x, y)
    torch.testing.assert_close(net.fc.weight, _sgd_reference(edited, x, y, 0.1).fc.weight)


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count.add_(1)
        return x + self.count


def test_inference_buffers_come_back_only_on_copy_weights_to_host(pool):
    counter = Counter()
    model = poptorch.inferenceModel(counter)
    x = torch.zeros(2)
    torch.testing.assert_close(model(x), torch.ones(2))
    torch.testing.assert_close(model(x), torch.full((2,), 2.0))
    assert counter.count.item() == 0.0
    model.copyWeightsToHost()
    assert counter.count.item() == 2.0


class Flagged(torch.nn.Module):
    """Doubles in training mode (a deterministic stand-in for Dropout)."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Identity()
        self.w = torch.nn.Parameter(torch.ones(()))

    def forward(self, x):
        out = x * self.w * (2.0 if self.inner.training else 1.0)
        return out, poptorch.identity_loss(out, "sum")


def test_train_eval_are_fixed_at_compilation(pool, caplog):
    net = Flagged()
    training = poptorch.trainingModel(net, optimizer=torch.optim.SGD(net.parameters(), lr=0.0))
    x = torch.ones(2)
    torch.testing.assert_close(training(x)[0], torch.full((2,), 2.0))
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        returned = training.eval()  # PopTorch forwards it to the module and returns that
    assert returned is net and not net.inner.training
    assert "eval() has no effect on the compiled model" in caplog.text
    torch.testing.assert_close(training(x)[0], torch.full((2,), 2.0))
    inference = poptorch.inferenceModel(net)  # compiled in eval mode
    torch.testing.assert_close(inference(x)[0], torch.ones(2))
    torch.testing.assert_close(training(x)[0], torch.full((2,), 2.0))
    assert not net.inner.training  # the user's flags are left as the user set them


# ---- optimizers ------------------------------------------------------------------------------
def test_set_optimizer_checks(pool):
    x, y = _data()
    net = Net()
    with pytest.raises(AssertionError, match="Unsupported optimizer type. Types supported "
                                             "_OptimizerType.SGD1, _OptimizerType.SGD2"):
        poptorch.trainingModel(net, optimizer=torch.optim.Adagrad(net.parameters()))
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    model = poptorch.trainingModel(net, optimizer=opt)
    with pytest.raises(AssertionError, match="Unsupported optimizer type"):
        model.setOptimizer(torch.optim.Adagrad(net.parameters()))
    model(x, y)
    start = copy.deepcopy(net)
    for group in opt.param_groups:  # lr is always variable ...
        group["lr"] = 0.5
    model(x, y)  # ... but the device holds the value it was given: 0.1
    torch.testing.assert_close(net.fc.weight, _sgd_reference(start, x, y, 0.1).fc.weight)
    start = copy.deepcopy(net)
    model.setOptimizer(opt)
    model(x, y)
    torch.testing.assert_close(net.fc.weight, _sgd_reference(start, x, y, 0.5).fc.weight)
    opt.param_groups[0]["momentum"] = 0.9  # compiled as a constant (torch's default 0)
    with pytest.raises(poptorch.Error, match="Problem with momentums. OptimizerValue for "
                                             "tensor fc.bias is not a valid replacement.Can "
                                             "not replace a constant"):
        model.setOptimizer(opt)
    opt.param_groups[0]["momentum"] = 0.0
    with pytest.raises(poptorch.Error, match="Can not replace optimizer of type SGD with new "
                                             "optimizer of type Adam"):
        model.setOptimizer(torch.optim.Adam(net.parameters()))
    with pytest.raises(AttributeError, match="an inferenceModel has no optimizer"):
        poptorch.inferenceModel(Net()).setOptimizer(opt)
    model.destroy()
    model.setOptimizer(torch.optim.Adam(net.parameters()))  # not compiled: any type


def test_cycle_count_and_perf_counters_are_hardware_only(pool):
    x, _ = _data()
    model = poptorch.inferenceModel(Net())
    with pytest.raises(poptorch.Error, match="Cycle count logging is disabled. Please set "
                                             "option logCycleCount to True to enable."):
        model.cycleCount()
    empty = {"input": [[]], "input_complete": [[]], "output": [[]], "output_complete": [[]]}
    assert model.getPerfCounters() == empty
    counted = poptorch.inferenceModel(Net(), poptorch.Options().logCycleCount(True))
    with pytest.raises(poptorch.Error, match="Please run the model at least once"):
        counted.cycleCount()
    counted(x)
    with pytest.raises(poptorch.Error, match="IPU hardware cycle counts are not available"):
        counted.cycleCount()
    model(x)
    with pytest.raises(poptorch.Error, match="performance counters"):
        model.getPerfCounters()
    with pytest.raises(poptorch.Error, match="performance counters"):
        model.getLatency()


def test_compilation_time(pool):
    x, _ = _data()
    model = poptorch.inferenceModel(Net())
    with pytest.raises(poptorch.Error, match="Please compile the model before obtaining "
                                             "compilation time."):
        model.compilationTime()
    model(x)
    assert model.compilationTime().total_seconds() >= 0.0
    quiet = poptorch.inferenceModel(Net(), poptorch.Options().showCompilationProgressBar(False))
    quiet(x)
    with pytest.raises(poptorch.Error, match="Please set showCompilationProgressBar"):
        quiet.compilationTime()


# ---- executables on disk ---------------------------------------------------------------------
def test_export_and_load_an_inference_model(pool, tmp_path):
    x, _ = _data()
    net = Net()
    opts = poptorch.Options().deviceIterations(3)
    model = poptorch.inferenceModel(net, opts)
    path = tmp_path / "model.poptorch"
    model.compileAndExport(str(path), x)
    assert path.read_bytes().startswith(executable_cache.MAGIC)
    model.detachFromDevice()
    loaded = poptorch.load(str(path))
    assert loaded.isCompiled() and loaded.isAttachedToDevice()
    assert loaded.model is not net and int(loaded.options.device_iterations) == 3
    torch.testing.assert_close(loaded(x), net(x).detach())
    with pytest.raises(poptorch.Error, match="Shape mismatch"):  # compiled for [3, 4]
        loaded(torch.randn(6, 4))


def test_export_and_load_a_training_model_continues_training(pool, tmp_path):
    x, y = _data()
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    model = poptorch.trainingModel(net, optimizer=opt)
    model(x, y)
    path = tmp_path / "train.poptorch"
    model.save(str(path))
    model(x, y)  # the original takes its second step
    model.detachFromDevice()
    loaded = poptorch.load(str(path))
    assert loaded.training and type(loaded.optimizer) is torch.optim.SGD
    assert loaded.optimizer.param_groups[0]["params"][0] is loaded.model.fc.weight
    loaded(x, y)  # the same second step, momentum state included
    torch.testing.assert_close(loaded.model.fc.weight, net.fc.weight)


def test_poptorch_optimizer_attributes_survive_export(pool, tmp_path):
    x, y = _data()
    net = Net()
    opt = poptorch.optim.SGD(net.parameters(), lr=0.1, loss_scaling=64.0, max_grad_norm=0.5)
    model = poptorch.trainingModel(net, optimizer=opt)
    model.compileAndExport(str(tmp_path / "m.poptorch"), x, y)
    loaded = poptorch.load(str(tmp_path / "m.poptorch"),
                           edit_opts_fn=lambda o: o.deviceIterations(1))
    assert loaded.optimizer.loss_scaling == 64.0 and loaded.optimizer.max_grad_norm == 0.5


def test_export_without_the_model_and_load_executable(pool, tmp_path, caplog):
    x, _ = _data()
    model = poptorch.inferenceModel(Net())
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        model.compileAndExport(str(tmp_path), x, export_model=False)  # a directory
    path = tmp_path / "model.poptorch"
    assert path.exists() and "is a directory, saving model to" in caplog.text
    with pytest.raises(AssertionError, match="created with 'export_model=False'"):
        poptorch.load(str(path))
    model.destroy()
    net = Net(seed=5)
    fresh = poptorch.inferenceModel(net)
    fresh.loadExecutable(str(path))
    assert fresh.isCompiled() and fresh.isAttachedToDevice()
    torch.testing.assert_close(fresh(x), net(x).detach())  # this model's own weights


def test_invalid_files(pool, tmp_path, monkeypatch):
    x, y = _data()
    bogus = tmp_path / "bogus.popef"
    bogus.write_bytes(b"PK\x03\x04 not an ipu_gpu file")
    with pytest.raises(poptorch.Error, match="Invalid file .*bogus.popef: it is not a "
                                             "PopTorch executable exported by ipu_gpu"):
        poptorch.load(str(bogus))
    with pytest.raises(poptorch.Error, match="Invalid file"):
        poptorch.inferenceModel(Net()).loadExecutable(str(bogus))
    damaged = tmp_path / "damaged.popef"
    damaged.write_bytes(executable_cache.MAGIC + b"\x05" + b"\x00" * 7 + b"{}")
    with pytest.raises(poptorch.Error, match="is damaged"):
        poptorch.load(str(damaged))

    training = poptorch.trainingModel(Net())
    path = tmp_path / "t.poptorch"
    training.compileAndExport(str(path), x, y)
    training.destroy()
    with pytest.raises(poptorch.Error, match="it holds a training executable and this is an "
                                             "inference model"):
        poptorch.inferenceModel(Net()).loadExecutable(str(path))
    other = poptorch.trainingModel(Net(), poptorch.Options().deviceIterations(3))
    with pytest.raises(poptorch.Error, match="compiled with device_iterations=1"):
        other.loadExecutable(str(path))
    monkeypatch.setattr(executable_cache, "version", lambda: "ipu_gpu 9.9")
    with pytest.raises(AssertionError, match="Invalid file .*: PopTorch version mismatch: "
                                             "File was created with version: ipu_gpu"):
        poptorch.load(str(path))
    with pytest.raises(poptorch.Error, match="PopTorch version mismatch"):
        other.loadExecutable(str(path))


def test_an_offline_compiled_executable_runs_after_load(pool, tmp_path):
    x, _ = _data()
    net = Net()
    offline = poptorch.inferenceModel(net, poptorch.Options().useOfflineIpuTarget())
    offline.compileAndExport(str(tmp_path / "o.poptorch"), x)
    assert pool.free_ipus() == 2
    loaded = poptorch.load(str(tmp_path / "o.poptorch"))  # Never becomes Always, as PopTorch
    torch.testing.assert_close(loaded(x), net(x).detach())
    assert pool.free_ipus() == 1


def test_executable_cache_entries_and_hits(pool, tmp_path, caplog, monkeypatch):
    cache = tmp_path / "cache"
    opts = poptorch.Options().enableExecutableCaching(str(cache))
    x, _ = _data()
    with caplog.at_level(logging.INFO, logger="poptorch::python"):
        first = poptorch.inferenceModel(Net(), opts)
        first.compile(x)
        first.destroy()
        assert len(os.listdir(cache)) == 1 and "Executable cache miss" in caplog.text
        caplog.clear()
        again = poptorch.inferenceModel(Net(seed=3), opts)  # other weights, same executable
        again.compile(x)
        assert "Executable cache hit" in caplog.text and len(os.listdir(cache)) == 1
        again.destroy()
        poptorch.inferenceModel(Net(), opts).compile(torch.randn(5, 4))
        assert len(os.listdir(cache)) == 2
    entry = next(cache.iterdir())
    header, _ = executable_cache.read(str(entry))
    assert header["kind"] == "cache" and entry.name == header["key"] + ".popef"
    monkeypatch.setenv("POPTORCH_CACHE_DIR", str(tmp_path / "env_cache"))
    model = poptorch.inferenceModel(Net(), poptorch.Options())
    model.compile(x)
    assert len(os.listdir(tmp_path / "env_cache")) == 1
    model.destroy()
    monkeypatch.delenv("POPTORCH_CACHE_DIR")
    with caplog.at_level(logging.WARNING, logger="poptorch::python"):
        poptorch.inferenceModel(Net(), opts.clone().useIpuModel(True)).compile(x)
    assert "enableExecutableCaching doesn't work with the IPU model" in caplog.text


_PROGRAM = """
import torch
import poptorch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x, y=None):
        out = self.fc(x)
        if y is None:
            return out
        return out, torch.nn.functional.mse_loss(out, y)

x, y = torch.ones(3, 4), torch.zeros(3, 2)
net = Net()
training = poptorch.trainingModel(net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1))
print("hardware", poptorch.ipuHardwareIsAvailable(1), poptorch.ipuHardwareIsAvailable(2))
training(x, y)
inference = poptorch.inferenceModel(net)
try:
    inference(x)
except poptorch.Error as err:
    print("busy", str(err).splitlines()[0])
training.detachFromDevice()
print("out", inference(x).sum().item())
inference.compileAndExport("exported.poptorch", x)
"""


@pytest.mark.slow  # a subprocess importing torch: ~15 s on two loaded cores
def test_a_program_detaches_to_share_one_ipu(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(_PROGRAM)
    root = str(pathlib.Path(__file__).resolve().parents[1])
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", "--ipus", "1", str(prog)],
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": root},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    assert lines["hardware"] == "True False"
    assert lines["busy"] == "Failed to acquire 1 IPU(s)"
    net = Net()
    trained = _sgd_reference(net, torch.ones(3, 4), torch.zeros(3, 2), lr=0.1)
    assert float(lines["out"]) == pytest.approx(trained(torch.ones(3, 4)).sum().item(),
                                                rel=1e-5)
    assert (tmp_path / "exported.poptorch").read_bytes().startswith(executable_cache.MAGIC)


def test_a_model_on_two_ipus_holds_two(pool):
    class TwoStage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4)
            self.b = poptorch.BeginBlock(torch.nn.Linear(4, 2), ipu_id=1)

        def forward(self, x):
            return self.b(self.a(x))

    net = TwoStage()
    model = poptorch.inferenceModel(net, poptorch.Options().deviceIterations(2))
    x = torch.randn(4, 4)
    torch.testing.assert_close(model(x), net(x).detach())
    assert [len(le.ipus) for le in pool.leases()] == [2] and pool.free_ipus() == 0
    with pytest.raises(poptorch.Error, match=r"Failed to acquire 1 IPU\(s\)"):
        poptorch.inferenceModel(Net())(torch.randn(3, 4))


def test_copy_named_buffers_to_device_uploads_only_the_named_ones(pool):
    class TwoCounters(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = Counter(), Counter()

        def forward(self, x):
            return self.a(x) + 10 * self.b(x)

    net = TwoCounters()
    x = torch.zeros(1)
    plain = poptorch.inferenceModel(net)
    plain(x)
    with pytest.raises(poptorch.Error, match="No named buffers marked as updatable via "
                                             "updatableNamedBuffers option"):
        plain.copyNamedBuffersToDevice()
    plain.destroy()
    model = poptorch.inferenceModel(net, poptorch.Options().updatableNamedBuffers(["a.count"]))
    with pytest.raises(poptorch.Error, match=NO_EXECUTABLE):
        model.copyNamedBuffersToDevice()
    torch.testing.assert_close(model(x), torch.tensor([11.0]))  # device counts 1 and 1
    with torch.no_grad():
        net.a.count.fill_(5.0)
        net.b.count.fill_(5.0)
    model.copyNamedBuffersToDevice()  # a.count only: the device's b.count stays 1
    torch.testing.assert_close(model(x), torch.tensor([6.0 + 10 * 2.0]))
    bad = poptorch.inferenceModel(Net(), poptorch.Options().updatableNamedBuffers(["nope"]))
    bad(torch.randn(3, 4))
    with pytest.raises(KeyError):
        bad.copyNamedBuffersToDevice()


def test_copy_named_buffers_to_device_reaches_every_replica(pool):
    counter = Counter()
    opts = (poptorch.Options().replicationFactor(2).broadcastBuffers(False)
            .updatableNamedBuffers(["count"]))
    model = poptorch.inferenceModel(counter, opts)
    x = torch.zeros(2, 1)
    torch.testing.assert_close(model(x), torch.ones(2, 1))  # each replica counts once
    with torch.no_grad():
        counter.count.fill_(5.0)
    model.copyNamedBuffersToDevice()
    torch.testing.assert_close(model(x), torch.full((2, 1), 6.0))


def test_a_new_optimizer_goes_on_from_the_device_optimizer_state(pool):
    x, y = _data()
    net = Net()
    ref = copy.deepcopy(net)
    model = poptorch.trainingModel(net, optimizer=torch.optim.SGD(net.parameters(), lr=0.1,
                                                                  momentum=0.9))
    model(x, y)
    # PopTorch uploads only the new optimizer's hyper-parameters: the momentum stays
    model.setOptimizer(torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9))
    model(x, y)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        ref_opt.zero_grad()
        torch.nn.functional.mse_loss(ref(x), y).backward()
        ref_opt.step()
    torch.testing.assert_close(net.fc.weight, ref.fc.weight)
