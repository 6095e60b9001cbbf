"""The TF1 graph constructs that are not registered ops: placeholders, graph variables and
their initializers and assignments, ``gradients``, ``group`` and ``no_op`` (the ``tf.train``
optimizers that build on them are in ``optimizers.py``).

A graph variable (``tf.compat.v1.Variable`` inside a graph, or with a graph tensor as its
initial value) is a graph tensor whose value is an eager ``Variable``, made when its
initializer first runs: ops read it, the run's tape watches it, and reading it before
``sess.run(initializer)`` raises FailedPreconditionError, as in TF.
"""

from __future__ import annotations

from ..core import dtypes, nest
from ..core.convert import convert_to_tensor
from ..core.tensor import Tensor, Variable
from ..errors import FailedPreconditionError, InvalidArgumentError
from . import backward
from .core import Graph, GraphTensor, Operation, add_node, building, get_default_graph

__all__ = ["GraphVariable", "gradients", "global_variables", "global_variables_initializer",
           "group", "no_op", "placeholder", "placeholder_with_default", "trainable_variables",
           "variables_initializer"]

GLOBAL_VARIABLES = "variables"
TRAINABLE_VARIABLES = "trainable_variables"


def _graph_for(*values) -> Graph:
    for v in nest.flatten(list(values)):
        if isinstance(v, GraphTensor):
            return v.graph
    return get_default_graph()


# ---- placeholders ------------------------------------------------------------------------
def placeholder(dtype, shape=None, name=None) -> GraphTensor:
    """A graph tensor whose value every ``Session.run`` that needs it takes from its
    ``feed_dict`` (``tf.compat.v1.placeholder``).

    Raises:
      InvalidArgumentError (at run time): it is not fed."""
    d = dtypes.as_dtype(dtype, "placeholder: dtype")
    shape = None if shape is None else list(shape)
    graph = get_default_graph()
    holder = {}

    def unfed():
        t = holder["t"]
        dims = "<unknown>" if shape is None else "[" + ",".join(
            "?" if s is None else str(s) for s in shape) + "]"
        raise InvalidArgumentError(f"You must feed a value for placeholder tensor "
                                   f"'{t.op.name}' with dtype {d.name} and shape {dims}")
    op = add_node(graph, "Placeholder", name or "Placeholder", [], unfed,
                  [(d, shape if shape is not None else None)])
    op.placeholder = True
    holder["t"] = op.outputs[0]
    return op.outputs[0]


def placeholder_with_default(input, shape, name=None) -> GraphTensor:  # noqa: A002
    """A placeholder that gives ``input`` when it is not fed."""
    value = convert_to_tensor(input)
    graph = get_default_graph()
    op = add_node(graph, "PlaceholderWithDefault", name or "PlaceholderWithDefault", [],
                  lambda: value, [(value.dtype, list(shape) if shape is not None else None)])
    op.records_nothing = True
    return op.outputs[0]


# ---- variables ---------------------------------------------------------------------------
class GraphVariable(GraphTensor):
    """A TF1 graph variable. Its value in a run is an eager ``Variable`` (made by the first
    run of ``initializer``); ``assign``/``assign_add``/``assign_sub`` are graph ops."""

    def __init__(self, graph: Graph, initial_value, trainable=True, name=None, dtype=None,
                 collections=None):
        self._init_value = initial_value
        self._variable = None
        self._trainable = bool(trainable)
        spec_dtype, spec_shape = _spec(initial_value, dtype)
        op = Operation(graph, "VariableV2", graph.unique_name(name or "Variable"), [],
                       self._read)
        op.records_nothing = True
        super().__init__(op, 0, spec_dtype, spec_shape)
        op.outputs = [self]
        graph._add(op)
        self._cast = dtype
        saved, graph._control = graph._control, []  # TF makes initializers outside any
        try:  # control_dependencies block (init_scope)
            init = add_node(graph, "Assign", f"{op.name}/Assign", [initial_value],
                            self._initialize, [])
        finally:
            graph._control = saved
        self.initializer = init
        for key in _collections(collections, self._trainable):
            graph.add_to_collection(key, self)

    def _read(self, values=None):
        if self._variable is None:
            raise FailedPreconditionError(
                f"Attempting to use uninitialized value {self.op.name}\n"
                f"\t [[{{{{node {self.op.name}/read}}}}]]")
        return [self._variable]

    def _initialize(self, value):
        if self._cast is not None:
            from ..ops.math import cast

            value = cast(value, self._cast)
        if self._variable is None:
            self._variable = Variable(value, trainable=self._trainable, name=self.op.name)
        else:
            self._variable.assign(value)
        return []

    @property
    def trainable(self) -> bool:
        return self._trainable

    def initialized_value(self):
        return self._init_value

    def _assign(self, how, value, name):
        graph = self.graph

        def run(var, v):
            getattr(var, how)(v)
            return var.read_value()
        return add_node(graph, {"assign": "Assign", "assign_add": "AssignAdd",
                                "assign_sub": "AssignSub"}[how], name or how, [self, value],
                        run, [(self._dtype, self.shape.as_list())]).outputs[0]

    def assign(self, value, use_locking=None, name=None, read_value=True):
        return self._assign("assign", value, name)

    def assign_add(self, delta, use_locking=None, name=None, read_value=True):
        return self._assign("assign_add", delta, name)

    def assign_sub(self, delta, use_locking=None, name=None, read_value=True):
        return self._assign("assign_sub", delta, name)

    def read_value(self):
        from ..ops.math import identity

        return identity(self)

    def value(self):
        return self.read_value()

    def __repr__(self) -> str:
        return (f"<tf.Variable '{self.op.name}:0' shape={self.shape} "
                f"dtype={self._dtype.name}_ref>")


