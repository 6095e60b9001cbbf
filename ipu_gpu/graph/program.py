"""IPU programs in a TF1 graph: ``ipu_compiler.compile`` and ``loops.repeat`` traced once at
graph construction and run by every ``Session.run`` (Graphcore's "build once, run many").

* ``traced_compile``: ``computation`` runs once, building graph nodes; one ``IpuProgram`` node
  holds them, and running it runs the traced nodes on every replica of the device of the
  enclosing ``ipu_scope`` (``emulation/engine.run``: replica contexts, per-replica variables,
  collectives), returning replica 0's outputs.
* ``traced_repeat``: the body is called once on placeholders standing for the loop-carried
  values and the infeed element; the ``Repeat`` node runs the body's nodes ``n`` times, each
  iteration a fresh evaluation fed with the previous iteration's values and the queue's next
  element (so feeds, random draws and variable updates happen per iteration).
* ``control_dependencies``: nodes made inside the block run after the given operations.
"""

from __future__ import annotations

import contextlib
import threading

from ..core import nest
from ..core.tape import GradientTape
from ..core.tensor import Tensor
from .core import GraphTensor, Operation, add_node, get_default_graph
from .nodes import placeholder
from .session import _needs_tape, _Run

__all__ = ["control_dependencies", "is_symbolic", "traced_compile", "traced_repeat"]

_local = threading.local()


def is_symbolic(values) -> bool:
    return any(isinstance(x, (GraphTensor, Operation)) for x in nest.flatten(list(values)))


@contextlib.contextmanager
def control_dependencies(control_inputs):
    """Nodes made inside the block run after ``control_inputs`` (operations or tensors);
    None clears the dependencies."""
    graph = get_default_graph()
    previous = list(graph._control)
    if control_inputs is None:
        graph._control = []
    else:
        graph._control = previous + [x.op if isinstance(x, GraphTensor) else x
                                     for x in control_inputs
                                     if isinstance(x, (GraphTensor, Operation))]
    try:
        yield
    finally:
        graph._control = previous


def _split(outputs):
    """(tensors, operations) of what a body or computation returned."""
    if outputs is None:
        return [], []
    items = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    tensors, ops = [], []
    for o in items:
        if isinstance(o, Operation) or getattr(type(o), "_ipu_operation", False):
            ops.append(o)
        elif o is not None:
            tensors.append(o)
    return tensors, [o for o in ops if isinstance(o, Operation)]


def _inner_run(outer_values, inside: set, feeds: dict, graph, tensors, ops):
    """One evaluation of ``tensors`` and ``ops``: values of nodes outside ``inside`` are
    reused from the outer run, those inside computed afresh."""
    seed = {t: v for t, v in outer_values.items() if id(t.op) not in inside}
    seed.update(feeds)
    run = _Run(seed, graph)
    fetches = [*[t for t in tensors if isinstance(t, GraphTensor)], *ops]

    def go():
        for op in ops:
            run.compute(op)
        return [run.value(t) if isinstance(t, GraphTensor) else t for t in tensors]
    if _needs_tape(fetches):
        with GradientTape(persistent=True) as tape:
            run.tape = tape
            return go()
    return go()


def traced_repeat(n, body, inputs, infeed_queue, apply_outputs):
    """``loops.repeat`` in a graph: returns the loop's outputs as graph tensors (or a
    NoOp operation when it carries none). ``apply_outputs(outputs)`` checks the body's
    outputs against the inputs (TF's errors) and returns the tensors."""
    graph = get_default_graph()
    start = len(graph._ops)
    values = list(inputs)
    holders = [placeholder(_dtype(v), _shape(v), name="loop_input") for v in values]
    element_holders = None
    if infeed_queue is not None:
        spec = infeed_queue._source.spec if getattr(infeed_queue, "_source", None) else None
        if spec is None:
            infeed_queue._ensure_source() if hasattr(infeed_queue, "_ensure_source") else None
            spec = infeed_queue._source.spec
        leaves = [placeholder(d, list(s), name="infeed") for s, d in zip(spec.shapes,
                                                                        spec.dtypes)]
        element_holders = nest.pack_sequence_as(spec.structure, leaves)
    saved = list(graph._control)
    graph._control = []
    try:
        if element_holders is None:
            outputs = body(*holders)
        elif isinstance(element_holders, dict):
            outputs = body(*holders, **element_holders)
        elif isinstance(element_holders, (list, tuple)):
            outputs = body(*holders, *element_holders)
        else:
            outputs = body(*holders, element_holders)
    finally:
        graph._control = saved
    tensors, ops = _split(outputs)
    tensors = apply_outputs(tensors)
    inside = {id(op) for op in graph._ops[start:]}
    flat_holders = nest.flatten(element_holders) if element_holders is not None else []

    def run(values_in, *_):
        current = list(values_in)
        outer = _current_outer()
        for _ in range(int(n)):
            feeds = dict(zip(holders, current))
            if infeed_queue is not None:
                element = infeed_queue._next_element()
                feeds.update(zip(flat_holders, nest.flatten(element)))
            current = _inner_run(outer, inside, feeds, graph, tensors, ops)
        return current if current else []
    specs = [(_dtype(t), _shape(t)) for t in tensors]
    node = add_node(graph, "Repeat", "repeat", [values], run, specs)
    _track_outer(node)
    if not node.outputs:
        return node
    return node.outputs[0] if len(node.outputs) == 1 else list(node.outputs)


def traced_compile(computation, inputs, device):
    """``ipu_compiler.compile`` in a graph: the computation's outputs as graph tensors of
    one ``IpuProgram`` node (a list, or a NoOp operation when it returns none); ``device()``
    gives the emulated device when the node runs."""
    from ..emulation import engine

    graph = get_default_graph()
    start = len(graph._ops)
    result = computation(*inputs)
    if isinstance(result, dict):
        raise NotImplementedError("ipu_compiler.compile in a graph: a dict of outputs is not "
                                  "emulated yet; return a list")
    tensors, ops = _split(result)
    inside = {id(op) for op in graph._ops[start:]}

    def run(*_):
        outer = _current_outer()

        def replica():
            return _inner_run(outer, inside, {}, graph, tensors, ops)
        out = engine.run(device(), replica)
        return out if out else []
    specs = [(_dtype(t), _shape(t)) for t in tensors]
    node = add_node(graph, "IpuProgram", "cluster", [], run, specs,
                    control_inputs=[])
    _track_outer(node)
    if not node.outputs:
        return node
    return list(node.outputs)


# The outer run's values reach a program's or loop's inner runs through the node's compute
# (``_RunValues``); ``_track_outer`` wraps the compute to remember them per thread.
def _track_outer(node):
    compute = node.compute

    def with_outer(values):
        previous = getattr(_local, "outer", None)
        _local.outer = values.run.values
        try:
            return compute(values)
        finally:
            _local.outer = previous
    node.compute = with_outer


def _current_outer() -> dict:
    return dict(getattr(_local, "outer", None) or {})


def _dtype(v):
    if isinstance(v, GraphTensor):
        return v._dtype
    return v.dtype if isinstance(v, Tensor) else nest.flatten(v)[0].dtype


def _shape(v):
    if isinstance(v, GraphTensor):
        return v.shape.as_list()
    return list(v.shape)
