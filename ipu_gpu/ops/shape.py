"""Shape ops: reshape, transpose, expand_dims, squeeze, concat, stack, split."""

from __future__ import annotations

import numpy as np

from ..core.registry import register, symbolic_call
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError, ResourceExhaustedError
from ._shape_args import shape_args
from ._util import check_axis, normalize_axis, require_same_dtype


def _check_reshape(x, *, shape):
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise ValueError(f"reshape: shape must have at most one -1 and no other negative size, "
                         f"got {list(shape)}")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if unknown and known:
        ok = x.size % known == 0
    else:
        ok = x.size == known or (unknown and x.size == 0)
    if not ok:  # TF's kernel: InvalidArgumentError (eagerly and in a Session.run)
        requested = f"requires a multiple of {known}" if unknown else f"has {known}"
        raise InvalidArgumentError(
            f"reshape: shape {list(shape)} must have {x.size} elements (input shape "
            f"{list(x.shape)}): Input to reshape is a tensor with {x.size} values, but the "
            f"requested shape {requested}")


def _reshape_forward(k, xp, x, *, shape):
    return xp.reshape(x, shape), (x.shape,)


def _reshape_backward(k, xp, res, g, *, shape):
    return (xp.reshape(g, res[0]),)


_RESHAPE = register("reshape", args=("tensor",), check=_check_reshape, forward=_reshape_forward,
                    backward=_reshape_backward, twice_differentiable=True)


def _static_ints(op, arg, value):
    if hasattr(value, "_value") or isinstance(value, np.ndarray):
        value = np.asarray(value)
        if value.dtype.kind not in "iu":
            raise TypeError(f"{op}: {arg} must hold integers, got {value.dtype}")
        return tuple(int(v) for v in value.reshape(-1))
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{op}: {arg} must be a list of ints, got {value!r}") from None
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{op}: {arg} must be a list of ints, got {value!r}")
    return tuple(int(v) for v in items)


