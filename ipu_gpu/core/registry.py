"""The op registry: one definition per op (check, forward, backward), one dispatch path.

``register`` returns an ``Op``; calling it converts the inputs to arrays,
refuses mixed host/device inputs, runs ``check`` (shapes and dtypes only, so
no device sync), picks the kernel module from the array type, runs
``forward`` and records the call on any GradientTape that watches an input.

An allocation failure inside ``forward`` becomes TF's ResourceExhaustedError naming the op
(``allocation.py``). An input that is a symbolic value (a KerasTensor, while a functional
Keras model is built) refuses conversion; the op then hands the call to the hook the keras
package installed (``set_symbolic_hook``), which records it as a layer.
"""

from __future__ import annotations

import sys

import numpy as np

from . import backend, tape
from .strings import STRING_OPS, refuse as _refuse_strings
from .allocation import allocation_failure
from .convert import to_array
from .indexed_slices import IndexedSlices, densify
from .nest import flatten
from . import tensor as _tensor_module
from .tensor import Tensor, Variable, _next_id, wrap

_tape_local = tape._local  # the tapes recording in this thread (``.tapes``)
_new_object = object.__new__
_NO_MODULE = object()  # not looked up yet in ``Op._kernel_modules``
_STRING = np.dtype(object)  # tf.string (core/strings.py): host-only, and only STRING_OPS take it

REGISTRY: dict = {}  # op name -> Op

# Symbolic inputs (Keras's KerasTensors, TF1 graph tensors): values not computed yet. Core
# imports neither; each package installs its types and hook (``set_symbolic_hook``).
_symbolic_types: tuple = ()
_symbolic_hook = None
_handlers: dict = {}  # owner -> (types, hook)


def set_symbolic_hook(types: tuple, hook, owner: str = "keras") -> None:
    """Install ``hook(op, inputs, static)`` for ``owner``, which an op calls in place of
    running when one of its inputs (or a leaf of a list input) is an instance of ``types``
    (``hook`` None removes the owner's).

    The check costs nothing on the eager path: symbolic values refuse conversion to arrays
    (a TypeError), and only then does the op look for them. What the hook returns is the
    op's result (KerasTensors recorded as a layer of a functional model, graph tensors as a
    node of a TF1 graph); NotImplemented lets the conversion's TypeError propagate."""
    global _symbolic_types, _symbolic_hook
    if hook is None:
        _handlers.pop(owner, None)
    else:
        _handlers[owner] = (tuple(types), hook)
    _symbolic_types = tuple(t for types_, _ in _handlers.values() for t in types_)
    _symbolic_hook = _dispatch_symbolic if _handlers else None


def _first_taker(handlers: dict, leaves, *call):
    """The result of the first hook (in ``handlers``: owner -> (types, hook)) whose types
    one of ``leaves`` has and that takes ``call``; NotImplemented when none does."""
    for types, hook in list(handlers.values()):
        if any(isinstance(x, types) for x in leaves):
            result = hook(*call)
            if result is not NotImplemented:
                return result
    return NotImplemented


def _dispatch_symbolic(op, inputs, static):
    return _first_taker(_handlers, flatten(list(inputs)), op, inputs, static)


def _has_symbolic(inputs) -> bool:
    return any(isinstance(x, _symbolic_types) for x in flatten(list(inputs)))


_function_hooks: dict = {}  # owner -> (types, hook)


def set_function_hook(types: tuple, hook, owner: str) -> None:
    """Install ``hook(fn, args, kwargs)`` for public functions that do not reach an op
    with their symbolic arguments (``symbolic_call``); ``hook`` None removes the owner's."""
    if hook is None:
        _function_hooks.pop(owner, None)
    else:
        _function_hooks[owner] = (tuple(types), hook)


_recording_probe = None  # () -> the owner recording input-free calls now (a TF1 graph), or None


def set_recording_probe(probe) -> None:
    """Install ``probe()``: the hook owner recording, right now, calls whose inputs are all
    concrete (TF1 graph construction records random ops, drawn per run), or None."""
    global _recording_probe
    _recording_probe = probe


