"""TF 1's SavedModel API (``tf.compat.v1.saved_model``) in ipu_gpu's format: ``simple_save``,
``builder.SavedModelBuilder``, ``loader.load``, SignatureDefs and TensorInfos.

Saving writes the session's graph as a traced program (``program.encode_graph``: every
operation that can be written, named as in the graph, with its control inputs) per tag set,
and the graph's global variables' values once (``variables/variables.npz``, keyed by
variable name). Loading replays the program into the session's graph: the placeholders,
variables (restored to the saved values) and operations come back under their saved names,
so ``get_tensor_by_name`` and the SignatureDefs' tensor names find them, and ``Session.run``
runs them as any graph. Operations that cannot be written (Python closures: gradients,
optimizer updates, variable initializers) are left out; a signature tensor or main op that
needs one raises ValueError naming it.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..core.tensor import wrap
from . import program as _program
from .save_load import FORMAT, read_meta

__all__ = ["MetaGraphDef", "SavedModelBuilder", "SignatureDef", "TensorInfo",
           "build_signature_def", "build_tensor_info", "get_tensor_from_tensor_info",
           "is_valid_signature", "load", "maybe_saved_model_directory",
           "predict_signature_def", "simple_save"]

PREDICT_METHOD_NAME = "tensorflow/serving/predict"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
SERVING, TRAINING = "serve", "train"

# TensorFlow's DataType enum values (TensorInfo.dtype)
_DT = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "int64": 9,
       "bool": 10, "float16": 19, "uint16": 17, "uint32": 22, "uint64": 23}
_DT_NAMES = {v: k for k, v in _DT.items()}


# ---- TensorInfo, SignatureDef, MetaGraphDef --------------------------------------------------
class _Dim:
    def __init__(self, size):
        self.size = size

    def __repr__(self) -> str:
        return f"dim {{ size: {self.size} }}"


class TensorShapeProto:
    """``tensor_shape`` of a TensorInfo: ``dim`` (each ``size``, -1 unknown),
    ``unknown_rank``."""

    def __init__(self, shape):
        self.unknown_rank = shape is None
        self.dim = [] if shape is None else [_Dim(-1 if d is None else int(d)) for d in shape]

    def as_list(self):
        return None if self.unknown_rank else [None if d.size < 0 else d.size for d in self.dim]


class TensorInfo:
    """A graph tensor described by name, dtype (TF's DataType enum) and shape."""

    def __init__(self, name="", dtype=0, shape=None):
        self.name = name
        self.dtype = dtype
        self.tensor_shape = TensorShapeProto(shape)

    def to_json(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "shape": self.tensor_shape.as_list()}

    @classmethod
    def from_json(cls, d) -> TensorInfo:
        return cls(d["name"], d["dtype"], d["shape"])

    def __eq__(self, other):
        return isinstance(other, TensorInfo) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return (f"TensorInfo(name={self.name!r}, dtype={self.dtype}, "
                f"shape={self.tensor_shape.as_list()})")


class SignatureDef:
    """``inputs`` and ``outputs`` (key -> TensorInfo) and ``method_name``."""

    def __init__(self, inputs=None, outputs=None, method_name=""):
        self.inputs = dict(inputs or {})
        self.outputs = dict(outputs or {})
        self.method_name = method_name or ""

    def to_json(self) -> dict:
        return {"inputs": {k: v.to_json() for k, v in self.inputs.items()},
                "outputs": {k: v.to_json() for k, v in self.outputs.items()},
                "method_name": self.method_name}

    @classmethod
    def from_json(cls, d) -> SignatureDef:
        return cls({k: TensorInfo.from_json(v) for k, v in d["inputs"].items()},
                   {k: TensorInfo.from_json(v) for k, v in d["outputs"].items()},
                   d["method_name"])

    def __eq__(self, other):
        return isinstance(other, SignatureDef) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"SignatureDef({self.to_json()!r})"


class MetaInfoDef:
    def __init__(self, tags):
        self.tags = list(tags)


class MetaGraphDef:
    """What ``load`` returns: ``signature_def`` (key -> SignatureDef) and ``meta_info_def``
    (its ``tags``)."""

    def __init__(self, tags, signature_def):
        self.meta_info_def = MetaInfoDef(tags)
        self.signature_def = dict(signature_def)


# ---- utils -----------------------------------------------------------------------------------
def build_tensor_info(tensor) -> TensorInfo:
    """The TensorInfo of graph tensor ``tensor`` (name, dtype, shape).

    Raises:
      RuntimeError: called eagerly (TF's message)."""
    from ..graph.core import GraphTensor

    if not isinstance(tensor, GraphTensor):
        raise RuntimeError("build_tensor_info is not supported in Eager mode.")
    shape = tensor.shape
    return TensorInfo(tensor.name, _DT.get(np.dtype(tensor._dtype).name, 0),
                      None if shape.rank is None else shape.as_list())


def get_tensor_from_tensor_info(tensor_info, graph=None, import_scope=None):
    """The graph tensor ``tensor_info`` names, in ``graph`` (default: the default graph)."""
    from ..graph.core import get_default_graph

    graph = graph or get_default_graph()
    return graph.get_tensor_by_name(_scoped(tensor_info.name, import_scope))


def _scoped(name, scope):
    return f"{scope.rstrip('/')}/{name}" if scope else name


# ---- signature_def_utils -------------------------------------------------------------------
def build_signature_def(inputs=None, outputs=None, method_name=None, defaults=None):
    """A SignatureDef of ``inputs`` and ``outputs`` (key -> TensorInfo)."""
    del defaults
    return SignatureDef(inputs, outputs, method_name)


def predict_signature_def(inputs, outputs):
    """A predict SignatureDef of ``inputs`` and ``outputs`` (key -> graph tensor).

    Raises:
      ValueError: ``inputs`` or ``outputs`` is None or empty (TF's messages)."""
    if inputs is None or not inputs:
        raise ValueError("Prediction `inputs` cannot be None or empty.")
    if outputs is None or not outputs:
        raise ValueError("Prediction `outputs` cannot be None or empty.")
    return build_signature_def({k: build_tensor_info(t) for k, t in inputs.items()},
                               {k: build_tensor_info(t) for k, t in outputs.items()},
                               PREDICT_METHOD_NAME)


def is_valid_signature(signature_def) -> bool:
    """Whether ``signature_def`` is a predict signature with inputs and outputs (ipu_gpu has
    no string tensors, so no valid classify or regress signature)."""
    return (isinstance(signature_def, SignatureDef) and bool(signature_def.inputs)
            and bool(signature_def.outputs)
            and signature_def.method_name == PREDICT_METHOD_NAME
            and all(i.name and i.dtype for i in [*signature_def.inputs.values(),
                                                 *signature_def.outputs.values()]))


# ---- saving ----------------------------------------------------------------------------------
class SavedModelBuilder:
    """Builds a SavedModel of one or more meta graphs (tag sets) sharing one set of variable
    values: ``add_meta_graph_and_variables`` first, then ``add_meta_graph`` for more tag
    sets, then ``save``.

    Raises:
      AssertionError: ``export_dir`` exists and is not empty (TF's message)."""

    def __init__(self, export_dir):
        export_dir = os.fspath(export_dir)
        if isinstance(export_dir, bytes):
            export_dir = export_dir.decode()
        if os.path.isdir(export_dir) and os.listdir(export_dir):
            raise AssertionError(f"Export directory {export_dir} already exists, and isn't "
                                 "empty. Please choose a different export directory, or "
                                 "delete all the contents of the specified directory.")
        self._export_dir = export_dir
        self._has_saved_variables = False
        self._meta_graphs: list = []
        self._programs: list = []
        self._variables: dict = {}  # name -> (value, trainable)
        self._objects: dict = {}  # name -> the variable saved under it

    def add_meta_graph_and_variables(self, sess, tags, signature_def_map=None,
                                     assets_collection=None, legacy_init_op=None,
                                     clear_devices=False, main_op=None,
                                     strip_default_attrs=False, saver=None, init_op=None,
                                     train_op=None):
        """Adds the current meta graph (``sess``'s graph) under ``tags`` and saves the values
        of its global variables (read now from the session).

        Raises:
          AssertionError: called twice (TF's message).
          ValueError: a signature's tensor or the main op cannot be written.
          FailedPreconditionError: a variable is not initialized."""
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already "
                                 "been saved. Please invoke `add_meta_graph()` instead.")
        from ..graph.nodes import GraphVariable

        graph = sess.graph
        variables = [v for v in graph.get_collection("variables")
                     if isinstance(v, GraphVariable)]
        for v in variables:
            self._name_of(v)
        self._add(graph, tags, signature_def_map, main_op or init_op or legacy_init_op)
        self._has_saved_variables = True

    def add_meta_graph(self, tags, signature_def_map=None, assets_collection=None,
                       legacy_init_op=None, clear_devices=False, main_op=None,
                       strip_default_attrs=False, saver=None, init_op=None, train_op=None):
        """Adds the default graph as another meta graph under ``tags`` (its variables take the
        values ``add_meta_graph_and_variables`` saved).

        Raises:
          AssertionError: ``add_meta_graph_and_variables`` was not called first (TF's
            message)."""
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been "
                                 "saved yet. Please invoke `add_meta_graph_and_variables()` "
                                 "first.")
        from ..graph.core import get_default_graph

        self._add(get_default_graph(), tags, signature_def_map,
                  main_op or init_op or legacy_init_op)

    def _add(self, graph, tags, signature_def_map, main_op):
        signature_def_map = dict(signature_def_map or {})
        for key, sig in signature_def_map.items():
            if not isinstance(sig, SignatureDef):
                raise TypeError(f"signature_def_map[{key!r}] must be a SignatureDef, got "
                                f"{type(sig).__name__}")
            for info in [*sig.inputs.values(), *sig.outputs.values()]:
                if not info.name or not info.dtype:
                    raise AssertionError("All TensorInfo protos used in the SignatureDefs "
                                         "must have the name and dtype fields set.")
        wanted = [graph.get_tensor_by_name(i.name) for sig in signature_def_map.values()
                  for i in [*sig.inputs.values(), *sig.outputs.values()]]
        groups = {"signatures": wanted}
        if main_op is not None:
            groups["main_op"] = [main_op]
        try:
            header, arrays, variables = _program.encode_graph(graph, groups)
        except _program.NotPortable as e:
            raise ValueError(f"ipu_gpu cannot save this graph in a SavedModel: {e}") from None
        names = [self._name_of(v) for v in variables]
        i = len(self._meta_graphs)
        self._programs.append((f"programs/meta_graph_{i}", header, arrays))
        self._meta_graphs.append({
            "tags": [str(t) for t in _tags(tags)], "program": f"programs/meta_graph_{i}",
            "variables": names, "main_op": main_op is not None,
            "signature_def": {k: s.to_json() for k, s in signature_def_map.items()}})

    def save(self, as_text=False) -> bytes:
        """Writes the SavedModel; returns the path of its ``saved_model.json`` (bytes)."""
        del as_text
        d = self._export_dir
        os.makedirs(os.path.join(d, "variables"), exist_ok=True)
        os.makedirs(os.path.join(d, "programs"), exist_ok=True)
        for rel, header, arrays in self._programs:
            with open(os.path.join(d, rel + ".json"), "w") as f:
                json.dump(header, f)
            np.savez(os.path.join(d, rel + ".npz"), **arrays)
        np.savez(os.path.join(d, "variables", "variables.npz"),
                 **{n: v for n, (v, _) in self._variables.items()})
        meta = {"format": FORMAT, "version": 1, "kind": "tf1",
                "variables": [{"name": n, "trainable": t}
                              for n, (_, t) in self._variables.items()],
                "meta_graphs": self._meta_graphs}
        path = os.path.join(d, "saved_model.json")
        with open(path, "w") as f:
            json.dump(meta, f, indent=1)
        return path.encode()


    def _name_of(self, v) -> str:
        """The saved name of variable ``v``: a graph variable's is its name (one of a later
        meta graph with a saved name takes the saved value, as TF restores by name); another
        variable's, a Keras layer's say, its own name made unique. Its value is saved when
        the name is new.

        Raises:
          FailedPreconditionError: a new graph variable is not initialized."""
        from ..graph.nodes import GraphVariable

        for name, known in self._objects.items():
            if known is v:
                return name
        if isinstance(v, GraphVariable):
            name = v.op.name
            if name not in self._variables:
                self._variables[name] = (v._read()[0].numpy(), v.trainable)
                self._objects[name] = v
            return name
        base, k = _program._variable_name(v, 0), 1
        name = base
        while name in self._variables:
            name, k = f"{base}_{k}", k + 1
        self._variables[name] = (v.numpy(), bool(getattr(v, "trainable", True)))
        self._objects[name] = v
        return name


