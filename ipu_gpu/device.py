"""``tf.device`` and ``tf.DeviceSpec``: where the enclosed operations are placed.

Device strings are parsed as Graphcore's TensorFlow parses them (``DeviceSpec``: the
``/job:``, ``/replica:``, ``/task:`` and ``/device:<TYPE>:<index>`` parts, each optional;
``cpu``, ``CPU:0``, ``/gpu:0`` and ``IPU:0`` short forms; ``*`` for any index), with its
errors: ValueError "Unknown attribute: 'xyz' in 'xyz'", "Cannot specify multiple device
types: ...", a non-integer index; RuntimeError for a function (eager TensorFlow has no
device functions); ValueError "Expecting a string device name" for other objects.

What placing does in the emulator (``ipu.scopes`` keeps the state, ``emulation.placement``):

* ``IPU`` (``/device:IPU:<k>``) places the enclosed operations on IPU device k, as
  ``ipu_scope`` does without its JIT scope: ``ipu_compiler.compile`` accepts it as the
  program's device (the device is checked against the system when the program runs);
* ``CPU`` inside an IPU context (an ``ipu_scope``, or code running in an emulated IPU
  program) behaves like ``outside_compilation_scope()``: the operations are marked as host
  operations (the emulator computes them where it computes everything; no transfer is
  modelled). Outside any IPU context it places on the host (a ``compile`` inside fails as
  off the IPU);
* ``GPU`` and other types are accepted and change nothing (TensorFlow's soft placement
  runs their operations on the CPU of an IPU machine); jobs, replicas and tasks are ignored.
"""

from __future__ import annotations

import contextlib

from .emulation import placement as _placement

__all__ = ["DeviceSpec", "device"]

_VALID_DEVICE_TYPES = frozenset({"CPU", "GPU", "TPU", "CUSTOM", "EPU", "IPU"})


class DeviceSpec:
    """Represents a (possibly partial) specification for a TensorFlow device: job,
    replica, task, device type and device index, each optional."""

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index")

    def __init__(self, job=None, replica=None, task=None, device_type=None,
                 device_index=None):
        self._job = None if job is None else str(job)
        self._replica = None if replica is None else int(replica)
        self._task = None if task is None else int(task)
        if device_type in ("cpu", "gpu"):
            device_type = device_type.upper()
        self._device_type = None if device_type is None else str(device_type)
        self._device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec) -> DeviceSpec:
        """A DeviceSpec from ``/job:<name>/replica:<id>/task:<id>/device:<type>:<id>``
        (every part optional)."""
        return cls(*_parse(spec))

    job = property(lambda self: self._job)
    replica = property(lambda self: self._replica)
    task = property(lambda self: self._task)
    device_type = property(lambda self: self._device_type)
    device_index = property(lambda self: self._device_index)

    def to_string(self) -> str:
        """``/job:<name>/replica:<id>/task:<id>/device:<type>:<id>`` with the set parts."""
        out = []
        if self._job is not None:
            out.append(f"/job:{self._job}")
        if self._replica is not None:
            out.append(f"/replica:{self._replica}")
        if self._task is not None:
            out.append(f"/task:{self._task}")
        if self._device_type is not None:
            index = "*" if self._device_index is None else self._device_index
            out.append(f"/device:{self._device_type}:{index}")
        return "".join(out)

    def replace(self, **kwargs) -> DeviceSpec:
        fields = dict(job=self._job, replica=self._replica, task=self._task,
                      device_type=self._device_type, device_index=self._device_index)
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def make_merged_spec(self, dev: DeviceSpec) -> DeviceSpec:
        """A spec with ``dev``'s set parts taking precedence over this one's."""
        return DeviceSpec(*(b if b is not None else a for a, b in zip(
            (self._job, self._replica, self._task, self._device_type, self._device_index),
            (dev.job, dev.replica, dev.task, dev.device_type, dev.device_index))))

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceSpec) and self.to_string() == other.to_string()

    def __hash__(self) -> int:
        return hash(self.to_string())

    def __repr__(self) -> str:
        return f"<ipu_gpu.DeviceSpec {self.to_string()!r}>"


def _parse(spec) -> tuple:
    """(job, replica, task, device_type, device_index) of a device string, with the
    checks and messages of Graphcore's ``DeviceSpec._string_to_components``."""
    job = replica = task = device_type = device_index = None
    for part in (spec or "").split("/"):
        y = part.split(":")
        n = len(y)
        if n == 2 and y[0] == "job":
            job = y[1]
        elif n == 2 and y[0] == "replica":
            replica = int(y[1])
        elif n == 2 and y[0] == "task":
            task = int(y[1])
        elif n in (1, 2) and y[0].upper() in _VALID_DEVICE_TYPES:
            if device_type is not None:
                raise ValueError(f"Cannot specify multiple device types: {spec}")
            device_type = y[0].upper()
            if n == 2 and y[1] != "*":
                device_index = int(y[1])
        elif n == 3 and y[0] == "device":
            if device_type is not None:
                raise ValueError(f"Cannot specify multiple device types: {spec}")
            device_type = y[1]
            if y[2] != "*":
                device_index = int(y[2])
        elif n and y[0] != "":
            raise ValueError(f"Unknown attribute: '{y[0]}' in '{spec}'")
    if device_type in ("cpu", "gpu"):
        device_type = device_type.upper()
    return job, replica, task, device_type, device_index


def _spec_of(device_name) -> DeviceSpec:
    if callable(device_name):
        raise RuntimeError("tf.device does not support functions.")
    if device_name is None:
        return DeviceSpec()
    if isinstance(device_name, DeviceSpec):
        return device_name
    name = getattr(device_name, "name", device_name)  # a LogicalDevice
    if not isinstance(name, str):
        raise ValueError(f"Expecting a string device name. Got {type(device_name)}"
                         f"({device_name})")
    return DeviceSpec.from_string(name)


@contextlib.contextmanager
def _placed(spec: DeviceSpec):
    here = _placement.current()
    if spec.device_type == "IPU":
        index = 0 if spec.device_index is None else spec.device_index
        with _placement.push(device=f"/device:IPU:{index}", device_index=index,
                             outside_compilation=None):
            yield
    elif spec.device_type == "CPU" and here.xla_context:
        if here.outside_compilation is not None:  # already on the host
            yield
        else:
            with _placement.push(outside_compilation=_placement.unique_outside_name("device")):
                yield
    elif spec.device_type == "CPU":
        with _placement.push(device=None, device_index=None):
            yield
    else:
        yield


def device(device_name):
    """Specifies the device for ops created/executed in this context.

    Args:
      device_name: a device name string (``"/device:IPU:0"``, ``"cpu"``, ``"/gpu:0"``), a
        ``DeviceSpec``, a ``LogicalDevice`` or None (no change).

    Returns:
      A context manager (see the module docstring for what each device type does).

    Raises:
      RuntimeError: ``device_name`` is a function.
      ValueError: a malformed device string, or a name that is not a string.
    """
    return _placed(_spec_of(device_name))
