"""TF1's older names for TF2 functions (``random_normal``, ``to_float``, ``arg_max``,
``count_nonzero`` with ``reduction_indices``, ...), with TF 1.15's signatures, and the
small graph utilities TF1 programs call: ``tf.Tensor`` (graph tensors are instances),
``get_default_session``, ``is_variable_initialized``, ``Print``, ``py_func``, ``add_n``,
``all_variables``/``model_variables``, and ``tf.train``'s global-step helpers."""

from __future__ import annotations

import contextlib
import sys

import numpy as np

import ipu_gpu as _core
from ipu_gpu.core.spec import Dimension

__all__ = ["DType", "Dimension", "Print", "Tensor", "add_n", "identity", "all_variables", "arg_max",
           "arg_min", "argmax", "argmin", "check_numerics", "colocate_with", "count_nonzero",
           "dimension_value", "get_default_session", "global_norm",
           "is_variable_initialized", "model_variables", "moving_average_variables",
           "multinomial", "py_func", "random_normal", "random_shuffle", "random_uniform",
           "to_double", "to_float", "to_int32", "to_int64", "truncated_normal"]


def _graph():
    from ... import graph

    return graph


# ---- tf.Tensor and tf.Operation -------------------------------------------------------------
class _TensorMeta(type):
    def __instancecheck__(cls, obj):
        graph = _graph()
        if isinstance(obj, graph.GraphVariable):  # a TF1 variable is not a tf.Tensor
            return False
        return isinstance(obj, (_core.Tensor, graph.GraphTensor))

    def __subclasscheck__(cls, sub):
        graph = _graph()
        return issubclass(sub, (_core.Tensor, graph.GraphTensor))


class Tensor(metaclass=_TensorMeta):
    """``tf.Tensor`` for ``isinstance`` checks: a graph tensor (not a graph variable) or an
    eager Tensor."""


# ---- tf.DType ---------------------------------------------------------------------------------
# TF's DataType enum values of the dtypes ipu_gpu has
_DATA_TYPES = {1: "float32", 2: "float64", 3: "int32", 4: "uint8", 5: "int16", 6: "int8",
               8: "complex64", 9: "int64", 10: "bool", 14: "bfloat16", 17: "uint16",
               18: "complex128",
               19: "float16", 22: "uint32", 23: "uint64"}


class _DTypeMeta(type):
    def __instancecheck__(cls, obj):
        from ...dtype_objects import DType as _DType

        return isinstance(obj, (np.dtype, _DType))

    def __call__(cls, type_enum):
        name = _DATA_TYPES.get(type_enum) if isinstance(type_enum, int) else None
        if name is None:
            raise TypeError(f"{type_enum} does not correspond to a valid tensorflow::DataType")
        from ...dtype_objects import bfloat16, wrap

        return bfloat16 if name == "bfloat16" else wrap(_core.as_dtype(name))


class DType(metaclass=_DTypeMeta):
    """``tf.DType`` for annotations and ``isinstance`` checks (ipu_gpu's dtypes are numpy
    dtypes); ``DType(type_enum)`` is the dtype of TF's ``DataType`` enum value."""


# ---- renamed ops -----------------------------------------------------------------------------
def random_normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    return _core.random.normal(shape, mean=mean, stddev=stddev, dtype=dtype, seed=seed)


def random_uniform(shape, minval=0, maxval=None, dtype=np.float32, seed=None, name=None):
    return _core.random.uniform(shape, minval=minval, maxval=maxval, dtype=dtype, seed=seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=np.float32, seed=None, name=None):
    return _core.random.truncated_normal(shape, mean=mean, stddev=stddev, dtype=dtype,
                                         seed=seed)


def random_shuffle(value, seed=None, name=None):
    return _node_or_call(_core.random.shuffle, (value,), dict(seed=seed))


def multinomial(logits, num_samples, seed=None, name=None, output_dtype=None):
    """``tf.random.categorical``; on graph tensors a node drawing each run."""
    return _node_or_call(_core.random.categorical, (logits, num_samples),
                         dict(dtype=output_dtype, seed=seed))


def _node_or_call(fn, args, kwargs):
    """``fn(*args, **kwargs)``, as one graph node (called each run) when an argument is a
    graph tensor: for the functions that read their arguments' values themselves."""
    from ...core import registry

    node = registry.symbolic_call(fn, args, kwargs)
    return fn(*args, **kwargs) if node is NotImplemented else node


def to_float(x, name="ToFloat"):
    return _core.cast(x, _core.float32)


def to_double(x, name="ToDouble"):
    return _core.cast(x, _core.float64)


