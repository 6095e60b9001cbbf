"""String tensors (``tf.string``): host numpy object arrays whose items are ``bytes``.

TensorFlow's ``numpy()`` of a string tensor gives ``bytes`` (an object array of ``bytes``);
``str`` values are stored UTF-8 encoded. Strings never live on a device (GPU or emulated
IPU): only the ops TF defines for strings take them (``STRING_OPS``); any other op refuses
them with TF's InvalidArgumentError, and inside an IPU program every string op does, as
Graphcore's XLA compiler refuses them.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, UnimplementedError
from .tensor import replica_slot

string = np.dtype(object)

# registered ops TF defines for DT_STRING (shape and selection ops, equality, add = concat)
STRING_OPS = frozenset({
    "identity", "reshape", "gather", "gather_nd", "concat", "where", "equal", "not_equal",
    "add", "tile", "transpose", "slice", "strided_slice", "getitem", "split", "unstack",
    "reverse", "broadcast_to", "shape", "size", "rank", "fill", "zeros_like", "unique",
    "boolean_mask", "EagerPyFunc", "roll", "repeat", "stop_gradient",
})


def _to_bytes(v, op: str, arg: str) -> bytes:
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (list, tuple)):
        raise ValueError(f"{op}: {arg}: Can't convert non-rectangular Python sequence to "
                         f"Tensor.")
    raise ValueError(f"{op}: {arg}: Can't convert Python sequence with mixed types to Tensor.")


def string_array(value, op: str = "convert_to_tensor", arg: str = "value") -> np.ndarray:
    """An object array of ``bytes`` for a str/bytes, a nested list of them, or a numpy
    str/bytes/object array (``str`` encoded as UTF-8; anything else a ValueError as TF's
    "Can't convert Python sequence with mixed types")."""
    if isinstance(value, (str, bytes)):
        out = np.empty((), object)
        out[()] = _to_bytes(value, op, arg)
        return out
    if isinstance(value, np.ndarray) and value.dtype.kind == "S":
        a = value  # numpy strips trailing NULs from "S" items: as TF's conversion of them
    else:
        try:
            a = np.array(value, dtype=object)
        except ValueError:
            raise ValueError(f"{op}: {arg} must be a rectangular nested list of strings, got "
                             f"{value!r:.60}") from None
    out = np.empty(a.shape, object)
    flat_out = out.reshape(-1)
    for i, v in enumerate(a.reshape(-1)):
        flat_out[i] = _to_bytes(v.item() if isinstance(v, np.generic) else v, op, arg)
    return out


def is_string_leafy(a: np.ndarray) -> bool:
    """Whether a numpy array (of a kind ipu_gpu's numeric dtypes lack) holds strings."""
    if a.dtype.kind in "SU":
        return True
    if a.dtype.kind != "O":
        return False
    return all(isinstance(v, (str, bytes, np.str_, np.bytes_)) for v in a.reshape(-1))


def check_cast(a: np.ndarray, dtype, op: str, arg: str) -> None:
    """TF converts neither strings to numbers nor numbers to strings."""
    d = np.dtype(dtype)
    if (a.dtype is string) != (d is string):
        have = "string" if a.dtype is string else a.dtype.name
        want = "string" if d is string else d.name
        raise TypeError(f"{op}: {arg}: cannot convert a {have} value to a {want} Tensor")


def refuse(op: str) -> InvalidArgumentError:
    """The error of an op not defined for strings (TF's attr check), or of any string op
    inside an IPU program (Graphcore's XLA compiler has no string kernels)."""
    if replica_slot() is not None:
        return InvalidArgumentError(
            None, None, f"Detected unsupported operations when trying to compile graph on "
            f"XLA_IPU_JIT: {op} (No registered '{op}' OpKernel for XLA_IPU_JIT devices "
            f"compatible with node {{{{node {op}}}}}; attr T=DT_STRING)")
    return InvalidArgumentError(
        None, None, f"Value for attr 'T' of string is not in the list of allowed values "
        f"[Op:{op}]")


def check_host(op: str) -> None:
    """Raise when a string op runs inside an IPU program (strings are host-only)."""
    if replica_slot() is not None:
        raise refuse(op)


def filled_strings(op: str, make: str, shape) -> np.ndarray:
    """``zeros`` of strings: empty strings, as TF; there is no string ``ones``."""
    if make != "zeros":
        raise refuse(op)
    out = np.empty(tuple(shape), object)
    out.fill(b"")
    return out


def check_string_cast(src, dst) -> bool:
    """Whether a cast from ``src`` to ``dst`` (one of them string) is the identity; TF casts
    no number to a string or back (UnimplementedError)."""
    if src is dst:
        return True
    if src is None:  # a Python value: converted by the cast op, refused there
        return False
    name = {string: "string", np.dtype("float32"): "float", np.dtype("float64"): "double"}
    raise UnimplementedError(None, None, f"Cast {name.get(src, getattr(src, 'name', src))} to "
                             f"{name.get(dst, getattr(dst, 'name', dst))} is not supported "
                             f"[Op:Cast]")
