"""TF1 graphs: ``Graph``, ``Operation`` and the symbolic ``GraphTensor``.

A graph is the traced program. Ops called on graph tensors (placeholders, graph variables,
the outputs of other graph ops) do not run: the op registry hands the call to ``_record``
(``core/registry.set_symbolic_hook``), which adds an ``Operation`` to the tensors' graph and
returns its output graph tensors. Each registered op therefore works in a graph without
being written twice: a ``Session.run`` (``session.py``) interprets the graph by calling the
same ops eagerly, so kernels, device choice and the emulated machine are the eager ones.
Values that are not graph tensors (Python numbers, arrays, eager Tensors and Variables) are
the node's constants; an op whose inputs are all constants runs at once, as TF folds
constants. Shapes and dtypes of a recorded op's outputs come from running it on stand-in
zeros (an unknown dimension probed at two sizes).
"""

from __future__ import annotations

import contextlib
import itertools
import re
import sys
import threading

import numpy as np

from ..core import nest, registry
from ..core.spec import TensorShape
from ..core.tensor import OPS, Tensor
from ..emulation import placement as _placement

__all__ = ["Graph", "GraphTensor", "Operation", "get_default_graph", "reset_default_graph"]

_local = threading.local()  # .stack: the graphs made default with ``as_default``
_global_default = [None]


class Graph:
    """A TF1 graph: its operations by name, name scopes, collections (``tf.Graph``)."""

    def __init__(self):
        self._ops: list[Operation] = []
        self._by_name: dict = {}
        self._names: dict = {}
        self._collections: dict = {}
        self._finalized = False
        self._scope: list[str] = []
        self._control: list = []  # the operations of the enclosing control_dependencies

    # ---- default graph ------------------------------------------------------------------
    def as_default(self):
        """Make this graph the default graph of the calling thread inside the block."""
        return pushed(_local, self)

    # ---- names --------------------------------------------------------------------------
    def unique_name(self, name: str) -> str:
        """``name`` within the current name scope, made unique as TF's ``unique_name``
        (``x``, ``x_1``, ...; case-insensitively, and never a name handed out before, even
        one that was asked for as ``x_1``)."""
        base = "/".join([*self._scope, name]) if self._scope else name
        key = base.lower()
        count = self._names.get(key, 0)
        self._names[key] = count + 1
        if count == 0:
            return base
        candidate = key
        while candidate in self._names:
            candidate = f"{key}_{count}"
            count += 1
        self._names[candidate] = 1
        return f"{base}_{count - 1}"

    def name_scope(self, name: str | None):
        """A block whose operations are named ``name/...``."""
        return _NameScope(self, name)

    # ---- operations ---------------------------------------------------------------------
    def _add(self, op: Operation) -> Operation:
        if self._finalized:
            raise RuntimeError("Graph is finalized and cannot be modified.")
        self._ops.append(op)
        self._by_name[op.name] = op
        return op

    def get_operations(self) -> list:
        return list(self._ops)

    def get_operation_by_name(self, name: str) -> Operation:
        op = self._by_name.get(name)
        if op is None:
            raise KeyError(f"The name '{name}' refers to an Operation not in the graph.")
        return op

    def get_tensor_by_name(self, name: str) -> GraphTensor:
        m = re.fullmatch(r"(.+):(\d+)", name)
        if m is None:
            raise ValueError(f"The name '{name}' looks like an (invalid) Operation name, not a "
                             "Tensor. Tensor names must be of the form "
                             "\"<op_name>:<output_index>\".")
        op = self._by_name.get(m.group(1))
        if op is None or int(m.group(2)) >= len(op.outputs):
            raise KeyError(f"The name '{name}' refers to a Tensor which does not exist. The "
                           f"operation, '{m.group(1)}', does not exist in the graph.")
        return op.outputs[int(m.group(2))]

    def finalize(self) -> None:
        """No operation may be added from now on."""
        self._finalized = True

    @property
    def finalized(self) -> bool:
        return self._finalized

    # ---- collections --------------------------------------------------------------------
    def add_to_collection(self, name, value) -> None:
        self._collections.setdefault(name, []).append(value)

    def get_collection(self, name, scope=None) -> list:
        items = list(self._collections.get(name, []))
        if scope is None:
            return items
        return [x for x in items if re.match(scope, getattr(x, "name", "") or "")]

    def get_collection_ref(self, name) -> list:
        return self._collections.setdefault(name, [])


