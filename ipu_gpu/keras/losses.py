"""``keras.losses``: Keras 2's loss functions and Loss classes, on ipu_gpu ops.

The arithmetic is Keras 2's (tf-keras ``losses.py``/``backend.py``): y_true is cast to
y_pred's dtype; probabilities are clipped to [epsilon, 1 - epsilon] (``keras.backend``'s
epsilon, 1e-7) unless ``from_logits``, where the fused cross-entropy ops are used; the
per-sample losses average over the last axis. A ``Loss`` object then weights them
(``sample_weight`` broadcast as Keras's ``squeeze_or_expand_dimensions`` does) and reduces them
(``Reduction``): ``SUM_OVER_BATCH_SIZE`` (the ``AUTO`` default) divides the weighted sum by the
number of elements, 0 for an empty batch.

Deliberate differences: Keras's detection of probabilities made by a softmax/sigmoid op in a
graph (``_keras_logits``) does not exist here (eager Keras does not do it either);
``serialize`` writes Keras 2's ``{"class_name", "config"}`` form; ragged tensors do not exist.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import distribute
from . import backend as _backend
from ..core.convert import constant, convert_to_tensor
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError
from ..ops.array import size
from ..ops.indexing import where
from ..ops.math import (abs, add, cast, clip_by_value, equal, log, logical_or, maximum, multiply,
                        not_equal, softplus, square)
from ..ops.nn import (l2_normalize, sigmoid_cross_entropy_with_logits,
                      softmax_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits)
from ..ops.reduction import reduce_all, reduce_max, reduce_mean, reduce_sum
from ..ops.shape import expand_dims, reshape, squeeze, transpose
from ..ops.sort import boolean_mask, scatter_nd
from .engine.serialization import get_keras_object


def epsilon() -> float:
    """``keras.backend.epsilon()`` (1e-7 unless set)."""
    return _backend.epsilon()


def floatx() -> str:
    """``keras.backend.floatx()`` ("float32" unless set)."""
    return _backend.floatx()


def _follow(x, like):
    """``x`` as a Tensor on ``like``'s device: a host value beside a GPU tensor is copied to
    the GPU (as TF places constants on the device of the op using them), and back. A TF1
    graph tensor stays as it is (the session places it)."""
    if _backend.is_graph_tensor(x) or _backend.is_graph_tensor(like):
        return x if _backend.is_graph_tensor(x) else convert_to_tensor(x)
    x = convert_to_tensor(x)
    if like is None or x.device == like.device:
        return x
    host = x.numpy()  # syncs device
    return constant(host) if "GPU" in like.device else convert_to_tensor(host)


class Reduction:
    """How a ``Loss`` reduces its weighted per-sample losses (``tf.keras.losses.Reduction``)."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        """Raises ValueError unless ``key`` is one of ``all()`` (Keras's message)."""
        if key not in cls.all():
            raise ValueError(f'Invalid Reduction Key: {key}. Expected keys are "{cls.all()}"')


ReductionV2 = Reduction


# ---- shape helpers (Keras's losses_utils) -----------------------------------------------------

def remove_squeezable_dimensions(labels, predictions, expected_rank_diff=0):
    """Squeeze a last axis of size 1 from ``predictions`` or ``labels`` when their ranks
    differ by ``expected_rank_diff`` plus or minus one."""
    rank_diff = predictions.ndim - labels.ndim
    if rank_diff == expected_rank_diff + 1 and predictions.shape[-1] == 1:
        predictions = squeeze(predictions, [-1])
    elif rank_diff == expected_rank_diff - 1 and labels.shape[-1] == 1:
        labels = squeeze(labels, [-1])
    return labels, predictions


def squeeze_or_expand_dimensions(y_pred, y_true=None, sample_weight=None):
    """Keras's rank alignment: a last axis of size 1 is squeezed from y_true or y_pred when
    their ranks differ by one, and ``sample_weight`` gains or loses a last axis to match
    y_pred's rank. Returns ``(y_pred, y_true)`` or ``(y_pred, y_true, sample_weight)``."""
    if y_true is not None:
        if y_pred.ndim - y_true.ndim != 1 or y_pred.shape[-1] == 1:
            y_true, y_pred = remove_squeezable_dimensions(y_true, y_pred)
    if sample_weight is None:
        return y_pred, y_true
    if sample_weight.ndim == 0:
        return y_pred, y_true, sample_weight
    if sample_weight.ndim - y_pred.ndim == 1:
        sample_weight = squeeze(sample_weight, [-1])
    elif y_pred.ndim - sample_weight.ndim == 1:
        sample_weight = expand_dims(sample_weight, -1)
    return y_pred, y_true, sample_weight


def _num_elements(x) -> int:
    return int(np.prod(x.shape, dtype=np.int64))


def _known_dims(x) -> tuple:
    """x's shape, a TF1 graph tensor's unknown dimensions as 1 (compatible with any)."""
    return tuple(1 if d is None else d for d in x.shape)


def reduce_weighted_loss(weighted_losses, reduction=Reduction.SUM_OVER_BATCH_SIZE):
    """The reduced loss: as is (NONE), the sum (SUM), or the sum over the number of
    elements, 0 when there are none (SUM_OVER_BATCH_SIZE)."""
    if reduction == Reduction.NONE:
        return weighted_losses
    loss = reduce_sum(weighted_losses)
    if reduction == Reduction.SUM_OVER_BATCH_SIZE and None in tuple(weighted_losses.shape):
        n = cast(size(weighted_losses), loss.dtype)  # a TF1 graph tensor's size in the run
        return loss / maximum(n, 1.0)  # divide_no_nan: an empty batch's sum is 0
    if reduction == Reduction.SUM_OVER_BATCH_SIZE:
        n = _num_elements(weighted_losses)
        loss = loss / float(n) if n else loss * 0.0  # divide_no_nan
    return loss


def compute_weighted_loss(losses, sample_weight=None, reduction=Reduction.SUM_OVER_BATCH_SIZE):
    """``losses * sample_weight`` reduced by ``reduction`` (AUTO is SUM_OVER_BATCH_SIZE);
    integer losses are computed in float32 and cast back, as Keras does.

    Raises:
      ValueError: an unknown reduction.
      InvalidArgumentError: ``sample_weight`` does not broadcast to the losses.
    """
    Reduction.validate(reduction)
    if reduction == Reduction.AUTO:
        reduction = Reduction.SUM_OVER_BATCH_SIZE
    losses = _backend.as_tensor(losses)
    input_dtype = losses.dtype
    if input_dtype.kind != "f":
        losses = cast(losses, "float32")
    if sample_weight is None:
        sample_weight = 1.0
    sample_weight = _follow(_numeric(sample_weight, "sample_weight", "compute_weighted_loss"),
                            losses)
    sample_weight = cast(sample_weight, losses.dtype)
    losses, _, sample_weight = squeeze_or_expand_dimensions(losses, None, sample_weight)
    try:
        np.broadcast_shapes(_known_dims(losses), _known_dims(sample_weight))
    except ValueError:
        raise InvalidArgumentError(
            f"Incompatible shapes: {list(losses.shape)} vs. {list(sample_weight.shape)}: "
            "sample_weight must broadcast to the per-sample losses") from None
    loss = reduce_weighted_loss(multiply(losses, sample_weight), reduction)
    if input_dtype.kind != "f":
        loss = cast(loss, input_dtype)
    return loss


# ---- the Loss classes --------------------------------------------------------------------------

class Loss:
    """Base class of the Keras losses: subclasses define ``call(y_true, y_pred)`` returning the
    per-sample losses; ``__call__`` weights and reduces them.

    Args:
      reduction: a ``Reduction`` value (default AUTO: SUM_OVER_BATCH_SIZE).
      name: the loss's name.

    Raises:
      ValueError: an unknown reduction.
    """

    def __init__(self, reduction=Reduction.AUTO, name=None):
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name
        self._allow_sum_over_batch_size = False  # compile() sets it for its losses

    def __call__(self, y_true, y_pred, sample_weight=None):
        """The weighted, reduced loss.

        Args:
          y_true: ground truth values.
          y_pred: predictions.
          sample_weight: optional weights: a scalar, one per sample, or one per element;
            broadcast to the per-sample losses.

        Returns:
          A scalar Tensor (a Tensor of per-sample losses with ``Reduction.NONE``).

        Raises:
          ValueError: AUTO or SUM_OVER_BATCH_SIZE reduction under a ``tf.distribute``
            strategy outside ``compile`` (Keras's error).
        """
        losses, mask = self._call_with_mask(y_true, y_pred)
        reduction = self._get_reduction()
        if mask is not None:
            sample_weight = _apply_valid_mask(losses, sample_weight, mask, reduction)
        return compute_weighted_loss(losses, sample_weight, reduction=reduction)

    def _call_with_mask(self, y_true, y_pred):
        return self.call(y_true, y_pred), None

    def call(self, y_true, y_pred):
        """The per-sample losses (subclasses implement it)."""
        raise NotImplementedError("Must be implemented in subclasses.")

    @classmethod
    def from_config(cls, config):
        """A loss from ``get_config``'s dict."""
        return cls(**config)

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}

    def _get_reduction(self):
        if (not self._allow_sum_over_batch_size and distribute.has_strategy()
                and self.reduction in (Reduction.AUTO, Reduction.SUM_OVER_BATCH_SIZE)):
            raise ValueError(
                "Please use `tf.keras.losses.Reduction.SUM` or "
                "`tf.keras.losses.Reduction.NONE` for loss reduction when losses are used with "
                "`tf.distribute.Strategy`, except for specifying losses in `Model.compile()` "
                "for use by the built-in training looop `Model.fit()`.\nPlease see "
                "https://www.tensorflow.org/tutorials/distribute/custom_training for more "
                "details.")
        if self.reduction == Reduction.AUTO:
            return Reduction.SUM_OVER_BATCH_SIZE
        return self.reduction


