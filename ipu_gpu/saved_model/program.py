"""Traced programs as data: the nodes a function recorded in a TF1 graph, kept as JSON (one
entry per node: the registered op or ipu_gpu function it calls, its inputs and static
arguments) and arrays (constants, frozen or saved variables), and run again by calling the
same ops eagerly, in the order they were recorded.

A node can be written when it calls a registered op (``core/registry.REGISTRY``) or an
ipu_gpu function reachable by its module and qualified name, with arguments that are graph
tensors, arrays, variables, numbers, strings, dtypes, shapes, slices, enums or lists,
tuples and dicts of those. Anything else (a user's Python function or lambda, a bound method,
a loop or cond with traced bodies) raises ``NotPortable``, and callers fall back to keeping
the traced graph in the process (``LiveProgram``).
"""

from __future__ import annotations

import contextlib
import enum
import importlib
import inspect

import numpy as np

from ..core import registry
from ..core.spec import TensorShape
from ..core.tensor import Tensor, Variable, wrap

__all__ = ["LiveProgram", "NotPortable", "PortableProgram", "encode_graph", "encode_program"]


@contextlib.contextmanager
def tracing():
    """Record into graphs inside the block, even while a Session runs (which suspends
    graph building: ``graph.core.eager_scope``)."""
    from ..graph import core

    saved = getattr(core._local, "eager", 0)
    core._local.eager = 0
    try:
        yield
    finally:
        core._local.eager = saved


class NotPortable(Exception):
    """A traced node that cannot be written as data (the reason says which)."""


# ---- writing ----------------------------------------------------------------------------------
class _Encoder:
    """Encodes node arguments; arrays go to ``arrays`` (``c<k>``), variables to ``variables``
    (frozen: their value is a constant)."""

    def __init__(self, placeholders: dict, freeze: bool, graph_variables: bool = False):
        self.placeholders = placeholders  # id(placeholder op) -> index
        self.freeze = freeze
        self.graph_variables = graph_variables  # keep TF1 graph variables themselves
        self.node_index: dict = {}  # id(op) -> index in the node list
        self.arrays: dict = {}
        self.variables: list = []  # the Variables referenced (not frozen)

    def array(self, a, kind: str) -> dict:
        """``kind``: how it is given back: "t" a Tensor, "n" an array, "g" a numpy scalar."""
        key = f"c{len(self.arrays)}"
        a = np.array(a, object) if isinstance(a, bytes) else np.asarray(a)  # scalar string
        if a.dtype == object:  # tf.string: the bytes end to end and each one's length
            items = a.reshape(-1).tolist()
            self.arrays[key] = np.frombuffer(b"".join(items), np.uint8)
            lengths = f"c{len(self.arrays)}"
            self.arrays[lengths] = np.array([len(v) for v in items], np.int64).reshape(a.shape)
            return {"a": key, "k": kind, "s": lengths}
        self.arrays[key] = a
        return {"a": key, "k": kind}

    def variable(self, v: Variable) -> dict:
        if self.freeze:
            return self.array(v.numpy(), "t")
        for i, known in enumerate(self.variables):
            if known is v:
                return {"v": i}
        self.variables.append(v)
        return {"v": len(self.variables) - 1}

    def tensor_ref(self, t) -> dict:
        from ..graph.nodes import GraphVariable

        if id(t.op) in self.placeholders:
            return {"p": self.placeholders[id(t.op)]}
        if isinstance(t, GraphVariable):
            return self.variable(t if self.graph_variables else _graph_variable_value(t))
        if id(t.op) not in self.node_index:
            raise NotPortable(f"node {t.op.name!r} ({t.op.type}) is not part of the program")
        return {"t": [self.node_index[id(t.op)], t.value_index]}

    def encode(self, x):
        from ..graph.core import GraphTensor

        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, (int, float)) and not isinstance(x, enum.Enum):
            return x
        if isinstance(x, GraphTensor):
            return self.tensor_ref(x)
        if isinstance(x, Variable):
            return self.variable(x)
        if isinstance(x, Tensor):
            return self.array(x.numpy(), "t")
        if isinstance(x, np.ndarray):
            return self.array(x, "n")
        if isinstance(x, np.generic):
            return self.array(x, "g")
        if isinstance(x, np.dtype):
            return {"dtype": x.name}
        if isinstance(x, type) and issubclass(x, np.generic):
            return {"dtype": np.dtype(x).name}
        if isinstance(x, TensorShape):
            return {"shape": None if x.rank is None else x.as_list()}
        if isinstance(x, slice):
            return {"slice": [self.encode(x.start), self.encode(x.stop), self.encode(x.step)]}
        if x is Ellipsis:
            return {"ellipsis": True}
        if isinstance(x, enum.Enum):
            return {"enum": _qualified(type(x)), "name": x.name}
        if isinstance(x, list):
            return [self.encode(v) for v in x]
        if isinstance(x, tuple):
            return {"tuple": [self.encode(v) for v in x]}
        if isinstance(x, dict):
            if not all(isinstance(k, str) for k in x):
                raise NotPortable(f"a dict argument with keys that are not strings: {x!r}")
            return {"dict": [[k, self.encode(v)] for k, v in x.items()]}
        if callable(x):
            return {"fn": _qualified(x)}
        raise NotPortable(f"an argument of type {type(x).__name__} cannot be written")


