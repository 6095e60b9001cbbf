"""TF 1.15's monitored sessions (``tf.compat.v1.train``) for one process, and the session an
Estimator runs its graph in.

``Scaffold`` gathers the operations that make a session ready (``init_op``,
``local_init_op``, ``ready_op``, ``summary_op``, ``saver``; each taken from its graph
collection or made by default) and ``finalize`` makes them and finalizes the graph.
``ChiefSessionCreator`` creates a ``Session`` as TF's ``SessionManager.prepare_session``
does: it restores the newest checkpoint of ``checkpoint_dir`` (or
``checkpoint_filename_with_path``) with the scaffold's saver, else runs ``init_op`` and
``init_fn``; then ``local_init_op``; then checks ``ready_op`` (RuntimeError naming the
uninitialized variables).

``MonitoredSession``/``SingularMonitoredSession`` call every hook's ``begin``, create the
session, call ``after_create_session(session, coord)``, and run each ``run`` between the
hooks' ``before_run`` (extra fetches and feeds, merged; a feed given twice is TF's
RuntimeError) and ``after_run``; a hook's ``request_stop`` makes ``should_stop()`` true, and
``run`` after that is TF's RuntimeError. Leaving a ``with`` block on ``OutOfRangeError`` or
``StopIteration`` is a normal end; ``close`` (normal end) calls the hooks' ``end``.
``MonitoredTrainingSession`` adds TF's default hooks for ``checkpoint_dir``:
``StepCounterHook``, ``SummarySaverHook`` (every 100 steps) and ``CheckpointSaverHook``
(every 600 seconds unless told otherwise). There is one process: a worker session
(``is_chief=False``, ``WorkerSessionCreator``) finds the variables the chief initialized in
the same process, else fails at once instead of waiting for a chief that cannot come.

A ``run`` (or ``run_step_fn``) that raises ``AbortedError`` or ``UnavailableError`` (TF's
preemption errors, from the session or a hook) is recovered as TF's ``_RecoverableSession``
does: the session is closed, a new one is made by the session creator (the chief restores
the newest checkpoint of ``checkpoint_dir``), the hooks' ``after_create_session`` run again
(``begin`` does not), and the call is retried. The chief's ``CheckpointSaverHook`` writes no
``graph.pbtxt``: ipu_gpu's graphs have no GraphDef to write.

``EstimatorSession`` is the Estimator's: the variables initialized, then restored from a
checkpoint or warm-started, and ``run`` returning None once the input ran out.
"""

from __future__ import annotations

import inspect
import os
import re

from ..train import Coordinator
from .hooks import SessionRunArgs, SessionRunContext, SessionRunValues

__all__ = ["ChiefSessionCreator", "Coordinator", "EstimatorSession", "MonitoredSession",
           "MonitoredTrainingSession", "Scaffold", "SessionCreator",
           "SingularMonitoredSession", "WorkerSessionCreator"]

USE_DEFAULT = object()


def _errors():
    from .. import errors

    return errors


def _logging():
    from ..compat.v1.tf1_misc import logging

    return logging


def _graph():
    from .. import graph

    return graph


def _preemption_errors() -> tuple:
    """The errors after which a monitored session is recreated (TF's
    ``_PREEMPTION_ERRORS``)."""
    errors = _errors()
    return (errors.AbortedError, errors.UnavailableError)