def _apply_valid_mask(losses, sample_weight, mask, reduction):
    """Keras's ``apply_valid_mask``: masked-out losses get weight 0, and the others are scaled
    so that SUM_OVER_BATCH_SIZE averages over the valid entries only."""
    mask = cast(mask, losses.dtype)
    if reduction in (Reduction.AUTO, Reduction.SUM_OVER_BATCH_SIZE):
        valid = reduce_sum(mask)
        mask = mask * (float(_num_elements(mask)) / valid)
    if sample_weight is None:
        return mask
    sample_weight = cast(_follow(sample_weight, mask), mask.dtype)
    mask, _, sample_weight = squeeze_or_expand_dimensions(mask, sample_weight=sample_weight)
    return sample_weight * mask


class LossFunctionWrapper(Loss):
    """A ``Loss`` around a function ``fn(y_true, y_pred, **kwargs)``.

    Args:
      fn: the per-sample loss function.
      reduction, name: as ``Loss``.
      **kwargs: keyword arguments of ``fn``.
    """

    def __init__(self, fn, reduction=Reduction.AUTO, name=None, **kwargs):
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        if isinstance(y_pred, Tensor) and isinstance(y_true, Tensor):
            y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        config = {k: (v.numpy() if isinstance(v, Tensor) else v)
                  for k, v in self._fn_kwargs.items()}
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config):
        """A loss from ``get_config``'s dict; tf-keras's newer configs name the function
        (``fn``), which only a bare LossFunctionWrapper needs."""
        config = dict(config)
        fn = config.pop("fn", None)
        if cls is LossFunctionWrapper:
            config["fn"] = get(fn)
        return cls(**config)


