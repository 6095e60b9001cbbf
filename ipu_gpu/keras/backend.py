"""``keras.backend``: Keras's global settings (floatx, epsilon, image data format, the learning
phase), the layer-name counters ``clear_session`` resets, and the small tensor helpers Keras 2
programs call as ``K.<name>`` (``int_shape``, ``is_keras_tensor``, ``get_value``, ...).

The math helpers are thin aliases of ipu_gpu ops with Keras 2's argument names; the settings
behave as Keras 2's (``tf_keras/src/backend.py``, ``backend_config.py``).
"""

from __future__ import annotations

import collections
import contextlib
import sys
import threading
import weakref

import numpy as np

from .. import ops as _ops  # noqa: F401  # registers every op
from ..core import dtypes as _dtypes
from ..core.convert import convert_to_tensor as _convert
from ..core import backend as _array_backend
from ..core.tensor import Tensor, Variable, wrap
from ..ops import math as _m
from ..ops import nn as _nn
from ..ops import reduction as _r
from ..ops import shape as _s
from . import _config

__all__ = [
    "abs", "batch_get_value", "batch_set_value", "cast", "cast_to_floatx", "clear_session",
    "clip", "concatenate", "count_params", "dtype", "epsilon", "exp", "expand_dims",
    "floatx", "get_uid", "get_value", "image_data_format", "int_shape", "is_keras_tensor",
    "learning_phase", "learning_phase_scope", "log", "max", "maximum", "mean", "min", "minimum",
    "ndim", "relu", "reset_uids", "reshape", "set_epsilon", "set_floatx",
    "set_image_data_format", "set_learning_phase", "set_value", "sigmoid", "softmax", "sqrt",
    "square", "stack", "sum", "tanh", "transpose",
]

_FLOATX = "float32"
_EPSILON = 1e-7
_FLOAT_NAMES = ("float16", "float32", "float64")


# ---- settings ----------------------------------------------------------------------------------
def floatx() -> str:
    """The default float type, as a string (``"float32"`` unless ``set_floatx`` changed it)."""
    return _FLOATX


def set_floatx(value) -> None:
    """Set the default float type: ``"float16"``, ``"float32"`` or ``"float64"``.

    Raises:
      ValueError: another value (Keras's message).
    """
    global _FLOATX
    name = str(getattr(value, "name", value))
    if name not in _FLOAT_NAMES:
        raise ValueError(f"Unknown `floatx` value: {value}. Expected one of "
                         f"{set(_FLOAT_NAMES)}")
    _FLOATX = name


def epsilon() -> float:
    """The fuzz factor used in numeric expressions (1e-7 by default)."""
    return _EPSILON


def set_epsilon(value) -> None:
    """Set the fuzz factor ``epsilon()`` returns."""
    global _EPSILON
    _EPSILON = value


def image_data_format() -> str:
    """``"channels_last"`` or ``"channels_first"``: the value set, else keras.json's."""
    return _config.image_data_format()


def set_image_data_format(data_format) -> None:
    """Set the default image layout.

    Raises:
      ValueError: not ``"channels_last"``/``"channels_first"`` (Keras's message).
    """
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError("The `data_format` argument must be one of {'channels_first', "
                         f"'channels_last'}}. Received: {data_format}")
    _config.set_image_data_format(data_format)


def normalize_data_format(value):
    """``value`` lower-cased, ``image_data_format()`` for None; ValueError otherwise."""
    if value is None:
        value = image_data_format()
    data_format = value.lower()
    if data_format not in {"channels_first", "channels_last"}:
        raise ValueError('The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value}')
    return data_format


# ---- names and sessions ------------------------------------------------------------------------
# Process-wide eagerly, per graph while a TF1 graph is built (as Keras keeps them per graph).
# The counters of ``unique_object_name`` key on (namespace, name); ``get_uid`` on a prefix.
_NAME_UIDS: collections.defaultdict = collections.defaultdict(int)
_UIDS: collections.defaultdict = collections.defaultdict(int)
OBSERVED_NAMES: set = set()
_NAMES_LOCK = threading.Lock()


_PER_GRAPH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _counters():
    """(uids, name uids): Keras's counters are per graph (``PER_GRAPH_OBJECT_NAME_UIDS``):
    each TF1 graph being built has its own, so a rebuilt model's layers get the same names
    (and checkpoint keys) again; eagerly, the global ones."""
    core = sys.modules.get("ipu_gpu.graph.core")
    if core is None or not core.building():
        return _UIDS, _NAME_UIDS
    graph = core.get_default_graph()
    found = _PER_GRAPH.get(graph)
    if found is None:
        found = _PER_GRAPH[graph] = (collections.defaultdict(int),
                                     collections.defaultdict(int))
    return found


