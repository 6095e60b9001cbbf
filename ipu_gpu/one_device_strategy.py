"""``tf.distribute.OneDeviceStrategy``: everything in its scope, and every ``run``, placed
on one device; one replica, so reductions and all-reduces return their value.

As TF: the device string is parsed and completed (``"/cpu:0"`` is
``/job:localhost/replica:0/task:0/device:CPU:0``, the ``worker_devices`` and
``parameter_devices``); ``run`` calls the function under ``tf.device`` of it, in a replica
context whose ``replica_id_in_sync_group`` is an int32 Tensor 0; the distributed dataset
yields the dataset's elements. What placing on a device does in the emulator is
``tf.device``'s (``device.py``: a GPU is accepted, TF's soft placement)."""

from __future__ import annotations

from . import distribute
from .device import DeviceSpec, device

__all__ = ["OneDeviceStrategy"]


def _canonical(name) -> str:
    if not isinstance(name, str):
        raise AttributeError(f"'{type(name).__name__}' object has no attribute 'split'")
    spec = DeviceSpec.from_string(name)
    return (f"/job:{spec.job or 'localhost'}/replica:{spec.replica or 0}/task:{spec.task or 0}"
            f"/device:{spec.device_type or 'CPU'}:{spec.device_index or 0}")


class _OneDeviceExtended(distribute.StrategyExtended):
    def __init__(self, container_strategy, device_name: str):
        super().__init__(container_strategy)
        self._device = device_name

    def _call_for_each_replica(self, fn, args, kwargs):
        with device(self._device), distribute.ReplicaContext(self._container_strategy(), 0):
            return fn(*args, **kwargs)

    def _reduce_to(self, reduce_op, value):
        return value  # one replica

    @property
    def worker_devices(self) -> tuple:
        return (self._device,)


class OneDeviceStrategy(distribute.Strategy):
    """A distribution strategy for running on a single device (``device``: a device string
    such as ``"/cpu:0"`` or ``"/gpu:0"``).

    Raises:
      ValueError: a device string TF cannot parse."""

    def __init__(self, device):
        super().__init__(_OneDeviceExtended(self, _canonical(device)))

    def scope(self):
        """The strategy's scope: variables and ops made in it are placed on the device."""
        import contextlib

        stack = contextlib.ExitStack()
        stack.enter_context(super().scope())
        stack.enter_context(device(self._extended._device))
        return stack