class MeanSquaredError(LossFunctionWrapper):
    """``mean(square(y_true - y_pred), axis=-1)``, weighted and reduced."""

    def __init__(self, reduction=Reduction.AUTO, name="mean_squared_error"):
        super().__init__(mean_squared_error, name=name, reduction=reduction)


class MeanAbsoluteError(LossFunctionWrapper):
    """``mean(abs(y_true - y_pred), axis=-1)``, weighted and reduced."""

    def __init__(self, reduction=Reduction.AUTO, name="mean_absolute_error"):
        super().__init__(mean_absolute_error, name=name, reduction=reduction)


class MeanAbsolutePercentageError(LossFunctionWrapper):
    """``100 * mean(abs((y_true - y_pred) / y_true), axis=-1)``, weighted and reduced."""

    def __init__(self, reduction=Reduction.AUTO, name="mean_absolute_percentage_error"):
        super().__init__(mean_absolute_percentage_error, name=name, reduction=reduction)


class MeanSquaredLogarithmicError(LossFunctionWrapper):
    """``mean(square(log(y_true + 1) - log(y_pred + 1)), axis=-1)``, weighted and reduced."""

    def __init__(self, reduction=Reduction.AUTO, name="mean_squared_logarithmic_error"):
        super().__init__(mean_squared_logarithmic_error, name=name, reduction=reduction)


