"""``tf.compat.v1.losses``: the TF1 loss functions (TF 1.15's formulas), added to the graph's
``losses`` collection, and ``get_total_loss`` / ``get_regularization_loss``.

The default reduction, ``SUM_BY_NONZERO_WEIGHTS``, divides the weighted sum by the number of
non-zero weights (every element with the default scalar weight 1: the mean); ``NONE`` keeps
the per-element losses, ``SUM``, ``MEAN`` (weighted sum over the sum of weights) and
``SUM_OVER_BATCH_SIZE`` as TF 1.15 defines them.
"""

from __future__ import annotations

import ipu_gpu as _core

__all__ = ["Reduction", "absolute_difference", "add_loss", "compute_weighted_loss",
           "cosine_distance", "get_losses", "get_regularization_loss",
           "get_regularization_losses", "get_total_loss", "hinge_loss", "huber_loss",
           "log_loss", "mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy",
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
    """Cross-entropy of ``logits`` against class ids ``labels``; labels of the logits' rank
    with a last axis of 1 (``[batch, 1]``) are squeezed first, as TF 1.15 squeezes them."""
    try:
        squeezable = len(labels.shape) == len(logits.shape) and labels.shape[-1] == 1
    except (AttributeError, TypeError, ValueError):  # no shape, or an unknown rank
        squeezable = False
    if squeezable:
        labels = _core.squeeze(labels, [-1])
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


def _pair(labels, predictions, names=("labels", "predictions")):
    """Both as float32, their static shapes checked (TF's messages)."""
    for name, value in zip(names, (labels, predictions)):
        if value is None:
            raise ValueError(f"{name} must not be None.")
    labels = _core.cast(labels, _core.float32)
    predictions = _core.cast(predictions, _core.float32)
    p_shape, l_shape = _static_shape(predictions), _static_shape(labels)
    if not p_shape.is_compatible_with(l_shape):
        raise ValueError(f"Shapes {p_shape} and {l_shape} are incompatible")
    return labels, predictions


def _static_shape(t):
    from ...core.spec import TensorShape

    return t.shape if isinstance(t.shape, TensorShape) else TensorShape(list(t.shape))


def absolute_difference(labels, predictions, weights=1.0, scope=None,
                        loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``|predictions - labels|`` reduced."""
    labels, predictions = _pair(labels, predictions)
    return compute_weighted_loss(_core.abs(predictions - labels), weights, scope,
                                 loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    """``1 - sum(labels * predictions, axis)`` (inputs assumed unit-normalized) reduced.

    Raises:
      ValueError: no ``axis`` (nor its old name ``dim``), or both given."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify 'axis'.")
    labels, predictions = _pair(labels, predictions)
    losses = 1.0 - _core.reduce_sum(predictions * labels, axis=(axis,), keepdims=True)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``relu(1 - (2 labels - 1) logits)`` for 0/1 labels, reduced."""
    labels, logits = _pair(labels, logits, ("labels", "logits"))
    losses = _core.nn.relu(1.0 - (2.0 * labels - 1.0) * logits)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``0.5 e²`` for ``|e| <= delta``, ``0.5 delta² + delta (|e| - delta)`` beyond, ``e =
    predictions - labels``, reduced."""
    labels, predictions = _pair(labels, predictions)
    abs_error = _core.abs(predictions - labels)
    quadratic = _core.minimum(abs_error, float(delta))
    linear = abs_error - quadratic
    losses = 0.5 * quadratic * quadratic + float(delta) * linear
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """``-labels log(predictions + epsilon) - (1 - labels) log(1 - predictions + epsilon)``
    reduced."""
    labels, predictions = _pair(labels, predictions)
    losses = (-labels * _core.log(predictions + epsilon)
              - (1.0 - labels) * _core.log(1.0 - predictions + epsilon))
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Sigmoid cross-entropy of ``logits`` against 0/1 labels (smoothed towards 1/2 by
    ``label_smoothing``), reduced."""
    labels, logits = _pair(multi_class_labels, logits, ("multi_class_labels", "logits"))
    if label_smoothing > 0:
        labels = labels * (1.0 - label_smoothing) + 0.5 * label_smoothing
    losses = _core.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def add_loss(loss, loss_collection=LOSSES) -> None:
    """Adds ``loss`` to ``loss_collection`` (nothing eagerly, as TF)."""
    from ... import graph

    if loss_collection and graph.core.building():
        _graph().add_to_collection(loss_collection, loss)


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
