"""``tf.function``, ``tf.py_function`` and ``tf.numpy_function``.

ipu_gpu executes eagerly, so a ``tf.function`` runs its Python function on every call:
Python loops over ``tf.range`` or over Tensors, ``if`` on a Tensor's value, ``print`` — all
behave as in TensorFlow's eager mode (``tf.config.run_functions_eagerly(True)``). What the
wrapper adds is TensorFlow's contract around the call:

* ``input_signature`` (a possibly nested list of ``TensorSpec``) is checked at decoration
  and every argument is bound against it as TensorFlow binds it: a Tensor must have the
  spec's dtype and a compatible shape, other values (numpy arrays, Python numbers and lists)
  are converted to the spec's dtype; a mismatch raises TypeError "Binding inputs to
  tf.function failed due to ...". The function receives Tensors.
* ``get_concrete_function(*args)`` returns a ``ConcreteFunction`` with TensorFlow's
  ``structured_input_signature`` (specs named after the parameters, Python values as
  literals) that binds its arguments against that signature.
* ``experimental_get_tracing_count()`` counts the traces TensorFlow would have made: one per
  distinct input signature (Tensors by shape and dtype, Python values by value); with
  ``reduce_retracing`` a shape that differs from a traced one is generalised (``None`` where
  the dimensions differ) as TF does. The per-signature cache is where tracing to a graph
  would attach.

Differences from TensorFlow, all consequences of running eagerly: Python side effects run on
every call, not only while tracing; ``autograph``, ``jit_compile`` and the experimental
options are accepted and change nothing; a ``ConcreteFunction`` checks shapes (TensorFlow's
falls back to a flat signature that does not); nested ``input_signature`` structures accept
a list where the spec has a tuple (as TensorFlow 2.6, the IPU SDK's version).

``py_function(func, inp, Tout)`` calls ``func`` on Tensors and converts its results to the
``Tout`` dtypes as TensorFlow's ``EagerPyFunc`` does; a GradientTape differentiates it with
respect to ``inp`` through the ipu_gpu ops ``func`` runs (as TF: variables ``func`` reads
without receiving them in ``inp`` get no gradient). ``numpy_function`` calls ``func`` on
numpy arrays; each result must already have its ``Tout`` dtype (TensorFlow's ``PyFunc``
kernel, which is what TF 2.6 runs in eager mode too) and has no gradient. An exception
raised by ``func`` propagates unchanged (TensorFlow wraps it in ``UnknownError``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import sys
import weakref

import numpy as np

from .core import dtypes, nest
from .core import tape as _tape
from .core.convert import constant, convert_to_tensor
from .core.registry import register
from .core.spec import TensorShape, TensorSpec
from .core.tensor import Tensor, wrap
from .errors import InvalidArgumentError

__all__ = ["ConcreteFunction", "Function", "function", "numpy_function", "py_function"]

# TF's spelling of dtypes in kernel messages ("expected to be a float tensor").
_TF_NAMES = {"float16": "half", "float32": "float", "float64": "double", "object": "string"}


def _tf_name(d) -> str:
    d = np.dtype(d)
    return _TF_NAMES.get(d.name, d.name)


# ---- specs ---------------------------------------------------------------------------------


def _is_spec(x) -> bool:
    """A TensorSpec, ours or any object with TensorSpec's shape/dtype/name (TF's own)."""
    return isinstance(x, TensorSpec) or (
        not isinstance(x, (Tensor, np.ndarray)) and hasattr(x, "shape")
        and hasattr(x, "dtype") and hasattr(x, "name") and not callable(x))


def _as_spec(x) -> TensorSpec:
    if isinstance(x, TensorSpec):
        return x
    shape = x.shape
    dims = getattr(shape, "rank", 0)
    shape = TensorShape(None) if dims is None else TensorShape(
        [None if getattr(d, "value", d) is None else int(getattr(d, "value", d)) for d in shape])
    return TensorSpec(shape, x.dtype, x.name)


def _spec_of(value, name) -> TensorSpec:
    return TensorSpec(tuple(value.shape), value.dtype, name)


def _check_input_signature(input_signature):
    """TF's checks at decoration: a tuple or list whose leaves are all TensorSpecs."""
    if input_signature is None:
        return None
    if not isinstance(input_signature, (tuple, list)):
        raise TypeError(f"input_signature must be either a tuple or a list, got "
                        f"{type(input_signature)}.")
    leaves = nest.flatten(input_signature)
    bad = [x for x in leaves if not _is_spec(x)]
    if bad:
        raise TypeError(f"input_signature must be a possibly nested sequence of TensorSpec "
                        f"objects, got invalid args {bad} with types "
                        f"{[type(x) for x in bad]}.")
    return tuple(nest.pack_sequence_as(list(input_signature), [_as_spec(x) for x in leaves]))


