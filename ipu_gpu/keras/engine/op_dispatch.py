"""ipu_gpu functions called on KerasTensors record ``TFOpLambda`` layers, as in TF-Keras.

``x = tf.concat([a, b], axis=-1)`` with ``a``, ``b`` KerasTensors returns a KerasTensor made
by a ``TFOpLambda`` layer named ``tf.concat`` whose ``call`` runs ``tf.concat`` again on the
real tensors; ``model.layers``, ``summary()``, ``get_config()`` and ``clone_model`` see it as
TF-Keras shows it (``tf.math.reduce_mean``, ``tf.compat.v1.transpose``, ...).

How a call is caught: the op registry (``core/registry.py``) hands an op call whose input
refuses conversion because it is a KerasTensor to ``dispatch``. ``dispatch`` finds the public
function the user called: the outermost frame of ipu_gpu code (outside ``ipu_gpu.keras``)
between the user's code and the op. Its function (a module-level function, or one a
namespace re-exports) and its arguments, read from the frame, make the layer's call:
the first argument positional, the others as keywords where they differ from their default
(TF-Keras records ``tf.reshape(x, (-1, 2))`` with ``{"shape": (-1, 2)}``). The arguments are
the parameters' values when the op ran: a public function may have normalized them
(``y = to_array(y, x.dtype)``, ``axis = dim``), which replays to the same result; one that
changed a parameter's meaning would not replay faithfully. A frame that is not a public
function (a closure, a lambda) is passed over for the next one inward, and where none
serves, the layer runs the op itself with the static arguments it received (named after the
op; like TF-Keras for non-API functions, its config cannot be written).

Once a frame is recorded as a layer, every later op, operator or ``[]`` on KerasTensors in
that same call of the function returns the layer's output, so a function made of several
ops (``tf.stack``: ``expand_dims`` then ``concat``) is one layer, as in TF-Keras.

An operator whose left operand is an eager Tensor (``ig.constant(2.0) * x``) reaches an op
through ``Tensor.__mul__``; the KerasTensor's reflected operator records it instead, as in
TF-Keras. While a layer's ``call`` runs on stand-ins (``symbolic.probe``), nothing is
recorded: a KerasTensor captured from outside the layer stays an error there.

Shapes come from ``symbolic.probe``: the function runs on stand-in zeros. Functions whose
Python code needs the concrete size of an unknown dimension (``tf.expand_dims``,
``tf.squeeze``, ``tf.stack`` read ``x.shape`` with its None batch size) fail before any op
sees a KerasTensor, with their own error, until they hand the op -1 for an unknown size
(the op is then never run: the whole function becomes one layer).
"""

from __future__ import annotations

import inspect
import sys
import threading

from ...core import registry
from .op_lambda import TFOpLambda as _BaseTFOpLambda

# TF-Keras's name (TF's canonical API name) of ipu_gpu functions, where it is not the first
# path the function has in _NAMESPACES. Made with TF 2.x: ``get_canonical_name_for_symbol``,
# and, for functions whose v2 form calls a v1 one, the name TF-Keras gives their op layers.
_KERAS_NAMES = {
    "Assert": "debugging.Assert", "abs": "math.abs", "add": "math.add",
    "argmax": "math.argmax", "argmin": "math.argmin", "as_dtype": "dtypes.as_dtype",
    "assert_equal": "debugging.assert_equal", "assert_greater": "debugging.assert_greater",
    "assert_less": "debugging.assert_less", "assert_rank": "debugging.assert_rank",
    "boolean_mask": "compat.v1.boolean_mask", "cumsum": "math.cumsum",
    "divide": "math.truediv", "equal": "math.equal", "exp": "math.exp", "floor": "math.floor",
    "floordiv": "compat.v1.floor_div", "floormod": "math.floormod",
    "gather": "compat.v1.gather", "gather_nd": "compat.v1.gather_nd",
    "greater": "math.greater", "greater_equal": "math.greater_equal", "less": "math.less",
    "less_equal": "math.less_equal", "log": "math.log", "logical_and": "math.logical_and",
    "logical_not": "math.logical_not", "logical_or": "math.logical_or",
    "math.log_softmax": "nn.log_softmax", "math.softmax": "nn.softmax",
    "matmul": "linalg.matmul", "maximum": "math.maximum", "minimum": "math.minimum",
    "multiply": "math.multiply", "negative": "math.negative", "norm": "compat.v1.norm",
    "not_equal": "math.not_equal", "pad": "compat.v1.pad", "pow": "math.pow",
    "reduce_all": "math.reduce_all", "reduce_any": "math.reduce_any",
    "reduce_logsumexp": "math.reduce_logsumexp", "reduce_max": "math.reduce_max",
    "reduce_mean": "math.reduce_mean", "reduce_min": "math.reduce_min",
    "reduce_prod": "math.reduce_prod", "reduce_sum": "math.reduce_sum",
    "round": "math.round", "rsqrt": "math.rsqrt", "shape": "compat.v1.shape",
    "sigmoid": "math.sigmoid", "sign": "math.sign", "size": "compat.v1.size",
    "sqrt": "math.sqrt", "square": "math.square", "squeeze": "compat.v1.squeeze",
    "subtract": "math.subtract", "tanh": "math.tanh", "transpose": "compat.v1.transpose",
    "nn.embedding_lookup": "compat.v1.nn.embedding_lookup",
    "nn.sigmoid_cross_entropy_with_logits": "compat.v1.nn.sigmoid_cross_entropy_with_logits",
    "nn.softmax_cross_entropy_with_logits":
        "compat.v1.nn.softmax_cross_entropy_with_logits_v2",
    # issue 17: trigonometric and hyperbolic functions
    **{n: f"math.{n}" for n in ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos",
                                "cosh", "sin", "sinh", "tan")},
}
# where public functions are looked for, in order ("" is the top level, ``tf.*``)
_NAMESPACES = ("", "math", "nn", "linalg", "signal", "image", "random", "sparse", "strings",
               "bitwise", "dtypes", "debugging", "experimental.numpy")
