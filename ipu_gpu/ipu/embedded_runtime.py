"""``tensorflow.python.ipu.embedded_runtime``: run an executable compiled by
``application_compile_op`` as part of a program.

``embedded_runtime_start`` gives a ``RuntimeContext``; the engine (``saved_model/engine.py``:
each iteration a program on the emulated IPU device) starts when its start op runs: at once
eagerly, at the first ``Session.run`` needing it in a TF1 graph. Each
``embedded_runtime_call`` feeds one element of the streamed inputs and returns that
iteration's streamed outputs (a list, in the outfeed's flattened order). Calls from several
threads queue up and run in turn. A failed iteration raises ``tf.errors.InternalError`` and
the program restarts for the next call.
"""

from __future__ import annotations

import os

import numpy as np

from ..core.tensor import Tensor, wrap

__all__ = ["RuntimeContext", "embedded_runtime_call", "embedded_runtime_start",
           "embedded_runtime_start_and_call", "embedded_runtime_stop"]


class RuntimeContext:
    """Represents an instance of the application runtime.

    This class must not be constructed directly, instead call ``embedded_runtime_start`` or
    ``embedded_runtime_start_and_call``."""

    def __init__(self, name, executable_file, executable_proto, start_op, starter=None):
        self._name = name
        self._executable_file = executable_file
        self._executable_proto = executable_proto
        self._start_op = start_op
        self._starter = starter  # () -> the running engine

    def start_op(self):
        """The op that starts the application runtime instance (None eagerly: it has run)."""
        return self._start_op

    def name(self):
        """The name of the application runtime instance."""
        return self._name

    def signature(self):
        """The signature of the executable: ``inputs``, ``streamed_inputs`` and
        ``streamed_outputs``, each a list of entries with ``name``, ``argument``, ``dtype``
        and ``shape``."""
        return self._executable_proto.signature

    def output_types(self):
        """The output dtypes of the executable."""
        return [t.dtype for t in self.signature().streamed_outputs]

    def _engine(self):
        return self._starter()


def _shape_of(x) -> list:
    shape = getattr(x, "shape", None)
    if shape is None:
        return list(np.shape(x))
    if hasattr(shape, "rank"):
        return None if shape.rank is None else shape.as_list()
    return [int(d) for d in shape]


def _dtype_of(x):
    d = getattr(x, "_dtype", None)
    if d is None:
        d = getattr(x, "dtype", None)
    return np.dtype(d) if d is not None else np.asarray(x).dtype


def _check_inputs(inputs, expected, error_for_dtype):
    for i, x in enumerate(inputs):
        info = expected[i]
        actual_shape = _shape_of(x)
        if actual_shape != info.shape:
            raise Exception(  # noqa: TRY002 - Graphcore's type
                f"Mismatched input shape at position {i} ('{info.name}'). Expected "
                f"{info.shape}, but input {i} has shape {actual_shape}.")
        if _dtype_of(x) != info.dtype:
            raise error_for_dtype(
                f"Mismatched input dtype at position {i} ('{info.name}'). Expected "
                f"{_tf_name(info.dtype)}, but input {i} has dtype {_tf_name(_dtype_of(x))}.")


def _tf_name(d) -> str:
    return f"<dtype: '{np.dtype(d).name}'>"


def _host_value(x):
    if isinstance(x, Tensor):
        return x
    return wrap(np.asarray(x))