# ---- scaffold ------------------------------------------------------------------------------
class Scaffold:
    """The operations that initialize, check, summarize and save a model (TF's ``Scaffold``):
    those not given are taken from their graph collection (one item, else RuntimeError) or
    made by ``finalize``.

    Raises:
      TypeError: ``copy_from_scaffold`` is not a Scaffold (TF's message)."""

    def __init__(self, init_op=None, init_feed_dict=None, init_fn=None, ready_op=None,
                 ready_for_local_init_op=None, local_init_op=None, summary_op=None,
                 saver=None, copy_from_scaffold=None, local_init_feed_dict=None):
        if copy_from_scaffold is not None:
            if not isinstance(copy_from_scaffold, Scaffold):
                raise TypeError("copy_from_scaffold is not a Scaffold instance.")
            c = copy_from_scaffold

            def coalesce(a, b):
                return a if a is not None else b
            init_op = coalesce(init_op, c.init_op)
            init_feed_dict = coalesce(init_feed_dict, c.init_feed_dict)
            init_fn = coalesce(init_fn, c._user_init_fn)
            ready_op = coalesce(ready_op, c.ready_op)
            ready_for_local_init_op = coalesce(ready_for_local_init_op,
                                               c.ready_for_local_init_op)
            local_init_op = coalesce(local_init_op, c.local_init_op)
            local_init_feed_dict = coalesce(local_init_feed_dict, c.local_init_feed_dict)
            summary_op = coalesce(summary_op, c.summary_op)
            saver = coalesce(saver, c.saver)
        self._user_init_fn = init_fn
        self._init_fn = (lambda sess: init_fn(self, sess)) if init_fn else None
        self._init_op, self._init_feed_dict = init_op, init_feed_dict
        self._ready_op, self._ready_for_local_init_op = ready_op, ready_for_local_init_op
        self._local_init_op, self._local_init_feed_dict = local_init_op, local_init_feed_dict
        self._summary_op, self._saver = summary_op, saver

    init_fn = property(lambda self: self._init_fn)
    init_op = property(lambda self: self._init_op)
    init_feed_dict = property(lambda self: self._init_feed_dict)
    ready_op = property(lambda self: self._ready_op)
    ready_for_local_init_op = property(lambda self: self._ready_for_local_init_op)
    local_init_op = property(lambda self: self._local_init_op)
    local_init_feed_dict = property(lambda self: self._local_init_feed_dict)
    summary_op = property(lambda self: self._summary_op)
    saver = property(lambda self: self._saver)

    def finalize(self):
        """Makes the operations not given, then finalizes the default graph."""
        from ..compat import v1

        g = _graph()
        keys = v1.GraphKeys
        if self._init_op is None:
            self._init_op = Scaffold.get_or_default(
                "init_op", keys.INIT_OP, lambda: g.group(g.global_variables_initializer()))
        if self._ready_op is None:
            self._ready_op = Scaffold.get_or_default(
                "ready_op", keys.READY_OP, v1.report_uninitialized_variables)
        if self._ready_for_local_init_op is None:
            self._ready_for_local_init_op = Scaffold.get_or_default(
                "ready_for_local_init_op", keys.READY_FOR_LOCAL_INIT_OP,
                lambda: v1.report_uninitialized_variables(g.global_variables()))
        if self._local_init_op is None:
            self._local_init_op = Scaffold.get_or_default(
                "local_init_op", keys.LOCAL_INIT_OP, Scaffold.default_local_init_op)
        if self._summary_op is None:
            self._summary_op = Scaffold.get_or_default("summary_op", keys.SUMMARY_OP,
                                                       v1.summary.merge_all)
        if self._saver is None:
            self._saver = _saver_or_default()
        g.get_default_graph().finalize()
        _logging().info("Graph was finalized.")
        return self

    @staticmethod
    def get_or_default(arg_name, collection_key, default_constructor):
        """The one item of the collection ``collection_key``, else ``default_constructor()``
        (added to the collection).

        Raises:
          RuntimeError: the collection holds several items (TF's message)."""
        graph = _graph().get_default_graph()
        elements = graph.get_collection(collection_key)
        if elements:
            if len(elements) > 1:
                raise RuntimeError(f'More than one item in the collection "{collection_key}". '
                                   "Please indicate which one to use by passing it to the "
                                   f"tf.Scaffold constructor as:  tf.Scaffold({arg_name}=item "
                                   "to use)")
            return elements[0]
        op = default_constructor()
        if op is not None:
            graph.add_to_collection(collection_key, op)
        return op

    @staticmethod
    def default_local_init_op():
        """``group(local_variables_initializer(), tables_initializer())``."""
        from ..compat import v1

        return _graph().group(v1.local_variables_initializer(), v1.tables_initializer())