_symbols = None  # id(function) -> (function, symbol without "tf.")
_paths = None  # symbol -> ipu_gpu path, for the symbols that are not paths
_code_functions: dict = {}  # code object -> the public function that runs it (or None)
_local = threading.local()  # .last: (frame, outputs) of the latest call recorded


def _resolve_path(path: str):
    import ipu_gpu

    obj = ipu_gpu
    for part in filter(None, path.split(".")):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _symbol_table() -> dict:
    global _symbols, _paths
    if _symbols is None:
        table = {}
        for ns in _NAMESPACES:
            module = _resolve_path(ns)
            if module is None:
                continue
            for name, obj in sorted(vars(module).items()):
                if not name.startswith("_") and inspect.isfunction(obj):
                    table.setdefault(id(obj), (obj, f"{ns}.{name}" if ns else name))
        paths = {}
        for path, symbol in _KERAS_NAMES.items():
            obj = _resolve_path(path)
            if obj is not None:
                table[id(obj)] = (obj, symbol)
                paths.setdefault(symbol, path)
        _symbols, _paths = table, paths
    return _symbols


def symbol_of(function):
    """TF-Keras's name of ``function`` (``"tf.math.reduce_mean"``), or None when it is not a
    public ipu_gpu function."""
    entry = _symbol_table().get(id(function))
    return None if entry is None or entry[0] is not function else "tf." + entry[1]


def function_of(symbol: str):
    """The function a TFOpLambda's ``function`` config names (``"math.reduce_mean"``, with or
    without ``tf.``), or None."""
    from .keras_tensor import OPERATOR_FUNCTIONS

    symbol = symbol.removeprefix("tf.")
    _symbol_table()
    function = _resolve_path(_paths.get(symbol, symbol))
    if callable(function):
        return function
    return OPERATOR_FUNCTIONS.get(symbol)  # tf.__operators__.add, tf.__operators__.getitem


class TFOpLambda(_BaseTFOpLambda):
    """The layer of an ipu_gpu function (or Python operator) called on KerasTensors.

    Its config is TF-Keras's (``"function": "math.reduce_mean"``) and ``from_config`` finds
    the function again, so ``clone_model`` and ``Model.from_config`` rebuild it."""

    def get_config(self) -> dict:
        if not self.symbol:
            raise ValueError(
                f"This Keras op layer was generated from {self.function}, a method that is not "
                "publicly exposed in the TensorFlow API. Only op layers produced from public "
                "TensorFlow API symbols can be serialized.")
        config = super().get_config()
        config["function"] = self.symbol.removeprefix("tf.")
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        symbol = config.pop("function")
        function = function_of(symbol) if isinstance(symbol, str) else symbol
        if function is None:
            raise ValueError(f"TF symbol `{symbol}` could not be found.")
        if isinstance(symbol, str) and not symbol.startswith("tf."):
            symbol = "tf." + symbol
        return cls(function, symbol=symbol if isinstance(symbol, str) else None, **config)


class SlicingOpLambda(TFOpLambda):
    """The layer of ``[]`` on a KerasTensor (``tf.__operators__.getitem``), TF-Keras's class
    for it."""


def _is_op_frame(frame) -> bool:
    name = frame.f_globals.get("__name__") or ""
    return (name == "ipu_gpu" or name.startswith("ipu_gpu.")) and not (
        name == "ipu_gpu.keras" or name.startswith("ipu_gpu.keras."))


def _op_frames(frame) -> list:
    """The frames of ipu_gpu code (not Keras) from ``frame`` outwards, innermost first."""
    chain = []
    while frame is not None and _is_op_frame(frame):
        chain.append(frame)
        frame = frame.f_back
    return chain


def forget() -> None:
    """Drop the latest recorded call (its frame keeps the caller's frames alive); a model
    made from the graph calls it."""
    _local.last = None