@contextlib.contextmanager
def pushed(local, item):
    """``item`` on top of the calling thread's ``local.stack`` inside the block."""
    stack = getattr(local, "stack", None)
    if stack is None:
        stack = local.stack = []
    stack.append(item)
    try:
        yield item
    finally:
        stack.pop()


class _NameScope:
    """TF's ``Graph.name_scope``: a name made unique among the graph's names (a second
    ``block`` scope is ``block_1``); a name ending in ``/`` re-enters that scope as it is."""

    def __init__(self, graph, name):
        self.graph, self.name = graph, name

    def __enter__(self):
        self.saved = list(self.graph._scope)
        if self.name:
            if self.name.endswith("/"):
                self.graph._scope = [p for p in self.name.rstrip("/").split("/") if p]
            else:
                full = self.graph.unique_name(self.name)
                self.graph._scope = full.split("/")
        return "/".join(self.graph._scope) + "/" if self.graph._scope else ""

    def __exit__(self, *exc):
        self.graph._scope = self.saved


def get_default_graph() -> Graph:
    """The graph of the innermost ``as_default`` block, else the global default graph."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    if _global_default[0] is None:
        _global_default[0] = Graph()
    return _global_default[0]


def reset_default_graph() -> None:
    """Clears the default graph stack and resets the global default graph.

    Raises:
      AssertionError: inside a ``with graph.as_default():`` block (TF's check)."""
    if getattr(_local, "stack", None):
        raise AssertionError("Do not use tf.reset_default_graph() to clear nested graphs. If "
                             "you need a cleared graph, exit the nesting and create a new "
                             "graph.")
    _global_default[0] = Graph()


def building() -> bool:
    """True inside a ``with graph.as_default():`` block, and everywhere in a TF1 program
    (``compat.behavior``: TF 1.15 builds graphs by default; ``enable_eager_execution``
    switches that off); never inside ``eager_scope`` (a Session running the graph, weights a
    Keras layer makes) or inside an IPU program's replica (a traced program running)."""
    if getattr(_local, "eager", 0):
        return False
    if getattr(_local, "stack", None):
        return True
    behavior = sys.modules.get("ipu_gpu.compat.behavior")
    if behavior is None or behavior.tf_version() != 1:
        return False
    context = sys.modules.get("ipu_gpu.emulation.context")
    return context is None or context.current() is None


@contextlib.contextmanager
def eager_scope():
    """Inside the block nothing is recorded: calls run at once (graph mode suspended)."""
    _local.eager = getattr(_local, "eager", 0) + 1
    try:
        yield
    finally:
        _local.eager -= 1


def _recording_owner():
    return "graph" if building() else None


# ---- operations and tensors ---------------------------------------------------------------
class Operation:
    """A node: ``compute(values)`` gives its outputs' values from its inputs' values (the
    graph tensors among ``inputs`` replaced by what they evaluate to in one run)."""

    _ipu_operation = True

    def __init__(self, graph: Graph, type_name: str, name: str, inputs, compute,
                 control_inputs=()):
        self.graph = graph
        self.type = type_name
        self.name = name
        self.inputs_structure = inputs
        self.compute = compute
        self.control_inputs = list(control_inputs)
        self.outputs: list[GraphTensor] = []
        self.kernel = None  # add_node's Kernel: how a run plan calls it
        # the replica's IPU it runs on (``ipu_shard``'s first index; None: the first IPU)
        shard = _placement.current().shard
        self.shard = shard[0] if shard else None
        # the graph tensors among the inputs, found once (a run asks for them per node)
        self.inputs = [x for x in nest.flatten(inputs) if isinstance(x, GraphTensor)]

    def run(self, feed_dict=None, session=None):
        """Runs this operation in ``session`` (default: the default session)."""
        from .session import default_session

        (session or default_session()).run(self, feed_dict)

    def __repr__(self) -> str:
        return f"<tf.Operation '{self.name}' type={self.type}>"


_ids = itertools.count(1).__next__


class GraphTensor:
    """The symbolic output ``value_index`` of graph operation ``op`` (TF1's ``tf.Tensor``):
    its value exists only inside a ``Session.run``. It refuses conversion to an array."""

    __array_priority__ = 200

    def __init__(self, op: Operation, value_index: int, dtype, shape):
        self.op = op
        self.value_index = value_index
        self._dtype = np.dtype(dtype)
        self._shape = TensorShape(shape)
        self._uid = _ids()

    @property
    def graph(self) -> Graph:
        return self.op.graph

    @property
    def name(self) -> str:
        return f"{self.op.name}:{self.value_index}"

    @property
    def dtype(self):
        from ..core import dtypes

        return dtypes.as_dtype(self._dtype)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def ndim(self) -> int:
        return self._shape.rank

    def set_shape(self, shape) -> None:
        self._shape = self._shape.merge_with(TensorShape(shape))

    def eval(self, feed_dict=None, session=None):
        """The value in ``session`` (default: the default session)."""
        from .session import default_session

        return (session or default_session()).run(self, feed_dict)

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"Cannot convert a symbolic graph tensor ({self.name}) to a numpy "
                        "array: run it in a tf.compat.v1.Session")

    def __bool__(self):
        raise TypeError("Using a `tf.Tensor` as a Python `bool` is not allowed in Graph "
                        "execution. Use Eager execution or decorate this function with "
                        "@tf.function.")

    def __iter__(self):
        raise TypeError("Tensor objects are only iterable when eager execution is enabled. To "
                        "iterate over this tensor use tf.map_fn.")

    def __len__(self):
        raise TypeError(f"len is not well defined for symbolic Tensors. ({self.name}) Please "
                        "call `x.shape` rather than `len(x)` for shape information.")

    def __getitem__(self, key):
        return OPS["getitem"](self, key)

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"


