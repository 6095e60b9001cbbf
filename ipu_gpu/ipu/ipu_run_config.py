"""``tensorflow.python.ipu.ipu_run_config``: ``IPURunConfig`` (the IPU part of an
``IPUEstimator``'s configuration) and ``RunConfig`` (``tf.estimator.RunConfig`` holding it).
The device count checks and messages are Graphcore's."""

from __future__ import annotations

import collections

from ..estimator.run_config import RunConfig as _BaseRunConfig

__all__ = ["IPURunConfig", "RunConfig"]


def _configured_devices(ipu_options, ordinal, num_devices) -> int:
    """The IPU count of device ``ordinal`` in ``ipu_options`` (``select_ipus`` configures
    devices by index: the SDK defers that check to when the device exists, so it passes)."""
    auto = ipu_options.auto_select_ipus
    auto = [auto] if isinstance(auto, int) else list(auto)
    selected = ipu_options.select_ipus
    selected = [selected] if isinstance(selected, int) else list(selected)
    count = len(auto) if auto else max(len(selected), 1)
    if ordinal >= count:
        raise ValueError(f"Only {count} device(s) available to choose from. You tried to "
                         f"pick a device at ordinal {ordinal}")
    return auto[ordinal] if auto else num_devices


class IPURunConfig(collections.namedtuple("IPURunConfig", [
        "iterations_per_loop", "ipu_options", "compile_summary", "num_replicas", "num_shards",
        "ordinal", "prefetch_depth"])):
    """IPU related configuration required by ``IPUEstimator``: ``iterations_per_loop``
    mini-batches per ``Session.run`` (the global step advances by that much per run), the
    ``IPUConfig`` the estimator configures the system with, ``num_replicas`` (data
    parallelism), ``num_shards`` (model parallelism), the device ``ordinal`` and the infeed's
    ``prefetch_depth``.

    Raises:
      ValueError: more than one device without ``ipu_options``; ``ipu_options`` configuring
        a different number of IPUs than ``num_replicas * num_shards``; an ``ordinal`` past
        the configured devices.
      TypeError: ``ipu_options`` that is not an ``IPUConfig``."""

    def __new__(cls, iterations_per_loop=1, ipu_options=None, compile_summary=False,
                num_replicas=1, num_shards=1, ordinal=0, prefetch_depth=None):
        from .config import IPUConfig

        num_devices = num_replicas * num_shards
        if num_devices > 1 and ipu_options is None:
            raise ValueError("IPU configuration requires more than one device, but "
                             "`ipu_options` is None")
        configured = 1
        if ipu_options is not None:
            if not isinstance(ipu_options, IPUConfig):
                raise TypeError("ipu_options must be an IPUConfig instance.")
            configured = _configured_devices(ipu_options, ordinal, num_devices)
        if num_devices != configured:
            raise ValueError(f"`IPURunConfig` configured with {num_devices} devices"
                             f" ({num_replicas} replicas times {num_shards} shards), but"
                             f" `ipu_options` configured with {configured} devices")
        return super().__new__(cls, iterations_per_loop, ipu_options, compile_summary,
                               num_replicas, num_shards, ordinal, prefetch_depth)


class RunConfig(_BaseRunConfig):
    """``tf.estimator.RunConfig`` with IPU support: ``ipu_run_config`` (default
    ``IPURunConfig()``) and ``master``; every other argument is ``RunConfig``'s."""

    def __init__(self, ipu_run_config=None, master=None, **kwargs):
        super().__init__(**kwargs)
        self._ipu_run_config = ipu_run_config or IPURunConfig()
        if master is not None:
            self._master = master

    ipu_run_config = property(lambda self: self._ipu_run_config)
