"""``tensorflow.python.ipu.utils``: general utilities, and the IPU configuration functions of
SDK 1.x/2.0 that the ``IPUConfig`` class replaced.

The deprecated configuration functions (``create_ipu_config``, ``auto_select_ipus``,
``select_ipus``, ``set_*_options``, ...) warn with Graphcore's deprecation text (as a
``DeprecationWarning``; the SDK writes a log line) and build an ``IPUConfig`` instead of an
``IpuOptions`` protobuf: ``create_ipu_config()`` returns one, the ``set_*`` functions set the
IPUConfig attributes the SDK documents as their replacements and return it, and
``configure_ipu_system`` takes it, so an old script configures the same emulated system as
its IPUConfig translation (their ``to_dict()`` are equal). Arguments with no IPUConfig
counterpart are checked as the SDK checks them and otherwise have no effect: the profiling
and report options (``profiling``, ``enable_ipu_events``, ``use_poplar_*_report``,
``profile_execution``, ``report_*``, ``max_report_size``, ``set_report_options``; the
emulator records its trace events always), ``retain_control_dependencies`` (operations run
in program order), and verified transfers (``set_transfer_options``,
``set_verification_options``: the emulator's transfers are memory copies).

Other differences, decided here:

* ``move_variable_initialization_to_cpu`` does nothing: there is no graph, and variables are
  initialised where they are created.
* ``export_dataset_to_file``/``export_inputs_to_file`` write the files the documentation
  describes: raw little-endian C-order bytes of the tensors, one after another, with no
  header (the SDK writes its own container format, which is not documented). Only float32,
  float16 and int32 tensors can be exported, as in the SDK.
* The event-trace helpers take the emulator's ``IpuTraceEvent`` objects
  (``ipu_gpu.emulation.events``) or their ``to_bytes()`` serialisation in place of protobuf
  strings.
* ``use_synthetic_data_for`` reads ``TF_POPLAR_FLAGS`` on every call.
"""

from __future__ import annotations

import functools
import os
import time
import warnings
from enum import IntEnum

import numpy as np

from ..core import nest as _nest
from ..emulation import poplar_flags as _poplar_flags
from ..emulation import system as _system
from .config import (DeviceConnectionType, ExecutionProfileType, IPUConfig, KeyId,
                     MergeRemoteBuffersBehaviour, SchedulingAlgorithm, SelectionOrder,
                     StochasticRoundingBehaviour, VerificationOptions, configure_ipu_system,
                     get_ipu_config, reset_ipu_configuration)
from .config import running_on_ipu_model as _running_on_ipu_model
from ..emulation.events import IpuTraceEvent

__all__ = [
    "DeviceConnectionType", "ExecutionProfileType", "IPUConfig", "IpuTraceEvent", "KeyId",
    "MergeRemoteBuffersBehaviour", "SchedulingAlgorithm", "SelectionOrder",
    "SyntheticDataCategory", "VerificationOptions", "auto_select_ipus", "configure_ipu_system",
    "create_ipu_config", "export_dataset_to_file", "export_inputs_to_file",
    "extract_all_events", "extract_all_strings_from_event_trace",
    "extract_all_types_from_event_trace", "extract_compile_reports", "extract_execute_reports",
    "extract_poplar_serialized_graphs", "get_ipu_config", "get_num_of_ipus_in_device",
    "move_variable_initialization_to_cpu", "reset_ipu_configuration", "reset_ipu_seed",
    "running_on_ipu_model", "select_ipus", "set_compilation_options", "set_convolution_options",
    "set_experimental_multi_replica_distribution_options",
    "set_floating_point_behaviour_options", "set_gcl_options", "set_io_tile_options",
    "set_ipu_connection_type", "set_ipu_model_options", "set_matmul_options",
    "set_norm_options", "set_optimization_options", "set_pooling_options",
    "set_recomputation_options", "set_report_options", "set_serialization_options",
    "set_transfer_options", "set_verification_options", "use_synthetic_data_for",
]

_CONFIG_INSTRUCTIONS = (
    "Configuring IPU session options for TensorFlow has changed and this function will be "
    "removed in a future release. Use an IPUConfig instance instead. For more information on "
    "how to create an equivalent config in the new IPUConfig API, refer to the API changes "
    "for SDK 2.1 in the TensorFlow documentation.")
_REPORT_INSTRUCTIONS = (
    "Poplar reports are no longer included in trace events. You can use the PopVision Graph "
    "Analyser for manual inspection of reports.")