class BinaryCrossentropy(LossFunctionWrapper):
    """Binary cross-entropy (``binary_crossentropy``), weighted and reduced.

    Args:
      from_logits: y_pred holds logits rather than probabilities.
      label_smoothing: in [0, 1]: labels move towards 0.5 by this amount.
      axis: the axis the per-sample mean runs over.
      reduction, name: as ``Loss``.
    """

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction=Reduction.AUTO, name="binary_crossentropy"):
        super().__init__(binary_crossentropy, name=name, reduction=reduction,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)
        self.from_logits = from_logits


class CategoricalCrossentropy(LossFunctionWrapper):
    """Categorical cross-entropy of one-hot labels (``categorical_crossentropy``), weighted
    and reduced.

    Args:
      from_logits: y_pred holds logits rather than probabilities.
      label_smoothing: in [0, 1]: labels move towards 1 / num_classes by this amount.
      axis: the class axis.
      reduction, name: as ``Loss``.
    """

    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1,
                 reduction=Reduction.AUTO, name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, name=name, reduction=reduction,
                         from_logits=from_logits, label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Categorical cross-entropy of integer labels (``sparse_categorical_crossentropy``),
    weighted and reduced; with ``ignore_class``, labels of that class count neither in the sum
    nor (SUM_OVER_BATCH_SIZE) in the number averaged over.

    Args:
      from_logits: y_pred holds logits rather than probabilities.
      ignore_class: an optional label value to ignore.
      reduction, name: as ``Loss``.
    """

    def __init__(self, from_logits=False, ignore_class=None, reduction=Reduction.AUTO,
                 name="sparse_categorical_crossentropy"):
        super().__init__(sparse_categorical_crossentropy, name=name, reduction=reduction,
                         from_logits=from_logits, ignore_class=ignore_class)

    def _call_with_mask(self, y_true, y_pred):
        if self._fn_kwargs.get("ignore_class") is None:
            return self.call(y_true, y_pred), None
        if isinstance(y_pred, Tensor) and isinstance(y_true, Tensor):
            y_pred, y_true = squeeze_or_expand_dimensions(y_pred, y_true)
        return _sparse_categorical_crossentropy(y_true, y_pred, **self._fn_kwargs)


class CosineSimilarity(LossFunctionWrapper):
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)``, weighted and reduced."""

    def __init__(self, axis=-1, reduction=Reduction.AUTO, name="cosine_similarity"):
        super().__init__(cosine_similarity, reduction=reduction, name=name, axis=axis)


class Hinge(LossFunctionWrapper):
    """``mean(maximum(1 - y_true * y_pred, 0), axis=-1)`` (0/1 labels become -1/1)."""

    def __init__(self, reduction=Reduction.AUTO, name="hinge"):
        super().__init__(hinge, name=name, reduction=reduction)


class SquaredHinge(LossFunctionWrapper):
    """``mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)`` (0/1 labels become -1/1)."""

    def __init__(self, reduction=Reduction.AUTO, name="squared_hinge"):
        super().__init__(squared_hinge, name=name, reduction=reduction)


class CategoricalHinge(LossFunctionWrapper):
    """``maximum(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0)``."""

    def __init__(self, reduction=Reduction.AUTO, name="categorical_hinge"):
        super().__init__(categorical_hinge, name=name, reduction=reduction)


class Poisson(LossFunctionWrapper):
    """``mean(y_pred - y_true * log(y_pred + epsilon), axis=-1)``."""

    def __init__(self, reduction=Reduction.AUTO, name="poisson"):
        super().__init__(poisson, name=name, reduction=reduction)


class LogCosh(LossFunctionWrapper):
    """``mean(log(cosh(y_pred - y_true)), axis=-1)``."""

    def __init__(self, reduction=Reduction.AUTO, name="log_cosh"):
        super().__init__(log_cosh, name=name, reduction=reduction)


