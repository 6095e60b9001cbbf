"""``tf.estimator.ModeKeys`` and ``tf.estimator.EstimatorSpec``: what a ``model_fn`` returns,
validated as TF 1.15's ``model_fn.py`` validates it (same messages)."""

from __future__ import annotations

import collections

__all__ = ["EstimatorSpec", "ModeKeys"]


class ModeKeys:
    """Standard names for the estimator modes: ``train``, ``eval``, ``infer``."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = "infer"


LOSS_METRIC_KEY = "loss"


def is_tensor(x) -> bool:
    from ..core.tensor import Tensor
    from ..graph.core import GraphTensor

    return isinstance(x, (GraphTensor, Tensor))


def is_tensor_or_operation(x) -> bool:
    from ..graph.core import Operation

    return is_tensor(x) or isinstance(x, Operation)


def check_is_tensor(x, name):
    if not is_tensor(x):
        raise TypeError(f"{name} must be Tensor, given: {x}")
    return x


def check_is_tensor_or_operation(x, name):
    if not is_tensor_or_operation(x):
        raise TypeError(f"{name} must be Operation or Tensor, given: {x}")
    return x


def validate_train_op(train_op, mode):
    if train_op is None:
        if mode == ModeKeys.TRAIN:
            raise ValueError("Missing train_op.")
        return None
    if not is_tensor_or_operation(train_op):
        raise TypeError(f"train_op must be Operation or Tensor, given: {train_op}")
    return train_op


def validate_loss(loss, mode):
    if loss is None:
        if mode in (ModeKeys.TRAIN, ModeKeys.EVAL):
            raise ValueError("Missing loss.")
        return None
    check_is_tensor(loss, "loss")
    shape = getattr(loss, "shape", None)
    dims = None if shape is None else getattr(shape, "as_list", lambda: list(shape))()
    if dims is not None and None not in dims:
        n = 1
        for d in dims:
            n *= int(d)
        if n != 1:
            raise ValueError(f"Loss must be scalar, given: {loss}")
        if dims:
            import ipu_gpu as core

            loss = core.reshape(loss, [])
    return loss


def validate_predictions(predictions, mode):
    if predictions is None:
        if mode == ModeKeys.PREDICT:
            raise ValueError("Missing predictions.")
        return {}
    if isinstance(predictions, dict):
        for key, value in predictions.items():
            check_is_tensor(value, f"predictions[{key}]")
    else:
        check_is_tensor(predictions, "predictions")
    return predictions


def validate_hooks(hooks):
    from .hooks import SessionRunHook

    hooks = tuple(hooks or [])
    for hook in hooks:
        if not isinstance(hook, SessionRunHook):
            raise TypeError(f"All hooks must be SessionRunHook instances, given: {hook}")
    return hooks


def validate_eval_metric_ops(eval_metric_ops):
    if eval_metric_ops is None:
        return {}
    if not isinstance(eval_metric_ops, dict):
        raise TypeError(f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise TypeError(f"Values of eval_metric_ops must be (metric_value, update_op) "
                            f"tuples, given: {value} for key: {key}")
    return dict(eval_metric_ops)


_FIELDS = ["mode", "predictions", "loss", "train_op", "eval_metric_ops", "export_outputs",
           "training_chief_hooks", "training_hooks", "scaffold", "evaluation_hooks",
           "prediction_hooks"]


class EstimatorSpec(collections.namedtuple("EstimatorSpec", _FIELDS)):
    """Ops and objects returned from a ``model_fn`` and passed to an ``Estimator``: TRAIN
    needs ``loss`` and ``train_op``, EVAL ``loss``, PREDICT ``predictions``.

    Raises:
      ValueError: a required field is missing (``Missing loss.``, ...), a non-scalar loss.
      TypeError: a field of the wrong type (a hook not a ``SessionRunHook``, ...)."""

    def __new__(cls, mode, predictions=None, loss=None, train_op=None, eval_metric_ops=None,
                export_outputs=None, training_chief_hooks=None, training_hooks=None,
                scaffold=None, evaluation_hooks=None, prediction_hooks=None):
        train_op = validate_train_op(train_op, mode)
        loss = validate_loss(loss, mode)
        predictions = validate_predictions(predictions, mode)
        return super().__new__(
            cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
            eval_metric_ops=validate_eval_metric_ops(eval_metric_ops),
            export_outputs=export_outputs,
            training_chief_hooks=validate_hooks(training_chief_hooks),
            training_hooks=validate_hooks(training_hooks), scaffold=scaffold,
            evaluation_hooks=validate_hooks(evaluation_hooks),
            prediction_hooks=validate_hooks(prediction_hooks))
