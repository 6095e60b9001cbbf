"""TF1's partitioned variables: ``PartitionedVariable`` (a variable split along one axis into
shards ``<name>/part_<i>``) and the partitioners ``get_variable`` takes
(``fixed_size_partitioner``, ``variable_axis_size_partitioner``,
``min_max_variable_partitioner``).

Reading a partitioned variable concatenates its shards: any op given one reads
``as_tensor()`` (a concat node in a graph, the shards' current values eagerly, so gradients
reach each shard through the concat). ``variable_scope.get_variable`` makes them.
"""

from __future__ import annotations

import math

import numpy as np

from ...core import dtypes, nest, registry
from ...core.spec import TensorShape

__all__ = ["PartitionedVariable", "fixed_size_partitioner", "min_max_variable_partitioner",
           "variable_axis_size_partitioner"]


class PartitionInfo:
    """Where a shard lies in its partitioned variable (TF's ``_PartitionInfo``), handed to
    initializers that take ``partition_info``."""

    def __init__(self, full_shape, var_offset):
        if len(full_shape) != len(var_offset):
            raise ValueError(f"Expected equal length, but `var_offset` is of length "
                             f"{len(var_offset)} while full_shape is of length "
                             f"{len(full_shape)}.")
        self.full_shape = list(full_shape)
        self.var_offset = list(var_offset)

    def single_offset(self, shape) -> int:
        """The offset along the partitioned axis (0 when the shard is the whole variable)."""
        axis = self.single_slice_dim(shape)
        return 0 if axis is None else self.var_offset[axis]

    def single_slice_dim(self, shape):
        """The one axis along which ``shape`` is a strict part of the full shape, or None."""
        if len(shape) != len(self.full_shape):
            raise ValueError(f"Expected equal length, but received shape={shape} of length "
                             f"{len(shape)} while self.full_shape={self.full_shape} is of "
                             f"length {len(self.full_shape)}.")
        axes = [i for i, (s, f) in enumerate(zip(shape, self.full_shape)) if s != f]
        if len(axes) > 1:
            raise ValueError(f"Cannot use single_slice_dim() with shape={shape} and "
                             f"self.full_shape={self.full_shape} since slice dim could be "
                             f"any one of {axes}")
        return axes[0] if axes else None


class PartitionedVariable:
    """A container of the shards of one variable (TF's ``PartitionedVariable``): iterating
    gives the shard variables in offset order; used as a tensor it is their concatenation.

    Args:
      name: the overall name (the shards are ``<name>/part_<i>``).
      shape: the overall shape.
      dtype: the variables' dtype.
      variable_list: the shard variables.
      partitions: the number of shards along each axis (one axis above 1 at most).
      offsets: each shard's offset in the full variable.

    Raises:
      TypeError: ``variable_list`` or ``partitions`` is not a list or tuple.
      ValueError: an empty ``variable_list``, non-positive partitions, or ``partitions``
        not of the variable's rank."""

    def __init__(self, name, shape, dtype, variable_list, partitions, offsets=None):
        if not isinstance(variable_list, (list, tuple)):
            raise TypeError(f"variable_list is not a list or tuple: {variable_list}")
        if not isinstance(partitions, (list, tuple)):
            raise TypeError(f"partitions is not a list or tuple: {partitions}")
        if not all(p >= 1 for p in partitions):
            raise ValueError(f"partition values must be positive: {partitions}")
        if not variable_list:
            raise ValueError("variable_list may not be empty")
        if len(shape) != len(partitions):
            raise ValueError(f"len(shape) != len(partitions): {shape} vs. {partitions}")
        offsets = offsets if offsets is not None else [[0] * len(shape)] * len(variable_list)
        order = sorted(range(len(variable_list)), key=lambda i: offsets[i])
        self._variable_list = [variable_list[i] for i in order]
        self._offsets = [list(offsets[i]) for i in order]
        self._name = name
        self._shape = TensorShape(shape)
        self._dtype = dtypes.as_dtype(dtype, "PartitionedVariable: dtype")
        self._partitions = list(partitions)

    def __iter__(self):
        """The shard variables, in offset order."""
        return iter(self._variable_list)

    def __len__(self) -> int:
        axes = self._partition_axes()
        if len(axes) > 1:
            raise ValueError(f"Cannot get a length for {len(axes)} > 1 partition axes")
        return len(self._variable_list)

    def __repr__(self) -> str:
        return (f"<PartitionedVariable '{self._name}' shape={self._shape} "
                f"dtype={self._dtype.name} partitions={self._partitions}>")

    def _partition_axes(self) -> list:
        if all(p == 1 for p in self._partitions):
            return [0]
        return [i for i, p in enumerate(self._partitions) if p > 1]

    def as_tensor(self):
        """The concatenation of the shards (a graph tensor in a graph; the shards' current
        values eagerly)."""
        import ipu_gpu as core

        if len(self._variable_list) == 1:
            return core.identity(self._variable_list[0])
        return core.concat(list(self._variable_list), self._partition_axes()[0])

    _concat = as_tensor

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def _get_variable_list(self) -> list:
        return self._variable_list

    def _get_partitions(self) -> list:
        return self._partitions

    def _apply_assign_fn(self, assign_fn, value) -> list:
        import ipu_gpu as core

        if isinstance(value, PartitionedVariable):
            values = list(value)
        elif isinstance(value, list) and len(value) == len(self._variable_list):
            values = value
        else:
            axis = self._partition_axes()[0]
            values = core.split(value, [int(v.shape[axis]) for v in self._variable_list],
                                axis=axis)
        return [assign_fn(v, x) for v, x in zip(self._variable_list, values)]

    def assign(self, value, use_locking=False, name=None, read_value=True) -> list:
        """Assign ``value`` (the full value, a list of shard values or another partitioned
        variable) shard by shard; returns the shards' assignments."""
        return self._apply_assign_fn(lambda v, x: v.assign(x), value)

    def assign_add(self, value, use_locking=False, name=None, read_value=True) -> list:
        return self._apply_assign_fn(lambda v, x: v.assign_add(x), value)

    def assign_sub(self, value, use_locking=False, name=None, read_value=True) -> list:
        return self._apply_assign_fn(lambda v, x: v.assign_sub(x), value)