# The Python operators of graph tensors are the eager Tensor's (each calls the public op);
# == and != stay identity, as in TF1, so graph tensors can key a feed_dict. Their nodes take
# TF's operator names (``x + y`` is ``add``, ``tf.add(x, y)`` is ``Add``).
_OPERATOR_NAMES = {
    **{f"__{r}{n}__": n for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                  "matmul", "and", "or", "xor") for r in ("", "r")},
    "__div__": "truediv", "__rdiv__": "truediv"}


def _operator(fn, name):
    """The eager Tensor's operator ``fn``, its first node named as TF names the operator's."""
    node_name = _OPERATOR_NAMES.get(name)
    if node_name is None:
        return fn

    def method(*args):
        _local.operator = node_name
        try:
            return fn(*args)
        finally:
            _local.operator = None
    method.__name__ = name
    return method


def _node_name(default: str) -> str:
    """The name of the node an operator's call records first, else ``default``."""
    name = getattr(_local, "operator", None)
    if name is None:
        return default
    _local.operator = None
    return name

for _name, _fn in list(vars(Tensor).items()):
    if (_name.startswith("__") and _name.endswith("__") and callable(_fn)
            and _name not in ("__eq__", "__ne__", "__hash__", "__init__", "__repr__",
                              "__str__", "__array__", "__bool__", "__len__", "__iter__",
                              "__getitem__", "__float__", "__int__", "__index__",
                              "__dlpack__", "__dlpack_device__", "__class__", "__new__",
                              "__init_subclass__", "__subclasshook__", "__getattribute__",
                              "__setattr__", "__delattr__", "__reduce__", "__reduce_ex__",
                              "__sizeof__", "__dir__", "__format__", "__array_priority__",
                              "__copy__", "__deepcopy__", "__complex__")):
        setattr(GraphTensor, _name, _operator(_fn, _name))


def _graph_of(values) -> Graph:
    graphs = {x.graph for x in nest.flatten(list(values)) if isinstance(x, GraphTensor)}
    if len(graphs) > 1:
        raise ValueError("Tensor must be from the same graph as the other inputs: inputs come "
                         "from several graphs")
    return graphs.pop() if graphs else get_default_graph()  # a call with no graph input


_PROBE_SIZES = (2, 3)
_CHECK_SIZE = 9
_LARGE_PROBE_SIZES = (9, 17, 33)  # tried when an op refuses the probe sizes


