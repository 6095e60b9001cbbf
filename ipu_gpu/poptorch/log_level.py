"""``poptorch.setLogLevel``: the level of PopTorch's logger (``poptorch::python``)."""

from __future__ import annotations

import logging
import os

__all__ = ["logger", "setLogLevel"]

logger = logging.getLogger("poptorch::python")

# PopTorch's level names, their legacy integer codes and the Python logging levels.
_LEVELS = {"TRACE": (0, logging.DEBUG), "TRACE_ALL": (0, logging.DEBUG),
           "DEBUG": (1, logging.DEBUG), "DEBUG_IR": (1, logging.DEBUG),
           "INFO": (2, logging.INFO), "WARN": (3, logging.WARNING),
           "ERR": (4, logging.ERROR), "OFF": (6, logging.CRITICAL)}
_PUBLIC = sorted(name for name in _LEVELS if name not in ("TRACE_ALL", "DEBUG_IR"))


def setLogLevel(level):  # noqa: N802 - PopTorch's name
    """Set PopTorch's log level: ``"TRACE"``, ``"DEBUG"``, ``"INFO"``, ``"WARN"``,
    ``"ERR"``, ``"OFF"`` or their legacy integers 0-4 and 6.

    Raises:
      ValueError: any other level."""
    if isinstance(level, int) and not isinstance(level, bool):
        for name, (code, _) in _LEVELS.items():
            if code == level:
                return setLogLevel(name)
        raise ValueError("Invalid log level integer")
    if level not in _LEVELS:
        raise ValueError(f"Unknown log level: {level}. Valid values are "
                         f"{', '.join(_PUBLIC[:-1])} and {_PUBLIC[-1]}")
    logger.setLevel(_LEVELS[level][1])
    return None


setLogLevel(os.environ.get("POPTORCH_LOG_LEVEL", "WARN"))
