"""``tensorflow.python.ipu.distributed``: distributed training with PopDist and PopRun on the
emulator's one instance: the Horovod-style functions (``init``, ``size``, ``rank``,
``allreduce``, ``broadcast``, ... as ``ipu.horovod``), ``popdist_strategy.PopDistStrategy``
and ``host_collective_ops``."""

from ..horovod import (Adasum, Average, Sum, allgather, allreduce, broadcast,
                       broadcast_global_variables, broadcast_variables, ddl_built, gloo_built,
                       gloo_enabled, init, is_homogeneous, is_initialized, local_rank,
                       local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built,
                       rank, shutdown, size)
from . import host_collective_ops, popdist_strategy

__all__ = ["Adasum", "Average", "Sum", "allgather", "allreduce", "broadcast",
           "broadcast_global_variables", "broadcast_variables", "ddl_built", "gloo_built",
           "gloo_enabled", "host_collective_ops", "init", "is_homogeneous", "is_initialized",
           "local_rank", "local_size", "mpi_built", "mpi_enabled", "mpi_threads_supported",
           "nccl_built", "popdist_strategy", "rank", "shutdown", "size"]
