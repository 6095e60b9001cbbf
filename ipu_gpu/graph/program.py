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

import numpy as np

from ..core import nest
from ..core.convert import convert_to_tensor
from ..core.tape import GradientTape
from ..core.tensor import Tensor
from .core import GraphTensor, Operation, add_node, get_default_graph
from .nodes import placeholder
from .plan import Plan
from .session import _needs_tape, _Run

__all__ = ["cond", "control_dependencies", "is_symbolic", "traced_compile", "traced_repeat",
           "while_loop"]



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


def _tape_needed(tensors, ops) -> bool:
    """Whether evaluating ``tensors`` and ``ops`` reaches a gradients node (decided once,
    when a body is traced, not every iteration)."""
    return _needs_tape([*[t for t in tensors if isinstance(t, GraphTensor)], *ops])


class Body:
    """A traced body (a loop's, a program's, a branch's): ``tensors`` and ``ops`` evaluated
    with the operations ``inside`` computed afresh at each evaluation and the others' values
    taken from the enclosing run; on a tape when ``needs`` (the body differentiates).

    The operations an evaluation computes depend only on which graph tensors it starts with,
    so the first evaluation from a given set walks the graph and records a ``Plan`` that
    later evaluations (later iterations, later ``Session.run`` calls) replay; the plans are
    kept per set of given tensors and per graph size."""

    def __init__(self, graph, inside: set, tensors, ops, needs: bool):
        self.graph, self.inside, self.needs = graph, inside, needs
        self.tensors, self.ops = list(tensors), list(ops)
        self.plans: dict = {}

    def bind(self, outer: dict, feed_keys=()):
        """``evaluate(feed_values)``: one evaluation with ``feed_keys`` (graph tensors) given
        ``feed_values`` and the values of ``outer`` (an enclosing run's values) outside the
        body."""
        inside, graph, tensors = self.inside, self.graph, self.tensors
        base = {t: v for t, v in outer.items() if id(t.op) not in inside}
        base_ids = {id(v) for v in base.values()}
        base_kinds = _kinds(base.values())
        feed_keys = tuple(feed_keys)
        n_feeds = len(feed_keys)
        key = (frozenset(base.keys() | set(feed_keys)), len(graph._ops))
        plans, needs = self.plans, self.needs

        def go(run, feed_values):
            plan = plans.get(key)
            if plan is not None:
                if plan.tape_stable:
                    run.replay = _replay_key(plan, feed_values, n_feeds, base_ids,
                                             base_kinds)
                plan.run(run)
            else:
                run.order = []
                for op in self.ops:
                    run.compute(op)
                for t in tensors:
                    if isinstance(t, GraphTensor):
                        run.value(t)
                if len(plans) >= _MAX_PLANS:
                    plans.clear()
                plans[key] = Plan(run.order)
            values = run.values
            return [values[t] if isinstance(t, GraphTensor) else t for t in tensors]

        def evaluate(feed_values=()):
            values = dict(base)
            if feed_keys:
                values.update(zip(feed_keys, feed_values))
            run = _Run(values, graph, copy=False)
            if needs:
                with GradientTape(persistent=True) as tape:
                    run.tape = tape
                    return go(run, feed_values)
            return go(run, feed_values)
        return evaluate


_MAX_PLANS = 16  # sets of given tensors a body keeps plans for


def _kinds(values) -> tuple:
    """The types and dtypes of ``values`` (what an op's tape record depends on besides the
    wiring)."""
    return tuple((type(v), getattr(v, "dtype", None)) for v in values)


def _replay_key(plan, feed_values, n: int, base_ids: set, base_kinds: tuple):
    """The key a gradients node may keep the tape signature of this replay of ``plan`` under
    (``backward.gradient``): the plan and the kinds of the values it is given, when the ``n``
    fed values are distinct Tensors, none of them an outer value (which values are the same
    object decides the wiring a tape records); else None (the signature is computed)."""
    ids = {id(v) for v in feed_values}
    if len(ids) != n or not base_ids.isdisjoint(ids):
        return None
    for v in feed_values:
        if type(v) is not Tensor:
            return None
    return plan, base_kinds, tuple([v._value.dtype for v in feed_values])