def _scalar_int(value):
    """A scalar integer Tensor (TF takes one as an axis) as its int; anything else as is."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.kind in "iu":
        return int(np.asarray(value))
    return value


@shape_args("shape")
def reshape(tensor, shape, name=None):
    """``tensor`` with the same elements in a new ``shape`` (one entry may be -1)."""
    return _RESHAPE(tensor, shape=_static_ints("reshape", "shape", shape))


def _check_transpose(x, *, perm):
    if perm is not None and sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: perm must be a permutation of 0..{x.ndim - 1}, "
                         f"got {list(perm)}")


def _transpose_forward(k, xp, x, *, perm):
    return xp.transpose(x, perm), ()


def _transpose_backward(k, xp, res, g, *, perm):
    inverse = None if perm is None else tuple(int(i) for i in np.argsort(perm))
    return (xp.transpose(g, inverse),)


_TRANSPOSE = register("transpose", args=("a",), check=_check_transpose,
                      forward=_transpose_forward, backward=_transpose_backward,
                      twice_differentiable=True)


@shape_args("perm")
def transpose(a, perm=None, conjugate=False, name=None):
    """``a`` with its axes permuted by ``perm`` (default: reversed)."""
    return _TRANSPOSE(a, perm=None if perm is None else _static_ints("transpose", "perm", perm))


@shape_args("axis")
def expand_dims(input, axis, name=None):  # noqa: A002
    """``input`` with a new axis of size 1 at ``axis`` (in [-rank-1, rank])."""
    x = input
    ndim = len(getattr(x, "shape", np.shape(x)))
    axis = _scalar_int(axis)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"expand_dims: axis must be an int, got {axis!r}")
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"expand_dims: axis must be in [{-ndim - 1}, {ndim}], got {axis}")
    a = axis % (ndim + 1)
    shape = tuple(getattr(x, "shape", np.shape(x)))
    if shape.count(None) > 1:  # a graph tensor: reshaped in the run, by its run's shape
        node = symbolic_call(expand_dims, (x, a), {})
        if node is not NotImplemented:
            return node
    shape = _known(shape)
    return reshape(x, shape[:a] + (1,) + shape[a:])


def _known(shape) -> tuple:
    """``shape`` with an unknown dimension (a KerasTensor's batch) as reshape's -1."""
    shape = tuple(shape)
    return tuple(-1 if s is None else s for s in shape) if None in shape else shape


def squeeze(input, axis=None, name=None):  # noqa: A002
    """``input`` without its size-1 axes (all of them, or those in ``axis``, which must be 1)."""
    shape = tuple(getattr(input, "shape", np.shape(input)))
    axes = normalize_axis("squeeze", axis, len(shape))
    if axes is None:
        axes = tuple(i for i, s in enumerate(shape) if s == 1)
    for a in axes:
        if shape[a] != 1 and shape[a] is not None:
            raise ValueError(f"squeeze: axis {a} must have size 1, got {shape[a]} (shape "
                             f"{list(shape)})")
    kept = tuple(s for i, s in enumerate(shape) if i not in axes)
    if kept.count(None) > 1 or any(shape[a] is None for a in axes):
        # a graph tensor: squeezed in the run (where an unknown axis must be 1, as TF checks)
        node = symbolic_call(_squeeze_known, (input, tuple(axes)), {})
        if node is not NotImplemented:
            return node
    return reshape(input, _known(kept))


def _squeeze_known(input, axes):  # noqa: A002
    shape = tuple(input.shape)
    for a in axes:
        if shape[a] != 1:
            raise InvalidArgumentError(f"Can not squeeze dim[{a}], expected a "
                                       f"dimension of 1, got {shape[a]}")
    return reshape(input, tuple(s for i, s in enumerate(shape) if i not in axes))


def _check_concat(*values, axis):
    if not values:
        raise ValueError("concat: values must hold at least one tensor")
    first = values[0]
    require_same_dtype("concat", ("values[0]",) + tuple(f"values[{i}]" for i in
                                                        range(1, len(values))), *values)
    if first.ndim == 0:
        raise ValueError("concat: values must have rank >= 1, got a scalar")
    a = check_axis("concat", axis, first.ndim)
    for i, v in enumerate(values[1:], 1):
        if v.ndim != first.ndim or any(
                s != t for j, (s, t) in enumerate(zip(v.shape, first.shape)) if j != a):
            raise ValueError(f"concat: values[{i}] must match values[0] {list(first.shape)} "
                             f"except on axis {axis}, got {list(v.shape)}")


def _concat_forward(k, xp, *values, axis):
    a = axis % values[0].ndim
    return xp.concatenate(values, axis=a), (a, [v.shape[a] for v in values])


def _split_along(xp, g, axis, sizes):
    bounds = np.cumsum(sizes)[:-1].tolist()
    return xp.split(g, bounds, axis=axis)


def _concat_backward(k, xp, res, g, *, axis):
    a, sizes = res
    return tuple(_split_along(xp, g, a, sizes))


_CONCAT = register("concat", args=("values...",), check=_check_concat, forward=_concat_forward,
                   backward=_concat_backward, twice_differentiable=True)


@shape_args("axis")
def concat(values, axis, name=None):
    """The tensors of ``values`` joined along ``axis``; all other sizes must match."""
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"concat: values must be a list of tensors, got {type(values).__name__}")
    return _CONCAT(*values, axis=_scalar_int(axis))


def stack(values, axis=0, name=None):
    """The tensors of ``values`` (all one shape) stacked along a new axis ``axis``."""
    if not isinstance(values, (list, tuple)) or not values:
        raise ValueError("stack: values must be a non-empty list of tensors")
    shapes = [tuple(getattr(v, "shape", np.shape(v))) for v in values]
    for i, s in enumerate(shapes[1:], 1):
        if s != shapes[0]:
            raise ValueError(f"stack: values[{i}] must have the shape of values[0] "
                             f"{list(shapes[0])}, got {list(s)}")
    ndim = len(shapes[0])
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"stack: axis must be an int, got {axis!r}")
    if not -ndim - 1 <= axis <= ndim:
        raise ValueError(f"stack: axis must be in [{-ndim - 1}, {ndim}], got {axis}")
    try:
        return concat([expand_dims(v, axis) for v in values], axis=axis % (ndim + 1))
    except ResourceExhaustedError as e:  # name the op the user called
        raise ResourceExhaustedError("stack" + e.message.removeprefix("concat")) from e


def _check_split(x, *, sizes, axis):
    if x.ndim == 0:
        raise ValueError("split: value must have rank >= 1, got a scalar")
    a = check_axis("split", axis, x.ndim)
    if sum(sizes) != x.shape[a]:
        raise ValueError(f"split: num_or_size_splits must add up to the size of axis {axis} "
                         f"({x.shape[a]}), got {list(sizes)}")


def _split_forward(k, xp, x, *, sizes, axis):
    return list(_split_along(xp, x, axis, sizes)), ()


def _split_backward(k, xp, res, *gs, sizes, axis):
    return (xp.concatenate(gs, axis=axis),)


_SPLIT = register("split", args=("value",), check=_check_split, forward=_split_forward,
                  backward=_split_backward, twice_differentiable=True)


@shape_args("num_or_size_splits", "axis")
def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """A list of tensors: ``value`` cut along ``axis`` into ``num_or_size_splits`` equal parts
    (an int, which must divide the axis) or parts of the listed sizes (one may be -1)."""
    shape = tuple(getattr(value, "shape", np.shape(value)))
    if len(shape) == 0:
        raise ValueError("split: value must have rank >= 1, got a scalar")
    a = check_axis("split", axis, len(shape))
    n = shape[a]
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits,
                                                                             bool):
        parts = int(num_or_size_splits)
        if parts <= 0 or n % parts:
            raise InvalidArgumentError(f"split: num_or_size_splits must evenly divide axis "
                                       f"{axis} of size {n}, got {parts}")
        sizes = (n // parts,) * parts
    else:
        sizes = list(_static_ints("split", "num_or_size_splits", num_or_size_splits))
        if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
            raise ValueError(f"split: num_or_size_splits may hold one -1 and no other negative, "
                             f"got {sizes}")
        if -1 in sizes:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
        sizes = tuple(sizes)
    return _SPLIT(value, sizes=sizes, axis=a)