class _BindError(TypeError):
    """Why one argument does not bind; ``_bind_failed`` wraps it in TF's message."""


def _bind_failed(reason, args, kwargs, signature_text):
    return TypeError(f"Binding inputs to tf.function failed due to `{reason}`. Received args: "
                     f"{args} and kwargs: {kwargs} for signature: {signature_text}.")


def _bind_to_spec(value, spec: TensorSpec):
    """``value`` as a Tensor matching ``spec`` (TF's binding of one argument)."""
    if isinstance(value, Tensor):
        t = convert_to_tensor(value)  # a Variable gives a connected read
        if t.dtype != spec.dtype or not spec.shape.is_compatible_with(tuple(t.shape)):
            raise _BindError(f"Can not cast {_spec_of(t, None)!r} to "
                             f"{TensorSpec(spec.shape, spec.dtype)!r}")
        return t
    if value is None or isinstance(value, str):
        raise _BindError(f"Attempt to convert a value ({value!r}) with an unsupported type "
                         f"({type(value)}) to a Tensor." if value is None else
                         f"Cannot convert {value!r} to EagerTensor of dtype "
                         f"{_tf_name(spec.dtype)}")
    try:  # constant: arrays land on the current backend, as TF converts to the default device
        t = constant(value, dtype=spec.dtype)
    except (TypeError, ValueError) as e:
        raise _BindError(f"Cannot convert {value!r} to EagerTensor of dtype "
                         f"{_tf_name(spec.dtype)}: {e}") from None
    if not spec.shape.is_compatible_with(tuple(t.shape)):
        raise _BindError(f"Can not cast {_spec_of(t, None)!r} to "
                         f"{TensorSpec(spec.shape, spec.dtype)!r}")
    return t


def _bind_structure(value, structure):
    """``value`` bound leaf by leaf to ``structure`` (specs and, for concrete functions,
    Python literals)."""
    if isinstance(structure, dict):
        if not isinstance(value, dict) or set(value) != set(structure):
            raise _BindError(f"Can not cast {value!r} to a dict with keys {sorted(structure)}")
        return type(value)((k, _bind_structure(value[k], structure[k])) for k in value)
    if isinstance(structure, (list, tuple)):
        if not isinstance(value, (list, tuple)):
            raise _BindError(f"Can not cast {value!r} to {type(structure).__name__} type.")
        if len(value) != len(structure):
            raise _BindError(f"Expected {value!r} to have length of {len(structure)}")
        items = [_bind_structure(v, s) for v, s in zip(value, structure)]
        if nest._is_namedtuple(value):
            return type(value)(*items)
        return type(value)(items)
    if _is_spec(structure):
        return _bind_to_spec(value, structure)
    if isinstance(value, Tensor) or value != structure or type(value) is not type(structure):
        raise _BindError(f"Can not cast {value!r} to Literal[{structure!r}]")
    return value


