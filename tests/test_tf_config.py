"""tf.config (the devices an IPU program sees, visibility, memory growth, switches) and
tf.device (TF's device-string parsing, IPU placement, CPU as outside compilation)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import tf_config
from ipu_gpu.device import DeviceSpec, device
from ipu_gpu.emulation import placement, topology
from ipu_gpu.ipu import config, ipu_compiler, scopes


@pytest.fixture
def fresh_visibility():
    saved = copy.deepcopy(tf_config._STATE)
    yield
    tf_config._STATE.clear()
    tf_config._STATE.update(saved)


def _configure(n=1):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = n
    cfg.configure_ipu_system()


# ---- tf.config ----------------------------------------------------------------------------


def test_physical_devices_are_the_cpu_and_the_ipus(real_tf):
    devices = tf_config.list_physical_devices()
    assert devices[0] == tf_config.PhysicalDevice("/physical_device:CPU:0", "CPU")
    assert [d.name for d in devices[1:]] == [f"/physical_device:IPU:{i}"
                                             for i in range(topology.NUM_IPUS)]
    assert tf_config.list_physical_devices("GPU") == []
    assert tf_config.list_physical_devices("cpu") == []  # exact type match, as TF
    cpu = tf_config.list_physical_devices("CPU")[0]
    tcpu = real_tf.config.list_physical_devices("CPU")[0]
    assert repr(cpu) == repr(tcpu) and tuple(cpu) == tuple(tcpu)
    assert (cpu.name, cpu.device_type) == ("/physical_device:CPU:0", "CPU")


@pytest.mark.usefixtures("fresh_ipu_system")
def test_logical_devices_follow_the_configured_system():
    assert tf_config.list_logical_devices() == [tf_config.LogicalDevice("/device:CPU:0", "CPU")]
    _configure(2)
    assert tf_config.list_logical_devices("IPU") == [
        tf_config.LogicalDevice("/device:IPU:0", "IPU")]
    assert [d.device_type for d in tf_config.list_logical_devices()] == ["CPU", "IPU"]


@pytest.mark.usefixtures("fresh_visibility", "fresh_ipu_system")
def test_visible_devices_are_validated_as_tf(real_tf):
    cpu = tf_config.list_physical_devices("CPU")[0]
    gpu = tf_config.PhysicalDevice("/physical_device:GPU:0", "GPU")
    tgpu = real_tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")
    for ours, theirs in (
            (lambda: tf_config.set_visible_devices([gpu], "GPU"),
             lambda: real_tf.config.set_visible_devices([tgpu], "GPU")),
            (lambda: tf_config.set_visible_devices(cpu, "GPU"),
             lambda: real_tf.config.set_visible_devices(
                 real_tf.config.list_physical_devices("CPU")[0], "GPU")),
            (lambda: tf_config.set_visible_devices("cpu"),
             lambda: real_tf.config.set_visible_devices("cpu"))):
        with pytest.raises(ValueError) as mine:
            ours()
        with pytest.raises(ValueError) as want:
            theirs()
        assert str(mine.value) == str(want.value)
    tf_config.set_visible_devices([], "GPU")
    assert tf_config.get_visible_devices("GPU") == []
    tf_config.set_visible_devices([], "IPU")
    assert tf_config.get_visible_devices() == [cpu]
    _configure(1)
    assert tf_config.list_logical_devices("IPU") == []  # every IPU hidden
    ipu0 = tf_config.list_physical_devices("IPU")[0]
    tf_config.set_visible_devices([ipu0], "IPU")
    assert tf_config.get_visible_devices() == [cpu, ipu0]
    assert tf_config.list_logical_devices("IPU") == [
        tf_config.LogicalDevice("/device:IPU:0", "IPU")]


@pytest.mark.usefixtures("fresh_visibility")
def test_memory_growth_and_switches(real_tf):
    cpu = tf_config.list_physical_devices("CPU")[0]
    tcpu = real_tf.config.list_physical_devices("CPU")[0]
    for ours, theirs in ((lambda: tf_config.experimental.set_memory_growth(cpu, True),
                          lambda: real_tf.config.experimental.set_memory_growth(tcpu, True)),
                         (lambda: tf_config.experimental.set_memory_growth("x", True),
                          lambda: real_tf.config.experimental.set_memory_growth("x", True))):
        with pytest.raises(ValueError) as mine:
            ours()
        with pytest.raises(ValueError) as want:
            theirs()
        assert str(mine.value) == str(want.value)
    for gpu in tf_config.list_physical_devices("GPU"):  # the usual program loop: no GPUs
        tf_config.experimental.set_memory_growth(gpu, True)
    with pytest.raises(KeyError):
        tf_config.experimental.get_memory_growth(cpu)
    assert tf_config.experimental.get_device_details(cpu) == {}

    assert tf_config.functions_run_eagerly() is False
    tf_config.run_functions_eagerly(True)
    assert tf_config.functions_run_eagerly() is True
    tf_config.set_soft_device_placement(False)
    assert tf_config.get_soft_device_placement() is False
    tf_config.threading.set_intra_op_parallelism_threads(2)
    assert tf_config.threading.get_intra_op_parallelism_threads() == 2
    tf_config.optimizer.set_jit(True)
    assert tf_config.optimizer.get_jit() is True
    tf_config.experimental.enable_op_determinism()
    conf = [tf_config.LogicalDeviceConfiguration(memory_limit=1024)]
    tf_config.set_logical_device_configuration(cpu, conf)
    assert tf_config.get_logical_device_configuration(cpu) == conf
    assert tf_config.LogicalDeviceConfiguration()._fields == \
        real_tf.config.LogicalDeviceConfiguration()._fields


# ---- tf.device ------------------------------------------------------------------------------

DEVICE_NAMES = ["cpu", "CPU", "cpu:0", "/cpu:0", "/CPU:0", "/device:CPU:0",
                "/job:localhost/replica:0/task:0/device:CPU:0", "/gpu:0", "GPU:0",
                "/device:IPU:0", "/device:XYZ:0", "xyz", "", None, "/device:CPU:1",
                "/device:CPU:0/device:CPU:0", "/device:CPU:*", "cpu:a", "/cpu",
                "device:CPU:0", 3, "/replica:0", "/device:cpu:0", "a:b:c:d"]


@pytest.mark.parametrize("name", DEVICE_NAMES)
def test_device_strings_are_accepted_and_refused_as_tf(real_tf, name):
    def outcome(dev, t):
        try:
            with dev(name):
                t.constant(1.0)
            return "ok"
        except Exception as e:  # noqa: BLE001 - the kind of failure is compared
            return type(e).__name__

    assert outcome(device, tf) == outcome(real_tf.device, real_tf)


def test_device_spec_and_graphcore_messages():
    spec = DeviceSpec.from_string("/job:w/replica:1/task:2/gpu:3")
    assert (spec.job, spec.replica, spec.task, spec.device_type, spec.device_index) == \
        ("w", 1, 2, "GPU", 3)
    assert spec.to_string() == "/job:w/replica:1/task:2/device:GPU:3"
    assert DeviceSpec.from_string("IPU:1").to_string() == "/device:IPU:1"  # Graphcore's TF
    assert DeviceSpec.from_string("/device:CPU:*").to_string() == "/device:CPU:*"
    merged = DeviceSpec(job="a", device_type="CPU").make_merged_spec(DeviceSpec(device_index=2))
    assert merged == DeviceSpec.from_string("/job:a/device:CPU:2")
    with pytest.raises(ValueError, match=r"Unknown attribute: 'xyz' in 'xyz'"):
        device("xyz")
    with pytest.raises(ValueError, match="Cannot specify multiple device types"):
        device("/cpu:0/gpu:0")
    with pytest.raises(RuntimeError, match="tf.device does not support functions"):
        device(lambda op: "/cpu:0")
    with pytest.raises(ValueError, match="Expecting a string device name"):
        device(3)
    with device(tf_config.LogicalDevice("/device:CPU:0", "CPU")), device(spec):
        pass


@pytest.mark.usefixtures("fresh_ipu_system")
def test_device_places_ipu_programs_and_host_ops():
    _configure(1)
    with device("/device:IPU:0"):
        assert placement.current().device_index == 0
        out = ipu_compiler.compile(lambda x: x * 2.0, [np.ones(2, np.float32)])
    np.testing.assert_array_equal(out[0], [2.0, 2.0])
    with scopes.ipu_scope("/device:IPU:0"):
        with device("cpu"):  # inside an IPU context: like outside_compilation_scope
            assert placement.current().outside_compilation is not None
            with pytest.raises(RuntimeError, match="not placed on an IPU device"):
                ipu_compiler.compile(lambda: tf.constant(1.0))
            with device("/cpu:0"):  # already on the host: nested is fine
                pass
        assert placement.current().outside_compilation is None
    with device("cpu"):  # on the host outside any IPU scope
        assert placement.current().device is None

    def program():
        here = placement.current()
        with device("/device:CPU:0"):
            host = placement.current()
            y = tf.constant(2.0) * 3.0
        return (tf.constant(here.outside_compilation is None),
                tf.constant(host.outside_compilation is not None), y)

    with scopes.ipu_scope("/device:IPU:0"):
        on_ipu, on_host, y = ipu_compiler.compile(program)
    assert bool(on_ipu) and bool(on_host) and float(y) == 6.0
    with device("/gpu:0"):  # accepted, changes nothing
        assert placement.current().device is None