def _spec(value, dtype):
    if isinstance(value, GraphTensor):
        d = value._dtype if dtype is None else dtypes.as_dtype(dtype, "Variable: dtype")
        return d, value.shape.as_list()
    t = convert_to_tensor(value, dtype=None if dtype is None else dtypes.as_dtype(dtype))
    return t.dtype, list(t.shape)


def _collections(collections, trainable) -> list:
    """TF's rule: ``collections`` (default: the global variables), plus the trainable
    variables for a trainable variable."""
    keys = [GLOBAL_VARIABLES] if collections is None else list(collections)
    if trainable and TRAINABLE_VARIABLES not in keys:
        keys.append(TRAINABLE_VARIABLES)
    return list(dict.fromkeys(keys))


def make_variable(initial_value, trainable=True, name=None, dtype=None, collections=None):
    """``tf.compat.v1.Variable``: a graph variable inside a graph (or with a graph-tensor
    initial value), else an eager Variable recorded in the default graph's collections
    (``collections``, default the global variables, and the trainable ones when
    ``trainable``)."""
    if callable(initial_value):
        initial_value = initial_value()
    if building() or isinstance(initial_value, GraphTensor):
        return GraphVariable(_graph_for(initial_value), initial_value, trainable, name, dtype,
                             collections)
    v = Variable(initial_value, trainable=trainable, name=name, dtype=dtype)
    graph = get_default_graph()
    for key in _collections(collections, trainable):
        graph.add_to_collection(key, v)
    return v


def global_variables(scope=None) -> list:
    return get_default_graph().get_collection(GLOBAL_VARIABLES, scope)


def trainable_variables(scope=None) -> list:
    return get_default_graph().get_collection(TRAINABLE_VARIABLES, scope)


def variables_initializer(var_list, name="init") -> Operation:
    """One operation running the initializers of ``var_list``'s graph variables."""
    return group(*[v.initializer for v in var_list if isinstance(v, GraphVariable)],
                 name=name)


def global_variables_initializer() -> Operation:
    return variables_initializer(global_variables())


# ---- grouping ------------------------------------------------------------------------------
def group(*inputs, name=None) -> Operation:
    """An operation that runs ``inputs`` (operations or tensors) and has no output."""
    deps = []
    for x in nest.flatten(list(inputs)):
        if isinstance(x, GraphTensor):
            deps.append(x.op)
        elif isinstance(x, Operation):
            deps.append(x)
    graph = deps[0].graph if deps else get_default_graph()
    op = add_node(graph, "NoOp", name or "group_deps", [], lambda: [], [],
                  control_inputs=deps)
    op.records_nothing = True
    return op


def no_op(name=None) -> Operation:
    op = add_node(get_default_graph(), "NoOp", name or "NoOp", [], lambda: [], [])
    op.records_nothing = True
    return op


