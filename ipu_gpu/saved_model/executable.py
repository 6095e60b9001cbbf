"""ipu_gpu's compiled-program file (what ``application_compile_op`` writes and the embedded
application runtime runs): the function traced once into a TF1 graph, reduced to one step.

File layout (docs/architecture.md, "Serving"): 8 magic bytes ``IPUGPU\\x00\\x01``, the JSON
header's length as 8 little-endian bytes, the JSON header, then an ``.npz`` archive of the
program's constants. The header holds the signature (startup ``inputs``, ``streamed_inputs``,
``streamed_outputs``: name, dtype, shape, argument index), ``iterations`` (the
``loops.repeat`` count after which the engine restarts), and the program (``program.py``)
with two groups of outputs: ``init`` (the loop-carried values' start) and ``step`` (the
streamed outputs then the next loop-carried values), computed from placeholders in the order
startup inputs, loop-carried values, streamed inputs.

A program whose nodes run Python code that cannot be written (a user's ``py_function``, a
``cond`` or nested loop) is kept in this process: the file then holds its signature and a
token naming it, and only the process that compiled it can run it.
"""

from __future__ import annotations

import inspect
import io
import json
import threading
import uuid

import numpy as np

from ..core import nest
from . import program as _program

__all__ = ["Executable", "compile_function", "read", "write"]

MAGIC = b"IPUGPU\x00\x01"
FORMAT = "ipu_gpu.application"
_LIVE: dict = {}  # token -> LiveProgram (programs kept in this process)
_live_lock = threading.Lock()


class TensorInfo:
    """One entry of a signature: ``name``, ``argument`` (position), ``dtype``, ``shape``."""

    def __init__(self, name, argument, dtype, shape):
        self.name, self.argument = name, int(argument)
        self.dtype = np.dtype(dtype)
        self.shape = None if shape is None else [int(d) if d is not None else None
                                                 for d in shape]

    def to_json(self) -> dict:
        return {"name": self.name, "argument": self.argument, "dtype": self.dtype.name,
                "shape": self.shape}

    @classmethod
    def from_json(cls, d) -> TensorInfo:
        return cls(d["name"], d["argument"], d["dtype"], d["shape"])

    def __repr__(self) -> str:
        return f"TensorInfo({self.name!r}, {self.dtype.name}, {self.shape})"


class Signature:
    """``inputs`` (given once, at start), ``streamed_inputs`` (per call) and
    ``streamed_outputs`` (per call) of an executable."""

    def __init__(self, inputs, streamed_inputs, streamed_outputs):
        self.inputs = list(inputs)
        self.streamed_inputs = list(streamed_inputs)
        self.streamed_outputs = list(streamed_outputs)

    def to_json(self) -> dict:
        return {k: [t.to_json() for t in getattr(self, k)]
                for k in ("inputs", "streamed_inputs", "streamed_outputs")}

    @classmethod
    def from_json(cls, d) -> Signature:
        return cls(*([TensorInfo.from_json(t) for t in d[k]]
                      for k in ("inputs", "streamed_inputs", "streamed_outputs")))


class Executable:
    """A compiled program: ``signature``, ``iterations``, ``num_carried`` and ``program``
    (``run(group, feeds)``; feeds by placeholder index)."""

    def __init__(self, signature, iterations, num_carried, program, header_program=None,
                 arrays=None, live_token=None, outfeed_structure=None):
        self.signature = signature
        self.iterations = int(iterations)
        self.num_carried = int(num_carried)
        self.program = program
        self.header_program = header_program
        self.arrays = arrays or {}
        self.live_token = live_token
        self.outfeed_structure = outfeed_structure

    @property
    def portable(self) -> bool:
        return self.live_token is None


# ---- compiling ---------------------------------------------------------------------------------
def _input_spec(x):
    from ..graph.core import GraphTensor

    if isinstance(x, GraphTensor):
        return x._dtype, (None if x.shape.rank is None else x.shape.as_list())
    a = x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)
    if not hasattr(a, "numpy") and not isinstance(a, np.ndarray):
        a = np.asarray(a)
    return np.dtype(a.dtype), list(a.shape)