def recorded_call(fn, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)`` as a node of the graph being built when one is (a random op
    in a TF1 graph draws per run, not once at construction), else NotImplemented."""
    owner = _recording_probe() if _recording_probe is not None else None
    if owner is None or owner not in _function_hooks:
        return NotImplemented
    return _function_hooks[owner][1](fn, args, kwargs)


_variable_read_probe = None  # _recording_probe, once a process builds graphs; else None


def set_variable_read_probe(probe) -> None:
    """Install ``probe()`` (as ``set_recording_probe``) for ops reading variables: the graph
    package installs it when it makes its first node, so eager programs never call it."""
    global _variable_read_probe
    _variable_read_probe = probe


def _record_variable_read(op, inputs, static):
    """An op reading a variable while a TF1 graph is being built is a node of that graph
    (it reads the variable's value when the graph runs, and gradients reach the variable,
    as a TF1 read op), not a constant folded at construction; else NotImplemented."""
    owner = _variable_read_probe()
    if owner is None or owner not in _handlers:
        return NotImplemented
    return _handlers[owner][1](op, inputs, static)


def symbolic_call(fn, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)`` recorded by the hook of its symbolic arguments' owner (a TF1
    graph node), or NotImplemented when no argument is symbolic or no hook takes it. A
    public function calls it before converting an argument that is not a Tensor."""
    return _first_taker(_function_hooks, flatten([list(args), list(kwargs.values())]), fn,
                        args, kwargs)