def _stand_in(x, size, rank=None):
    if isinstance(x, GraphTensor):
        value = _folded(x, size, rank)
        if value is not None:  # a Const or a shape computation: shapes may depend on it
            return value
        if x.shape.rank is None:  # unknown rank: probed at ``rank`` dimensions of ``size``
            return _zeros([size] * rank, x._dtype)
        shape = [size if d is None else d for d in x.shape.as_list()]
        return _zeros(shape, x._dtype)
    return x


def _zeros(shape, dtype) -> Tensor:
    """A probe's stand-in value; strings are b"0" (a number to ``tf.strings.to_number``)."""
    if np.dtype(dtype).kind == "O":
        a = np.empty(shape, object)
        a.fill(b"0")
        return Tensor(a)
    return Tensor(np.zeros(shape, dtype))


_PROBE_RANKS = (1, 2, 3, 4)
_SHAPE_OPS = {"Shape": lambda shape: shape, "Size": lambda shape: int(np.prod(shape)),
              "Rank": len}


def _folded(t, size, rank=None):
    """``t``'s value at a probe of ``size`` when the graph fixes it (TF's constant folding
    of shape arithmetic): a Const's value; a Shape, Size or Rank of any tensor (its unknown
    dimensions at ``size``, an unknown rank at ``rank``); an integer op of a registered kernel
    whose inputs all fold. None for anything else (its stand-in is zeros)."""
    op = t.op
    value = getattr(op, "const_value", None)
    if value is not None:
        return value
    shape_of = _SHAPE_OPS.get(op.type)
    if shape_of is not None and len(op.inputs) == 1:
        x = op.inputs[0]
        if x.shape.rank is None:
            dims = [size] * (size if rank is None else rank)
        else:
            dims = [size if d is None else d for d in x.shape.as_list()]
        return Tensor(np.asarray(shape_of(dims), t._dtype))
    kernel = op.kernel
    if (t._dtype.kind not in "iu" or kernel is None or kernel.pass_run
            or not isinstance(kernel.fn, registry.Op) or not op.inputs):
        return None
    values = {}
    for x in op.inputs:
        v = _folded(x, size, rank)
        if v is None:
            return None
        values[id(x)] = v
    with eager_scope():
        return op.compute(_ById(values))[t.value_index]


class _ById(dict):
    """A run's values keyed by the graph tensors' ids (what ``compute`` reads them with)."""

    def __getitem__(self, t):
        return dict.__getitem__(self, id(t))


def _varies(x) -> bool:
    """True for a graph tensor whose folded value depends on an unknown dimension."""
    if not isinstance(x, GraphTensor) or x._dtype.kind not in "iu" or x.op.type == "Const":
        return False
    a, b = (_folded(x, size) for size in _PROBE_SIZES)
    return a is not None and not np.array_equal(np.asarray(a), np.asarray(b))


def infer_outputs(fn, inputs, static):
    """([(dtype, shape)] of ``fn(*inputs, **static)``'s outputs, whether it returns a
    sequence), from runs on stand-ins: an unknown dimension is probed at two sizes (output
    dimensions that follow it are unknown); when the op refuses those (a constant input or a
    static argument fixes the size), at the sizes the constant inputs have, else at the first
    probe size it takes."""
    leaves = nest.flatten(list(inputs))
    with eager_scope():  # the stand-in runs compute; nothing they call is recorded
        if any(isinstance(x, GraphTensor) and x.shape.rank is None for x in leaves):
            return _infer_unknown_rank(fn, inputs, static)
        unknown = any(isinstance(x, GraphTensor) and None in x.shape.as_list()
                      for x in leaves) or any(_varies(x) for x in leaves)
        specs, sequence = _infer(fn, inputs, static, leaves, unknown)
    return _data_dependent(getattr(fn, "name", None), specs, static), sequence


# registered ops whose output sizes depend on their inputs' values: TF's shape functions
# leave those dimensions unknown (op name -> {output: dimensions}, from the static args)
_DATA_DEPENDENT = {"where_indices": lambda static: {0: (0,)},
                   "unique": lambda static: {0: (0,)},
                   "boolean_mask": lambda static: {0: (static["axis"],)}}


def _data_dependent(name, specs, static):
    dims_of = _DATA_DEPENDENT.get(name)
    if dims_of is None:
        return specs
    specs = list(specs)
    for j, dims in dims_of(static).items():
        dtype, shape = specs[j]
        if shape is not None:
            specs[j] = (dtype, [None if i in dims else d for i, d in enumerate(shape)])
    return specs


