"""``tf.estimator.SessionRunHook`` and the hooks an Estimator installs, as TF 1.15's
``session_run_hook.py``/``basic_session_run_hooks.py`` define them: a hook is told when the
graph is about to be run (``begin``), when the session exists (``after_create_session``),
around each ``Session.run`` (``before_run`` may add fetches, ``after_run`` sees them and may
``request_stop``) and at the end (``end``)."""

from __future__ import annotations

import collections
import time

import numpy as np

__all__ = ["CheckpointSaverHook", "CheckpointSaverListener", "LoggingTensorHook",
           "NanLossDuringTrainingError", "NanTensorHook", "NeverTriggerTimer",
           "SecondOrStepTimer", "SessionRunArgs", "SessionRunContext", "SessionRunHook",
           "SessionRunValues", "StepCounterHook", "StopAtStepHook", "SummarySaverHook"]


class SessionRunHook:
    """Hook to extend calls to ``MonitoredSession.run()``; every method does nothing."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class SessionRunArgs(collections.namedtuple("SessionRunArgs",
                                            ["fetches", "feed_dict", "options"])):
    """What a hook's ``before_run`` adds to the coming ``Session.run``."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """The results of the fetches the hook asked for."""


class SessionRunContext:
    """The run a hook is called around: its arguments, the session, and ``request_stop``."""

    def __init__(self, original_args, session):
        self._original_args = original_args
        self._session = session
        self._stop_requested = False

    original_args = property(lambda self: self._original_args)
    session = property(lambda self: self._session)
    stop_requested = property(lambda self: self._stop_requested)

    def request_stop(self):
        """Ends the loop after this run."""
        self._stop_requested = True


class SecondOrStepTimer:
    """Triggers every ``every_secs`` seconds or every ``every_steps`` steps (exactly one).

    Raises:
      ValueError: both or neither given, as TF."""

    def __init__(self, every_secs=None, every_steps=None):
        if (every_steps is None) == (every_secs is None):
            raise ValueError("Either every_secs or every_steps should be provided.")
        self._every_secs, self._every_steps = every_secs, every_steps
        self.reset()

    def reset(self):
        self._last_time = self._last_step = None

    def should_trigger_for_step(self, step):
        if self._last_step is None:
            return True
        if self._last_step == step:
            return False
        if self._every_secs is not None:
            return time.time() >= self._last_time + self._every_secs
        return step >= self._last_step + self._every_steps

    def update_last_triggered_step(self, step):
        now = time.time()
        elapsed = None if self._last_time is None else (now - self._last_time,
                                                        step - self._last_step)
        self._last_time, self._last_step = now, step
        return elapsed if elapsed is not None else (None, None)

    def last_triggered_step(self):
        return self._last_step


class NeverTriggerTimer(SecondOrStepTimer):
    """A timer that never triggers."""

    def __init__(self):
        self.reset()

    def should_trigger_for_step(self, step):
        return False


def _logging():
    from ..compat.v1.tf1_misc import logging

    return logging


def logging_timer(every_n_iter, every_n_secs, at_end):
    """The timer of a logging hook: never triggering when only ``at_end`` is asked for,
    else every ``every_n_iter`` steps or ``every_n_secs`` seconds."""
    if at_end and every_n_iter is None and every_n_secs is None:
        return NeverTriggerTimer()
    return SecondOrStepTimer(every_secs=every_n_secs, every_steps=every_n_iter)


def log_tensor_values(timer, step, formatter, values, tags):
    """Logs ``values`` (a dict) at INFO as a logging hook does at ``step``: through
    ``formatter`` when given, else ``tag = value`` for each of ``tags`` and the seconds
    since the timer last triggered; numpy prints without scientific notation meanwhile."""
    original = np.get_printoptions()
    np.set_printoptions(suppress=True)
    elapsed, _ = timer.update_last_triggered_step(step)
    if formatter:
        _logging().info(formatter(values))
    else:
        stats = ", ".join(f"{tag} = {values[tag]}" for tag in tags)
        if elapsed is not None:
            _logging().info("%s (%.3f sec)", stats, elapsed)
        else:
            _logging().info("%s", stats)
    np.set_printoptions(**original)