def recorded_output(frame):
    """The outputs already recorded for the public function call that ``frame`` (the caller
    of an op or operator on KerasTensors) is part of, or None."""
    last = getattr(_local, "last", None)
    if last is None:
        return None
    for f in _op_frames(frame):
        if f is last[0]:
            return last[1]
    return None


def _public_function(code, f_globals):
    if code in _code_functions:
        return _code_functions[code]
    function = None
    qualname = getattr(code, "co_qualname", code.co_name)
    if "<" not in qualname:
        obj = f_globals.get(qualname.split(".")[0])
        for part in qualname.split(".")[1:]:
            obj = getattr(obj, part, None)
        inner = obj
        while inner is not None and getattr(inner, "__code__", None) is not code:
            inner = getattr(inner, "__wrapped__", None)
        if inner is not None and inspect.isfunction(obj):
            function = obj
    _code_functions[code] = function
    return function


def _is_default(value, default) -> bool:
    if value is default:
        return True
    simple = (bool, int, float, str, type(None))
    return type(value) is type(default) and type(value) in simple and value == default


def _call_of(frame):
    """(function, args, kwargs) replaying the public function call ``frame`` runs, or None."""
    code = frame.f_code
    function = _public_function(code, frame.f_globals)
    if function is None:
        return None
    values = frame.f_locals
    names = code.co_varnames
    n_pos, n_kw = code.co_argcount, code.co_kwonlyargcount
    i = n_pos + n_kw
    varargs = varkw = None
    if code.co_flags & inspect.CO_VARARGS:
        varargs, i = names[i], i + 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        varkw = names[i]
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return None
    defaults = {name: p.default for name, p in params.items()}
    args, kwargs = [], {}
    extra = tuple(values.get(varargs, ())) if varargs else ()
    if any(name not in values for name in names[:n_pos + n_kw]):
        return None  # a parameter deleted
    for k, name in enumerate(names[:n_pos]):
        value = values[name]
        if k == 0 or extra or k < code.co_posonlyargcount:
            args.append(value)
        elif not _is_default(value, defaults.get(name, inspect.Parameter.empty)):
            kwargs[name] = value
    args.extend(extra)
    for name in names[n_pos:n_pos + n_kw]:
        value = values[name]
        if not _is_default(value, defaults.get(name, inspect.Parameter.empty)):
            kwargs[name] = value
    if varkw:
        kwargs.update(values.get(varkw, {}))
    if not args:
        return None
    return function, args, kwargs


class _OpCall:
    """An op with its static arguments, where no public function could be replayed."""

    def __init__(self, op, static):
        self.op, self.static, self.__name__ = op, dict(static), op.name

    def __call__(self, *inputs):
        return self.op(*inputs, **self.static)


# Tensor's operators whose other operand is a KerasTensor (``ig.constant(2.0) * x``): the
# KerasTensor's reflected operator records the layer, as Python would have called it
_REFLECTED = {"__lt__": "__gt__", "__gt__": "__lt__", "__le__": "__ge__", "__ge__": "__le__",
              "__eq__": "__eq__", "__ne__": "__ne__"}


def _tensor_operator(function, args, kwargs):
    from ...core.tensor import Tensor
    from .keras_tensor import KerasTensor

    name = getattr(function, "__name__", "")
    if not (name.startswith("__") and getattr(Tensor, name, None) is function):
        return NotImplemented
    others = list(args[1:]) + list(kwargs.values())
    if len(others) != 1 or not isinstance(others[0], KerasTensor):
        return NotImplemented
    if name in _REFLECTED:
        reflected = _REFLECTED[name]
    elif name.startswith("__r") and hasattr(KerasTensor, "__" + name[3:]):
        reflected = "__" + name[3:]  # tensor.__rsub__(x) is x - tensor
    else:
        reflected = "__r" + name[2:]
    method = getattr(KerasTensor, reflected, None)
    return NotImplemented if method is None else method(others[0], args[0])


def dispatch(op, inputs, static):
    """The registry's hook: the KerasTensor outputs of the call of ``op`` on ``inputs``
    (among them KerasTensors), recorded as a TFOpLambda layer (see the module docstring);
    NotImplemented while a layer's ``call`` runs on stand-ins (a KerasTensor captured from
    outside the layer is an error there, as in TF-Keras)."""
    from . import call_context

    if call_context.context().probing:
        return NotImplemented
    frame = sys._getframe(1)
    while frame is not None and frame.f_code is not registry.Op.__call__.__code__:
        frame = frame.f_back
    chain = _op_frames(frame.f_back if frame is not None else None)
    last = getattr(_local, "last", None)
    if last is not None and any(f is last[0] for f in chain):
        return last[1]
    for f in reversed(chain):  # outermost first: the function the user called
        call = _call_of(f)
        if call is not None:
            function, args, kwargs = call
            outputs = _tensor_operator(function, args, kwargs)
            if outputs is NotImplemented:
                outputs = TFOpLambda(function, symbol=symbol_of(function))(*args, **kwargs)
            _local.last = (f, outputs)
            return outputs
    return TFOpLambda(_OpCall(op, static))(*inputs)
