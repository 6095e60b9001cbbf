"""``tf.compat.v1.metrics``' classification metrics, as TF 1.15 builds them in a graph:
``true_positives``, ``false_positives``, ``true_negatives``, ``false_negatives``,
``precision``, ``recall`` and ``auc``.

Each returns ``(value, update_op)``. The counts are float32 local variables (collections
LOCAL_VARIABLES and METRIC_VARIABLES, zeroed by ``local_variables_initializer()``) named as
TF names them (``precision/true_positives/count``, ``auc/true_positives``, ...); ``update_op``
adds the batch's (weighted) counts and gives the metric of the updated counts, ``value``
reads the current ones. ``precision`` is ``tp / (tp + fp)`` and ``recall`` ``tp / (tp + fn)``
(0 while the denominator is 0) on labels and predictions cast to bool; ``auc`` counts the
confusion matrix at ``num_thresholds`` thresholds (a prediction above a threshold is
positive) and sums the ROC or PR curve by TF's rule (``summation_method``). Predictions
outside [0, 1] make an ``auc`` update fail (InvalidArgumentError), as TF's assertions do.
"""

from __future__ import annotations

import numpy as np

import ipu_gpu as _core

__all__ = ["auc", "false_negatives", "false_positives", "precision", "recall",
           "true_negatives", "true_positives"]

LOCAL_VARIABLES, METRIC_VARIABLES = "local_variables", "metric_variables"
_EPSILON = 1e-7  # the thresholds' end points below 0 and above 1
_AUC_EPSILON = 1e-6


def _graph_mode(metric: str):
    from ... import graph

    if not graph.core.building():
        raise RuntimeError(f"tf.metrics.{metric} is not supported when eager execution is "
                           "enabled.")
    return graph


def _metric_variable(shape, name):
    """A float32 zero-initialized local variable of the current scope (TF's
    ``metric_variable``)."""
    from ... import graph

    return graph.make_variable(np.zeros(shape, np.float32), trainable=False, name=name,
                               collections=[LOCAL_VARIABLES, METRIC_VARIABLES])


def _name(t, name):
    """``t``'s node named ``name`` in the current name scope (TF's named last op)."""
    from . import op_names
    from ... import graph

    if isinstance(t, graph.GraphTensor):
        op_names.rename(t.op, t.graph.unique_name(name))
    return t


def _collect(value, update, metrics_collections, updates_collections):
    from ... import graph

    g = graph.get_default_graph()
    for key in metrics_collections or ():
        g.add_to_collection(key, value)
    for key in updates_collections or ():
        g.add_to_collection(key, update)


def _squeezed(predictions, labels):
    """TF's ``remove_squeezable_dimensions``: the last axis (of size 1) of the operand whose
    rank is one more than the other's removed."""
    rp, rl = predictions.shape.rank, labels.shape.rank
    if rp is not None and rl is not None:
        if rp == rl + 1 and predictions.shape.as_list()[-1] == 1:
            predictions = _core.squeeze(predictions, [-1])
        elif rl == rp + 1 and labels.shape.as_list()[-1] == 1:
            labels = _core.squeeze(labels, [-1])
    return predictions, labels


def _bools(labels, predictions):
    predictions = _core.cast(predictions, _core.bool)
    labels = _core.cast(labels, _core.bool)
    return _squeezed(predictions, labels)


# ---- the four counts ------------------------------------------------------------------------
def _count_condition(values, weights, metrics_collections, updates_collections):
    count = _metric_variable([], "count")
    values = _core.cast(values, _core.float32)
    if weights is not None:
        values = values * _core.cast(weights, _core.float32)
    value = _name(_core.identity(count), "Identity")
    update = count.assign_add(_core.reduce_sum(values))
    _collect(value, update, metrics_collections, updates_collections)
    return value, update


