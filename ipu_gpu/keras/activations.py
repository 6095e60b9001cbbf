"""``keras.activations``: Keras 2's activation functions (``tf_keras/src/activations.py``),
composed of ipu_gpu ops so the tape differentiates them. Called on a KerasTensor, each
records an op layer in the functional graph, as TF-Keras's dispatch does."""

from __future__ import annotations

import functools

import numpy as np

from .. import ops as _ops  # noqa: F401  # registers every op
from ..core.convert import convert_to_tensor
from ..ops import indexing as _idx
from ..ops import math as _m
from ..ops import nn as _nn
from ..ops import reduction as _r
from . import backend
from .engine.keras_tensor import KerasTensor
from .engine.serialization import deserialize_keras_object

__all__ = ["deserialize", "elu", "exponential", "gelu", "get", "hard_sigmoid", "leaky_relu",
           "linear", "log_softmax", "mish", "relu", "relu6", "selu", "serialize", "sigmoid",
           "silu", "softmax", "softplus", "softsign", "swish", "tanh"]

# selu's constants (Klambauer et al. 2017), as TF's kernel
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _symbolic(symbol: str):
    """On a KerasTensor, record the function as an op layer named ``symbol``."""
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x, *args, **kwargs):
            if isinstance(x, KerasTensor):
                from .engine.op_dispatch import TFOpLambda

                return TFOpLambda(fn, symbol=symbol)(x, *args, **kwargs)
            return fn(x, *args, **kwargs)
        return wrapper
    return decorate


_graph_tensor = backend.is_graph_tensor


def _tensor(x):
    """``x`` as a Tensor; a TF1 graph tensor as it is (the ops record it as a node)."""
    return x if _graph_tensor(x) else convert_to_tensor(x)


def _const(value, like):
    if _graph_tensor(like):
        return np.asarray(value, dtype=np.dtype(like.dtype))
    return backend._constant_like(value, like)


@_symbolic("tf.keras.activations.relu")
def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    """max(x, 0), or with the arguments: ``max_value`` clips from above, values below
    ``threshold`` become ``alpha * (x - threshold)`` (Keras 2's ``backend.relu``)."""
    if alpha == 0.0 and max_value is None and threshold == 0:
        return _nn.relu(x)
    x = _tensor(x)
    if alpha != 0.0:
        if max_value is None and threshold == 0:
            return _nn.leaky_relu(x, alpha=alpha)
        if threshold != 0:
            negative_part = _nn.relu(_m.add(_m.negative(x), _const(threshold, x)))
        else:
            negative_part = _nn.relu(_m.negative(x))
    if threshold != 0:
        x = x * _m.cast(_m.greater(x, _const(threshold, x)), x.dtype)
    else:
        x = _nn.relu(x)
    if max_value is not None:
        x = _m.clip_by_value(x, _const(0, x), _const(max_value, x))
    if alpha != 0.0:
        x = x - _const(alpha, x) * negative_part
    return x


@_symbolic("tf.nn.relu6")
def relu6(x):
    """min(max(x, 0), 6)."""
    return relu(x, max_value=6.0)


@_symbolic("tf.nn.leaky_relu")
def leaky_relu(x, alpha=0.2):
    """x where positive, ``alpha * x`` elsewhere (``tf.nn.leaky_relu``)."""
    return _nn.leaky_relu(x, alpha=alpha)


@_symbolic("tf.keras.activations.sigmoid")
def sigmoid(x):
    """1 / (1 + exp(-x))."""
    return _m.sigmoid(x)


@_symbolic("tf.keras.activations.tanh")
def tanh(x):
    return _m.tanh(x)


@_symbolic("tf.keras.activations.softmax")
def softmax(x, axis=-1):
    """exp(x) normalised along ``axis`` (an int or a tuple of ints).

    Raises:
      ValueError: x of rank 1 or less (Keras's message).
    """
    x = _tensor(x)
    if x.ndim <= 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: {x}")
    if isinstance(axis, int):
        return _nn.softmax(x, axis=axis)
    numerator = _m.exp(x - _r.reduce_max(x, axis=axis, keepdims=True))
    return numerator / _r.reduce_sum(numerator, axis=axis, keepdims=True)


