"""``tensorflow.python.ipu.horovod.popdist_strategy``: the TF 1 ``PopDistStrategy`` (and its
deprecated names ``IPUMultiReplicaStrategy``/``IPUMultiReplicaStrategyV1``), on Horovod:
``ipu.distributed.popdist_strategy.PopDistStrategy`` whose host reductions and broadcasts are
Horovod's (``ipu.horovod``), so ``hvd.init()`` must come first (Graphcore's constructor calls
``size()``: Horovod's ValueError otherwise). Keras extensions are off, as in Graphcore's TF 1
strategy."""

from __future__ import annotations

from ... import distribute
from .. import horovod as _hvd
from ..distributed.popdist_strategy import PopDistExtendedV1 as _Extended
from ..distributed.popdist_strategy import PopDistStrategy as _PopDistStrategy

__all__ = ["IPUMultiReplicaStrategy", "IPUMultiReplicaStrategyV1", "PopDistExtendedV1",
           "PopDistStrategy"]


class PopDistExtendedV1(_Extended):
    """The strategy's implementation: host collectives through Horovod."""

    def __init__(self, container_strategy, ipu_device, add_ipu_cross_replica_reductions):
        super().__init__(container_strategy, ipu_device, add_ipu_cross_replica_reductions)
        self._num_workers = _hvd.size()

    def _host_all_reduce(self, reduce_op, value):
        op = _hvd.Sum if reduce_op is distribute.ReduceOp.SUM else _hvd.Average
        return _hvd.allreduce(value, op=op)

    def _broadcast_implementation(self, initial_value, device="/device:CPU:0"):
        if "CPU" not in str(device).upper():
            raise RuntimeError(f"Can only broadcast on CPU, but got device {device}")
        return _hvd.broadcast(initial_value, root_rank=0)


class PopDistStrategy(_PopDistStrategy):
    """This is a distribution strategy for multi-replica distribution that uses compiled
    communications with GCL for reductions over IPU links and gateway links, while using
    Horovod for broadcasting of the initial values of variables to all processes, or when a
    reduction is requested with a CPU as the current device.

    This is the recommended distribution strategy when using PopDist and PopRun. The GCL
    reductions will then be performed across all the global replicas in the application.

    Raises:
      ValueError: Horovod is not initialized (``hvd.init()``).
    """

    def __init__(self, ipu_device="/device:IPU:0", add_ipu_cross_replica_reductions=True):
        super().__init__(ipu_device, add_ipu_cross_replica_reductions,
                         enable_keras_extensions=False)

    def _make_extended(self, ipu_device, add_ipu_cross_replica_reductions):
        return PopDistExtendedV1(self, ipu_device, add_ipu_cross_replica_reductions)

    def update_ipu_config(self, config):
        """Update the given IPU configuration with the multi-replica distribution options
        (this Horovod rank among ``size()`` processes); returns it."""
        mrd = config.experimental.multi_replica_distribution
        mrd.process_count = _hvd.size()
        mrd.process_index = _hvd.rank()
        return config


# the deprecated names (Graphcore's deprecated_alias)
IPUMultiReplicaStrategy = PopDistStrategy
IPUMultiReplicaStrategyV1 = PopDistStrategy