class Op:
    """A registered op. ``op(*inputs, **static)`` returns Tensors."""

    __slots__ = ("name", "args", "check", "forward", "backward", "family", "twice_differentiable",
                 "scalars_follow", "partial_backward", "_kernel_modules", "strings")

    def __init__(self, name, args, check, forward, backward, family, twice_differentiable,
                 scalars_follow, partial_backward=False):
        self.name = name
        self.args = args
        self.check = check
        self.forward = forward
        self.backward = backward
        self.family = family
        self.twice_differentiable = twice_differentiable
        self.scalars_follow = scalars_follow
        self.partial_backward = partial_backward
        self._kernel_modules = {}
        self.strings = name in STRING_OPS

    def _arg(self, j: int) -> str:
        if j < len(self.args) - 1 or not self.args[-1].endswith("..."):
            return self.args[j]
        return f"{self.args[-1][:-3]}[{j - len(self.args) + 1}]"

    def _strings_allowed(self) -> None:
        """Refuse string inputs as TF does: ops without a string kernel, and any op inside
        an IPU program."""
        if not self.strings or _tensor_module.replica_slot() is not None:
            raise _refuse_strings(self.name)

    def kernels(self, xp):
        """The kernel module of this op's family for arrays of ``xp`` (None if it has none)."""
        if self.family is None:
            self._kernel_modules[xp] = None
            return None
        k = self._kernel_modules.get(xp)
        if k is None:
            try:
                k = self._kernel_modules[xp] = backend.kernels_for(self.family, xp)
            except ModuleNotFoundError as e:
                side = "cpu" if xp is np else "gpu"
                if e.name != f"ipu_gpu.kernels.{self.family}_{side}":
                    raise
                raise TypeError(f"{self.name}: inputs must be numpy arrays (this op has no "
                                f"{side.upper()} kernels yet; use IPU_GPU_BACKEND=cpu), got "
                                f"{xp.__name__} arrays") from None
        return k

    def __call__(self, *inputs, **static):
        n = len(inputs)
        arrays = [None] * n
        ids = [0] * n  # node 0: a value no tape can watch
        anchor = None
        pending = raw = False
        for j, x in enumerate(inputs):
            tx = type(x)
            if tx is Tensor:
                a = x._value
                ids[j] = x._id
            elif tx is Variable and _variable_read_probe is None:  # an eager read: the branch
                if _tape_local.tapes:                               # below, fewer tests
                    tape.variable_accessed(x)
                a = x._value if _tensor_module._slotted else x._host_value
                ids[j] = x._id
            elif tx is Variable or isinstance(x, Tensor):
                if _variable_read_probe is not None and isinstance(x, Variable):
                    result = _record_variable_read(self, inputs, static)
                    if result is not NotImplemented:
                        return result
                if tx is not Variable and getattr(tx, "_reads_cast", False):  # AutoCastVariable
                    x = x.read_value()
                elif _tape_local.tapes and isinstance(x, Variable):
                    tape.variable_accessed(x)
                # a Variable's value: its host value while no replica runs (no property call)
                a = x._host_value if tx is Variable and not _tensor_module._slotted else x._value
                ids[j] = x._id
            elif tx is np.ndarray or backend.is_cupy_array(x):
                a = to_array(x, arg=self._arg(j), op=self.name)
                raw = True
            elif tx is IndexedSlices:  # a sparse gradient: its dense value, as TF converts it
                x = densify(x, arg=self._arg(j))
                inputs = inputs[:j] + (x,) + inputs[j + 1:]
                a = x._value
                ids[j] = x._id
            else:
                pending = True
                continue
            arrays[j] = a
            if anchor is None:
                anchor = a
            elif type(a) is not type(anchor):
                raise TypeError(f"{self.name}: {self._arg(j)} must be on the same device as the "
                                f"other inputs (mixed numpy and cupy arrays)")
        xp = np if anchor is None or type(anchor) is np.ndarray else sys.modules["cupy"]
        if raw and self.scalars_follow:
            anchor = _follow_first_tensor(inputs, arrays, anchor)
        if pending:
            follow = anchor.dtype if (self.scalars_follow and anchor is not None) else None
            target_xp = xp if anchor is not None else None
            try:
                for j, x in enumerate(inputs):
                    if arrays[j] is None:
                        a = _convert_value(x, follow, self._arg(j), self.name, target_xp)
                        arrays[j] = a
                        if a.dtype is _STRING:
                            self._strings_allowed()
            except TypeError:  # a symbolic input refuses conversion: the hook records the call
                if _symbolic_hook is not None and _has_symbolic(inputs):
                    result = _symbolic_hook(self, inputs, static)
                    if result is not NotImplemented:
                        return result
                raise
            if anchor is None:
                xp = backend.xp_of(arrays[0]) if n else backend.default_xp()
        if anchor is not None and anchor.dtype is _STRING:  # a string Tensor first
            self._strings_allowed()
        self.check(*arrays, **static)
        k = self._kernel_modules.get(xp, _NO_MODULE)
        if k is _NO_MODULE:
            k = self.kernels(xp)
        try:
            outputs, residuals = self.forward(k, xp, *arrays, **static)
        except (MemoryError, ValueError) as e:
            err = allocation_failure(self.name, e, xp)
            if err is None:
                raise
            raise err from e
        to = type(outputs)
        if to is np.ndarray or (to is not tuple and to is not list):  # one output: most ops
            if to is not np.ndarray and xp is np:  # numpy reductions give scalars
                outputs = np.asarray(outputs, _STRING if to is bytes else None)
            # ``wrap(outputs)``, inlined: this runs once per op call
            out = _new_object(Tensor)
            out._value = outputs
            out._id = _next_id()
            if _tensor_module._allocation_hook is not None:
                _tensor_module._allocation_hook(out)
            if _tape_local.tapes and self.backward is not None:
                tape.record_one(self, ids, arrays, out._id, outputs, residuals, static, xp)
            return out
        outs = outputs
        if xp is np:
            outs = [o if type(o) is np.ndarray else np.asarray(o) for o in outs]
        out_tensors = [wrap(o) for o in outs]
        if _tape_local.tapes and self.backward is not None:
            tape.record(self, ids, arrays, [t._id for t in out_tensors], outs, residuals,
                        static, xp)
        return to(out_tensors)