class StopAtStepHook(SessionRunHook):
    """Requests stop when the global step reaches ``last_step`` (or ``num_steps`` after
    the step at session creation).

    Raises:
      ValueError: both or neither of ``num_steps``/``last_step`` given."""

    def __init__(self, num_steps=None, last_step=None):
        if num_steps is None and last_step is None:
            raise ValueError("One of num_steps or last_step must be specified.")
        if num_steps is not None and last_step is not None:
            raise ValueError("Only one of num_steps or last_step can be specified.")
        self._num_steps, self._last_step = num_steps, last_step

    def begin(self):
        from ..graph.optimizers import get_global_step

        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use StopAtStepHook.")

    def after_create_session(self, session, coord):
        step = int(session.run(self._global_step))
        if self._last_step is None:
            self._last_step = step + self._num_steps

    def before_run(self, run_context):
        return SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        # the fetched value is the step before this run's increment
        if int(run_values.results) + 1 >= self._last_step:
            step = int(run_context.session.run(self._global_step))
            if step >= self._last_step:
                run_context.request_stop()


class LoggingTensorHook(SessionRunHook):
    """Logs the values of ``tensors`` (a dict, or a list of tensors or names) at INFO,
    every ``every_n_iter`` runs or ``every_n_secs`` seconds, or at the end."""

    def __init__(self, tensors, every_n_iter=None, every_n_secs=None, at_end=False,
                 formatter=None):
        only_at_end = at_end and every_n_iter is None and every_n_secs is None
        if not only_at_end and (every_n_iter is None) == (every_n_secs is None):
            raise ValueError("either at_end and/or exactly one of every_n_iter and "
                             "every_n_secs must be provided.")
        if every_n_iter is not None and every_n_iter <= 0:
            raise ValueError(f"invalid every_n_iter={every_n_iter}.")
        if not isinstance(tensors, dict):
            tensors = {getattr(t, "name", t): t for t in tensors}
        self._tag_order = list(tensors)
        self._tensors = tensors
        self._timer = logging_timer(every_n_iter, every_n_secs, at_end)
        self._log_at_end, self._formatter = at_end, formatter

    def begin(self):
        from ..graph.core import get_default_graph

        self._timer.reset()
        self._iter_count = 0
        graph = get_default_graph()
        self._current = {tag: graph.get_tensor_by_name(t) if isinstance(t, str) else t
                         for tag, t in self._tensors.items()}

    def before_run(self, run_context):
        self._should_trigger = self._timer.should_trigger_for_step(self._iter_count)
        return SessionRunArgs(self._current) if self._should_trigger else None

    def _log(self, values):
        log_tensor_values(self._timer, self._iter_count, self._formatter, values,
                          self._tag_order)

    def after_run(self, run_context, run_values):
        if self._should_trigger:
            self._log(run_values.results)
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log(session.run(self._current))


class StepCounterHook(SessionRunHook):
    """Logs ``global_step/sec`` (INFO) every ``every_n_steps`` global steps or
    ``every_n_secs`` seconds."""

    def __init__(self, every_n_steps=100, every_n_secs=None, output_dir=None,
                 summary_writer=None):
        if (every_n_steps is None) == (every_n_secs is None):
            raise ValueError("exactly one of every_n_steps and every_n_secs should be "
                             "provided.")
        self._timer = SecondOrStepTimer(every_steps=every_n_steps, every_secs=every_n_secs)

    def begin(self):
        from ..graph.optimizers import get_global_step

        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use StepCounterHook.")

    def after_run(self, run_context, run_values):
        step = int(run_context.session.run(self._global_step))
        if self._timer.should_trigger_for_step(step):
            elapsed_time, elapsed_steps = self._timer.update_last_triggered_step(step)
            if elapsed_time:
                _logging().info("global_step/sec: %g", elapsed_steps / elapsed_time)