def _infer_unknown_rank(fn, inputs, static):
    """Specs of ``fn`` on an input of unknown rank (TF's shape functions give an unknown-rank
    output unless the op fixes it): the stand-ins of unknown rank are probed at ranks 1 to 4
    (each at two sizes); an output whose rank changes with them has unknown rank, the others
    keep the dimensions every probe agrees on."""
    probes, first_error = [], None
    for rank in _PROBE_RANKS:
        try:
            outs = []
            for size in _PROBE_SIZES:
                stand_ins = nest.map_structure(lambda x, s=size, r=rank: _stand_in(x, s, r),
                                               list(inputs))
                outs.append(fn(*stand_ins, **static))
            probes.extend(outs)
        except Exception as e:  # noqa: BLE001 - the op refuses this rank: try the next
            first_error = first_error or e
    if not probes:
        raise first_error
    sequence = isinstance(probes[0], (list, tuple))
    runs = [list(o) if sequence else [o] for o in probes]
    specs = []
    for j, t in enumerate(runs[0]):
        shapes = [list(r[j].shape) for r in runs]
        if len({len(sh) for sh in shapes}) > 1:
            specs.append((t.dtype, None))
        else:
            specs.append((t.dtype, [d if all(sh[i] == d for sh in shapes) else None
                                    for i, d in enumerate(shapes[0])]))
    return specs, sequence


def _infer(fn, inputs, static, leaves, unknown):
    try:
        runs, sequence = _probe(fn, inputs, static, _PROBE_SIZES if unknown else (1,))
        if unknown:  # sizes 2 and 3 may agree where the size still follows (pooled to 1)
            try:
                runs += _probe(fn, inputs, static, (_CHECK_SIZE,))[0]
            except Exception:  # noqa: BLE001 - the op refuses that size: two probes decide
                pass
    except Exception as refused:  # noqa: BLE001 - a constant fixes the unknown size
        if not unknown:
            raise
        probed = _probe_fixed(fn, inputs, static, leaves)
        if probed is None:
            return _refused_specs(fn, inputs, static, refused)
        runs, sequence = probed
    return _specs(runs, runs[0], []), sequence


# registered ops whose static output shape TF's shape function knows from the static args
# when no probe size fits (the run then decides, and fails as TF's kernel does)
_STATIC_SPECS = {"reshape": lambda inputs, static: [
    (inputs[0]._dtype, [None if d == -1 else int(d) for d in static["shape"]])]}


def _refused_specs(fn, inputs, static, refused):
    """Specs of an op that refused every probe: an op of ``_STATIC_SPECS`` by its static
    arguments; else the rank and dtype of a probe where each unknown dimension is 1 (a
    squeeze of one), every dimension unknown; the run decides, as TF's kernel does.

    Raises:
      the exception ``refused``, when the op refuses that probe too."""
    rule = _STATIC_SPECS.get(getattr(fn, "name", None))
    if rule is not None and isinstance(inputs[0], GraphTensor):
        return rule(inputs, static), False
    try:
        runs, sequence = _probe(fn, inputs, static, (1,))
    except Exception:  # noqa: BLE001 - refused at every size
        raise refused from None
    return [(t.dtype, [None] * len(t.shape)) for t in runs[0]], sequence


def _probe_fixed(fn, inputs, static, leaves):
    """Probes for an op that refused the probe sizes: each unknown dimension at the size a
    constant input has at its place (``_probe_aligned``), else all of them at one of the
    sizes the constant inputs have, else at a probe size a static argument allows; None
    when every candidate is refused too."""
    aligned = _probe_aligned(fn, inputs, static, leaves)
    if aligned is not None:
        return aligned
    sizes = sorted({int(d) for x in leaves if not isinstance(x, GraphTensor)
                    for d in getattr(x, "shape", ()) if int(d) > 0})
    # a static arg fixes it, or a window needs more than the probe sizes (a dilated pool)
    sizes += [size for size in (*_PROBE_SIZES, *_LARGE_PROBE_SIZES) if size not in sizes]
    runs, sequence = [], False
    for size in sizes:
        try:
            probed, sequence = _probe(fn, inputs, static, (size,))
        except Exception:  # noqa: BLE001 - the next candidate size
            continue
        runs += probed
        if len(runs) == 2:  # two sizes: the dimensions that follow them are unknown
            break
    return (runs, sequence) if runs else None


