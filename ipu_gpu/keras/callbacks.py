"""``keras.callbacks``: hooks into ``fit``, ``evaluate`` and ``predict``.

Every hook, its arguments, the ``logs`` each receives and the order they run in are Keras 2's
(tf_keras 2.21's ``callbacks.py``, which Keras 2.6 matches in everything used here):

- ``fit``: ``on_train_begin``; per epoch ``on_epoch_begin(epoch)``, per execution
  ``on_train_batch_begin(step)`` and ``on_train_batch_end(last step of the execution, logs)``
  (logs: the metrics so far this epoch, e.g. ``{'loss': 0.2, 'accuracy': 0.7}``), then the
  validation pass's ``on_test_*`` hooks, then ``on_epoch_end(epoch, logs)`` (the epoch's
  metrics and the ``val_`` ones); finally ``on_train_end(logs of the last epoch)``.
- ``evaluate``: ``on_test_begin``, ``on_test_batch_begin/end``, ``on_test_end(logs)``.
- ``predict``: ``on_predict_begin``, ``on_predict_batch_begin/end(step, {'outputs': ...})``,
  ``on_predict_end``.

With ``compile(steps_per_execution=N)`` batch hooks run once per N steps (the host sees the
device only between executions, on an IPU as in Keras). Batch hooks run only when some
callback overrides them, as Keras decides (``_implements_train_batch_hooks``). Values in
``logs`` are Python floats (Keras's ``sync_to_numpy_or_python_type``).

Differences from Keras: ``ModelCheckpoint`` writes HDF5 files (``Model.save_weights``, or
``Model.save`` for whole models) whatever the file name: TensorFlow's checkpoint and
SavedModel formats are not written. ``TensorBoard`` writes scalars (epoch and batch metrics,
learning rate, steps per second) and weight histograms; ``write_graph``, ``write_images``
and the profiler (``profile_batch``) are accepted and write nothing.
"""

from __future__ import annotations

import collections
import copy
import csv
import logging
import os
import time

import numpy as np

from .utils.progbar import Progbar, print_msg

__all__ = ["BaseLogger", "Callback", "CallbackList", "CSVLogger", "EarlyStopping", "History",
           "LambdaCallback", "LearningRateScheduler", "ModelCheckpoint", "ProgbarLogger",
           "ReduceLROnPlateau", "RemoteMonitor", "TensorBoard", "TerminateOnNaN"]

_log = logging.getLogger("ipu_gpu.keras")


def _default(method):
    """Marks a base-class hook, so a callback is known not to override it."""
    method._is_default = True
    return method


def _is_default(method) -> bool:
    return getattr(method, "_is_default", False)


