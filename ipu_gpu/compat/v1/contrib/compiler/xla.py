"""``tf.contrib.compiler.xla`` (TF 1.15): ``compile``, the XLA compilation Graphcore's
``ipu_compiler.compile`` wraps (it is ``xla.compile`` after checking the device is an IPU)."""

from __future__ import annotations

__all__ = ["compile"]


def compile(computation, inputs=None):  # noqa: A001 - TF's name
    """Builds ``computation(*inputs)`` as one compiled cluster and returns its outputs with
    ``xla.compile``'s conventions: None or operations only give a NoOp that runs them; a
    single value a one-element list; the tensors of a list that also holds operations are
    read after those operations ran.

    Inside an ``ipu_scope`` this is ``ipu_compiler.compile`` (the IPU program). Elsewhere XLA
    compiles for the CPU or GPU, where ipu_gpu builds the same nodes into the graph.

    Raises:
      TypeError: ``computation`` not callable, ``inputs`` not a list or None.
      ValueError: an operation before a tensor in the outputs (TF's rule)."""
    from .....emulation import placement
    from .....ipu import ipu_compiler

    if placement.current().device_index is not None:
        return ipu_compiler.compile(computation, inputs)
    inputs = ipu_compiler.compile_arguments(computation, inputs)
    return _conventions(computation(*inputs))


def _conventions(outputs):
    from ..... import compat
    from .....graph.core import Operation

    v1 = compat.v1
    if outputs is None:
        return v1.no_op()
    flat = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    is_op = [isinstance(o, Operation) for o in flat]
    if any(is_op[i] and not is_op[i + 1] for i in range(len(flat) - 1)):
        raise ValueError("XLA computation function must return zero or more Tensor values "
                         "followed by zero or more Operations.")
    ops = [o for o, op in zip(flat, is_op) if op]
    tensors = [o for o, op in zip(flat, is_op) if not op]
    if not tensors:
        return v1.group(*ops)
    if ops:
        with v1.control_dependencies(ops):
            tensors = [v1.identity(t) for t in tensors]
    return tensors
