"""What ``Layer.__call__`` needs to know about the call in progress: the layer's ``call``
signature (``CallSpec``), the per-thread call context (the ``training`` value propagated to
nested layers, the name scope weights are created in, whether a functional graph is being
probed) and the masks Keras attaches to tensors.

Keras sets ``tensor._keras_mask``; an eager ipu_gpu Tensor has fixed slots, so masks live in
a side table keyed by the tensor's id (``get_mask``/``set_mask``), dropped with the tensor.
A KerasTensor carries its mask as an attribute, as in Keras.
"""

from __future__ import annotations

import contextlib
import inspect
import threading
import weakref

from .keras_tensor import KerasTensor

_P = inspect.Parameter


class CallSpec:
    """The argument names and defaults of a layer's ``call`` (Keras's ``CallFunctionSpec``).

    ``args`` below are the positional arguments after the first one (the inputs)."""

    def __init__(self, call_fn):
        try:
            params = list(inspect.signature(call_fn).parameters.values())
        except (TypeError, ValueError):  # a builtin: take anything
            params = [_P("inputs", _P.POSITIONAL_ONLY), _P("kwargs", _P.VAR_KEYWORD)]
        self.arg_names = [p.name for p in params
                          if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
        names = {p.name for p in params if p.kind not in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD)}
        self.accepts_kwargs = any(p.kind == _P.VAR_KEYWORD for p in params)
        self.defaults = {p.name: p.default for p in params if p.default is not _P.empty}
        self.expects_training_arg = "training" in names or self.accepts_kwargs
        self.expects_mask_arg = "mask" in names or self.accepts_kwargs

    def _position(self, name):
        """The index of ``name`` among the positional arguments after the inputs."""
        if name in self.arg_names[1:]:
            return self.arg_names.index(name) - 1
        return None

    def split_out_first_arg(self, args, kwargs):
        """(inputs, other positional args, kwargs) from a ``__call__``'s arguments."""
        if args:
            return args[0], tuple(args[1:]), kwargs
        first = self.arg_names[0] if self.arg_names else "inputs"
        if first in kwargs:
            kwargs = dict(kwargs)
            return kwargs.pop(first), (), kwargs
        raise ValueError("The first argument to `Layer.call` must always be passed.")

    def arg_was_passed(self, name, args, kwargs) -> bool:
        if name in kwargs:
            return True
        pos = self._position(name)
        return pos is not None and len(args) > pos

    def get_arg_value(self, name, args, kwargs):
        if name in kwargs:
            return kwargs[name]
        return args[self._position(name)]

    def set_arg_value(self, name, value, args, kwargs, pop_kwarg_if_none=False):
        pos = self._position(name)
        if pos is not None and len(args) > pos:
            args = list(args)
            args[pos] = value
            return tuple(args), kwargs
        kwargs = dict(kwargs)
        if value is None and pop_kwarg_if_none:
            kwargs.pop(name, None)
        else:
            kwargs[name] = value
        return args, kwargs

    def default(self, name):
        return self.defaults.get(name)


_SPECS: dict = {}


def call_spec(layer) -> CallSpec:
    """The CallSpec of ``layer.call``, cached per class (per instance when ``call`` was
    replaced on the instance)."""
    call = layer.call
    if "call" in vars(layer):
        return CallSpec(call)
    cls = type(layer)
    spec = _SPECS.get(cls)
    if spec is None:
        spec = _SPECS[cls] = CallSpec(call)
    return spec


class _Context(threading.local):
    def __init__(self):
        self.layer = None  # the layer whose call is running (None: not in a call)
        self.training = None  # the training value propagated to nested calls
        self.probing = False  # running call on stand-in values to infer symbolic outputs
        self.generation = 0  # the outermost call in progress (its losses are the current ones)
        self.stand_ins = None  # during a probe: id(stand-in) -> (stand-in, KerasTensor)
        self.scopes: list = []  # name scope: names of the layers being called


_CONTEXT = _Context()


def context() -> _Context:
    return _CONTEXT


@contextlib.contextmanager
def enter(layer, training, probing=None):
    """A layer's call in progress: nested calls see ``training`` and ``layer``."""
    ctx = _CONTEXT
    saved = ctx.layer, ctx.training, ctx.probing
    ctx.layer, ctx.training = layer, training
    if probing is not None:
        ctx.probing = probing
    try:
        yield ctx
    finally:
        ctx.layer, ctx.training, ctx.probing = saved


@contextlib.contextmanager
def name_scope(name: str):
    """Weights created inside are named ``<scopes>/<name>/<weight>`` (TF's name scopes)."""
    scopes = _CONTEXT.scopes
    scopes.append(name)
    try:
        yield
    finally:
        scopes.pop()


def scoped_name(name: str) -> str:
    return "/".join([*_CONTEXT.scopes, name])


# ---- masks on eager tensors ------------------------------------------------------------------
_MASKS: dict = {}  # id(tensor) -> (weakref to the tensor, mask)


def get_mask(x):
    """The Keras mask attached to ``x`` (None when there is none)."""
    if x is None:
        return None
    if isinstance(x, KerasTensor):
        return x._keras_mask
    entry = _MASKS.get(id(x))
    if entry is None or entry[0]() is not x:
        return None
    return entry[1]


def set_mask(x, mask) -> None:
    """Attach ``mask`` to ``x`` (None removes it)."""
    if isinstance(x, KerasTensor):
        x._keras_mask = mask
        return
    key = id(x)
    if mask is None:
        _MASKS.pop(key, None)
        return

    def drop(ref, key=key):
        entry = _MASKS.get(key)
        if entry is not None and entry[0] is ref:
            del _MASKS[key]

    try:
        _MASKS[key] = (weakref.ref(x, drop), mask)
    except TypeError:  # not weak-referenceable (a Python number): no mask
        pass