def _saver_or_default():
    """The one Saver of the SAVERS collection, else a new Saver of every global variable
    (added to it), as TF's ``_get_saver_or_default``.

    Raises:
      RuntimeError: several savers in the collection (TF's message)."""
    from ..graph.saver import Saver

    graph = _graph().get_default_graph()
    savers = graph.get_collection("savers")
    if savers:
        if len(savers) > 1:
            raise RuntimeError("More than one item in collection savers. Please indicate "
                               "which one to use by passing it to the constructor.")
        return savers[0]
    saver = Saver(allow_empty=True)
    graph.add_to_collection("savers", saver)
    return saver


# ---- session creators ----------------------------------------------------------------------
class SessionCreator:
    """A factory of ``Session``s (TF's abstract ``SessionCreator``)."""

    def create_session(self):
        raise NotImplementedError(f"create_session is not implemented for {self}.")


class ChiefSessionCreator(SessionCreator):
    """Creates a ``Session`` made ready as the module docstring says.

    Raises (from ``create_session``):
      ValueError: both ``checkpoint_dir`` and ``checkpoint_filename_with_path``.
      RuntimeError: the model cannot be initialized or is not ready after initializing."""

    def __init__(self, scaffold=None, master="", config=None, checkpoint_dir=None,
                 checkpoint_filename_with_path=None):
        self._scaffold = scaffold or Scaffold()
        self._config = config
        self._checkpoint_dir = checkpoint_dir
        self._checkpoint_filename_with_path = checkpoint_filename_with_path

    def create_session(self):
        self._scaffold.finalize()
        return _prepare_session(self._scaffold, self._config, self._checkpoint_dir,
                                self._checkpoint_filename_with_path)


class WorkerSessionCreator(SessionCreator):
    """Creates a ``Session`` of a non-chief worker: nothing is initialized but the local
    variables; the model must be ready (initialized by the chief, in this process).

    Raises (from ``create_session``):
      RuntimeError: the model is not ready (TF waits ``max_wait_secs`` for a chief, then
        raises DeadlineExceededError, which ipu_gpu.errors does not have)."""

    def __init__(self, scaffold=None, master="", config=None, max_wait_secs=30 * 60):
        self._scaffold = scaffold or Scaffold()
        self._config = config
        self._max_wait_secs = max_wait_secs

    def create_session(self):
        from ..compat import v1

        s = self._scaffold.finalize()
        sess = v1.Session(config=self._config)
        not_ready = _not_ready(sess, s.ready_for_local_init_op)
        if not_ready is None and s.local_init_op is not None:
            sess.run(s.local_init_op, feed_dict=s.local_init_feed_dict)
        not_ready = not_ready or _not_ready(sess, s.ready_op)
        if not_ready is not None:
            sess.close()
            raise RuntimeError(  # TF's DeadlineExceededError, after waiting
                f"Session was not ready after waiting {self._max_wait_secs} secs.")
        return sess


def _not_ready(sess, ready_op):
    """None when ``ready_op`` (a 1-D tensor of uninitialized names) is empty, else TF's
    message naming them."""
    if ready_op is None:
        return None
    names = [n.decode() if isinstance(n, bytes) else str(n)
             for n in list(sess.run(ready_op).reshape(-1))]
    return None if not names else f"Variables not initialized: {', '.join(names)}"


