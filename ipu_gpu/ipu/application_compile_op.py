"""``tensorflow.python.ipu.application_compile_op``: compile a function into an executable
file for the embedded application runtime (``ipu.embedded_runtime``).

The executable is ipu_gpu's own file (``saved_model/executable.py``): the function traced
once into a graph, one iteration of its ``loops.repeat`` kept as data. Only ipu_gpu runs it.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np

__all__ = ["experimental_application_compile_op"]


class CompiledPath(bytes):
    """The path of a compiled executable, as the string tensor TF's op returns (``numpy()``
    gives the bytes; ipu_gpu has no string tensors)."""

    dtype = np.dtype(object)

    def numpy(self) -> bytes:
        return bytes(self)


def experimental_application_compile_op(func, inputs=None, output_path=None,
                                        freeze_variables=False, name=None):
    """An operation that compiles a function into an executable for the IPU.

    WARNING: This API is experimental and subject to change.

    Args:
      func: The Python function to compile.
      inputs: The inputs passed to the function, as ``func(*inputs)``.
      output_path: The path where the executable will be stored. If None, a temporary file
        is used.
      freeze_variables: If True, any referenced variables will be captured by their values
        (when the compile op is executed) and embedded into the compiled executable as
        constants. If False, the referenced variables instead become implicit inputs that
        must be provided when executing the compiled executable.
      name: Optional op name.

    Returns:
      The path to the compiled executable: in a TF1 graph a string graph tensor that
      compiles when a Session runs it, else the path at once (bytes).
    """
    from ..graph import core as graph_core
    from ..saved_model import executable

    inputs = [] if inputs is None else list(inputs) if isinstance(inputs, (list, tuple)) \
        else [inputs]
    if name is None:
        name = "application_compile"
    if output_path is None:
        fd, output_path = tempfile.mkstemp(prefix=name, suffix=".poplar_exec")
        os.close(fd)
    output_path = os.fspath(output_path)

    def compile_now(trace):
        executable.write(output_path, executable.finish(trace, bool(freeze_variables)))
        return CompiledPath(output_path.encode())

    if graph_core.building():  # traced now, in the program's graph; written when run
        graph = graph_core.get_default_graph()
        trace = executable.Trace(graph, func, inputs)
        node = graph_core.add_node(graph, "IpuApplicationCompile", name, [],
                                   lambda: compile_now(trace), [(np.dtype(object), [])])
        return node.outputs[0]
    return compile_now(executable.Trace(None, func, inputs))