def _tags(tags) -> list:
    if isinstance(tags, (str, bytes)):
        tags = [tags]
    return [t.decode() if isinstance(t, bytes) else t for t in tags]


def simple_save(session, export_dir, inputs, outputs, legacy_init_op=None):
    """Saves ``session``'s graph and variables as a SavedModel for serving: tag ``serve``
    and the predict signature ``serving_default`` of ``inputs`` and ``outputs`` (key -> graph
    tensor)."""
    signature = {"serving_default": predict_signature_def(inputs, outputs)}
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(session, tags=[SERVING], signature_def_map=signature,
                                   main_op=legacy_init_op, strip_default_attrs=True)
    b.save()


# ---- loading ---------------------------------------------------------------------------------
def maybe_saved_model_directory(export_dir) -> bool:
    """Whether ``export_dir`` holds a SavedModel."""
    return os.path.isfile(os.path.join(os.fspath(export_dir), "saved_model.json"))


def load(sess, tags, export_dir, import_scope=None, **saver_kwargs):
    """Loads the meta graph of tag set ``tags`` from ``export_dir`` into ``sess``'s graph,
    restores its variables' values and runs its main op; returns its MetaGraphDef.

    Raises:
      OSError: no SavedModel in ``export_dir`` (TF's message).
      RuntimeError: no meta graph has exactly these tags (TF's message)."""
    del saver_kwargs
    export_dir = os.fspath(export_dir)
    if isinstance(export_dir, bytes):
        export_dir = export_dir.decode()
    meta = read_meta(export_dir)
    if "meta_graphs" not in meta:
        raise RuntimeError(f"The SavedModel in {export_dir} was written by "
                           "tf.saved_model.save (or ipu.serving): its functions have no TF 1 "
                           "graph for a Session; load it with tf.saved_model.load")
    graphs = meta["meta_graphs"]
    wanted = set(_tags(tags))
    entry = next((m for m in graphs if set(m["tags"]) == wanted), None)
    if entry is None:
        available = [set(m["tags"]) for m in graphs]
        raise RuntimeError(f"MetaGraphDef associated with tags {_tags_text(tags)} could not be "
                           f"found in SavedModel, with available tags '{available}'. To "
                           "inspect available tag-sets in the SavedModel, please use the "
                           "SavedModel CLI: `saved_model_cli`.")
    with open(os.path.join(export_dir, entry["program"] + ".json")) as f:
        header = json.load(f)
    with np.load(os.path.join(export_dir, entry["program"] + ".npz"),
                 allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    with np.load(os.path.join(export_dir, "variables", "variables.npz")) as z:
        values = {k: z[k] for k in z.files}
    trainable = {v["name"]: v["trainable"] for v in meta["variables"]}
    main_op = _import(sess.graph, header, arrays, entry["variables"], values, trainable,
                      import_scope)
    if entry.get("main_op") and main_op is not None:
        sess.run(main_op)
    signatures = {k: SignatureDef.from_json(s) for k, s in entry["signature_def"].items()}
    return MetaGraphDef(entry["tags"], signatures)


def _tags_text(tags) -> str:
    return "'" + ",".join(_tags(tags)) + "'"


def _import(graph, header, arrays, program_vars, values, trainable, scope):
    """Replays a written graph into ``graph``: placeholders, variables (restored), operations
    under their saved names (prefixed by ``scope``). Returns the main op, if any."""
    from ..graph.core import add_node
    from ..graph.nodes import GraphVariable, placeholder, placeholder_with_default

    with graph.as_default():
        holders = {i: placeholder(np.dtype(p["dtype"]), p["shape"],
                                  name=_scoped(p["name"], scope))
                   for i, p in enumerate(header["placeholders"])}
        made = {}
        for name, value in values.items():
            v = GraphVariable(graph, wrap(value), trainable.get(name, True),
                              _scoped(name, scope))
            v._initialize(wrap(value))
            made[name] = v
        variables = [made[n] for n in program_vars]
        created: dict = {}
        source = _Arrays(arrays, variables)
        decode = _program._Decoder(source, holders, created)
        with graph.name_scope("ipu_gpu_import"):
            for i, node in enumerate(header["nodes"]):
                controls = [_op_of(created[c]) for c in node.get("control", ())]
                controls = [c for c in controls if c is not None]
                args = decode(node["inputs"])
                kind = node["call"]
                if kind == "const":
                    value = args[0]
                    op = add_node(graph, "Const", "Const", [], lambda value=value: value,
                                  [(value.dtype, list(value.shape))])
                    op.const_value = value
                    outs = list(op.outputs)
                elif kind == "default":
                    outs = [placeholder_with_default(args[0],
                                                     decode(node["kwargs"])["shape"])]
                elif kind == "assign":
                    outs = [args[0]._assign(node["target"], args[1], None)]
                elif kind == "group":
                    op = add_node(graph, "NoOp", "NoOp", [], lambda: [], [],
                                  control_inputs=controls)
                    created[i] = op
                    _rename(graph, op, _scoped(node["name"], scope))
                    continue
                else:
                    fn = (_program.registry.REGISTRY[node["target"]] if kind == "op"
                          else _program._resolve(node["target"]))
                    out = (fn(*args[0], **args[1]) if kind == "function"
                           else fn(*args, **decode(node["kwargs"])))
                    outs = list(out) if isinstance(out, (list, tuple)) else [out]
                op = _op_of(outs)
                if op is not None:
                    _rename(graph, op, _scoped(node["name"], scope))
                    op.control_inputs.extend(c for c in controls
                                             if c not in op.control_inputs)
                created[i] = outs
    main = header["groups"].get("main_op")
    if not main:
        return None
    ref = main[0]
    return created[ref["op"]] if "op" in ref else _op_of(decode(ref))


class _Arrays:
    def __init__(self, arrays, variables):
        self.arrays, self.variables = arrays, variables


def _op_of(outs):
    from ..graph.core import GraphTensor, Operation

    if isinstance(outs, Operation):
        return outs
    for t in outs if isinstance(outs, list) else [outs]:
        if isinstance(t, GraphTensor):
            return t.op
    return None


def _rename(graph, op, name):
    """Gives ``op`` its saved ``name`` (kept unique in ``graph``)."""
    if name in graph._by_name and graph._by_name[name] is not op:
        name = graph.unique_name(name)
    if graph._by_name.get(op.name) is op:
        del graph._by_name[op.name]
    op.name = name
    graph._by_name[name] = op
    key = name.lower()
    graph._names[key] = max(graph._names.get(key, 0), 1)


# ---- TF 2's tf.saved_model.load of a TF 1 SavedModel ----------------------------------------
class _V1Signature:
    """A TF 1 signature loaded by TF 2's ``load``: keyword arguments by input key, a dict of
    eager outputs by output key."""

    def __init__(self, key, sess, signature):
        self.__name__ = key
        self._sess, self._signature = sess, signature

    def __call__(self, *args, **kwargs):
        if args:
            raise TypeError(f"{self.__name__}() takes 0 positional arguments but {len(args)} "
                            "were given")
        inputs = self._signature.inputs
        missing = [k for k in inputs if k not in kwargs]
        if missing:
            raise TypeError(f"{self.__name__}() missing required argument: '{missing[0]}'")
        extra = [k for k in kwargs if k not in inputs]
        if extra:
            raise TypeError(f"{self.__name__}() got an unexpected keyword argument "
                            f"'{extra[0]}'")
        feeds = {inputs[k].name: v.numpy() if hasattr(v, "numpy") else v
                 for k, v in kwargs.items()}
        fetches = {k: i.name for k, i in self._signature.outputs.items()}
        return {k: wrap(np.asarray(v)) for k, v in self._sess.run(fetches, feeds).items()}


class _V1Object:
    """What TF 2's ``load`` gives for a TF 1 SavedModel: ``signatures``, ``variables``,
    ``graph``."""

    def __init__(self, sess, meta_graph):
        self.graph = sess.graph
        self.signatures = {k: _V1Signature(k, sess, s)
                           for k, s in meta_graph.signature_def.items()}
        self.variables = tuple(sess.graph.get_collection("variables"))
        self.trainable_variables = tuple(sess.graph.get_collection("trainable_variables"))


def load_v1_in_v2(export_dir, meta, tags):
    """TF 2's ``tf.saved_model.load`` of a TF 1 SavedModel: the meta graph of ``tags`` (None:
    the only one) loaded into a graph and session of its own.

    Raises:
      ValueError: ``tags`` is None and there are several meta graphs (TF's message)."""
    from ..graph.core import Graph
    from ..graph.session import Session

    graphs = meta["meta_graphs"]
    if tags is None:
        if len(graphs) != 1:
            sets = [m["tags"] for m in graphs]
            raise ValueError("Importing a SavedModel with `tf.saved_model.load` requires a "
                             "`tags=` argument if there is more than one MetaGraph. Got "
                             f"`tags=None`, but there are {len(graphs)} MetaGraphs in the "
                             f"SavedModel with tag sets: {sets}. Pass a `tags=` argument to "
                             "load this SavedModel.")
        tags = graphs[0]["tags"]
    sess = Session(graph=Graph())
    return _V1Object(sess, load(sess, tags, export_dir))
