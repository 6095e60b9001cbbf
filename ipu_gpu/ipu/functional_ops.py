"""``tensorflow.python.ipu.functional_ops`` (also ``ipu.ops.functional_ops`` and
``ipu.outlined_function``): IPU outlined functions.

On the IPU an outlined function is compiled once as a Poplar function and called with its
arguments copied into place; the numbers are those of the Python function. Here the function
runs where it is called (eagerly, inside ``tf.function``, or recorded into a TF1 graph), so
gradients flow through it as through any other code. ``unique_sharding`` and
``keep_input_layouts`` only steer the IPU's code layout and are accepted and ignored.
"""

from __future__ import annotations

import functools

from ipu_gpu import graph
from ipu_gpu.compat.v1.variable_scope import AUTO_REUSE, get_variable_scope, variable_scope
from ipu_gpu.core.convert import convert_to_tensor
from ipu_gpu.core.nest import flatten
from ipu_gpu.core.tensor import Tensor
from ipu_gpu.graph import GraphTensor
from ipu_gpu.ops.shape import stack

__all__ = ["outlined_function"]


def outlined_function(func=None, unique_sharding: bool = False, keep_input_layouts=None,
                      name: str | None = None):
    """Make ``func`` an IPU outlined function (a decorator, with or without arguments).

    Args:
      func: a Python function taking positional arguments only, each a ``tf.Tensor`` or
        convertible to one (non-tensor values reach the function through its closure).
      unique_sharding: copy every input to one IPU before the call (a layout hint).
      keep_input_layouts: keep the inputs' tile layouts, or let the function re-allocate them
        (a layout hint; None decides automatically).
      name: the function's name; its operations are built in the name scope ``name``
        (default "function").

    Returns:
      A callable returning what ``func`` returns for the arguments converted to tensors.

    Variables made with ``tf.compat.v1.get_variable`` inside the function are shared by all
    its calls unless each call opens its own ``variable_scope`` (Graphcore's documented
    behaviour: the function body is reused, and with it its variables).

    Raises:
      TypeError: a keyword argument, or an argument that is not convertible to a tensor.
    """
    scope_name = name if name else "function"

    def decorated(inner):
        @functools.wraps(inner)
        def func_wrapper(*args):
            tensors = [_as_tensor(a) for a in args]
            with graph.get_default_graph().name_scope(scope_name):
                with variable_scope(get_variable_scope(), reuse=AUTO_REUSE):
                    return inner(*tensors)

        return func_wrapper

    if func is not None:
        return decorated(func)
    return decorated


def _as_tensor(value):
    """``value`` as TF's ``convert_n_to_tensor`` gives it to the function: tensors (eager or
    graph) as they are, a Variable as its value, nested lists packed into one tensor."""
    if type(value) is Tensor or isinstance(value, GraphTensor):
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, (Tensor, GraphTensor))
                                                for v in flatten(list(value))):
        return stack([_as_tensor(v) for v in value])
    return convert_to_tensor(value)
