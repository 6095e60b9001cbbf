"""The dtypes ipu_gpu knows, named as TensorFlow names them, and the conversion rules."""

from __future__ import annotations

import numpy as np

float16 = np.dtype("float16")
float32 = np.dtype("float32")
float64 = np.dtype("float64")
int8 = np.dtype("int8")
uint8 = np.dtype("uint8")
int16 = np.dtype("int16")
int32 = np.dtype("int32")
int64 = np.dtype("int64")
bool_ = np.dtype("bool")
half = float16
double = float64
string = np.dtype(object)  # tf.string: host object arrays of bytes (core/strings.py)

SUPPORTED = (float16, float32, float64, int8, uint8, int16, int32, int64, bool_)
FLOATING = (float16, float32, float64)
_BY_NAME = {d.name: d for d in SUPPORTED}
_BY_NAME.update({"half": float16, "float": float32, "double": float64, "bool_": bool_,
                 "string": string, "object": string})


def as_dtype(value, arg: str = "dtype") -> np.dtype:
    """A supported numpy dtype from a dtype, a type, a name or a torch/tf dtype."""
    if isinstance(value, np.dtype):
        d = value
    elif isinstance(value, str):
        d = _BY_NAME.get(value)
        if d is None:
            raise TypeError(f"{arg} must be one of {sorted(_BY_NAME)}, got {value!r}")
    elif value is bool:
        d = bool_
    elif value is float:
        d = float32
    elif value is int:
        d = int32
    elif value is str or value is bytes:
        d = string
    else:
        name = getattr(value, "name", None) or str(value).rsplit(".", 1)[-1]
        try:
            d = np.dtype(value) if isinstance(value, type) else _BY_NAME[name]
        except (KeyError, TypeError):
            raise TypeError(f"{arg} must be a dtype, got {value!r}") from None
    if d not in SUPPORTED and d is not string:
        raise TypeError(f"{arg} must be one of {[s.name for s in SUPPORTED]}, got {d}")
    return d


def is_floating(d: np.dtype) -> bool:
    return d.kind == "f"


def python_scalar_dtype(value) -> np.dtype:
    """The dtype TensorFlow gives a Python scalar: bool, int32 (int64 when the value needs it;
    ValueError beyond int64, as TF refuses it), float32."""
    if isinstance(value, bool):
        return bool_
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return int32
        if -(2**63) <= value < 2**63:
            return int64
        raise ValueError(f"expected an integer in int64 range, got {value}")
    if isinstance(value, float):
        return float32
    if isinstance(value, complex):
        raise TypeError(f"complex values are not supported, got {value!r}")
    raise TypeError(f"expected a number, got {type(value).__name__}")
