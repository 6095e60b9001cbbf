"""``tf.compat.v1.metrics``: streaming ``mean`` and the metrics built on it (``accuracy``,
``mean_squared_error``, ``mean_absolute_error``, ``root_mean_squared_error``); precision,
recall, auc and the confusion counts are in ``metrics_classification.py``.

Each returns ``(value, update_op)`` as TF 1.15 builds them in a graph: ``mean`` opens the
variable scope ``name`` (default ``mean``, made unique) holding two float32 local variables
``total`` and ``count`` (collections LOCAL_VARIABLES and METRIC_VARIABLES, zeroed by
``local_variables_initializer()``); ``update_op`` (``<scope>/update_op``) adds the batch's
(weighted) sum and count and gives the updated mean, ``value`` (``<scope>/value``) reads
``total / count`` (0 while the count is 0). ``metrics_collections``/``updates_collections``
receive the value and the update op."""

from __future__ import annotations

import ipu_gpu as _core

from .metrics_classification import _collect, _graph_mode, _metric_variable, _name

__all__ = ["accuracy", "auc", "false_negatives", "false_positives", "mean",
           "mean_absolute_error", "mean_squared_error", "precision", "recall",
           "root_mean_squared_error", "true_negatives", "true_positives"]

LOCAL_VARIABLES = "local_variables"


def _div_no_nan(a, b, name):
    b = _core.maximum(b, 0.0)
    return _name(_core.where(_core.greater(b, 0.0), a / _core.where(_core.greater(b, 0.0),
                                                                    b, 1.0), 0.0), name)


def mean(values, weights=None, metrics_collections=None, updates_collections=None,
         name=None):
    """The running (weighted) mean of ``values``: ``(mean, update_op)``.

    Raises:
      RuntimeError: called eagerly (TF's message)."""
    _graph_mode("mean")
    from .variable_scope import variable_scope

    with variable_scope(name, default_name="mean"):
        values = _core.cast(values, _core.float32)
        total, count = _metric_variable([], "total"), _metric_variable([], "count")
        if weights is None:
            num_values = _core.cast(_core.size(values), _core.float32)
        else:
            w = _core.cast(weights, _core.float32) * _core.ones_like(values)
            values = values * w
            num_values = _core.reduce_sum(w)
        update_total = total.assign_add(_core.reduce_sum(values))
        update_count = count.assign_add(num_values)
        value = _div_no_nan(_core.identity(total), _core.identity(count), "value")
        update = _div_no_nan(update_total, update_count, "update_op")
        _collect(value, update, metrics_collections, updates_collections)
        return value, update


def _squeezable(predictions, labels):
    """TF's ``remove_squeezable_dimensions`` ([batch, 1] labels against [batch] predictions)
    on tensors of known rank."""
    def dims(x):
        try:
            return [None if d is None else int(d) for d in x.shape]
        except (AttributeError, TypeError, ValueError):  # no shape, or an unknown rank
            return None

    p, lab = dims(predictions), dims(labels)
    if p is not None and lab is not None:
        if len(p) == len(lab) + 1 and p[-1] == 1:
            predictions = _core.squeeze(predictions, [-1])
        elif len(lab) == len(p) + 1 and lab[-1] == 1:
            labels = _core.squeeze(labels, [-1])
    return predictions, labels


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The running fraction of ``predictions`` equal to ``labels``: ``(accuracy,
    update_op)``."""
    _graph_mode("accuracy")
    predictions, labels = _squeezable(predictions, labels)
    predictions = _core.cast(predictions, labels.dtype) \
        if hasattr(labels, "dtype") and getattr(predictions, "dtype", None) != labels.dtype \
        else predictions
    hits = _core.cast(_core.equal(predictions, labels), _core.float32)
    return mean(hits, weights, metrics_collections, updates_collections,
                name=name or "accuracy")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """The running mean of ``(predictions - labels)²``: ``(mse, update_op)``."""
    _graph_mode("mean_squared_error")
    diff = _core.cast(predictions, _core.float32) - _core.cast(labels, _core.float32)
    return mean(diff * diff, weights, metrics_collections, updates_collections,
                name=name or "mean_squared_error")


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The running mean of ``|predictions - labels|``: ``(mae, update_op)``."""
    _graph_mode("mean_absolute_error")
    diff = _core.cast(predictions, _core.float32) - _core.cast(labels, _core.float32)
    return mean(_core.abs(diff), weights, metrics_collections, updates_collections,
                name=name or "mean_absolute_error")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """The square root of the running mean squared error: ``(rmse, update_op)``."""
    _graph_mode("root_mean_squared_error")
    mse, update_mse = mean_squared_error(labels, predictions, weights,
                                         name=name or "root_mean_squared_error")
    value, update = _core.sqrt(mse), _core.sqrt(update_mse)
    _collect(value, update, metrics_collections, updates_collections)
    return value, update


from .metrics_classification import (auc, false_negatives, false_positives,  # noqa: E402
                                     precision, recall, true_negatives, true_positives)
