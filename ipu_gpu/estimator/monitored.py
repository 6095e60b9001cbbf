"""The session an Estimator runs its graph in (TF 1.15's ``MonitoredSession`` for one
worker): it calls the hooks' ``begin``, creates the session, restores the checkpoint (or
initializes the variables, or warm-starts them), initializes the local variables, calls
``after_create_session``, and runs each ``run`` between the hooks' ``before_run`` and
``after_run``; an ``OutOfRangeError`` (input exhausted) or a hook's ``request_stop`` ends the
loop (unless ``stop_at_end_of_input`` is False: then it propagates, as running an IPU
loop past its input is an error); ``close`` calls the hooks' ``end``."""

from __future__ import annotations

import re

from .hooks import SessionRunArgs, SessionRunContext, SessionRunValues

__all__ = ["MonitoredSession"]


def _errors():
    from .. import errors

    return errors


class MonitoredSession:
    """Hooks around a ``Session`` of the default graph (see the module docstring)."""

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
        context = SessionRunContext(SessionRunArgs(fetches), self._session)
        extra, feed = [], {}
        for hook in self._hooks:
            args = hook.before_run(context)
            extra.append(None if args is None else args.fetches)
            if args is not None and args.feed_dict:
                feed.update(args.feed_dict)
        try:
            results = self._session.run([fetches, extra], feed_dict=feed or None)
        except _errors().OutOfRangeError:
            if not self._stop_at_end_of_input:
                raise
            self._stop = True
            return None
        for hook, values in zip(self._hooks, results[1]):
            hook.after_run(context, SessionRunValues(values, None, None))
        if context.stop_requested:
            self._stop = True
        return results[0]

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
    from ..graph.saver import Saver, _key

    chosen = [v for v in trainable_variables() if re.match(pattern, _key(v))]
    if not chosen:
        return
    path = checkpoint
    from ..graph.saver import latest_checkpoint

    import os

    if os.path.isdir(path):
        path = latest_checkpoint(path)
    with np.load(path + ".npz") as saved:
        present = [v for v in chosen if _key(v) in saved.files]
    if present:
        Saver(var_list=present).restore(session, path)
