"""The constructor arguments of ``IPUInfeedQueue`` and ``IPUOutfeedQueue``, accepted and
rejected as Graphcore's SDK 3.x (``r2.6/sdk-release-3.4``: ``ipu_infeed_queue.py``,
``ipu_outfeed_queue.py``) does, with its messages:

* ``device_ordinal=None`` is the ordinal of the current ``IPUStrategy``'s device, else 0;
  an ordinal that is not an ``int`` or is negative is a ``ValueError``.
* the infeed's ``prefetch_depth`` of ``None`` or 0 is the default 3; below 0 or above 255
  is a ``ValueError``; a non-integer is TF's ``TypeError`` for an int attribute.
* the infeed takes any other keyword argument and ignores it (SDK 3.x's ``**kwargs``);
  SDK 1.x/2.x's deprecated ``feed_name``, ``replication_factor`` and ``data_to_prefetch``
  also warn with the SDK 2.x deprecation text.
* the outfeed's ``outfeed_mode`` of ``None`` is ``ALL``; its ``buffer_depth`` must be >= 1.
  SDK 3.x's outfeed has no ``**kwargs``: an unknown keyword is Python's ``TypeError``.
  Deviation: SDK 2.x's deprecated ``feed_name``, ``replication_factor`` and
  ``io_batch_size`` are still accepted with their deprecation warning, so programs written
  for SDK 1.x/2.x run.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["DEFAULT_PREFETCH_DEPTH", "buffer_depth", "device_ordinal", "infeed_kwargs",
           "outfeed_kwargs", "outfeed_mode", "prefetch_depth"]

DEFAULT_PREFETCH_DEPTH = 3

_REPLICATION = "No change needed. replication_factor is now set automatically based on the model."
_INFEED_DEPRECATED = {
    "feed_name": "No change needed. feed_name is now automatically generated.",
    "replication_factor": _REPLICATION,
    "data_to_prefetch": "Use prefetch_depth instead.",
}
_OUTFEED_DEPRECATED = {
    "feed_name": "No change needed. feed_name is now automatically generated.",
    "replication_factor": _REPLICATION,
    "io_batch_size": "Accumulate the results manually or use accumulate_outfeed when using "
                     "pipelining.",
}


def _warn(cls: str, key: str, instructions: str) -> None:
    warnings.warn(f"Calling {cls}.__init__ (from ipu_gpu.ipu) with {key} is deprecated and "
                  f"will be removed in a future version.\nInstructions for updating:\n"
                  f"{instructions}", DeprecationWarning, stacklevel=4)


def infeed_kwargs(kwargs: dict) -> None:
    """SDK 3.x ignores the infeed's extra keyword arguments; the deprecated ones warn."""
    for key in kwargs:
        if key in _INFEED_DEPRECATED:
            _warn("IPUInfeedQueue", key, _INFEED_DEPRECATED[key])


def outfeed_kwargs(kwargs: dict) -> None:
    """The outfeed's deprecated keyword arguments warn; any other is a ``TypeError``."""
    for key in kwargs:
        if key not in _OUTFEED_DEPRECATED:
            raise TypeError(f"__init__() got an unexpected keyword argument {key!r}")
        _warn("IPUOutfeedQueue", key, _OUTFEED_DEPRECATED[key])


def device_ordinal(ordinal) -> int:
    """``ordinal``, or the current IPUStrategy's device ordinal (else 0) for ``None``."""
    if ordinal is None:
        from ..distribute import get_strategy
        from .ipu_strategy import IPUStrategyV1

        strategy = get_strategy()
        ordinal = strategy._device_ordinal if isinstance(strategy, IPUStrategyV1) else 0
    if not isinstance(ordinal, int):
        raise ValueError("Device ordinal must be an integer")
    if ordinal < 0:
        raise ValueError("Device ordinal must be >= 0")
    return int(ordinal)


def prefetch_depth(depth) -> int:
    """The infeed's prefetch depth: ``None`` and 0 are the default, 1..255 themselves."""
    depth = depth or DEFAULT_PREFETCH_DEPTH
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"Expected int for argument 'prefetch_depth' not {depth!r}.")
    if depth <= 0:
        raise ValueError(f"prefetch_depth must be greater than zero, but it is {depth}")
    if depth > 255:
        raise ValueError(f"prefetch_depth must be less than 256, but it is {depth}")
    return int(depth)


def outfeed_mode(mode):
    """``mode``, ``ALL`` for ``None``."""
    from .ipu_outfeed_queue import IPUOutfeedMode

    mode = mode or IPUOutfeedMode.ALL
    if not isinstance(mode, IPUOutfeedMode):
        raise ValueError("Expected `outfeed_mode` value to be of "
                         f"`ipu_outfeed_queue.IPUOutfeedMode` type, but is {type(mode)}.")
    return mode


def buffer_depth(depth) -> int:
    """The outfeed's buffer depth (>= 1)."""
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"Expected int for argument 'buffer_depth' not {depth!r}.")
    if depth <= 0:
        raise ValueError("Outfeed buffer depth cannot be less than 1")
    return int(depth)
