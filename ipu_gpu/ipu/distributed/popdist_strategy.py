"""``tensorflow.python.ipu.distributed.popdist_strategy``: ``PopDistStrategy``, the strategy
for programs launched with PopRun, on the emulator's one instance.

As Graphcore's (``distributed/popdist_strategy.py``): a program runs on the IPU device in a
replica context with ``replica_id_in_sync_group`` 0, compiled as one program for the
instance's local replicas; ``num_replicas_in_sync`` is ``popdist.getNumTotalReplicas()``;
a reduction on the IPU is ``cross_replica_sum``/``cross_replica_mean`` over the replicas
(the identity with ``add_ipu_cross_replica_reductions=False``; ReduceOps other than SUM and
MEAN: ValueError), and on the host a reduction over the instances
(``host_collective_ops.all_reduce``: one instance, the value itself); initial values of
variables are broadcast from instance 0 (one instance: unchanged). Keras
``fit``/``evaluate``/``predict`` in its scope run as under ``IPUStrategy``.

With one instance and its local replicas this is ``IPUStrategy`` with those differences:
``num_replicas_in_sync``, ``reduce`` (which all-reduces in the cross-replica context, also
with ``axis=None``), and ``experimental_run_v2``, an alias of ``run`` as in every TF
``StrategyV1``. ``run`` called while a program is being traced or running (inside
``ipu_compiler.compile``, a TF1 graph, or an IPU program) calls the function there, in a
replica context, as Graphcore's ``_call_for_each_replica`` does; called eagerly from the host
it runs the function as one program on the device, as ``IPUStrategy.run``.

Keras ``fit`` divides the loss by ``num_replicas_in_sync`` (Keras's
``scale_loss_for_distribution``), so the replicas' summed gradients are their mean, where under
``IPUStrategy`` (``num_replicas_in_sync`` 1) they stay summed: Graphcore's own
``keras/ipu/distributed_test.py`` moves ``w`` by ``lr * x`` for a loss ``w * x`` on every
replica.
"""

from __future__ import annotations

from ... import distribute
from ... import popdist as _popdist
from ...core import nest
from ..ipu_strategy import IPUExtendedV1, IPUStrategyV1
from . import host_collective_ops

__all__ = ["PopDistExtendedV1", "PopDistStrategy"]


def _inside_program() -> bool:
    """Inside a traced or running program: a TF1 graph being built or an IPU replica."""
    from ...emulation import context
    from ...graph import core as graph_core

    return context.current() is not None or graph_core.building()


class PopDistExtendedV1(IPUExtendedV1):
    """The strategy's implementation (``strategy.extended``)."""

    def __init__(self, container_strategy, ipu_device, add_ipu_cross_replica_reductions):
        super().__init__(container_strategy, ipu_device, "/device:CPU:0")
        self._num_workers = _popdist.getNumInstances()
        self._add_ipu_cross_replica_reductions = add_ipu_cross_replica_reductions

    @property
    def _num_replicas_in_sync(self) -> int:
        return _popdist.getNumTotalReplicas()

    def _host_all_reduce(self, reduce_op, value):
        return host_collective_ops.all_reduce(value, reduce_op)

    def _reduce_to(self, reduce_op, value):
        if not distribute._on_ipu():
            return self._host_all_reduce(reduce_op, value)
        if not self._add_ipu_cross_replica_reductions:
            return value
        if reduce_op not in (distribute.ReduceOp.SUM, distribute.ReduceOp.MEAN):
            raise ValueError(f"Unsupported reduce op: {reduce_op}")
        return super()._reduce_to(reduce_op, value)

    def _call_for_each_replica(self, fn, args, kwargs, num_shards=1):
        if _inside_program():
            with distribute.ReplicaContext(self._container_strategy(),
                                           replica_id_in_sync_group=0):
                return fn(*args, **kwargs)
        return super()._call_for_each_replica(fn, args, kwargs, num_shards)

    def _broadcast_implementation(self, initial_value, device="/device:CPU:0"):
        """The initial value of a variable, broadcast from instance 0 on the host.

        Raises:
          RuntimeError: a device other than a CPU (Graphcore's message)."""
        if "CPU" not in str(device).upper():
            raise RuntimeError(f"Can only broadcast on CPU, but got device {device}")
        return host_collective_ops.broadcast(initial_value)


class PopDistStrategy(IPUStrategyV1):
    """This is a distribution strategy for multi-replica distribution that uses compiled
    communications with GCL for reductions over IPU-Links and GW-Links, across all the
    global replicas in the application. This is the recommended distribution strategy when
    using PopDist and PopRun.

    PopDist is used for host communication, for example when broadcasting initial values of
    variables to all processes. Another example is when a reduction is requested with a CPU
    as the current device.

    Args:
      ipu_device: The TensorFlow device representing the IPUs.
      add_ipu_cross_replica_reductions: Whether reductions on the IPU are across the
        replicas (``cross_replica_sum``/``cross_replica_mean``); False leaves each replica's
        value.
      enable_dataset_iterators: As ``IPUStrategy``'s.
      enable_keras_extensions: As ``IPUStrategy``'s: Keras ``fit``/``evaluate``/``predict``
        as device programs.
    """

    def __init__(self, ipu_device="/device:IPU:0", add_ipu_cross_replica_reductions=True,
                 enable_dataset_iterators=True, enable_keras_extensions=True):
        _popdist.init()
        distribute.Strategy.__init__(
            self, self._make_extended(ipu_device, add_ipu_cross_replica_reductions))
        self._enable_dataset_iterators = enable_dataset_iterators
        self._enable_keras_extensions = enable_keras_extensions

    def _make_extended(self, ipu_device, add_ipu_cross_replica_reductions):
        return PopDistExtendedV1(self, ipu_device, add_ipu_cross_replica_reductions)

    def update_ipu_config(self, config):
        """Update the given IPU configuration with the multi-replica distribution options
        (``experimental.multi_replica_distribution.process_count``/``process_index``: this
        instance among the popdist instances).

        Args:
          config: The IPUConfig instance to update.

        Returns:
          The IPUConfig instance.
        """
        mrd = config.experimental.multi_replica_distribution
        mrd.process_count = _popdist.getNumInstances()
        mrd.process_index = _popdist.getInstanceIndex()
        return config

    def experimental_run_v2(self, fn, args=(), kwargs=None, options=None):
        """``run`` under its TF 1 name (``StrategyV1.experimental_run_v2``)."""
        return self.run(fn, args, kwargs, options)

    def reduce(self, reduce_op, value, axis=None):
        """Reduce ``value`` across replicas: along ``axis`` first when given (SUM:
        ``reduce_sum``, MEAN: ``reduce_mean``), then across the replicas (on the IPU) or the
        instances (on the host).

        Raises:
          ValueError: a ReduceOp other than SUM and MEAN, on the IPU (Graphcore's message).
        """
        op = distribute._reduce_op(reduce_op)
        if isinstance(value, (list, tuple)):  # one tensor, as TF's reduce_to converts it
            value = distribute.as_tensor(value)
        value = distribute.Strategy.reduce(self, op, value, axis)
        return nest.map_structure(
            lambda v: self.extended._reduce_to(op, distribute.as_tensor(v)), value)