def _deprecated(instructions):
    """TF's ``deprecation.deprecated(None, instructions)`` as a DeprecationWarning."""

    def wrap(fn):
        message = (f"{fn.__name__} (from {__name__}) is deprecated and will be removed in a "
                   f"future version.\nInstructions for updating:\n{instructions}")

        @functools.wraps(fn)
        def deprecated_fn(*args, **kwargs):
            warnings.warn(message, DeprecationWarning, stacklevel=2)
            return fn(*args, **kwargs)

        deprecated_fn.__doc__ = (f"{(fn.__doc__ or '').splitlines()[0]} (deprecated)\n\n"
                                 f"Warning: THIS FUNCTION IS DEPRECATED. It will be removed in "
                                 f"a future version. Instructions for updating: "
                                 f"{instructions}\n\n" + "\n".join(
                                     (fn.__doc__ or "").splitlines()[1:]))
        return deprecated_fn

    return wrap


def _opts(opts, fn: str) -> IPUConfig:
    if not isinstance(opts, IPUConfig):
        raise TypeError(f"{fn}: opts must be an IPUConfig (from create_ipu_config()), got "
                        f"{type(opts).__name__}")
    return opts


def _merge_options(current: dict, new, arg: str, error=Exception) -> dict:
    if not new:
        return current
    if not isinstance(new, dict):
        raise error(f"`{arg}` must be a dictionary")
    merged = dict(current)
    merged.update(new)
    return merged


# --------------------------------------------------------------------------------------------
# Device queries, seeds, flags.


def get_num_of_ipus_in_device(ipu_device, device="cpu"):
    """Get the number of physical IPUs

    Args:
      ipu_device: The IPU device for which to get the number of devices for.
      device: The CPU device which is local to the IPU hardware.

    Returns:
      A number of physical IPUs configured for a particular TF device.
    """
    del device
    return _system.current_system().device(ipu_device).num_ipus


def running_on_ipu_model():
    """Check if XLA is configured to run on the ipu model.

    Returns:
      True if XLA is configured to run on the ipu model. False if XLA is configured to run on
      real hardware.
    """
    return _running_on_ipu_model()


def reset_ipu_seed(seed, device="/device:IPU:0", cpu_device="cpu",
                   experimental_identical_replicas=False):
    """Reset the seed used to generate stateful random numbers and perform stochastic
    rounding.

    Args:
      seed: The new random number generator seed.
      device: The device to which the seed will be applied.
      cpu_device: The CPU device which is on the same hardware to the IPU device.
      experimental_identical_replicas: Whether to seed all the local replicas identically.
        Note that to generate identical sequences of random numbers on all replicas, the
        Poplar engine option ``"target.deterministicWorkers"`` must also be set to
        ``"portable"``. WARNING: This flag is experimental and subject to change.

    Returns:
      None

    The emulator stores the seed on the device (``Device.seed``); its random operations and
    stochastic rounding start from it. Before any system is configured (Graphcore's
    estimator tutorial calls it first) the seed goes to the device of the next
    configuration.
    """
    del cpu_device
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"reset_ipu_seed: seed must be an int, got {seed!r}")
    if not _system.is_configured():
        index = _system.parse_device(device) if isinstance(device, str) else device
        _system.defer_seed(index, int(seed), bool(experimental_identical_replicas))
        return
    _system.current_system().device(device).set_seed(
        int(seed), bool(experimental_identical_replicas))


def move_variable_initialization_to_cpu(graph=None):
    """For all variables in the VARIABLES collection, move any initialization ops onto the
    CPU.

    Args:
      graph: Operations are moved around on this graph. The default graph will be used if
        not specified.

    Returns:
      None

    In the emulator this changes nothing: a graph variable's initializer already runs on the
    host (a ``Session.run`` of it), and an eager variable is initialised where it is
    created.
    """
    del graph


class SyntheticDataCategory(IntEnum):
    """The kinds of data ``--synthetic_data_categories`` can keep off the host link."""

    Unknown = 0
    Seed = 1
    Infeed = 2
    Outfeed = 3
    HostEmbedding = 4
    Parameters = 5


def use_synthetic_data_for(synthetic_data_category):
    """Get whether synthetic data is being used for the given category.

    Args:
      synthetic_data_category: A SyntheticDataCategory enum value.

    Returns:
      A bool indicating the result: True when ``TF_POPLAR_FLAGS`` has ``--use_synthetic_data``
      or names the category in ``--synthetic_data_categories``.
    """
    if isinstance(synthetic_data_category, bool) or not isinstance(
            synthetic_data_category, (int, np.integer)):
        raise TypeError(f"use_synthetic_data_for: synthetic_data_category must be a "
                        f"SyntheticDataCategory, got {synthetic_data_category!r}")
    try:
        category = SyntheticDataCategory(int(synthetic_data_category))
    except ValueError:
        raise ValueError(f"use_synthetic_data_for: synthetic_data_category must be a "
                         f"SyntheticDataCategory, got {synthetic_data_category!r}") from None
    if category is SyntheticDataCategory.Unknown:
        raise ValueError("use_synthetic_data_for: synthetic_data_category must not be "
                         "SyntheticDataCategory.Unknown")
    return _poplar_flags.parse().use_synthetic_data_for(category.name.lower())