def make(name, shape, dtype, variable_list, partitions, offsets) -> PartitionedVariable:
    """A ``PartitionedVariable`` of ``variable_list``; in a TF1 graph (graph variables) it is
    also the graph tensor of their concatenation (``GraphPartitionedVariable``)."""
    from ...graph import GraphTensor

    if not any(isinstance(v, GraphTensor) for v in variable_list):
        return PartitionedVariable(name, shape, dtype, variable_list, partitions, offsets)
    return GraphPartitionedVariable(name, shape, dtype, variable_list, partitions, offsets)


def _graph_tensor_type():
    from ...graph import GraphTensor

    return GraphTensor


class GraphPartitionedVariable(PartitionedVariable, _graph_tensor_type()):
    """A partitioned variable of a TF1 graph: also the output of the node concatenating its
    shards, so ops read it as one tensor and gradients flow to each shard."""

    def __init__(self, name, shape, dtype, variable_list, partitions, offsets=None):
        PartitionedVariable.__init__(self, name, shape, dtype, variable_list, partitions,
                                     offsets)
        read = PartitionedVariable.as_tensor(self)
        _graph_tensor_type().__init__(self, read.op, read.value_index, self._dtype,
                                      self._shape.as_list())
        read.op.outputs[read.value_index] = self  # this object is the node's output

    def __repr__(self) -> str:
        return PartitionedVariable.__repr__(self)


def _read(value):
    return value.as_tensor() if isinstance(value, PartitionedVariable) else value


def _op_hook(op, inputs, static):
    """An op given a partitioned variable reads its concatenation."""
    return op(*nest.map_structure(_read, list(inputs)), **static)


def _function_hook(fn, args, kwargs):
    return fn(*nest.map_structure(_read, list(args)), **nest.map_structure(_read, kwargs))


registry.set_symbolic_hook((PartitionedVariable,), _op_hook, owner="partitioned_variable")
registry.set_function_hook((PartitionedVariable,), _function_hook, owner="partitioned_variable")


# ---- partitioners --------------------------------------------------------------------------
def _element_size(dtype, bytes_per_string_element) -> int:
    d = np.dtype(dtype)  # tf.string is numpy's object dtype
    return bytes_per_string_element if d.kind in "OSU" else d.itemsize


def fixed_size_partitioner(num_shards, axis=0):
    """A partitioner giving ``num_shards`` shards along ``axis`` (at most one per row)."""
    def _partitioner(shape, **unused_args):
        partitions = [1] * len(shape)
        partitions[axis] = min(num_shards, int(shape[axis]))
        return partitions
    return _partitioner


def variable_axis_size_partitioner(max_shard_bytes, axis=0, bytes_per_string_element=16,
                                   max_shards=None):
    """A partitioner keeping each shard below ``max_shard_bytes`` by splitting ``axis``
    (each slice a shard when that is not enough), with at most ``max_shards`` shards.

    Raises:
      ValueError: non-positive byte counts or ``max_shards``."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive. "
                         f"Currently, max_shard_bytes is {max_shard_bytes} and"
                         f"bytes_per_string_element is {bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def _partitioner(shape, dtype):
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        size = _element_size(dtype, bytes_per_string_element)
        partitions = [1] * shape.rank
        bytes_per_slice = shape.num_elements() / shape[axis] * size
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        shards = int(math.ceil(shape[axis] / slices_per_shard))
        partitions[axis] = min(max_shards, shards) if max_shards else shards
        return partitions
    return _partitioner


def min_max_variable_partitioner(max_partitions=1, axis=0, min_slice_size=256 << 10,
                                 bytes_per_string_element=16):
    """A partitioner giving each shard at least ``min_slice_size`` bytes, with at most
    ``max_partitions`` shards (and one row per shard at most) along ``axis``.

    Raises:
      ValueError: (when called) ``axis`` is not an axis of the variable."""
    def _partitioner(shape, dtype):
        if axis >= len(shape):
            raise ValueError(f"Cannot partition variable along axis {axis} when shape is "
                             f"only {shape}")
        total = shape.num_elements() * _element_size(dtype, bytes_per_string_element)
        partitions = [1] * len(shape)
        partitions[axis] = max(1, min(int(shape[axis]), max_partitions,
                                      int(math.ceil(total / min_slice_size))))
        return partitions
    return _partitioner
