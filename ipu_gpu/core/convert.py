"""Turning user values into backend arrays: the one place conversion rules live."""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np

from . import backend, dtypes, strings
from .allocation import allocation_failure, check_allocation
from .indexed_slices import IndexedSlices, densify
from .tensor import Tensor, _Deferred, _Product, wrap

_KDL_CPU = 1


def _from_dlpack(value):
    """numpy/cupy array sharing memory with a DLPack producer (torch, jax, tf)."""
    if hasattr(value, "detach") and getattr(value, "requires_grad", False):
        value = value.detach()  # torch refuses to export a tensor that requires grad
    device_type = value.__dlpack_device__()[0]
    if device_type == _KDL_CPU:
        return np.from_dlpack(value)
    cupy = backend.default_xp() if backend.backend_name() == "gpu" else None
    if cupy is None:
        raise TypeError(f"a {type(value).__name__} on a GPU needs the GPU backend (cupy)")
    return cupy.from_dlpack(value)


_INT32 = np.iinfo(np.int32)
_INT64 = np.iinfo(np.int64)


def _leaves(value):
    """The leaves of a nested list/tuple, depth first."""
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _all_ints(value) -> bool:
    """Whether every leaf is an integer (stops at the first that is not, so a list of floats
    costs one look)."""
    if isinstance(value, (list, tuple)):
        for v in value:
            if not _all_ints(v):
                return False
        return True
    return isinstance(value, (int, np.integer))


def _int64_overflow(value):
    """The first integer leaf outside int64's range (None if there is none)."""
    return next((v for v in _leaves(value) if not _INT64.min <= v <= _INT64.max), None)


def _python_value_array(value, dtype, op: str, arg: str) -> np.ndarray:
    """A numpy array for a Python scalar or nested list, TF's rules: bools give bool, ints
    int32 (int64 when a value needs it; ValueError beyond int64 unless ``dtype`` is a float),
    floats float32; with ``dtype`` the value is converted to it, integers wrapping as TF's
    conversion does (``constant(2**32 + 1, dtype=int32)`` is 1), floats to an integer dtype
    and integers to bool refused (TypeError)."""
    try:
        flat = np.asarray(value)
    except ValueError:  # inhomogeneous nesting (or str mixed with non-UTF-8 bytes)
        if any(isinstance(v, (str, bytes)) for v in _leaves(value)):
            return _string_value(value, dtype, op, arg)
        raise ValueError(f"{op}: {arg} must be a rectangular nested list of numbers, got "
                         f"{_short(value)}") from None
    kind = flat.dtype.kind
    if kind in "SU" or (kind == "O" and strings.is_string_leafy(flat)):
        return _string_value(value, dtype, op, arg)
    # numpy makes uint64, float64 (mixed with other ints) or object of ints beyond int64
    if kind == "u" or (kind in "fO" and flat.size and _all_ints(value)):
        bad = _int64_overflow(value)
        if bad is None:  # numpy integer scalars numpy promoted past int64
            flat, kind = np.asarray(value, dtype=np.int64), "i"
        elif dtype is None or np.dtype(dtype).kind != "f":
            raise ValueError(f"{op}: {arg} must hold integers in int64 range "
                             f"[{_INT64.min}, {_INT64.max}], got {_describe_int(bad)}")
        else:
            flat, kind = _as_float64(value, op, arg), "f"
    elif kind == "O":
        if not all(isinstance(v, (numbers.Real, np.number)) for v in _leaves(value)):
            raise ValueError(f"{op}: {arg} must be a rectangular nested list of numbers, "
                             f"got {_short(value)}")
        flat, kind = _as_float64(value, op, arg), "f"  # floats with ints beyond int64
    if kind == "b":
        inferred = dtypes.bool_
    elif kind == "i":
        inferred = dtypes.int32
        if flat.size and (flat.max() > _INT32.max or flat.min() < _INT32.min):
            inferred = dtypes.int64
    elif kind == "f":
        inferred = dtypes.float32
    else:
        raise TypeError(f"{op}: {arg}: cannot convert a value of dtype {flat.dtype} to a "
                        f"Tensor")
    target = inferred if dtype is None else np.dtype(dtype)
    if target is dtypes.string and flat.size:
        strings.check_cast(flat.astype(inferred), target, op, arg)
    elif target is dtypes.string:  # [] as tf.string
        return np.empty(flat.shape, object)
    if (inferred.kind == "f" and target.kind in "iub") or (inferred.kind in "iu"
                                                            and target.kind == "b"):
        raise TypeError(f"{op}: {arg} must be convertible to {target.name}, got "
                        f"{'a float' if inferred.kind == 'f' else 'an integer'} value")
    if kind != "f" or target.kind != "f":
        return flat.astype(target, copy=False)  # integers wrap, as TF converts them
    with np.errstate(over="ignore"):  # 1e40 -> inf in float32, as TF
        return flat.astype(target, copy=False)


