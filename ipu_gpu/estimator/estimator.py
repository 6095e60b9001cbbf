"""``tf.estimator.Estimator`` (TF 1.15) on ipu_gpu's TF1 graph mode: each ``train``,
``evaluate`` and ``predict`` builds a fresh graph (global step, input, ``model_fn``), runs it
in a ``MonitoredSession`` with the hooks, and keeps the model in checkpoints in
``model_dir`` (``model.ckpt-<global step>``, ``graph/saver.py``'s format), so each call
starts from the newest checkpoint.

The IPU estimators (``ipu/ipu_estimator.py``) override the hooks of this class as
Graphcore's do: ``_get_features_and_labels_from_input_fn``, ``_create_global_step``,
``_convert_train_steps_to_hooks``/``_convert_eval_steps_to_hooks``.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import tempfile

import numpy as np

from . import model_fn as model_fn_lib
from .hooks import (CheckpointSaverHook, CheckpointSaverListener, LoggingTensorHook,
                    NanTensorHook, SessionRunHook, StepCounterHook, StopAtStepHook,
                    _LossSummaryHook)
from .model_fn import EstimatorSpec, ModeKeys
from .monitored import EstimatorSession
from .run_config import RunConfig

__all__ = ["Estimator", "WarmStartSettings"]


def _logging():
    from ..compat.v1.tf1_misc import logging

    return logging


def fn_args(fn) -> tuple:
    """The names of ``fn``'s arguments (all of them when it takes ``**kwargs``)."""
    params = inspect.signature(fn).parameters
    return tuple(name for name, p in params.items()
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def call_with_taken_args(fn, mode, params, config, **inputs):
    """``fn`` called with ``inputs`` and those of ``mode``/``params``/``config`` it takes."""
    args = fn_args(fn)
    taken = {name: value for name, value in
             (("mode", mode), ("params", params), ("config", config)) if name in args}
    return fn(**inputs, **taken)


def call_input_fn(input_fn, mode, params, config):
    """``input_fn`` called with the ``mode``/``params``/``config`` it takes."""
    return call_with_taken_args(input_fn, mode, params, config)


def model_fn_inputs(model_fn, features, labels):
    """The ``features``, and the ``labels`` when ``model_fn`` takes them, as keywords.

    Raises:
      ValueError: ``labels`` that are not None for a ``model_fn`` that takes none."""
    inputs = {"features": features}
    if "labels" in fn_args(model_fn):
        inputs["labels"] = labels
    elif labels is not None:
        raise ValueError("model_fn does not take labels, but input_fn returns labels.")
    return inputs


class WarmStartSettings:
    """Warm-start from ``ckpt_to_initialize_from`` (a checkpoint prefix or a directory) the
    trainable variables whose names match ``vars_to_warm_start`` (a regex, default all)."""

    def __init__(self, ckpt_to_initialize_from, vars_to_warm_start=".*",
                 var_name_to_vocab_info=None, var_name_to_prev_var_name=None):
        self.ckpt_to_initialize_from = os.fspath(ckpt_to_initialize_from)
        self.vars_to_warm_start = vars_to_warm_start or ".*"
        self.var_name_to_vocab_info = var_name_to_vocab_info or {}
        self.var_name_to_prev_var_name = var_name_to_prev_var_name or {}


def _check_hooks(hooks) -> list:
    hooks = list(hooks or [])
    for h in hooks:
        if not isinstance(h, SessionRunHook):
            raise TypeError(f"Hooks must be a SessionRunHook, given: {h}")
    return hooks


def _check_listeners(listeners) -> list:
    listeners = list(listeners or [])
    for listener in listeners:
        if not isinstance(listener, CheckpointSaverListener):
            raise TypeError(f"saving_listeners must be a list of CheckpointSaverListener, "
                            f"given: {listener}")
    return listeners


class _StopAfterNEvalsHook(SessionRunHook):
    """Stops evaluation after ``num_evals`` runs of the update op."""

    def __init__(self, num_evals):
        self._num_evals, self._done = num_evals, 0

    def after_run(self, run_context, run_values):
        self._done += 1
        if self._done >= self._num_evals:
            run_context.request_stop()


class Estimator:
    """Estimator class to train and evaluate TensorFlow models (TF 1.15's arguments); the
    end of the input ends ``train``/``evaluate``/``predict``.

    Raises:
      ValueError: ``model_fn`` without a ``features`` argument, ``params`` given to a
        ``model_fn`` without a ``params`` argument, ``model_dir`` differing from
        ``config.model_dir``, a ``config`` that is not a ``RunConfig``."""

    def __init__(self, model_fn, model_dir=None, config=None, params=None,
                 warm_start_from=None):
        _verify_model_fn_args(model_fn, params)
        if config is None:
            config = RunConfig()
        elif not isinstance(config, RunConfig):
            raise ValueError(f"config must be an instance of `RunConfig`, but provided "
                             f"{config}.")
        if model_dir is not None:
            model_dir = os.fspath(model_dir)
        if model_dir is not None and config.model_dir is not None and \
                model_dir != config.model_dir:
            raise ValueError(f"`model_dir` are set both in constructor and `RunConfig`, but "
                             f"with different values. In constructor: '{model_dir}', in "
                             f"`RunConfig`: '{config.model_dir}' ")
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            _logging().warning("Using temporary folder as model directory: %s", model_dir)
        if config.model_dir != model_dir:
            config = config.replace(model_dir=model_dir)
        self._config, self._model_dir = config, model_dir
        self._model_fn = model_fn
        self._params = dict(params or {})
        if isinstance(warm_start_from, (str, os.PathLike)):
            warm_start_from = WarmStartSettings(warm_start_from)
        self._warm_start_settings = warm_start_from

    _stop_at_end_of_input = True

    config = property(lambda self: self._config)
    model_dir = property(lambda self: self._model_dir)
    params = property(lambda self: dict(self._params))

    @property
    def model_fn(self):
        """The ``model_fn`` bound to ``self.params``: ``model_fn(features, labels, mode,
        config)``."""
        def public_model_fn(features, labels, mode, config):
            return self._call_model_fn(features, labels, mode, config)
        return public_model_fn

    # ---- checkpoints ----------------------------------------------------------------------
    def latest_checkpoint(self):
        """The newest checkpoint's path in ``model_dir``, or None."""
        from ..graph.saver import latest_checkpoint

        return latest_checkpoint(self._model_dir)

    def _require_checkpoint(self):
        path = self.latest_checkpoint()
        if path is None:
            raise ValueError("Estimator has not produced a checkpoint yet.")
        return path

    def get_variable_names(self) -> list:
        """The names of the variables in the newest checkpoint.

        Raises:
          ValueError: no checkpoint yet."""
        with np.load(self._require_checkpoint() + ".npz") as saved:
            return sorted(saved.files)

    def get_variable_value(self, name):
        """The value of variable ``name`` in the newest checkpoint.

        Raises:
          ValueError: no checkpoint yet."""
        with np.load(self._require_checkpoint() + ".npz") as saved:
            return saved[name]

    def eval_dir(self, name=None) -> str:
        """Where the evaluation ``name`` writes its metrics: ``model_dir/eval[_name]``."""
        return os.path.join(self._model_dir, "eval" if not name else "eval_" + name)

    def _global_step_of(self, checkpoint) -> int:
        if checkpoint is None:
            return 0
        with np.load(checkpoint + ".npz") as saved:
            return int(saved["global_step"]) if "global_step" in saved.files else 0

    # ---- the overridable steps -------------------------------------------------------------
    def _create_global_step(self, graph):
        from ..graph.optimizers import get_global_step, get_or_create_global_step

        if get_global_step(graph) is not None:
            raise ValueError('"global_step" already exists.')
        return get_or_create_global_step(graph)

    def _get_features_and_labels_from_input_fn(self, input_fn, mode):
        result = call_input_fn(input_fn, mode, self.params, self.config)
        from ..data import Dataset

        if isinstance(result, Dataset):
            from .inputs import dataset_get_next

            result = dataset_get_next(result)
        if isinstance(result, (tuple, list)):
            if len(result) != 2:
                raise ValueError(f"input_fn should return (features, labels) as a len 2 "
                                 f"tuple, got {result}")
            return result[0], result[1], []
        return result, None, []

    def _convert_train_steps_to_hooks(self, steps, max_steps):
        if steps is None and max_steps is None:
            return []
        return [StopAtStepHook(steps, max_steps)]

    def _convert_eval_steps_to_hooks(self, steps):
        return [] if steps is None else [_StopAfterNEvalsHook(steps)]

    def _call_model_fn(self, features, labels, mode, config):
        spec = call_with_taken_args(self._model_fn, mode, self.params, config,
                                    **model_fn_inputs(self._model_fn, features, labels))
        if not isinstance(spec, EstimatorSpec):
            raise ValueError(f"model_fn should return an EstimatorSpec. Given: {spec}")
        return spec

    # ---- graph construction ----------------------------------------------------------------
    def _build(self, input_fn, mode):
        """In the default graph: the seed, the global step, the input and the model."""
        from ..compat import v1

        if self._config.tf_random_seed is not None:
            v1.set_random_seed(self._config.tf_random_seed)
        global_step = self._create_global_step(v1.get_default_graph())
        with _keras_names_of_a_new_graph():
            features, labels, input_hooks = self._get_features_and_labels_from_input_fn(
                input_fn, mode)
            spec = self._call_model_fn(features, labels, mode, self._config)
        return global_step, spec, list(input_hooks)

    # ---- train -----------------------------------------------------------------------------
    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains for ``steps`` more steps, up to global step ``max_steps``, or until the
        input runs out; returns self.

        Raises:
          ValueError: both ``steps`` and ``max_steps``, or either not positive."""
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        if max_steps is not None and max_steps <= 0:
            raise ValueError(f"Must specify max_steps > 0, given: {max_steps}")
        if max_steps is not None and \
                max_steps <= self._global_step_of(self.latest_checkpoint()):
            _logging().info("Skipping training since max_steps has already saved.")
            return self
        hooks = _check_hooks(hooks)
        hooks.extend(self._convert_train_steps_to_hooks(steps, max_steps))
        listeners = _check_listeners(saving_listeners)
        loss = self._train_model(input_fn, hooks, listeners)
        _logging().info("Loss for final step: %s.", loss)
        return self

    def _train_model(self, input_fn, hooks, listeners):
        from ..compat import v1
        from ..graph.saver import Saver

        config = self._config
        with v1.Graph().as_default():
            global_step, spec, input_hooks = self._build(input_fn, ModeKeys.TRAIN)
            all_hooks = input_hooks + hooks + list(spec.training_hooks) + \
                list(spec.training_chief_hooks) + [NanTensorHook(spec.loss)]
            if config.log_step_count_steps:
                all_hooks.append(LoggingTensorHook({"loss": spec.loss, "step": global_step},
                                                   every_n_iter=config.log_step_count_steps))
                all_hooks.append(StepCounterHook(every_n_steps=config.log_step_count_steps))
            if config.save_summary_steps:
                all_hooks.append(_LossSummaryHook(spec.loss, config.save_summary_steps,
                                                  self._model_dir))
            if config.save_checkpoints_steps or config.save_checkpoints_secs:
                saver = Saver(max_to_keep=config.keep_checkpoint_max)
                all_hooks.append(CheckpointSaverHook(
                    self._model_dir, save_secs=config.save_checkpoints_secs,
                    save_steps=config.save_checkpoints_steps, saver=saver,
                    listeners=listeners))
            session = self._session(all_hooks, self.latest_checkpoint(), warm=True)
            loss = None
            try:
                while not session.should_stop():
                    out = session.run([spec.train_op, spec.loss])
                    if out is not None:
                        loss = out[1]
            finally:
                session.close()
        return loss

    def _session(self, hooks, checkpoint, warm=False):
        warm_start = None
        if warm and checkpoint is None and self._warm_start_settings is not None:
            w = self._warm_start_settings
            warm_start = (w.ckpt_to_initialize_from, w.vars_to_warm_start)
        return EstimatorSession(hooks, checkpoint, warm_start,
                                session_config=self._config.session_config,
                                stop_at_end_of_input=self._stop_at_end_of_input)

    # ---- evaluate --------------------------------------------------------------------------
    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates for ``steps`` batches (or until the input runs out) from the newest
        checkpoint (or ``checkpoint_path``); returns the metrics of the ``model_fn``, its
        mean ``loss`` and the ``global_step`` evaluated.

        Raises:
          ValueError: ``steps`` not positive; a metric named ``loss``."""
        if steps is not None and steps <= 0:
            raise ValueError(f"Must specify steps > 0, given: {steps}")
        hooks = _check_hooks(hooks)
        hooks.extend(self._convert_eval_steps_to_hooks(steps))
        checkpoint = checkpoint_path or self.latest_checkpoint()
        if checkpoint is None:
            _logging().info("Could not find trained model in model_dir: %s, running "
                            "initialization to evaluate.", self._model_dir)
        from ..compat import v1

        with v1.Graph().as_default():
            global_step, spec, input_hooks = self._build(input_fn, ModeKeys.EVAL)
            metrics = dict(spec.eval_metric_ops)
            if model_fn_lib.LOSS_METRIC_KEY in metrics:
                raise ValueError('Metric with name "loss" is not allowed, because Estimator '
                                 'already defines a default metric with the same name.')
            metrics[model_fn_lib.LOSS_METRIC_KEY] = v1.metrics.mean(spec.loss)
            update = v1.group(*[update for _, update in metrics.values()])
            values = {key: value for key, (value, _) in metrics.items()}
            session = self._session(input_hooks + hooks + list(spec.evaluation_hooks),
                                    checkpoint)
            try:
                step = int(session.session.run(global_step))
                while not session.should_stop():
                    session.run(update)
                results = session.session.run(values)
            finally:
                session.close()
        results = {key: np.asarray(v)[()] for key, v in results.items()}
        results["global_step"] = np.int64(step)
        _write_eval_summary(self.eval_dir(name), results, step)
        _logging().info("Saving dict for global step %d: %s", step, ", ".join(
            f"{k} = {results[k]}" for k in sorted(results)))
        return results

    # ---- predict ---------------------------------------------------------------------------
    def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
                yield_single_examples=True):
        """Yields predictions for the input's features from the newest checkpoint (or
        ``checkpoint_path``): one example at a time, or whole batches with
        ``yield_single_examples=False``.

        Raises:
          ValueError: ``predict_keys`` for non-dict predictions, or matching none of them;
            predictions of different batch lengths."""
        hooks = _check_hooks(hooks)
        checkpoint = checkpoint_path or self.latest_checkpoint()
        if checkpoint is None:
            _logging().info("Could not find trained model in model_dir: %s, running "
                            "initialization to predict.", self._model_dir)
        from ..compat import v1

        with v1.Graph().as_default():
            _, spec, input_hooks = self._build(input_fn, ModeKeys.PREDICT)
            predictions = _extract_keys(spec.predictions, predict_keys)
            session = self._session(input_hooks + hooks + list(spec.prediction_hooks),
                                    checkpoint)
            try:
                while not session.should_stop():
                    values = session.run(predictions)
                    if values is None:
                        break
                    if not yield_single_examples:
                        yield values
                    elif not isinstance(values, dict):
                        yield from values
                    else:
                        for i in range(_batch_length(values)):
                            yield {key: value[i] for key, value in values.items()}
            finally:
                session.close()

    # ---- export ----------------------------------------------------------------------------
    def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                           assets_extra=None, as_text=False, checkpoint_path=None,
                           experimental_mode=ModeKeys.PREDICT):
        """Exports the inference graph as a SavedModel (ipu_gpu's format, ``saved_model.tf1``)
        in a new timestamped directory below ``export_dir_base``: the receiver of
        ``serving_input_receiver_fn`` and ``model_fn`` in PREDICT mode in a fresh graph, the
        checkpoint (default: the newest) restored, tag ``serve``, one SignatureDef per
        ``export_outputs`` entry (default: ``serving_default``, a PredictOutput of the
        predictions) taking the receiver tensors. ``assets_extra`` files are copied under
        ``assets.extra``. An IPU estimator exports its ``model_fn`` as a host graph (an
        IPUPipelineEstimator: its computational stages run in order on the features).
        ``experimental_mode`` TRAIN or EVAL exports that mode's graph instead (see
        ``experimental_export_all_saved_models``).

        Returns:
          The export directory's path (bytes).

        Raises:
          ValueError: no ``serving_input_receiver_fn``; no checkpoint (TF's messages).
        """
        del as_text
        from .export import export_saved_model

        return export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                                  assets_extra, checkpoint_path, experimental_mode)

    def experimental_export_all_saved_models(self, export_dir_base, input_receiver_fn_map,
                                             assets_extra=None, as_text=False,
                                             checkpoint_path=None):
        """Exports one SavedModel with a meta graph per mode of ``input_receiver_fn_map``
        (``ModeKeys`` -> receiver fn; TRAIN and EVAL take ``SupervisedInputReceiver``s):
        tags ``train``/``eval``/``serve``; TRAIN and EVAL signatures hold the loss,
        predictions and metrics (their train op is not written: ipu_gpu cannot write
        gradient nodes); the variables are saved once, from the first mode of TRAIN, EVAL,
        PREDICT.

        Returns:
          The export directory's path (bytes).

        Raises:
          ValueError: a receiver fn is None; no checkpoint (TF's messages)."""
        del as_text
        from .export import export_all_saved_models

        return export_all_saved_models(self, export_dir_base, input_receiver_fn_map,
                                       assets_extra, checkpoint_path)

    def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                          assets_extra=None, as_text=False, checkpoint_path=None,
                          strip_default_attrs=False):
        """TF 1's older name of ``export_saved_model``."""
        del strip_default_attrs
        return self.export_saved_model(export_dir_base, serving_input_receiver_fn,
                                       assets_extra, as_text, checkpoint_path)

    def _call_model_fn_for_export(self, features, labels, mode):
        """The spec of the user's ``model_fn`` on the receiver's features (an IPU estimator's
        wrapped model_fn names the user's as ``user_model_fn``)."""
        user = getattr(self._model_fn, "user_model_fn", None)
        if user is None:
            return self._call_model_fn(features, labels, mode, self._config)
        params = {k: v for k, v in self._params.items() if k != "input_fn"}
        inputs = model_fn_inputs(user, features, labels) if "features" in fn_args(user) \
            else {}  # a pipeline model_fn takes none: its stages take the features
        spec = call_with_taken_args(user, mode, params, self._config, **inputs)
        if hasattr(spec, "computational_stages"):  # an IPUPipelineEstimatorSpec
            from .export import pipeline_predictions

            if mode != ModeKeys.PREDICT:
                raise ValueError("An IPUPipelineEstimator exports its PREDICT graph only (its "
                                 "stages' loss and metrics are computed by the pipeline)")
            return EstimatorSpec(mode, predictions=pipeline_predictions(spec, features))
        if mode == ModeKeys.PREDICT and getattr(spec, "predictions", None) is None:
            raise ValueError(f"model_fn should return an EstimatorSpec with predictions in "
                             f"PREDICT mode to be exported. Given: {spec}")
        return spec