def _to_python(value):
    """A Tensor or numpy scalar as a Python number; arrays stay arrays (Keras's
    ``sync_to_numpy_or_python_type``)."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()  # syncs device
    if not isinstance(value, (np.ndarray, np.generic)):
        return value
    return value.item() if np.ndim(value) == 0 else value


def sync_logs(logs):
    """``logs`` with every Tensor value turned into a Python number or a numpy array."""
    if logs is None:
        return {}
    if isinstance(logs, dict):
        return {k: sync_logs(v) if isinstance(v, (dict, list, tuple)) else _to_python(v)
                for k, v in logs.items()}
    if isinstance(logs, (list, tuple)):
        return type(logs)(sync_logs(v) if isinstance(v, (dict, list, tuple)) else _to_python(v)
                          for v in logs)
    return _to_python(logs)


def _get_lr(optimizer):
    """Keras's ``backend.get_value(optimizer.lr)``: a numpy scalar of the variable's dtype
    (float32, so ``lr * factor`` stays float32 and prints as Keras prints it)."""
    lr = optimizer.lr
    if hasattr(lr, "numpy") and not isinstance(lr, np.ndarray):
        return np.asarray(lr.numpy())[()]  # syncs device
    return lr


def _set_lr(optimizer, value) -> None:
    lr = optimizer.lr
    if hasattr(lr, "assign"):
        lr.assign(np.asarray(value, dtype=lr.dtype))
    else:
        optimizer.lr = float(value)


# ---- the base class and the list ------------------------------------------------------------


class Callback:
    """Abstract base class used to build new callbacks.

    Attributes:
      params: Dict. Training parameters (``verbose``, ``epochs``, ``steps``).
      model: The ``keras.Model`` being trained, evaluated or run.
    """

    def __init__(self):
        self.validation_data = None
        self.model = None
        self._chief_worker_only = None
        self._supports_tf_logs = False

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self.model = model

    @_default
    def on_batch_begin(self, batch, logs=None):
        """A backwards compatibility alias for ``on_train_batch_begin``."""

    @_default
    def on_batch_end(self, batch, logs=None):
        """A backwards compatibility alias for ``on_train_batch_end``."""

    def on_epoch_begin(self, epoch, logs=None):
        """Called at the start of an epoch (training only)."""

    def on_epoch_end(self, epoch, logs=None):
        """Called at the end of an epoch with the epoch's metrics (``val_`` ones too when
        validation ran)."""

    @_default
    def on_train_batch_begin(self, batch, logs=None):
        """Called at the beginning of a training batch in ``fit`` (every
        ``steps_per_execution`` batches)."""
        self.on_batch_begin(batch, logs=logs)

    @_default
    def on_train_batch_end(self, batch, logs=None):
        """Called at the end of a training batch in ``fit`` with the metrics so far."""
        self.on_batch_end(batch, logs=logs)

    @_default
    def on_test_batch_begin(self, batch, logs=None):
        """Called at the beginning of a batch in ``evaluate`` and in validation."""

    @_default
    def on_test_batch_end(self, batch, logs=None):
        """Called at the end of a batch in ``evaluate`` and in validation."""

    @_default
    def on_predict_batch_begin(self, batch, logs=None):
        """Called at the beginning of a batch in ``predict``."""

    @_default
    def on_predict_batch_end(self, batch, logs=None):
        """Called at the end of a batch in ``predict`` with ``{'outputs': ...}``."""

    def on_train_begin(self, logs=None):
        """Called at the beginning of training."""

    def on_train_end(self, logs=None):
        """Called at the end of training with the last epoch's logs."""

    def on_test_begin(self, logs=None):
        """Called at the beginning of evaluation or validation."""

    def on_test_end(self, logs=None):
        """Called at the end of evaluation or validation with its metrics."""

    def on_predict_begin(self, logs=None):
        """Called at the beginning of prediction."""

    def on_predict_end(self, logs=None):
        """Called at the end of prediction."""

    def _implements_train_batch_hooks(self) -> bool:
        return not (_is_default(self.on_batch_begin) and _is_default(self.on_batch_end)
                    and _is_default(self.on_train_batch_begin)
                    and _is_default(self.on_train_batch_end))

    def _implements_test_batch_hooks(self) -> bool:
        return not (_is_default(self.on_test_batch_begin)
                    and _is_default(self.on_test_batch_end))

    def _implements_predict_batch_hooks(self) -> bool:
        return not (_is_default(self.on_predict_batch_begin)
                    and _is_default(self.on_predict_batch_end))