# --------------------------------------------------------------------------------------------
# Exporting data.

_EXPORT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int32))


def _host_array(value, fn: str, what: str) -> np.ndarray:
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    elif not isinstance(value, (np.ndarray, np.generic)):
        from ..core.convert import convert_to_tensor

        value = convert_to_tensor(value).numpy()
    array = np.asarray(value)
    if type(array).__module__.startswith("cupy"):
        array = array.get()
    if array.dtype not in _EXPORT_DTYPES:
        raise TypeError(f"{fn}: {what} must be float32, float16 or int32 (the types the SDK "
                        f"exports), got {array.dtype}")
    return array


def _write_raw(path: str, arrays) -> None:
    with open(path, "wb") as f:
        for a in arrays:
            f.write(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<"),
                                                   copy=False).tobytes())


def _elements(dataset_or_infeed):
    source = getattr(dataset_or_infeed, "_dataset", dataset_or_infeed)  # an infeed queue
    if hasattr(source, "as_numpy_iterator"):  # a tf.data.Dataset
        return iter(source.as_numpy_iterator())
    try:
        return iter(source)
    except TypeError:
        raise TypeError(f"export_dataset_to_file: dataset_or_infeed must be a dataset, an "
                        f"IPUInfeedQueue or an iterable of elements, got "
                        f"{type(dataset_or_infeed).__name__}") from None


def export_dataset_to_file(dataset_or_infeed, output_filename, num_elements, feed_name="",
                           apply_options=True):
    """Export as binary ``num_elements`` from the given infeed to the specified
    ``output_filename``.

    If the infeed elements are tuples then one file per tuple element will be created. For
    example, if ``dataset`` looks like ``[{"a": A_0, "b": B_0}, {"a": A_1, "b": B_1}, ...]``
    then ``export_dataset_to_file(dataset, "my_dataset.bin", 100)`` will generate
    ``my_dataset.0.bin`` (tensors A_0, A_1, ..., A_99) and ``my_dataset.1.bin`` (B_0, ...,
    B_99).

    Args:
      dataset_or_infeed: An unary dataset with the same input and output structure or an
        ``IPUInfeedQueue`` (here also any iterable of elements).
      output_filename: Where to export the tensors to.
      num_elements: Number of elements to export from the dataset.
      feed_name: Specify the feed name.
      apply_options: Whether to apply optimization options which can improve the dataset
        performance.

    Each file holds the raw little-endian bytes of its tensors, in element order, with no
    header; elements with a single tensor are written to ``output_filename`` itself. The
    elements are read before any file is written, so a dataset that ends early leaves no
    files. ``feed_name`` and ``apply_options`` are checked and otherwise unused (they name
    the feed and tune the dataset inside the SDK's container format).
    """
    fn = "export_dataset_to_file"
    if not isinstance(output_filename, (str, os.PathLike)):
        raise TypeError(f"{fn}: output_filename must be a path, got {output_filename!r}")
    if isinstance(num_elements, bool) or not isinstance(num_elements, (int, np.integer)):
        raise TypeError(f"{fn}: num_elements must be an int, got {num_elements!r}")
    if num_elements < 1:
        raise ValueError("Expected `num_elements` to be at least 1.")
    if not isinstance(feed_name, str):
        raise TypeError(f"{fn}: feed_name must be a str, got {feed_name!r}")
    if not isinstance(apply_options, bool):
        raise TypeError(f"{fn}: apply_options must be a bool, got {apply_options!r}")
    it = _elements(dataset_or_infeed)
    columns, shapes = None, None
    for n in range(int(num_elements)):
        try:
            element = next(it)
        except StopIteration:
            raise ValueError(f"{fn}: the dataset iterator has reached the end of the dataset "
                             f"after {n} of {num_elements} elements") from None
        leaves = [_host_array(x, fn, "every tensor of an element") for x in
                  _nest.flatten(element)]
        if columns is None:
            columns = [[] for _ in leaves]
            shapes = [(a.shape, a.dtype) for a in leaves]
        if [(a.shape, a.dtype) for a in leaves] != shapes:
            raise ValueError(f"{fn}: element {n} has tensors of shapes/dtypes "
                             f"{[(a.shape, str(a.dtype)) for a in leaves]}, element 0 "
                             f"{[(s, str(d)) for s, d in shapes]}; all elements must match")
        for col, a in zip(columns, leaves):
            col.append(a)
    path = os.fspath(output_filename)
    if len(columns) == 1:
        _write_raw(path, columns[0])
        return
    stem, ext = os.path.splitext(path)
    for i, col in enumerate(columns):
        _write_raw(f"{stem}.{i}{ext}", col)