def _probe_aligned(fn, inputs, static, leaves):
    """Probes where each unknown dimension takes the size a constant input has at the same
    position counted from the last (a broadcast against a constant: TF's shape function
    gives that size), the others two probe sizes; None when the op refuses them too."""
    fixed: dict = {}
    for x in leaves:
        if not isinstance(x, GraphTensor):
            for k, d in enumerate(reversed(tuple(getattr(x, "shape", ())))):
                if int(d) > 1:
                    fixed.setdefault(k, int(d))
    if not fixed:
        return None

    def stand_in(x, size):
        if (not isinstance(x, GraphTensor) or x.shape.rank is None
                or _folded(x, size) is not None):
            return _stand_in(x, size)
        dims = x.shape.as_list()
        n = len(dims)
        return Tensor(np.zeros([fixed.get(n - 1 - i, size) if d is None else d
                                for i, d in enumerate(dims)], x._dtype))
    runs, sequence = [], False
    try:
        for size in _PROBE_SIZES:
            _local.probe_size = size
            out = fn(*nest.map_structure(lambda x, s=size: stand_in(x, s), list(inputs)),
                     **static)
            sequence = isinstance(out, (list, tuple))
            runs.append(list(out) if sequence else [out])
    except Exception:  # noqa: BLE001 - not a broadcast against a constant
        return None
    return runs, sequence


def _probe(fn, inputs, static, sizes):
    runs, sequence = [], False
    for size in sizes:
        _local.probe_size = size
        stand_ins = nest.map_structure(lambda x, s=size: _stand_in(x, s), list(inputs))
        out = fn(*stand_ins, **static)
        sequence = isinstance(out, (list, tuple))
        runs.append(out if sequence else [out])
    return runs, sequence


def _specs(runs, first, specs):
    for j, t in enumerate(first):
        shape = list(t.shape)
        for run in runs[1:]:
            shape = [d if d == e else None for d, e in zip(shape, run[j].shape)]
        specs.append((t.dtype, shape))
    return specs


def _flat_slots(structure):
    """[(position, graph tensor)] of a flat input list (no nested list, tuple or dict), or
    None for a nested structure."""
    if any(isinstance(x, (list, tuple, dict)) for x in structure):
        return None
    return [(j, x) for j, x in enumerate(structure) if isinstance(x, GraphTensor)]


def _evaluator(structure):
    """A function of a run's values giving ``structure`` with its graph tensors replaced,
    planned once: a flat list of inputs (the common case) is filled by position."""
    structure = list(structure)
    slots = _flat_slots(structure)
    if slots is not None:
        def flat(values):
            out = list(structure)
            for j, t in slots:
                out[j] = values[t]
            return out
        return flat
    return lambda values: nest.map_structure(
        lambda x: values[x] if isinstance(x, GraphTensor) else x, structure)


def add_node(graph: Graph, type_name: str, name: str | None, inputs, run, specs,
             control_inputs=(), pass_run=False) -> Operation:
    """A new operation of ``graph`` computing ``run(*evaluated inputs)`` (``run(the run,
    *evaluated inputs)`` with ``pass_run``: a node reading the run's tape) with outputs of
    ``specs`` [(dtype, shape)]; its outputs are ``op.outputs``."""
    if registry._variable_read_probe is None:  # graphs are built: ops reading variables too
        registry.set_variable_read_probe(_recording_owner)
    evaluate = _evaluator(inputs)
    if pass_run:
        def compute(values):
            out = run(values.run, *evaluate(values))
            return out if isinstance(out, (list, tuple)) else [out]
    else:
        def compute(values):
            out = run(*evaluate(values))
            return out if isinstance(out, (list, tuple)) else [out]
    op = Operation(graph, type_name, graph.unique_name(name or type_name), inputs, compute,
                   [*graph._control, *control_inputs])
    op.outputs = [GraphTensor(op, j, d, s) for j, (d, s) in enumerate(specs)]
    op.kernel = Kernel(compute, run, inputs, pass_run)
    return graph._add(op)


