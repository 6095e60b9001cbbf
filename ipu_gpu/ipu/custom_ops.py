"""``tensorflow.python.ipu.custom_ops`` (also ``ipu.ops.custom_ops``): user operations.

``precompiled_user_op`` calls a Poplar build function compiled into a shared library (with a
precompiled codelet ``.gp``) and ``cpu_user_operation`` a host callback in one. The emulator
cannot load either (a Poplar program needs the IPU's graph compiler; a callback's C ABI works
on raw buffers the emulator does not hand out), so it runs a Python implementation registered
for the library instead: ``register_user_op(library_path, fn, op_name=...)`` (an emulator
function; Graphcore's API has none). A program runs unmodified when the registration lives in
a file named by the environment variable ``IPU_GPU_USER_OPS`` (Python files or module names,
separated by ``os.pathsep``), imported the first time a user op is called.

``fn(*inputs, attributes=None)`` returns the outputs (tensors or arrays) that ``outs``
describes. Written with TensorFlow ops it is differentiated like any other code, standing in
for the library's ``<op_name>_grad`` function; gradients reach only the inputs in
``inputs_with_gradients`` (all when None). An implementation that returns numpy arrays has no
gradient. ``codelet_expression_op`` needs no registration: its expression is Python.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading

import numpy as np

from ipu_gpu.core import dtypes
from ipu_gpu.core.convert import convert_to_tensor
from ipu_gpu.core.registry import symbolic_call
from ipu_gpu.core.spec import TensorShape
from ipu_gpu.errors import NotFoundError
from ipu_gpu.ops import math as math_ops
from ipu_gpu.ops.array import broadcast_to

__all__ = ["codelet_expression_op", "cpu_user_operation", "precompiled_user_op",
           "register_user_op"]

ENV_VAR = "IPU_GPU_USER_OPS"
_IMPLEMENTATIONS: dict = {}  # (library file name, op_name) -> fn
_LOADED: set = set()
_LOCK = threading.Lock()


def _key(library_path, op_name):
    return os.path.basename(os.fspath(library_path)), op_name


def register_user_op(library_path, fn, op_name: str = "Build") -> None:
    """Emulator only: run ``fn(*inputs, attributes=None)`` wherever a program calls
    ``precompiled_user_op`` / ``cpu_user_operation`` on a library of this file name (the
    directory is ignored) with this ``op_name`` ("Build" is the default of
    ``precompiled_user_op``, "Callback" of ``cpu_user_operation``). Registering again
    replaces ``fn``.

    Raises:
      TypeError: ``fn`` not callable, or ``op_name`` not a string."""
    if not callable(fn):
        raise TypeError(f"register_user_op: fn must be callable, got {fn!r}")
    if not isinstance(op_name, str):
        raise TypeError(f"register_user_op: op_name must be a string, got {op_name!r}")
    with _LOCK:
        _IMPLEMENTATIONS[_key(library_path, op_name)] = fn


def _load_registrations() -> None:
    """Import the files and modules named by IPU_GPU_USER_OPS that are not imported yet."""
    for entry in filter(None, os.environ.get(ENV_VAR, "").split(os.pathsep)):
        if entry in _LOADED:
            continue
        _LOADED.add(entry)
        if entry.endswith(".py") or os.sep in entry:
            spec = importlib.util.spec_from_file_location(
                f"ipu_gpu_user_ops_{len(_LOADED)}", entry)
            if spec is None or spec.loader is None:
                raise NotFoundError(f"{ENV_VAR}: cannot import {entry!r}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            importlib.import_module(entry)


def _implementation(caller: str, library_path, op_name):
    key = _key(library_path, op_name)
    fn = _IMPLEMENTATIONS.get(key)
    if fn is None:
        _load_registrations()
        fn = _IMPLEMENTATIONS.get(key)
    if fn is None:
        raise NotFoundError(
            f"{caller}: the emulator cannot run the function '{op_name}' of the compiled "
            f"library {os.fspath(library_path)!r}. Register a Python implementation before "
            f"the op runs: ipu_gpu.ipu.custom_ops.register_user_op({key[0]!r}, fn, "
            f"op_name={op_name!r}), where fn(*inputs, attributes=None) returns the outputs "
            f"'outs' describes; in the program, or in a file named by the environment "
            f"variable {ENV_VAR} so the program runs unmodified.")
    return fn


def _out_specs(caller: str, outs):
    if outs is None:
        return [], []
    if not isinstance(outs, dict) or set(outs) - {"output_types", "output_shapes"}:
        raise TypeError(f"{caller}: outs must be a dict with the keys 'output_types' and "
                        f"'output_shapes', got {outs!r}")
    types = [dtypes.as_dtype(t, f"{caller}: output_types") for t in outs.get("output_types", [])]
    shapes = [TensorShape(s) for s in outs.get("output_shapes", [])]
    if len(types) != len(shapes):
        raise ValueError(f"{caller}: outs must give as many output_shapes as output_types, "
                         f"got {len(shapes)} and {len(types)}")
    return types, shapes


def _call_user_op(caller, inputs, library_path, outs, op_name, inputs_with_gradients,
                  attributes):
    types, shapes = _out_specs(caller, outs)
    fn = _implementation(caller, library_path, op_name)
    tensors = [convert_to_tensor(x) for x in inputs]
    if inputs_with_gradients is not None:
        keep = {int(i) for i in inputs_with_gradients}
        tensors = [t if i in keep else math_ops.stop_gradient(t) for i, t in enumerate(tensors)]
    result = fn(*tensors, attributes=attributes)
    if result is None:
        result = []
    elif not isinstance(result, (list, tuple)):
        result = [result]
    if len(result) != len(types):
        raise ValueError(f"{caller}: the implementation of '{op_name}' returned {len(result)} "
                         f"outputs, outs describes {len(types)}")
    outputs = []
    for i, (value, d, shape) in enumerate(zip(result, types, shapes)):
        t = convert_to_tensor(value)
        if t.dtype != d or not shape.is_compatible_with(TensorShape(list(t.shape))):
            raise ValueError(f"{caller}: output {i} of '{op_name}' must be a {d.name} tensor "
                             f"of shape {shape}, got {t.dtype.name} {TensorShape(list(t.shape))}")
        outputs.append(t)
    return outputs


def precompiled_user_op(inputs, library_path, gp_path="", outs=None, name="UserOp",
                        op_name="Build", separate_gradients=False, inputs_with_gradients=None,
                        attributes=None, gradient_attributes=None):
    """Call the Poplar function ``op_name`` of the shared library ``library_path`` on
    ``inputs``; here its registered Python implementation (module docstring).

    Args:
      inputs: the tensor inputs.
      library_path: the shared object with the build function.
      gp_path: the precompiled codelet file, if any (unused here).
      outs: {"output_types": [...], "output_shapes": [...]}; None for no outputs.
      name: the op's name.
      op_name: the prefix of the functions in the library (default "Build").
      separate_gradients: one gradient op per input or one for all (no effect on values).
      inputs_with_gradients: the indices of the inputs that get gradients (None: all).
      attributes: a string passed to the implementation as ``attributes=``.
      gradient_attributes: the gradient function's attributes (unused: the gradient is the
        implementation's own).

    Returns:
      The list of output tensors.

    Raises:
      NotFoundError: no implementation registered for the library and ``op_name``; the
        message says what to register.
      ValueError: outputs that are not what ``outs`` describes.
    """
    node = symbolic_call(precompiled_user_op, (inputs,), dict(
        library_path=library_path, gp_path=gp_path, outs=outs, name=name, op_name=op_name,
        separate_gradients=separate_gradients, inputs_with_gradients=inputs_with_gradients,
        attributes=attributes, gradient_attributes=gradient_attributes))
    if node is not NotImplemented:
        return node
    return _call_user_op("precompiled_user_op", inputs, library_path, outs, op_name,
                         inputs_with_gradients, attributes)


def cpu_user_operation(inputs, library_path, outs=None, name="UserOp", op_name="Callback",
                       separate_gradients=False, inputs_with_gradients=None, attributes=None,
                       gradient_attributes=None):
    """Call the host function ``op_name`` of the shared library ``library_path`` on copies of
    ``inputs``; here its registered Python implementation. Arguments, returns and errors as
    ``precompiled_user_op`` (default ``op_name`` "Callback")."""
    node = symbolic_call(cpu_user_operation, (inputs,), dict(
        library_path=library_path, outs=outs, name=name, op_name=op_name,
        separate_gradients=separate_gradients, inputs_with_gradients=inputs_with_gradients,
        attributes=attributes, gradient_attributes=gradient_attributes))
    if node is not NotImplemented:
        return node
    return _call_user_op("cpu_user_operation", inputs, library_path, outs, op_name,
                         inputs_with_gradients, attributes)


def codelet_expression_op(vertex_expression, *args):
    """A fused elementwise expression: ``vertex_expression(*args)`` with the arguments in
    the dtype of the first (float16, float32 or int32), broadcast together as TF's binary
    ops do. As documented, the result has no gradient.

    Raises:
      TypeError: a first argument of another dtype."""
    node = symbolic_call(codelet_expression_op, (vertex_expression, *args), {})
    if node is not NotImplemented:
        return node
    tensors = [convert_to_tensor(a) for a in args]
    d = tensors[0].dtype
    if d not in (dtypes.float16, dtypes.float32, dtypes.int32):
        raise TypeError(f"codelet_expression_op: the first argument must be float16, float32 "
                        f"or int32, got {d.name}")
    tensors = [math_ops.stop_gradient(math_ops.cast(t, d) if t.dtype != d else t)
               for t in tensors]
    out = convert_to_tensor(vertex_expression(*tensors))
    shape = tuple(tensors[0].shape)
    for t in tensors[1:]:
        shape = np.broadcast_shapes(tuple(shape), tuple(t.shape))
    out = math_ops.cast(out, d) if out.dtype != d else out
    return broadcast_to(out, list(shape)) if list(out.shape) != list(shape) else out