class _LossSummaryHook(SessionRunHook):
    """Writes the ``loss`` scalar summary to ``output_dir``'s event file every
    ``save_steps`` global steps (fetched with the run that computed it)."""

    def __init__(self, loss, save_steps, output_dir):
        self._loss, self._output_dir = loss, output_dir
        self._timer = SecondOrStepTimer(every_steps=save_steps)

    def begin(self):
        from ..compat.v1.summary import FileWriterCache
        from ..graph.optimizers import get_global_step

        self._global_step = get_global_step()
        self._writer = FileWriterCache.get(self._output_dir)
        self._last, self._next = None, None

    def before_run(self, run_context):
        # the step this run will end at: the last run's advance again (1 before any)
        self._fetch = self._next is None or self._timer.should_trigger_for_step(self._next)
        return SessionRunArgs(self._loss) if self._fetch else None

    def after_run(self, run_context, run_values):
        step = int(run_context.session.run(self._global_step))
        advance = 1 if self._last is None else max(step - self._last, 1)
        self._last, self._next = step, step + advance
        if self._fetch:
            from ..compat.v1.summary import Summary

            self._timer.update_last_triggered_step(step)
            self._writer.add_summary(Summary(value=[Summary.Value(
                tag="loss", simple_value=float(run_values.results))]), step)

    def end(self, session):
        self._writer.flush()


class SummarySaverHook(SessionRunHook):
    """Writes the summary of ``summary_op`` (default: the scaffold's, else ``merge_all``) to
    ``summary_writer`` (default: the ``output_dir`` one) every ``save_steps`` global steps or
    ``save_secs`` seconds, at the step the run ended at (TF's ``SummarySaverHook``).

    Raises:
      ValueError: both or neither of ``scaffold``/``summary_op``, or of
        ``save_steps``/``save_secs`` (TF's messages)."""

    def __init__(self, save_steps=None, save_secs=None, output_dir=None, summary_writer=None,
                 scaffold=None, summary_op=None):
        if (scaffold is None) == (summary_op is None):
            raise ValueError("Exactly one of scaffold or summary_op must be provided.")
        self._summary_op, self._scaffold = summary_op, scaffold
        self._writer, self._output_dir = summary_writer, output_dir
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)

    def begin(self):
        from ..graph.optimizers import get_global_step

        if self._writer is None and self._output_dir:
            from ..compat.v1.summary import FileWriterCache

            self._writer = FileWriterCache.get(self._output_dir)
        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use SummarySaverHook.")
        self._next_step = None

    def _summaries(self):
        op = self._summary_op if self._scaffold is None else self._scaffold.summary_op
        if op is None:
            return []
        return list(op) if isinstance(op, (list, tuple)) else [op]

    def before_run(self, run_context):
        self._request = (self._next_step is None
                         or self._timer.should_trigger_for_step(self._next_step))
        fetches = {"global_step": self._global_step}
        if self._request and self._summaries():
            fetches["summary"] = self._summaries()
        return SessionRunArgs(fetches)

    def after_run(self, run_context, run_values):
        step = int(run_values.results["global_step"]) + 1  # fetched before the increment
        if self._next_step is None or self._request:
            step = int(run_context.session.run(self._global_step))
        if self._request:
            self._timer.update_last_triggered_step(step)
            if self._writer is not None:
                for summary in run_values.results.get("summary", []):
                    self._writer.add_summary(summary, step)
        self._next_step = step + 1

    def end(self, session=None):
        if self._writer is not None:
            self._writer.flush()


class NanLossDuringTrainingError(RuntimeError):
    def __str__(self):
        return "NaN loss during training."


