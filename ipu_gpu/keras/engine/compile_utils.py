"""The losses and metrics ``Model.compile`` was given, matched to the model's outputs
(Keras 2's ``engine/compile_utils.py``: ``LossesContainer``, ``MetricsContainer``).

``LossesContainer(y_true, y_pred, sample_weight, regularization_losses)`` returns the total
loss: the sum over outputs of ``loss_weight * loss(y_true, y_pred, sample_weight)`` plus the
regularization losses, and updates the ``loss`` metric (a ``Mean`` weighted by the batch size,
so an epoch's loss is the mean over its samples) and, with several outputs, one
``<output>_loss`` Mean per output. Losses, loss weights and metrics may be given once for all
outputs, as a list in output order, or as a dict keyed by output name.

``MetricsContainer`` resolves ``'accuracy'``/``'acc'`` and ``'crossentropy'``/``'ce'`` from the
shapes of the first batch (binary when the prediction has one column, sparse when the target
has a lower rank or one column against several), names metrics ``<output>_<metric>`` when
there are several outputs and ``weighted_<metric>`` for a weighted metric whose name is
taken, and updates unweighted metrics with the output mask only and weighted ones with the
sample weights.

Under a distribution strategy the loss is scaled as Keras 2's ``scale_loss_for_distribution``
does: a loss reduced by ``SUM_OVER_BATCH_SIZE``/``AUTO``, and the regularization losses, are
divided by the strategy's ``num_replicas_in_sync`` before the gradient (a ``SUM`` loss's
metric value is multiplied by it instead). ``IPUStrategy`` reports 1, so its replicas'
summed gradients are not rescaled (Graphcore's semantics); ``PopDistStrategy`` reports all
replicas, so there the sum of the replicas' scaled gradients is their mean (as Graphcore's
``distributed_test.py``: a loss ``w * x`` on every replica moves ``w`` by ``lr * x``).
"""

from __future__ import annotations

import copy


from ...core import nest
from ...core.tensor import Tensor
from ...ops import math as _m
from ...ops import shape as _shape

__all__ = ["LossesContainer", "MetricsContainer", "create_pseudo_output_names",
           "match_dtype_and_rank"]


def _losses_mod():
    from .. import losses

    return losses


def _metrics_mod():
    from .. import metrics

    return metrics


