"""``tf.config``: the devices a program sees and the runtime switches it sets.

What a program written for the IPU sees, as on an IPU machine (Graphcore's TensorFlow):

* physical devices: the host CPU (``/physical_device:CPU:0``) and one ``IPU`` per IPU of the
  emulated machine (``/physical_device:IPU:0`` .. ``IPU:<N-1>``, N = ``IPU_GPU_NUM_IPUS``,
  16 by default). No ``GPU``: the GPU the emulator may compute on is not a TensorFlow device,
  and IPU programs that loop over ``list_physical_devices('GPU')`` to set memory growth find
  none, as on an IPU machine;
* logical devices: ``/device:CPU:0`` and, once ``IPUConfig.configure_ipu_system()`` ran, the
  configured ``/device:IPU:<k>`` devices.

``set_visible_devices`` validates its devices as TensorFlow does (ValueError "Unrecognized
device: ..." for a device not in the list, or not of ``device_type``) and records them
(``get_visible_devices``; hiding every IPU hides the logical IPU devices too); it never
raises TensorFlow's "cannot be modified after being initialized", since nothing here is
initialised. ``experimental.set_memory_growth`` accepts GPU devices only ("Cannot set memory
growth on non-GPU and non-Pluggable devices"), so it is never reached with the devices
listed here. The remaining switches (soft placement, eager functions, threading, JIT, op
determinism) are accepted and recorded; none changes how ipu_gpu computes (its kernels are
deterministic already).
"""

from __future__ import annotations

import collections
import types

__all__ = ["LogicalDevice", "LogicalDeviceConfiguration", "PhysicalDevice", "experimental",
           "functions_run_eagerly", "get_logical_device_configuration",
           "get_soft_device_placement", "get_visible_devices", "list_logical_devices",
           "list_physical_devices", "optimizer", "run_functions_eagerly",
           "set_logical_device_configuration", "set_soft_device_placement",
           "set_visible_devices", "threading"]

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])
LogicalDeviceConfiguration = collections.namedtuple(
    "LogicalDeviceConfiguration",
    ["memory_limit", "experimental_priority", "experimental_device_ordinal"])
LogicalDeviceConfiguration.__new__.__defaults__ = (None, None, None)

_STATE = {
    "visible": None,  # None: all physical devices
    "memory_growth": {},
    "logical_configuration": {},
    "soft_device_placement": True,
    "functions_run_eagerly": False,
    "intra_op": 0,
    "inter_op": 0,
    "jit": False,
    "op_determinism": False,
}


def _num_ipus() -> int:
    from .emulation import topology  # reads IPU_GPU_NUM_IPUS once, at its import

    return topology.NUM_IPUS


def _physical() -> list:
    return ([PhysicalDevice("/physical_device:CPU:0", "CPU")]
            + [PhysicalDevice(f"/physical_device:IPU:{i}", "IPU") for i in range(_num_ipus())])


def list_physical_devices(device_type=None) -> list:
    """Return a list of physical devices visible to the host runtime.

    Args:
      device_type: (optional string) only list devices of this type ("CPU", "IPU"; the
        match is exact, as TensorFlow's: "cpu" lists nothing).

    Returns:
      A list of ``PhysicalDevice`` (name, device_type) tuples.
    """
    return [d for d in _physical() if device_type is None or d.device_type == device_type]


def _visible() -> list:
    visible = _STATE["visible"]
    return _physical() if visible is None else list(visible)


def get_visible_devices(device_type=None) -> list:
    """The physical devices the runtime may use (all of them unless
    ``set_visible_devices`` chose), of ``device_type`` if given."""
    return [d for d in _visible() if device_type is None or d.device_type == device_type]


def set_visible_devices(devices, device_type=None) -> None:
    """Set the list of visible devices (of ``device_type``, or of every type when None).

    Raises:
      ValueError: a device that is not a listed ``PhysicalDevice`` ("Unrecognized device:
        ..."), or not of ``device_type``.
    """
    if isinstance(devices, PhysicalDevice) or not isinstance(devices, (list, tuple)):
        devices = [devices]  # one device (a PhysicalDevice is itself a tuple)
    physical = _physical()
    for d in devices:
        if d not in physical:
            raise ValueError(f"Unrecognized device: {d!r}")
        if device_type is not None and d.device_type != device_type:
            raise ValueError(f"Unrecognized device: {d!r}")
    kept = [] if device_type is None else [d for d in _visible()
                                           if d.device_type != device_type]
    _STATE["visible"] = kept + [PhysicalDevice(*d) for d in devices]