def _arg_names(func, count) -> list:
    try:
        params = [p.name for p in inspect.signature(func).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input_{i}" for i in range(count)]


def _leaf_names(structure, prefix) -> list:
    """Names of a feed element's leaves: dict keys (nested ones joined by ``/``), else
    ``<prefix>_<i>``."""
    if isinstance(structure, dict):
        names = []
        for k in sorted(structure):
            sub = structure[k]
            if isinstance(sub, (dict, list, tuple)):
                names.extend(f"{k}/{n}" for n in _leaf_names(sub, str(k)))
            else:
                names.append(str(k))
        return names
    return [f"{prefix}_{i}" for i in range(len(nest.flatten(structure)))]


def _repeat_parts(op):
    """(count, carried placeholders, infeed placeholders, body outputs then body operations,
    infeed queue) of a traced ``loops.repeat`` node (``graph/program.traced_repeat``'s closure)."""
    cv = inspect.getclosurevars(op.kernel.fn).nonlocals
    try:
        body = cv["body_plan"]
        ops = [o for o in body.ops if o.type != "OutfeedEnqueue"]
        return (int(cv["n"]), list(cv["holders"]), list(cv["flat_holders"]),
                [*body.tensors, *ops], cv["infeed_queue"])
    except KeyError as e:  # the layout of traced_repeat changed
        raise RuntimeError(f"ipu_gpu: cannot read the traced loops.repeat node {op.name!r} "
                           f"({e})") from None


class Trace:
    """An application traced once into a graph: its placeholders (startup inputs, loop-carried
    values, streamed inputs), the ``init`` and ``step`` groups, the outfeed enqueues and the
    names of the signature's entries."""

    def __init__(self, graph, func, inputs):
        from ..graph.core import Graph
        from ..graph.nodes import placeholder

        self.graph = graph if graph is not None else Graph()
        names = _arg_names(func, len(inputs))
        start = len(self.graph._ops)
        with _program.tracing(), self.graph.as_default():
            self.args = [placeholder(d, s, name=n)
                         for n, (d, s) in zip(names, map(_input_spec, inputs))]
            func(*self.args)
        ops = self.graph._ops[start:]
        repeats = [op for op in ops if op.type == "Repeat"]
        inner = set()
        for op in repeats:
            inner |= set(inspect.getclosurevars(op.kernel.fn).nonlocals["body_plan"].inside)
        top = [op for op in repeats if id(op) not in inner]
        if len(top) > 1:
            raise ValueError("ipu_gpu: an application with several loops.repeat at its top "
                             "level cannot be compiled into one executable; wrap them in one "
                             "loop")
        self.enqueues = [op for op in ops if op.type == "OutfeedEnqueue"]
        self.streamed_out = [x for op in self.enqueues
                             for x in nest.flatten(op.inputs_structure[0])]
        self.out_names = [n for op in self.enqueues
                          for n in _leaf_names(op.inputs_structure[0], "outfeed")]
        if top:
            (self.iterations, self.carried, self.streamed, carried_next,
             infeed) = _repeat_parts(top[0])
            init = list(nest.flatten(top[0].inputs_structure[0]))
            spec = infeed._source.spec if infeed is not None else None
            self.in_names = _leaf_names(spec.structure, "infeed") if spec is not None else []
        else:
            self.iterations, self.carried, self.streamed = 1, [], []
            carried_next, init, self.in_names = [], [], []
        self.placeholders = [*self.args, *self.carried, *self.streamed]
        self.groups = {"init": init, "step": [*self.streamed_out, *carried_next]}


def finish(trace: Trace, freeze_variables: bool) -> Executable:
    """The executable of ``trace``: written as data when every node can be, else kept in this
    process; variables frozen to their current values or made startup inputs."""
    try:
        header, arrays, _ = _program.encode_program(
            trace.placeholders, trace.groups, freeze_variables, skip=trace.enqueues)
        program = _program.PortableProgram(header, arrays)
        token = None
    except _program.NotPortable:
        header, arrays = None, {}
        program = _program.LiveProgram(trace.placeholders, trace.groups)
        token = uuid.uuid4().hex
        with _live_lock:
            _LIVE[token] = program
    n_args = len(trace.args)
    var_infos = [TensorInfo(v["name"], n_args + i, v["dtype"], v["shape"])
                 for i, v in enumerate(header["variables"])] if header else []
    signature = Signature(
        [TensorInfo(p.op.name, i, p._dtype, _program.shape_of(p)) for i, p in enumerate(trace.args)]
        + var_infos,
        [TensorInfo(n, i, p._dtype, _program.shape_of(p)) for i, (n, p) in
         enumerate(zip(trace.in_names, trace.streamed))],
        [TensorInfo(n, i, _program.dtype_of(t), _program.shape_of(t)) for i, (n, t) in
         enumerate(zip(trace.out_names, trace.streamed_out))])
    return Executable(signature, trace.iterations, len(trace.carried), program, header, arrays,
                      token, [_structure_json(op.inputs_structure[0]) for op in trace.enqueues])


def compile_function(func, inputs=(), freeze_variables=False, graph=None) -> Executable:
    """Trace ``func(*inputs)`` once (into ``graph``, else a graph of its own) and keep one
    iteration of its program.

    Raises:
      ValueError: the program has more than one ``loops.repeat`` at its top level."""
    return finish(Trace(graph, func, list(inputs)), freeze_variables)


def _structure_json(structure):
    if isinstance(structure, dict):
        return {str(k): _structure_json(v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return [_structure_json(v) for v in structure]
    return None




# ---- the file ----------------------------------------------------------------------------------
def write(path: str, exe: Executable) -> None:
    """Write ``exe`` to ``path`` in the layout of this module's docstring."""
    header = {"format": FORMAT, "version": 1, "signature": exe.signature.to_json(),
              "iterations": exe.iterations, "num_carried": exe.num_carried,
              "outfeed_structure": exe.outfeed_structure, "live_token": exe.live_token,
              "program": exe.header_program}
    blob = json.dumps(header).encode("utf-8")
    buf = io.BytesIO()
    np.savez(buf, **exe.arrays)
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        f.write(buf.getvalue())


_read_cache: dict = {}  # (path, mtime, size) -> Executable


def read_cached(path: str) -> Executable:
    """``read(path)``, parsed once per version of the file (path, modification time, size)."""
    import os

    st = os.stat(path)
    key = (os.path.abspath(path), st.st_mtime_ns, st.st_size)
    exe = _read_cache.get(key)
    if exe is None:
        exe = read(path)
        if len(_read_cache) >= 64:
            _read_cache.clear()
        _read_cache[key] = exe
    return exe


def read(path: str) -> Executable:
    """The executable in ``path``.

    Raises:
      Exception: the file is not an ipu_gpu executable (Graphcore's message).
      ValueError: the program was compiled by another process and cannot be run here."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != MAGIC:
        raise Exception(f"Executable file '{path}' is not a TensorFlow Poplar binary.")  # noqa: TRY002
    size = int.from_bytes(data[8:16], "little")
    header = json.loads(data[16:16 + size].decode("utf-8"))
    signature = Signature.from_json(header["signature"])
    token = header.get("live_token")
    if token is not None:
        with _live_lock:
            program = _LIVE.get(token)
        if program is None:
            raise ValueError(
                f"Executable file '{path}' holds a program that runs Python code ipu_gpu "
                "cannot write to a file; only the process that compiled it can run it")
        arrays = {}
    else:
        with np.load(io.BytesIO(data[16 + size:]), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        program = _program.PortableProgram(header["program"], arrays)
    return Executable(signature, header["iterations"], header["num_carried"], program,
                      header["program"], arrays, token, header.get("outfeed_structure"))
