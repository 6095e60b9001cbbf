"""``tf.compat.v1.ConfigProto``, ``GPUOptions``, ``GraphOptions``, ``OptimizerOptions``,
``RunOptions`` and ``RunMetadata``: the protocol-buffer messages TF1 programs hand to a
``Session`` (``config=``) or to ``Session.run`` (``options=``, ``run_metadata=``).

They behave as the protobuf messages do for what programs do with them: keyword
construction, attribute reads with proto3 defaults, nested messages readable and writable in
place (``config.gpu_options.allow_growth = True``), ``device_count`` as a map, ``CopyFrom``,
equality and ``ValueError`` for a field the message lacks. The emulated session runs no
differently for any of them (placement, threading and tracing are the emulator's)."""

from __future__ import annotations

import copy

__all__ = ["ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RunMetadata",
           "RunOptions"]


class _Message:
    """A protobuf-like message: ``_FIELDS`` maps each field to its default (a ``_Message``
    subclass for a nested message, ``dict`` for a map, ``list`` for a repeated field)."""

    _FIELDS: dict = {}

    def __init__(self, **fields):
        for name, default in self._FIELDS.items():
            object.__setattr__(self, name, _fresh(default))
        for name, value in fields.items():
            self._check(name)
            default = self._FIELDS[name]
            if isinstance(default, type) and issubclass(default, _Message):
                if isinstance(value, dict):
                    value = default(**value)
                elif not isinstance(value, default):
                    raise TypeError(f"Parameter to MergeFrom() must be instance of same class: "
                                    f"expected {default.__name__} got {type(value).__name__}.")
                value = copy.deepcopy(value)
            elif default in (dict, list):
                value = default(value)
            object.__setattr__(self, name, value)

    def _check(self, name):
        if name not in self._FIELDS:
            raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')

    def __setattr__(self, name, value):
        self._check(name)
        default = self._FIELDS[name]
        if isinstance(default, type) and (issubclass(default, _Message) or default in (dict,
                                                                                       list)):
            raise AttributeError(f"Assignment not allowed to field \"{name}\" in protocol "
                                 "message object.")
        object.__setattr__(self, name, value)

    def HasField(self, name) -> bool:  # noqa: N802 - protobuf's names
        self._check(name)
        return getattr(self, name) != _fresh(self._FIELDS[name])

    def CopyFrom(self, other) -> None:  # noqa: N802
        for name in self._FIELDS:
            object.__setattr__(self, name, copy.deepcopy(getattr(other, name)))

    def MergeFrom(self, other) -> None:  # noqa: N802
        for name, default in self._FIELDS.items():
            value = getattr(other, name)
            if value != _fresh(default):
                object.__setattr__(self, name, copy.deepcopy(value))

    def Clear(self) -> None:  # noqa: N802
        for name, default in self._FIELDS.items():
            object.__setattr__(self, name, _fresh(default))

    def __eq__(self, other):
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    def __repr__(self) -> str:
        set_fields = [f"{n}: {getattr(self, n)!r}" for n, d in self._FIELDS.items()
                      if getattr(self, n) != _fresh(d)]
        return f"{type(self).__name__}({', '.join(set_fields)})"


def _fresh(default):
    if isinstance(default, type):
        return default()
    return default


class GPUOptions(_Message):
    """``tf.compat.v1.GPUOptions`` (memory fraction, growth, visible devices, ...)."""

    _FIELDS = {"per_process_gpu_memory_fraction": 0.0, "allow_growth": False,
               "allocator_type": "", "deferred_deletion_bytes": 0,
               "visible_device_list": "", "polling_active_delay_usecs": 0,
               "polling_inactive_delay_msecs": 0, "force_gpu_compatible": False}


class OptimizerOptions(_Message):
    """``tf.compat.v1.OptimizerOptions`` (graph optimisation levels, JIT)."""

    L1, L0 = 0, -1  # Level
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2  # GlobalJitLevel
    _FIELDS = {"do_common_subexpression_elimination": False, "do_constant_folding": False,
               "max_folded_constant_in_bytes": 0, "do_function_inlining": False,
               "opt_level": 0, "global_jit_level": 0}


class GraphOptions(_Message):
    """``tf.compat.v1.GraphOptions``."""

    _FIELDS = {"optimizer_options": OptimizerOptions, "enable_recv_scheduling": False,
               "build_cost_model": 0, "build_cost_model_after": 0, "infer_shapes": False,
               "place_pruned_graph": False, "enable_bfloat16_sendrecv": False,
               "timeline_step": 0}


class ConfigProto(_Message):
    """``tf.compat.v1.ConfigProto``: session configuration (accepted by ``Session``)."""

    _FIELDS = {"device_count": dict, "intra_op_parallelism_threads": 0,
               "inter_op_parallelism_threads": 0, "use_per_session_threads": False,
               "placement_period": 0, "device_filters": list, "gpu_options": GPUOptions,
               "allow_soft_placement": False, "log_device_placement": False,
               "graph_options": GraphOptions, "operation_timeout_in_ms": 0,
               "isolate_session_state": False, "share_cluster_devices_in_session": False}


class RunOptions(_Message):
    """``tf.compat.v1.RunOptions`` (``trace_level``: ``NO_TRACE`` ... ``FULL_TRACE``)."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3
    _FIELDS = {"trace_level": 0, "timeout_in_ms": 0, "inter_op_thread_pool": 0,
               "output_partition_graphs": False, "report_tensor_allocations_upon_oom": False}


class RunMetadata(_Message):
    """``tf.compat.v1.RunMetadata``: ``Session.run`` leaves it empty (no step stats)."""

    _FIELDS = {"partition_graphs": list, "function_graphs": list}
