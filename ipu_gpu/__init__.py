"""ipu_gpu: run programs written for Graphcore's IPU TensorFlow API on NVIDIA GPUs (CuPy)
and on any CPU (Numba).

``import ipu_gpu as tf`` gives the TensorFlow-shaped core: Tensor, Variable, GradientTape,
math and ``nn``. Importing compiles nothing and never imports cupy.
"""

from . import errors, math, nn
from . import ops as _ops  # noqa: F401  # registers every op
from . import data, debugging, distribute, io, linalg, random, sparse, summary, train
from . import estimator  # tf.estimator (TF1 graph mode; loads nothing heavy)
from . import tf_config as config
from .core.spec import TensorSpec, string
from .io.sparse import SparseTensor
from .core.spec import TensorShape as TensorShape  # tf.TensorShape: None dims, unknown rank
from .debugging import Assert, assert_equal, assert_greater, assert_less, assert_rank
from .device import DeviceSpec, device
from .function import function, numpy_function, py_function
from .module import Module
from .ops.clip import clip_by_global_norm, clip_by_norm
from .ops.custom_gradient import custom_gradient
from . import nest
from .functional_ops import foldl, foldr, map_fn, scan, vectorized_map
from .tensor_array import TensorArray
from . import experimental, image
from .control_flow import cond, while_loop
from .ops.array import (broadcast_to, eye, linspace, meshgrid, pad, rank, reverse, roll, shape,
                        size, slice, strided_slice, tile, unstack)
from .ops.math import floor, round
from .ops.math_extra import cumsum, einsum
from .ops.reduction import norm, reduce_all, reduce_any, reduce_logsumexp, reduce_prod
from .ops.sort import (argsort, boolean_mask, gather_nd, scatter_nd, sort, tensor_scatter_nd_add,
                       tensor_scatter_nd_update)
from .printing import print  # noqa: A004 - tf.print
from .core.backend import BackendError, backend_name, set_backend
from .core.convert import constant, convert_to_tensor
from .core.indexed_slices import IndexedSlices, IndexedSlicesSpec
from .core.dtypes import (bool_, double, float16, float32, float64, half, int8, int16,
                          int32, int64, uint8)
from .core.tape import GradientTape, UnconnectedGradients
from .core.tensor import Tensor, Variable
from .ops.creation import fill, ones, ones_like, range, zeros, zeros_like
from .ops.indexing import gather, one_hot, where
from .ops.math import (abs, add, cast, clip_by_value, divide, equal, exp, floordiv, floormod,
                       greater, greater_equal, identity, less, less_equal, log, logical_and,
                       logical_not, logical_or, maximum, minimum, multiply, negative, not_equal,
                       pow, rsqrt, sigmoid, sign, sqrt, square, stop_gradient, subtract, tanh,
                       truediv)
from .ops.matmul import matmul
from .ops.reduction import argmax, argmin, reduce_max, reduce_mean, reduce_min, reduce_sum
from .ops.bucketing import histogram_fixed_width, searchsorted
from .ops.sequence_ops import repeat, sequence_mask
from .ops.unique import unique
from .ops.tensordot import tensordot
from .ops.trig import (acos, acosh, asin, asinh, atan, atan2, atanh, cos, cosh, sin, sinh,
                       tan)
from .ops.shape import concat, expand_dims, reshape, split, squeeze, stack, transpose
from . import dtypes
from .tf2_names import (add_n, control_dependencies, get_logger, get_static_value, is_tensor,
                        name_scope, no_op)
from .timestamp import timestamp
from .init_ops_v2 import (constant_initializer, ones_initializer, random_normal_initializer,
                          random_uniform_initializer, zeros_initializer)

bool = bool_  # noqa: A001 - tf.bool
# tf.float32, ...: TF's DType objects (limits, is_floating, ...) over the numpy dtypes
from .dtype_objects import as_dtype, bfloat16, wrap as _wrap_dtype  # noqa: E402
(bool, double, float16, float32, float64, half, int8, int16, int32, int64,  # noqa: A001
 uint8) = map(_wrap_dtype, (bool_, double, float16, float32, float64, half, int8, int16,
                            int32, int64, uint8))

__version__ = "0.1.0"


