"""``name=`` of TF1's op functions in a graph (``tf.add(x, y, name="sum")``).

TF 1.15 names the node an op function makes after ``name`` within the current name scope
(made unique: ``sum``, ``sum_1``), and a function made of several nodes opens the name scope
``name`` for its inner nodes and gives its output node the scope's name (``xw_plus_b/MatMul``
feeding ``xw_plus_b``). ``named`` wraps a public function so that, when its ``name`` is given
while a graph is built (or its inputs are graph tensors), it runs inside the name scope
``name`` and the node of its output, when the call made one, takes the scope's name; so
``.name``, ``op.name``, ``get_tensor_by_name`` and ``get_operation_by_name`` see TF's names.
Eagerly, or without a ``name``, the function runs as it is.
"""

from __future__ import annotations

import functools
import inspect

from ...core import nest
from ...graph import core as _gcore

__all__ = ["install", "named"]

# nodes that keep their own names: a variable, a placeholder (their functions name them)
_KEEP_TYPES = frozenset({"VariableV2", "Placeholder", "PlaceholderWithDefault"})


def named(fn):
    """``fn`` naming its graph node after its ``name`` argument, as TF 1.15."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn
    names = [p.name for p in params]
    if "name" not in names or getattr(fn, "_names_node", False):
        return fn
    p = params[names.index("name")]
    index = (names.index("name") if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
             else None)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        name = kwargs.get("name")
        if name is None and index is not None and len(args) > index:
            name = args[index]
        if not name or not isinstance(name, str):
            return fn(*args, **kwargs)
        graph = _graph_of(args, kwargs)
        if graph is None:
            return fn(*args, **kwargs)
        return _named_call(graph, name, fn, args, kwargs)
    wrapper._names_node = True
    return wrapper


def _graph_of(args, kwargs):
    """The graph the call builds into (its graph tensors', else the default graph while one
    is built), or None for an eager call."""
    for x in nest.flatten([list(args), list(kwargs.values())]):
        if isinstance(x, _gcore.GraphTensor):
            return x.graph
    return _gcore.get_default_graph() if _gcore.building() else None


def _named_call(graph, name, fn, args, kwargs):
    start = len(graph._ops)
    with graph.name_scope(name) as scope:
        out = fn(*args, **kwargs)
    made = {id(op) for op in graph._ops[start:]}
    ops = list({id(t.op): t.op for t in nest.flatten(out)
                if isinstance(t, _gcore.GraphTensor) and id(t.op) in made}.values())
    if len(ops) == 1 and ops[0].type not in _KEEP_TYPES:
        rename(ops[0], scope.rstrip("/"))
    return out


def rename(op, new_name: str) -> None:
    """``op`` renamed ``new_name`` (a name the graph has handed out already), its old name
    given back to the graph."""
    g = op.graph
    if g._by_name.get(op.name) is op:
        del g._by_name[op.name]
    if g._names.get(op.name.lower()) == 1:
        del g._names[op.name.lower()]
    op.name = new_name
    g._by_name[new_name] = op


def install(namespace, skip=()) -> None:
    """Wraps, in the module or dict ``namespace``, every public function taking ``name``
    (but those in ``skip``: functions that name their node themselves, or whose name is
    a scope for several outputs)."""
    items = namespace if isinstance(namespace, dict) else vars(namespace)
    for key, value in list(items.items()):
        if (key.startswith("_") or key in skip or isinstance(value, type)
                or not inspect.isfunction(value)):
            continue
        items[key] = named(value)
