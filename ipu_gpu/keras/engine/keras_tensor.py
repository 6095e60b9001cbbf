"""Symbolic tensors of the functional API, and how a functional graph is recorded.

A ``KerasTensor`` stands for a batch of values not yet computed: it has a ``shape`` (a
``TensorShape`` whose batch dimension, and any other dimension the model leaves open, is
None), a ``dtype`` (a numpy dtype), a ``name`` and the two attributes the graph is read from:

- ``_keras_history``: ``KerasHistory(layer, node_index, tensor_index)``; the tensor is output
  number ``tensor_index`` (in ``nest.flatten`` order) of the call recorded as
  ``layer._inbound_nodes[node_index]``.
- ``_keras_mask``: the KerasTensor of its mask, or None (masks carry no history).

Every ``Layer.__call__`` on KerasTensors appends a ``node.Node`` to ``layer._inbound_nodes``
and to ``_outbound_nodes`` of each layer whose output it consumes. A node holds ``layer``,
``call_args`` (the inputs first, then other positional arguments) and ``call_kwargs`` exactly
as the call passed them, with KerasTensors in place (``training`` and ``mask`` filled in by
the framework are not recorded, so the model's call decides them), and ``outputs`` (the
nested structure the layer returned). ``node.keras_inputs`` are the KerasTensors among the
arguments, ``node.parent_nodes`` the nodes that made them, ``node.iterate_inbound()`` yields
``(inbound_layer, node_index, tensor_index, tensor)``, and ``node.map_arguments(fn)``
rebuilds ``(args, kwargs)`` with ``fn(kt)`` in place of each KerasTensor. ``keras.Input``
makes an ``InputLayer`` whose single node has ``is_input`` true, no arguments and the input
KerasTensor as output. To run a model, walk from the outputs' histories back to the inputs,
order the nodes topologically, and call each node's layer on the mapped arguments. A layer
called twice (shared weights) has two nodes.

Operators on KerasTensors (``+ - * / // % ** @``, unary ``- abs ~``, comparisons, ``& |``
and ``[]``) record ``TFOpLambda`` layers named as TF-Keras names them
(``tf.__operators__.add``, ``tf.math.multiply``, ``tf.__operators__.getitem``, ...), and so
do ipu_gpu functions called on KerasTensors (``tf.concat`` -> a layer ``tf.concat``,
``tf.reduce_mean`` -> ``tf.math.reduce_mean``): this module installs the op registry's
symbolic hook, ``op_dispatch.dispatch``. A KerasTensor refuses conversion to an array
(``__array__`` raises TypeError), which is how the registry tells it from a value.
"""

from __future__ import annotations

import collections
import operator
import sys

import numpy as np

from ...core import registry
from ...core.spec import TensorShape, TensorSpec, as_shape, dtype_repr


class KerasHistory(collections.namedtuple("KerasHistory",
                                          ["layer", "node_index", "tensor_index"])):
    """Which call made a KerasTensor: ``layer._inbound_nodes[node_index]``, output
    ``tensor_index`` of its flattened outputs."""

    __slots__ = ()