class CallbackList:
    """Container abstracting a list of callbacks.

    Args:
      callbacks: List of ``Callback`` instances.
      add_history: Whether a ``History`` callback should be added, if one does not already
        exist in the ``callbacks`` list.
      add_progbar: Whether a ``ProgbarLogger`` callback should be added, if one does not
        already exist in the ``callbacks`` list.
      model: The ``Model`` these callbacks are used with.
      **params: If provided, parameters will be passed to each ``Callback`` via
        ``Callback.set_params``.
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        self.callbacks = _flatten(callbacks) if callbacks else []
        self._add_default_callbacks(add_history, add_progbar)
        if model:
            self.set_model(model)
        if params:
            self.set_params(params)
        self._should_call_train_batch_hooks = any(
            cb._implements_train_batch_hooks() for cb in self.callbacks)
        self._should_call_test_batch_hooks = any(
            cb._implements_test_batch_hooks() for cb in self.callbacks)
        self._should_call_predict_batch_hooks = any(
            cb._implements_predict_batch_hooks() for cb in self.callbacks)

    def _add_default_callbacks(self, add_history, add_progbar):
        self._progbar = None
        self._history = None
        for cb in self.callbacks:
            if isinstance(cb, ProgbarLogger):
                self._progbar = cb
            elif isinstance(cb, History):
                self._history = cb
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger(count_mode="steps")
            self.callbacks.append(self._progbar)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        self.params = params
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model):
        self.model = model
        if self._history:
            model.history = self._history
        for callback in self.callbacks:
            callback.set_model(model)

    def __iter__(self):
        return iter(self.callbacks)

    def _call(self, hook_name, *args):
        for callback in self.callbacks:
            getattr(callback, hook_name)(*args)

    def _batch_hook(self, hook_name, batch, logs):
        if self.callbacks:
            self._call(hook_name, batch, sync_logs(logs))

    def on_batch_begin(self, batch, logs=None):
        if self._should_call_train_batch_hooks:
            self._batch_hook("on_train_batch_begin", batch, logs)

    def on_batch_end(self, batch, logs=None):
        if self._should_call_train_batch_hooks:
            self._batch_hook("on_train_batch_end", batch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        if self._should_call_train_batch_hooks:
            self._batch_hook("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        if self._should_call_train_batch_hooks:
            self._batch_hook("on_train_batch_end", batch, logs)

    def on_test_batch_begin(self, batch, logs=None):
        if self._should_call_test_batch_hooks:
            self._batch_hook("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        if self._should_call_test_batch_hooks:
            self._batch_hook("on_test_batch_end", batch, logs)

    def on_predict_batch_begin(self, batch, logs=None):
        if self._should_call_predict_batch_hooks:
            self._batch_hook("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        if self._should_call_predict_batch_hooks:
            self._batch_hook("on_predict_batch_end", batch, logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, sync_logs(logs))

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, sync_logs(logs))

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", sync_logs(logs))

    def on_train_end(self, logs=None):
        self._call("on_train_end", sync_logs(logs))

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", sync_logs(logs))

    def on_test_end(self, logs=None):
        self._call("on_test_end", sync_logs(logs))

    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", sync_logs(logs))

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", sync_logs(logs))


def _flatten(callbacks) -> list:
    if isinstance(callbacks, (list, tuple)):
        out = []
        for c in callbacks:
            out.extend(_flatten(c))
        return out
    return [callbacks]


# ---- the callbacks fit adds ----------------------------------------------------------------


class BaseLogger(Callback):
    """Callback that accumulates epoch averages of metrics (Keras 1's logger; ``fit`` does
    not add it).

    Args:
      stateful_metrics: Iterable of string names of metrics that should *not* be averaged
        over an epoch. Metrics in this list will be logged as-is in ``on_epoch_end``.
    """

    def __init__(self, stateful_metrics=None):
        super().__init__()
        self.stateful_metrics = set(stateful_metrics or [])

    def on_epoch_begin(self, epoch, logs=None):
        self.seen = 0
        self.totals = {}

    def on_batch_end(self, batch, logs=None):
        logs = logs or {}
        batch_size = logs.get("size", 0)
        self.seen += batch_size * logs.get("num_steps", 1)
        for k, v in logs.items():
            if k in self.stateful_metrics:
                self.totals[k] = v
            else:
                self.totals[k] = self.totals.get(k, 0) + v * batch_size

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            for k in self.params["metrics"]:
                if k in self.totals:
                    logs[k] = (self.totals[k] if k in self.stateful_metrics
                               else self.totals[k] / self.seen)


class History(Callback):
    """Records the epoch logs: ``history.history[name]`` is the list of one value per epoch;
    ``fit`` returns this object."""

    def __init__(self):
        super().__init__()
        self.history = {}

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        self.epoch.append(epoch)
        for k, v in logs.items():
            self.history.setdefault(k, []).append(v)
        self.model.history = self


class ProgbarLogger(Callback):
    """Callback that prints metrics to stdout (the ``Epoch 1/5`` lines and the progress
    bars, ``utils.progbar``).

    Args:
      count_mode: One of ``"steps"`` or ``"samples"``: whether the progress bar counts
        samples seen or steps (batches) seen.
      stateful_metrics: Iterable of string names of metrics that should *not* be averaged
        over an epoch. If not provided, defaults to the ``Model``'s metrics.

    Raises:
      ValueError: In case of invalid ``count_mode``.
    """

    def __init__(self, count_mode: str = "samples", stateful_metrics=None):
        super().__init__()
        self._supports_tf_logs = True
        if count_mode == "samples":
            self.use_steps = False
        elif count_mode == "steps":
            self.use_steps = True
        else:
            raise ValueError(f"Unknown `count_mode`: {count_mode}. "
                             'Expected values are ["samples", "steps"]')
        self.stateful_metrics = set(stateful_metrics) if stateful_metrics else set()
        self.seen = 0
        self.progbar = None
        self.target = None
        self.verbose = 1
        self.epochs = 1
        self._train_step = self._test_step = self._predict_step = None
        self._call_batch_hooks = True
        self._called_in_fit = False
        # Set by fit on an IPUStrategy before on_epoch_end: the epoch's samples, over all
        # replicas, for the samples/s field ending the epoch's verbose=1 line.
        self.epoch_samples = None

    def set_params(self, params):
        self.verbose = params["verbose"]
        self.epochs = params["epochs"]
        if self.use_steps and "steps" in params:
            self.target = params["steps"]
        elif not self.use_steps and "samples" in params:
            self.target = params["samples"]
        else:
            self.target = None  # inferred at the end of the first epoch
        self._call_batch_hooks = self.verbose == 1
        if self.target is None:
            try:
                self._train_step = self.model._train_counter
                self._test_step = self.model._test_counter
                self._predict_step = self.model._predict_counter
            except AttributeError:
                self._call_batch_hooks = True

    def on_train_begin(self, logs=None):
        self._called_in_fit = True  # validation inside fit prints nothing of its own

    def on_test_begin(self, logs=None):
        if not self._called_in_fit:
            self._reset_progbar()
            self._maybe_init_progbar()

    def on_predict_begin(self, logs=None):
        self._reset_progbar()
        self._maybe_init_progbar()

    def on_epoch_begin(self, epoch, logs=None):
        self._reset_progbar()
        self._maybe_init_progbar()
        if self.verbose and self.epochs > 1:
            print_msg(f"Epoch {epoch + 1}/{self.epochs}")

    def on_train_batch_end(self, batch, logs=None):
        self._batch_update_progbar(batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        if not self._called_in_fit:
            self._batch_update_progbar(batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._batch_update_progbar(batch, None)  # outputs are not metrics

    def on_epoch_end(self, epoch, logs=None):
        if self.progbar is not None:
            self.progbar.samples = self.epoch_samples
        self.epoch_samples = None
        self._finalize_progbar(logs, self._train_step)

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finalize_progbar(logs, self._test_step)

    def on_predict_end(self, logs=None):
        self._finalize_progbar(logs, self._predict_step)

    def _reset_progbar(self):
        self.seen = 0
        self.progbar = None

    def _maybe_init_progbar(self):
        self.stateful_metrics = set(self.stateful_metrics)
        if self.model:
            self.stateful_metrics |= {m.name for m in self.model.metrics}
        if self.progbar is None:
            self.progbar = Progbar(target=self.target, verbose=self.verbose,
                                   stateful_metrics=self.stateful_metrics,
                                   unit_name="step" if self.use_steps else "sample")
        self.progbar._update_stateful_metrics(self.stateful_metrics)

    def _implements_train_batch_hooks(self):
        return self._call_batch_hooks

    def _implements_test_batch_hooks(self):
        return self._call_batch_hooks

    def _implements_predict_batch_hooks(self):
        return self._call_batch_hooks

    def _batch_update_progbar(self, batch, logs=None):
        logs = logs or {}
        self._maybe_init_progbar()
        if self.use_steps:
            self.seen = batch + 1  # one-indexed
        else:
            logs = copy.copy(logs)
            batch_size = logs.pop("size", 0)
            num_steps = logs.pop("num_steps", 1)
            logs.pop("batch", None)
            self.seen += num_steps * batch_size
        if self.verbose == 1:
            self.progbar.update(self.seen, list(sync_logs(logs).items()), finalize=False)

    def _finalize_progbar(self, logs, counter):
        logs = sync_logs(logs or {})
        if self.target is None:
            if counter is not None:
                counter = int(np.asarray(counter))
                if not self.use_steps:
                    counter *= logs.get("size", 1)
            self.target = counter or self.seen
            self.progbar.target = self.target
        self.progbar.update(self.target, list(logs.items()), finalize=True)


# ---- the library of callbacks ----------------------------------------------------------------


class TerminateOnNaN(Callback):
    """Callback that terminates training when a NaN (or infinite) loss is encountered."""

    def __init__(self):
        super().__init__()
        self._supports_tf_logs = True

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None:
            loss = _to_python(loss)
            if np.isnan(loss) or np.isinf(loss):
                print_msg(f"Batch {batch}: Invalid loss, terminating training")
                self.model.stop_training = True


def _monitor_op(mode, monitor, name, greater_when):
    if mode not in ("auto", "min", "max"):
        _log.warning("%s mode %s is unknown, fallback to auto mode.", name, mode)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    return np.greater if greater_when(monitor) else np.less


class ModelCheckpoint(Callback):
    """Callback to save the Keras model or model weights at some frequency.

    Args:
      filepath: string or PathLike, path to save the model file; may contain named
        formatting options filled with ``epoch`` (1-based) and the keys of ``logs``
        (e.g. ``weights.{epoch:02d}-{val_loss:.2f}.hdf5``).
      monitor: The metric name to monitor (``"val_loss"`` by default).
      verbose: 0 silent, 1 a message when the callback takes an action.
      save_best_only: only save when the model is considered the "best" by ``monitor``.
      save_weights_only: if True, only the model's weights are saved
        (``model.save_weights(filepath)``), else the full model (``model.save(filepath)``).
      mode: one of {"auto", "min", "max"}; "auto" maximises monitors containing "acc" or
        starting with "fmeasure" and minimises the others.
      save_freq: ``"epoch"`` or an integer: save every that many batches.
      options: accepted, unused.
      initial_value_threshold: initial "best" value of the metric.

    Raises:
      ValueError: an unrecognised ``save_freq``.
    """

    def __init__(self, filepath, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq="epoch", options=None,
                 initial_value_threshold=None, **kwargs):
        super().__init__()
        self._supports_tf_logs = True
        self.monitor = monitor
        self.verbose = verbose
        self.filepath = os.fspath(filepath)
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self.epochs_since_last_save = 0
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = -1
        self._current_epoch = 0
        self.best = initial_value_threshold
        self._options = options
        self.load_weights_on_restart = kwargs.get("load_weights_on_restart", False)
        if "period" in kwargs:
            _log.warning("`period` argument is deprecated. Please use `save_freq` to specify "
                         "the frequency in number of batches seen.")
        self.period = kwargs.get("period", 1)
        self.monitor_op = _monitor_op(
            mode, monitor, "ModelCheckpoint",
            lambda m: "acc" in m or m.startswith("fmeasure"))
        if self.best is None:
            self.best = -np.inf if self.monitor_op is np.greater else np.inf
        if self.save_freq != "epoch" and not isinstance(self.save_freq, int):
            raise ValueError(f"Unrecognized save_freq: {self.save_freq}. Expected save_freq "
                             'are "epoch" or integer')

    def on_train_begin(self, logs=None):
        if self.load_weights_on_restart:
            path = self._most_recent_file(self.filepath)
            if path is not None and os.path.exists(path):
                try:
                    self.model.load_weights(path)
                except (OSError, ValueError) as e:
                    raise ValueError(f"Error loading file from {path}. Reason: {e}") from e

    def _implements_train_batch_hooks(self):
        return self.save_freq != "epoch"

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model(epoch=self._current_epoch, batch=batch, logs=logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        self.epochs_since_last_save += 1
        if self.save_freq == "epoch":
            self._save_model(epoch=epoch, batch=None, logs=logs)

    def _should_save_on_batch(self, batch) -> bool:
        if self.save_freq == "epoch":
            return False
        if batch <= self._last_batch_seen:  # a new epoch
            add_batches = batch + 1
        else:
            add_batches = batch - self._last_batch_seen
        self._batches_seen_since_last_saving += add_batches
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _save_model(self, epoch, batch, logs):
        logs = sync_logs(logs or {})
        if not (isinstance(self.save_freq, int) or self.epochs_since_last_save >= self.period):
            return
        self.epochs_since_last_save = 0
        filepath = self._get_file_path(epoch, batch, logs)
        dirname = os.path.dirname(filepath)
        if dirname and not os.path.exists(dirname):
            os.makedirs(dirname, exist_ok=True)
        try:
            if self.save_best_only:
                current = logs.get(self.monitor)
                if current is None:
                    _log.warning("Can save best model only with %s available, skipping.",
                                 self.monitor)
                elif self.monitor_op(current, self.best):
                    if self.verbose > 0:
                        print_msg(f"\nEpoch {epoch + 1}: {self.monitor} improved from "
                                  f"{self.best:.5f} to {current:.5f}, saving model to "
                                  f"{filepath}")
                    self.best = current
                    self._save_handler(filepath)
                elif self.verbose > 0:
                    print_msg(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                              f"{self.best:.5f}")
            else:
                if self.verbose > 0:
                    print_msg(f"\nEpoch {epoch + 1}: saving model to {filepath}")
                self._save_handler(filepath)
        except IsADirectoryError:
            raise OSError("Please specify a non-directory filepath for ModelCheckpoint. "
                          f"Filepath used is an existing directory: {filepath}") from None

    def _save_handler(self, filepath):
        if self.save_weights_only:
            self.model.save_weights(filepath, overwrite=True)
        else:
            self.model.save(filepath, overwrite=True)

    def _get_file_path(self, epoch, batch, logs) -> str:
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {e}") from e

    @staticmethod
    def _most_recent_file(pattern):
        import re

        dir_name = os.path.dirname(pattern) or "."
        regex = "^" + re.sub("{.*}", ".*", os.path.basename(pattern)) + "$"
        if not os.path.isdir(dir_name):
            return None
        matches = [os.path.join(dir_name, f) for f in os.listdir(dir_name) if re.match(regex, f)]
        if not matches:
            return None
        latest = max(os.path.getmtime(p) for p in matches)
        newest = [p for p in matches if os.path.getmtime(p) == latest]
        return newest[0] if len(newest) == 1 else max(matches)


class EarlyStopping(Callback):
    """Stop training when a monitored metric has stopped improving.

    Args:
      monitor: Quantity to be monitored (``"val_loss"`` by default).
      min_delta: Minimum change in the monitored quantity to qualify as an improvement.
      patience: Number of epochs with no improvement after which training will be stopped.
      verbose: 1 prints a message when the callback takes an action.
      mode: One of {"auto", "min", "max"}; "auto" maximises monitors ending in "acc",
        "accuracy" or "auc".
      baseline: Baseline value for the monitored quantity: training stops if the model
        doesn't show improvement over it within ``patience`` epochs.
      restore_best_weights: restore the weights of the epoch with the best monitored value
        when training ends.
      start_from_epoch: Number of epochs to wait before starting to monitor improvement.
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.min_delta = abs(min_delta)
        self.wait = 0
        self.stopped_epoch = 0
        self.restore_best_weights = restore_best_weights
        self.best_weights = None
        self.start_from_epoch = start_from_epoch
        self.monitor_op = _monitor_op(
            mode, monitor, "EarlyStopping",
            lambda m: m.endswith("acc") or m.endswith("accuracy") or m.endswith("auc"))
        self.min_delta *= 1 if self.monitor_op is np.greater else -1

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf if self.monitor_op is np.less else -np.inf
        self.best_weights = None
        self.best_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()  # the first epoch is the best so far
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print_msg(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print_msg("Restoring model weights from the end of the best epoch: "
                          f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs):
        value = (logs or {}).get(self.monitor)
        if value is None:
            _log.warning("Early stopping conditioned on metric `%s` which is not available. "
                         "Available metrics are: %s", self.monitor, ",".join(logs or {}))
        return value

    def _is_improvement(self, monitor_value, reference_value) -> bool:
        return self.monitor_op(monitor_value - self.min_delta, reference_value)


class RemoteMonitor(Callback):
    """Streams events to a server: at the end of every epoch an HTTP POST (with the
    ``requests`` library) to ``root + path`` of the epoch and its logs as a JSON dictionary,
    the form field ``field`` of the request, or its JSON body with ``send_as_json=True``.

    Args:
      root: root url of the target server.
      path: path relative to ``root`` to which the events are sent.
      field: JSON field under which the data is stored in the form (``send_as_json=False``).
      headers: optional custom HTTP headers.
      send_as_json: send the request as ``"application/json"``.

    Raises:
      ImportError: at the end of an epoch, ``requests`` cannot be imported (Keras's message).
    A request that fails logs Keras's warning and training goes on.
    """

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data",
                 headers=None, send_as_json=False):
        super().__init__()
        self.root, self.path, self.field = root, path, field
        self.headers, self.send_as_json = headers, send_as_json

    def on_epoch_end(self, epoch, logs=None):
        import json

        try:
            import requests
        except ImportError:
            raise ImportError("RemoteMonitor requires the `requests` library.") from None
        send = {"epoch": epoch}
        for k, v in (logs or {}).items():
            send[k] = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
        try:
            if self.send_as_json:
                requests.post(self.root + self.path, json=send, headers=self.headers)
            else:
                requests.post(self.root + self.path, {self.field: json.dumps(send)},
                              headers=self.headers)
        except requests.exceptions.RequestException:
            _log.warning("Warning: could not reach RemoteMonitor root server at " + str(self.root))


