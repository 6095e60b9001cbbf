"""``tf.saved_model.save`` and ``load`` in ipu_gpu's SavedModel format.

A SavedModel directory (docs/architecture.md, "Serving") holds ``saved_model.json`` (format,
version, the functions, the signatures, the variables), ``variables/variables.npz`` (the
Saver's npz checkpoint layout: one array per variable, keyed by its unique name) and, per
traced function, ``programs/<function>.json`` and ``.npz`` (``program.py``: the ops the
function recorded when traced once on placeholders of its input signature). Functions that
run an embedded executable (``ipu.serving``) name it under ``assets/``. Everything is data:
loading runs no code from the directory, so a SavedModel loads in a fresh process.
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..core import nest
from ..core.spec import TensorSpec
from ..core.tensor import Tensor, Variable, wrap
from . import program as _program

__all__ = ["load", "save"]

FORMAT = "ipu_gpu.saved_model"


def read_meta(export_dir) -> dict:
    """The ``saved_model.json`` of an ipu_gpu SavedModel directory (either API's).

    Raises:
      OSError: no SavedModel there (TF's message), or the file is not ours."""
    path = os.path.join(os.fspath(export_dir), "saved_model.json")
    if not os.path.isfile(path):
        raise OSError(f"SavedModel file does not exist at: {export_dir}"
                      f"{os.sep}{{saved_model.pbtxt|saved_model.pb}}")
    with open(path) as f:
        meta = json.load(f)
    if meta.get("format") != FORMAT:
        raise OSError(f"{path} is not an ipu_gpu SavedModel")
    return meta
DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"


# ---- tracing ---------------------------------------------------------------------------------
class Traced:
    """A function traced once: ``header`` and ``arrays`` of its program, the Variables it
    reads (``variables``), its input specs and its output structure."""

    def __init__(self, header, arrays, variables, specs, structure, output_specs=()):
        self.header, self.arrays, self.variables = header, arrays, variables
        self.specs, self.structure = specs, structure
        self.output_specs = list(output_specs)


def _python_parts(fn):
    """(python function, leading bound arguments, parameter names, input signature)."""
    from ..function import ConcreteFunction, Function

    if isinstance(fn, ConcreteFunction):
        f = fn._function if hasattr(fn, "_function") else fn.function
        specs = list(nest.flatten(fn.structured_input_signature[0]))
        return f._python_function, f._leading(), [p.name for p in f._parameters()], specs
    if isinstance(fn, Function):
        sig = fn.input_signature
        return (fn._python_function, fn._leading(), [p.name for p in fn._parameters()],
                None if sig is None else list(sig))
    raise TypeError(f"Expected a tf.function or a concrete function, got {fn!r}")


def trace(fn, specs=None, freeze=False) -> Traced:
    """Trace ``fn`` (a ``tf.function``, a concrete function or a Python callable with
    ``specs``) once on placeholders of its input signature.

    Raises:
      ValueError: no input signature is known; the function records a node ipu_gpu cannot
        write."""
    if specs is None:
        python_fn, leading, names, specs = _python_parts(fn)
        if specs is None:
            raise ValueError(f"Function {getattr(fn, '__name__', fn)!r} has no input_signature: "
                             "give one to tf.function or pass a concrete function")
    else:
        python_fn, leading = fn, ()
        names = _param_names(fn, len(specs))
    specs = [TensorSpec.from_spec(s, name=s.name or (names[i] if i < len(names) else
                                                     f"input_{i}"))
             for i, s in enumerate(specs)]
    return traced_call(python_fn, leading, specs, freeze)


def traced_call(python_fn, leading, specs, freeze) -> Traced:
    """``python_fn(*leading, *placeholders of specs)`` traced once into a graph."""
    from ..graph.core import Graph
    from ..graph.nodes import placeholder

    graph = Graph()
    with _program.tracing(), graph.as_default():
        holders = [placeholder(s.dtype, None if s.shape.rank is None else s.shape.as_list(),
                               name=s.name) for s in specs]
        out = python_fn(*leading, *holders)
    structure = structure_json(out)
    flat = leaves(out)
    try:
        header, arrays, variables = _program.encode_program(holders, {"outputs": flat}, freeze)
    except _program.NotPortable as e:
        raise ValueError(f"ipu_gpu cannot save {getattr(python_fn, '__name__', python_fn)!r}: "
                         f"{e}") from None
    output_specs = [TensorSpec(_program.shape_of(t), _program.dtype_of(t)) for t in flat]
    return Traced(header, arrays, variables, specs, structure, output_specs)


def leaves(structure) -> list:
    """The leaves of ``structure`` in ``structure_json``'s order (dict keys sorted)."""
    if isinstance(structure, dict):
        return [x for k in sorted(structure, key=str) for x in leaves(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [x for v in structure for x in leaves(v)]
    return [structure]


def _param_names(fn, count):
    import inspect

    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"input_{i}" for i in range(count)]


# ---- saving ----------------------------------------------------------------------------------
def _functions_of(obj) -> dict:
    """name -> tf.function of ``obj`` (a tf.function itself: ``__call__``)."""
    from ..function import ConcreteFunction, Function

    if isinstance(obj, (Function, ConcreteFunction)):
        return {"__call__": obj}
    found = {}
    for klass in type(obj).__mro__:
        for name, value in vars(klass).items():
            if isinstance(value, Function) and name not in found:
                found[name] = getattr(obj, name)
    for name, value in vars(obj).items():
        if isinstance(value, (Function, ConcreteFunction)):
            found[name] = value
    return found


def _signatures_map(obj, signatures, functions) -> dict:
    from ..function import ConcreteFunction, Function

    if signatures is None:
        with_sig = {k: f for k, f in functions.items()
                    if isinstance(f, ConcreteFunction) or f.input_signature is not None}
        if len(with_sig) == 1:
            return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: next(iter(with_sig.values()))}
        return {}
    if isinstance(signatures, (Function, ConcreteFunction)):
        return {DEFAULT_SERVING_SIGNATURE_DEF_KEY: signatures}
    if isinstance(signatures, dict):
        for k, v in signatures.items():
            if not isinstance(k, str):
                raise ValueError(f"Signature keys must be strings, got {k!r}")
            if not isinstance(v, (Function, ConcreteFunction)):
                raise ValueError(f"Expected a TensorFlow function for which to generate a "
                                 f"signature, but got {v}. Only `tf.functions` with an input "
                                 "signature or concrete functions can be used as a signature.")
        return dict(signatures)
    raise ValueError(f"Expected a TensorFlow function for which to generate a signature, but "
                     f"got {signatures}. Only `tf.functions` with an input signature or "
                     "concrete functions can be used as a signature.")


def save(obj, export_dir, signatures=None, options=None):
    """Exports ``obj`` (a ``tf.Module``, any object with ``tf.function`` methods, or a
    ``tf.function``) to ``export_dir`` in ipu_gpu's SavedModel format.

    Every ``tf.function`` of ``obj`` with an input signature (or given as a concrete function)
    is traced once and saved; ``signatures`` (a function, or a dict of them by signature key)
    are the serving signatures; None takes the one ``tf.function`` with an input signature
    when there is exactly one (``serving_default``). The variables the functions read are
    saved with their values; the loaded functions read the loaded variables.

    Raises:
      ValueError: a signature is not a tf.function with an input signature or a concrete
        function; a function records a node ipu_gpu cannot write.
    """
    del options
    export_dir = os.fspath(export_dir)
    functions = _functions_of(obj)
    sig_map = _signatures_map(obj, signatures, functions)
    traced = {}
    for name, fn in functions.items():
        if _has_signature(fn):
            traced[name] = trace(fn)
    for key, fn in sig_map.items():
        traced[f"signature_{key}"] = trace(fn)
    keras_call = _keras_call(obj)
    if keras_call is not None:  # a Keras model: its call, inputs and outputs by layer name
        traced["__call__"] = traced_call(keras_call[0], (), keras_call[1], False)
        if signatures is None:
            sig_map = {DEFAULT_SERVING_SIGNATURE_DEF_KEY: None}
            traced[f"signature_{DEFAULT_SERVING_SIGNATURE_DEF_KEY}"] = traced_call(
                keras_call[2], (), keras_call[1], False)
    writer = Writer(export_dir)
    for var in getattr(obj, "variables", ()) or ():
        writer.variable_index(var)
    for name, t in traced.items():
        writer.add_traced(name, t)
    writer.signatures = {key: f"signature_{key}" for key in sig_map}
    writer.write()


def _keras_call(obj):
    """(call, input specs, named call) of a built Keras model (the named call returns its
    outputs keyed by output layer name, as TF's Keras signatures), or None."""
    inputs = getattr(obj, "inputs", None)
    names = getattr(obj, "output_names", None)
    if not inputs or names is None or not callable(obj) or "keras" not in type(obj).__module__:
        return None
    specs = [TensorSpec(t.shape, t.dtype, name=_input_name(t, i)) for i, t in enumerate(inputs)]

    def call(*xs):
        return obj(xs[0] if len(xs) == 1 else list(xs), training=False)

    def named(*xs):
        out = call(*xs)
        flat = out if isinstance(out, (list, tuple)) else [out]
        return dict(zip(names, flat))
    return call, specs, named


def _input_name(t, i) -> str:
    layer = getattr(getattr(t, "_keras_history", None), "layer", None)
    name = getattr(layer, "name", None) or getattr(t, "name", None) or f"input_{i}"
    return name.split(":")[0]


def _has_signature(fn) -> bool:
    from ..function import ConcreteFunction

    return isinstance(fn, ConcreteFunction) or fn.input_signature is not None


class Writer:
    """Writes a SavedModel directory: variables, traced programs, embedded functions."""

    def __init__(self, export_dir: str):
        self.export_dir = export_dir
        self.variables: list = []
        self.functions: dict = {}
        self.signatures: dict = {}

    def variable_index(self, var) -> int:
        for i, known in enumerate(self.variables):
            if known is var:
                return i
        self.variables.append(var)
        return len(self.variables) - 1

    def add_program(self, name: str, t: Traced) -> dict:
        os.makedirs(os.path.join(self.export_dir, "programs"), exist_ok=True)
        rel = f"programs/{name}"
        with open(os.path.join(self.export_dir, rel + ".json"), "w") as f:
            json.dump(t.header, f)
        np.savez(os.path.join(self.export_dir, rel + ".npz"), **t.arrays)
        return {"program": rel, "inputs": [_spec_json(s) for s in t.specs],
                "outputs": t.structure,
                "output_specs": [_spec_json(s) for s in t.output_specs],
                "variables": [self.variable_index(v) for v in t.variables]}

    def add_traced(self, name: str, t: Traced) -> None:
        self.functions[name] = {"kind": "graph", **self.add_program(name, t)}

    def write(self) -> None:
        os.makedirs(os.path.join(self.export_dir, "variables"), exist_ok=True)
        names = _unique_names(self.variables)
        np.savez(os.path.join(self.export_dir, "variables", "variables.npz"),
                 **{n: v.numpy() for n, v in zip(names, self.variables)})
        meta = {"format": FORMAT, "version": 1,
                "variables": [{"name": n, "trainable": bool(getattr(v, "trainable", True))}
                              for n, v in zip(names, self.variables)],
                "functions": self.functions, "signatures": self.signatures}
        with open(os.path.join(self.export_dir, "saved_model.json"), "w") as f:
            json.dump(meta, f, indent=1)


def _unique_names(variables) -> list:
    out, used = [], set()
    for i, v in enumerate(variables):
        base = _program._variable_name(v, i)
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        out.append(name)
    return out


def _spec_json(s) -> dict:
    shape = s.shape
    return {"name": s.name, "dtype": np.dtype(s.dtype).name,
            "shape": None if shape.rank is None else shape.as_list()}


def _spec_from_json(d) -> TensorSpec:
    return TensorSpec(d["shape"], np.dtype(d["dtype"]), d["name"])


# ---- loading ---------------------------------------------------------------------------------
class LoadedFunction:
    """A function restored from a SavedModel: called with its input signature's arguments
    (positionally or by name), it returns the structure the saved function returned."""

    def __init__(self, name, entry, run, specs):
        self.__name__ = name
        self._entry, self._run = entry, run
        self.input_signature = tuple(specs)

    @property
    def structured_input_signature(self):
        return (tuple(self.input_signature), {})

    def _bind(self, args, kwargs) -> list:
        names = [s.name for s in self.input_signature]
        if len(args) > len(names):
            raise TypeError(f"{self.__name__}() takes {len(names)} positional arguments but "
                            f"{len(args)} were given")
        values = list(args)
        for n in names[len(args):]:
            if n not in kwargs:
                raise TypeError(f"{self.__name__}() missing required argument: '{n}'")
            values.append(kwargs.pop(n))
        if kwargs:
            raise TypeError(f"{self.__name__}() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        return [_checked(v, s, self.__name__) for v, s in zip(values, self.input_signature)]

    def __call__(self, *args, **kwargs):
        return self._run(self._bind(args, dict(kwargs)))

    def __repr__(self) -> str:
        return f"<ipu_gpu.saved_model function {self.__name__!r}>"


class SignatureFunction(LoadedFunction):
    """A serving signature: keyword arguments only; returns a dict of outputs (``output_0``,
    ... unless the function returned a dict)."""

    def __call__(self, *args, **kwargs):
        if args:
            params = ", ".join(["*", *(s.name for s in self.input_signature)])
            raise TypeError(f"signature_wrapper({params}) takes 0 positional arguments but "
                            f"{len(args)} were given")
        out = self._run(self._bind((), dict(kwargs)))
        if isinstance(out, dict):
            return out
        leaves = out if isinstance(out, (list, tuple)) else [out]
        return {f"output_{i}": v for i, v in enumerate(leaves)}

    @property
    def structured_input_signature(self):
        return ((), {s.name: s for s in self.input_signature})

    @property
    def structured_outputs(self) -> dict:
        """The outputs' specs by output name."""
        specs = [_spec_from_json(s) for s in self._entry.get("output_specs", [])]
        structure = self._entry.get("outputs")
        if isinstance(structure, dict) and "dict" in structure:
            keys = [k for k, _ in structure["dict"]]
        else:
            keys = [f"output_{i}" for i in range(len(specs))]
        return {k: TensorSpec(s.shape, s.dtype, name=k) for k, s in zip(keys, specs)}


def _checked(value, spec, fname):
    t = value if isinstance(value, Tensor) else wrap(np.asarray(value))
    if t.dtype != spec.dtype:
        if not isinstance(value, Tensor) and np.can_cast(np.asarray(value).dtype, spec.dtype,
                                                         "same_kind"):
            t = wrap(np.asarray(value, dtype=spec.dtype))
        else:
            raise TypeError(f"{fname}: argument '{spec.name}' must be {spec.dtype.name}, got "
                            f"{t.dtype.name}")
    if not spec.shape.is_compatible_with(t.shape):
        raise ValueError(f"{fname}: argument '{spec.name}' must have shape {spec.shape}, got "
                         f"{list(t.shape)}")
    return t


class _UserObject:
    """What ``load`` returns: the saved functions as attributes, ``signatures``,
    ``variables`` and ``trainable_variables``."""

    def __init__(self):
        self.signatures = {}
        self.variables = ()
        self.trainable_variables = ()


def load(export_dir, tags=None, options=None):
    """Load a SavedModel written by ``save`` (or ``ipu.serving``), or one written by TF 1's
    API (its meta graph of ``tags`` runs in a session of its own; ``signatures`` only).

    Raises:
      OSError: ``export_dir`` holds no SavedModel (TF's message)."""
    del options
    export_dir = os.fspath(export_dir)
    meta = read_meta(export_dir)
    if "meta_graphs" in meta:  # written by TF 1's API (tf1.py)
        from .tf1 import load_v1_in_v2

        return load_v1_in_v2(export_dir, meta, tags)
    with np.load(os.path.join(export_dir, "variables", "variables.npz")) as z:
        values = {k: z[k] for k in z.files}
    variables = [Variable(values[v["name"]], trainable=v["trainable"], name=v["name"])
                 for v in meta["variables"]]
    obj = _UserObject()
    obj.variables = tuple(variables)
    obj.trainable_variables = tuple(v for v in variables if v.trainable)
    made = {}
    for name, entry in meta["functions"].items():
        made[name] = _restore(export_dir, name, entry, variables)
        if not name.startswith("signature_"):
            if name == "__call__":
                obj.__call__ = made[name]
                obj = _callable(obj, made[name])
            else:
                setattr(obj, name, made[name])
    for key, fname in meta["signatures"].items():
        entry = meta["functions"][fname]
        obj.signatures[key] = SignatureFunction(key, entry, made[fname]._run,
                                                made[fname].input_signature)
    return obj


def _callable(obj, fn):
    class _CallableUserObject(_UserObject):
        def __call__(self, *args, **kwargs):
            return fn(*args, **kwargs)
    new = _CallableUserObject()
    new.__dict__.update(obj.__dict__)
    return new


def _restore(export_dir, name, entry, variables) -> LoadedFunction:
    specs = [_spec_from_json(s) for s in entry["inputs"]]
    if entry["kind"] == "graph":
        run = _graph_runner(export_dir, entry, variables)
    elif entry["kind"] == "embedded":
        from .embedded import embedded_runner

        run = embedded_runner(export_dir, entry)
    else:
        raise OSError(f"unknown function kind {entry['kind']!r} in the SavedModel")
    return LoadedFunction(name, entry, run, specs)


def _graph_runner(export_dir, entry, variables):
    prog = load_program(export_dir, entry["program"],
                        [variables[i] for i in entry["variables"]])
    structure = entry["outputs"]

    def run(values):
        from ..graph.core import eager_scope

        with eager_scope():
            flat = prog.run("outputs", dict(enumerate(values)))
        return unpack(structure, flat)
    return run


def load_program(export_dir, rel, variables) -> _program.PortableProgram:
    with open(os.path.join(export_dir, rel + ".json")) as f:
        header = json.load(f)
    with np.load(os.path.join(export_dir, rel + ".npz"), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return _program.PortableProgram(header, arrays, variables)


def structure_json(structure):
    """A JSON form of an output structure (leaves become null)."""
    if isinstance(structure, dict):
        keys = sorted(structure, key=str)
        return {"dict": [[str(k), structure_json(structure[k])] for k in keys]}
    if isinstance(structure, tuple):
        return {"tuple": [structure_json(v) for v in structure]}
    if isinstance(structure, list):
        return [structure_json(v) for v in structure]
    return None


def unpack(structure, flat):
    it = iter(flat)

    def build(s):
        if s is None:
            return next(it)
        if isinstance(s, list):
            return [build(v) for v in s]
        if "tuple" in s:
            return tuple(build(v) for v in s["tuple"])
        return {k: build(v) for k, v in s["dict"]}
    return build(structure)