def _as_float64(value, op, arg):
    try:
        return np.asarray(value, dtype=np.float64)
    except OverflowError:
        bad = next(v for v in _leaves(value) if abs(v) > 1e308)
        raise ValueError(f"{op}: {arg} must hold numbers in float64 range, got "
                         f"{_describe_int(bad)}") from None


def _describe_int(v) -> str:
    text = str(v)
    return text if len(text) <= 40 else f"an integer of {abs(int(v)).bit_length()} bits"


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def to_array(value, dtype=None, *, arg: str = "value", op: str = "convert_to_tensor", xp=None):
    """The backend array for ``value``, cast to ``dtype`` where TF would allow it.

    Tensors/Variables give their array (a dtype mismatch is a TypeError, as in
    TF); numpy/cupy arrays keep their dtype unless ``dtype`` is given; Python
    scalars and lists take TF's dtypes (float32, int32, bool) and land on
    ``xp`` (default: the current backend); DLPack producers are shared without
    copying where possible.
    """
    if isinstance(value, Tensor):
        a = value._value
        if dtype is not None and a.dtype != dtype:
            raise TypeError(f"{op}: {arg} must have dtype {np.dtype(dtype).name}, got a Tensor of "
                            f"dtype {a.dtype.name}")
        return a
    if isinstance(value, np.ndarray) or backend.is_cupy_array(value):
        a = value
    elif isinstance(value, IndexedSlices):
        return densify(value, dtype, arg)._value
    elif isinstance(value, np.generic):
        a = np.asarray(value)
    elif isinstance(value, (numbers.Number, list, tuple)):
        a = _python_value_array(value, dtype, op, arg)
        target_xp = xp if xp is not None else backend.default_xp()
        if target_xp is np or a.dtype is dtypes.string:
            return a
        return backend.to_device(target_xp, a)
    elif hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
        try:
            a = _from_dlpack(value)
        except (BufferError, RuntimeError, TypeError):
            a = np.asarray(value)
    elif hasattr(value, "__array__"):
        a = np.asarray(value)
    elif isinstance(value, (str, bytes)):
        return _string_value(value, dtype, op, arg)
    else:
        raise TypeError(f"{op}: {arg} must be a Tensor, array, number or nested list, got "
                        f"{type(value).__name__}")
    if a.dtype not in dtypes.SUPPORTED:
        if type(a) is np.ndarray and strings.is_string_leafy(a):
            return _string_value(a, dtype, op, arg)
        raise TypeError(f"{op}: {arg} must have a dtype in "
                        f"{[d.name for d in dtypes.SUPPORTED]}, got {a.dtype}")
    if dtype is not None and a.dtype != dtype:
        strings.check_cast(a, dtype, op, arg)
        with np.errstate(all="ignore"):  # out-of-range values wrap or saturate, as TF casts
            a = a.astype(dtype)
    return a


def _string_value(value, dtype, op, arg) -> np.ndarray:
    a = strings.string_array(value, op, arg)
    if dtype is not None:
        strings.check_cast(a, dtype, op, arg)
    return a


