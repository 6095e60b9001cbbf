"""``tensorflow.python.ipu.horovod.ipu_horovod_strategy``: ``IPUHorovodStrategy``, the
multi-worker strategy on Horovod (Graphcore's ``IPUMultiWorkerExtended`` with Horovod's
cluster), on the emulator's one process. Every reduction is across the workers on the host
(inside an IPU program it escapes to the host, as Graphcore's ``outside_compilation_scope``):
over one worker each replica keeps its own value, there is no cross-replica sum on the IPU,
and ``num_replicas_in_sync`` is ``hvd.size()``. ``variables_on_host`` is kept (variables
live on the host either way here)."""

from __future__ import annotations

from .. import horovod as _hvd
from .popdist_strategy import PopDistExtendedV1, PopDistStrategy

__all__ = ["IPUHorovodStrategy"]


class _IPUHorovodExtended(PopDistExtendedV1):
    @property
    def _num_replicas_in_sync(self) -> int:
        return _hvd.size()

    def _reduce_to(self, reduce_op, value):
        return self._host_all_reduce(reduce_op, value)


class IPUHorovodStrategy(PopDistStrategy):
    """This is a distribution strategy using Horovod.

    Usage is very similar to the IPUMultiWorkerStrategy: there is no cluster_resolver
    argument, as Horovod's built-in cluster discovery is used, and no tf.distribute.Server.

    Args:
      ipu_device: The TensorFlow device representing the IPUs.
      variables_on_host: Whether variables are placed on the host.

    Raises:
      ValueError: Horovod is not initialized (``hvd.init()``).
    """

    def __init__(self, ipu_device="/device:IPU:0", variables_on_host=False):
        super().__init__(ipu_device, add_ipu_cross_replica_reductions=False)
        self._variables_on_host = variables_on_host

    def _make_extended(self, ipu_device, add_ipu_cross_replica_reductions):
        return _IPUHorovodExtended(self, ipu_device, add_ipu_cross_replica_reductions)