def _graph_variable_value(t) -> Variable:
    """The eager Variable of a TF1 graph variable (FailedPreconditionError before its
    initializer ran, as reading it in a run would)."""
    return t._read()[0]


def _qualified(obj) -> str:
    """``module:qualname`` of an ipu_gpu function or class that importing finds again."""
    module = getattr(obj, "__module__", None) or ""
    qualname = getattr(obj, "__qualname__", None) or ""
    if not module.startswith("ipu_gpu") or "<" in qualname or not qualname:
        raise NotPortable(f"{obj!r} is not an ipu_gpu function or class reachable by name")
    if _resolve(f"{module}:{qualname}") is not obj:
        raise NotPortable(f"{module}.{qualname} does not name {obj!r}")
    return f"{module}:{qualname}"


def _resolve(name: str):
    module, qualname = name.split(":", 1)
    if not module.startswith("ipu_gpu"):
        raise ValueError(f"ipu_gpu program: {name!r} is not an ipu_gpu name")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _call_of(op):
    """("op", registry name, static kwargs) or ("function", fn, None) for a recorded node."""
    kernel = op.kernel
    if kernel is None:
        raise NotPortable(f"node {op.name!r} ({op.type}) has no kernel")
    if hasattr(op, "const_value"):  # graph.core._const_node: a named constant
        return "const", None, None
    if op.type == "NoOp" and not op.outputs and not kernel.template:  # group, no_op
        return "group", None, None
    if op.type == "PlaceholderWithDefault" and not kernel.template:
        return "default", None, {"shape": _shape_list(op.outputs[0])}
    if op.type in _ASSIGNS and _assigns_variable(op):  # GraphVariable._assign
        return "assign", _ASSIGNS[op.type], None
    if isinstance(kernel.fn, registry.Op) and registry.REGISTRY.get(kernel.fn.name) is kernel.fn:
        return "op", kernel.fn.name, kernel.kwargs or {}
    if not kernel.pass_run:  # graph.core.record_function: lambda a, k: fn(*a, **k)
        fn = inspect.getclosurevars(kernel.fn).nonlocals.get("fn")
        code = getattr(kernel.fn, "__code__", None)
        if fn is not None and code is not None and code.co_varnames[:2] == ("a", "k"):
            return "function", _qualified(fn), None
    raise NotPortable(f"node {op.name!r} ({op.type}) runs Python code that cannot be written")


_ASSIGNS = {"Assign": "assign", "AssignAdd": "assign_add", "AssignSub": "assign_sub"}


def _assigns_variable(op) -> bool:
    from ..graph.nodes import GraphVariable

    return (len(op.kernel.template) == 2 and isinstance(op.kernel.template[0], GraphVariable)
            and len(op.outputs) == 1)


