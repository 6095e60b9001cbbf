"""``tf.compat.v1.metrics``: streaming ``accuracy`` and ``mean`` (precision, recall, auc and
the confusion counts are in ``metrics_classification.py``). Each returns
``(value, update_op)``: ``update_op`` adds the batch into two local variables (``total``,
``count``, in the graph's ``local_variables`` collection, which
``local_variables_initializer()`` zeroes) and gives the updated value; ``value`` reads the
running ``total / count`` (0 before any update), as TF 1.15."""

from __future__ import annotations

import numpy as np

import ipu_gpu as _core

__all__ = ["accuracy", "auc", "false_negatives", "false_positives", "mean", "precision",
           "recall", "true_negatives", "true_positives"]

LOCAL_VARIABLES = "local_variables"


def _local(name):
    from ... import graph

    g = graph.get_default_graph()
    var = graph.make_variable(np.zeros((), np.float32), trainable=False, name=name)
    collections = g._collections
    for key in ("variables", "trainable_variables"):  # local: not global nor trainable
        if var in collections.get(key, []):
            collections[key].remove(var)
    g.add_to_collection(LOCAL_VARIABLES, var)
    return var


def mean(values, weights=None, metrics_collections=None, updates_collections=None,
         name=None):
    """The running (weighted) mean of ``values``: ``(mean, update_op)``."""
    scope = name or "mean"
    total, count = _local(f"{scope}/total"), _local(f"{scope}/count")
    values = _core.cast(values, _core.float32)
    w = _core.ones_like(values) if weights is None else _core.cast(weights, _core.float32) \
        * _core.ones_like(values)
    update_total = total.assign_add(_core.reduce_sum(values * w))
    update_count = count.assign_add(_core.reduce_sum(w))
    value = _safe_div(total.read_value(), count.read_value())
    update = _safe_div(update_total, update_count)
    return value, update


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The running fraction of ``predictions`` equal to ``labels``: ``(accuracy,
    update_op)``."""
    hits = _core.cast(_core.equal(_core.cast(labels, _core.int64),
                                  _core.cast(predictions, _core.int64)), _core.float32)
    return mean(hits, weights, metrics_collections, updates_collections,
                name=name or "accuracy")


def _safe_div(a, b):
    return _core.where(b > 0.0, a / _core.maximum(b, 1e-30), _core.zeros_like(a))


from .metrics_classification import (auc, false_negatives, false_positives,  # noqa: E402
                                     precision, recall, true_negatives, true_positives)