def export_inputs_to_file(inputs, output_filename, feed_dict):
    """Export as binary the list of ``inputs`` provided to the specified ``output_filename``.

    Args:
      inputs: List of graph inputs to export.
      output_filename: Where to export the tensors to.
      feed_dict: Feed dictionary containing the inputs' values.

    In the emulator an input is any key of ``feed_dict`` (a placeholder-like object or a
    name); the file holds the raw little-endian bytes of each input's value, in the order of
    ``inputs``, with no header.
    """
    fn = "export_inputs_to_file"
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"{fn}: inputs must be a list, got {type(inputs).__name__}")
    if not isinstance(feed_dict, dict):
        raise TypeError(f"{fn}: feed_dict must be a dict, got {type(feed_dict).__name__}")
    if not isinstance(output_filename, (str, os.PathLike)):
        raise TypeError(f"{fn}: output_filename must be a path, got {output_filename!r}")
    arrays = []
    for i, key in enumerate(inputs):
        try:
            value = feed_dict[key]
        except (KeyError, TypeError):
            name = getattr(key, "name", key)
            raise ValueError(f"{fn}: inputs[{i}] ({name!r}) has no value in feed_dict") \
                from None
        arrays.append(_host_array(value, fn, f"inputs[{i}]"))
    _write_raw(os.fspath(output_filename), arrays)


# --------------------------------------------------------------------------------------------
# Event traces.


def _parse_events(events) -> list:
    if isinstance(events, (bytes, str, IpuTraceEvent)):
        events = [events]
    if isinstance(events, np.ndarray):
        events = events.tolist()
    try:
        items = list(events)
    except TypeError:
        raise TypeError(f"events must be a list of IPU trace events, got "
                        f"{type(events).__name__}") from None
    return [IpuTraceEvent.from_bytes(e) for e in items]


def extract_all_strings_from_event_trace(events):
    """Extract a concatenation of all data strings from an IPU event trace.

    Args:
      events: An array of IPU events as returned from the ``ipu_compile_summary`` operation.

    Returns:
      A string containing the concatenation of all of the data fields of the events.
    """
    result = ""
    for evt in _parse_events(events):
        stamp = time.strftime("%F %T %z", time.localtime(evt.timestamp))
        result += "-" * 70 + "\n=> @ " + stamp + ": "
        t = evt.type
        if t == IpuTraceEvent.COMPILE_BEGIN:
            text = "Compile begin: " + evt.compile_begin.module_name.decode() + "\n"
        elif t == IpuTraceEvent.COMPILE_END:
            text = ("Compile end: " + evt.compile_end.module_name.decode() + "\n"
                    + "Duration: " + str(evt.compile_end.duration))
        elif t == IpuTraceEvent.HOST_TO_DEVICE_TRANSFER:
            text = "Host->Device\n" + evt.data_transfer.data_transfer.decode() + "\n"
        elif t == IpuTraceEvent.DEVICE_TO_HOST_TRANSFER:
            text = "Device->Host\n" + evt.data_transfer.data_transfer.decode() + "\n"
        elif t == IpuTraceEvent.LOAD_ENGINE:
            text = "Load engine: " + evt.load_engine.module_name.decode() + "\n"
        else:
            text = "Execute: " + evt.execute.module_name.decode()
        result += text + "\n"
    return result


def extract_all_types_from_event_trace(events):
    """Return a list of the types of each event in an event trace tensor

    Args:
      events: A tensor containing a list of IPU events as protobuf strings

    Returns:
      A list containing the type of each event
    """
    return [evt.type for evt in _parse_events(events)]


def extract_all_events(events):
    """Extract a list containing each event as an event object

    Args:
      events: A tensor containing a list of IPU events as protobuf strings

    Returns:
      A list containing IpuTraceEvent objects
    """
    return _parse_events(events)


