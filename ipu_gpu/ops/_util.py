"""Checks and gradient helpers shared by the op families."""

from __future__ import annotations

import numpy as np

FLOAT_KINDS = "f"


def shape_str(shape) -> str:
    return str(list(shape))


def require_float(op: str, arg: str, a) -> None:
    if a.dtype.kind != "f":
        raise TypeError(f"{op}: {arg} must be a floating-point tensor (float16/32/64), "
                        f"got {a.dtype}")


def require_numeric(op: str, arg: str, a) -> None:
    if a.dtype.kind not in "fiu":
        raise TypeError(f"{op}: {arg} must be a numeric tensor, got {a.dtype}")


def require_int(op: str, arg: str, a) -> None:
    if a.dtype.kind not in "iu":
        raise TypeError(f"{op}: {arg} must be an integer tensor (int32/int64), got {a.dtype}")


def require_bool(op: str, arg: str, a) -> None:
    if a.dtype.kind != "b":
        raise TypeError(f"{op}: {arg} must be a bool tensor, got {a.dtype}")


def require_same_dtype(op: str, args: tuple, *arrays) -> None:
    first = arrays[0].dtype
    for a in arrays:  # no slices, no zip until one differs: this runs on most op calls
        if a.dtype != first:
            for name, b in zip(args[1:], arrays[1:]):
                if b.dtype != first:
                    raise TypeError(f"{op}: {name} must have the dtype of {args[0]} "
                                    f"({first.name}), got {b.dtype.name}")


def broadcast_shape(op: str, args: tuple, *shapes) -> tuple:
    if len(shapes) == 2:  # the common cases, without numpy's general (slow) path
        a, b = shapes
        if a == b or not b:
            return tuple(a)
        if not a:
            return tuple(b)
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"{op}: {args[1]} must be broadcast-compatible with {args[0]} "
                         f"{shape_str(shapes[0])}, got {shape_str(shapes[1])}") from None


def normalize_axis(op: str, axis, ndim: int, arg: str = "axis") -> tuple | None:
    """``axis`` (None, int, or sequence of ints, negative allowed) as a sorted tuple, or None."""
    if axis is None:
        return None
    if hasattr(axis, "_value"):  # a Tensor holding the axes
        axis = np.asarray(axis).tolist()
    elif isinstance(axis, np.ndarray):
        axis = axis.tolist()
    if isinstance(axis, (int, np.integer)):
        items = [axis]
    elif isinstance(axis, (list, tuple)):
        items = list(axis)
    else:
        raise TypeError(f"{op}: {arg} must be an int or a list of ints, got {axis!r}")
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"{op}: {arg} must be an int or a list of ints, got {axis!r}")
        if not -ndim <= a < max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
            raise ValueError(f"{op}: {arg} must be in [{-ndim}, {ndim}), got {a}")
        out.append(int(a) % max(ndim, 1))
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: {arg} must not repeat an axis, got {axis!r}")
    return tuple(sorted(out))


def check_axis(op: str, axis, ndim: int, arg: str = "axis") -> int:
    """A single axis, negative allowed, as a non-negative int."""
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{op}: {arg} must be an int, got {axis!r}")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{op}: {arg} must be in [{-ndim}, {ndim}), got {axis}")
    return int(axis) % ndim


def unbroadcast(xp, g, shape):
    """Sum ``g`` over the axes broadcasting added to ``shape`` (works on arrays and Tensors)."""
    gshape = tuple(g.shape)
    shape = tuple(shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, s in enumerate(shape) if s == 1 and gshape[lead + i] != 1)
    if axes:
        g = xp.sum(g, axis=axes, keepdims=True)
    return xp.reshape(g, shape)


def quiet(xp):
    """A context that silences numpy's floating-point warnings (inf/nan are the TF answer);
    cupy and the Tensor namespace never warn, so for them it does nothing."""
    if xp is not np:
        return _NO_CONTEXT
    return _Ignore() if _extobj_var is not None else np.errstate(all="ignore")


try:  # numpy's error state is a context variable; np.errstate builds its value on every entry
    from numpy._core.umath import _extobj_contextvar as _extobj_var
    from numpy._core.umath import _make_extobj
except ImportError:  # another numpy layout: np.errstate
    _extobj_var = _make_extobj = None
_IGNORING: dict = {}  # the current error state -> the same with every warning ignored


class _Ignore:
    """``np.errstate(all="ignore")`` at a tenth of its cost: the ignoring state made once per
    error state in force (buffer size and call kept, as errstate keeps them)."""

    __slots__ = ("_token",)

    def __enter__(self):
        current = _extobj_var.get()
        ignoring = _IGNORING.get(current)
        if ignoring is None:
            ignoring = _IGNORING[current] = _make_extobj(all="ignore")
            if len(_IGNORING) > 64:  # states set and dropped by a user's errstate blocks
                _IGNORING.clear()
                _IGNORING[current] = ignoring
        self._token = _extobj_var.set(ignoring)

    def __exit__(self, *exc):
        _extobj_var.reset(self._token)
        return False


class _NoContext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NO_CONTEXT = _NoContext()


def astype(xp, a, dtype):
    """``a`` as ``dtype``, for numpy/cupy arrays and for the Tensor namespace alike."""
    fn = getattr(xp, "astype", None)
    return fn(a, dtype) if fn is not None and not hasattr(a, "astype") else a.astype(dtype)


_ELEMENTWISE_CPU = []  # kernels/elementwise_cpu, imported on first use (it loads Numba)


def elementwise_cpu(xp, *arrays):
    """The one-pass CPU kernels (kernels/elementwise_cpu) when they take these arrays (numpy,
    contiguous, float32/64), else None (cupy arrays, Tensors of a nested tape, float16,
    strided views)."""
    if xp is not np:
        return None
    if not _ELEMENTWISE_CPU:
        from ..kernels import elementwise_cpu as module

        _ELEMENTWISE_CPU.append(module)
    k = _ELEMENTWISE_CPU[0]
    if len(arrays) == 2:  # the common case (value and bias, cotangent and output): no *args
        return k if k.fits2(arrays[0], arrays[1]) else None
    return k if k.fits(*arrays) else None
