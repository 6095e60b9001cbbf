"""``keras.metrics``: Keras 2's stateful metrics and metric functions, on ipu_gpu ops.

A ``Metric`` keeps its state in non-trainable ipu_gpu Variables (``add_weight``) and updates
them only through ``assign``/``assign_add``; ``update_state`` accumulates a batch, ``result``
reads the state, ``reset_state`` zeroes it, and calling a metric does both. The arithmetic is
tf-keras's (``metrics/``, ``utils/metrics_utils.py``): values are cast to the metric's dtype
(``floatx``, float32), sample weights broadcast as ``tf.__internal__.ops.broadcast_weights``
(else the values are averaged down to the weights' rank), ``result`` divides with
``divide_no_nan``; Precision, Recall, AUC and the confusion counts use Keras's two
confusion-matrix paths (one comparison per threshold, or buckets for evenly spaced thresholds).

Deliberate difference: ``Metric`` is not a Keras Layer here (it has the Layer attributes a
trainer reads: ``name``, ``dtype``, ``variables``/``weights``, ``get_weights``/``set_weights``,
``trainable_weights``, ``non_trainable_weights``, ``stateful``).

For the trainer, resolving ``metrics=[...]`` entries as ``Model.compile`` does:

``get_metric_object(metric, y_true, y_pred) -> Metric | None``
    Keras 2's ``compile_utils.MetricsContainer._get_metric_object``: "accuracy"/"acc" and
    "crossentropy"/"ce" (any case) pick the binary, sparse-categorical or categorical function
    from the shapes (``y_true``/``y_pred``: Tensors, arrays or shapes): binary when y_pred's
    last dimension is 1, sparse when y_true has lower rank than y_pred or a last dimension of
    1 against more than one class; other strings, dicts and callables go through ``get``; a
    function (or a ``Loss``) is wrapped in a ``MeanMetricWrapper`` named after the string (or
    the function / the loss's ``name``); a ``Metric`` is returned as is.

``get_metric_function(metric, output_shape=None, loss_fn=None)``
    The TF1 Keras variant (``training_utils_v1``): the choice follows the loss instead
    (``BinaryCrossentropy`` or a last output dimension of 1: binary; a
    ``SparseCategoricalCrossentropy`` loss: sparse; else categorical); returns a function.
"""

from __future__ import annotations

import enum
import functools
import re
import sys
import warnings

import numpy as np

from . import backend as _backend
from . import losses as _losses
from .losses import _follow, floatx, squeeze_or_expand_dimensions
from ..core import nest
from ..core.convert import constant, convert_to_tensor
from ..core.dtypes import as_dtype
from ..core.tensor import Tensor, Variable
from ..ops.creation import ones_like, zeros_like
from ..ops.indexing import one_hot, where
from ..ops.math import (add, cast, ceil, clip_by_value, equal, greater, is_finite, less,
                        logical_and, logical_not, maximum, minimum, sigmoid, sqrt)
from ..ops.math import log as _log
from ..ops.math_extra import cumsum, unsorted_segment_sum
from ..ops.nn import l2_normalize, relu
from ..ops.reduction import argmax, reduce_all, reduce_mean, reduce_sum
from ..ops.shape import reshape, squeeze, transpose
from ..ops.sort import top_k

NEG_INF = -1e10


def _unique_name(base: str) -> str:
    """``base``, ``base_1``, ... as Keras names layers (``keras.backend``'s counters)."""
    return _backend.unique_object_name(base, zero_based=True)


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()


def _divide_no_nan(x, y):
    """x / y, 0 where y is 0 (``tf.math.divide_no_nan``: the core has no such op yet)."""
    zero = equal(y, 0.0)
    q = x / where(zero, 1.0, y)
    return where(zero, zeros_like(q), q)


def _broadcast_weights(weights, values):
    """``weights`` broadcast to ``values`` (TF's ``broadcast_weights``): a scalar, or the same
    rank with each dimension 1 or equal. ValueError otherwise."""
    ws, vs = tuple(weights.shape), tuple(values.shape)
    if ws == vs:
        return weights
    if ws and (len(ws) != len(vs) or any(w not in (1, v) for w, v in zip(ws, vs))):
        raise ValueError(f"weights can not be broadcast to values. values.rank={len(vs)}. "
                         f"weights.rank={len(ws)}. values.shape={vs}. weights.shape={ws}.")
    return weights * ones_like(values)


# ---- TF1 graphs -------------------------------------------------------------------------------

def _graph_core():
    return sys.modules.get("ipu_gpu.graph.core")


def _graph_update_state(update_state):
    """``update_state`` that, given TF1 graph tensors, returns an op of their graph which
    runs it on each run's values (as TF-Keras's metric update ops in a graph)."""
    @functools.wraps(update_state)
    def wrapper(self, *args, **kwargs):
        inputs = [list(args), dict(kwargs)]
        if not any(_backend.is_graph_tensor(x) for x in nest.flatten(inputs)):
            return update_state(self, *args, **kwargs)
        core = _graph_core()
        object.__setattr__(self, "_graph_updated", True)

        def run(run_args, run_kwargs):
            update_state(self, *run_args, **run_kwargs)
            return []
        return core.add_node(core._graph_of(inputs), "UpdateState",
                             f"{self.name}/update_state", inputs, run, [])
    wrapper._graph_wrapped = True
    return wrapper


def _graph_result(result):
    """``result`` that, for a metric updated in the TF1 graph being built, is a node of it
    computing the result from the state when it runs."""
    @functools.wraps(result)
    def wrapper(self):
        core = _graph_core()
        if getattr(self, "_graph_updated", False) and core is not None and core.building():
            return core.record_function(result, (self,), {})
        return result(self)
    wrapper._graph_wrapped = True
    return wrapper


# ---- the Metric base ----------------------------------------------------------------------------

