"""``tf.data.Options`` and its option groups, with TF's names, types and defaults.

Options are recorded and merged as TF merges them (``dataset.options()``), and change no
result here: ipu_gpu pipelines are always deterministic and have no graph optimizer.
"""

from __future__ import annotations

import enum


class AutoShardPolicy(enum.IntEnum):
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class ExternalStatePolicy(enum.Enum):
    WARN = 0
    IGNORE = 1
    FAIL = 2


class _OptionsBase:
    """Options of one group: ``_FIELDS`` maps each name to (type, default); assigning an
    unknown name is an AttributeError and a value of the wrong type a TypeError, as TF."""

    _FIELDS: dict = {}
    _ALIASES: dict = {}

    def __init__(self):
        object.__setattr__(self, "_values", {})
        for name, (kind, _default) in self._FIELDS.items():
            if isinstance(kind, type) and issubclass(kind, _OptionsBase):
                self._values[name] = kind()

    def __getattr__(self, name):
        name = type(self)._ALIASES.get(name, name)
        fields = type(self)._FIELDS
        if name not in fields:
            raise AttributeError(f"{type(self).__name__} has no option {name}")
        return self._values.get(name, fields[name][1])

    def __setattr__(self, name, value):
        name = type(self)._ALIASES.get(name, name)
        fields = type(self)._FIELDS
        if name not in fields:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        kind = fields[name][0]
        if value is not None and not isinstance(value, kind):
            raise TypeError(f'Property "{name}" must be of type {kind}, got: {value} (type: '
                            f"{type(value)})")
        self._values[name] = value

    def _merge_into(self, other: _OptionsBase) -> None:
        for name, value in other._values.items():
            if isinstance(value, _OptionsBase):
                self._values[name]._merge_into(value)
            elif value is not None:
                self._values[name] = value

    def merge(self, options):
        """A new options object with ``options``' set values over this one's."""
        result = type(self)()
        result._merge_into(self)
        result._merge_into(options)
        return result

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def __repr__(self) -> str:
        set_values = {n: v for n, v in self._values.items()
                      if v is not None and not isinstance(v, _OptionsBase)}
        return f"{type(self).__name__}({set_values})"


class AutotuneOptions(_OptionsBase):
    _FIELDS = {"autotune_algorithm": (object, None), "cpu_budget": (int, None),
               "enabled": (bool, None), "initial_parallelism": (int, None),
               "min_parallelism": (int, None), "ram_budget": (int, None)}


class DistributeOptions(_OptionsBase):
    _FIELDS = {"auto_shard_policy": (AutoShardPolicy, AutoShardPolicy.AUTO),
               "num_devices": (int, None)}


class OptimizationOptions(_OptionsBase):
    _FIELDS = {name: (bool, None) for name in (
        "apply_default_optimizations", "filter_fusion", "filter_parallelization",
        "inject_prefetch", "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion",
        "map_parallelization", "noop_elimination", "parallel_batch", "seq_interleave_prefetch",
        "shuffle_and_repeat_fusion")}


class ThreadingOptions(_OptionsBase):
    _FIELDS = {"max_intra_op_parallelism": (int, None), "private_threadpool_size": (int, None)}


class ServiceOptions(_OptionsBase):
    _FIELDS = {"pinned": (bool, None)}


class Options(_OptionsBase):
    """``tf.data.Options``: set attributes, then ``dataset.with_options(options)``."""

    _FIELDS = {
        "autotune": (AutotuneOptions, None), "dataset_name": (str, None),
        "deterministic": (bool, None),
        "experimental_distribute": (DistributeOptions, None),
        "experimental_external_state_policy": (ExternalStatePolicy, None),
        "experimental_optimization": (OptimizationOptions, None),
        "experimental_service": (ServiceOptions, None), "experimental_slack": (bool, None),
        "experimental_symbolic_checkpoint": (bool, None),
        "experimental_warm_start": (bool, None), "framework_type": (list, None),
        "threading": (ThreadingOptions, None),
    }
    _ALIASES = {"experimental_deterministic": "deterministic",
                "experimental_threading": "threading"}
