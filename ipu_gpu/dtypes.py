"""``tf.dtypes``: TensorFlow's dtype namespace (``DType``, ``as_dtype``, ``cast`` and the
dtype constants ipu_gpu supports; ipu_gpu's dtypes are numpy dtypes)."""

from .core.dtypes import (as_dtype, bool_, double, float16, float32, float64, half, int8, int16,
                          int32, int64, string, uint8)
from .ops.math import cast

bool = bool_  # noqa: A001 - tf.dtypes.bool

__all__ = ["DType", "as_dtype", "bool", "cast", "double", "float16",  # noqa: F822 - DType: lazy
           "float32", "float64", "half", "int8", "int16", "int32", "int64", "string", "uint8"]


def __getattr__(attr):
    if attr == "DType":
        from .compat.v1.tf1_aliases import DType

        return DType
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