def _follow_first_tensor(inputs, arrays, anchor):
    """Cast raw numeric arrays to the dtype of the first Tensor input, as TF converts
    non-Tensor operands (``t_f32 * np.ones(3)`` is float32). Returns the new anchor."""
    first = next((x._value for x in inputs if isinstance(x, Tensor)), None)
    if first is None:
        return anchor
    d = first.dtype
    for j, x in enumerate(inputs):
        a = arrays[j]
        if (a is not None and not isinstance(x, Tensor) and a.dtype != d
                and a.dtype.kind in "fiu" and d.kind in "fiu"):
            with np.errstate(all="ignore"):  # out-of-range values wrap, as TF converts
                arrays[j] = a.astype(d)
    return first


_EXACT_INT = 2**53  # ints a float64 holds exactly (no double rounding on the way)
_FLOAT_MAX: dict = {}  # float dtype -> its largest finite value, as a Python float


def _convert_value(x, follow_dtype, arg, op, xp):
    """Convert a Python value; scalars take ``follow_dtype`` (TF: a Python scalar adopts the
    other operand's dtype) when the value fits it."""
    tx = type(x)
    if ((tx is float or (tx is int and -_EXACT_INT <= x <= _EXACT_INT))
            and follow_dtype is not None and follow_dtype.kind == "f"):
        # the common case (``lr * g``): a Python number beside a float tensor
        big = _FLOAT_MAX.get(follow_dtype)
        if big is None:
            big = _FLOAT_MAX[follow_dtype] = float(np.finfo(follow_dtype).max)
        if -big <= x <= big:  # else: the overflow to inf below, as TF, without the warning
            a = np.array(x, dtype=follow_dtype)
            return a if xp is None or xp is np else backend.to_device(xp, a)
    if (follow_dtype is not None and follow_dtype is not _STRING
            and isinstance(x, (bool, int, float, list, tuple, np.generic))):
        natural = to_array(x, arg=arg, op=op, xp=np)
        if natural.dtype.kind == "f" and follow_dtype.kind in "iub":
            raise TypeError(f"{op}: {arg} must be {follow_dtype.name} like the other operand, "
                            f"got a float value")
        if natural.dtype.kind == "b" and follow_dtype.kind != "b":
            raise TypeError(f"{op}: {arg} must be {follow_dtype.name} like the other operand, "
                            f"got a bool value")
        with np.errstate(all="ignore"):  # overflow gives inf, as TF
            # a float converts from the value itself: 0.1 must not pass through float32
            a = (np.asarray(x, dtype=follow_dtype) if natural.dtype.kind == "f"
                 else natural.astype(follow_dtype))
        return a if xp is None or xp is np else backend.to_device(xp, a)
    return to_array(x, arg=arg, op=op, xp=xp)


def register(name: str, *, args: tuple, check, forward, backward=None, family: str | None = None,
             twice_differentiable: bool = False, scalars_follow: bool = False,
             partial_backward: bool = False) -> Op:
    """Define an op once.

    Args:
      name: the public (Graphcore/TF) name, also the registry key.
      args: names of the array inputs, for error messages; a last name ending in "..."
        (``"values..."``) names a variable number of inputs (``values[0]``, ...).
      check: ``check(*arrays, **static)``; raises ValueError/TypeError; reads no data.
      forward: ``forward(k, xp, *arrays, **static) -> (outputs, residuals)``.
      backward: ``backward(k, xp, residuals, *cotangents, **static) -> grads`` (one per
        input, None where there is none); None for ops without a gradient.
      family: kernel family (``ipu_gpu.kernels.<family>_cpu|_gpu``) passed as ``k``.
      twice_differentiable: the backward rule uses only ``xp`` functions and operators
        on residuals that are inputs, outputs or piecewise-constant data, so it can be
        run on Tensors for second derivatives.
      scalars_follow: Python scalars/lists take the dtype of the first array input.
      partial_backward: the tape also passes ``backward`` a keyword ``needed``, one bool per
        input, False where the gradient would be thrown away (the input does not lead to a
        source, or is not floating-point); the rule may return None there and skip its cost
        (matmul: no ``g @ w.T`` for a data batch that is not being differentiated).
    """
    if name in REGISTRY:
        raise ValueError(f"register: op {name!r} is already registered")
    op = Op(name, tuple(args), check, forward, backward, family, twice_differentiable,
            scalars_follow, partial_backward)
    REGISTRY[name] = op
    return op