def _prepare_session(scaffold, config, checkpoint_dir, checkpoint_filename_with_path):
    """TF's ``SessionManager.prepare_session`` for one process."""
    from ..compat import v1
    from ..graph.saver import get_checkpoint_state, latest_checkpoint

    if checkpoint_dir and checkpoint_filename_with_path:
        raise ValueError("Can not provide both checkpoint_dir and "
                         "checkpoint_filename_with_path.")
    sess = v1.Session(config=config)
    path = checkpoint_filename_with_path
    if path is None and checkpoint_dir:
        path = latest_checkpoint(checkpoint_dir)
    if path is not None and scaffold.saver is not None:
        scaffold.saver.restore(sess, path)
        _logging().info("Restoring parameters from %s", path)
        if checkpoint_dir and hasattr(scaffold.saver, "recover_last_checkpoints"):
            state = get_checkpoint_state(checkpoint_dir)
            scaffold.saver.recover_last_checkpoints(state.all_model_checkpoint_paths)
    else:
        if (scaffold.init_op is None and not scaffold.init_fn
                and scaffold.local_init_op is None):
            raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                               "local_init_op was given")
        if scaffold.init_op is not None:
            sess.run(scaffold.init_op, feed_dict=scaffold.init_feed_dict)
        if scaffold.init_fn:
            scaffold.init_fn(sess)
    not_ready_local = _not_ready(sess, scaffold.ready_for_local_init_op)
    if not_ready_local is None and scaffold.local_init_op is not None:
        sess.run(scaffold.local_init_op, feed_dict=scaffold.local_init_feed_dict)
    not_ready = _not_ready(sess, scaffold.ready_op)
    if not_ready is not None:
        sess.close()
        if not_ready_local is not None:
            raise RuntimeError(f"Init operations did not make model ready for local_init.  "
                               f"Init op: {_op_name(scaffold.init_op)}, init fn: "
                               f"{scaffold.init_fn}, error: {not_ready_local}")
        raise RuntimeError(f"Init operations did not make model ready.  Init op: "
                           f"{_op_name(scaffold.init_op)}, init fn: {scaffold.init_fn}, "
                           f"local_init_op: {_op_name(scaffold.local_init_op)}, error: "
                           f"{not_ready}")
    return sess


def _op_name(op):
    return "None" if op is None else getattr(op, "name", str(op))


# ---- hooked runs ---------------------------------------------------------------------------
def _hooked_run(session, hooks, fetches, feed_dict=None, options=None):
    """``session.run(fetches, feed_dict)`` between the hooks' ``before_run`` and
    ``after_run``; returns (the caller's results, whether a hook requested a stop).

    Raises:
      RuntimeError: a tensor fed by two hooks, or by a hook and the caller (TF's
        messages)."""
    context = SessionRunContext(SessionRunArgs(fetches, feed_dict), session)
    extra, hook_feeds = {}, {}
    for i, hook in enumerate(hooks):
        request = hook.before_run(context)
        if request is None:
            continue
        if request.fetches is not None:
            extra[i] = request.fetches
        if request.feed_dict:
            _no_common_feeds(hook_feeds, request.feed_dict, "Same tensor is fed by two hooks.")
            hook_feeds.update(request.feed_dict)
    if hook_feeds and feed_dict:
        _no_common_feeds(feed_dict, hook_feeds,
                         "Same tensor is fed by a SessionRunHook and user.")
    feeds = {**hook_feeds, **(feed_dict or {})} or None
    keys = list(extra)
    # the hooks' fetches first: a variable they read shows its value before this run's
    # updates, as TF's concurrent reads do (StopAtStepHook reads the step before its increment)
    results = session.run([[extra[k] for k in keys], fetches], feed_dict=feeds,
                          options=options)
    by_hook = dict(zip(keys, results[0]))
    for i, hook in enumerate(hooks):
        hook.after_run(context, SessionRunValues(by_hook.get(i), options, None))
    return results[1], context.stop_requested


def _no_common_feeds(feeds1, feeds2, message):
    common = set(feeds1) & set(feeds2)
    if common:
        raise RuntimeError(f"{message} Conflict(s): {list(common)}")