@_deprecated(_REPORT_INSTRUCTIONS)
def extract_compile_reports(events):
    """Get a list of all compiler reports in the event list.

    Args:
      events: A list of trace event serialized protobufs.

    Returns:
      A list of tuples containing the module name and report (always empty, as in the SDK).
    """
    _parse_events(events)
    return []


@_deprecated(_REPORT_INSTRUCTIONS)
def extract_poplar_serialized_graphs(events):
    """Get a list of all Poplar serialized graphs in the event list.

    Args:
      events: A list of trace event serialized protobufs.

    Returns:
      A list of tuples containing the module name and report (always empty, as in the SDK).
    """
    _parse_events(events)
    return []


@_deprecated(_REPORT_INSTRUCTIONS)
def extract_execute_reports(events):
    """Get a list of all compiler reports in the event list.

    Args:
      events: A list of trace event serialized protobufs.

    Returns:
      A list of tuples containing the module name and report (always empty, as in the SDK).
    """
    _parse_events(events)
    return []


# --------------------------------------------------------------------------------------------
# The deprecated configuration API, mapped onto IPUConfig.

_SCHEDULER_NAMES = {
    "": SchedulingAlgorithm.CHOOSE_BEST,
    "Clustering": SchedulingAlgorithm.CLUSTERING,
    "PostOrder": SchedulingAlgorithm.POST_ORDER,
    "LookAhead": SchedulingAlgorithm.LOOK_AHEAD,
    "ShortestPath": SchedulingAlgorithm.SHORTEST_PATH,
}