def convert_to_tensor(value, dtype=None, dtype_hint=None, name=None) -> Tensor:
    """A Tensor for ``value`` (Tensor, Variable, numpy/cupy array, number, nested list, or
    any ``__dlpack__`` producer such as torch/jax/tf tensors, zero-copy where possible; an
    IndexedSlices gives its dense value, repeated indices summed, as TF).

    A Tensor is returned as is; a Variable gives its current value. ``dtype``
    is enforced for Tensors (TypeError on mismatch) and converted to for
    other values; ``dtype_hint`` is used only when the value has no dtype.
    Placement follows the value (numpy -> CPU, cupy -> GPU); Python values go
    to the current backend.
    """
    d = None if dtype is None else dtypes.as_dtype(dtype, "convert_to_tensor: dtype")
    if type(value) is _Product or type(value) is _Deferred:
        value._value  # noqa: B018  # not computed yet (``lr * g``, a bias_add): computed now
    if type(value) is Tensor:
        if d is not None and value.dtype != d:
            raise TypeError(f"convert_to_tensor: value must have dtype {d.name}, got a Tensor "
                            f"of dtype {value.dtype.name}")
        return value
    if d is None and dtype_hint is not None and not hasattr(value, "dtype"):
        hinted = dtypes.as_dtype(dtype_hint, "convert_to_tensor: dtype_hint")
        try:
            return wrap(to_array(value, hinted))
        except TypeError:
            pass
    if isinstance(value, IndexedSlices):  # its dense value, connected to the values
        return densify(value, d)
    if isinstance(value, Tensor):  # a Variable: a snapshot that stays connected to it
        value = value.read_value()
        if d is not None and value.dtype != d:
            raise TypeError(f"convert_to_tensor: value must have dtype {d.name}, got a Variable "
                            f"of dtype {value.dtype.name}")
        return value
    return wrap(to_array(value, d))


def constant(value, dtype=None, shape=None, name=None) -> Tensor:
    """A constant Tensor from a value, cast to ``dtype`` and broadcast/reshaped to ``shape``
    as ``tf.constant`` does. Placed on the current backend. A value too large for memory
    raises ResourceExhaustedError, as TF. Given a ``name`` while a TF1 graph is built, it is
    that graph's ``Const`` node (``name:0``), as TF names it."""
    if name is not None:
        from . import registry

        node = registry.recorded_call(constant, (value,),
                                      {"dtype": dtype, "shape": shape, "name": name})
        if node is not NotImplemented:
            return node
    try:
        return wrap(_constant_array(value, dtype, shape))
    except (MemoryError, ValueError) as e:

        err = allocation_failure("constant", e, backend.default_xp())
        if err is None:
            raise
        raise err from e


def _constant_array(value, dtype, shape):
    d = None if dtype is None else dtypes.as_dtype(dtype, "constant: dtype")
    xp = backend.default_xp()
    if isinstance(value, Tensor):
        if d is not None and value.dtype != d:
            raise TypeError(f"constant: value must have dtype {d.name}, got a Tensor of dtype "
                            f"{value.dtype.name}")
        a = value._value  # immutable: sharing is safe
    elif isinstance(value, (numbers.Number, list, tuple)):
        a = to_array(value, d, arg="value", op="constant", xp=np)  # a fresh array
    else:  # arrays and DLPack producers are cast freely (as TF) and always copied
        a = to_array(value, None, arg="value", op="constant")
        a = a.copy() if d is None or a.dtype == d else to_array(a, d)
    if xp is not np and not backend.is_cupy_array(a) and a.dtype is not dtypes.string:
        a = backend.to_device(xp, a)
    elif xp is np and backend.is_cupy_array(a):
        a = a.get()
    if shape is not None:
        shape = tuple(int(s) for s in shape)
        if a.size == 1:

            axp = xp_of_array(a)
            check_allocation("constant", axp, shape, a.dtype)
            a = axp.full(shape, a.reshape(()), dtype=a.dtype)
        elif math.prod(shape) == a.size:
            a = a.reshape(shape)
        else:
            raise TypeError(f"constant: value has {a.size} elements, which cannot be shaped "
                            f"to {list(shape)}")
    return a


def xp_of_array(a):
    return sys.modules["cupy"] if backend.is_cupy_array(a) else np