def _is_nested(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def create_pseudo_output_names(outputs) -> list:
    """``output_1``, ``output_2``, ... for outputs without layer names."""
    return _pseudo_names(outputs, "output_")


def _pseudo_names(tensors, prefix) -> list:
    names = []
    for path in _flat_paths(tensors):
        path = [p + 1 if isinstance(p, int) else p for p in path]
        if not path:
            names.append(prefix + "1")
            continue
        name = "_".join(str(p) for p in path)
        names.append(prefix + name if isinstance(path[0], int) else name)
    return names


def _flat_paths(structure, prefix=()):
    if isinstance(structure, dict):
        for k in sorted(structure):
            yield from _flat_paths(structure[k], prefix + (k,))
    elif isinstance(structure, (list, tuple)):
        for i, v in enumerate(structure):
            yield from _flat_paths(v, prefix + (i,))
    else:
        yield prefix


def map_to_output_names(y_pred, output_names, struct):
    """A dict of per-output objects for single or flat-list outputs -> a list in output
    order (None for outputs without one).

    Raises:
      ValueError: dict keys that name no output (Keras's message).
    """
    single = not _is_nested(y_pred)
    flat_list = (not single and isinstance(y_pred, (list, tuple))
                 and not any(_is_nested(p) for p in y_pred))
    if (single or flat_list) and isinstance(struct, dict):
        output_names = output_names or create_pseudo_output_names(y_pred)
        struct = copy.copy(struct)
        new = [struct.pop(name, None) for name in output_names]
        if struct:
            raise ValueError(f"Found unexpected losses or metrics that do not correspond to "
                             f"any Model output: {struct.keys()}. Valid mode output names: "
                             f"{output_names}. Received struct is: {struct}.")
        return new[0] if len(new) == 1 else new
    return struct


def _map_missing_dict_keys(y_pred, struct):
    if not isinstance(y_pred, dict) or not isinstance(struct, dict):
        return struct
    struct = copy.copy(struct)
    for k in y_pred:
        struct.setdefault(k, None)
    return struct


def match_dtype_and_rank(y_t, y_p, sw):
    """Targets and weights of rank 1 against rank-2 predictions get a last axis; targets
    take the prediction's dtype when both are floating or both integer; weights always do."""
    if y_t.ndim == 1 and y_p.ndim == 2:
        y_t = _shape.expand_dims(y_t, -1)
    if sw is not None and sw.ndim == 1 and y_p.ndim == 2:
        sw = _shape.expand_dims(sw, -1)
    kt, kp = y_t.dtype.kind, y_p.dtype.kind
    if (kt == "f" and kp == "f") or (kt in "iu" and kp in "iu"):
        if y_t.dtype != y_p.dtype:
            y_t = _m.cast(y_t, y_p.dtype)
    if sw is not None and sw.dtype != y_p.dtype:
        sw = _m.cast(sw, y_p.dtype)
    return y_t, y_p, sw


def _as_tensor(x):
    if x is None or isinstance(x, Tensor):
        return x
    from ...core.convert import convert_to_tensor

    return convert_to_tensor(x)


def _get_mask(y_p):
    from .call_context import get_mask

    return get_mask(y_p)


def _apply_mask(y_p, sw, mask):
    if mask is None:
        return sw
    mask = _m.cast(mask, y_p.dtype)
    if sw is None:
        return mask
    mask, _, sw = _losses_mod().squeeze_or_expand_dimensions(mask, sample_weight=sw)
    return sw * mask


def _custom_object_name(obj):
    if hasattr(obj, "name"):
        return obj.name
    if hasattr(obj, "__name__"):
        return obj.__name__
    from .serialization import to_snake_case

    return to_snake_case(type(obj).__name__)


class _Container:
    def __init__(self, output_names=None):
        self._output_names = output_names

    def build(self, y_pred):
        if self._output_names is None:
            self._output_names = create_pseudo_output_names(y_pred)

    def _conform_to_outputs(self, outputs, struct):
        struct = map_to_output_names(outputs, self._output_names, struct)
        struct = _map_missing_dict_keys(outputs, struct)
        if not _is_nested(struct) and _is_nested(outputs):
            struct = nest.map_structure(lambda _: struct, outputs)
        return struct

    def _maybe_broadcast_to_outputs(self, outputs, objects):
        if not self._should_broadcast(objects):
            return objects
        copy_objects = len(nest.flatten(outputs)) > 1
        return nest.map_structure(
            lambda _: nest.map_structure(self._copy_object, objects) if copy_objects
            else objects, outputs)


class LossesContainer(_Container):
    """The compiled loss (see the module docstring).

    Args:
      losses: a loss (name, function or ``Loss``), or a list/dict of them per output.
      loss_weights: a scalar, list or dict of scalars weighting the outputs' losses.
      output_names: the model's output names.
    """

    def __init__(self, losses, loss_weights=None, output_names=None):
        super().__init__(output_names)
        self._user_losses = losses
        self._user_loss_weights = loss_weights
        self._losses = losses
        self._loss_weights = loss_weights
        self._per_output_metrics = None
        self._total_loss_mean = _metrics_mod().Mean(name="loss")
        self._built = False

    @property
    def metrics(self) -> list:
        """The ``loss`` Mean and the per-output loss Means ([] before the first call)."""
        if not self._built:
            return []
        return [self._total_loss_mean] + [m for m in self._per_output_metrics if m is not None]

    @property
    def built(self) -> bool:
        return self._built

    def build(self, y_pred):
        super().build(y_pred)
        self._losses = self._maybe_broadcast_to_outputs(y_pred, self._losses)
        self._losses = self._conform_to_outputs(y_pred, self._losses)
        self._losses = nest.flatten(nest.map_structure(self._get_loss_object, self._losses))
        weights = self._maybe_broadcast_to_outputs(y_pred, self._loss_weights)
        self._loss_weights = nest.flatten(self._conform_to_outputs(y_pred, weights))
        if len(self._output_names) == 1:
            self._per_output_metrics = [None]
        else:
            mean = _metrics_mod().Mean
            self._per_output_metrics = [None if loss is None else mean(name + "_loss")
                                        for loss, name in zip(self._losses,
                                                              self._output_names)]
        self._built = True

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None,
                 update_metrics=True):
        """The total loss of a batch (None when nothing contributes); updates the loss
        metrics unless ``update_metrics`` is False."""
        y_true = self._conform_to_outputs(y_pred, y_true)
        sample_weight = self._conform_to_outputs(y_pred, sample_weight)
        if not self._built:
            self.build(y_pred)
        y_pred = nest.flatten(y_pred)
        y_true = nest.flatten(y_true)
        sample_weight = nest.flatten(sample_weight)
        if len(sample_weight) < len(y_pred):
            sample_weight = sample_weight + [None] * (len(y_pred) - len(sample_weight))
        loss_values, mean_values = [], []
        batch_dim = None
        for y_t, y_p, sw, loss_obj, loss_weight, metric in zip(
                y_true, y_pred, sample_weight, self._losses, self._loss_weights,
                self._per_output_metrics):
            if y_t is None or loss_obj is None:
                continue
            y_t, y_p, sw = match_dtype_and_rank(_as_tensor(y_t), y_p, _as_tensor(sw))
            sw = _apply_mask(y_p, sw, _get_mask(y_p))
            loss_value = loss_obj(y_t, y_p, sample_weight=sw)
            mean_value = loss_value
            if loss_obj.reduction == _SUM:  # the Mean metric counts each replica as a batch
                mean_value = mean_value * _replicas_in_sync()
            if batch_dim is None:
                batch_dim = int(y_t.shape[0]) if y_t.ndim else 1
            if metric is not None and update_metrics:
                metric.update_state(mean_value, sample_weight=batch_dim)
            if loss_weight is not None:
                loss_value = loss_value * loss_weight
                mean_value = mean_value * loss_weight
            if loss_obj.reduction in (_SUM_OVER_BATCH_SIZE, _AUTO):
                loss_value = scale_loss_for_distribution(loss_value)
            loss_values.append(loss_value)
            mean_values.append(mean_value)
        if regularization_losses:
            reg = _add_n(_common_dtype(regularization_losses))
            mean_values.append(reg)
            loss_values.append(scale_loss_for_distribution(reg))
        if not loss_values:
            return None
        total_mean = _add_n(_common_dtype(mean_values))
        if update_metrics:
            self._total_loss_mean.update_state(total_mean, sample_weight=batch_dim)
        return _add_n(_common_dtype(loss_values))

    def reset_state(self):
        for metric in self.metrics:
            metric.reset_state()

    def _get_loss_object(self, loss):
        if loss is None:
            return None
        losses = _losses_mod()
        loss = losses.get(loss)
        if not isinstance(loss, losses.Loss):
            name = _custom_object_name(loss)
            if name is None:
                raise ValueError(f"Loss should be a callable, received: {loss}")
            loss = losses.LossFunctionWrapper(loss, name=name)
        loss._allow_sum_over_batch_size = True
        return loss

    @staticmethod
    def _should_broadcast(obj) -> bool:
        return not _is_nested(obj)

    @staticmethod
    def _copy_object(obj):
        return obj