@_deprecated(_CONFIG_INSTRUCTIONS)
def create_ipu_config(profiling=False, enable_ipu_events=False, use_poplar_text_report=False,
                      use_poplar_cbor_report=False, profile_execution=None,
                      enable_poplar_serialized_graph=False, report_every_nth_execution=0,
                      max_report_size=0x10000000, report_directory="",
                      scheduler_selection=SchedulingAlgorithm.CHOOSE_BEST,
                      always_rearrange_copies_on_the_host=False, merge_infeed_io_copies=False,
                      disable_graph_outlining=False, retain_control_dependencies=False,
                      max_cross_replica_sum_buffer_size=0, max_inter_ipu_copies_buffer_size=0,
                      max_scheduler_lookahead_depth=5, max_scheduler_search_space_size=64,
                      prefetch_data_streams=True, selection_order=SelectionOrder.AUTO,
                      enable_experimental_remote_buffer_embedding=False):
    """Create an empty IPU session configuration structure.

    Returns an ``IPUConfig`` (the SDK: an IpuOptions protobuf), suitable for passing to
    ``configure_ipu_system``. The profiling/report arguments and
    ``retain_control_dependencies`` are checked as the SDK checks them and otherwise ignored
    (see the module docstring); the others set ``scheduling.algorithm``,
    ``experimental.always_rearrange_copies_on_the_host``,
    ``optimizations.merge_infeed_io_copies``, ``optimizations.enable_graph_outlining`` (not
    ``disable_graph_outlining``), ``optimizations.maximum_cross_replica_sum_buffer_size``,
    ``optimizations.maximum_inter_ipu_copies_buffer_size``,
    ``scheduling.maximum_scheduler_lookahead_depth``,
    ``scheduling.maximum_scheduler_search_space_size``,
    ``optimizations.prefetch_data_streams``, ``selection_order`` and
    ``experimental.enable_remote_buffer_embedding``.
    """
    if profiling and enable_ipu_events:
        raise Exception("`profiling` and `enable_ipu_events` are mutually exclusive")
    profile_execution = profile_execution if profile_execution else \
        ExecutionProfileType.NO_PROFILE
    if isinstance(profile_execution, (np.bool_, bool)):
        profile_execution = (ExecutionProfileType.DEVICE_PROFILE if profile_execution
                             else ExecutionProfileType.NO_PROFILE)
    if profile_execution != ExecutionProfileType.NO_PROFILE and not profiling:
        raise Exception("`profiling` is required when `profile_execution` is set")
    if not isinstance(profile_execution, ExecutionProfileType):
        raise Exception("`profile_execution` must be True, False, or an "
                        "ExecutionProfileType instance")
    if isinstance(scheduler_selection, str):
        if scheduler_selection not in _SCHEDULER_NAMES:
            raise TypeError(f"Could not convert '{scheduler_selection}' to a valid "
                            "`SchedulingAlgorithm`.")
        scheduler_selection = _SCHEDULER_NAMES[scheduler_selection]
    del (use_poplar_text_report, use_poplar_cbor_report, enable_poplar_serialized_graph,
         report_every_nth_execution, max_report_size, report_directory,
         retain_control_dependencies)
    cfg = IPUConfig()
    cfg.scheduling.algorithm = scheduler_selection
    cfg.experimental.always_rearrange_copies_on_the_host = always_rearrange_copies_on_the_host
    cfg.optimizations.merge_infeed_io_copies = merge_infeed_io_copies
    cfg.optimizations.enable_graph_outlining = not disable_graph_outlining
    cfg.optimizations.maximum_cross_replica_sum_buffer_size = max_cross_replica_sum_buffer_size
    cfg.optimizations.maximum_inter_ipu_copies_buffer_size = max_inter_ipu_copies_buffer_size
    cfg.scheduling.maximum_scheduler_lookahead_depth = max_scheduler_lookahead_depth
    cfg.scheduling.maximum_scheduler_search_space_size = max_scheduler_search_space_size
    cfg.optimizations.prefetch_data_streams = prefetch_data_streams
    cfg.selection_order = selection_order
    cfg.experimental.enable_remote_buffer_embedding = \
        enable_experimental_remote_buffer_embedding
    return cfg


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_serialization_options(opts, output_folder=""):
    """Enable / disable the serialization to disk of the compiled executables.

    Sets ``serialization_output_folder``. Returns the IPUConfig.
    """
    _opts(opts, "set_serialization_options").serialization_output_folder = output_folder
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_optimization_options(opts, combine_embedding_lookups=False, combine_matmuls=False,
                             max_cross_replica_sum_buffer_size=0,
                             max_reduce_scatter_buffer_size=0,
                             max_inter_ipu_copies_buffer_size=0, max_send_recv_cluster_size=0,
                             minimum_remote_tensor_size=128,
                             merge_remote_buffers=MergeRemoteBuffersBehaviour.NO_MERGING,
                             gather_simplifier=True, triangular_solve_expander_block_size=0,
                             cholesky_block_size=0, enable_fast_math=False):
    """Set the IPU options related to performance / optimizations.

    Sets the ``optimizations.*`` options of the same meaning (``gather_simplifier`` ->
    ``enable_gather_simplifier``, ``max_*`` -> ``maximum_*``, ``enable_fast_math`` ->
    ``math.fast``); a bool ``merge_remote_buffers`` means MERGE / NO_MERGING and None
    IF_BENEFICIAL, as the SDK's three-state value. Returns the IPUConfig.
    """
    o = _opts(opts, "set_optimization_options").optimizations
    if not isinstance(merge_remote_buffers, MergeRemoteBuffersBehaviour):
        merge_remote_buffers = (MergeRemoteBuffersBehaviour.IF_BENEFICIAL
                                if merge_remote_buffers is None else
                                MergeRemoteBuffersBehaviour.MERGE if merge_remote_buffers
                                else MergeRemoteBuffersBehaviour.NO_MERGING)
    o.combine_embedding_lookups = combine_embedding_lookups
    o.combine_matmuls = combine_matmuls
    o.maximum_cross_replica_sum_buffer_size = max_cross_replica_sum_buffer_size
    o.maximum_reduce_scatter_buffer_size = max_reduce_scatter_buffer_size
    o.maximum_inter_ipu_copies_buffer_size = max_inter_ipu_copies_buffer_size
    o.maximum_send_recv_cluster_size = max_send_recv_cluster_size
    o.minimum_remote_tensor_size = minimum_remote_tensor_size
    o.merge_remote_buffers = merge_remote_buffers
    o.enable_gather_simplifier = gather_simplifier
    o.triangular_solve_expander_block_size = triangular_solve_expander_block_size
    o.cholesky_block_size = cholesky_block_size
    o.math.fast = enable_fast_math
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_norm_options(opts, use_stable_statistics=False,
                     experimental_distributed_batch_norm_replica_group_size=1):
    """Set the IPU options related to normalisation operations.

    Sets ``norms.use_stable_statistics`` and
    ``norms.experimental.distributed_batch_norm_replica_group_size``. Returns the IPUConfig.
    """
    _opts(opts, "set_norm_options")
    if experimental_distributed_batch_norm_replica_group_size < 1:
        raise ValueError("experimental_distributed_batch_norm_replica_group_size needs to be "
                         "at least 1.")
    opts.norms.use_stable_statistics = use_stable_statistics
    opts.norms.experimental.distributed_batch_norm_replica_group_size = \
        experimental_distributed_batch_norm_replica_group_size
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_transfer_options(opts, use_verified_transfers=False):
    """Set the IPU options related to Poplar data transfers.

    Verified transfers do not exist in the emulator: the argument is checked and ignored.
    Returns the IPUConfig.
    """
    _opts(opts, "set_transfer_options")
    if not isinstance(use_verified_transfers, (bool, np.bool_)):
        raise TypeError(f"set_transfer_options: use_verified_transfers must be a bool, got "
                        f"{use_verified_transfers!r}")
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_verification_options(opts, verification_options):
    """Configure verified transfers.

    Verified transfers do not exist in the emulator: the argument is checked and ignored.
    Returns the IPUConfig.
    """
    _opts(opts, "set_verification_options")
    if not isinstance(verification_options, VerificationOptions):
        raise Exception("`verification_options` must be of type VerificationOptions")
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_compilation_options(opts, compilation_options=None):
    """Set the IPU compilation options for the session.

    Adds the options to ``compilation_poplar_options``. Returns the IPUConfig.
    """
    _opts(opts, "set_compilation_options")
    opts.compilation_poplar_options = _merge_options(
        opts.compilation_poplar_options, compilation_options, "compilation_options")
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_convolution_options(opts, convolution_options=None):
    """Set the IPU convolution options for the session.

    Adds the options to ``convolutions.poplar_options``. Returns the IPUConfig.
    """
    _opts(opts, "set_convolution_options")
    opts.convolutions.poplar_options = _merge_options(
        opts.convolutions.poplar_options, convolution_options, "convolution_options")
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_matmul_options(opts, matmul_options=None, clear_pass_type=False):
    """Set the IPU matrix multiplication options for the session.

    Adds the options to ``matmuls.poplar_options`` and sets ``matmuls.clear_pass_type``.
    Returns the IPUConfig.
    """
    _opts(opts, "set_matmul_options")
    opts.matmuls.poplar_options = _merge_options(opts.matmuls.poplar_options, matmul_options,
                                                 "matmul_options")
    opts.matmuls.clear_pass_type = clear_pass_type
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_pooling_options(opts, pooling_options=None):
    """Set the IPU pooling compilation options for the session.

    Adds the options to ``pooling.poplar_options``. Returns the IPUConfig.
    """
    _opts(opts, "set_pooling_options")
    opts.pooling.poplar_options = _merge_options(opts.pooling.poplar_options, pooling_options,
                                                 "pooling_options")
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_report_options(opts, graph_options=None, execution_options=None):
    """Set the options used to influence Poplar graph and execution report generation.

    The emulator writes no Poplar reports: the dictionaries are checked and ignored. Returns
    the IPUConfig.
    """
    _opts(opts, "set_report_options")
    _merge_options({}, graph_options, "graph_options")
    _merge_options({}, execution_options, "execution_options")
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_ipu_model_options(opts, compile_ipu_code=True, tiles_per_ipu=None,
                          ipu_model_version="ipu2"):
    """Set the IPU Model options.

    Sets ``ipu_model.compile_ipu_code``, ``ipu_model.tiles_per_ipu`` (when given) and
    ``ipu_model.version``. Returns the IPUConfig.
    """
    _opts(opts, "set_ipu_model_options")
    opts.ipu_model.compile_ipu_code = compile_ipu_code
    if tiles_per_ipu:
        opts.ipu_model.tiles_per_ipu = tiles_per_ipu
    opts.ipu_model.version = ipu_model_version
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_recomputation_options(opts, allow_recompute=True):
    """Set re-computation options.

    Sets ``allow_recompute``. Returns the IPUConfig.
    """
    _opts(opts, "set_recomputation_options").allow_recompute = allow_recompute
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_floating_point_behaviour_options(opts, inv=True, div0=True, oflo=True, esr=True,
                                         nanoo=True):
    """Set the IPU floating point control behaviour bits.

    Sets ``floating_point_behaviour.inv/div0/oflo/nanoo`` and ``esr``
    (``StochasticRoundingBehaviour.from_bool(esr)``). Returns the IPUConfig.
    """
    fp = _opts(opts, "set_floating_point_behaviour_options").floating_point_behaviour
    fp.inv = inv
    fp.div0 = div0
    fp.oflo = oflo
    fp.esr = esr if isinstance(esr, StochasticRoundingBehaviour) else \
        StochasticRoundingBehaviour.from_bool(esr)
    fp.nanoo = nanoo
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_io_tile_options(opts, num_io_tiles, place_ops_on_io_tiles=None,
                        io_tile_available_memory_proportion=0.9):
    """Set the number of tiles reserved for I/O per IPU.

    Sets ``io_tiles.num_io_tiles``, ``io_tiles.available_memory_proportion`` and, unless it
    is None, ``io_tiles.place_ops_on_io_tiles``. Returns the IPUConfig.
    """
    io = _opts(opts, "set_io_tile_options").io_tiles
    io.num_io_tiles = num_io_tiles
    io.available_memory_proportion = io_tile_available_memory_proportion
    if place_ops_on_io_tiles is not None:
        if place_ops_on_io_tiles and num_io_tiles == 0:
            raise ValueError("Cannot place ops on I/O tiles when num_io_tiles == 0")
        io.place_ops_on_io_tiles = place_ops_on_io_tiles
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_gcl_options(opts, gcl_options=None):
    """Set the IPU options for the Graphcore Communication Library.

    Adds the options to ``gcl_poplar_options``. Returns the IPUConfig.
    """
    _opts(opts, "set_gcl_options")
    if not isinstance(gcl_options, dict):
        raise TypeError("`gcl_options` must be a dictionary")
    opts.gcl_poplar_options = _merge_options(opts.gcl_poplar_options, gcl_options,
                                             "gcl_options", TypeError)
    return opts