class _MonitoredSession:
    """The hooks around a session a creator makes (see the module docstring)."""

    def __init__(self, session_creator, hooks, stop_grace_period_secs=120):
        self._hooks = list(hooks or [])
        for hook in self._hooks:
            hook.begin()
        self._creator = session_creator or ChiefSessionCreator()
        self._stop_grace_period_secs = stop_grace_period_secs
        self._stop = False
        self._closed = False
        self._sess = self._coord = None
        self._create()

    def _create(self) -> None:
        """A session from the creator, a coordinator, the hooks' ``after_create_session``
        (TF's ``_CoordinatedSessionCreator``), retried after a preemption error."""
        while True:
            try:
                self._sess = self._creator.create_session()
                break
            except _preemption_errors() as e:
                _logging().info("An error was raised while a session was being created. "
                                "This may be due to a preemption of a connected worker or "
                                "parameter server. A new session will be created. This "
                                "error may also occur due to a gRPC failure caused by high "
                                "memory or network bandwidth usage in the parameter "
                                "servers. If this error occurs repeatedly, try increasing "
                                "the number of parameter servers assigned to the job. "
                                "Error: %s", e)
        self._coord = Coordinator(clean_stop_exception_types=[])
        for hook in self._hooks:
            hook.after_create_session(self._sess, self._coord)

    def _recover(self, error) -> None:
        """TF's ``_RecoverableSession`` after a preemption error: closes the session (not
        the hooks) and makes a new one."""
        _logging().info("An error was raised. This may be due to a preemption in a "
                        "connected worker or parameter server. The current session will be "
                        "closed and a new session will be created. This error may also "
                        "occur due to a gRPC failure caused by high memory or network "
                        "bandwidth usage in the parameter servers. If this error occurs "
                        "repeatedly, try increasing the number of parameter servers "
                        "assigned to the job. Error: %s", error)
        try:
            self._coord.request_stop()
            self._sess.close()
        finally:
            self._sess = None
        self._create()

    @property
    def graph(self):
        """The graph run by this session (None once closed)."""
        return None if self._sess is None else self._sess.graph

    def _tf_sess(self):
        return self._sess

    def should_stop(self) -> bool:
        """Whether a hook or the coordinator asked to stop, or the session is closed."""
        if self._closed or self._sess is None:
            return True
        self._coord.raise_requested_exception()
        return self._stop or self._coord.should_stop()

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """``Session.run`` with the hooks around it.

        Raises:
          RuntimeError: called after a stop was requested (TF's message), or closed."""
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        while True:
            try:
                out, stop = self._coordinated(
                    lambda: _hooked_run(self._sess, self._hooks, fetches, feed_dict, options))
                break
            except _preemption_errors() as e:
                self._recover(e)
        self._stop = self._stop or stop
        return out

    def _coordinated(self, call):
        """``call()``; an error other than a preemption is the coordinator's requested
        exception if there is one (TF's ``_CoordinatedSession.run``)."""
        try:
            return call()
        except _preemption_errors():
            raise
        except Exception as original:
            try:
                self._coord.raise_requested_exception()
            except Exception:  # noqa: BLE001 - TF re-raises the run's own error then
                raise original from None
            raise

    def run_step_fn(self, step_fn):
        """``step_fn(step_context)``: ``step_context.session`` is the raw session,
        ``run_with_hooks`` this session's ``run``, ``request_stop()`` ends the loop.

        Raises:
          ValueError: ``step_fn`` does not take exactly ``step_context`` (TF's message).
          StopIteration: ``step_fn`` requested a stop."""
        params = tuple(inspect.signature(step_fn).parameters)
        if params not in (("step_context",), ("self", "step_context")):
            raise ValueError("`step_fn` may either have one `step_context` argument, or "
                             "`self` and `step_context` arguments if it's an instance "
                             f"method. Got {params} instead.")
        while True:
            try:
                return step_fn(_MonitoredSession.StepContext(self._sess, self._run_hooked))
            except _preemption_errors() as e:
                self._recover(e)

    def _run_hooked(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """``run`` without recovery: inside ``run_step_fn`` the whole step is retried."""
        if self.should_stop():
            raise RuntimeError("Run called even after should_stop requested.")
        out, stop = self._coordinated(
            lambda: _hooked_run(self._sess, self._hooks, fetches, feed_dict, options))
        self._stop = self._stop or stop
        return out

    class StepContext:
        """What ``run_step_fn`` gives ``step_fn``."""

        def __init__(self, session, run_with_hooks_fn):
            self._session = session
            self._run_with_hooks_fn = run_with_hooks_fn

        @property
        def session(self):
            return self._session

        def run_with_hooks(self, *args, **kwargs):
            return self._run_with_hooks_fn(*args, **kwargs)

        def request_stop(self):
            raise StopIteration("step_fn has requested the iterations to stop.")

    def close(self):
        self._close_internal()

    def _close_internal(self, exception_type=None):
        try:
            if not exception_type:
                for hook in self._hooks:
                    hook.end(self._sess)
        finally:
            try:
                if self._closed or self._sess is None:
                    raise RuntimeError("Session is already closed.")
                self._coord.request_stop()
                self._sess.close()
            finally:
                self._sess = None
                self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, exception_type, exception_value, traceback):
        if exception_type is not None and issubclass(
                exception_type, (_errors().OutOfRangeError, StopIteration)):
            exception_type = None
        self._close_internal(exception_type)
        return exception_type is None


