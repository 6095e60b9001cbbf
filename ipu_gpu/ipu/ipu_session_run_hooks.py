"""``tensorflow.python.ipu.ipu_session_run_hooks``: ``IPULoggingTensorHook``, the
``LoggingTensorHook`` for tensors computed inside a compiled IPU loop: ``log(tensors)``
enqueues them on an outfeed there, and the hook dequeues and logs them (INFO) every
``every_n_iter`` runs, every ``every_n_secs`` seconds, and/or at the end."""

from __future__ import annotations

from ..estimator.hooks import SessionRunHook, log_tensor_values, logging_timer
from .ipu_outfeed_queue import IPUOutfeedMode, IPUOutfeedQueue

__all__ = ["IPULoggingTensorHook"]


class IPULoggingTensorHook(SessionRunHook):
    """Prints the given tensors every N local steps, every N seconds, or at end; the
    ``logging_mode`` (``LoggingMode.LAST``/``ALL``) says whether the last enqueued value or
    all of them since the previous log are printed.

    Raises:
      ValueError: both ``every_n_iter`` and ``every_n_secs``, or none of them without
        ``at_end``."""

    LoggingMode = IPUOutfeedMode

    def __init__(self, every_n_iter=None, every_n_secs=None, at_end=False, formatter=None,
                 logging_mode=IPUOutfeedMode.LAST, feed_name=None, replication_factor=None):
        if every_n_iter is not None and every_n_secs is not None:
            raise ValueError("Cannot provide both every_n_iter and every_n_secs")
        if every_n_iter is None and every_n_secs is None and not at_end:
            raise ValueError("Either every_n_iter, every_n_secs or at_end should be provided")
        self._timer = logging_timer(every_n_iter, every_n_secs, at_end)
        self._log_at_end = at_end
        self._formatter = formatter
        self._outfeed = IPUOutfeedQueue(outfeed_mode=logging_mode)
        self._logged = False  # the graph-mode outfeed does not flag a traced enqueue
        self._dequeue_op = None
        self._iter_count = 0

    def log(self, tensors):
        """Enqueues ``tensors`` (a dict of name to tensor, a list/tuple of tensors, or a
        tensor) for logging; returns the enqueue operation (make the train op depend on it).

        Raises:
          RuntimeError: ``log`` called a second time on this hook.
          TypeError: a list element that is not a tensor."""
        if self._logged or self._outfeed.enqueued:
            raise RuntimeError(
                "Cannot use this hook object's log function more than once. Either enqueue "
                "all tensors in a single log call using a list or dict, or create another "
                "hook.")
        op = self._outfeed.enqueue(self._convert_to_dict(tensors))
        self._logged = True
        return op

    @staticmethod
    def _convert_to_dict(tensors):
        from ..estimator.model_fn import is_tensor

        if isinstance(tensors, dict):
            return tensors
        if not isinstance(tensors, (list, tuple)):
            tensors = [tensors]
        for t in tensors:
            if not is_tensor(t):
                raise TypeError(f"Expected `tf.Tensor`, got {type(t)}")
        return {t.name: t for t in tensors}

    def begin(self):
        if not (self._logged or self._outfeed.enqueued):
            raise RuntimeError("This logging hook's outfeed was not enqueued. Did you forget "
                               "to call the log function?")
        self._dequeue_op = self._outfeed.dequeue()
        self._iter_count = 0

    def _log_values(self, values):
        log_tensor_values(self._timer, self._iter_count, self._formatter, values, values)

    def after_run(self, run_context, run_values):
        if self._timer.should_trigger_for_step(self._iter_count):
            self._log_values(run_context.session.run(self._dequeue_op))
        self._iter_count += 1

    def end(self, session):
        if self._log_at_end:
            self._log_values(session.run(self._dequeue_op))
        self._dequeue_op = None
        self._timer.reset()