def _shape_list(t):
    return None if t.shape.rank is None else t.shape.as_list()


def _default_value(op):
    """The value a ``placeholder_with_default`` node gives when it is not fed."""
    value = inspect.getclosurevars(op.kernel.fn).nonlocals.get("value")
    if value is None:
        raise NotPortable(f"node {op.name!r} ({op.type}) has no default value to write")
    return value


def needed_ops(outputs, stop: set) -> list:
    """The operations computing ``outputs`` (graph tensors or operations), data and control
    inputs followed, stopping at the operations in ``stop`` (ids); in graph order."""
    from ..graph.core import GraphTensor, Operation

    seen, order, stack = set(), [], []
    for o in outputs:
        if isinstance(o, GraphTensor):
            stack.append(o.op)
        elif isinstance(o, Operation):
            stack.append(o)
    graph = None
    while stack:
        op = stack.pop()
        if id(op) in seen or id(op) in stop:
            continue
        seen.add(id(op))
        graph = op.graph
        order.append(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    if graph is None:
        return []
    position = {id(op): i for i, op in enumerate(graph._ops)}
    return sorted(order, key=lambda op: position.get(id(op), -1))


def encode_program(placeholders: list, groups: dict, freeze: bool, skip=()):
    """(header, arrays, variables) of the program computing each group of ``groups`` (name ->
    list of graph tensors, operations or constants) from ``placeholders`` (graph tensors);
    the operations in ``skip`` (outfeed enqueues: the caller takes their inputs) are left out.

    Raises:
      NotPortable: a node the program needs cannot be written."""
    from ..graph.core import GraphTensor, Operation
    from ..graph.nodes import GraphVariable

    enc = _Encoder({id(p.op): i for i, p in enumerate(placeholders)}, freeze)
    stop = set(enc.placeholders) | {id(op) for op in skip}
    roots = [x for group in groups.values() for x in group]
    nodes = []
    for op in needed_ops(roots, stop):
        if isinstance(op.outputs[0] if op.outputs else None, GraphVariable):
            continue  # read where used (tensor_ref)
        if getattr(op, "placeholder", False):
            raise NotPortable(f"placeholder {op.name!r} is not an input of the program")
        entry = _entry(enc, op)
        enc.node_index[id(op)] = len(nodes)
        nodes.append(entry)

    def ref(x):
        if isinstance(x, Operation):
            return {"op": enc.node_index[id(x)]}
        if isinstance(x, GraphTensor):
            return enc.tensor_ref(x)
        return enc.encode(x)

    header = {"placeholders": [_spec_json(p) for p in placeholders],
              "nodes": nodes,
              "groups": {name: [ref(x) for x in group] for name, group in groups.items()}}
    header["variables"] = [{"name": _variable_name(v, i), "dtype": v.dtype.name,
                            "shape": list(v.shape)} for i, v in enumerate(enc.variables)]
    return header, enc.arrays, enc.variables


def _entry(enc, op) -> dict:
    """The JSON entry of ``op`` (its control inputs already written)."""
    kind, target, kwargs = _call_of(op)
    inputs = ([op.const_value] if kind == "const" else [_default_value(op)]
              if kind == "default" else list(op.kernel.template))
    entry = {"name": op.name, "call": kind, "target": target,
             "inputs": enc.encode(inputs), "kwargs": enc.encode(dict(kwargs or {})),
             "outputs": len(op.outputs)}
    control = [enc.node_index[id(c)] for c in op.control_inputs if id(c) in enc.node_index]
    if control:
        entry["control"] = control
    return entry


def encode_graph(graph, groups: dict):
    """(header, arrays, variables) of every operation of ``graph`` that can be written (with
    all it depends on), for a TF1 SavedModel: the placeholders are the graph's own, the
    variables the graph variables (or eager Variables) read; ``groups`` (name -> graph
    tensors or operations) must be writable.

    Raises:
      NotPortable: an operation of ``groups`` cannot be written (or depends on one)."""
    from ..graph.core import GraphTensor, Operation
    from ..graph.nodes import GraphVariable

    placeholders = [op.outputs[0] for op in graph._ops if getattr(op, "placeholder", False)]
    enc = _Encoder({id(p.op): i for i, p in enumerate(placeholders)}, False, True)
    nodes, failed = [], {}
    for op in graph._ops:
        if id(op) in enc.placeholders or isinstance(op.outputs[0] if op.outputs else None,
                                                     GraphVariable):
            continue
        blocked = next((failed[id(x)] for x in [*(t.op for t in op.inputs),
                                                *op.control_inputs] if id(x) in failed), None)
        if blocked is not None:
            failed[id(op)] = f"{blocked} (needed by node {op.name!r})"
            continue
        arrays, variables = len(enc.arrays), len(enc.variables)
        try:
            entry = _entry(enc, op)
        except NotPortable as e:
            for key in list(enc.arrays)[arrays:]:
                del enc.arrays[key]
            del enc.variables[variables:]
            failed[id(op)] = str(e)
            continue
        enc.node_index[id(op)] = len(nodes)
        nodes.append(entry)

    def ref(x):
        op = x if isinstance(x, Operation) else x.op if isinstance(x, GraphTensor) else None
        if op is not None and id(op) in failed:
            raise NotPortable(failed[id(op)])
        if isinstance(x, Operation):
            return {"op": enc.node_index[id(x)]}
        return enc.tensor_ref(x) if isinstance(x, GraphTensor) else enc.encode(x)

    header = {"placeholders": [_spec_json(p) for p in placeholders], "nodes": nodes,
              "groups": {name: [ref(x) for x in group] for name, group in groups.items()}}
    header["variables"] = [{"name": _variable_name(v, i), "dtype": dtype_of(v).name,
                            "shape": shape_of(v)} for i, v in enumerate(enc.variables)]
    return header, enc.arrays, enc.variables


def _variable_name(v, i) -> str:
    name = getattr(v, "name", None) or f"variable_{i}"
    return name[:-2] if name.endswith(":0") else name


def _spec_json(t) -> dict:
    shape = t.shape
    return {"name": t.op.name, "dtype": np.dtype(t._dtype).name,
            "shape": None if shape.rank is None else shape.as_list()}


# ---- running ----------------------------------------------------------------------------------
class PortableProgram:
    """A written program run by calling its ops eagerly: ``run(group, feeds)`` gives the
    values of ``group`` with the placeholders given ``feeds`` (index -> value) and the
    variables ``variables`` (index -> Variable or array)."""

    def __init__(self, header: dict, arrays, variables: list | None = None):
        self.header = header
        self.arrays = arrays
        self.variables = list(variables or [])
        self.nodes = header["nodes"]
        self.calls = [registry.REGISTRY.get(n["target"]) if n["call"] == "op"
                      else _resolve(n["target"]) if n["call"] == "function" else None
                      for n in self.nodes]
        missing = [n["target"] for n in self.nodes
                   if n["call"] == "op" and n["target"] not in registry.REGISTRY]
        if missing:
            raise ValueError(f"ipu_gpu program: unknown ops {missing}")
        self._needed = {name: self._reach(refs) for name, refs in header["groups"].items()}

    def _reach(self, refs) -> list:
        wanted, stack = set(), []

        def collect(x):
            if isinstance(x, dict):
                if "t" in x:
                    stack.append(x["t"][0])
                elif "op" in x:
                    stack.append(x["op"])
                for v in x.values():
                    if isinstance(v, (list, dict)):
                        collect(v)
            elif isinstance(x, list):
                for v in x:
                    collect(v)
        collect(refs)
        while stack:
            i = stack.pop()
            if i in wanted:
                continue
            wanted.add(i)
            collect(self.nodes[i]["inputs"])
            collect(self.nodes[i]["kwargs"])
            stack.extend(self.nodes[i].get("control", ()))
        return sorted(wanted)  # node order is graph order: inputs come first

    def run(self, group: str, feeds: dict) -> list:
        values: dict = {}
        decode = _Decoder(self, feeds, values)
        for i in self._needed[group]:
            node = self.nodes[i]
            args = decode(node["inputs"])
            if node["call"] == "function":  # the template is [args, kwargs]
                out = self.calls[i](*args[0], **args[1])
            elif node["call"] in ("const", "default"):
                out = args[0]
            elif node["call"] == "assign":
                getattr(args[0], node["target"])(args[1])
                out = args[0].read_value()
            elif node["call"] == "group":
                out = []
            else:
                out = self.calls[i](*args, **decode(node["kwargs"]))
            values[i] = list(out) if isinstance(out, (list, tuple)) else [out]
        return [decode(r) for r in self.header["groups"][group]]


class _Decoder:
    def __init__(self, program, feeds, values):
        self.program, self.feeds, self.values = program, feeds, values

    def __call__(self, x):
        if isinstance(x, list):
            return [self(v) for v in x]
        if not isinstance(x, dict):
            return x
        if "t" in x:
            i, j = x["t"]
            return self.values[i][j]
        if "op" in x:
            return None
        if "p" in x:
            return self.feeds[x["p"]]
        if "a" in x:
            a = self.program.arrays[x["a"]]
            if "s" in x:  # tf.string
                a = _strings_of(a, self.program.arrays[x["s"]])
            kind = x.get("k", "n")
            return wrap(a.copy()) if kind == "t" else a[()] if kind == "g" else a.copy()
        if "v" in x:
            return self.program.variables[x["v"]]
        if "dtype" in x:
            return np.dtype(x["dtype"])
        if "shape" in x:
            return TensorShape(x["shape"])
        if "slice" in x:
            return slice(*(self(v) for v in x["slice"]))
        if "ellipsis" in x:
            return Ellipsis
        if "enum" in x:
            return getattr(_resolve(x["enum"]), x["name"])
        if "tuple" in x:
            return tuple(self(v) for v in x["tuple"])
        if "dict" in x:
            return {k: self(v) for k, v in x["dict"]}
        if "fn" in x:
            return _resolve(x["fn"])
        raise ValueError(f"ipu_gpu program: unknown entry {x!r}")


class LiveProgram:
    """A traced graph kept in this process (its nodes run Python code that cannot be
    written): ``run(group, feeds)`` evaluates it as a ``Session.run`` would."""

    def __init__(self, placeholders: list, groups: dict):
        self.placeholders = list(placeholders)
        self.groups = {k: list(v) for k, v in groups.items()}

    def run(self, group: str, feeds: dict) -> list:
        from ..graph.core import GraphTensor, Operation, eager_scope
        from ..graph.session import _Run

        graph = next((p.graph for p in self.placeholders), None)
        values = {self.placeholders[i]: _as_tensor(v) for i, v in feeds.items()}
        with eager_scope():
            the_run = _Run(values, graph, copy=False)
            out = []
            for x in self.groups[group]:
                if isinstance(x, Operation):
                    the_run.compute(x)
                    out.append(None)
                elif isinstance(x, GraphTensor):
                    out.append(the_run.value(x))
                else:
                    out.append(x)
        return out


def _as_tensor(v):
    return v if isinstance(v, Tensor) else wrap(np.asarray(v))


def shape_of(t):
    """The static shape (list, None for unknown rank) of a graph tensor or value."""
    shape = getattr(t, "shape", None)
    if shape is None:
        return list(np.shape(t))
    if hasattr(shape, "rank"):
        return None if shape.rank is None else shape.as_list()
    return list(shape)


def dtype_of(t) -> np.dtype:
    d = getattr(t, "_dtype", None)
    if d is None:
        d = getattr(t, "dtype", None)
    return np.dtype(d) if d is not None else np.asarray(t).dtype


def _strings_of(blob: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The object array of bytes that ``Encoder.array`` wrote as ``blob`` and ``lengths``."""
    data = blob.tobytes()
    ends = np.cumsum(lengths.reshape(-1))
    out = np.empty(lengths.shape, object)
    flat = out.reshape(-1)
    start = 0
    for i, end in enumerate(ends.tolist()):
        flat[i] = data[start:end]
        start = end
    return out