class MonitoredSession(_MonitoredSession):
    """``tf.compat.v1.train.MonitoredSession(session_creator=None, hooks=None,
    stop_grace_period_secs=120)``: hooks around a session of ``session_creator`` (default: a
    ``ChiefSessionCreator``)."""

    def __init__(self, session_creator=None, hooks=None, stop_grace_period_secs=120):
        super().__init__(session_creator, hooks, stop_grace_period_secs)


class SingularMonitoredSession(_MonitoredSession):
    """``tf.compat.v1.train.SingularMonitoredSession``: a ``MonitoredSession`` whose chief
    session is made from ``scaffold`` and ``checkpoint_dir``; ``raw_session()`` is it."""

    def __init__(self, hooks=None, scaffold=None, master="", config=None, checkpoint_dir=None,
                 stop_grace_period_secs=120, checkpoint_filename_with_path=None):
        creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                      checkpoint_dir=checkpoint_dir,
                                      checkpoint_filename_with_path=checkpoint_filename_with_path)
        super().__init__(creator, hooks, stop_grace_period_secs)

    def raw_session(self):
        """The underlying ``Session``."""
        return self._tf_sess()


def MonitoredTrainingSession(master="", is_chief=True, checkpoint_dir=None, scaffold=None,  # noqa: N802 - TF's name
                             hooks=None, chief_only_hooks=None,
                             save_checkpoint_secs=USE_DEFAULT,
                             save_summaries_steps=USE_DEFAULT,
                             save_summaries_secs=USE_DEFAULT, config=None,
                             stop_grace_period_secs=120, log_step_count_steps=100,
                             max_wait_secs=7200, save_checkpoint_steps=USE_DEFAULT,
                             summary_dir=None, save_graph_def=True):
    """A ``MonitoredSession`` for training (TF 1.15's): for the chief, a session restored
    from ``checkpoint_dir`` or initialized, with ``chief_only_hooks``, then (with a
    ``summary_dir``, default ``checkpoint_dir``) a ``StepCounterHook`` every
    ``log_step_count_steps`` and a ``SummarySaverHook`` every ``save_summaries_steps`` (100)
    or ``save_summaries_secs``, (with ``checkpoint_dir``) a ``CheckpointSaverHook`` every
    ``save_checkpoint_secs`` (600) or ``save_checkpoint_steps``, then ``hooks``."""
    from .hooks import CheckpointSaverHook, StepCounterHook, SummarySaverHook

    if save_summaries_steps is USE_DEFAULT and save_summaries_secs is USE_DEFAULT:
        save_summaries_steps, save_summaries_secs = 100, None
    elif save_summaries_secs is USE_DEFAULT:
        save_summaries_secs = None
    elif save_summaries_steps is USE_DEFAULT:
        save_summaries_steps = None
    if save_checkpoint_steps is USE_DEFAULT and save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_steps, save_checkpoint_secs = None, 600
    elif save_checkpoint_secs is USE_DEFAULT:
        save_checkpoint_secs = None
    elif save_checkpoint_steps is USE_DEFAULT:
        save_checkpoint_steps = None
    scaffold = scaffold or Scaffold()
    if not is_chief:
        creator = WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                       max_wait_secs=max_wait_secs)
        return MonitoredSession(creator, hooks or [], stop_grace_period_secs)
    all_hooks = list(chief_only_hooks or [])
    creator = ChiefSessionCreator(scaffold=scaffold, master=master, config=config,
                                  checkpoint_dir=checkpoint_dir)
    summary_dir = summary_dir or checkpoint_dir
    if summary_dir:
        if log_step_count_steps and log_step_count_steps > 0:
            all_hooks.append(StepCounterHook(output_dir=summary_dir,
                                             every_n_steps=log_step_count_steps))
        if ((save_summaries_steps and save_summaries_steps > 0)
                or (save_summaries_secs and save_summaries_secs > 0)):
            all_hooks.append(SummarySaverHook(scaffold=scaffold,
                                              save_steps=save_summaries_steps,
                                              save_secs=save_summaries_secs,
                                              output_dir=summary_dir))
    if checkpoint_dir and ((save_checkpoint_secs and save_checkpoint_secs > 0)
                           or (save_checkpoint_steps and save_checkpoint_steps > 0)):
        all_hooks.append(CheckpointSaverHook(checkpoint_dir, save_steps=save_checkpoint_steps,
                                             save_secs=save_checkpoint_secs,
                                             scaffold=scaffold, save_graph_def=save_graph_def))
    all_hooks.extend(hooks or [])
    return MonitoredSession(creator, all_hooks, stop_grace_period_secs)