class Kernel:
    """How a run plan (``plan.py``) calls a node without going through ``compute``: ``fn``
    (with the keyword arguments ``kwargs``) on the inputs ``template`` with the graph tensors
    at ``slots`` replaced by their values; ``slots`` is None for nested inputs (the plan
    then calls ``compute``). ``compute`` is the node's own compute: a node whose compute was
    replaced since is called through its compute."""

    __slots__ = ("compute", "fn", "kwargs", "template", "slots", "pass_run")

    def __init__(self, compute, fn, inputs, pass_run, kwargs=None):
        self.compute = compute
        self.fn = fn
        self.kwargs = kwargs
        self.template = list(inputs)
        self.slots = _flat_slots(self.template)
        self.pass_run = pass_run


def record(op, inputs, static):
    """The registry's hook: ``op(*inputs, **static)`` on graph tensors becomes a node (or,
    inside a function node's run, is computed on the captured tensors' values)."""
    resolve = getattr(_local, "resolve", None)
    if resolve is not None:
        return op(*_resolved(resolve, list(inputs)), **static)
    graph = _graph_of(inputs)
    specs, sequence = _reshape_specs(op, inputs, static) or infer_outputs(op, inputs, static)
    node = add_node(graph, _TYPE_NAMES.get(op.name, op.name),
                    _node_name(_TYPE_NAMES.get(op.name, op.name)), inputs,
                    lambda *xs: op(*xs, **static), specs)
    node.kernel.fn, node.kernel.kwargs = op, (dict(static) if static else None)
    return list(node.outputs) if sequence else node.outputs[0]


def _reshape_specs(op, inputs, static):
    """Reshape's output spec when its input has an unknown size and the target a -1: that
    dimension is unknown (TF's shape function; a probe at stand-in sizes may not divide)."""
    if op.name != "reshape" or -1 not in static["shape"]:
        return None
    x = inputs[0]
    if not isinstance(x, GraphTensor) or x.shape.rank is None or None not in x.shape.as_list():
        return None
    return [(x.dtype, [None if d == -1 else d for d in static["shape"]])], False


# the default node names TF 1 gives these ops' functions (an op not here keeps its own name)
_TYPE_NAMES = {
    "abs": "Abs", "add": "Add", "subtract": "Sub", "multiply": "Mul", "divide": "truediv",
    "matmul": "MatMul", "relu": "Relu", "softmax": "Softmax", "sigmoid": "Sigmoid",
    "tanh": "Tanh", "reduce_sum": "Sum", "reduce_mean": "Mean", "reduce_max": "Max",
    "reduce_min": "Min", "reduce_prod": "Prod", "reduce_all": "All", "reduce_any": "Any",
    "reshape": "Reshape", "cast": "Cast", "square": "Square", "sqrt": "Sqrt", "exp": "Exp",
    "log": "Log", "equal": "Equal", "not_equal": "NotEqual", "greater": "Greater",
    "less": "Less", "greater_equal": "GreaterEqual", "less_equal": "LessEqual",
    "argmax": "ArgMax", "argmin": "ArgMin", "bias_add": "BiasAdd", "tile": "Tile",
    "gather": "GatherV2", "negative": "Neg", "maximum": "Maximum", "minimum": "Minimum",
    "stop_gradient": "StopGradient", "identity": "Identity", "pow": "Pow", "rsqrt": "Rsqrt",
    "log_softmax": "LogSoftmax", "leaky_relu": "LeakyRelu", "elu": "Elu",
    "softplus": "Softplus", "logical_and": "LogicalAnd", "logical_not": "LogicalNot",
    "logical_or": "LogicalOr", "floor": "Floor", "round": "Round", "sign": "Sign",
    "ceil": "Ceil", "where": "Select", "shape": "Shape", "size": "Size", "rank": "Rank",
    "floormod": "FloorMod", "cumsum": "Cumsum", "l2_loss": "L2Loss",
    "reciprocal": "Reciprocal", "erf": "Erf", "reverse": "ReverseV2", "slice": "Slice",
    "getitem": "strided_slice", "top_k": "TopKV2", "fill": "Fill", "max_pool2d": "MaxPool",
    "avg_pool2d": "AvgPool", "conv2d": "Conv2D",
    # issue 17: TF 1's names of the math ops it added
    **{n: n.title() for n in ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
                              "cosh", "asinh", "acosh", "atanh", "lgamma", "digamma", "selu",
                              "cumprod", "unique")},
    "band_part": "MatrixBandPart"}