class KLDivergence(LossFunctionWrapper):
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to [epsilon, 1]."""

    def __init__(self, reduction=Reduction.AUTO, name="kl_divergence"):
        super().__init__(kl_divergence, name=name, reduction=reduction)


class Huber(LossFunctionWrapper):
    """The Huber loss: quadratic for errors up to ``delta``, linear beyond.

    Args:
      delta: where the loss turns from quadratic to linear.
      reduction, name: as ``Loss``.
    """

    def __init__(self, delta=1.0, reduction=Reduction.AUTO, name="huber_loss"):
        super().__init__(huber, name=name, reduction=reduction, delta=delta)


# ---- the loss functions ------------------------------------------------------------------------

def _numeric(x, arg, fn):
    """``x`` as a numeric Tensor (a TF1 graph tensor as it is); TypeError naming ``arg``
    otherwise."""
    if _backend.is_graph_tensor(x):
        if np.dtype(x.dtype).kind not in "fiub":
            raise TypeError(f"{fn}: {arg} must be a numeric tensor, got {x.dtype}")
        return x
    try:
        x = convert_to_tensor(x)
    except TypeError as e:
        raise TypeError(f"{fn}: {arg} must be a numeric tensor, got "
                        f"{getattr(x, 'dtype', type(x).__name__)} ({e})") from None
    if x.dtype.kind not in "fiub":
        raise TypeError(f"{fn}: {arg} must be a numeric tensor, got {x.dtype}")
    return x


def _predictions(y_pred, fn):
    return _numeric(y_pred, "y_pred", fn)


def _labels_like(y_true, y_pred, fn):
    """y_true cast to y_pred's dtype (Keras's ``tf.cast(y_true, y_pred.dtype)``)."""
    return cast(_follow(_numeric(y_true, "y_true", fn), y_pred), y_pred.dtype)


def _prepare(y_true, y_pred, fn):
    y_pred = _predictions(y_pred, fn)
    return _labels_like(y_true, y_pred, fn), y_pred


def _eps(dtype):
    """(epsilon, 1 - epsilon) as ``dtype`` holds them, as Python floats."""
    t = np.dtype(dtype).type
    e = t(epsilon())
    return float(e), float(t(1) - e)


def _mean_last(x, axis=-1):
    if x.dtype.kind == "b":
        x = cast(x, floatx())
    return reduce_mean(x, axis=axis)


def mean_squared_error(y_true, y_pred):
    """``mean(square(y_true - y_pred), axis=-1)``: one loss per sample."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_error")
    return _mean_last(square(y_pred - y_true))


def mean_absolute_error(y_true, y_pred):
    """``mean(abs(y_true - y_pred), axis=-1)``."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_error")
    return _mean_last(abs(y_pred - y_true))


def mean_absolute_percentage_error(y_true, y_pred):
    """``100 * mean(abs((y_true - y_pred) / maximum(abs(y_true), epsilon)), axis=-1)``."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_percentage_error")
    diff = abs((y_true - y_pred) / maximum(abs(y_true), epsilon()))
    return 100.0 * _mean_last(diff)


def mean_squared_logarithmic_error(y_true, y_pred):
    """``mean(square(log(max(y_pred, eps) + 1) - log(max(y_true, eps) + 1)), axis=-1)``."""
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_logarithmic_error")
    first_log = log(maximum(y_pred, epsilon()) + 1.0)
    second_log = log(maximum(y_true, epsilon()) + 1.0)
    return _mean_last(square(first_log - second_log))


def _maybe_convert_labels(y_true):
    """0/1 labels become -1/1 (hinge losses); other labels are left alone."""
    is_binary = reduce_all(logical_or(equal(y_true, 0), equal(y_true, 1)))
    if _backend.is_graph_tensor(is_binary):  # a TF1 graph: decided in the run
        return where(is_binary, 2.0 * y_true - 1.0, y_true)
    if bool(is_binary):  # syncs device
        return 2.0 * y_true - 1.0
    return y_true


def squared_hinge(y_true, y_pred):
    """``mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)``; 0/1 labels become -1/1."""
    y_true, y_pred = _prepare(y_true, y_pred, "squared_hinge")
    y_true = _maybe_convert_labels(y_true)
    return _mean_last(square(maximum(1.0 - y_true * y_pred, 0.0)))


def hinge(y_true, y_pred):
    """``mean(maximum(1 - y_true * y_pred, 0), axis=-1)``; 0/1 labels become -1/1."""
    y_true, y_pred = _prepare(y_true, y_pred, "hinge")
    y_true = _maybe_convert_labels(y_true)
    return _mean_last(maximum(1.0 - y_true * y_pred, 0.0))