# ---- gradients -----------------------------------------------------------------------------
def gradients(ys, xs, grad_ys=None, name="gradients", stop_gradients=None,
              unconnected_gradients="none", **kwargs) -> list:
    """Symbolic d(sum of ``ys``)/d``xs`` (``tf.gradients``): computed in a run by the run's
    GradientTape, on the forward values that run computed; for an ``xs`` the ``ys`` do not
    depend on, None (``unconnected_gradients="none"``) or zeros (``"zero"``). Gradients are
    dense (TF 1 gives a gather's as IndexedSlices). ``stop_gradients`` are held constant:
    the run's tape gives total derivatives, from which the paths through them are taken
    away (a path counted at the stop tensor nearest the ``ys``).

    Raises:
      ValueError: an unknown ``unconnected_gradients`` (TF's enum message)."""
    from ..core.tape import UnconnectedGradients

    unconnected = UnconnectedGradients(getattr(unconnected_gradients, "value",
                                               unconnected_gradients))
    stops = [t for t in nest.flatten([] if stop_gradients is None else [stop_gradients])
             if isinstance(t, GraphTensor)]
    ys_list = ys if isinstance(ys, (list, tuple)) else [ys]
    xs_list = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    grad_list = (grad_ys if isinstance(grad_ys, (list, tuple)) else [grad_ys]
                 if grad_ys is not None else [None] * len(ys_list))
    graph = _graph_for(ys_list, xs_list)
    connected = [_depends(ys_list, x, stops) for x in xs_list]
    stops = [t for t in stops if _depends(ys_list, t)]
    # stop j below stop i (i computed from j): i's share is taken away first
    below = [[_depends([stops[i]], stops[j]) and i != j for j in range(len(stops))]
             for i in range(len(stops))]
    targets = [x for x, c in zip(xs_list, connected) if c]

    def unconnected_value(x):
        if unconnected is UnconnectedGradients.NONE:
            return None
        from ..ops.creation import zeros_like

        return zeros_like(x)
    if not targets:
        return [unconnected_value(x) for x in xs_list]
    n_g = len(grad_list) if grad_ys is not None else 0
    plans: dict = {}  # backward plans by tape signature (backward.py)

    def run(the_run, *values):
        n_y, n_x = len(ys_list), len(targets)
        y_vals, x_vals = values[:n_y], values[n_y:n_y + n_x]
        g_vals = values[n_y + n_x:n_y + n_x + n_g]
        s_vals = values[n_y + n_x + n_g:]
        tape = the_run.tape
        seeds = list(g_vals) if grad_ys is not None else None
        out = backward.gradient(tape, list(y_vals), list(x_vals), seeds, plans,
                                the_run.replay)
        if s_vals:
            itself = [next((i for i, t in enumerate(stops) if t is x), None) for x in targets]
            out = _without_stops(tape, list(y_vals), seeds, list(x_vals), list(s_vals),
                                 below, out, itself)
        return [g if type(g) is Tensor else convert_to_tensor(g) if g is not None
                else _zeros(x) for g, x in zip(out, x_vals)]
    inputs = [*ys_list, *targets, *([g for g in grad_list] if grad_ys is not None else []),
              *stops]
    specs = [(x._dtype, x.shape.as_list()) if isinstance(x, GraphTensor)
             else (x.dtype, list(x.shape)) for x in targets]
    op = add_node(graph, "Gradients", name, inputs, run, specs, pass_run=True)
    op.needs_tape = True
    outs = iter(op.outputs)
    return [next(outs) if c else unconnected_value(x) for x, c in zip(xs_list, connected)]


def _without_stops(tape, ys, seeds, xs, stop_values, below, totals, itself) -> list:
    """The gradients ``totals`` of ``ys`` for ``xs`` less the paths through the stop tensors:
    each path is counted at its first stop tensor from ``ys``. ``d(ys)/d(stop)`` along paths
    through no other stop (``blocked``) is found for the stop tensors nearest ``ys`` first,
    then ``totals - sum over stops of blocked(stop) . d(stop)/d(xs)`` (an ``xs`` that is a
    stop tensor itself, ``itself``, keeps its own share)."""
    def vjp(target, source, seed):
        g = tape.gradient(target, source, output_gradients=seed)
        return None if g is None else convert_to_tensor(g)

    def minus(a, b):
        if b is None:
            return a
        return -b if a is None else a - b
    blocked, pending = {}, list(range(len(stop_values)))
    while pending:  # a stop is ready once every stop computed from it is done
        i = next(i for i in pending
                 if all(j in blocked for j in pending + list(blocked) if below[j][i]))
        pending.remove(i)
        g = vjp(ys, stop_values[i], seeds)
        for j, b in blocked.items():
            if below[j][i] and b is not None:
                g = minus(g, vjp(stop_values[j], stop_values[i], b))
        blocked[i] = g
    out = []
    for x, total, own in zip(xs, totals, itself):
        g = None if total is None else convert_to_tensor(total)
        for i, b in blocked.items():
            if b is not None and i != own:
                g = minus(g, vjp(stop_values[i], x, b))
        out.append(g)
    return out


def _zeros(x):
    from ..ops.creation import zeros_like

    return zeros_like(x)


_NO_GRADIENT = frozenset({"stop_gradient", "StopGradient"})


def _depends(ys, x, stops=()) -> bool:
    """Whether any of ``ys`` is computed from ``x`` (a graph tensor or an eager Variable),
    along paths through none of the graph tensors ``stops`` and no ``stop_gradient``."""
    target_op = x.op if isinstance(x, GraphTensor) else None
    stopped = {id(t) for t in stops}
    seen, todo = set(), [y.op for y in ys if isinstance(y, GraphTensor)
                         and (id(y) not in stopped or y is x)]
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op is target_op:
            return True
        if op.type in _NO_GRADIENT:  # TF's gradients do not go through it
            continue
        for leaf in [*nest.flatten(list(op.inputs_structure)), *getattr(op, "captured", ())]:
            if leaf is x:
                return True
            if isinstance(leaf, GraphTensor) and id(leaf) not in stopped:
                todo.append(leaf.op)
    return False


def is_graph_value(x) -> bool:
    return isinstance(x, (GraphTensor, Operation))