def to_int32(x, name="ToInt32"):
    return _core.cast(x, _core.int32)


def to_int64(x, name="ToInt64"):
    return _core.cast(x, _core.int64)


def _axis(axis, dimension, name="axis", old="dimension"):
    if axis is not None and dimension is not None:
        raise ValueError(f"Cannot specify both '{name}' and '{old}'")
    return axis if axis is not None else dimension


def argmax(input, axis=None, name=None, dimension=None, output_type=np.int64):  # noqa: A002
    """TF1's ``argmax``: ``axis`` (or its old name ``dimension``) defaults to 0."""
    axis = _axis(axis, dimension)
    return _core.argmax(input, 0 if axis is None else axis, output_type=output_type)


def argmin(input, axis=None, name=None, dimension=None, output_type=np.int64):  # noqa: A002
    axis = _axis(axis, dimension)
    return _core.argmin(input, 0 if axis is None else axis, output_type=output_type)


def arg_max(input, dimension, output_type=np.int64, name=None):  # noqa: A002
    return _core.argmax(input, dimension, output_type=output_type)


def arg_min(input, dimension, output_type=np.int64, name=None):  # noqa: A002
    return _core.argmin(input, dimension, output_type=output_type)


def count_nonzero(input_tensor=None, axis=None, keepdims=None, dtype=np.int64, name=None,
                  reduction_indices=None, keep_dims=None, input=None):  # noqa: A002
    """TF1's ``count_nonzero`` (old names ``reduction_indices``, ``keep_dims``, ``input``)."""
    input_tensor = _axis(input_tensor, input, "input_tensor", "input")
    axis = _axis(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = _axis(keepdims, keep_dims, "keepdims", "keep_dims")
    return _core.math.count_nonzero(input_tensor, axis=axis, keepdims=bool(keepdims),
                                    dtype=dtype)


def add_n(inputs, name=None):
    """The element-wise sum of ``inputs`` (tensors of one dtype and shape).

    Raises:
      ValueError: ``inputs`` is not a non-empty list (TF's message)."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor/IndexedSlices with the "
                         "same dtype and shape")
    total = inputs[0]
    for t in inputs[1:]:
        total = total + t
    return total if len(inputs) > 1 else _core.identity(total)


def identity(input, name=None):  # noqa: A002 - TF's name
    """``tf.identity``; in a graph its node takes ``name`` (made unique in the name scope),
    so ``get_tensor_by_name("<name>:0")`` finds it, the TF1 idiom for naming an output."""
    out = _core.identity(input)
    graph = _graph()
    if name and isinstance(out, graph.GraphTensor) and out.op.type != "VariableV2":
        op, g = out.op, out.op.graph
        if g._by_name.get(op.name) is op:
            del g._by_name[op.name]
        op.name = g.unique_name(name)
        g._by_name[op.name] = op
    return out


def check_numerics(tensor, message, name=None):
    """``tensor``, failing (InvalidArgumentError) where it holds NaN or Inf; on graph tensors
    a node checking each run."""
    from ... import debugging

    return _node_or_call(debugging.check_numerics, (tensor, message), {})


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """``tf.nn.batch_normalization``: ``(x - mean) * scale / sqrt(variance + epsilon) +
    offset`` in TF's arrangement (``x * inv + (offset - mean * inv)``)."""
    inv = _core.math.rsqrt(variance + variance_epsilon)
    if scale is not None:
        inv = inv * scale
    shift = offset - mean * inv if offset is not None else -mean * inv
    return x * _core.cast(inv, x.dtype) + _core.cast(shift, x.dtype)


def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """TF 1's ``tf.nn.dropout``: keep each element with probability ``keep_prob`` (a number
    or a scalar tensor, a placeholder fed each run) or drop it with probability ``rate``,
    scaling the kept ones by 1 / (1 - rate).

    Raises:
      ValueError: both ``keep_prob`` and ``rate``, or neither (TF 1.15's messages); a
        ``keep_prob`` that is not a number or tensor; a rate outside [0, 1)."""
    if keep_prob is not None:
        if rate is not None:
            raise ValueError("Cannot specify both 'keep_prob' and 'rate'.")
        try:
            rate = 1.0 - keep_prob
        except TypeError:
            raise ValueError(f"keep_prob must be a floating point number or Tensor (got "
                             f"{keep_prob!r})") from None
    if rate is None:
        raise ValueError("You must provide a rate to dropout.")
    return _core.nn.dropout(x, rate=rate, noise_shape=noise_shape, seed=seed)


@contextlib.contextmanager
def colocate_with(op, ignore_existing=False):
    """TF1's device colocation block: placement is the emulator's, so it changes nothing."""
    yield


def dimension_value(dimension):
    """The int (or None) of a ``Dimension`` or an int."""
    return getattr(dimension, "value", dimension)


def global_norm(t_list, name=None):
    return _core.linalg.global_norm(t_list)


# ---- sessions and variables -----------------------------------------------------------------
def get_default_session():
    """The default session (``with sess.as_default():`` / ``with sess:``, or an
    InteractiveSession), or None."""
    from ...graph import session

    try:
        return session.default_session()
    except ValueError:
        return None


def all_variables():
    """The old name of ``global_variables``."""
    return _graph().global_variables()


def model_variables(scope=None) -> list:
    return _graph().get_default_graph().get_collection("model_variables", scope)


def moving_average_variables(scope=None) -> list:
    return _graph().get_default_graph().get_collection("moving_average_variables", scope)


def is_variable_initialized(variable):
    """A boolean tensor: whether ``variable``'s initializer has run (an eager variable
    always has)."""
    graph = _graph()
    if not isinstance(variable, graph.GraphVariable):
        return _core.constant(True)
    return graph.core.add_node(variable.graph, "IsVariableInitialized",
                               "IsVariableInitialized", [],
                               lambda: _core.constant(variable._variable is not None),
                               [(np.bool_, [])]).outputs[0]


# ---- Print and py_func ----------------------------------------------------------------------
def _print_value(v, summarize) -> str:
    from .control_flow import _summarize_graph

    return _summarize_graph(v, summarize)  # TF's SummarizeValue, as its Assert prints


def Print(input_, data, message=None, first_n=None, summarize=None, name=None):  # noqa: N802
    """``input_``, printing ``message`` and each of ``data`` (its first ``summarize``
    elements, 3 by default) to stderr each time it is computed (the first ``first_n``
    times when that is positive), as TF1's deprecated ``tf.Print``."""
    graph = _graph()
    data = list(data or [])
    n = 3 if summarize is None else summarize
    limit = first_n if first_n is not None and first_n >= 0 else None
    count = [0]

    def emit(value, *items):
        if limit is None or count[0] < limit:
            count[0] += 1
            sys.stderr.write((message or "") + "".join(_print_value(x, n) for x in items)
                             + "\n")
        return value
    if not any(isinstance(x, graph.GraphTensor) for x in [input_, *data]):
        return emit(input_, *data)
    spec = (input_._dtype, input_.shape.as_list() if input_.shape.rank is not None else None) \
        if isinstance(input_, graph.GraphTensor) else (input_.dtype, list(input_.shape))
    g = graph.core._graph_of([input_, data])
    return graph.core.add_node(g, "Print", name or "Print", [input_, *data],
                               lambda v, *items: _core.identity(emit(v, *items)),
                               [spec]).outputs[0]


def py_func(func, inp, Tout, stateful=True, name=None):  # noqa: N803 - TF's name
    """``func`` on the numpy values of ``inp`` (``tf.numpy_function``); on graph tensors a
    node calling it in each run, its outputs of unknown shape (as TF's ``PyFunc``)."""
    graph = _graph()
    inp = list(inp)
    if not any(isinstance(x, graph.GraphTensor) for x in inp):
        return _core.numpy_function(func, inp, Tout, stateful=stateful)
    many = isinstance(Tout, (list, tuple))
    touts = list(Tout) if many else [Tout]
    g = graph.core._graph_of(inp)

    def run(*values):
        out = _core.numpy_function(func, list(values), Tout, stateful=stateful)
        return list(out) if many else [out]
    node = graph.core.add_node(g, "PyFunc", name or "PyFunc", inp, run,
                               [(_core.as_dtype(t).as_numpy_dtype
                                 if hasattr(_core.as_dtype(t), "as_numpy_dtype")
                                 else _core.as_dtype(t), None) for t in touts])
    return list(node.outputs) if many else node.outputs[0]


# ---- tf.train's global-step helpers ---------------------------------------------------------
def create_global_step(graph=None):
    """A new global step variable.

    Raises:
      ValueError: the graph has one already (TF's message)."""
    from ...graph import optimizers

    if optimizers.get_global_step(graph) is not None:
        raise ValueError('"global_step" already exists.')
    return optimizers.get_or_create_global_step(graph)


def global_step(sess, global_step_tensor) -> int:
    """The value of ``global_step_tensor`` (a variable or tensor) in ``sess``."""
    if isinstance(global_step_tensor, _core.Tensor):
        return int(global_step_tensor.numpy())
    return int(sess.run(global_step_tensor))


TRAIN_NAMES = ["create_global_step", "global_step"]