def categorical_hinge(y_true, y_pred):
    """``maximum(max((1 - y_true) * y_pred, -1) - sum(y_true * y_pred, -1) + 1, 0)``."""
    y_true, y_pred = _prepare(y_true, y_pred, "categorical_hinge")
    pos = reduce_sum(y_true * y_pred, axis=-1)
    neg = reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return maximum(neg - pos + 1.0, 0.0)


def huber(y_true, y_pred, delta=1.0):
    """The Huber loss, ``mean(0.5 * e**2 if |e| <= delta else delta * |e| - 0.5 * delta**2)``
    over the last axis, computed in ``floatx`` as Keras does."""
    dtype = floatx()
    y_pred = cast(_predictions(y_pred, "huber"), dtype)
    y_true = cast(_labels_like(y_true, y_pred, "huber"), dtype)
    error = y_pred - y_true
    abs_error = abs(error)
    t = np.dtype(dtype).type
    half_delta_sq = float(t(0.5) * (t(delta) * t(delta)))
    delta = float(t(delta))
    return _mean_last(where(abs_error <= delta, 0.5 * square(error),
                            delta * abs_error - half_delta_sq))


def log_cosh(y_true, y_pred):
    """``mean(x + softplus(-2x) - log(2))`` of the error x, over the last axis."""
    y_true, y_pred = _prepare(y_true, y_pred, "log_cosh")
    x = y_pred - y_true
    log2 = float(y_pred.dtype.type(math.log(2.0)))
    return _mean_last(x + softplus(-2.0 * x) - log2)


def _check_axis(axis):
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise ValueError(f"`axis` must be of type `int`. Received: axis={axis} of type "
                         f"{type(axis)}")