@_symbolic("tf.nn.log_softmax")
def log_softmax(x, axis=-1):
    return _nn.log_softmax(x, axis=axis)


@_symbolic("tf.keras.activations.elu")
def elu(x, alpha=1.0):
    """x where positive, ``alpha * (exp(x) - 1)`` elsewhere."""
    x = _tensor(x)
    res = _nn.elu(x)
    if alpha == 1:
        return res
    return _idx.where(_m.greater(x, _const(0, x)), res, _const(alpha, x) * res)


@_symbolic("tf.keras.activations.selu")
def selu(x):
    """``scale * elu(x, alpha)`` with the constants of Klambauer et al. (2017)."""
    x = _tensor(x)
    return _const(_SELU_SCALE, x) * elu(x, _SELU_ALPHA)


@_symbolic("tf.keras.activations.softplus")
def softplus(x):
    """log(exp(x) + 1)."""
    return _m.softplus(x)


@_symbolic("tf.keras.activations.softsign")
def softsign(x):
    """x / (|x| + 1)."""
    x = _tensor(x)
    return x / (_m.abs(x) + _const(1, x))


@_symbolic("tf.keras.activations.swish")
def swish(x):
    """x * sigmoid(x) (also ``silu``)."""
    return _nn.silu(x)


silu = swish


@_symbolic("tf.keras.activations.gelu")
def gelu(x, approximate=False):
    """The Gaussian error linear unit; ``approximate`` uses the tanh form."""
    return _nn.gelu(x, approximate=approximate)


@_symbolic("tf.keras.activations.exponential")
def exponential(x):
    return _m.exp(x)


@_symbolic("tf.keras.activations.hard_sigmoid")
def hard_sigmoid(x):
    """Keras 2's piecewise-linear sigmoid: clip(0.2 * x + 0.5, 0, 1) (Keras 3 uses x / 6)."""
    x = _tensor(x)
    return _m.clip_by_value(x * _const(0.2, x) + _const(0.5, x), _const(0, x), _const(1, x))


@_symbolic("tf.keras.activations.mish")
def mish(x):
    """x * tanh(softplus(x)) (Misra 2019)."""
    x = _tensor(x)
    return x * _m.tanh(_m.softplus(x))


def linear(x):
    """The identity."""
    return x


_FUNCTIONS = {fn.__name__: fn for fn in (
    relu, relu6, leaky_relu, sigmoid, tanh, softmax, log_softmax, elu, selu, softplus,
    softsign, swish, gelu, exponential, hard_sigmoid, mish, linear)}
_FUNCTIONS["silu"] = swish


def serialize(activation) -> str:
    """The name of an activation function (a config dict for an object with get_config).

    Raises:
      ValueError: an object with neither a name nor a config.
    """
    name = getattr(activation, "__name__", None)
    if name in _FUNCTIONS and _FUNCTIONS[name] is activation:
        return name
    if hasattr(activation, "get_config"):
        return {"class_name": type(activation).__name__, "config": activation.get_config()}
    if name is not None:  # a user's function: its name, as Keras 2's legacy format
        return name
    raise ValueError(f"Unknown activation function '{activation}' cannot be serialized.")


def deserialize(name, custom_objects=None):
    """The activation function called ``name`` (or described by a config dict).

    Raises:
      ValueError: an unknown name.
    """
    from .layers import activation as activation_layers

    objects = {k: getattr(activation_layers, k) for k in activation_layers.__all__}
    objects.update(_FUNCTIONS)
    try:
        return deserialize_keras_object(name, objects, custom_objects, "activation function")
    except ValueError:
        raise ValueError(f"Unknown activation function '{name}' cannot be "
                         "deserialized.") from None


def get(identifier):
    """The activation function for None (``linear``), a name, a config dict or a callable.

    Raises:
      ValueError: an unknown name. TypeError: anything else.
    """
    if identifier is None:
        return linear
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier}")