class KerasTensor:
    """A symbolic tensor: the shape and dtype of a value a functional model will compute.

    Made by ``keras.Input`` and by calling layers on KerasTensors; never holds data.
    """

    _keras_mask = None
    _keras_history = None

    def __init__(self, shape, dtype="float32", name=None):
        self._shape = as_shape(shape) if shape is not None else TensorShape(None)
        self._dtype = np.dtype(dtype)
        self._name = name

    @classmethod
    def from_spec(cls, spec: TensorSpec, name=None) -> KerasTensor:
        return cls(spec.shape, spec.dtype, name if name is not None else spec.name)

    # ---- reading ----------------------------------------------------------------------------
    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def name(self):
        return self._name

    @property
    def ndim(self):
        return self._shape.rank

    @property
    def type_spec(self) -> TensorSpec:
        return TensorSpec(self._shape, self._dtype, self._name)

    def set_shape(self, shape) -> None:
        """Refine the shape, as ``tf.Tensor.set_shape``; ValueError when incompatible."""
        shape = as_shape(shape)
        if not self._shape.is_compatible_with(shape):
            raise ValueError(f"Keras symbolic input/output's shape {self._shape} is not "
                             f"compatible with supplied shape {shape}.")
        self._shape = self._shape.merge_with(shape)

    def ref(self):
        """A hashable reference to this tensor (KerasTensors are unhashable, as tf.Tensor)."""
        return _Reference(self)

    def _description(self) -> str:
        history = self._keras_history
        return "" if history is None else f" (created by layer '{history.layer.name}')"

    def __repr__(self) -> str:
        return (f"<KerasTensor: shape={self._shape} dtype={self._dtype.name}"
                f"{self._description()}>")

    def __str__(self) -> str:
        name = "None" if self._name is None else repr(self._name)
        spec = f"TensorSpec(shape={self._shape}, dtype={dtype_repr(self._dtype)}, name={name})"
        text = f"KerasTensor(type_spec={spec}"
        if self._name is not None:
            text += f", name={self._name!r}"
        history = self._keras_history
        if history is not None:
            text += f", description=\"created by layer '{history.layer.name}'\""
        return text + ")"

    # ---- what a symbolic value cannot do ----------------------------------------------------
    def _refuse(self, what: str):
        raise TypeError(f"Keras symbolic inputs/outputs do not implement `{what}`. You may be "
                        "passing a Keras symbolic input/output to Python code or an ipu_gpu "
                        "function that needs its value: wrap the computation in a "
                        "`keras.layers.Lambda` layer, or use it in a custom layer's `call`.")

    def __len__(self):
        self._refuse("__len__")

    def __hash__(self):
        raise TypeError(f"Tensors are unhashable (this tensor: {self!r}). Instead, use "
                        "tensor.ref() as the key.")

    def __bool__(self):
        raise TypeError("Using a symbolic Keras tensor as a Python `bool` is not allowed.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"You are passing {self!r}, an intermediate Keras symbolic "
                        "input/output, to code that needs its value. Functional model "
                        "construction records layers, the Python operators and ipu_gpu ops "
                        "called on KerasTensors: wrap other computations in a "
                        "`keras.layers.Lambda` layer, or write a custom layer.")

    def __iter__(self):
        dims = None if self._shape.rank is None else self._shape.as_list()
        if dims is None:
            raise TypeError("Cannot iterate over a Tensor with unknown shape.")
        if not dims:
            raise TypeError("Cannot iterate over a scalar.")
        if dims[0] is None:
            raise TypeError("Cannot iterate over a Tensor with unknown first dimension.")
        return (self[i] for i in range(dims[0]))