_AUTO, _SUM, _SUM_OVER_BATCH_SIZE = "auto", "sum", "sum_over_batch_size"


def _replicas_in_sync() -> int:
    from ... import distribute

    return distribute.get_strategy().num_replicas_in_sync


def scale_loss_for_distribution(loss_value):
    """``loss_value`` divided by the current strategy's ``num_replicas_in_sync`` when that is
    above 1 (Keras 2's ``losses_utils.scale_loss_for_distribution``)."""
    replicas = _replicas_in_sync()
    if replicas > 1:
        loss_value = loss_value * (1.0 / replicas)
    return loss_value


def _common_dtype(values) -> list:
    values = [_as_tensor(v) for v in values]
    floats = [v.dtype for v in values if v.dtype.kind == "f"]
    if not floats:
        return values
    widest = max(floats, key=lambda d: d.itemsize)
    return [v if v.dtype == widest else _m.cast(v, widest) for v in values]


def _add_n(values):
    total = values[0]
    for v in values[1:]:
        total = total + v
    return total


class MetricsContainer(_Container):
    """The compiled metrics (see the module docstring).

    Args:
      metrics: metrics (names, functions or ``Metric`` objects) for every output, or a
        list/dict of lists per output.
      weighted_metrics: the same, updated with the sample weights.
      output_names: the model's output names.

    Raises:
      ValueError: the same Metric object given twice (Keras's message).
    """

    def __init__(self, metrics=None, weighted_metrics=None, output_names=None):
        super().__init__(output_names)
        metric_cls = _metrics_mod().Metric
        seen, duplicated = [], []
        for m in nest.flatten(metrics) + nest.flatten(weighted_metrics):
            if isinstance(m, metric_cls):
                if any(m is s for s in seen):
                    duplicated.append(m)
                seen.append(m)
        if duplicated:
            raise ValueError("Found duplicated metrics object in the user provided metrics and "
                             "weighted metrics. This will cause the same metric object to be "
                             "updated multiple times, and report wrong results. \nDuplicated "
                             f"items: {duplicated}")
        self._user_metrics = metrics
        self._user_weighted_metrics = weighted_metrics
        self._metrics = metrics
        self._weighted_metrics = weighted_metrics
        self._metrics_in_order = []
        self._built = False

    @property
    def metrics(self) -> list:
        """The metric objects in order ([] before the first update)."""
        return self._metrics_in_order if self._built else []

    @property
    def built(self) -> bool:
        return self._built

    def build(self, y_pred, y_true):
        super().build(y_pred)
        self._metrics = self._conform_to_outputs(
            y_pred, self._maybe_broadcast_to_outputs(y_pred, self._metrics))
        self._weighted_metrics = self._conform_to_outputs(
            y_pred, self._maybe_broadcast_to_outputs(y_pred, self._weighted_metrics))
        flat_pred = nest.flatten(y_pred)
        flat_true = nest.flatten(y_true) if y_true is not None else [None] * len(flat_pred)
        self._metrics = self._per_output(self._metrics, flat_true, flat_pred)
        self._weighted_metrics = self._per_output(self._weighted_metrics, flat_true, flat_pred)
        self._set_metric_names()
        self._metrics_in_order = [m for ms, wms in zip(self._metrics, self._weighted_metrics)
                                  for m in list(ms) + list(wms) if m is not None]
        self._built = True

    def _per_output(self, struct, flat_true, flat_pred) -> list:
        """One list of metric objects per output."""
        if len(flat_pred) == 1:
            per_output = [struct]
        elif isinstance(struct, dict):
            per_output = [struct[k] for k in sorted(struct)]
        elif isinstance(struct, (list, tuple)):
            per_output = list(struct)
        else:
            per_output = [struct] * len(flat_pred)
        return [[self._get_metric_object(m, y_t, y_p) for m in nest.flatten(ms)]
                for ms, y_t, y_p in zip(per_output, flat_true, flat_pred)]

    def _set_metric_names(self):
        names = set()
        multi = len(self._output_names) > 1
        for output_name, output_metrics, weighted in zip(self._output_names, self._metrics,
                                                         self._weighted_metrics):
            for m in output_metrics:
                if m is None:
                    continue
                if multi:
                    m._name = output_name + "_" + m._name
                if m._name in names:
                    raise ValueError(f"Found two metrics with the same name: {m._name}. All the "
                                     "metrics added to the model need to have unique names.")
                names.add(m._name)
            for wm in weighted:
                if wm is None:
                    continue
                if multi:
                    wm._name = (output_name + "_weighted_" + wm._name
                                if output_name + "_" + wm._name in names
                                else output_name + "_" + wm._name)
                elif wm._name in names:
                    wm._name = "weighted_" + wm._name
                if wm._name in names:
                    raise ValueError(f"Found two weighted metrics with the same name: "
                                     f"{wm._name}.All the metrics added to the model need to "
                                     "have unique names.")
                names.add(wm._name)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Update every metric with a batch's targets, predictions and weights."""
        y_true = self._conform_to_outputs(y_pred, y_true)
        sample_weight = self._conform_to_outputs(y_pred, sample_weight)
        if not self._built:
            self.build(y_pred, y_true)
        y_pred = nest.flatten(y_pred)
        y_true = nest.flatten(y_true) if y_true is not None else []
        sample_weight = nest.flatten(sample_weight)
        if len(sample_weight) < len(y_pred):
            sample_weight = sample_weight + [None] * (len(y_pred) - len(sample_weight))
        for y_t, y_p, sw, ms, wms in zip(y_true, y_pred, sample_weight, self._metrics,
                                         self._weighted_metrics):
            if y_t is None or (all(m is None for m in ms) and all(m is None for m in wms)):
                continue
            y_t, y_p, sw = match_dtype_and_rank(_as_tensor(y_t), y_p, _as_tensor(sw))
            mask = _get_mask(y_p)
            sw = _apply_mask(y_p, sw, mask)
            for m in ms:
                if m is not None:
                    m.update_state(y_t, y_p, sample_weight=mask)
            for wm in wms:
                if wm is not None:
                    wm.update_state(y_t, y_p, sample_weight=sw)

    def reset_state(self):
        metric_cls = _metrics_mod().Metric
        metrics = (self._metrics_in_order if self._built else
                   nest.flatten(self._user_metrics) + nest.flatten(self._user_weighted_metrics))
        for m in metrics:
            if isinstance(m, metric_cls):
                m.reset_state()

    @staticmethod
    def _get_metric_object(metric, y_t, y_p):
        return _metrics_mod().get_metric_object(metric, y_t, y_p)

    @staticmethod
    def _should_broadcast(obj) -> bool:
        if not _is_nested(obj):
            return True
        return isinstance(obj, (list, tuple)) and not any(_is_nested(o) for o in obj)

    @staticmethod
    def _copy_object(obj):
        metric_cls = _metrics_mod().Metric
        if isinstance(obj, metric_cls):
            return type(obj).from_config(obj.get_config())
        return obj