def _named_specs(structure, name):
    """``structure`` with every spec named: an unnamed top-level spec takes the parameter's
    name, nested ones ``<name>_<flat index>`` (TF's structured_input_signature)."""
    if _is_spec(structure):
        return TensorSpec(structure.shape, structure.dtype,
                          structure.name if structure.name is not None else name)
    leaves = nest.flatten(structure)
    named = [TensorSpec(x.shape, x.dtype, x.name if x.name is not None else f"{name}_{i}")
             if _is_spec(x) else x for i, x in enumerate(leaves)]
    return nest.pack_sequence_as(structure, named)


def _value_signature(value, name):
    """The traced type of an argument: Tensors and arrays become specs, the rest literals."""
    if isinstance(value, (Tensor, np.ndarray)):
        return TensorSpec(tuple(value.shape), value.dtype, name)
    if _is_spec(value):
        return _named_specs(_as_spec(value), name)
    if isinstance(value, (list, tuple, dict)):
        leaves = nest.flatten(value)
        sig = [_value_signature(x, f"{name}_{i}") for i, x in enumerate(leaves)]
        return nest.pack_sequence_as(value, sig)
    return value


# ---- trace keys -----------------------------------------------------------------------------


def _leaf_key(x):
    if isinstance(x, (Tensor, np.ndarray)):
        return ("T", tuple(x.shape), np.dtype(x.dtype).str)
    if _is_spec(x):
        s = _as_spec(x)
        return ("T", None if s.shape.rank is None else tuple(s.shape), s.dtype.str)
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return ("py", type(x), x)


def _trace_key(values):
    """What TensorFlow's trace cache keys on: the structure, Tensor shapes and dtypes, and
    Python values (by type and value; unhashable ones by identity)."""
    flat = nest.flatten(values)
    skeleton = nest.pack_sequence_as(values, [0] * len(flat))
    return repr(skeleton), tuple(_leaf_key(x) for x in flat)


def _key_matches(traced, key) -> bool:
    if traced[0] != key[0]:
        return False
    for a, b in zip(traced[1], key[1]):
        if a[0] == "T" and b[0] == "T":
            if a[2] != b[2]:
                return False
            if a[1] is None:
                continue
            if b[1] is None or len(a[1]) != len(b[1]):
                return False
            if any(da is not None and da != db for da, db in zip(a[1], b[1])):
                return False
        elif a != b:
            return False
    return True


def _relaxed(traced, key):
    """``traced`` generalised to cover ``key`` (None where dimensions differ), or None when
    they differ in more than shapes."""
    if traced[0] != key[0]:
        return None
    leaves = []
    for a, b in zip(traced[1], key[1]):
        if a[0] == "T" and b[0] == "T" and a[2] == b[2]:
            if a[1] is None or b[1] is None or len(a[1]) != len(b[1]):
                leaves.append(("T", None, a[2]))
            else:
                leaves.append(("T", tuple(x if x == y else None for x, y in zip(a[1], b[1])),
                               a[2]))
        elif a == b:
            leaves.append(a)
        else:
            return None
    return traced[0], tuple(leaves)


# ---- tf.function ------------------------------------------------------------------------------


def _variable_store(function):
    """The function's own store of ``tf.compat.v1.get_variable`` variables for its eager
    calls: TF traces the function once, so the variables its first call makes are those of
    every later call (nothing when the program never imported ``get_variable``)."""
    vs = sys.modules.get("ipu_gpu.compat.v1.variable_scope")
    return contextlib.nullcontext() if vs is None else vs.owned_store(function)