def _devices_configured(opts) -> bool:
    return opts.auto_select_ipus not in ([], ()) or opts.select_ipus not in ([], ())


@_deprecated(_CONFIG_INSTRUCTIONS)
def auto_select_ipus(opts, num_ipus):
    """Configure the IPUs to be used by the session.

    The configuration describes a system consisting of multiple TensorFlow devices, each
    with control of one of more IPUs. The devices will be labeled ``/device:IPU:0``,
    ``/device:IPU:1`` and so on. Each device controls ``num_ipus`` IPUs (an int, or a list
    with one count per device); the system selects IPU configurations with that many IPUs.

    Sets ``auto_select_ipus``. Returns the IPUConfig.
    """
    _opts(opts, "auto_select_ipus")
    if _devices_configured(opts):
        raise Exception("IPU devices have already been configured.")
    if isinstance(num_ipus, bool) or not isinstance(num_ipus, (int, list, tuple)):
        raise Exception("`num_ipus` must be an integer, list or tuple.")
    opts.auto_select_ipus = num_ipus
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def select_ipus(opts, indices):
    """Configure the IPUs to be used by the session.

    Each TensorFlow device ``/device:IPU:N`` uses the IPU configuration ``indices[N]`` of the
    ``gc-info -l`` listing (``ipu-gpu info`` prints the emulated one).

    Sets ``select_ipus``. Returns the IPUConfig.
    """
    _opts(opts, "select_ipus")
    if _devices_configured(opts):
        raise Exception("IPU devices have already been configured.")
    if not isinstance(indices, (list, tuple)):
        raise Exception("`indices` must be a list or tuple.")
    if len(set(indices)) != len(indices):
        raise Exception("All device indices in `indices` must be unique.")
    opts.select_ipus = indices
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_ipu_connection_type(opts, connection_type=DeviceConnectionType.ALWAYS, ipu_version="",
                            enable_remote_buffers=False):
    """Configure when to attach to the device.

    Sets ``device_connection.type``, ``device_connection.version`` (an int N means "ipuN")
    and ``device_connection.enable_remote_buffers``. Returns the IPUConfig.
    """
    _opts(opts, "set_ipu_connection_type")
    if connection_type is None:
        connection_type = DeviceConnectionType.ALWAYS
    if not isinstance(connection_type, DeviceConnectionType):
        raise TypeError(f"set_ipu_connection_type: connection_type must be a "
                        f"DeviceConnectionType, got {connection_type!r}")
    if ipu_version == "" and connection_type in (DeviceConnectionType.NEVER,
                                                 DeviceConnectionType.PRE_COMPILE):
        raise Exception("`ipu_version` must be specified when `connection_type` is set to "
                        f"`{connection_type}`.")
    if isinstance(ipu_version, int) and not isinstance(ipu_version, bool):
        ipu_version = f"ipu{ipu_version}"
    opts.device_connection.type = connection_type
    opts.device_connection.version = ipu_version
    opts.device_connection.enable_remote_buffers = enable_remote_buffers
    return opts


@_deprecated(_CONFIG_INSTRUCTIONS)
def set_experimental_multi_replica_distribution_options(opts, process_count, process_index):
    """Configure run-time parallel processes to execute the same Poplar program.

    Sets ``experimental.multi_replica_distribution.process_count`` and ``process_index``.
    Returns the IPUConfig.
    """
    _opts(opts, "set_experimental_multi_replica_distribution_options")
    if not 0 <= process_index < process_count:
        raise ValueError("0 <= process_index < process_count")
    mrd = opts.experimental.multi_replica_distribution
    mrd.process_count = process_count
    mrd.process_index = process_index
    return opts

