"""``tensorflow.python.ipu.distributed.host_collective_ops``: collectives between the popdist
instances, run on the host (``broadcast`` from instance 0, ``all_reduce`` with a
``tf.distribute.ReduceOp``). The emulator runs one instance: ``broadcast`` is the value,
``all_reduce`` the value (SUM and MEAN over one instance). With several instances launched
they raise RuntimeError (``ipu.horovod``'s module docstring)."""

from __future__ import annotations

from ... import popdist as _popdist

__all__ = ["all_reduce", "broadcast"]


def _over_instances(op: str, value):
    import ipu_gpu as _tf

    if _popdist.getNumInstances() > 1:
        raise RuntimeError(f"popdist {op}: {_popdist.getNumInstances()} instances were "
                           f"launched, but the emulator runs one process: the other "
                           f"instances' values cannot be reached")
    return _tf.identity(value)


def broadcast(value, root_rank=0, tensor_name=None):
    """``value`` of instance ``root_rank`` on every instance.

    Raises:
      ValueError: ``root_rank`` is not an instance index."""
    if not 0 <= int(root_rank) < _popdist.getNumInstances():
        raise ValueError(f"broadcast: root_rank must be in [0, {_popdist.getNumInstances()}),"
                         f" got {root_rank}")
    return _over_instances("broadcast", value)


def all_reduce(value, reduce_op, tensor_name=None):
    """``value`` reduced over the instances with ``reduce_op`` (a ``tf.distribute.ReduceOp``:
    SUM or MEAN).

    Raises:
      ValueError: another reduce_op."""
    from ... import distribute

    distribute._reduce_op(reduce_op)  # SUM or MEAN: over one instance, the value
    return _over_instances("all_reduce", value)
