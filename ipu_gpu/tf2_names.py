"""TensorFlow 2 top-level names Graphcore's tutorial and application programs use that map
onto what ipu_gpu already has: ``tf.name_scope`` and ``tf.control_dependencies`` (TF2
signatures: eager no-ops apart from the scope name, graph blocks inside ``tf.Graph``),
``tf.get_logger``, ``tf.is_tensor``, ``tf.add_n``, ``tf.no_op``, ``tf.get_static_value`` and
``tf.nn.relu6``."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable

import numpy as np

__all__ = ["add_n", "control_dependencies", "get_logger", "get_static_value", "is_tensor",
           "name_scope", "no_op", "relu6"]

_local = threading.local()


def _building() -> bool:
    from .graph import core

    return core.building()


class name_scope:  # noqa: N801 - TF's name
    """``tf.name_scope(name)``: a context manager opening the scope ``name``; ``__enter__``
    returns the scope's full name with a trailing slash (``"outer/inner/"``). A name ending
    in ``/`` is taken as the full scope name; ``""`` returns to the top. Inside a
    ``tf.Graph`` it is the graph's name scope (operations are named ``name/...``).

    Raises:
      ValueError: ``name`` is not a string (TF's message)."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise ValueError("name for name_scope must be a string.")
        self._name = name
        self._exit = None

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        if _building():
            from .graph import core

            block = core.get_default_graph().name_scope(self._name)
            scope = block.__enter__()
            self._exit = block.__exit__
            return scope
        old = getattr(_local, "scope", "")
        if not self._name:
            scope = ""
        elif self._name.endswith("/"):
            scope = self._name
        else:
            scope = f"{old}{self._name}/"
        _local.scope = scope
        self._exit = lambda *exc: setattr(_local, "scope", old)
        return scope

    def __exit__(self, *exc):
        self._exit(*exc)
        self._exit = None
        return False


def control_dependencies(control_inputs):
    """``tf.control_dependencies``: inside a ``tf.Graph``, operations made in the block run
    after ``control_inputs``; executing eagerly every op already ran, so the block does
    nothing (TF2 returns a null context there)."""
    if _building():
        from .graph.program import control_dependencies as graph_control_dependencies

        return graph_control_dependencies(control_inputs)
    return contextlib.nullcontext()


def no_op(name=None):
    """Does nothing: inside a ``tf.Graph`` a ``NoOp`` operation (to group control
    dependencies on), executing eagerly None, as TF 2."""
    if _building():
        from .graph.nodes import no_op as graph_no_op

        return graph_no_op(name=name)
    return None


def get_static_value(tensor, partial=False):
    """The value of ``tensor`` known without running anything: an eager tensor's or
    variable's as a numpy array; a value that is not a tensor as it is; None for a graph
    tensor (computed only when a Session runs it)."""
    from .core.tensor import Tensor, Variable

    if isinstance(tensor, (Tensor, Variable)):
        return tensor.numpy()
    if is_tensor(tensor):
        return None
    return tensor


def get_logger() -> logging.Logger:
    """TensorFlow's logger (the ``"tensorflow"`` logger of Python's logging)."""
    return logging.getLogger("tensorflow")


def is_tensor(x) -> bool:
    """Whether ``x`` is a tensor-like value of TensorFlow's (a Tensor, Variable,
    SparseTensor, IndexedSlices or graph tensor), not a numpy array or Python value."""
    from . import SparseTensor
    from .core.indexed_slices import IndexedSlices
    from .core.tensor import Tensor, Variable

    if isinstance(x, (Tensor, Variable, SparseTensor, IndexedSlices)):
        return True
    import sys

    graph = sys.modules.get("ipu_gpu.graph")
    return graph is not None and isinstance(x, (graph.GraphTensor, graph.GraphVariable))


def add_n(inputs, name=None):
    """The element-wise sum of ``inputs``, an iterable of tensors of one dtype and one shape
    (no broadcasting).

    Raises:
      ValueError: ``inputs`` is empty or not iterable (TF's message).
      InvalidArgumentError: the inputs' dtypes or shapes differ (TF's AddN messages)."""
    from .compat.v1.tf1_aliases import add_n as _add_n

    if not inputs or not isinstance(inputs, Iterable):
        raise ValueError("inputs must be a list of at least one Tensor/IndexedSlices with the "
                         "same dtype and shape")
    inputs = list(inputs)
    if _building():
        return _add_n(inputs, name=name)
    from .core.convert import convert_to_tensor
    from .errors import InvalidArgumentError

    tensors = [convert_to_tensor(x) for x in inputs]
    first = tensors[0]
    for i, t in enumerate(tensors[1:], 1):
        if t.dtype != first.dtype:
            raise InvalidArgumentError(
                f"cannot compute AddN as input #{i}(zero-based) was expected to be a "
                f"{_tf_name(first.dtype)} tensor but is a {_tf_name(t.dtype)} tensor [Op:AddN]")
        if tuple(t.shape) != tuple(first.shape):
            raise InvalidArgumentError(
                "Inputs to operation AddN of type AddN must have the same size and shape.  "
                f"Input 0: {_dims(first.shape)} != input {i}: {_dims(t.shape)} [Op:AddN]")
    return _add_n(tensors, name=name)


def _tf_name(dtype) -> str:
    d = np.dtype(dtype)
    return {"float32": "float", "float64": "double", "float16": "half"}.get(d.name, d.name)


def _dims(shape) -> str:
    return "[" + ",".join(str(int(n)) for n in shape) + "]"


def relu6(features, name=None):
    """``min(max(features, 0), 6)``; its gradient passes where ``0 < features < 6``, as TF's
    Relu6Grad.

    Raises:
      InvalidArgumentError: a bool (or other non-numeric) ``features``."""
    from . import maximum, minimum
    from .core.convert import convert_to_tensor

    x = features if _building() else convert_to_tensor(features)
    dtype = np.dtype(getattr(x, "dtype", np.float32))
    if dtype.kind not in "fiu":
        from .errors import InvalidArgumentError

        raise InvalidArgumentError(f"Value for attr 'T' of {dtype.name} is not in the list of "
                                   "allowed values: float, double, int32, uint8, int16, int8, "
                                   "int64, bfloat16, uint16, half, uint32, uint64 [Op:Relu6]")
    # the constants first: on a tie maximum and minimum give the gradient to their first
    # argument, so features gets none at exactly 0 or 6, as in TF
    return minimum(np.asarray(6, dtype=dtype), maximum(np.asarray(0, dtype=dtype), x))