def _outer_values(the_run) -> dict:
    return the_run.values


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

    def run(the_run, values_in, *_):
        current = list(values_in)
        evaluate = body_plan.bind(the_run.values, [*holders, *flat_holders])
        if infeed_queue is None:
            for _ in range(int(n)):
                current = evaluate(current)
            return current if current else []
        next_flat = getattr(infeed_queue, "_next_flat", None)
        if next_flat is None:  # another queue type: its nested element, flattened
            def next_flat():
                return nest.flatten(infeed_queue._next_element())
        for _ in range(int(n)):
            current = evaluate([*current, *next_flat()])
        return current if current else []
    body_plan = Body(graph, inside, tensors, ops, _tape_needed(tensors, ops))
    specs = [(_dtype(t), _shape(t)) for t in tensors]
    node = add_node(graph, "Repeat", "repeat", [values], run, specs, pass_run=True)
    _capture(node, graph, inside)
    if not node.outputs:
        return node
    return node.outputs[0] if len(node.outputs) == 1 else list(node.outputs)


def traced_compile(computation, inputs, device, num_shards=lambda: 1):
    """``ipu_compiler.compile`` in a graph: the computation's outputs as graph tensors of
    one ``IpuProgram`` node (a list, or a NoOp operation when it returns none); ``device()``
    gives the emulated device when the node runs, ``num_shards()`` the IPUs a replica of
    the program takes (a pipeline's)."""
    from ..emulation import engine

    graph = get_default_graph()
    start = len(graph._ops)
    result = computation(*inputs)
    structured = not _is_flat(result)
    if structured:
        tensors, ops = _structured_outputs(result), []
    else:
        tensors, ops = _split(result)
    inside = {id(op) for op in graph._ops[start:]}

    def run(the_run, *_):
        evaluate = body.bind(the_run.values)
        out = engine.run(device(), evaluate, num_shards=num_shards())
        return out if out else []
    body = Body(graph, inside, tensors, ops, _tape_needed(tensors, ops))
    specs = [(_dtype(t), _shape(t)) for t in tensors]
    node = add_node(graph, "IpuProgram", "cluster", [], run, specs,
                    control_inputs=[], pass_run=True)
    if not node.outputs:  # TF: a NoOp when no tensor comes out, whatever the structure
        return node
    if structured:
        return nest.pack_sequence_as(result, list(node.outputs))
    return list(node.outputs)


def _is_flat(outputs) -> bool:
    """TF's ``xla.is_flat``: None, one value, or a list/tuple holding no list, tuple or dict
    (everything else keeps its structure through ``compile``)."""
    if isinstance(outputs, dict):
        return False
    if isinstance(outputs, (list, tuple)):
        return not any(isinstance(o, (list, tuple, dict)) for o in outputs)
    return True


def _structured_outputs(outputs) -> list:
    """The leaves of a non-flat result (TF's ``_postprocess_non_flat_outputs``): tensors
    only, in ``nest.flatten`` order (dict keys sorted)."""
    leaves = []
    for o in nest.flatten(outputs):
        if isinstance(o, Operation) or getattr(type(o), "_ipu_operation", False):
            raise ValueError(
                "xla.compile does not support Operation as return value in non-flat output "
                "structure. You can set returned Operations as control dependencies of "
                "returned Tensors so Operations are triggered when Tensors are evaluated. "
                f'Operation found: "{getattr(o, "name", o)}"')
        if not isinstance(o, (GraphTensor, Tensor)):
            try:
                o = convert_to_tensor(o)
            except (TypeError, ValueError) as e:
                raise ValueError("XLA computation function return values must all either be "
                                 f'Operations or convertible to Tensors. Got error: "{e}"'
                                 ) from None
        leaves.append(o)
    return leaves


def _capture(node, graph, *insides) -> None:
    """The operations outside ``insides`` (id sets) whose outputs the inside operations read
    run before ``node`` (so each runs once per run, its value shared) and count as its inputs
    for ``gradients``."""
    inside = set().union(*insides)
    captured = []
    for op in graph._ops:
        if id(op) in inside:
            for t in op.inputs:
                if id(t.op) not in inside and t.op is not node and t.op not in captured:
                    captured.append(t.op)
    node.control_inputs.extend(captured)
    node.captured = [t for op in captured for t in op.outputs]


def _dtype(v):
    if isinstance(v, GraphTensor):
        return v._dtype
    return v.dtype if isinstance(v, Tensor) else nest.flatten(v)[0].dtype


def _shape(v):
    if isinstance(v, GraphTensor):
        return v.shape.as_list()
    return list(v.shape)


# ---- tf.cond and tf.while_loop ----------------------------------------------------------------
def _traced(graph, fn, *args):
    """(fn's outputs, the ids of the operations calling it made)."""
    start = len(graph._ops)
    out = fn(*args)
    return out, {id(op) for op in graph._ops[start:]}


def _as_outputs(out) -> tuple:
    """(flat outputs, the structure to pack them in)."""
    return nest.flatten(out), out


