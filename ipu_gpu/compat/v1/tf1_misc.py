"""Small TF1 names programs reach for: ``assign``/``assign_add``/``assign_sub``,
``set_random_seed``, ``name_scope``, and ``tf.logging`` (onto Python's ``tensorflow``
logger, as TF 1.15's ``tf_logging``)."""

from __future__ import annotations

import contextlib
import logging as _logging
import sys
import types

__all__ = ["assign", "assign_add", "assign_sub", "init_scope", "logging", "name_scope",
           "set_random_seed"]


def assign(ref, value, validate_shape=None, use_locking=None, name=None):
    """``ref.assign(value)``: a graph op on a graph variable, at once on an eager one."""
    return ref.assign(value)


def assign_add(ref, value, use_locking=None, name=None):
    return ref.assign_add(value)


def assign_sub(ref, value, use_locking=None, name=None):
    return ref.assign_sub(value)


def set_random_seed(seed):
    """The graph-level random seed (TF 1.15's name for ``tf.random.set_seed``)."""
    import ipu_gpu

    ipu_gpu.random.set_seed(seed)


@contextlib.contextmanager
def name_scope(name, default_name=None, values=None):
    """A name scope for the default graph's operations (``outer/inner/op``); yields the
    scope's name with a trailing slash."""
    from ... import graph

    with graph.get_default_graph().name_scope(name or default_name) as scope:
        yield scope


@contextlib.contextmanager
def init_scope():
    """TF's ``init_scope``: inside the block no ``control_dependencies`` apply (and no
    gradient tape records); the name scope stays the one in effect."""
    from ... import graph
    from ...core import tape

    g = graph.get_default_graph()
    saved, g._control = g._control, []
    try:
        with contextlib.ExitStack() as paused:
            for t in list(tape.recording_tapes()):
                paused.enter_context(t.stop_recording())
            yield
    finally:
        g._control = saved


_logger = _logging.getLogger("tensorflow")


class _StderrHandler(_logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record comes (not the stream of import
    time)."""

    def __init__(self):
        super().__init__()
        self.setFormatter(_logging.Formatter(_logging.BASIC_FORMAT))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


# TF 1.15's tf_logging: unless the root logger is configured, the "tensorflow" logger gets a
# stderr handler ("INFO:tensorflow:..."), so tf.logging.info prints once verbosity allows it
if not _logging.getLogger().handlers and not any(
        isinstance(h, _StderrHandler) for h in _logger.handlers):
    _logger.addHandler(_StderrHandler())
logging = types.ModuleType("tensorflow.compat.v1.logging", "``tf.logging`` (TF 1.15).")
logging.DEBUG, logging.INFO, logging.WARN = _logging.DEBUG, _logging.INFO, _logging.WARNING
logging.ERROR, logging.FATAL = _logging.ERROR, _logging.FATAL
logging.set_verbosity = _logger.setLevel
logging.get_verbosity = _logger.getEffectiveLevel
logging.debug, logging.info, logging.warning = _logger.debug, _logger.info, _logger.warning
logging.warn, logging.error, logging.fatal = _logger.warning, _logger.error, _logger.critical
logging.log = _logger.log
logging.__all__ = ["DEBUG", "ERROR", "FATAL", "INFO", "WARN", "debug", "error", "fatal",
                   "get_verbosity", "info", "log", "set_verbosity", "warn", "warning"]