class Function:
    """A callable made by ``tf.function`` (TensorFlow's ``PolymorphicFunction``)."""

    def __init__(self, python_function, input_signature=None, autograph=True, jit_compile=None,
                 reduce_retracing=False, name=None, _bound_to=None):
        self._python_function = python_function
        self._input_signature = input_signature
        self._autograph = autograph
        self._jit_compile = jit_compile
        self._reduce_retracing = bool(reduce_retracing)
        self._name = name or getattr(python_function, "__name__", "function")
        self._bound_to = _bound_to  # the instance of a method (descriptor binding)
        self._traces: list = []  # trace keys seen, in order (the cache a tracer would fill)
        self._by_instance = weakref.WeakKeyDictionary()
        functools.update_wrapper(self, python_function, updated=())
        self.__name__ = self._name

    # ---- the TF attributes programs read ------------------------------------------------
    @property
    def python_function(self):
        """The Python function this wraps (for a method: the function, not bound)."""
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    @property
    def function_spec(self):
        return inspect.signature(self._python_function)

    def experimental_get_tracing_count(self) -> int:
        """How many traces TensorFlow would have made so far (see the module docstring)."""
        return len(self._traces)

    def __repr__(self) -> str:
        return f"<ipu_gpu.Function {self._name!r}>"

    # ---- methods ----------------------------------------------------------------------------
    def __get__(self, instance, owner=None):
        """A ``tf.function`` defined in a class: each instance gets its own Function bound to
        it (TF keeps one per instance, with its own traces)."""
        if instance is None or self._bound_to is not None:
            return self
        try:
            bound = self._by_instance.get(instance)
        except TypeError:  # unhashable or no weak references: a fresh binding each time
            bound = None
        if bound is None:
            bound = Function(self._python_function, self._input_signature, self._autograph,
                             self._jit_compile, self._reduce_retracing, self._name,
                             _bound_to=weakref.ref(instance) if _weakrefable(instance)
                             else (lambda obj=instance: obj))
            with contextlib.suppress(TypeError):
                self._by_instance[instance] = bound
        return bound

    def _leading(self) -> tuple:
        if self._bound_to is None:
            return ()
        instance = self._bound_to()
        if instance is None:
            raise RuntimeError(f"{self._name}: the instance this method was bound to no "
                               "longer exists")
        return (instance,)

    def _parameters(self) -> list:
        params = list(inspect.signature(self._python_function).parameters.values())
        return params[1:] if self._bound_to is not None else params

    # ---- calling ------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._input_signature is not None:
            args, kwargs = self._bind_signature(self._input_signature, args, kwargs)
            self._note_trace(("signature",))
        else:
            self._note_trace(self._bound_values(args, kwargs))
        with _variable_store(self):
            return self._python_function(*self._leading(), *args, **kwargs)

    def _signature_text(self, signature) -> str:
        params = self._parameters()
        parts = [f"{p.name}: {s!r}" for p, s in zip(params, signature)]
        return "(" + ", ".join(parts) + ")"

    def _bind_signature(self, signature, args, kwargs):
        """Bind ``args``/``kwargs`` to ``signature`` (one entry per leading parameter)."""
        params = self._parameters()
        covered = params[:len(signature)]
        for p in params[len(signature):]:
            if p.default is inspect.Parameter.empty and p.kind in (
                    p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                raise TypeError(f"input_signature missing type constraint for {p.name}")
        text = self._signature_text(signature)
        if len(args) > len(signature):
            raise _bind_failed("too many positional arguments", args, kwargs, text)
        values = list(args)
        names = [p.name for p in covered]
        extra = [k for k in kwargs if k not in names[len(args):]]
        if extra:
            reason = (f"multiple values for argument '{extra[0]}'" if extra[0] in names
                      else f"got an unexpected keyword argument '{extra[0]}'")
            raise _bind_failed(reason, args, kwargs, text)
        for name in names[len(args):]:
            if name not in kwargs:
                raise _bind_failed(f"missing a required argument: '{name}'", args, kwargs,
                                   text)
            values.append(kwargs[name])
        try:
            bound = [_bind_structure(v, s) for v, s in zip(values, signature)]
        except _BindError as e:
            raise _bind_failed(e, args, kwargs, text) from None
        return tuple(bound[:len(args)]), dict(zip(names[len(args):], bound[len(args):]))

    def _bound_values(self, args, kwargs):
        """The arguments as TF's trace cache sees them (defaults applied)."""
        try:
            ba = inspect.signature(self._python_function).bind(*self._leading(), *args,
                                                               **kwargs)
        except TypeError:
            return (args, kwargs)  # the call itself will raise Python's error
        ba.apply_defaults()
        values = dict(ba.arguments)
        if self._bound_to is not None:
            values.pop(next(iter(values)), None)
        return values

    def _note_trace(self, values) -> None:
        key = _trace_key(values)
        for traced in self._traces:
            if _key_matches(traced, key):
                return
        if self._reduce_retracing:
            for i in range(len(self._traces) - 1, -1, -1):
                relaxed = _relaxed(self._traces[i], key)
                if relaxed is not None:
                    self._traces.append(relaxed)
                    return
        self._traces.append(key)

    # ---- concrete functions --------------------------------------------------------------
    def get_concrete_function(self, *args, **kwargs) -> ConcreteFunction:
        """The function specialised to ``args``/``kwargs`` (Tensors or TensorSpecs for tensor
        arguments, Python values as literals) or, with no arguments, to ``input_signature``.
        """
        params = self._parameters()
        if self._input_signature is not None:
            if args or kwargs:
                specs = [_value_signature(a, p.name) for a, p in zip(args, params)]
                bound_args, bound_kwargs = self._bind_signature(
                    self._input_signature, tuple(_placeholder(s) for s in specs),
                    {k: _placeholder(_value_signature(v, k)) for k, v in kwargs.items()})
                del bound_args, bound_kwargs  # checked only
            signature = tuple(_named_specs(s, p.name)
                              for s, p in zip(self._input_signature, params))
            signature += tuple(p.default for p in params[len(signature):]
                               if p.kind is p.POSITIONAL_OR_KEYWORD)  # TF lists the defaults
            self._note_trace(("signature",))
            return ConcreteFunction(self, signature, {})
        sig = inspect.Signature(params)
        try:
            ba = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise _bind_failed(e, args, kwargs, str(sig)) from None
        ba.apply_defaults()
        positional, keyword = [], {}
        for p in params:
            if p.name not in ba.arguments:
                continue
            v = ba.arguments[p.name]
            if p.kind is p.VAR_POSITIONAL:
                positional.extend(_value_signature(x, f"{p.name}_{i}") for i, x in enumerate(v))
            elif p.kind is p.VAR_KEYWORD:
                keyword.update({k: _value_signature(x, k) for k, x in v.items()})
            elif p.kind is p.KEYWORD_ONLY:
                keyword[p.name] = _value_signature(v, p.name)
            else:
                positional.append(_value_signature(v, p.name))
        self._note_trace(self._bound_values(*_placeholders(args, kwargs)))
        return ConcreteFunction(self, tuple(positional), keyword)


def _weakrefable(obj) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


def _placeholder(signature):
    """A zero Tensor standing for a spec (trace keys and binding checks need a value)."""
    def leaf(x):
        if not _is_spec(x):
            return x
        s = _as_spec(x)
        dims = [1] if s.shape.rank is None else [1 if d is None else d for d in s.shape]
        return wrap(np.zeros(dims, s.dtype))
    return nest.map_structure(leaf, signature)


def _placeholders(args, kwargs):
    return (tuple(_placeholder(a) for a in args),
            {k: _placeholder(v) for k, v in kwargs.items()})


class ConcreteFunction:
    """A ``Function`` specialised to one input signature (TF's ``ConcreteFunction``)."""

    def __init__(self, function: Function, args_signature: tuple, kwargs_signature: dict):
        self._function = function
        self._args = args_signature
        self._kwargs = kwargs_signature
        self.name = f"__inference_{function._name}"

    @property
    def structured_input_signature(self) -> tuple:
        """``(args, kwargs)``: TensorSpecs for tensor arguments, Python values as literals."""
        return self._args, dict(self._kwargs)

    def __repr__(self) -> str:
        return f"<ipu_gpu.ConcreteFunction {self.name}{self._args}>"

    def __call__(self, *args, **kwargs):
        f = self._function
        params = [p for p in f._parameters() if p.kind in (p.POSITIONAL_ONLY,
                                                            p.POSITIONAL_OR_KEYWORD)]
        signature = list(self._args)
        text = "(" + ", ".join(
            f"{p.name}: {s!r}" if any(_is_spec(x) for x in nest.flatten(s))
            else f"{p.name}: Literal[{s!r}]" for p, s in zip(params, signature)) + ")"
        values = list(args)
        if len(values) > len(signature):
            raise _bind_failed("too many positional arguments", args, kwargs, text)
        rest = dict(kwargs)
        for p, s in zip(params[len(values):], signature[len(values):]):
            if p.name in rest:
                values.append(rest.pop(p.name))
            elif not any(_is_spec(x) for x in nest.flatten(s)):
                values.append(s)  # a traced literal (a default) need not be passed again
            else:
                raise _bind_failed(f"missing a required argument: '{p.name}'", args, kwargs,
                                   text)
        try:
            bound = [self._bind_one(v, s, i) for i, (v, s) in enumerate(zip(values, signature))]
            kw = {k: self._bind_one(rest[k], self._kwargs[k], None) for k in rest
                  if k in self._kwargs}
        except _BindError as e:
            raise _bind_failed(e, args, kwargs, text) from None
        unknown = [k for k in rest if k not in self._kwargs]
        if unknown:
            raise _bind_failed(f"got an unexpected keyword argument '{unknown[0]}'", args,
                               kwargs, text)
        kw.update({k: v for k, v in self._kwargs.items() if k not in kw
                   and not any(_is_spec(x) for x in nest.flatten(v))})
        with _variable_store(f):
            return f._python_function(*f._leading(), *bound, **kw)

    def _bind_one(self, value, structure, index):
        if _is_spec(structure) and isinstance(value, Tensor) and value.dtype != structure.dtype:
            raise InvalidArgumentError(
                f"cannot compute {self.name} as input #{index}(zero-based) was expected to be "
                f"a {_tf_name(structure.dtype)} tensor but is a {_tf_name(value.dtype)} tensor")
        return _bind_structure(value, structure)


def function(func=None, input_signature=None, autograph=True, jit_compile=None,
             reduce_retracing=False, experimental_implements=None,
             experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None,
             experimental_follow_type_hints=None):
    """Compiles a function into a callable TensorFlow graph (``tf.function``); here the
    function runs eagerly on every call, with TensorFlow's argument binding (module
    docstring).

    Args:
      func: the function to wrap; None returns a decorator.
      input_signature: a possibly nested list or tuple of ``TensorSpec``: the arguments'
        shapes and dtypes; arguments are bound against it.
      autograph, jit_compile, experimental_compile, experimental_implements,
        experimental_autograph_options, experimental_attributes,
        experimental_follow_type_hints: accepted; they change nothing when running eagerly.
      reduce_retracing, experimental_relax_shapes: generalise shapes in the trace count.

    Returns:
      A ``Function`` (or a decorator making one when ``func`` is None).

    Raises:
      ValueError: both ``experimental_compile`` and ``jit_compile`` given.
      TypeError: ``func`` is not callable; ``input_signature`` is not a tuple or list of
        TensorSpecs.
    """
    if experimental_compile is not None:
        if jit_compile is not None:
            raise ValueError("Cannot specify both 'experimental_compile' and 'jit_compile'.")
        jit_compile = experimental_compile
    if experimental_relax_shapes is not None:
        reduce_retracing = experimental_relax_shapes
    signature = _check_input_signature(input_signature)

    def decorate(f):
        if not callable(f):
            raise TypeError(f"{f!r} is not a callable object")
        return Function(f, signature, autograph, jit_compile, reduce_retracing)

    return decorate if func is None else decorate(func)


# ---- py_function / numpy_function ----------------------------------------------------------

_pyfunc_ids = itertools.count()


def _tout(Tout, api: str):
    """(dtypes, single) for a Tout argument: one dtype, or a list/tuple of them."""
    if Tout is None:
        raise TypeError(f"Missing required argument: 'Tout'\n  If using tf.{api} as a "
                        f"decorator, set `Tout`\n  **by name** above the function:\n"
                        f"  `@tf.{api}(Tout=tout)`")
    if isinstance(Tout, (list, tuple)):
        return [dtypes.as_dtype(d, f"{api}: Tout") for d in Tout], False
    return [dtypes.as_dtype(Tout, f"{api}: Tout")], True


def _count_error(pyfunc: str, got: int, want: int) -> InvalidArgumentError:
    return InvalidArgumentError(f"{pyfunc} returns {got} values, but expects to see {want} "
                                "values.")


def _py_result(value, dtype):
    """A result of ``func`` as a Tensor of ``dtype``: Tensors must have it, other values are
    converted to it (TF's ``convert_to_tensor(value, dtype)``)."""
    if isinstance(value, Tensor):
        t = convert_to_tensor(value)
        if t.dtype != dtype:
            raise InvalidArgumentError(f"ValueError: Tensor conversion requested dtype "
                                       f"{dtype.name} for Tensor with dtype {t.dtype.name}")
        return t
    try:
        return constant(value, dtype=dtype)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"TypeError: Cannot convert {value!r} to EagerTensor of "
                                   f"dtype {dtype.name} ({e})") from None