def get_uid(prefix: str = "") -> int:
    """A counter per prefix, from 1 (``input_1``, ``input_2``, ...)."""
    with _NAMES_LOCK:
        uids = _counters()[0]
        uids[prefix] += 1
        return uids[prefix]


def reset_uids() -> None:
    """Reset the name counters (``clear_session`` does)."""
    with _NAMES_LOCK:
        _UIDS.clear()
        _NAME_UIDS.clear()
        _PER_GRAPH.clear()
        OBSERVED_NAMES.clear()


def observe_object_name(name: str) -> None:
    """Remember ``name`` so that ``unique_object_name(..., avoid_observed_names=True)``
    never proposes it."""
    OBSERVED_NAMES.add(name)


def unique_object_name(name: str, avoid_names=None, namespace: str = "",
                       zero_based: bool = False, avoid_observed_names: bool = False) -> str:
    """``name``, ``name_1``, ``name_2``, ... (zero-based) or ``name_1``, ... (one-based):
    the next unused name of the sequence, as Keras names layers."""
    if avoid_names is None:
        avoid_names = OBSERVED_NAMES if avoid_observed_names else set()
    with _NAMES_LOCK:
        uids = _counters()[1]
        proposed = None
        while proposed is None or proposed in avoid_names:
            key = (namespace, name)
            if zero_based:
                number = uids[key]
                proposed = f"{name}_{number}" if number else name
                uids[key] += 1
            else:
                uids[key] += 1
                proposed = f"{name}_{uids[key]}"
    return proposed


def clear_session() -> None:
    """Reset Keras's global state: layer-name counters and the learning phase."""
    global _LEARNING_PHASE
    reset_uids()
    _LEARNING_PHASE = None


# ---- random seeds ------------------------------------------------------------------------------
class _SeedGenerator:
    generator = None  # random.Random, set by keras.utils.set_random_seed (as tf_keras does)


# Process-wide, not per thread as tf_keras's: replicas run in threads and must agree.
_SEED_GENERATOR = _SeedGenerator()


# ---- learning phase ----------------------------------------------------------------------------
_LEARNING_PHASE = None  # None: not set (learning_phase() is 0)
_LOCAL = threading.local()


def learning_phase() -> int:
    """0 (inference) or 1 (training): the value set by ``set_learning_phase`` or
    ``learning_phase_scope``, else 0. Layers called with ``training=None`` use it."""
    scoped = getattr(_LOCAL, "phase", None)
    if scoped is not None:
        return scoped
    return 0 if _LEARNING_PHASE is None else _LEARNING_PHASE


def global_learning_phase_is_set() -> bool:
    return getattr(_LOCAL, "phase", None) is not None or _LEARNING_PHASE is not None


def _check_phase(value):
    if value not in {0, 1}:
        raise ValueError("Expected learning phase to be 0 or 1.")
    return int(value)


def set_learning_phase(value) -> None:
    """Set the learning phase to 0 or 1 (deprecated in Keras 2, still honoured).

    Raises:
      ValueError: another value.
    """
    global _LEARNING_PHASE
    _LEARNING_PHASE = _check_phase(value)


@contextlib.contextmanager
def learning_phase_scope(value):
    """The learning phase is ``value`` (0 or 1) inside the block, in this thread."""
    value = _check_phase(value)
    previous = getattr(_LOCAL, "phase", None)
    _LOCAL.phase = value
    try:
        yield
    finally:
        _LOCAL.phase = previous


# ---- tensors -----------------------------------------------------------------------------------
def is_graph_tensor(x) -> bool:
    """Whether ``x`` is a TF1 graph tensor (a value only a ``Session.run`` computes)."""
    graph = sys.modules.get("ipu_gpu.graph")
    return graph is not None and isinstance(x, graph.GraphTensor)


def as_tensor(x):
    """``x`` as a Tensor; a TF1 graph tensor or a Variable as it is (the ops it meets read
    it: while a TF1 graph is built, as nodes reading the variable in each run)."""
    return x if isinstance(x, Tensor) or is_graph_tensor(x) else _convert(x)


def _constant_like(value, x, dtype=None) -> Tensor:
    """``value`` (a number or a numpy array) as a Tensor of x's dtype (or ``dtype``) on the
    device x lives on, so it can meet x in an op on either backend (a numpy constant of the
    node for a TF1 graph tensor)."""
    if is_graph_tensor(x):
        return np.asarray(value, dtype=np.dtype(x.dtype) if dtype is None else dtype)
    a = x._value if isinstance(x, Tensor) else x
    xp = _array_backend.xp_of(a)
    return wrap(xp.asarray(value, dtype=a.dtype if dtype is None else dtype))