def _write_eval_summary(directory, results, step):
    """The scalar metrics as summaries at ``step`` in ``directory``'s event file (TF's
    ``_write_dict_to_summary``); other values are left out."""
    from ..compat.v1.summary import FileWriterCache, Summary

    values = [Summary.Value(tag=key, simple_value=float(value))
              for key, value in sorted(results.items())
              if key != "global_step" and np.ndim(value) == 0]
    from ..compat import v1

    with v1.Graph().as_default():  # TF1's FileWriter is made in graph mode
        writer = FileWriterCache.get(directory)
    writer.add_summary(Summary(value=values), step)
    writer.flush()


@contextlib.contextmanager
def _keras_names_of_a_new_graph():
    """Keras layers made inside get the names they get in a fresh graph (TF 1.15's Keras
    counts names per graph), so each call's model matches the checkpoint's names; the
    counters outside are kept."""
    backend = sys.modules.get("ipu_gpu.keras.backend")
    if backend is None:
        yield
        return
    with backend._NAMES_LOCK:
        saved = (dict(backend._UIDS), dict(backend._NAME_UIDS), set(backend.OBSERVED_NAMES))
    backend.reset_uids()
    try:
        yield
    finally:
        with backend._NAMES_LOCK:
            backend._UIDS.clear()
            backend._UIDS.update(saved[0])
            backend._NAME_UIDS.clear()
            backend._NAME_UIDS.update(saved[1])
            backend.OBSERVED_NAMES.clear()
            backend.OBSERVED_NAMES.update(saved[2])


def _extract_keys(predictions, predict_keys):
    if not predict_keys:
        return predictions
    if not isinstance(predictions, dict):
        raise ValueError("predict_keys argument is not valid in case of non-dict "
                         "predictions.")
    chosen = {k: v for k, v in predictions.items() if k in predict_keys}
    if not chosen:
        raise ValueError(f"Expected to run at least one output from {list(predictions)}, "
                         f"provided {predict_keys}.")
    return chosen


def _batch_length(values) -> int:
    length = None
    for key, value in values.items():
        n = np.shape(value)[0]
        if length is None:
            length = n
        elif n != length:
            raise ValueError(f"Batch length of predictions should be same. {key} has "
                             f"different batch length than others.")
    return length


def _verify_model_fn_args(model_fn, params):
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but "
                         f"params ({params}) is passed to Estimator.")
    unexpected = args - {"features", "labels", "mode", "params", "self", "config"}
    if unexpected:
        _logging().warning("model_fn (%s) has following not expected args: %s", model_fn,
                           sorted(unexpected))