def _returned_values(ret) -> list:
    """What ``func`` returned as a list of values: a list's or tuple's items, none for None,
    else the one value."""
    if isinstance(ret, (list, tuple)):
        return list(ret)
    return [] if ret is None else [ret]


def _py_results(ret, tout, pyfunc):
    values = _returned_values(ret)
    if len(values) < len(tout) or (values and not tout):
        raise _count_error(pyfunc, len(values), len(tout))
    # TF converts zip(results, Tout): results beyond Tout are dropped
    return [_py_result(v, d) for v, d in zip(values, tout)]


def _py_function_check(*arrays, func, tout, pyfunc):
    pass


def _py_function_forward(k, xp, *arrays, func, tout, pyfunc):
    inputs = [wrap(a) for a in arrays]
    recording = list(_tape.recording_tapes())
    if not recording:
        outs = _py_results(func(*inputs), tout, pyfunc)
        return [o._value for o in outs], None
    # Run func under a tape of its own, the outer tapes paused: its gradient with respect to
    # the inputs is the gradient of py_function (TF's EagerPyFunc gradient); variables func
    # reads on its own are not the outer tapes' business, as in TF.
    with contextlib.ExitStack() as stack:
        for tp in recording:
            stack.enter_context(tp.stop_recording())
        inner = _tape.GradientTape(persistent=True)
        with inner:
            inner.watch([t for t in inputs if t.dtype.kind == "f"])
            outs = _py_results(func(*inputs), tout, pyfunc)
    return [o._value for o in outs], (inner, inputs, outs)