def _device_array(value, like):
    """``value`` as an array on the device of the array or Tensor ``like``."""
    a = like._value if isinstance(like, Tensor) else like
    return _array_backend.xp_of(a).asarray(value)


def is_keras_tensor(x) -> bool:
    """Whether ``x`` is a symbolic Keras tensor (made by ``keras.Input`` or by a layer
    called on one).

    Raises:
      ValueError: ``x`` is not a tensor at all (Keras's message).
    """
    from .engine.keras_tensor import KerasTensor

    if isinstance(x, KerasTensor):
        return True
    if not isinstance(x, (Tensor, np.ndarray)):
        raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a "
                         "symbolic tensor instance.")
    return False


def int_shape(x):
    """The shape of ``x`` as a tuple of ints and Nones, or None for an unknown rank."""
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    try:
        return tuple(shape) if isinstance(shape, tuple) else tuple(shape.as_list())
    except ValueError:
        return None


def ndim(x):
    """The rank of ``x`` (None when unknown)."""
    shape = int_shape(x)
    return None if shape is None else len(shape)


def dtype(x) -> str:
    """The dtype name of ``x`` (``"float32"``)."""
    return np.dtype(x.dtype).name


def cast_to_floatx(x):
    """``x`` as a numpy array of ``floatx()`` (a Tensor stays a Tensor)."""
    if isinstance(x, Tensor) or hasattr(x, "_keras_history"):
        return _m.cast(x, _FLOATX)
    return np.asarray(x, dtype=_FLOATX)


def get_value(x):
    """The value of a Tensor or Variable as a numpy array."""
    if isinstance(x, Tensor):
        return x.numpy()
    if isinstance(x, np.ndarray):
        return x
    return np.asarray(x)


def batch_get_value(tensors) -> list:
    return [get_value(t) for t in tensors]


def set_value(x: Variable, value) -> None:
    """Assign the numpy ``value`` to the variable ``x`` (cast to its dtype)."""
    x.assign(_device_array(np.asarray(value, dtype=x.dtype), x))


def batch_set_value(tuples) -> None:
    for x, value in tuples:
        set_value(x, value)


def count_params(x) -> int:
    """The number of scalars in ``x``."""
    return int(np.prod(int_shape(x), dtype=np.int64))


# Keras 2's backend math, as its users spell it (``K.mean(x, axis=-1)``).
def cast(x, dtype):  # noqa: A002
    return _m.cast(x, dtype)


def mean(x, axis=None, keepdims=False):
    if _convert(x).dtype == _dtypes.bool_:
        x = _m.cast(x, _FLOATX)
    return _r.reduce_mean(x, axis=axis, keepdims=keepdims)


def sum(x, axis=None, keepdims=False):  # noqa: A001
    return _r.reduce_sum(x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):  # noqa: A001
    return _r.reduce_max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):  # noqa: A001
    return _r.reduce_min(x, axis=axis, keepdims=keepdims)


def square(x):
    return _m.square(x)


def sqrt(x):
    """sqrt(max(x, 0)), as Keras 2's backend."""
    x = _convert(x)
    return _m.sqrt(_m.maximum(x, _constant_like(0, x)))


def abs(x):  # noqa: A001
    return _m.abs(x)


def exp(x):
    return _m.exp(x)


def log(x):
    return _m.log(x)


def clip(x, min_value, max_value):
    """x clipped to [min_value, max_value] (max_value below min_value becomes min_value)."""
    if max_value is not None and max_value < min_value:
        max_value = min_value
    return _m.clip_by_value(x, min_value, max_value)


def maximum(x, y):
    return _m.maximum(x, y)


def minimum(x, y):
    return _m.minimum(x, y)


def sigmoid(x):
    return _m.sigmoid(x)


def tanh(x):
    return _m.tanh(x)


def softmax(x, axis=-1):
    return _nn.softmax(x, axis=axis)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    from . import activations

    return activations.relu(x, alpha=alpha, max_value=max_value, threshold=threshold)


def reshape(x, shape):
    return _s.reshape(x, shape)


def transpose(x):
    return _s.transpose(x)


def expand_dims(x, axis=-1):
    return _s.expand_dims(x, axis)


def concatenate(tensors, axis=-1):
    return _s.concat(list(tensors), axis)


def stack(x, axis=0):
    return _s.stack(list(x), axis=axis)


from .backend_ops import *  # noqa: E402,F401,F403  # issue 16: the rest of keras.backend
from .backend_ops import __all__ as _ops_all  # noqa: E402
from .backend_ctc import *  # noqa: E402,F401,F403
from .backend_ctc import __all__ as _ctc_all  # noqa: E402
from .backend_nn import *  # noqa: E402,F401,F403
from .backend_nn import __all__ as _nn_all  # noqa: E402

__all__ += _ops_all + _ctc_all + _nn_all  # issue 16
