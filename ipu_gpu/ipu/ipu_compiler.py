"""``tensorflow.python.ipu.ipu_compiler``: run a computation on the emulated IPU device of the
enclosing ``ipu_scope``.

``compile`` runs ``computation`` at once (the emulator is eager) on every replica of the
device, each replica in its own execution context (``emulation/engine.py``), and returns
replica 0's outputs, as the IPU streams only replica 0's values to the host. The replication
factor is the device's IPU count divided by the IPUs one replica takes (``program_shards``):
the highest ``ipu_shard`` index used + 1 (rounded up to a power of two) or a pipeline's device
mapping, else one; so a 4-IPU device runs 4 replicas of an unsharded program and 2 of a
two-shard or two-stage one. A shard count that does not divide the device's IPUs is the SDK's
``InternalError`` ("Trying to compile a graph for an IPU device with ...").

Variables: as on an IPU, every replica holds its own copy of each variable
(``core/tensor.py``): inside a run a replica reads and writes only its copy; the copies start
equal to the host value and persist across runs; after a run the host sees replica 0's value;
a host-side assignment between runs sets every replica's copy. So a data-parallel step on
all-reduced gradients updates the weights once per step, and updates without an all-reduce
let the replicas diverge.
"""

from __future__ import annotations

import sys

from ..core import nest
from ..core.convert import convert_to_tensor
from ..core.tensor import Tensor
from ..emulation import engine, placement
from ..emulation import system as _system
from . import program_shards

__all__ = ["compile"]

_NOT_ON_IPU = (
    "A computation has been compiled, however it was not placed on an IPU device. This "
    "computation will not be executed on an IPU.\nTo execute it on an IPU use the "
    "`ipu_scope` from `ipu_gpu.ipu.scopes`, for example:\n\n"
    "  with ipu_scope('/device:IPU:0'):\n    result = ipu_compiler.compile(comp, inputs)\n")


def _to_tensor(x):
    if isinstance(x, Tensor) or x is None or engine.is_operation(x):
        return x
    return convert_to_tensor(x)


def _split_outputs(outputs) -> list:
    """Tensors (nested structures allowed) followed by operations -> the list of tensors."""
    items = list(outputs)
    is_op = [o is None or engine.is_operation(o) for o in items]
    first_op = is_op.index(True) if True in is_op else len(items)
    if not all(is_op[first_op:]):
        raise ValueError("compile: computation must return zero or more Tensor values "
                         "followed by zero or more Operations")
    tensors = items[:first_op]
    return [nest.map_structure(_to_tensor, t) for t in tensors]


def compile_arguments(computation, inputs) -> list:
    """``compile``'s argument checks (TF's TypeErrors); returns the inputs as a list."""
    if not callable(computation):
        raise TypeError(f"compile: computation must be callable, got {computation!r}")
    if inputs is None:
        return []
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"compile: inputs must be a list of inputs or None, got "
                        f"{type(inputs).__name__}")
    return inputs


def compile(computation, inputs=None):  # noqa: A001 - Graphcore's name
    """Builds an operator that compiles and runs computation with the Graphcore IPU XLA
    backend.

    Args:
      computation: A Python function that builds a computation to apply to the input. If the
        function takes n inputs, inputs should be a list of n tensors. computation may return
        a list of operations and tensors. Tensors must come before operations in the returned
        list. The return value of compile is a list of tensors corresponding to the tensors
        from the output of computation. All operations returned from computation will be
        executed when evaluating any of the returned output tensors.
      inputs: A list of inputs or None (equivalent to an empty list). Each input can be a
        nested structure containing values that are convertible to tensors.

    Returns:
      Same data structure as if computation(inputs) is called directly with some exceptions
      for correctness:

      1. None output: a NoOp (an ``Operation``) is returned.
      2. Single value output: a list containing the value is returned.
      3. Operation-only outputs: a NoOp is returned.

      Under replication the values are replica 0's.

    Raises:
      RuntimeError: if the computation is not inside an ``ipu_scope`` (Graphcore: Exception,
        "the computation was not compiled for an IPU device"); any exception of a replica,
        with ``replica_index`` set on it.
    """
    inputs = compile_arguments(computation, inputs)
    where = placement.current()
    if where.device_index is None or where.outside_compilation is not None:
        raise RuntimeError(_NOT_ON_IPU)
    graph = sys.modules.get("ipu_gpu.graph")
    if graph is not None and (graph.core.building() or graph.program.is_symbolic(inputs)):
        from ..graph import program  # in a TF1 graph: traced now, run by each Session.run

        index = where.device_index  # the system may be configured after the graph is built
        record = program_shards.Record()

        def traced(*args):
            with program_shards.tracking(record):
                return computation(*args)
        def device():
            return _system.current_system().device(index)

        return program.traced_compile(
            traced, list(inputs), device,
            lambda: program_shards.check(device(), record()))
    device = _system.current_system().device(where.device_index)
    args = [nest.map_structure(_to_tensor, x) for x in inputs]
    result = program_shards.run(device, computation, args)
    if result is None or engine.is_operation(result):
        return engine.Operation("NoOp")
    if isinstance(result, dict):
        return nest.map_structure(_to_tensor, result)
    if not isinstance(result, (list, tuple)):
        return [_to_tensor(result)]
    tensors = _split_outputs(result)
    if not tensors:
        return engine.Operation("NoOp")
    return tensors