def cond(pred, true_fn=None, false_fn=None, strict=False, name=None):
    """``tf.cond``: ``true_fn()`` if ``pred`` else ``false_fn()``. With a graph-tensor
    predicate both branches are traced and the node runs the one the predicate picks, each
    run.

    Raises:
      TypeError: a branch is not callable.
      ValueError: the branches return different structures or dtypes (TF's checks)."""
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callable")
    if not isinstance(pred, GraphTensor):
        return true_fn() if bool(pred) else false_fn()
    graph = pred.graph
    t_out, t_inside = _traced(graph, true_fn)
    f_out, f_inside = _traced(graph, false_fn)
    t_flat, structure = _as_outputs(t_out)
    f_flat, _ = _as_outputs(f_out)
    if len(t_flat) != len(f_flat):
        raise ValueError("true_fn and false_fn arguments to tf.cond must have the same number, "
                         "type, and overall structure of return values.")
    for a, b in zip(t_flat, f_flat):
        if _dtype(a) != _dtype(b):
            raise ValueError(f"Outputs of true_fn and false_fn must have the same type: "
                             f"{_dtype(a)}, {_dtype(b)}")
    tensors_t = [t for t in t_flat if not isinstance(t, Operation)]
    tensors_f = [t for t in f_flat if not isinstance(t, Operation)]

    def run(the_run, p):
        take = bool(np.asarray(p.numpy() if hasattr(p, "numpy") else p))
        return (body_t if take else body_f).bind(the_run.values)() or []
    body_t = Body(graph, t_inside, tensors_t, [], _tape_needed(tensors_t, []))
    body_f = Body(graph, f_inside, tensors_f, [], _tape_needed(tensors_f, []))
    specs = [(_dtype(a), _merged_shape(a, b)) for a, b in zip(tensors_t, tensors_f)]
    node = add_node(graph, "Cond", name or "cond", [pred], run, specs, pass_run=True)
    _capture(node, graph, t_inside, f_inside)
    return nest.pack_sequence_as(structure, list(node.outputs)) if node.outputs else node


def while_loop(cond_fn, body, loop_vars, shape_invariants=None, parallel_iterations=10,
               back_prop=True, swap_memory=False, name=None, maximum_iterations=None,
               return_same_structure=False):
    """``tf.while_loop``: ``loop_vars = body(*loop_vars)`` while ``cond_fn(*loop_vars)``. On
    graph tensors, ``cond_fn`` and ``body`` are traced once on placeholders and the node
    loops at run time."""
    values = list(loop_vars) if isinstance(loop_vars, (list, tuple)) else [loop_vars]
    single = not isinstance(loop_vars, (list, tuple))
    if not any(isinstance(v, GraphTensor) for v in nest.flatten(values)):
        i = 0
        while (maximum_iterations is None or i < maximum_iterations) and bool(cond_fn(*values)):
            out = body(*values)
            values = list(out) if isinstance(out, (list, tuple)) else [out]
            i += 1
        return values[0] if single else values
    graph = _graph_of_values(values)
    holders = [placeholder(_dtype(v), _shape(v), name="while_input") for v in values]
    holder_ops = {id(h.op) for h in holders}
    (c_out, c_inside) = _traced(graph, cond_fn, *holders)
    (b_out, b_inside) = _traced(graph, body, *holders)
    c_inside, b_inside = c_inside | holder_ops, b_inside | holder_ops
    b_flat = list(b_out) if isinstance(b_out, (list, tuple)) else [b_out]

    def run(the_run, values_in):
        current = list(values_in)
        keep_going = cond_body.bind(the_run.values, holders)
        step = loop_body.bind(the_run.values, holders)
        i = 0
        while maximum_iterations is None or i < maximum_iterations:
            (keep,) = keep_going(current)
            if not bool(np.asarray(keep.numpy() if hasattr(keep, "numpy") else keep)):
                break
            current = step(current)
            i += 1
        return current
    cond_body = Body(graph, c_inside, [c_out], [], _tape_needed([c_out], []))
    loop_body = Body(graph, b_inside, b_flat, [], _tape_needed(b_flat, []))
    specs = [(_dtype(v), _shape(v)) for v in values]
    node = add_node(graph, "While", name or "while", [values], run, specs, pass_run=True)
    _capture(node, graph, c_inside, b_inside)
    outs = list(node.outputs)
    return outs[0] if single else outs


def _graph_of_values(values):
    for v in nest.flatten(values):
        if isinstance(v, GraphTensor):
            return v.graph
    return get_default_graph()


def _merged_shape(a, b):
    sa, sb = _shape(a), _shape(b)
    if sa is None or sb is None or len(sa) != len(sb):
        return None
    return [x if x == y else None for x, y in zip(sa, sb)]