class NanTensorHook(SessionRunHook):
    """Raises ``NanLossDuringTrainingError`` (or, with ``fail_on_nan_loss=False``, logs
    and stops) when the loss is NaN."""

    def __init__(self, loss_tensor, fail_on_nan_loss=True):
        self._loss, self._fail = loss_tensor, fail_on_nan_loss

    def before_run(self, run_context):
        return SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
        if np.isnan(run_values.results).any():
            message = "Model diverged with loss = NaN."
            if self._fail:
                _logging().error(message)
                raise NanLossDuringTrainingError
            _logging().warning(message)
            run_context.request_stop()


class CheckpointSaverListener:
    """Called before and after each checkpoint a ``CheckpointSaverHook`` writes; returning
    True from ``after_save`` stops training."""

    def begin(self):
        pass

    def before_save(self, session, global_step_value):
        pass

    def after_save(self, session, global_step_value):
        pass

    def end(self, session, global_step_value):
        pass


class CheckpointSaverHook(SessionRunHook):
    """Saves ``<checkpoint_dir>/<checkpoint_basename>-<global step>`` when the session is
    created, every ``save_secs`` seconds or ``save_steps`` global steps (checked after each
    run, on the global step after that run), and at the end unless the last step is saved.
    ``save_graph_def`` is accepted, but no ``graph.pbtxt`` or meta graph is written (TF
    writes its GraphDef proto there; ipu_gpu's graphs have none).

    Raises:
      ValueError: both or neither of ``save_secs``/``save_steps``."""

    def __init__(self, checkpoint_dir, save_secs=None, save_steps=None, saver=None,
                 checkpoint_basename="model.ckpt", scaffold=None, listeners=None,
                 save_graph_def=True):
        if (save_secs is None) == (save_steps is None):
            raise ValueError("exactly one of save_secs or save_steps must be provided.")
        import os

        self._saver, self._scaffold = saver, scaffold
        self._save_path = os.path.join(checkpoint_dir, checkpoint_basename)
        self._timer = SecondOrStepTimer(every_secs=save_secs, every_steps=save_steps)
        self._listeners = list(listeners or [])

    def begin(self):
        from ..graph.optimizers import get_global_step

        self._global_step = get_global_step()
        if self._global_step is None:
            raise RuntimeError("Global step should be created to use CheckpointSaverHook.")
        for listener in self._listeners:
            listener.begin()

    def after_create_session(self, session, coord):
        step = int(session.run(self._global_step))
        self._save(session, step)
        self._timer.update_last_triggered_step(step)

    def after_run(self, run_context, run_values):
        step = int(run_context.session.run(self._global_step))
        if self._timer.should_trigger_for_step(step):
            self._timer.update_last_triggered_step(step)
            if self._save(run_context.session, step):
                run_context.request_stop()

    def end(self, session):
        step = int(session.run(self._global_step))
        if step != self._timer.last_triggered_step():
            self._save(session, step)
        for listener in self._listeners:
            listener.end(session, step)

    def _get_saver(self):
        """The saver given, else the scaffold's, else the one of the SAVERS collection (TF's
        order).

        Raises:
          RuntimeError: no saver anywhere, or several in the collection (TF's messages)."""
        if self._saver is not None:
            return self._saver
        if self._scaffold is not None:
            return self._scaffold.saver
        from ..graph.core import get_default_graph

        savers = get_default_graph().get_collection("savers")
        if not savers:
            raise RuntimeError("No items in collection savers. Please add a saver to the "
                               "collection or provide a saver or scaffold.")
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection savers. Please indicate "
                               "which one to use by passing it to the constructor.")
        self._saver = savers[0]
        return self._saver

    def _save(self, session, step) -> bool:
        _logging().info("Saving checkpoints for %d into %s.", step, self._save_path)
        for listener in self._listeners:
            listener.before_save(session, step)
        self._get_saver().save(session, self._save_path, global_step=step)
        stop = False
        for listener in self._listeners:
            if listener.after_save(session, step):
                _logging().info("A CheckpointSaverListener requested that training be "
                                "stopped. listener: %s", listener)
                stop = True
        return stop