def list_logical_devices(device_type=None) -> list:
    """Return a list of logical devices created by the runtime: ``/device:CPU:0`` and the
    configured IPU devices ``/device:IPU:<k>`` (none before ``configure_ipu_system``)."""
    from .emulation import system

    devices = [LogicalDevice("/device:CPU:0", "CPU")]
    if system.is_configured() and get_visible_devices("IPU"):
        devices += [LogicalDevice(d.name, "IPU") for d in system.current_system().devices]
    return [d for d in devices if device_type is None or d.device_type == device_type]


def _known(device) -> PhysicalDevice:
    if device not in _physical():
        raise ValueError(f"Unrecognized device: {device!r}")
    return PhysicalDevice(*device)


def set_memory_growth(device, enable) -> None:
    """Set if memory growth should be enabled for a PhysicalDevice (GPUs only).

    Raises:
      ValueError: an unknown device, or one that is not a GPU.
    """
    device = _known(device)
    if device.device_type != "GPU":
        raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")
    _STATE["memory_growth"][device] = bool(enable)


def get_memory_growth(device) -> bool:
    """Get if memory growth is enabled for a PhysicalDevice (KeyError for a device it was
    never set on, as TensorFlow)."""
    return _STATE["memory_growth"][_known(device)]


def set_logical_device_configuration(device, logical_devices) -> None:
    """Set the logical device configuration of a PhysicalDevice (recorded; the emulator
    splits no device)."""
    device = _known(device)
    _STATE["logical_configuration"][device] = (None if logical_devices is None
                                               else list(logical_devices))


def get_logical_device_configuration(device):
    """The logical device configuration set for a PhysicalDevice, or None."""
    return _STATE["logical_configuration"].get(_known(device))


def get_device_details(device) -> dict:
    """Details of a physical device (empty, as TensorFlow's for a CPU)."""
    _known(device)
    return {}


def set_soft_device_placement(enabled) -> None:
    """Enable or disable soft device placement (accepted; ops always run)."""
    _STATE["soft_device_placement"] = bool(enabled)


def get_soft_device_placement() -> bool:
    return _STATE["soft_device_placement"]


def run_functions_eagerly(run_eagerly) -> None:
    """Enables or disables eager execution of tf.functions (they always run eagerly
    here)."""
    _STATE["functions_run_eagerly"] = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """The value last given to ``run_functions_eagerly`` (False by default, as TF)."""
    return _STATE["functions_run_eagerly"]


experimental_run_functions_eagerly = run_functions_eagerly
experimental_functions_run_eagerly = functions_run_eagerly


def _setter(key, cast):
    def set_value(value) -> None:
        _STATE[key] = cast(value)
    return set_value


def _getter(key):
    def get_value():
        return _STATE[key]
    return get_value


def enable_op_determinism() -> None:
    """Configures TensorFlow ops to run deterministically (ipu_gpu's kernels are)."""
    _STATE["op_determinism"] = True


experimental = types.SimpleNamespace(
    list_physical_devices=list_physical_devices,
    list_logical_devices=list_logical_devices,
    get_visible_devices=get_visible_devices,
    set_visible_devices=set_visible_devices,
    set_memory_growth=set_memory_growth,
    get_memory_growth=get_memory_growth,
    set_virtual_device_configuration=set_logical_device_configuration,
    get_virtual_device_configuration=get_logical_device_configuration,
    VirtualDeviceConfiguration=LogicalDeviceConfiguration,
    get_device_details=get_device_details,
    enable_op_determinism=enable_op_determinism,
)
threading = types.SimpleNamespace(
    set_intra_op_parallelism_threads=_setter("intra_op", int),
    get_intra_op_parallelism_threads=_getter("intra_op"),
    set_inter_op_parallelism_threads=_setter("inter_op", int),
    get_inter_op_parallelism_threads=_getter("inter_op"),
)
optimizer = types.SimpleNamespace(set_jit=_setter("jit", lambda v: v),
                                  get_jit=_getter("jit"))