def record_function(fn, args, kwargs):
    """A public function called with graph tensors it cannot pass to an op as they are
    (``registry.symbolic_call``): one node that calls it on the run's values. A named
    ``constant`` (``registry.recorded_call``) is a ``Const`` node holding its value."""
    resolve = getattr(_local, "resolve", None)
    if resolve is not None:
        a, k = _resolved(resolve, [list(args), dict(kwargs)])
        return fn(*a, **k)
    if getattr(fn, "__name__", "") == "constant" and fn.__module__ == "ipu_gpu.core.convert":
        return _const_node(fn, args, kwargs)
    inputs = [list(args), dict(kwargs)]
    graph = _graph_of(inputs)
    captured: list = []
    with _discovering(captured):
        specs, sequence = infer_outputs(lambda a, k: fn(*a, **k), inputs, {})
    type_name = getattr(fn, "__name__", "Call").title().replace("_", "")
    if captured:  # fn reads graph tensors it was not given: they become inputs too
        def run(a, k, values):
            with resolving(dict(zip(map(id, captured), values))):
                return fn(*a, **k)
        node = add_node(graph, type_name, _node_name(type_name), [*inputs, captured], run,
                        specs)
        node.captured = list(captured)
    else:
        node = add_node(graph, type_name, _node_name(type_name), inputs,
                        lambda a, k: fn(*a, **k), specs)
    return list(node.outputs) if sequence else node.outputs[0]


def _resolved(resolve, structure):
    return nest.map_structure(lambda x: resolve(x) if isinstance(x, GraphTensor) else x,
                              structure)


@contextlib.contextmanager
def resolving(values: dict):
    """Inside the block a graph tensor reaching an op (or converted to an array) is its value
    in ``values`` (id of graph tensor -> value): a function node's run, where the function
    reads tensors of the graph it did not take as arguments.

    Raises (inside the block):
      TypeError: a graph tensor not in ``values``."""
    def resolve(t):
        try:
            return values[id(t)]
        except KeyError:
            raise TypeError(f"Cannot convert a symbolic graph tensor ({t.name}) to a numpy "
                            "array: run it in a tf.compat.v1.Session") from None
    with _resolving(resolve):
        yield


@contextlib.contextmanager
def _resolving(resolve):
    """Inside the block, graph tensors reaching an op are replaced by ``resolve(t)``."""
    previous = getattr(_local, "resolve", None)
    _local.resolve = resolve
    try:
        yield
    finally:
        _local.resolve = previous


@contextlib.contextmanager
def _discovering(captured: list):
    """Inside the block (a function's shape probe) a graph tensor reaching an op is noted in
    ``captured`` and stands in as zeros of its shape (unknown dimensions at the probe's
    size)."""
    stand_ins: dict = {}

    def resolve(t):
        if not any(c is t for c in captured):
            captured.append(t)
        found = stand_ins.get(id(t))
        if found is None:
            found = _stand_in(t, getattr(_local, "probe_size", _PROBE_SIZES[0]), 2)
            if t.op.type == "VariableV2":  # a variable: a variable (tapes see it read)
                from ..core.tensor import Variable

                found = Variable(found, trainable=getattr(t, "trainable", True))
            stand_ins[id(t)] = found
        return found
    with _resolving(resolve):
        yield


def _const_node(fn, args, kwargs) -> GraphTensor:
    """TF's ``Const`` node named ``kwargs["name"]`` (unique in the name scope); its value is
    made once, now, and is its output in every run."""
    kwargs = dict(kwargs)
    name = kwargs.pop("name")
    with eager_scope():
        value = fn(*args, **kwargs)
    node = add_node(get_default_graph(), "Const", name or "Const", [], lambda: value,
                    [(value.dtype, list(value.shape))])
    node.const_value = value
    node.records_nothing = True
    return node.outputs[0]


registry.set_symbolic_hook((GraphTensor,), record, owner="graph")
registry.set_function_hook((GraphTensor,), record_function, owner="graph")
registry.set_recording_probe(_recording_owner)