def _check_compatible(target, output):
    if tuple(target.shape) != tuple(output.shape):
        raise ValueError(f"Shapes {tuple(target.shape)} and {tuple(output.shape)} are "
                         "incompatible")


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Categorical cross-entropy of one-hot (or soft) labels along ``axis``.

    Probabilities are normalised to sum 1 and clipped to [epsilon, 1 - epsilon]; logits go
    through ``softmax_cross_entropy_with_logits``. ``label_smoothing`` replaces y_true by
    ``y_true * (1 - label_smoothing) + label_smoothing / num_classes``.

    Raises:
      ValueError: a non-int ``axis``; y_true and y_pred of different shapes.
    """
    _check_axis(axis)
    y_true, y_pred = _prepare(y_true, y_pred, "categorical_crossentropy")
    if y_pred.ndim and y_pred.shape[-1] == 1:
        warnings.warn("In loss categorical_crossentropy, expected y_pred.shape to be "
                      "(batch_size, num_classes) with num_classes > 1. Received: "
                      f"y_pred.shape={tuple(y_pred.shape)}. Consider using "
                      "'binary_crossentropy' if you only have 2 classes.", SyntaxWarning,
                      stacklevel=2)
    t = y_pred.dtype.type
    smoothing = t(label_smoothing)
    if smoothing:  # in y_pred's dtype, as Keras's tensor arithmetic
        num_classes = t(y_true.shape[axis])
        y_true = y_true * float(t(1) - smoothing) + float(smoothing / num_classes)
    _check_compatible(y_true, y_pred)
    if from_logits:
        return softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    output = y_pred / reduce_sum(y_pred, axis, keepdims=True)
    lo, hi = _eps(y_pred.dtype)
    output = clip_by_value(output, lo, hi)
    return -reduce_sum(y_true * log(output), axis)


def _sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1,
                                     ignore_class=None):
    """Keras's ``backend.sparse_categorical_crossentropy``: (losses, valid mask or None)."""
    fn = "sparse_categorical_crossentropy"
    output = _predictions(y_pred, fn)
    if output.dtype.kind != "f":
        raise TypeError(f"{fn}: y_pred must be a floating-point tensor, got {output.dtype}")
    target = cast(_follow(_numeric(y_true, "y_true", fn), output), "int64")
    if not from_logits:
        lo, hi = _eps(output.dtype)
        output = log(clip_by_value(output, lo, hi))
    rank = output.ndim
    if rank == 0:
        raise ValueError(f"{fn}: y_pred must have rank >= 1 (a class axis), got a scalar")
    axis %= rank
    if axis != rank - 1:
        output = transpose(output, [*range(axis), *range(axis + 1, rank), axis])
    output_shape = tuple(output.shape)
    update_shape = target.ndim != rank - 1
    if update_shape:
        target = reshape(target, [-1])
        output = reshape(output, [-1, output_shape[-1]])
    if ignore_class is not None:
        valid = not_equal(target, ignore_class)
        target = boolean_mask(target, valid)
        output = boolean_mask(output, valid)
    if tuple(target.shape) != tuple(output.shape[:-1]):
        raise ValueError(f"{fn}: y_true must hold one class index per prediction: shape "
                         f"{list(output_shape[:-1])} (y_pred without its class axis), got "
                         f"{list(np.shape(y_true))}")
    res = sparse_softmax_cross_entropy_with_logits(labels=target, logits=output)
    if ignore_class is not None:
        valid = reshape(valid, output_shape[:-1])
        res = scatter_nd(where(valid), res, list(output_shape[:-1]))
        return res, valid
    if update_shape and rank >= 3:
        res = reshape(res, output_shape[:-1])
    return res, None


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1,
                                    ignore_class=None):
    """Categorical cross-entropy of integer class indices (y_true, cast to int64) against
    probabilities (clipped to [epsilon, 1 - epsilon], then their log taken as logits) or
    logits, through ``sparse_softmax_cross_entropy_with_logits``. With ``ignore_class``,
    those entries give 0.

    Raises:
      ValueError: y_true does not hold one index per prediction.
      InvalidArgumentError: an index outside [0, num_classes).
    """
    return _sparse_categorical_crossentropy(y_true, y_pred, from_logits, axis, ignore_class)[0]


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy averaged over ``axis``: probabilities clipped to [epsilon,
    1 - epsilon] with ``-(y log(p + eps) + (1 - y) log(1 - p + eps))``, or logits through
    ``sigmoid_cross_entropy_with_logits``; ``label_smoothing`` moves labels towards 0.5."""
    y_true, y_pred = _prepare(y_true, y_pred, "binary_crossentropy")
    t = y_pred.dtype.type
    smoothing = t(label_smoothing)
    if smoothing:  # in y_pred's dtype, as Keras's tensor arithmetic
        y_true = y_true * float(t(1) - smoothing) + float(t(0.5) * smoothing)
    if from_logits:
        bce = sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        lo, hi = _eps(y_pred.dtype)
        output = clip_by_value(y_pred, lo, hi)
        eps = epsilon()
        bce = -(y_true * log(output + eps) + (1.0 - y_true) * log(1.0 - output + eps))
    return _mean_last(bce, axis)


def kl_divergence(y_true, y_pred):
    """``sum(y_true * log(y_true / y_pred), axis=-1)``, both clipped to [epsilon, 1]."""
    y_true, y_pred = _prepare(y_true, y_pred, "kl_divergence")
    e = epsilon()
    y_true = clip_by_value(y_true, e, 1.0)
    y_pred = clip_by_value(y_pred, e, 1.0)
    return reduce_sum(y_true * log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    """``mean(y_pred - y_true * log(y_pred + epsilon), axis=-1)``."""
    y_true, y_pred = _prepare(y_true, y_pred, "poisson")
    return _mean_last(y_pred - y_true * log(add(y_pred, epsilon())))


def cosine_similarity(y_true, y_pred, axis=-1):
    """``-sum(l2_normalize(y_true) * l2_normalize(y_pred), axis)``: -1 for parallel vectors,
    0 for orthogonal ones and where either is zero."""
    y_pred = _backend.as_tensor(y_pred)
    y_true = l2_normalize(_follow(y_true, y_pred), axis=axis)
    y_pred = l2_normalize(y_pred, axis=axis)
    return -reduce_sum(y_true * y_pred, axis=axis)


bce = BCE = binary_crossentropy
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
huber_loss = huber


def is_categorical_crossentropy(loss) -> bool:
    """Whether ``loss`` is categorical cross-entropy (class, wrapper, function or name)."""
    return (isinstance(loss, CategoricalCrossentropy)
            or (isinstance(loss, LossFunctionWrapper) and loss.fn == categorical_crossentropy)
            or getattr(loss, "__name__", None) == "categorical_crossentropy"
            or loss == "categorical_crossentropy")


_CLASSES = (Loss, LossFunctionWrapper, MeanSquaredError, MeanAbsoluteError,
            MeanAbsolutePercentageError, MeanSquaredLogarithmicError, BinaryCrossentropy,
            CategoricalCrossentropy, SparseCategoricalCrossentropy, CosineSimilarity, Hinge,
            SquaredHinge, CategoricalHinge, Poisson, LogCosh, KLDivergence, Huber)
_FUNCTIONS = {f.__name__: f for f in (
    mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
    mean_squared_logarithmic_error, binary_crossentropy, categorical_crossentropy,
    sparse_categorical_crossentropy, hinge, squared_hinge, categorical_hinge, huber,
    kl_divergence, poisson, log_cosh, cosine_similarity)}
_OBJECTS = {**{c.__name__: c for c in _CLASSES}, **_FUNCTIONS,
            "bce": bce, "BCE": BCE, "mse": mse, "MSE": MSE, "mae": mae, "MAE": MAE, "mape": mape,
            "MAPE": MAPE, "msle": msle, "MSLE": MSLE, "kld": kld, "KLD": KLD,
            "kullback_leibler_divergence": kl_divergence, "logcosh": logcosh,
            "huber_loss": huber_loss}


_UNKNOWN = ("Please ensure you are using a `keras.utils.custom_object_scope` and that this "
            "object is included in the scope.")


def serialize(loss):
    """A Loss as ``{"class_name", "config"}``; a function as its name (Keras 2's forms)."""
    if loss is None:
        return None
    if isinstance(loss, Loss):
        return {"class_name": type(loss).__name__, "config": loss.get_config()}
    name = getattr(loss, "__name__", None)
    if name is None:
        raise ValueError(f"Cannot serialize {loss!r}: not a Loss or a named function")
    return name


def deserialize(name, custom_objects=None):
    """The loss a name or ``serialize`` dict describes: a function name gives the function,
    a class name an instance with default arguments.

    Raises:
      ValueError: an unknown name ("Unknown loss function: 'name'").
    """
    from .engine.serialization import _GLOBAL_CUSTOM_OBJECTS

    objects = {**_OBJECTS, **(custom_objects or {}), **_GLOBAL_CUSTOM_OBJECTS}
    if isinstance(name, dict):
        if "class_name" not in name:
            raise ValueError(f"Could not interpret serialized loss function: {name}")
        cls = objects.get(name["class_name"])
        if cls is None:
            raise ValueError(f"Unknown loss function: '{name['class_name']}'. {_UNKNOWN}")
        config = dict(name.get("config") or {})
        return cls.from_config(config) if isinstance(cls, type) else cls
    obj = objects.get(name)
    if obj is None:
        raise ValueError(f"Unknown loss function: '{name}'. {_UNKNOWN}")
    return obj() if isinstance(obj, type) else obj


def get(identifier):
    """A loss from None (None), a name or dict (``deserialize``) or a callable (as is).

    Raises:
      ValueError: anything else ("Could not interpret loss function identifier: ...").
    """
    return get_keras_object(identifier, deserialize, "loss function")


__all__ = ["BCE", "BinaryCrossentropy", "CategoricalCrossentropy", "CategoricalHinge",
           "CosineSimilarity", "Hinge", "Huber", "KLD", "KLDivergence", "LogCosh", "Loss",
           "LossFunctionWrapper", "MAE", "MAPE", "MSE", "MSLE", "MeanAbsoluteError",
           "MeanAbsolutePercentageError", "MeanSquaredError", "MeanSquaredLogarithmicError",
           "Poisson", "Reduction", "SparseCategoricalCrossentropy", "SquaredHinge", "bce",
           "binary_crossentropy", "categorical_crossentropy", "categorical_hinge",
           "compute_weighted_loss", "cosine_similarity", "deserialize", "get", "hinge",
           "huber", "huber_loss", "is_categorical_crossentropy", "kl_divergence", "kld",
           "kullback_leibler_divergence", "log_cosh", "logcosh", "mae", "mape",
           "mean_absolute_error", "mean_absolute_percentage_error", "mean_squared_error",
           "mean_squared_logarithmic_error", "mse", "msle", "poisson", "serialize",
           "sparse_categorical_crossentropy", "squared_hinge"]
