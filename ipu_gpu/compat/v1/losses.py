"""``tf.compat.v1.losses``: the TF1 loss functions, added to the graph's ``losses``
collection, and ``get_total_loss`` / ``get_regularization_loss``.

The default reduction, ``SUM_BY_NONZERO_WEIGHTS``, divides the weighted sum by the number of
non-zero weights (every element with the default scalar weight 1: the mean); ``NONE`` keeps
the per-element losses, ``SUM``, ``MEAN`` (weighted sum over the sum of weights) and
``SUM_OVER_BATCH_SIZE`` as TF 1.15 defines them.
"""

from __future__ import annotations

import ipu_gpu as _core

__all__ = ["Reduction", "get_losses", "get_regularization_loss", "get_regularization_losses",
           "get_total_loss", "mean_squared_error", "softmax_cross_entropy",
           "sparse_softmax_cross_entropy"]

LOSSES = "losses"
REGULARIZATION_LOSSES = "regularization_losses"


class Reduction:
    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)


def _graph():
    from ... import graph

    return graph.get_default_graph()


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``losses * weights`` reduced by ``reduction``, added to ``loss_collection``."""
    if reduction not in Reduction.all():
        raise ValueError(f"Invalid Reduction Key {reduction}.")
    losses = _core.cast(losses, _core.float32)
    w = _core.cast(_core.convert_to_tensor(weights) if not hasattr(weights, "dtype")
                   else weights, _core.float32)
    weighted = losses * w
    if reduction == Reduction.NONE:
        loss = weighted
    else:
        total = _core.reduce_sum(weighted)
        if reduction == Reduction.SUM:
            loss = total
        elif reduction == Reduction.MEAN:
            loss = total / _core.reduce_sum(w * _core.ones_like(losses))
        elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
            loss = total / _core.cast(_core.size(losses), _core.float32)
        else:
            nonzero = _core.reduce_sum(_core.cast(_core.not_equal(
                w * _core.ones_like(losses), 0.0), _core.float32))
            loss = total / _core.maximum(nonzero, 1.0)
    if loss_collection:
        _graph().add_to_collection(loss_collection, loss)
    return loss


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Cross-entropy of ``logits`` against class ids ``labels``."""
    losses = _core.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Cross-entropy of ``logits`` against one-hot (optionally smoothed) labels."""
    labels = _core.cast(onehot_labels, logits.dtype)
    if label_smoothing:
        n = float(labels.shape[-1])
        labels = labels * (1.0 - label_smoothing) + label_smoothing / n
    losses = _core.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``(predictions - labels)²`` reduced."""
    losses = _core.square(_core.cast(predictions, _core.float32)
                          - _core.cast(labels, _core.float32))
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _sum(tensors):
    total = tensors[0]
    for t in tensors[1:]:
        total = total + t
    return total


def get_losses(scope=None, loss_collection=LOSSES) -> list:
    return _graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope=None) -> list:
    return _graph().get_collection(REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    losses = get_regularization_losses(scope)
    return _sum(losses) if losses else _core.constant(0.0)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the collected losses (and regularization losses).

    Raises:
      ValueError: no losses were collected (TF's message)."""
    losses = get_losses(scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope)
    if not losses:
        raise ValueError("No losses found in collection.")
    return _sum(losses)
