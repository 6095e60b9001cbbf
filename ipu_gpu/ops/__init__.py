"""Op definitions by family; importing this package registers every op."""

from ..core import tape as _tape
from ..core.tensor import OPS as _OPERATORS
from . import (collectives, conv, creation, ctc, ctc_decoder, embedding, histogram, indexing,
               math, matmul, multi_conv, nn, pooling, reduction, sequence_slice,
               serialized_matmul, shape, tensor_namespace)
from . import array  # noqa: F401  # array ops (tile, pad, strided_slice, ...; issue 14)
from . import clip  # noqa: F401  # clip_by_norm, clip_by_global_norm, global_norm
from . import math_extra  # cumsum, unsorted_segment_sum, einsum (issue 14)
from . import sort  # noqa: F401  # sort, top_k, gather_nd, scatter_nd, ... (issue 14)
from . import trig  # noqa: F401  # sin, cos, atan2, sinh, ... (issue 17)
from . import special  # noqa: F401  # lgamma, digamma (issue 17)
from . import bucketing, cumprod, diag, sequence_ops, tensordot, unique  # noqa: F401  # (issue 17)
from . import segment_reduce  # noqa: F401  # unsorted_segment_max/min/prod (issue 17)

_tape.set_tensor_namespace(tensor_namespace)
_OPERATORS.update(
    add=math.add, subtract=math.subtract, multiply=math.multiply, divide=math.divide,
    floordiv=math.floordiv, floormod=math.floormod, pow=math.pow, matmul=matmul.matmul,
    negative=math.negative, abs=math.abs, logical_not=math.logical_not,
    logical_and=math.logical_and, logical_or=math.logical_or, less=math.less,
    less_equal=math.less_equal, greater=math.greater, greater_equal=math.greater_equal,
    equal=math.equal, not_equal=math.not_equal, getitem=indexing.getitem,
    unsorted_segment_sum=math_extra.unsorted_segment_sum,  # IndexedSlices' dense value
    gather=indexing.gather,  # Variable.sparse_read
)

__all__ = ["collectives", "conv", "creation", "ctc", "ctc_decoder", "embedding", "histogram",
           "indexing", "math", "matmul", "multi_conv", "nn", "pooling", "reduction",
           "sequence_slice", "serialized_matmul", "shape"]
