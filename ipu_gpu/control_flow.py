"""TF 2's ``tf.while_loop`` and ``tf.cond`` (their TF 2 signatures) over the one
implementation in ``graph/program.py``: eagerly a Python loop / branch, on TF1 graph tensors a
traced node.

Eagerly, as TF 2, ``while_loop`` returns what the body last returned (``loop_vars`` when it
never ran) and takes any loop variable, ``TensorArray``s included; a single Tensor as
``loop_vars`` (which TF 2 refuses) is taken as TF 1 takes it. A graph loop needs Tensors.
"""

from __future__ import annotations

from . import nest as _nest
from .graph import program as _program

__all__ = ["cond", "while_loop"]


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, maximum_iterations=None, name=None):
    """``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)`` (``tf.while_loop``)."""
    if not callable(cond):
        raise TypeError("cond must be callable.")
    if not callable(body):
        raise TypeError("body must be callable.")
    if parallel_iterations < 1:
        raise TypeError("parallel_iterations must be a positive integer.")
    if isinstance(loop_vars, (list, tuple)) and not any(
            type(x).__name__ == "GraphTensor" for x in _nest.flatten(list(loop_vars))):
        values, i = loop_vars, 0  # eagerly, as TF 2: the result is what the body returned
        while (maximum_iterations is None or i < maximum_iterations) and bool(cond(*values)):
            values = body(*values)
            if not isinstance(values, (list, tuple)):
                values = (values,)
            i += 1
        return values
    return _program.while_loop(cond, body, loop_vars, shape_invariants, parallel_iterations,
                               back_prop, swap_memory, name, maximum_iterations)


def cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` if ``pred`` else ``false_fn()`` (``tf.cond``)."""
    return _program.cond(pred, true_fn, false_fn, name=name)
