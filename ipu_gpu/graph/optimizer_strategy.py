"""What TF 1.15's ``tf.train.Optimizer`` does under a ``tf.distribute`` strategy, shared by
the built-in optimizers and ``Optimizer`` subclasses.

``compute_gradients`` scales the loss by ``1 / num_replicas_in_sync`` when that is above 1
(``_scale_loss``, a MEAN loss reduction); ``apply_gradients`` in a replica context sums the
gradients over the replicas (``merge_call`` of ``_distributed_apply``:
``batch_reduce_to(SUM)``), which Graphcore's ``IPUStrategy`` makes a ``cross_replica_sum``
on the IPU with ``num_replicas_in_sync == 1``: R replicas' gradients are summed, not
averaged. Outside a strategy nothing changes (``ipu.optimizers.CrossReplicaOptimizer``
averages explicitly).
"""

from __future__ import annotations

__all__ = ["all_reduce_gradients", "eager_gradients", "scale_loss"]


def _replica_context():
    """The replica context of a non-default strategy, or None."""
    from .. import distribute

    if not distribute.has_strategy():
        return None
    return distribute.get_replica_context()


def scale_loss(loss):
    """``loss / num_replicas_in_sync`` under a strategy with several replicas in sync."""
    from .. import distribute

    if not distribute.has_strategy():
        return loss
    replicas = distribute.get_strategy().num_replicas_in_sync
    return loss * (1.0 / replicas) if replicas > 1 else loss


def all_reduce_gradients(pairs) -> list:
    """[(gradient, variable)] with every gradient summed over the replicas, in a replica
    context of a strategy; ``pairs`` unchanged elsewhere."""
    context = _replica_context()
    if context is None:
        return pairs
    from ..core.convert import convert_to_tensor
    from ..core.indexed_slices import IndexedSlices

    grads = [convert_to_tensor(g) if isinstance(g, IndexedSlices) else g for g, _ in pairs]
    reduced = context.all_reduce("sum", grads)
    return list(zip(reduced, [v for _, v in pairs]))


def eager_gradients(loss, var_list, grad_loss) -> list:
    """TF 1.15's ``compute_gradients`` executing eagerly: [(gradient, variable)] of the
    callable ``loss`` (scaled as ``scale_loss``) on a tape, for ``var_list`` (default: the
    variables it read).

    Raises:
      RuntimeError: ``loss`` is not callable (TF's message).
      ValueError: no variables to optimize (TF's message)."""
    from ..core.tape import GradientTape

    if not callable(loss):
        raise RuntimeError("`loss` passed to Optimizer.compute_gradients should be a "
                           "function when eager execution is enabled.")
    with GradientTape() as tape:
        if var_list is not None:
            tape.watch(list(var_list))
        value = scale_loss(loss())
    var_list = list(tape.watched_variables() if var_list is None else var_list)
    if not var_list:
        raise ValueError("No variables to optimize.")
    return list(zip(tape.gradient(value, var_list, output_gradients=grad_loss), var_list))