class _Reference:
    """``KerasTensor.ref()``: hashable by identity, ``deref()`` gives the tensor back."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def deref(self):
        return self._tensor

    def __hash__(self):
        return id(self._tensor)

    def __eq__(self, other):
        return isinstance(other, _Reference) and other._tensor is self._tensor


def _op_layer(symbol: str, fn, *args, **kwargs):
    from . import op_dispatch

    # inside an ipu_gpu function already recorded as one layer: its output (op_dispatch)
    recorded = op_dispatch.recorded_output(sys._getframe(2))
    if recorded is not None:
        return recorded
    cls = (op_dispatch.SlicingOpLambda if symbol == "tf.__operators__.getitem"
           else op_dispatch.TFOpLambda)
    return cls(fn, symbol=symbol)(*args, **kwargs)


def _operator_function(name: str, fn, second: str):
    """``fn`` as a function of named arguments, TF's (``x, y``; ``a, b`` for matmul), so an
    op layer records ``x * 2.0`` as TF-Keras does: ``tf.math.multiply(x, y=2.0)``."""
    if second == "b":
        def function(a, b):
            return fn(a, b)
    else:
        def function(x, y):
            return fn(x, y)
    function.__name__ = function.__qualname__ = name
    return function


def _binary(symbol: str, fn, second: str = "y"):
    function = _operator_function(symbol.rsplit(".", 1)[-1], fn, second)
    OPERATOR_FUNCTIONS[symbol.removeprefix("tf.")] = function

    def forward(self, other):
        return _op_layer(symbol, function, self, **{second: other})

    def reflected(self, other):
        return _op_layer(symbol, function, other, **{second: self})

    return forward, reflected


def _unary(symbol: str, fn):
    def function(x):
        return fn(x)
    function.__name__ = function.__qualname__ = symbol.rsplit(".", 1)[-1]
    OPERATOR_FUNCTIONS[symbol.removeprefix("tf.")] = function

    def apply(self):
        return _op_layer(symbol, function, self)
    return apply


# symbol (without "tf.") -> the function an operator's op layer calls (op_dispatch reads it)
OPERATOR_FUNCTIONS: dict = {}
# The TF symbols TF-Keras names its op layers after (``x + y`` -> "tf.__operators__.add").
_BINARY = {
    "add": ("tf.__operators__.add", operator.add),
    "sub": ("tf.math.subtract", operator.sub),
    "mul": ("tf.math.multiply", operator.mul),
    "truediv": ("tf.math.truediv", operator.truediv),
    "floordiv": ("tf.compat.v1.floor_div", operator.floordiv),
    "mod": ("tf.math.floormod", operator.mod),
    "pow": ("tf.math.pow", operator.pow),
    "matmul": ("tf.linalg.matmul", operator.matmul),
    "and": ("tf.math.logical_and", operator.and_),
    "or": ("tf.math.logical_or", operator.or_),
}
for _name, (_symbol, _fn) in _BINARY.items():
    _fwd, _ref = _binary(_symbol, _fn, "b" if _name == "matmul" else "y")
    setattr(KerasTensor, f"__{_name}__", _fwd)
    setattr(KerasTensor, f"__r{_name}__", _ref)
for _name, (_symbol, _fn) in {"lt": ("tf.math.less", operator.lt),
                              "le": ("tf.math.less_equal", operator.le),
                              "gt": ("tf.math.greater", operator.gt),
                              "ge": ("tf.math.greater_equal", operator.ge),
                              "eq": ("tf.math.equal", operator.eq),
                              "ne": ("tf.math.not_equal", operator.ne)}.items():
    setattr(KerasTensor, f"__{_name}__", _binary(_symbol, _fn)[0])
for _name, (_symbol, _fn) in {"neg": ("tf.math.negative", operator.neg),
                              "abs": ("tf.math.abs", operator.abs),
                              "invert": ("tf.math.logical_not", operator.invert)}.items():
    setattr(KerasTensor, f"__{_name}__", _unary(_symbol, _fn))
KerasTensor.__pos__ = lambda self: self


def _getitem_function(tensor, slice_spec):
    return tensor[slice_spec]


_getitem_function.__name__ = _getitem_function.__qualname__ = "getitem"
OPERATOR_FUNCTIONS["__operators__.getitem"] = _getitem_function


def _getitem(self, key):
    return _op_layer("tf.__operators__.getitem", _getitem_function, self, slice_spec=key)


KerasTensor.__getitem__ = _getitem
KerasTensor.__array_priority__ = 200  # numpy defers its binary operators to ours


def _dispatch_op(op, inputs, static):
    from .op_dispatch import dispatch

    return dispatch(op, inputs, static)


registry.set_symbolic_hook((KerasTensor,), _dispatch_op)


def keras_tensor_from_tensor(value, name=None) -> KerasTensor:
    """A KerasTensor with the shape and dtype of an eager Tensor or array."""
    return KerasTensor(list(np.shape(value)) if not hasattr(value, "shape") else
                       list(value.shape), value.dtype, name)
