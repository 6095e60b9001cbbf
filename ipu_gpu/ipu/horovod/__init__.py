"""``tensorflow.python.ipu.horovod``: Graphcore's Horovod build, for one emulated instance.

The emulator is one process: Horovod's world is the instances ``popdist`` reports (one unless
poprun's environment says otherwise; ``ipu_gpu/popdist``). ``init()`` must come first, as in
Horovod (``size()``/``rank()`` before it raise Horovod's ValueError). The collectives combine
a value over the instances: with one instance ``allreduce`` with ``Sum`` is the value,
``Average`` the value divided by ``size()`` (so an integer tensor averages to float64, as
Horovod's ``summed / size`` does), ``allgather`` and ``broadcast`` the value. They are plain
ops, so they run eagerly and as nodes of a TF1 graph.

Differences, decided here: a collective with more than one instance raises RuntimeError (the
other instances' values are in processes this emulator does not run); ``mpi_*``, ``gloo_*``,
``nccl_built``, ``ddl_built`` say False (no MPI library is behind it); ``local_size()`` is 1
and ``local_rank()`` 0 (one process on this host).
"""

from __future__ import annotations

import enum
import re

from ... import popdist as _popdist

__all__ = ["Adasum", "Average", "Sum", "allgather", "allreduce", "broadcast",
           "broadcast_global_variables", "broadcast_variables", "ddl_built", "gloo_built",
           "gloo_enabled", "init", "is_homogeneous", "is_initialized", "local_rank",
           "local_size", "mpi_built", "mpi_enabled", "mpi_threads_supported", "nccl_built",
           "rank", "shutdown", "size"]


class _ReduceOp(enum.IntEnum):
    AVERAGE = 0
    SUM = 1
    ADASUM = 2


Average = _ReduceOp.AVERAGE
Sum = _ReduceOp.SUM
Adasum = _ReduceOp.ADASUM

_STATE = {"initialized": False}


def init(comm=None) -> None:
    """A function that initializes Horovod (``comm`` is accepted: one process)."""
    del comm
    _popdist.init()
    _STATE["initialized"] = True


def shutdown() -> None:
    """A function that shuts Horovod down."""
    _STATE["initialized"] = False


def is_initialized() -> bool:
    """Whether ``init()`` has been called (and not ``shutdown()``)."""
    return _STATE["initialized"]


def _check_initialized() -> None:
    if not _STATE["initialized"]:
        raise ValueError("Horovod has not been initialized; use hvd.init().")


def size() -> int:
    """The number of Horovod processes: the popdist instances.

    Raises:
      ValueError: before ``init()`` (Horovod's message)."""
    _check_initialized()
    return _popdist.getNumInstances()


def rank() -> int:
    """The Horovod rank of this process: its popdist instance index.

    Raises:
      ValueError: before ``init()``."""
    _check_initialized()
    return _popdist.getInstanceIndex()


def local_size() -> int:
    """The number of Horovod processes on this host (1).

    Raises:
      ValueError: before ``init()``."""
    _check_initialized()
    return 1


def local_rank() -> int:
    """The local Horovod rank of this process (0).

    Raises:
      ValueError: before ``init()``."""
    _check_initialized()
    return 0


def is_homogeneous() -> bool:
    """Whether every host runs the same number of processes (one host: True)."""
    _check_initialized()
    return True


def mpi_threads_supported() -> bool:
    _check_initialized()
    return False


def mpi_enabled() -> bool:
    return False


def mpi_built() -> bool:
    return False


def gloo_enabled() -> bool:
    return False


def gloo_built() -> bool:
    return False


def nccl_built() -> bool:
    return False


def ddl_built() -> bool:
    return False


def _normalize_name(name) -> str:
    """Normalizes operation name to TensorFlow rules."""
    return re.sub("[^a-zA-Z0-9_]", "_", name)


def _over_instances(op: str, tensor, name=None):
    """``tensor`` combined over the instances: this one's own value (a new tensor)."""
    _check_initialized()
    if _popdist.getNumInstances() > 1:
        raise RuntimeError(f"horovod {op}: {_popdist.getNumInstances()} instances were "
                           f"launched, but the emulator runs one process: the other "
                           f"instances' values cannot be reached")
    import ipu_gpu as _tf

    return _tf.identity(tensor, name=name)


def _allreduce(tensor, name=None, op=Sum):
    """An op which reduces an input tensor over all the Horovod processes (a sum)."""
    return _over_instances("allreduce", tensor, name=name)


def allreduce(tensor, op=None):
    """Perform an allreduce on a tf.Tensor or tf.IndexedSlices.

    If the input is a tf.IndexedSlices, the values and indices are allgathered instead.

    Args:
      tensor: tf.Tensor, tf.Variable, or tf.IndexedSlices to reduce. The shape of the input
        must be identical across all ranks.
      op: The reduction operation to combine tensors across different ranks. Defaults to
        Average if None is given.

    Returns:
      A tensor of the same shape and type as `tensor`, summed (averaged) across all
      processes.

    Raises:
      NotImplementedError: ``op`` is ``Adasum`` (Graphcore's message).
      ValueError: before ``init()``.
    """
    import ipu_gpu as _tf
    from ...core.indexed_slices import IndexedSlices

    if op == Adasum:
        raise NotImplementedError("The Adasum reduction is not implemented.")
    if op is None:
        op = Average
    if isinstance(tensor, IndexedSlices):
        values = allgather(tensor.values)
        indices = allgather(tensor.indices)
        if op == Average:
            values = values / _tf.cast(size(), values.dtype)
        return IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    summed = _allreduce(tensor, op=Sum)
    if op == Average:
        return summed / _tf.cast(size(), dtype=summed.dtype)
    return summed


def allgather(tensor, name=None):
    """An op which concatenates the input tensor with the same input tensor on all other
    Horovod processes, on dimension zero (one process: the tensor itself)."""
    return _over_instances("allgather", tensor, name=name)


def broadcast(tensor, root_rank, name=None):
    """An op which broadcasts the input tensor on root rank to the same input tensor on all
    other Horovod processes.

    Raises:
      ValueError: ``root_rank`` is not a rank (0 <= root_rank < size()).
    """
    _check_initialized()
    if not 0 <= int(root_rank) < size():
        raise ValueError(f"broadcast: root_rank must be in [0, {size()}), got {root_rank}")
    return _over_instances("broadcast", tensor, name=name)


def broadcast_variables(variables, root_rank):
    """Broadcasts variables from root rank to all other processes: assigns each variable
    the root rank's value (an op grouping the assignments in a graph; None eagerly)."""
    import ipu_gpu.compat.v1 as _v1

    if _v1.executing_eagerly():
        for var in variables:
            var.assign(broadcast(var, root_rank))
        return None
    return _v1.group(*[_v1.assign(var, broadcast(var, root_rank)) for var in variables])


def broadcast_global_variables(root_rank):
    """Broadcasts all global variables from root rank to all other processes (graph mode).

    Raises:
      RuntimeError: executing eagerly (Horovod's message).
    """
    import ipu_gpu.compat.v1 as _v1

    if _v1.executing_eagerly():
        raise RuntimeError("hvd.broadcast_global_variables() does not support eager execution. "
                           "Please use `hvd.broadcast_variables(<model/optimizer variables>)` "
                           "instead.")
    return broadcast_variables(_v1.global_variables(), root_rank)
