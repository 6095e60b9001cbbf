"""``tf.dtypes``: TensorFlow's dtype namespace (``DType``, ``as_dtype``, ``cast`` and the
dtype constants ipu_gpu supports, as TF's DType objects over ipu_gpu's numpy dtypes:
``dtype_objects.py``)."""

from .core.dtypes import (bool_, double, float16, float32, float64, half, int8, int16,
                          int32, int64, string, uint8)
from .ops.math import cast

from .dtype_objects import as_dtype, bfloat16, wrap as _wrap  # noqa: E402

# TF's DType objects over the numpy dtypes (dtype_objects.py)
(bool, double, float16, float32, float64, half, int8, int16, int32, int64,  # noqa: A001
 uint8) = map(_wrap, (bool_, double, float16, float32, float64, half, int8, int16, int32,
                      int64, uint8))

__all__ = ["DType", "as_dtype", "bool", "cast", "double", "float16",  # noqa: F822 - DType: lazy
           "float32", "float64", "half", "int8", "int16", "int32", "int64", "string", "uint8",
           "bfloat16"]


def __getattr__(attr):
    if attr == "DType":
        from .compat.v1.tf1_aliases import DType

        return DType
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
