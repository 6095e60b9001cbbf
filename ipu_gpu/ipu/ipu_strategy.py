"""``tensorflow.python.ipu.ipu_strategy``: the distribution strategy for one IPU device.

``IPUStrategyV1().run(fn, args)`` runs ``fn`` as one program on the emulated device named by
``ipu_device`` (``emulation/engine.py``: every replica of the device in its own execution
context, each inside ``ReplicaContext(strategy, replica_id_in_sync_group=0)``) and returns
replica 0's outputs, as Graphcore's ``IPUExtendedV1._call_for_each_replica`` compiles ``fn``
for the IPU device and the host receives replica 0's values. As in Graphcore's strategy the
replicated program is one TensorFlow replica: ``num_replicas_in_sync`` is 1, and a replica
context's ``all_reduce`` inside the program is ``cross_replica_sum``/``cross_replica_mean``
over the IPU replicas (``distribute.StrategyExtended._reduce_to``), the identity on the host.

Keras models built or trained in ``scope()`` run ``fit``/``evaluate``/``predict`` through
this strategy (``keras/engine/training.py``): ``steps_per_execution`` steps per program.

Differences: ``run`` accepts plain Python functions (Graphcore refuses them in eager mode:
"does not support eager execution", but the emulator cannot tell a call made inside a
``tf.function`` from one that is not); variables need no placement.
"""

from __future__ import annotations

from .. import distribute
from ..core import nest
from ..core.tensor import Tensor

__all__ = ["IPUExtendedV1", "IPUStrategy", "IPUStrategyV1"]


def _validate_dtypes(tensors, name):
    for t in nest.flatten(tensors):
        if isinstance(t, Tensor) and t.dtype.name == "float64":
            raise TypeError(f"Unsupported data type for {name}: float64")


class IPUExtendedV1(distribute.StrategyExtended):
    """The strategy's implementation (``strategy.extended``)."""

    def __init__(self, container_strategy, ipu_device, cpu_device):
        super().__init__(container_strategy)
        self._ipu_device = ipu_device
        self._cpu_device = cpu_device

    def _device(self):
        from ..emulation import system

        return system.current_system().device(self._ipu_device)

    def _call_for_each_replica(self, fn, args, kwargs, num_shards=1):
        """Run ``fn`` as one program on every replica of the device (a replica takes
        ``num_shards`` IPUs: a sharded or pipelined model's); replica 0's result."""
        from . import program_shards

        strategy = self._container_strategy()

        def replica_fn(*a, **kw):
            with distribute.ReplicaContext(strategy, replica_id_in_sync_group=0):
                return fn(*a, **kw)

        # a pipeline or ipu_shard inside may take more IPUs (program_shards)
        return program_shards.run(self._device(), replica_fn, args, kwargs, key=fn,
                                  at_least=num_shards)

    def non_slot_devices(self, var_list):
        """The device of non-slot variables: the IPU device (TF1 only)."""
        del var_list
        return self._ipu_device

    @property
    def worker_devices(self) -> tuple:
        return (self._ipu_device,)

    @property
    def parameter_devices(self) -> tuple:
        return (self._ipu_device,)

    def _in_multi_worker_mode(self) -> bool:
        return False


class IPUStrategyV1(distribute.Strategy):
    """This is a distribution strategy for targeting a system with one or more IPUs.

    Creating variables and Keras models within the scope of the IPUStrategyV1 makes them
    run on the IPU; a function is executed on the IPU by calling it from ``run``.

    Args:
      ipu_device: The TensorFlow device representing the IPUs.
      cpu_device: The TensorFlow device for the CPU.
      enable_dataset_iterators: Whether to create IPUStrategy specific dataset iterators
        inside of this strategy scope or whether to use standard dataset iterators.
      enable_keras_extensions: Whether to enable IPU specific Keras extensions (Keras
        ``fit``/``evaluate``/``predict`` as device programs of ``steps_per_execution``
        steps, gradient accumulation, replication).
    """

    def __init__(self, ipu_device="/device:IPU:0", cpu_device="/device:CPU:0",
                 enable_dataset_iterators=True, enable_keras_extensions=True):
        super().__init__(IPUExtendedV1(self, ipu_device, cpu_device))
        self._enable_dataset_iterators = enable_dataset_iterators
        self._enable_keras_extensions = enable_keras_extensions

    def run(self, fn, args=(), kwargs=None, options=None):
        """Invokes ``fn`` on each replica of the IPU device, with the given arguments, in a
        replica context, and returns replica 0's result.

        Raises:
          TypeError: a ``tf.function`` given float64 inputs or returning float64 outputs
            ("Unsupported data type for input: float64"), as Graphcore's check.
          RuntimeError: no IPU system is configured.
        """
        from ..function import ConcreteFunction, Function

        checked = isinstance(fn, (Function, ConcreteFunction))
        if checked:
            _validate_dtypes((args, kwargs), "input")
        result = super().run(fn, args, kwargs, options)
        if checked:
            _validate_dtypes(result, "output")
        return result

    def experimental_run_v2(self, *args, **kwargs):
        """Removed in Graphcore's SDK 2.x and later.

        Raises:
          RuntimeError: always (Graphcore's message).
        """
        raise RuntimeError("`experimental_run_v2` has been deleted. Use `run` instead.")

    @property
    def _device_ordinal(self) -> int:
        from ..emulation import system

        return system.parse_device(self.extended._ipu_device)

    @property
    def supports_loss_scaling(self) -> bool:
        return True


IPUStrategy = IPUStrategyV1  # Graphcore's alias, kept for backwards compatibility
