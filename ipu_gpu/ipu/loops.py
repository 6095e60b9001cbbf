"""``tensorflow.python.ipu.loops``: on-device loops.

The emulator runs the loop at once in the calling replica's context (inside
``ipu_compiler.compile``; on the host it simply runs there). On a GPU, ``repeat`` inside a
program runs its body once and replays the rest from a CUDA graph where it can
(``emulation/graph_replay.py``). With ``infeed_queue`` each
iteration takes the next element for this replica from the queue (``_next_element()``): a
tuple/list element is appended to the body's positional arguments after the loop-carried
values, a dict with string keys is passed as keyword arguments, anything else is one more
positional argument. Deviation: TensorFlow builds the body once even when it runs zero times,
so its check "The infeed queue has not been dequeued." cannot fail for a loop given a queue;
the emulator raises it when a loop given ``infeed_queue`` ran no iteration (nothing was
dequeued), which is the only way to reach that state eagerly.
"""

from __future__ import annotations

import sys

from ..core.convert import convert_to_tensor
from ..core.tensor import Tensor
from ..emulation import context, engine, graph_replay

__all__ = ["repeat", "while_loop"]


def _as_list(xs) -> list:
    if xs is None:
        return []
    return list(xs) if isinstance(xs, (list, tuple)) else [xs]


def _tensor(x):
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


def _check_queue(infeed_queue):
    if infeed_queue is not None and not callable(getattr(infeed_queue, "_next_element", None)):
        raise TypeError(f"infeed_queue must be an IPUInfeedQueue or None, got "
                        f"{type(infeed_queue).__name__}")


def _graph_mode(inputs) -> bool:
    """A loop built inside a TF1 graph (or on graph tensors) is traced, not run."""
    graph = sys.modules.get("ipu_gpu.graph")
    if graph is None:
        return False
    from ..graph import core, program

    return core.building() or program.is_symbolic(_as_list(inputs))


def _graph_outputs(values):
    in_types = [v.dtype for v in values]
    in_shapes = [tuple(v.shape) for v in values]
    return lambda tensors: _check_outputs(tensors, in_types, in_shapes)


def _check_outputs(tensors, in_types, in_shapes) -> list:
    """``tensors``, having checked them against the loop-carried values (TF's errors)."""
    out_types = [t.dtype for t in tensors]
    if out_types != in_types:
        raise TypeError(f"Mismatch between input types and output types for loop body: "
                        f"{[d.name for d in in_types]} vs {[d.name for d in out_types]}")
    for j, (t, shape) in enumerate(zip(tensors, in_shapes)):
        if tuple(t.shape) != shape:
            raise ValueError(f"loop body: output {j} must keep the shape of loop-carried value "
                             f"{j} {list(shape)}, got {list(t.shape)}")
    return tensors


def _loop(condition, body, inputs, infeed_queue, maximum_iterations):
    if condition is None and _graph_mode(inputs):
        from ..graph import GraphTensor, program

        values = [x if isinstance(x, GraphTensor) else _tensor(x) for x in _as_list(inputs)]
        return program.traced_repeat(maximum_iterations, body, values, infeed_queue,
                                     _graph_outputs(values))
    values = [_tensor(x) for x in _as_list(inputs)]
    in_types = [v.dtype for v in values]
    in_shapes = [tuple(v.shape) for v in values]
    ctx = context.current()
    program = None if ctx is None else ctx.program

    def check_cancelled():
        if program is not None and program.cancelled:
            program.check_cancelled()

    def fetch():
        return None if infeed_queue is None else infeed_queue._next_element()

    def apply(values, element):
        if infeed_queue is None:
            outputs = body(*values)
        elif isinstance(element, dict) and all(isinstance(k, str) for k in element):
            outputs = body(*values, **element)
        elif isinstance(element, (list, tuple)):
            outputs = body(*values, *element)
        else:
            outputs = body(*values, element)
        return _body_outputs(outputs, in_types, in_shapes)

    if condition is None:  # repeat: a static trip count, replayed from a CUDA graph on a GPU
        if maximum_iterations == 0 and infeed_queue is not None:
            raise ValueError("The infeed queue has not been dequeued.")
        return graph_replay.repeat(maximum_iterations, values, fetch, apply, check_cancelled)
    i = 0
    while maximum_iterations is None or i < maximum_iterations:
        check_cancelled()
        if not bool(condition(*values)):
            break
        values = apply(values, fetch())
        i += 1
    if infeed_queue is not None and i == 0:
        raise ValueError("The infeed queue has not been dequeued.")
    return values