# ---- the Estimator's session ---------------------------------------------------------------
class EstimatorSession:
    """Hooks around a ``Session`` of the default graph for an Estimator: the hooks' ``begin``,
    the variables initialized, then restored from ``checkpoint_path`` (or warm-started), the
    local variables initialized, the hooks' ``after_create_session``; ``run`` returns None
    once the input ran out (``OutOfRangeError``, unless ``stop_at_end_of_input`` is False:
    then it propagates, as running an IPU loop past its input is an error)."""

    def __init__(self, hooks, checkpoint_path=None, warm_start=None, session_config=None,
                 stop_at_end_of_input=True):
        from ..compat import v1
        from ..graph.saver import Saver

        self._hooks = list(hooks)
        for hook in self._hooks:
            hook.begin()
        self._session = v1.Session(config=session_config)
        self._session.run(v1.global_variables_initializer())
        if checkpoint_path is not None:
            Saver().restore(self._session, checkpoint_path)
        elif warm_start is not None:
            _warm_start(self._session, *warm_start)
        self._session.run(v1.local_variables_initializer())
        self._stop = False
        self._stop_at_end_of_input = stop_at_end_of_input
        for hook in self._hooks:
            hook.after_create_session(self._session, None)

    @property
    def session(self):
        return self._session

    def should_stop(self) -> bool:
        return self._stop

    def run(self, fetches):
        """``Session.run(fetches)`` with the hooks around it; None once the input ran out."""
        try:
            out, stop = _hooked_run(self._session, self._hooks, fetches)
        except _errors().OutOfRangeError:
            if not self._stop_at_end_of_input:
                raise
            self._stop = True
            return None
        self._stop = self._stop or stop
        return out

    def close(self):
        try:
            for hook in self._hooks:
                hook.end(self._session)
        finally:
            self._session.close()


def _warm_start(session, checkpoint, pattern):
    """Assigns the trainable variables matching ``pattern`` from ``checkpoint``."""
    import numpy as np

    from ..graph.nodes import trainable_variables
    from ..graph.saver import Saver, _key, latest_checkpoint

    chosen = [v for v in trainable_variables() if re.match(pattern, _key(v))]
    if not chosen:
        return
    path = checkpoint
    if os.path.isdir(path):
        path = latest_checkpoint(path)
    with np.load(path + ".npz") as saved:
        present = [v for v in chosen if _key(v) in saved.files]
    if present:
        Saver(var_list=present).restore(session, path)