def _py_function_backward(k, xp, res, *cotangents, func, tout, pyfunc):
    if res is None:
        return [None] * len(cotangents)
    inner, inputs, outs = res
    pairs = [(o, c) for o, c in zip(outs, cotangents) if o.dtype.kind == "f"]
    sources = [t for t in inputs if t.dtype.kind == "f"]
    if not pairs or not sources:
        return [None] * len(inputs)
    grads = inner.gradient([o for o, _ in pairs], sources,
                           output_gradients=[c if isinstance(c, Tensor) else wrap(c)
                                             for _, c in pairs])
    by_id = {t._id: g for t, g in zip(sources, grads)}
    return [None if by_id.get(t._id) is None else convert_to_tensor(by_id[t._id])._value
            for t in inputs]


_EAGER_PY_FUNC = register("EagerPyFunc", args=("inp...",), check=_py_function_check,
                          forward=_py_function_forward, backward=_py_function_backward)


def py_function(func=None, inp=None, Tout=None, name=None):
    """Wraps a python function into a TensorFlow op that executes it eagerly.

    ``func`` receives Tensors (each ``inp`` value converted as ``convert_to_tensor`` does)
    and may use any ipu_gpu op; a GradientTape differentiates the result with respect to
    ``inp``.

    Args:
      func: a Python function taking ``len(inp)`` Tensors; None returns a decorator.
      inp: the inputs (a list); None (with ``func``) returns ``func`` wrapped, to be called
        with the inputs.
      Tout: a dtype, or a list/tuple of dtypes (``[]`` when ``func`` returns None).
      name: ignored.

    Returns:
      A Tensor when ``Tout`` is one dtype, else a list of Tensors.

    Raises:
      TypeError: ``Tout`` is missing.
      InvalidArgumentError: ``func`` returns fewer values than ``Tout`` has, or a value that
        does not convert to its dtype (a Tensor of another dtype, 2.5 for int32).
    """
    tout, single = _tout(Tout, "py_function")
    if func is None:
        return lambda f: py_function(f, inp, Tout, name)
    if inp is None:
        return functools.wraps(func)(lambda *args: py_function(func, list(args), Tout, name))
    pyfunc = f"pyfunc_{next(_pyfunc_ids)}"
    outs = _EAGER_PY_FUNC(*inp, func=func, tout=tuple(tout), pyfunc=pyfunc)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return outs[0] if single else outs


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):
    """Wraps a python function and uses it as a TensorFlow op.

    ``func`` receives numpy arrays (copies of the inputs, converted as ``convert_to_tensor``
    does) and returns numpy arrays or Python values; each result must already have its
    ``Tout`` dtype (a Python float is float64, an int int64). There is no gradient.

    Args:
      func: a Python function taking ``len(inp)`` numpy arrays; None returns a decorator.
      inp: the inputs (a list); None (with ``func``) returns ``func`` wrapped.
      Tout: a dtype, or a list/tuple of dtypes (``[]`` when ``func`` returns None).
      stateful: accepted (TF uses it to allow graph optimisations).
      name: ignored.

    Returns:
      A Tensor when ``Tout`` is one dtype, a list of Tensors for a list, None for ``[]``.

    Raises:
      TypeError: ``Tout`` is missing.
      InvalidArgumentError: ``func`` returns another number of values than ``Tout`` has
        ("pyfunc_0 returns 2 values, but expects to see 1 values."), or a value of another
        dtype ("0-th value returned by pyfunc_0 is double, but expects float").
    """
    tout, single = _tout(Tout, "numpy_function")
    if func is None:
        return lambda f: numpy_function(f, inp, Tout, stateful, name)
    if inp is None:
        return functools.wraps(func)(
            lambda *args: numpy_function(func, list(args), Tout, stateful, name))
    pyfunc = f"pyfunc_{next(_pyfunc_ids)}"
    arrays = [np.array(convert_to_tensor(x)) for x in inp]  # a scalar string: 0-d, as TF
    values = _returned_values(func(*arrays))
    if len(values) != len(tout):
        raise _count_error(pyfunc, len(values), len(tout))
    outs = []
    for i, (v, d) in enumerate(zip(values, tout)):
        if d.kind == "O" and not isinstance(v, Tensor):  # tf.string: str or bytes values
            from .core.strings import string_array

            try:
                v = string_array(v)
            except ValueError:
                pass  # not strings: refused below with TF's message
        a = np.asarray(v)  # syncs device
        if a.dtype != d:
            raise InvalidArgumentError(f"{i}-th value returned by {pyfunc} is "
                                       f"{_tf_name(a.dtype)}, but expects {_tf_name(d)}")
        outs.append(constant(a))
    if not tout:
        return None
    return outs[0] if single else outs