def embedded_runtime_start(executable_file, inputs, name, pipeline_timeout=None):
    """Create and start an application runtime from an executable.

    Args:
      executable_file: The path to the executable file.
      inputs: The initial input tensors (a list, or a dict by the executable's input names).
      name: The name of the application runtime instance.
      pipeline_timeout: How long (microseconds) a pipelined executable waits for the next
        batch of data before forcing execution to continue. Defaults to 5000.

    Returns:
      An embedded application runtime context instance.

    Raises:
      Exception: the file is not an executable; an input is missing, or has the wrong
        count, shape or dtype (Graphcore's messages).
    """
    from ..graph import core as graph_core
    from ..saved_model import engine, executable

    pipeline_timeout = pipeline_timeout or 5000
    path = executable_file.decode() if isinstance(executable_file, bytes) else \
        os.fspath(executable_file)
    exe = executable.read_cached(path)
    expected = exe.signature.inputs
    if isinstance(inputs, dict):
        names = [t.name for t in expected]
        inputs = [inputs.get(n, None) for n in names]
        for n, x in zip(names, inputs):
            if x is None:
                raise Exception(f"Failed to find input tensor with name '{n}' in input "  # noqa: TRY002
                                "dictionary.")
    if isinstance(inputs, tuple):
        inputs = list(inputs)
    if not isinstance(inputs, list):
        raise Exception("Expected the inputs to be a list.")  # noqa: TRY002
    if len(expected) != len(inputs):
        raise Exception(f"Embedded application runtime expects {len(expected)} inputs, "  # noqa: TRY002
                        f"but {len(inputs)} were provided.")
    _check_inputs(inputs, expected, Exception)
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)

    def start(*values):
        startup = [_host_value(v) for v in values]
        return engine.get_or_start(name, key, exe, startup, pipeline_timeout)

    if graph_core.building() and any(isinstance(x, graph_core.GraphTensor) for x in inputs):
        holder = {}

        def run_start(*values):
            holder["engine"] = start(*values)
            return []
        op = graph_core.add_node(graph_core.get_default_graph(), "ApplicationRuntime", name,
                                 list(inputs), run_start, [])
        return RuntimeContext(name, path, exe, op, lambda: holder.get("engine") or start())
    if graph_core.building():
        op = graph_core.add_node(graph_core.get_default_graph(), "ApplicationRuntime", name,
                                 [], lambda: (start(*inputs), [])[1], [])
        return RuntimeContext(name, path, exe, op, lambda: start(*inputs))
    start(*inputs)
    return RuntimeContext(name, path, exe, None, lambda: start(*inputs))


def embedded_runtime_call(inputs, context):
    """Call an application with a batch of input data.

    Args:
      inputs: A batch of data to pass to the application (one element of each streamed
        input).
      context: The application runtime context created with ``embedded_runtime_start``.

    Returns:
      The output tensors from the application (graph tensors in a TF1 graph).

    Raises:
      Exception: the number of inputs or a shape does not match the executable's.
      TypeError: a dtype does not match.
      tf.errors.InternalError: the application failed on this batch.
    """
    from ..graph import core as graph_core

    streamed = context.signature().streamed_inputs
    if isinstance(inputs, tuple):
        inputs = list(inputs)
    if len(inputs) != len(streamed):
        raise Exception(f"Embedded application call expects {len(streamed)} inputs, but "  # noqa: TRY002
                        f"{len(inputs)} were provided.")
    _check_inputs(inputs, streamed, TypeError)
    outputs = context.signature().streamed_outputs

    def call(*values):
        engine = context._engine()
        return engine.call([_host_value(v) for v in values])

    if graph_core.building():
        start = context.start_op()
        op = graph_core.add_node(graph_core.get_default_graph(), "ApplicationCall",
                                 f"{context.name()}_call", list(inputs), call,
                                 [(t.dtype, t.shape) for t in outputs],
                                 control_inputs=[start] if start is not None else [])
        return list(op.outputs)
    return call(*inputs)


def embedded_runtime_stop(context):  # noqa: ARG001 - Graphcore's signature
    """Stop an application runtime (Graphcore's runtime cannot stop an engine).

    Raises:
      NotImplementedError: always, as Graphcore's."""
    raise NotImplementedError("Embedded runtime doesn't support stopping an engine.")


def embedded_runtime_start_and_call(executable_file, startup_inputs, call_inputs, name):
    """Create and start an application runtime and call it once.

    Returns:
      A tuple of the batch results and the embedded application runtime context.
    """
    ctx = embedded_runtime_start(executable_file, startup_inputs, name)
    return (embedded_runtime_call(call_inputs, ctx), ctx)