def _body_outputs(outputs, in_types, in_shapes) -> list:
    if outputs is None:
        outputs = ()
    elif not isinstance(outputs, (list, tuple)):
        outputs = (outputs,)
    tensors = []
    seen_op = False
    for o in outputs:
        if o is None or engine.is_operation(o):
            seen_op = True
            continue
        if seen_op:
            raise ValueError("IPU loop body must return zero or more Tensor values followed "
                             "by zero or more Operations.")
        tensors.append(o if type(o) is Tensor else _tensor(o))
    return _check_outputs(tensors, in_types, in_shapes)


def _result(values):
    if not isinstance(values, list):  # traced in a graph: a graph tensor or operation
        return values
    if not values:
        return engine.Operation("while_loop")
    return values[0] if len(values) == 1 else values


def while_loop(condition, body, inputs=None, infeed_queue=None, maximum_iterations=None,
               use_while_v1=True):
    """Builds a while loop for IPUs.

    The set of loop-carried tensors corresponds to `inputs`. Both `condition` and `body`
    take the current value of the loop-carried tensors. `condition` must return a single
    boolean value that determines whether iteration continues. `body` must return an
    updated list of values for the loop-carried tensors (same dtypes and shapes), optionally
    followed by Operations.

    Args:
      condition: a Python function that builds the loop condition.
      body: a Python function that builds the loop body.
      inputs: a list of initial values passed into the loop, or None (equivalent to an empty
        list).
      infeed_queue: if not None, the IPUInfeedQueue from which data is consumed.
      maximum_iterations: if not None, the loop stops after this many iterations.
      use_while_v1: accepted for compatibility; it changes nothing here.

    Returns:
      The final values of the loop-carried tensors (a single value unwrapped; an Operation
      when there are none).

    Raises:
      TypeError: if body or condition has the wrong signature, or the body's output dtypes
        differ from the inputs' ("Mismatch between input types and output types for loop
        body").
      ValueError: if the body returns an Operation before a Tensor, changes a shape, or
        ``infeed_queue`` is not None and it has not been dequeued.
    """
    if not callable(condition):
        raise TypeError(f"while_loop: condition must be callable, got {condition!r}")
    if not callable(body):
        raise TypeError(f"while_loop: body must be callable, got {body!r}")
    if maximum_iterations is not None:
        maximum_iterations = int(maximum_iterations)
        if maximum_iterations < 0:
            raise ValueError(f"while_loop: maximum_iterations must be >= 0, got "
                             f"{maximum_iterations}")
    _check_queue(infeed_queue)
    values = _loop(condition, body, inputs, infeed_queue, maximum_iterations)
    return _result(values)


def repeat(n, body, inputs=None, infeed_queue=None, use_while_v1=True):
    """Builds a loop that executes a fixed number of iterations.

    The set of loop-carried tensors correspond to `inputs`. `body` must be a function that
    takes and returns the values of the loop-carried tensors.

    Args:
      n: the number of loop iterations
      body: a Python function that builds the loop body.
      inputs: a list of initial values passed into the loop or None (equivalent to an empty
        list).
      infeed_queue: if not None, the IPUInfeedQueue from which data is consumed.
      use_while_v1: accepted for compatibility; it changes nothing here.

    Returns:
      The final values of the loop-carried tensors (a single value unwrapped; an Operation
      when there are none).

    Raises:
      ValueError: if there is a type error.
      ValueError: if infeed_queue is not None and it has not been dequeued.
    """
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise TypeError(f"repeat: n must be an int, got {n!r}")
    n = int(n)
    if n < 0:
        raise ValueError(f"repeat: n must be >= 0, got {n}")
    if not callable(body):
        raise TypeError(f"repeat: body must be callable, got {body!r}")
    _check_queue(infeed_queue)
    values = _loop(None, body, inputs, infeed_queue, n)
    return _result(values)