class Metric:
    """Base class of stateful metrics: subclasses make their state with ``add_weight`` in
    ``__init__`` and define ``update_state`` and ``result``.

    Args:
      name: the metric's name (default: the class name in snake case, made unique).
      dtype: the dtype of the state and result (default ``floatx``, float32).
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name, wrap in (("update_state", _graph_update_state), ("result", _graph_result)):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_graph_wrapped", False):
                setattr(cls, name, wrap(fn))

    def __init__(self, name=None, dtype=None, **kwargs):
        self._name = name if name else _unique_name(_snake(type(self).__name__))
        self._dtype = (floatx() if dtype is None else as_dtype(dtype, "Metric: dtype").name)
        self._weights = []
        self.stateful = True
        self.built = True
        self.trainable = kwargs.pop("trainable", True)
        if kwargs:
            raise TypeError(f"Metric: unexpected keyword arguments {sorted(kwargs)}")

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> str:
        return self._dtype

    def __call__(self, *args, **kwargs):
        """``update_state(*args, **kwargs)``, then ``result()`` (in a TF1 graph, the result
        of a run that first runs the update)."""
        update = self.update_state(*args, **kwargs)
        core = _graph_core()
        if core is not None and isinstance(update, core.Operation):
            with sys.modules["ipu_gpu.graph.program"].control_dependencies([update]):
                return self.result()
        return self.result()

    def __str__(self) -> str:
        args = ",".join(f"{k}={v}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"

    def __deepcopy__(self, memo=None):
        new = self.from_config(self.get_config())
        if self.weights:
            new.set_weights(self.get_weights())
        return new

    def update_state(self, *args, **kwargs):
        """Accumulate statistics of a batch (subclasses implement it)."""
        raise NotImplementedError("Must be implemented in subclasses.")

    def result(self):
        """The metric's value from the state (subclasses implement it)."""
        raise NotImplementedError("Must be implemented in subclasses.")

    def reset_state(self):
        """Zero every state variable (at the start of each epoch, for instance)."""
        if type(self).reset_states is not Metric.reset_states:  # Keras 2.5's name overridden
            warnings.warn(f"Metric {type(self).__name__} implements a `reset_states()` method; "
                          "rename it to `reset_state()` (without the final \"s\"). The name "
                          "`reset_states()` has been deprecated to improve API consistency.",
                          stacklevel=2)
            return self.reset_states()
        for v in self._weights:
            v.assign(zeros_like(v))

    def reset_states(self):
        """The old name of ``reset_state``."""
        return self.reset_state()

    def merge_state(self, metrics):
        """Add the state of other metrics of the same kind to this one's.

        Raises:
          ValueError: a metric with a different number of weights.
        """
        for metric in metrics:
            if len(self.weights) != len(metric.weights):
                raise ValueError(f"Metric {metric} is not compatible with {self}")
            for weight, other in zip(self.weights, metric.weights):
                weight.assign_add(other)

    def add_weight(self, name, shape=(), aggregation=None, synchronization=None,
                   initializer=None, dtype=None) -> Variable:
        """A non-trainable state Variable (zeros unless ``initializer``: "zeros", "ones", a
        number or a callable of ``(shape, dtype)``)."""
        dtype = as_dtype(self._dtype if dtype is None else dtype, "add_weight: dtype")
        shape = tuple(int(d) for d in shape)
        if initializer in (None, "zeros"):
            value = constant(np.zeros(shape, dtype=dtype))
        elif initializer == "ones":
            value = constant(np.ones(shape, dtype=dtype))
        elif callable(initializer):
            value = initializer(shape=shape, dtype=dtype)
        else:
            value = constant(np.full(shape, initializer, dtype=dtype))
        weight = Variable(value, trainable=False, name=name, dtype=dtype)
        self._weights.append(weight)
        return weight

    @property
    def variables(self) -> list:
        return list(self._weights)

    @property
    def weights(self) -> list:
        return list(self._weights)

    @property
    def non_trainable_weights(self) -> list:
        return list(self._weights)

    @property
    def trainable_weights(self) -> list:
        return []

    def get_weights(self) -> list:
        return [w.numpy() for w in self._weights]

    def set_weights(self, weights):
        """Set the state from numpy arrays (the order of ``get_weights``).

        Raises:
          ValueError: a different number of arrays or another shape.
        """
        if len(weights) != len(self._weights):
            raise ValueError(f"You called `set_weights(weights)` on metric {self.name} with a "
                             f"weight list of length {len(weights)}, but the metric was "
                             f"expecting {len(self._weights)} weights.")
        for w, value in zip(self._weights, weights):
            value = np.asarray(value)
            if tuple(w.shape) != value.shape:
                raise ValueError(f"Metric weight shape {tuple(w.shape)} is not compatible with "
                                 f"provided weight shape {value.shape}.")
        for w, value in zip(self._weights, weights):
            w.assign(constant(np.asarray(value), dtype=w.dtype))

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Reduce(Metric):
    """A metric reducing values: "sum", "sum_over_batch_size" or "weighted_mean"."""

    def __init__(self, reduction, name, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.reduction = reduction
        self.total = self.add_weight("total", initializer="zeros")
        if reduction in ("sum_over_batch_size", "weighted_mean"):
            self.count = self.add_weight("count", initializer="zeros")

    def update_state(self, values, sample_weight=None):
        """Add ``values`` (weighted by ``sample_weight``) to the total (and their number, or
        the weights' sum, to the count).

        Raises:
          RuntimeError: values that are not a single Tensor (Keras's message).
        """
        try:
            values = cast(_follow(values, self.total), self._dtype)
        except (ValueError, TypeError):
            msg = ("The output of a metric function can only be a single Tensor. "
                   f"Received: {values}. ")
            if isinstance(values, dict):
                msg += "To return a dict of values, implement a custom Metric subclass."
            raise RuntimeError(msg) from None
        if sample_weight is not None:
            sample_weight = cast(_follow(sample_weight, values), self._dtype)
            values, _, sample_weight = squeeze_or_expand_dimensions(
                values, sample_weight=sample_weight)
            try:
                sample_weight = _broadcast_weights(sample_weight, values)
            except ValueError:  # weights of lower rank: reduce values to them
                axes = list(range(sample_weight.ndim, values.ndim))
                values = (reduce_sum(values, axis=axes) if self.reduction == "sum"
                          else reduce_mean(values, axis=axes))
            values = values * sample_weight
        self.total.assign_add(reduce_sum(values))
        if self.reduction == "sum":
            return self.total
        if self.reduction == "weighted_mean" and sample_weight is not None:
            num_values = reduce_sum(sample_weight)
        else:
            num_values = float(np.prod(values.shape, dtype=np.int64))
        return self.count.assign_add(num_values)

    def result(self):
        if self.reduction == "sum":
            return self.total.read_value()
        return _divide_no_nan(self.total, self.count)


class Sum(Reduce):
    """The (weighted) sum of the values seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(reduction="sum", name=name, dtype=dtype)


class Mean(Reduce):
    """The (weighted) mean of the values seen."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(reduction="weighted_mean", name=name, dtype=dtype)


class MeanMetricWrapper(Mean):
    """The weighted mean of ``fn(y_true, y_pred, **kwargs)`` over all batches.

    Args:
      fn: a metric function of (y_true, y_pred) returning per-sample values.
      name, dtype: as ``Metric``.
      **kwargs: keyword arguments of ``fn``.
    """

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Accumulate ``fn(y_true, y_pred)`` of a batch (both cast to the metric's dtype)."""
        y_pred = cast(_follow(y_pred, self.total), self._dtype)
        y_true = cast(_follow(y_true, y_pred), self._dtype)
        y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        matches = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(matches, sample_weight=sample_weight)

    def get_config(self) -> dict:
        config = {k: (v.numpy() if isinstance(v, Tensor) else v)
                  for k, v in self._fn_kwargs.items()}
        if type(self) is MeanMetricWrapper:
            config["fn"] = self._fn
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        fn = config.pop("fn", None)
        if cls is MeanMetricWrapper:
            return cls(get(fn), **config)
        return super().from_config(config)


# ---- matches (Keras's metrics_utils) ----------------------------------------------------------

def binary_matches(y_true, y_pred, threshold=0.5):
    """1.0 where ``y_pred > threshold`` agrees with y_true, else 0.0 (floatx)."""
    y_pred = convert_to_tensor(y_pred)
    y_pred = cast(greater(y_pred, float(y_pred.dtype.type(threshold))), y_pred.dtype)
    y_true = _follow(y_true, y_pred)
    if y_true.dtype != y_pred.dtype:
        y_true = cast(y_true, y_pred.dtype)
    return cast(equal(y_true, y_pred), floatx())


def sparse_categorical_matches(y_true, y_pred):
    """1.0 where ``argmax(y_pred, -1)`` equals the integer label y_true (a trailing axis of
    size 1 on y_true, at y_pred's rank, is squeezed and restored)."""
    y_pred = convert_to_tensor(y_pred)
    y_true = _follow(y_true, y_pred)
    original_shape = list(y_true.shape)
    reshape_matches = y_true.ndim == y_pred.ndim
    if reshape_matches:
        y_true = squeeze(y_true, [-1])
    y_pred = argmax(y_pred, axis=-1)
    if y_pred.dtype != y_true.dtype:
        y_pred = cast(y_pred, y_true.dtype)
    matches = cast(equal(y_true, y_pred), floatx())
    return reshape(matches, original_shape) if reshape_matches else matches


def in_top_k(predictions, targets, k):
    """Whether ``predictions[i, targets[i]]`` is among the ``k`` largest of row i, ties
    counted in (``tf.math.in_top_k``); False for an out-of-range target or a row holding a
    non-finite prediction (TF's kernel). Composed from core ops: the core has no such op
    yet."""
    predictions = convert_to_tensor(predictions)
    targets = _follow(targets, predictions)
    classes = predictions.shape[-1]
    valid = logical_and(greater(targets, -1), less(targets, classes))
    picked = equal(_follow(np.arange(classes, dtype=targets.dtype), predictions),
                   reshape(where(valid, targets, 0), [-1, 1]))
    target_value = reduce_sum(where(picked, predictions, 0.0), axis=-1)
    above = reduce_sum(cast(greater(predictions, reshape(target_value, [-1, 1])), "int32"),
                       axis=-1)
    finite = reduce_all(is_finite(predictions), axis=-1)
    return logical_and(logical_and(less(above, k), finite), valid)


def sparse_top_k_categorical_matches(y_true, y_pred, k=5):
    """1.0 where the integer label y_true is among the top ``k`` of y_pred."""
    y_pred = convert_to_tensor(y_pred)
    y_true = _follow(y_true, y_pred)
    original_shape = list(y_true.shape)
    if y_pred.ndim > 2:
        y_pred = reshape(y_pred, [-1, y_pred.shape[-1]])
    reshape_matches = y_true.ndim > 1
    if reshape_matches:
        y_true = reshape(y_true, [-1])
    matches = cast(in_top_k(cast(y_pred, "float32"), cast(y_true, "int32"), k), floatx())
    return reshape(matches, original_shape) if reshape_matches else matches


# ---- metric functions ------------------------------------------------------------------------

def accuracy(y_true, y_pred):
    """1.0 where y_pred equals y_true exactly (y_pred cast to y_true's dtype).

    Raises:
      ValueError: incompatible shapes.
    """
    y_true = convert_to_tensor(y_true)
    y_pred = _follow(y_pred, y_true)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(f"Shapes {tuple(y_true.shape)} and {tuple(y_pred.shape)} are "
                         "incompatible")
    if y_true.dtype != y_pred.dtype:
        y_pred = cast(y_pred, y_true.dtype)
    return cast(equal(y_true, y_pred), floatx())


def binary_accuracy(y_true, y_pred, threshold=0.5):
    """The mean over the last axis of ``binary_matches``."""
    return reduce_mean(binary_matches(y_true, y_pred, threshold), axis=-1)


def categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_pred)`` equals ``argmax(y_true)`` (one-hot labels)."""
    return sparse_categorical_matches(argmax(convert_to_tensor(y_true), axis=-1), y_pred)


def sparse_categorical_accuracy(y_true, y_pred):
    """1.0 where ``argmax(y_pred)`` equals the integer label."""
    matches = sparse_categorical_matches(y_true, y_pred)
    if matches.ndim > 1 and matches.shape[-1] == 1:
        matches = squeeze(matches, [-1])
    return matches


def top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where ``argmax(y_true)`` is among the top ``k`` of y_pred."""
    return sparse_top_k_categorical_matches(argmax(convert_to_tensor(y_true), axis=-1),
                                            y_pred, k)


def sparse_top_k_categorical_accuracy(y_true, y_pred, k=5):
    """1.0 where the integer label is among the top ``k`` of y_pred."""
    return sparse_top_k_categorical_matches(y_true, y_pred, k)


def cosine_similarity(y_true, y_pred, axis=-1):
    """``sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)`` (the metric's sign: +1 for
    parallel vectors, unlike the loss)."""
    return reduce_sum(l2_normalize(y_true, axis=axis) * l2_normalize(y_pred, axis=axis),
                      axis=axis)


# the loss functions are metric functions too (Keras's metrics module exports them)
mean_squared_error = mse = MSE = _losses.mean_squared_error
mean_absolute_error = mae = MAE = _losses.mean_absolute_error
mean_absolute_percentage_error = mape = MAPE = _losses.mean_absolute_percentage_error
mean_squared_logarithmic_error = msle = MSLE = _losses.mean_squared_logarithmic_error
binary_crossentropy = _losses.binary_crossentropy
categorical_crossentropy = _losses.categorical_crossentropy
sparse_categorical_crossentropy = _losses.sparse_categorical_crossentropy
hinge = _losses.hinge
squared_hinge = _losses.squared_hinge
categorical_hinge = _losses.categorical_hinge
kl_divergence = kld = KLD = kullback_leibler_divergence = _losses.kl_divergence
poisson = _losses.poisson
log_cosh = logcosh = _losses.log_cosh


def _categorical_matches(y_true, y_pred):
    return sparse_categorical_matches(argmax(y_true, axis=-1), y_pred)


def _top_k_matches(y_true, y_pred, k):
    return sparse_top_k_categorical_matches(argmax(y_true, axis=-1), y_pred, k)


# ---- MeanMetricWrapper classes -------------------------------------------------------------

class Accuracy(MeanMetricWrapper):
    """How often y_pred equals y_true."""

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(accuracy, name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches the binary label."""

    def __init__(self, name="binary_accuracy", dtype=None, threshold=0.5):
        super().__init__(binary_matches, name, dtype=dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred)`` matches the one-hot label."""

    def __init__(self, name="categorical_accuracy", dtype=None):
        super().__init__(_categorical_matches, name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often ``argmax(y_pred)`` matches the integer label."""

    def __init__(self, name="sparse_categorical_accuracy", dtype=None):
        super().__init__(sparse_categorical_matches, name, dtype=dtype)


class TopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the one-hot label is among the top ``k`` predictions."""

    def __init__(self, k=5, name="top_k_categorical_accuracy", dtype=None):
        super().__init__(_top_k_matches, name, dtype=dtype, k=k)


class SparseTopKCategoricalAccuracy(MeanMetricWrapper):
    """How often the integer label is among the top ``k`` predictions."""

    def __init__(self, k=5, name="sparse_top_k_categorical_accuracy", dtype=None):
        super().__init__(sparse_top_k_categorical_matches, name, dtype=dtype, k=k)


def _wrapper(class_name, fn, default_name, doc):
    def __init__(self, name=default_name, dtype=None):
        MeanMetricWrapper.__init__(self, fn, name, dtype=dtype)

    return type(class_name, (MeanMetricWrapper,), {"__init__": __init__, "__doc__": doc,
                                                   "__module__": __name__})


MeanSquaredError = _wrapper("MeanSquaredError", mean_squared_error, "mean_squared_error",
                            "The mean of ``mean_squared_error`` over the samples seen.")
MeanAbsoluteError = _wrapper("MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
                             "The mean of ``mean_absolute_error`` over the samples seen.")
MeanAbsolutePercentageError = _wrapper(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error,
    "mean_absolute_percentage_error",
    "The mean of ``mean_absolute_percentage_error`` over the samples seen.")
MeanSquaredLogarithmicError = _wrapper(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error,
    "mean_squared_logarithmic_error",
    "The mean of ``mean_squared_logarithmic_error`` over the samples seen.")
Hinge = _wrapper("Hinge", hinge, "hinge", "The mean hinge loss.")
SquaredHinge = _wrapper("SquaredHinge", squared_hinge, "squared_hinge",
                        "The mean squared hinge loss.")
CategoricalHinge = _wrapper("CategoricalHinge", categorical_hinge, "categorical_hinge",
                            "The mean categorical hinge loss.")
KLDivergence = _wrapper("KLDivergence", kl_divergence, "kullback_leibler_divergence",
                        "The mean Kullback-Leibler divergence.")
Poisson = _wrapper("Poisson", poisson, "poisson", "The mean Poisson loss.")
LogCoshError = _wrapper("LogCoshError", log_cosh, "logcosh",
                        "The mean log of the hyperbolic cosine of the error.")


class CosineSimilarity(MeanMetricWrapper):
    """The mean cosine similarity of y_true and y_pred along ``axis``."""

    def __init__(self, name="cosine_similarity", dtype=None, axis=-1):
        super().__init__(cosine_similarity, name, dtype=dtype, axis=axis)


class BinaryCrossentropy(MeanMetricWrapper):
    """The mean binary cross-entropy (``losses.binary_crossentropy``)."""

    def __init__(self, name="binary_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0):
        super().__init__(binary_crossentropy, name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class CategoricalCrossentropy(MeanMetricWrapper):
    """The mean categorical cross-entropy (``losses.categorical_crossentropy``)."""

    def __init__(self, name="categorical_crossentropy", dtype=None, from_logits=False,
                 label_smoothing=0, axis=-1):
        super().__init__(categorical_crossentropy, name, dtype=dtype, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(MeanMetricWrapper):
    """The mean sparse categorical cross-entropy (``losses.sparse_categorical_crossentropy``)."""

    def __init__(self, name="sparse_categorical_crossentropy", dtype=None, from_logits=False,
                 ignore_class=None, axis=-1):
        super().__init__(sparse_categorical_crossentropy, name, dtype=dtype,
                         from_logits=from_logits, ignore_class=ignore_class, axis=axis)


class RootMeanSquaredError(Mean):
    """``sqrt`` of the weighted mean of the squared errors."""

    def __init__(self, name="root_mean_squared_error", dtype=None):
        super().__init__(name, dtype=dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = cast(_follow(y_pred, self.total), self._dtype)
        y_true = cast(_follow(y_true, y_pred), self._dtype)
        y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        error = y_pred - y_true
        return super().update_state(error * error, sample_weight=sample_weight)

    def result(self):
        return sqrt(_divide_no_nan(self.total, self.count))


# ---- confusion matrices (Precision, Recall, AUC, the counts) ---------------------------------

TRUE_POSITIVES, FALSE_POSITIVES, TRUE_NEGATIVES, FALSE_NEGATIVES = "tp", "fp", "tn", "fn"


def _parse_thresholds(thresholds, default_threshold=0.5) -> list:
    if thresholds is None:
        return [default_threshold]
    values = list(thresholds) if isinstance(thresholds, (list, tuple, np.ndarray)) \
        else [thresholds]
    invalid = [t for t in values if t is None or t < 0 or t > 1]
    if invalid:
        raise ValueError(f"Threshold values must be in [0, 1]. Received: {invalid}")
    return values


def _evenly_distributed(thresholds) -> bool:
    n = len(thresholds)
    if n < 3:
        return False
    even = np.arange(n, dtype=np.float32) / (n - 1)
    return bool(np.allclose(thresholds, even, atol=_losses.epsilon()))


def _filter_top_k(x, k):
    """Entries of x outside each row's top k set to NEG_INF."""
    _, idx = top_k(x, k)
    mask = reduce_sum(one_hot(idx, x.shape[-1], axis=-1, dtype=x.dtype), axis=-2)
    return x * mask + NEG_INF * (1.0 - mask)


def update_confusion_matrix_variables(variables_to_update, y_true, y_pred, thresholds,
                                      top_k=None, class_id=None, sample_weight=None,
                                      multi_label=False, label_weights=None,
                                      thresholds_distributed_evenly=False):
    """Add a batch's weighted true/false positive/negative counts at each threshold to
    ``variables_to_update`` ({"tp": Variable, ...}), as Keras's ``metrics_utils`` does
    (``y_pred > threshold`` is a positive; a nonzero label is positive).

    Raises:
      ValueError: no or unknown variable keys; y_true and y_pred of incompatible shapes.
    """
    if multi_label and label_weights is not None:
        raise ValueError("`label_weights` for multilabel data should be handled outside of "
                         "`update_confusion_matrix_variables` when `multi_label` is True.")
    keys = (TRUE_POSITIVES, FALSE_POSITIVES, TRUE_NEGATIVES, FALSE_NEGATIVES)
    if not variables_to_update or any(k not in keys for k in variables_to_update):
        raise ValueError(f"Please provide at least one valid confusion matrix variable to "
                         f"update. Valid variable key options are: {list(keys)}. Received: "
                         f"{list(variables_to_update or [])}")
    state = next(iter(variables_to_update.values()))
    dtype = state.dtype
    y_true = cast(_follow(y_true, state), dtype)
    y_pred = cast(_follow(y_pred, state), dtype)
    with_epsilon = thresholds_distributed_evenly and (thresholds[0] < 0.0
                                                      or thresholds[-1] > 1.0)
    thresholds = _follow(np.asarray(thresholds, dtype=dtype), state)
    if sample_weight is None:
        y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
    else:
        sample_weight = cast(_follow(sample_weight, state), dtype)
        y_pred, y_true, sample_weight = squeeze_or_expand_dimensions(y_pred, y_true,
                                                                     sample_weight)
    if tuple(y_pred.shape) != tuple(y_true.shape):
        raise ValueError(f"Shapes {tuple(y_pred.shape)} and {tuple(y_true.shape)} are "
                         "incompatible")
    if top_k is not None:
        y_pred = _filter_top_k(y_pred, top_k)
    if class_id is not None:
        y_true = y_true[..., class_id:class_id + 1]
        y_pred = y_pred[..., class_id:class_id + 1]
    if thresholds_distributed_evenly:
        return _update_evenly(variables_to_update, y_true, y_pred, thresholds.shape[0],
                              multi_label, sample_weight, label_weights, with_epsilon)
    num_thresholds = thresholds.shape[0]
    if multi_label:  # [T, N, L]
        preds = reshape(y_pred, [1, *y_pred.shape])
        labels = reshape(cast(y_true, "bool"), [1, *y_true.shape])
        thresh = reshape(thresholds, [num_thresholds, 1, 1])
        shape = [1, *y_pred.shape]
    else:  # [T, N * L]
        preds = reshape(y_pred, [1, -1])
        labels = reshape(cast(y_true, "bool"), [1, -1])
        thresh = reshape(thresholds, [num_thresholds, 1])
        shape = [1, -1]
    pred_is_pos = greater(preds, thresh)
    weights = None
    if sample_weight is not None:
        weights = reshape(_broadcast_weights(sample_weight, y_pred), shape)
    if label_weights is not None and not multi_label:
        lw = _broadcast_weights(reshape(cast(_follow(label_weights, y_pred), dtype), [1, -1]),
                                y_pred)
        lw = reshape(lw, shape)
        weights = lw if weights is None else weights * lw

    def add(key, label, pred):
        hits = cast(logical_and(label, pred), dtype)
        if weights is not None:
            hits = hits * weights
        variables_to_update[key].assign_add(reduce_sum(hits, axis=1))

    pred_is_neg = logical_not(pred_is_pos)
    label_is_neg = logical_not(labels)
    if TRUE_POSITIVES in variables_to_update:
        add(TRUE_POSITIVES, labels, pred_is_pos)
    if FALSE_NEGATIVES in variables_to_update:
        add(FALSE_NEGATIVES, labels, pred_is_neg)
    if FALSE_POSITIVES in variables_to_update:
        add(FALSE_POSITIVES, label_is_neg, pred_is_pos)
    if TRUE_NEGATIVES in variables_to_update:
        add(TRUE_NEGATIVES, label_is_neg, pred_is_neg)


def _update_evenly(variables_to_update, y_true, y_pred, num_thresholds, multi_label,
                   sample_weight, label_weights, with_epsilon):
    """Keras's bucketed path for evenly spaced thresholds: each prediction falls in one
    bucket, and reversed running sums of the bucket totals give the counts."""
    dtype = y_true.dtype
    weights = 1.0
    if sample_weight is not None:
        weights = _broadcast_weights(sample_weight, y_pred)
        if not multi_label:
            weights = reshape(weights, [-1])
    if label_weights is not None:
        lw = _broadcast_weights(reshape(cast(_follow(label_weights, y_pred), dtype), [1, -1]),
                                y_pred)
        weights = weights * (lw if multi_label else reshape(lw, [-1]))
    y_pred = clip_by_value(y_pred, 0.0, 1.0)
    y_true = cast(cast(y_true, "bool"), dtype)
    if not multi_label:
        y_true = reshape(y_true, [-1])
        y_pred = reshape(y_pred, [-1])
    true_labels = y_true * weights
    false_labels = (1.0 - y_true) * weights
    buckets = ceil(y_pred * float(num_thresholds - 1)) - 1.0
    if with_epsilon:
        buckets = relu(buckets)
    buckets = cast(buckets, "int32")
    if multi_label:  # one segment range per label: [L, T] sums, then [T, L] counts
        true_labels, false_labels = transpose(true_labels), transpose(false_labels)
        num_labels = buckets.shape[1]
        offsets = reshape(_follow(np.arange(num_labels, dtype=np.int32) * num_thresholds,
                                  buckets), [-1, 1])
        ids = where(less(transpose(buckets), 0), -1, transpose(buckets) + offsets)

        def bucket_sums(data):
            sums = unsorted_segment_sum(data, ids, num_labels * num_thresholds)
            return reshape(sums, [num_labels, num_thresholds])

        tp = transpose(cumsum(bucket_sums(true_labels), axis=1, reverse=True))
        fp = transpose(cumsum(bucket_sums(false_labels), axis=1, reverse=True))
        total_true, total_false = reduce_sum(true_labels, axis=1), reduce_sum(false_labels,
                                                                              axis=1)
    else:
        tp = cumsum(unsorted_segment_sum(true_labels, buckets, num_thresholds), reverse=True)
        fp = cumsum(unsorted_segment_sum(false_labels, buckets, num_thresholds), reverse=True)
        total_true, total_false = reduce_sum(true_labels), reduce_sum(false_labels)
    if TRUE_POSITIVES in variables_to_update:
        variables_to_update[TRUE_POSITIVES].assign_add(tp)
    if FALSE_POSITIVES in variables_to_update:
        variables_to_update[FALSE_POSITIVES].assign_add(fp)
    if TRUE_NEGATIVES in variables_to_update:
        variables_to_update[TRUE_NEGATIVES].assign_add(total_false - fp)
    if FALSE_NEGATIVES in variables_to_update:
        variables_to_update[FALSE_NEGATIVES].assign_add(total_true - tp)


class _ConfusionMatrixConditionCount(Metric):
    def __init__(self, confusion_matrix_cond, thresholds=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._confusion_matrix_cond = confusion_matrix_cond
        self.init_thresholds = thresholds
        self.thresholds = _parse_thresholds(thresholds, default_threshold=0.5)
        self._thresholds_distributed_evenly = _evenly_distributed(self.thresholds)
        self.accumulator = self.add_weight("accumulator", shape=(len(self.thresholds),))

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Count the batch's weighted cases at each threshold."""
        return update_confusion_matrix_variables(
            {self._confusion_matrix_cond: self.accumulator}, y_true, y_pred,
            thresholds=self.thresholds,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly,
            sample_weight=sample_weight)

    def result(self):
        if len(self.thresholds) == 1:
            return self.accumulator[0]
        return self.accumulator.read_value()

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds}


class FalsePositives(_ConfusionMatrixConditionCount):
    """The weighted number of false positives (at each threshold)."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(FALSE_POSITIVES, thresholds=thresholds, name=name, dtype=dtype)


class FalseNegatives(_ConfusionMatrixConditionCount):
    """The weighted number of false negatives (at each threshold)."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(FALSE_NEGATIVES, thresholds=thresholds, name=name, dtype=dtype)


class TrueNegatives(_ConfusionMatrixConditionCount):
    """The weighted number of true negatives (at each threshold)."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(TRUE_NEGATIVES, thresholds=thresholds, name=name, dtype=dtype)


class TruePositives(_ConfusionMatrixConditionCount):
    """The weighted number of true positives (at each threshold)."""

    def __init__(self, thresholds=None, name=None, dtype=None):
        super().__init__(TRUE_POSITIVES, thresholds=thresholds, name=name, dtype=dtype)


class _PrecisionRecall(Metric):
    _second = None  # "fp" (precision) or "fn" (recall)

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.init_thresholds = thresholds
        self.top_k = top_k
        self.class_id = class_id
        default = 0.5 if top_k is None else NEG_INF
        self.thresholds = _parse_thresholds(thresholds, default_threshold=default)
        self._thresholds_distributed_evenly = _evenly_distributed(self.thresholds)
        n = len(self.thresholds)
        self.true_positives = self.add_weight("true_positives", shape=(n,))
        second = "false_positives" if self._second == FALSE_POSITIVES else "false_negatives"
        setattr(self, second, self.add_weight(second, shape=(n,)))
        self._other = getattr(self, second)

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Count the batch's weighted true positives and false positives (precision) or
        false negatives (recall) at each threshold."""
        return update_confusion_matrix_variables(
            {TRUE_POSITIVES: self.true_positives, self._second: self._other}, y_true, y_pred,
            thresholds=self.thresholds,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly,
            top_k=self.top_k, class_id=self.class_id, sample_weight=sample_weight)

    def result(self):
        result = _divide_no_nan(self.true_positives, add(self.true_positives, self._other))
        return result[0] if len(self.thresholds) == 1 else result

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "top_k": self.top_k, "class_id": self.class_id}


class Precision(_PrecisionRecall):
    """``tp / (tp + fp)`` at each threshold (one value for one threshold).

    Args:
      thresholds: a float or list of floats in [0, 1] (default 0.5; with ``top_k``, any
        prediction in the top k counts).
      top_k: only the top k predictions of each row count as positive.
      class_id: only this class's column counts.
      name, dtype: as ``Metric``.

    Raises:
      ValueError: a threshold outside [0, 1].
    """

    _second = FALSE_POSITIVES


class Recall(_PrecisionRecall):
    """``tp / (tp + fn)`` at each threshold (arguments as ``Precision``)."""

    _second = FALSE_NEGATIVES


class AUCCurve(str, enum.Enum):
    """Keras's ``metrics_utils.AUCCurve`` (a str, so it compares equal to its value)."""

    ROC = "ROC"
    PR = "PR"
    PR_GAIN = "PR_GAIN"

    __str__ = str.__str__


class AUCSummationMethod(str, enum.Enum):
    """Keras's ``metrics_utils.AUCSummationMethod`` (a str, as ``AUCCurve``)."""

    INTERPOLATION = "interpolation"
    MAJORING = "majoring"
    MINORING = "minoring"

    __str__ = str.__str__


_CURVES = {"roc": AUCCurve.ROC, "pr": AUCCurve.PR, "pr_gain": AUCCurve.PR_GAIN,
           "prgain": AUCCurve.PR_GAIN}
_SUMMATIONS = {m.value: m for m in AUCSummationMethod}


class AUC(Metric):
    """The area under the ROC or precision-recall curve, from confusion counts at
    ``num_thresholds`` thresholds (Keras's Riemann sums; the PR curve with "interpolation"
    uses Davis & Goadrich 2006's interpolation).

    Args:
      num_thresholds: thresholds evenly spaced over [0, 1] (> 1), the ends nudged by
        epsilon so predictions of exactly 0 and 1 count.
      curve: "ROC", "PR" (or "PR_GAIN").
      summation_method: "interpolation", "majoring" or "minoring".
      name, dtype: as ``Metric``.
      thresholds: explicit thresholds in [0, 1] instead of ``num_thresholds``.
      multi_label: one curve per label column, averaged (weighted by ``label_weights``).
      num_labels: the number of labels, to make the state before the first update.
      label_weights: non-negative weights of the labels.
      from_logits: apply a sigmoid to y_pred first.

    Raises:
      ValueError: an unknown curve or summation method, ``num_thresholds`` <= 1,
        ``num_labels`` without ``multi_label``.
    """

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation",
                 name=None, dtype=None, thresholds=None, multi_label=False, num_labels=None,
                 label_weights=None, from_logits=False):
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            self.num_thresholds = len(thresholds) + 2
            thresholds = sorted(thresholds)
            self._thresholds_distributed_evenly = _evenly_distributed(
                np.array([0.0, *thresholds, 1.0]))
        else:
            if num_thresholds <= 1:
                raise ValueError("Argument `num_thresholds` must be an integer > 1. "
                                 f"Received: num_thresholds={num_thresholds}")
            self.num_thresholds = num_thresholds
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1)
                          for i in range(num_thresholds - 2)]
            self._thresholds_distributed_evenly = True
        eps = _losses.epsilon()
        self._thresholds = np.array([0.0 - eps, *thresholds, 1.0 + eps])
        key = str(curve).lower()
        if key not in _CURVES:
            raise ValueError(f'Invalid AUC curve value: "{curve}". Expected values are '
                             '["PR", "ROC", "PR_GAIN"]')
        self.curve = _CURVES[key]
        if str(summation_method).lower() not in _SUMMATIONS:
            raise ValueError(f'Invalid AUC summation method value: "{summation_method}". '
                             'Expected values are ["interpolation", "majoring", "minoring"]')
        self.summation_method = _SUMMATIONS[str(summation_method).lower()]
        super().__init__(name=name, dtype=dtype)
        self.multi_label = multi_label
        self.num_labels = num_labels
        if label_weights is not None:
            weights = np.asarray(label_weights, dtype=self.dtype)
            if (weights < 0).any():
                raise ValueError("All values of `label_weights` must be non-negative.")
            self.label_weights = constant(weights)
        else:
            self.label_weights = None
        self._from_logits = from_logits
        self._built = False
        if multi_label:
            if num_labels:
                self._build((None, num_labels))
        else:
            if num_labels:
                raise ValueError("`num_labels` is needed only when `multi_label` is True.")
            self._build(None)

    @property
    def thresholds(self) -> list:
        """The thresholds, epsilon-nudged ends included."""
        return list(self._thresholds)

    def _build(self, shape):
        if self.multi_label:
            if len(shape) != 2:
                raise ValueError("`y_pred` must have rank 2 when `multi_label=True`. Found "
                                 f"rank {len(shape)}. Full shape received for `y_pred`: "
                                 f"{tuple(shape)}")
            self._num_labels = shape[1]
            variable_shape = (self.num_thresholds, self._num_labels)
        else:
            variable_shape = (self.num_thresholds,)
        self.true_positives = self.add_weight("true_positives", shape=variable_shape)
        self.true_negatives = self.add_weight("true_negatives", shape=variable_shape)
        self.false_positives = self.add_weight("false_positives", shape=variable_shape)
        self.false_negatives = self.add_weight("false_negatives", shape=variable_shape)
        self._built = True

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Add the batch's confusion counts at every threshold.

        Raises:
          ValueError: y_true and y_pred of incompatible shapes; a label count different from
            ``num_labels``/``label_weights``.
        """
        y_pred = convert_to_tensor(y_pred)
        if not self._built:
            self._build(tuple(y_pred.shape))
        if self.multi_label or self.label_weights is not None:
            labels = (np.shape(y_true)[-1] if np.ndim(y_true) else None)
            expected = (self._num_labels if self.multi_label
                        else self.label_weights.shape[0])
            if labels != expected or (self.label_weights is not None
                                      and self.label_weights.shape[0] != labels):
                raise ValueError("Number of labels is not consistent.")
        if self._from_logits:
            y_pred = sigmoid(y_pred)
        return update_confusion_matrix_variables(
            {TRUE_POSITIVES: self.true_positives, TRUE_NEGATIVES: self.true_negatives,
             FALSE_POSITIVES: self.false_positives, FALSE_NEGATIVES: self.false_negatives},
            y_true, y_pred, self._thresholds,
            thresholds_distributed_evenly=self._thresholds_distributed_evenly,
            sample_weight=sample_weight, multi_label=self.multi_label,
            label_weights=None if self.multi_label else self.label_weights)

    def _average(self, by_label):
        if self.label_weights is None:
            return reduce_mean(by_label)
        return _divide_no_nan(reduce_sum(by_label * self.label_weights),
                              reduce_sum(self.label_weights))

    def interpolate_pr_auc(self):
        """The PR-AUC with Davis & Goadrich's interpolation between thresholds."""
        n = self.num_thresholds
        tp, fp, fn = self.true_positives, self.false_positives, self.false_negatives
        dtp = tp[:n - 1] - tp[1:]
        p = tp + fp
        dp = p[:n - 1] - p[1:]
        prec_slope = _divide_no_nan(dtp, maximum(dp, 0.0))
        intercept = tp[1:] - prec_slope * p[1:]
        both = logical_and(greater(p[:n - 1], 0.0), greater(p[1:], 0.0))
        safe_p_ratio = where(both, _divide_no_nan(p[:n - 1], maximum(p[1:], 0.0)),
                             ones_like(p[1:]))
        increment = _divide_no_nan(prec_slope * (dtp + intercept * _log(safe_p_ratio)),
                                   maximum(tp[1:] + fn[1:], 0.0))
        if self.multi_label:
            return self._average(reduce_sum(increment, axis=0))
        return reduce_sum(increment)

    def result(self):
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self.interpolate_pr_auc()
        tp, tn = self.true_positives, self.true_negatives
        fp, fn = self.false_positives, self.false_negatives
        recall = _divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _divide_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, _divide_no_nan(tp, tp + fp)
        else:  # PR_GAIN
            scaling = _divide_no_nan(tp + fn, fp + tn)
            recall_gain = 1.0 - scaling * _divide_no_nan(fn, tp)
            precision_gain = 1.0 - scaling * _divide_no_nan(fp, tp)
            no_tp = equal(tp, 0.0)
            recall_gain = maximum(where(no_tp, zeros_like(recall_gain), recall_gain), 0.0)
            precision_gain = where(no_tp, ones_like(precision_gain), precision_gain)
            x, y = recall_gain, precision_gain
        n = self.num_thresholds
        if self.summation_method == "interpolation":
            heights = (y[:n - 1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = minimum(y[:n - 1], y[1:])
        else:
            heights = maximum(y[:n - 1], y[1:])
        terms = (x[:n - 1] - x[1:]) * heights
        if self.multi_label:
            return self._average(reduce_sum(terms, axis=0))
        return reduce_sum(terms)

    def reset_state(self):
        if self._built:
            for v in self._weights:
                v.assign(zeros_like(v))

    def get_config(self) -> dict:
        label_weights = (None if self.label_weights is None
                         else self.label_weights.numpy().tolist())
        config = {"num_thresholds": self.num_thresholds, "curve": self.curve.value,
                  "summation_method": self.summation_method.value,
                  "multi_label": self.multi_label,
                  "num_labels": self.num_labels, "label_weights": label_weights,
                  "from_logits": self._from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self.thresholds[1:-1]
        return {**super().get_config(), **config}


# ---- get / serialize / compile resolution ----------------------------------------------------

_CLASSES = (Metric, Reduce, Sum, Mean, MeanMetricWrapper, Accuracy, BinaryAccuracy,
            CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy,
            SparseTopKCategoricalAccuracy, MeanSquaredError, MeanAbsoluteError,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, RootMeanSquaredError,
            Hinge, SquaredHinge, CategoricalHinge, KLDivergence, Poisson, LogCoshError,
            CosineSimilarity, BinaryCrossentropy, CategoricalCrossentropy,
            SparseCategoricalCrossentropy, TruePositives, TrueNegatives, FalsePositives,
            FalseNegatives, Precision, Recall, AUC)
_FUNCTIONS = {
    "accuracy": accuracy, "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy,
    "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
    "cosine_similarity": cosine_similarity, "mean_squared_error": mean_squared_error,
    "mse": mse, "MSE": MSE, "mean_absolute_error": mean_absolute_error, "mae": mae, "MAE": MAE,
    "mean_absolute_percentage_error": mean_absolute_percentage_error, "mape": mape,
    "MAPE": MAPE, "mean_squared_logarithmic_error": mean_squared_logarithmic_error,
    "msle": msle, "MSLE": MSLE, "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy, "hinge": hinge,
    "squared_hinge": squared_hinge, "categorical_hinge": categorical_hinge,
    "kl_divergence": kl_divergence, "kld": kld, "KLD": KLD,
    "kullback_leibler_divergence": kullback_leibler_divergence, "poisson": poisson,
    "log_cosh": log_cosh, "logcosh": logcosh}
_OBJECTS = {**{c.__name__: c for c in _CLASSES}, **_FUNCTIONS}


def serialize(metric):
    """A Metric as ``{"class_name", "config"}``; a function as its name (Keras 2's forms)."""
    if isinstance(metric, Metric):
        return {"class_name": type(metric).__name__, "config": metric.get_config()}
    name = getattr(metric, "__name__", None)
    if name is None:
        raise ValueError(f"Cannot serialize {metric!r}: not a Metric or a named function")
    return name


def deserialize(config, custom_objects=None):
    """The metric a name or ``serialize`` dict describes: a function name gives the function,
    a class name an instance with default arguments.

    Raises:
      ValueError: an unknown name ("Unknown metric function: 'name'").
    """
    from .engine.serialization import _GLOBAL_CUSTOM_OBJECTS

    objects = {**_OBJECTS, **(custom_objects or {}), **_GLOBAL_CUSTOM_OBJECTS}
    if isinstance(config, dict):
        if "class_name" not in config:
            raise ValueError(f"Could not interpret serialized metric function: {config}")
        obj = objects.get(config["class_name"])
        if obj is None:
            raise ValueError(f"Unknown metric function: '{config['class_name']}'. "
                             f"{_losses._UNKNOWN}")
        return obj.from_config(dict(config.get("config") or {})) if isinstance(obj, type) \
            else obj
    obj = objects.get(config)
    if obj is None:
        raise ValueError(f"Unknown metric function: '{config}'. {_losses._UNKNOWN}")
    return obj() if isinstance(obj, type) else obj


def get(identifier):
    """A metric function or Metric from a name, a ``serialize`` dict or a callable.

    Raises:
      ValueError: anything else ("Could not interpret metric identifier: ...").
    """
    if isinstance(identifier, (dict, str)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier}")


def _shape_of(x) -> tuple:
    shape = getattr(x, "shape", x)
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    return tuple(shape)


def _custom_object_name(obj):
    if hasattr(obj, "name"):
        return obj.name
    if hasattr(obj, "__name__"):
        return obj.__name__
    return _snake(type(obj).__name__)


def get_metric_object(metric, y_true, y_pred):
    """The Metric ``Model.compile`` makes of one ``metrics=`` entry, as Keras 2's
    ``compile_utils`` (see the module docstring). ``y_true``/``y_pred``: a label and an
    output (Tensors, arrays or shapes). None gives None.

    Raises:
      ValueError: an entry that is neither a name, a dict, a callable nor a Metric.
    """
    if metric is None:
        return None
    if str(metric).lower() not in ("accuracy", "acc", "crossentropy", "ce"):
        metric_obj = get(metric)
    else:
        t_shape, p_shape = _shape_of(y_true), _shape_of(y_pred)
        is_binary = p_shape[-1] == 1
        is_sparse = len(t_shape) < len(p_shape) or (t_shape[-1] == 1 and p_shape[-1] > 1)
        if str(metric).lower() in ("accuracy", "acc"):
            metric_obj = (binary_accuracy if is_binary else
                          sparse_categorical_accuracy if is_sparse else categorical_accuracy)
        else:
            metric_obj = (binary_crossentropy if is_binary else
                          sparse_categorical_crossentropy if is_sparse
                          else categorical_crossentropy)
    if isinstance(metric_obj, _losses.Loss):
        metric_obj._allow_sum_over_batch_size = True
    if isinstance(metric_obj, Metric):
        return metric_obj
    name = metric if isinstance(metric, str) else _custom_object_name(metric)
    if name is None:
        raise ValueError(f"Metric should be a callable, received: {metric}")
    return MeanMetricWrapper(metric_obj, name=name)


def get_metric_function(metric, output_shape=None, loss_fn=None):
    """The metric function TF1 Keras (``training_utils_v1``) picks for one ``metrics=``
    entry: "accuracy"/"acc"/"crossentropy"/"ce" follow the loss and the output shape (see the
    module docstring); anything else goes through ``get``."""
    if metric not in ("accuracy", "acc", "crossentropy", "ce"):
        return get(metric)
    is_sparse = (isinstance(loss_fn, _losses.SparseCategoricalCrossentropy)
                 or (isinstance(loss_fn, _losses.LossFunctionWrapper)
                     and loss_fn.fn is _losses.sparse_categorical_crossentropy))
    is_binary = (isinstance(loss_fn, _losses.BinaryCrossentropy)
                 or (isinstance(loss_fn, _losses.LossFunctionWrapper)
                     and loss_fn.fn is _losses.binary_crossentropy))
    binary = (output_shape is not None and _shape_of(output_shape)[-1] == 1) or is_binary
    if metric in ("accuracy", "acc"):
        return (binary_accuracy if binary else
                sparse_categorical_accuracy if is_sparse else categorical_accuracy)
    return (binary_crossentropy if binary else
            sparse_categorical_crossentropy if is_sparse else categorical_crossentropy)


__all__ = sorted({c.__name__ for c in _CLASSES} | set(_FUNCTIONS) | {
    "deserialize", "get", "get_metric_function", "get_metric_object", "serialize"})