class LearningRateScheduler(Callback):
    """Learning rate scheduler: at the beginning of every epoch the learning rate becomes
    ``schedule(epoch, lr)`` (or ``schedule(epoch)``); ``logs['lr']`` records it.

    Args:
      schedule: a function taking an epoch index (integer, indexed from 0) and the current
        learning rate (float) and returning a new learning rate (float).
      verbose: 0 quiet, 1 a message per update.
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        if not hasattr(self.model.optimizer, "lr"):
            raise ValueError('Optimizer must have a "lr" attribute.')
        try:
            lr = float(_get_lr(self.model.optimizer))
            lr = self.schedule(epoch, lr)
        except TypeError:  # old API for backward compatibility
            lr = self.schedule(epoch)
        if hasattr(lr, "numpy") and not isinstance(lr, np.ndarray):
            if not np.issubdtype(np.dtype(lr.dtype), np.floating):
                raise ValueError(f"The dtype of `lr` Tensor should be float. Got: {lr.dtype}")
        elif not isinstance(lr, (float, np.float32, np.float64)):
            raise ValueError(f'The output of the "schedule" function should be float. Got: {lr}')
        _set_lr(self.model.optimizer, _to_python(lr))
        if self.verbose > 0:
            print_msg(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                      f"{lr}.")

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["lr"] = _get_lr(self.model.optimizer)


class ReduceLROnPlateau(Callback):
    """Reduce the learning rate when a metric has stopped improving.

    Args:
      monitor: quantity to be monitored.
      factor: factor by which the learning rate will be reduced (``new_lr = lr * factor``).
      patience: number of epochs with no improvement after which the learning rate will be
        reduced.
      verbose: 0 quiet, 1 update messages.
      mode: one of {"auto", "min", "max"}; "auto" maximises monitors containing "acc".
      min_delta: threshold for measuring the new optimum.
      cooldown: number of epochs to wait before resuming normal operation after the
        learning rate has been reduced.
      min_lr: lower bound on the learning rate.

    Raises:
      ValueError: ``factor >= 1.0``.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0, **kwargs):
        super().__init__()
        self.monitor = monitor
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor >= 1.0. Got {factor}")
        if "epsilon" in kwargs:
            min_delta = kwargs.pop("epsilon")
            _log.warning("`epsilon` argument is deprecated and will be removed, use "
                         "`min_delta` instead.")
        self.factor = factor
        self.min_lr = min_lr
        self.min_delta = min_delta
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.wait = 0
        self.best = 0
        self.mode = mode
        self.monitor_op = None
        self._reset()

    def _reset(self):
        if self.mode not in ("auto", "min", "max"):
            _log.warning("Learning rate reduction mode %s is unknown, fallback to auto mode.",
                         self.mode)
            self.mode = "auto"
        if self.mode == "min" or (self.mode == "auto" and "acc" not in self.monitor):
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        logs["lr"] = _get_lr(self.model.optimizer)
        current = logs.get(self.monitor)
        if current is None:
            _log.warning("Learning rate reduction is conditioned on metric `%s` which is not "
                         "available. Available metrics are: %s", self.monitor, ",".join(logs))
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = _get_lr(self.model.optimizer)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    _set_lr(self.model.optimizer, new_lr)
                    if self.verbose > 0:
                        print_msg(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning "
                                  f"rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0


class CSVLogger(Callback):
    """Callback that streams epoch results to a CSV file (one row per epoch, columns
    ``epoch`` and the sorted log keys, ``val_`` columns added when validation has none yet).

    Args:
      filename: Filename of the CSV file, e.g. ``'run/log.csv'``.
      separator: String used to separate elements in the CSV file.
      append: True: append if file exists (useful for continuing training).
    """

    def __init__(self, filename, separator=",", append=False):
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.writer = None
        self.keys = None
        self.append_header = True
        super().__init__()

    def on_train_begin(self, logs=None):
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not bool(len(f.readline()))
            mode = "a"
        else:
            mode = "w"
        self.csv_file = open(self.filename, mode, newline="")  # noqa: SIM115 - kept open

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}

        def handle_value(k):
            is_zero_dim_ndarray = isinstance(k, np.ndarray) and k.ndim == 0
            if isinstance(k, str):
                return k
            if isinstance(k, collections.abc.Iterable) and not is_zero_dim_ndarray:
                return f'"[{", ".join(map(str, k))}]"'
            return k

        if self.keys is None:
            self.keys = sorted(logs.keys())
            if not any(key.startswith("val_") for key in self.keys):
                self.keys.extend(["val_" + k for k in self.keys])
        if not self.writer:
            class CustomDialect(csv.excel):
                delimiter = self.sep

            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         dialect=CustomDialect)
            if self.append_header:
                self.writer.writeheader()
        row = collections.OrderedDict({"epoch": epoch})
        row.update((key, handle_value(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        self.csv_file.close()
        self.writer = None


class LambdaCallback(Callback):
    """Callback for creating simple, custom callbacks on-the-fly.

    Args:
      on_epoch_begin: called with ``(epoch, logs)``.
      on_epoch_end: called with ``(epoch, logs)``.
      on_batch_begin: called with ``(batch, logs)``.
      on_batch_end: called with ``(batch, logs)``.
      on_train_begin: called with ``(logs)``.
      on_train_end: called with ``(logs)``.
      **kwargs: any function in ``Callback`` that you want to override by passing
        ``function_name=function``.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_batch_begin=None,
                 on_batch_end=None, on_train_begin=None, on_train_end=None, **kwargs):
        super().__init__()
        self.__dict__.update(kwargs)
        for name, fn in (("on_epoch_begin", on_epoch_begin), ("on_epoch_end", on_epoch_end),
                         ("on_batch_begin", on_batch_begin), ("on_batch_end", on_batch_end),
                         ("on_train_begin", on_train_begin), ("on_train_end", on_train_end)):
            if fn is not None:
                setattr(self, name, fn)


class TensorBoard(Callback):
    """Writes TensorBoard logs (``ipu_gpu.summary`` event files) under ``log_dir/train``
    and ``log_dir/validation``.

    Epoch metrics are ``epoch_<name>`` scalars at step ``epoch`` (``val_`` metrics in the
    validation directory without the prefix), with ``epoch_learning_rate`` when the
    optimizer's learning rate is a schedule and ``epoch_steps_per_second`` with
    ``write_steps_per_second``; ``evaluate`` inside and outside ``fit`` adds
    ``evaluation_<name>_vs_iterations`` at the optimizer's iteration count. With
    ``update_freq='batch'`` or an integer N, batch metrics are ``batch_<name>`` scalars at the
    model's train step, every N steps. ``histogram_freq=N`` writes a histogram of every weight
    every N epochs.

    Args:
      log_dir: the path of the directory where to save the log files.
      histogram_freq: frequency (in epochs) at which to compute weight histograms.
      write_graph, write_images, profile_batch, embeddings_freq, embeddings_metadata:
        accepted; nothing is written for them (no graph, image or profile exists here).
      write_steps_per_second: whether to log the training steps per second.
      update_freq: ``'batch'``, ``'epoch'`` or an integer.

    Raises:
      ValueError: unrecognised keyword arguments, or a bad ``profile_batch``.
    """

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None, **kwargs):
        super().__init__()
        self._supports_tf_logs = True
        supported = {"write_grads", "embeddings_layer_names", "embeddings_data", "batch_size"}
        unrecognized = set(kwargs) - supported
        if unrecognized:
            raise ValueError(f"Unrecognized arguments in `TensorBoard` Callback: "
                             f"{unrecognized}. Supported kwargs are: {supported}")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = write_graph
        self.write_images = write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self.embeddings_freq = embeddings_freq
        self.embeddings_metadata = embeddings_metadata
        self._check_profile_batch(profile_batch)
        self._global_train_batch = 0
        self._previous_epoch_iterations = 0
        self._batch_start_time = 0
        self._epoch_start_time = 0
        self._writers = {}
        self._pushed = []

    @staticmethod
    def _check_profile_batch(profile_batch):
        message = ("profile_batch must be a non-negative integer or 2-tuple of positive "
                   "integers. A pair of positive integers signifies a range of batches to "
                   f"profile. Found: {profile_batch}")
        if isinstance(profile_batch, str):
            profile_batch = [int(p) for p in profile_batch.split(",")]
        if isinstance(profile_batch, int):
            start = stop = profile_batch
        elif isinstance(profile_batch, (tuple, list)) and len(profile_batch) == 2:
            start, stop = profile_batch
        else:
            raise ValueError(message)
        if start < 0 or stop < start:
            raise ValueError(message)

    def set_model(self, model):
        self.model = model
        self._train_dir = os.path.join(self.log_dir, "train")
        self._val_dir = os.path.join(self.log_dir, "validation")
        self._train_step = model._train_counter
        self._val_step = model._test_counter
        self._writers = {}

    def _writer(self, which):
        if which not in self._writers:
            from .. import summary

            path = self._train_dir if which == "train" else self._val_dir
            self._writers[which] = summary.create_file_writer(path)
        return self._writers[which]

    def _push_writer(self, which, step):
        if self.update_freq == "epoch":
            return
        from .. import summary

        freq = self.update_freq
        contexts = (self._writer(which).as_default(step),
                    summary.record_if(lambda: int(np.asarray(step)) % freq == 0))
        for c in contexts:
            c.__enter__()
        self._pushed.append(contexts)

    def _pop_writer(self):
        if self.update_freq == "epoch" or not self._pushed:
            return
        writer_cm, record_cm = self._pushed.pop()
        record_cm.__exit__(None, None, None)
        writer_cm.__exit__(None, None, None)

    def _implements_train_batch_hooks(self):
        return self.update_freq != "epoch" or self.write_steps_per_second

    def on_train_begin(self, logs=None):
        self._global_train_batch = 0
        self._previous_epoch_iterations = 0
        self._push_writer("train", self._train_step)

    def on_train_end(self, logs=None):
        self._pop_writer()
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def on_test_begin(self, logs=None):
        self._push_writer("val", self._val_step)

    def on_test_end(self, logs=None):
        from .. import summary

        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is not None and hasattr(optimizer, "iterations"):
            step = int(np.asarray(optimizer.iterations))
            with summary.record_if(True), self._writer("val").as_default():
                for name, value in (logs or {}).items():
                    summary.scalar("evaluation_" + name + "_vs_iterations", value, step=step)
        self._pop_writer()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self.write_steps_per_second:
            self._batch_start_time = time.time()

    def on_train_batch_end(self, batch, logs=None):
        if self.update_freq == "epoch" and not self.write_steps_per_second:
            return
        from .. import summary

        step = int(np.asarray(self._train_step))
        with self._writer("train").as_default(step):
            if self.write_steps_per_second:
                elapsed = time.time() - self._batch_start_time
                summary.scalar("batch_steps_per_second", 1.0 / max(elapsed, 1e-12), step=step)
            if self.update_freq != "epoch" and isinstance(logs, dict):
                for name, value in logs.items():
                    summary.scalar("batch_" + name, value, step=step)

    def on_epoch_begin(self, epoch, logs=None):
        if self.write_steps_per_second:
            self._previous_epoch_iterations = int(np.asarray(self.model.optimizer.iterations))
            self._epoch_start_time = time.time()

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch_metrics(epoch, logs)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._log_weights(epoch)

    def _log_epoch_metrics(self, epoch, logs):
        if not logs:
            return
        from .. import summary
        from .optimizers import schedules

        train_logs = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val_logs = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        optimizer = getattr(self.model, "optimizer", None)
        lr = getattr(optimizer, "_hyper", {}).get("learning_rate")
        if isinstance(lr, schedules.LearningRateSchedule):
            train_logs["learning_rate"] = lr(optimizer.iterations)
        if self.write_steps_per_second:
            iterations = int(np.asarray(optimizer.iterations))
            elapsed = time.time() - self._epoch_start_time
            train_logs["steps_per_second"] = (
                (iterations - self._previous_epoch_iterations) / max(elapsed, 1e-12))
        with summary.record_if(True):
            for which, values in (("train", train_logs), ("val", val_logs)):
                if values:
                    with self._writer(which).as_default():
                        for name, value in values.items():
                            summary.scalar("epoch_" + name, value, step=epoch)

    def _log_weights(self, epoch):
        from .. import summary

        with self._writer("train").as_default(), summary.record_if(True):
            for layer in self.model.layers:
                for weight in layer.weights:
                    name = weight.name.replace(":", "_")
                    summary.histogram(name + "/histogram", weight, step=epoch)
            self._writer("train").flush()