def _counter(metric, condition):
    def count(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
        graph = _graph_mode(metric)
        from .variable_scope import variable_scope

        with variable_scope(name, default_name=metric):
            pred_b, label_b = _bools(graph_tensor(labels, graph),
                                     graph_tensor(predictions, graph))
            return _count_condition(condition(label_b, pred_b), weights,
                                    metrics_collections, updates_collections)
    count.__name__ = metric
    count.__doc__ = (f"The running (weighted) number of {metric.replace('_', ' ')}: "
                     "``(count, update_op)``.")
    return count


def graph_tensor(x, graph):
    """``x`` as a tensor with a static shape (a graph tensor stays as it is)."""
    return x if isinstance(x, graph.GraphTensor) else _core.convert_to_tensor(x)


def _not(x):
    return _core.logical_not(x)


true_positives = _counter("true_positives", lambda lab, pred: _core.logical_and(lab, pred))
false_positives = _counter("false_positives",
                           lambda lab, pred: _core.logical_and(_not(lab), pred))
true_negatives = _counter("true_negatives",
                          lambda lab, pred: _core.logical_and(_not(lab), _not(pred)))
false_negatives = _counter("false_negatives",
                           lambda lab, pred: _core.logical_and(lab, _not(pred)))


# ---- precision and recall -----------------------------------------------------------------
def _ratio(metric, other_counter):
    def compute(tp, other, name):
        total = tp + other
        return _name(_core.where(total > 0.0, tp / _core.maximum(total, 1e-30), 0.0), name)

    def fn(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
        _graph_mode(metric)
        from .variable_scope import variable_scope

        with variable_scope(name, default_name=metric):
            tp, tp_update = true_positives(labels, predictions, weights)
            other, other_update = other_counter(labels, predictions, weights)
            value = compute(tp, other, "value")
            update = compute(tp_update, other_update, "update_op")
            _collect(value, update, metrics_collections, updates_collections)
            return value, update
    fn.__name__ = metric
    return fn


precision = _ratio("precision", false_positives)
precision.__doc__ = """The running precision ``tp / (tp + fp)`` (0 with no positive
prediction yet) of ``predictions`` against ``labels`` (both cast to bool):
``(precision, update_op)``."""
recall = _ratio("recall", false_negatives)
recall.__doc__ = """The running recall ``tp / (tp + fn)`` (0 with no positive label yet) of
``predictions`` against ``labels`` (both cast to bool): ``(recall, update_op)``."""


# ---- auc -----------------------------------------------------------------------------------
def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """The running area under the ROC (or PR) curve of ``predictions`` (probabilities in
    [0, 1]) against ``labels`` (cast to bool), from the confusion matrix at
    ``num_thresholds`` thresholds (or ``thresholds`` plus the two end points):
    ``(auc, update_op)``.

    Raises:
      ValueError: ``curve`` is neither ROC nor PR; an unknown ``summation_method``."""
    graph = _graph_mode("auc")
    from .control_flow import Assert
    from .variable_scope import variable_scope

    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "careful_interpolation", "minoring",
                                "majoring"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    if thresholds is not None:
        inner = sorted(float(t) for t in thresholds)
    else:
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    cuts = np.array([0.0 - _EPSILON, *inner, 1.0 + _EPSILON], np.float32)
    n = len(cuts)
    with variable_scope(name, default_name="auc"):
        predictions = _core.cast(graph_tensor(predictions, graph), _core.float32)
        labels = _core.cast(graph_tensor(labels, graph), _core.bool)
        predictions, labels = _squeezed(predictions, labels)
        checks = [Assert(_core.reduce_all(predictions >= 0.0),
                         ["predictions must be in [0, 1]"]),
                  Assert(_core.reduce_all(predictions <= 1.0),
                         ["predictions must be in [0, 1]"])]
        with graph.control_dependencies(checks):
            flat_pred = _core.reshape(predictions, [1, -1])
            flat_label = _core.reshape(labels, [1, -1])
        above = flat_pred > _core.reshape(cuts, [n, 1])  # [thresholds, examples]
        is_pos = _core.cast(flat_label, _core.float32)
        is_above = _core.cast(above, _core.float32)
        w = _core.ones_like(flat_pred) if weights is None else _core.reshape(
            _core.cast(weights, _core.float32) * _core.ones_like(predictions), [1, -1])
        counts = {}
        for key, hits in (("true_positives", is_pos * is_above),
                          ("false_negatives", is_pos * (1.0 - is_above)),
                          ("true_negatives", (1.0 - is_pos) * (1.0 - is_above)),
                          ("false_positives", (1.0 - is_pos) * is_above)):
            var = _metric_variable([n], key)
            counts[key] = (var, var.assign_add(_core.reduce_sum(hits * w, axis=1)))
        value = _auc_of(*[_core.identity(counts[k][0]) for k in _ORDER], n, curve,
                        summation_method, "value")
        update = _auc_of(*[counts[k][1] for k in _ORDER], n, curve, summation_method,
                         "update_op")
        _collect(value, update, metrics_collections, updates_collections)
        return value, update


_ORDER = ("true_positives", "false_negatives", "true_negatives", "false_positives")


def _div_no_nan(a, b):
    zero = _core.equal(b, 0.0)  # == on graph tensors is identity, as in TF1
    return _core.where(zero, _core.zeros_like(a), a / _core.where(zero, 1.0, b))


def _auc_of(tp, fn, tn, fp, n, curve, summation_method, name):
    """TF's ``compute_auc`` on the confusion counts at the thresholds."""
    head, tail = slice(0, n - 1), slice(1, n)
    if curve == "PR" and summation_method == "careful_interpolation":
        dtp = tp[head] - tp[tail]
        p = tp + fp
        slope = _div_no_nan(dtp, _core.maximum(p[head] - p[tail], 0.0))
        intercept = tp[tail] - slope * p[tail]
        ratio = _core.where(_core.logical_and(p[head] > 0.0, p[tail] > 0.0),
                            _div_no_nan(p[head], _core.maximum(p[tail], 0.0)),
                            _core.ones_like(p[tail]))
        return _name(_core.reduce_sum(_div_no_nan(
            slope * (dtp + intercept * _core.math.log(ratio)),
            _core.maximum(tp[tail] + fn[tail], 0.0))), "interpolate_pr_auc")  # TF's name
    rec = (tp + _AUC_EPSILON) / (tp + fn + _AUC_EPSILON)
    if curve == "ROC":
        x, y = fp / (fp + tn + _AUC_EPSILON), rec
    else:
        x, y = rec, (tp + _AUC_EPSILON) / (tp + fp + _AUC_EPSILON)
    if summation_method == "minoring":
        heights = _core.minimum(y[head], y[tail])
    elif summation_method == "majoring":
        heights = _core.maximum(y[head], y[tail])
    else:
        heights = (y[head] + y[tail]) / 2.0
    return _name(_core.reduce_sum((x[head] - x[tail]) * heights), name)