def executing_eagerly() -> bool:
    """Whether ops run at once: False while a TF1 graph is built or an IPU program runs."""
    from .compat.behavior import executing_eagerly as _executing_eagerly

    return _executing_eagerly()


# tf.compat, tf.keras, tf.saved_model and ipu_gpu.ipu load on first use, so `import ipu_gpu`
# stays fast
_LAZY_SUBMODULES = ("autograph", "compat", "ipu", "keras", "saved_model", "strings")


def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name == "initializers":  # tf.initializers is tf.keras.initializers in TF 2.6
        import importlib

        return importlib.import_module(f"{__name__}.keras.initializers")
    if name == "DType":  # tf.DType (its class lives with the TF1 names; loaded on use)
        from .dtypes import DType

        return DType
    if name == "RaggedTensor":  # issue 17: what tf.strings.split returns
        from .ragged import RaggedTensor

        return RaggedTensor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


newaxis = None  # tf.newaxis: indexing with it inserts an axis of size 1, as numpy's

__all__ = [
    "newaxis",
    "BackendError", "GradientTape", "IndexedSlices", "IndexedSlicesSpec", "Tensor",
    "TensorShape", "UnconnectedGradients", "Variable",
    "abs", "add", "argmax", "argmin", "as_dtype", "backend_name", "bool", "cast", "errors",
    "clip_by_global_norm", "clip_by_norm", "clip_by_value", "concat", "constant",
    "convert_to_tensor", "divide", "double", "equal",
    "exp", "expand_dims", "fill", "float16", "float32", "float64", "floordiv", "floormod",
    "gather", "greater", "greater_equal", "half", "identity", "int8", "int16", "int32", "int64",
    "less", "less_equal", "log", "logical_and", "logical_not", "logical_or", "math", "matmul",
    "maximum", "minimum", "multiply", "negative", "nn", "not_equal", "one_hot", "ones",
    "ones_like", "pow", "range", "reduce_max", "reduce_mean", "reduce_min", "reduce_sum",
    "reshape", "rsqrt", "set_backend", "sigmoid", "sign", "split", "sqrt", "square", "squeeze",
    "stack", "stop_gradient", "subtract", "tanh", "transpose", "truediv", "uint8", "where",
    "zeros", "zeros_like", "executing_eagerly",
    # issue 14: tf.data, tf.io, tf.random, tf.function and the program-level surface
    "Assert", "DeviceSpec", "TensorSpec", "assert_equal", "assert_greater", "assert_less",
    "assert_rank", "config", "data", "debugging", "device", "distribute", "function", "io",
    "numpy_function", "print", "py_function", "random", "sparse", "SparseTensor", "string",
    "summary", "train",
    "estimator",  # issue 17: tf.estimator
    # issue 14: array ops
    "broadcast_to", "eye", "linspace", "meshgrid", "pad", "rank", "reverse", "roll", "shape",
    "size", "slice", "strided_slice", "tile", "unstack",
    # issue 14: math, reductions, sorting and n-d indexing
    "argsort", "boolean_mask", "cumsum", "einsum", "floor", "gather_nd", "linalg", "norm",
    "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_prod", "round", "scatter_nd", "sort",
    "tensor_scatter_nd_add", "tensor_scatter_nd_update",
    # issue 17: custom_gradient, functional ops, TensorArray, nest, image
    "TensorArray", "cond", "custom_gradient", "experimental", "foldl", "foldr", "image", "map_fn",
    "nest", "scan",
    "while_loop",
    # issue 17: trigonometric and hyperbolic functions
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "sin", "sinh",
    "tan",
    # issue 17: more array and math ops
    "histogram_fixed_width", "repeat", "searchsorted", "sequence_mask", "tensordot", "unique",
    # issue 17: tf.Module and tf.saved_model (ipu.serving's format)
    "Module", "saved_model",
    # issue 17: string tensors
    "RaggedTensor", "strings",
    "DType", "add_n", "control_dependencies", "dtypes", "get_logger", "is_tensor",
    "name_scope", "constant_initializer", "ones_initializer", "zeros_initializer",
    "get_static_value", "no_op", "autograph",
    "vectorized_map", "random_normal_initializer", "random_uniform_initializer", "initializers",
    "bfloat16",
    "timestamp",  # E2: most-missed in Graphcore's applications
]
