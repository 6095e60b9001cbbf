"""Indexing ops: gather, Tensor.__getitem__, one_hot, where."""

from __future__ import annotations

import numpy as np

from ._shape_args import shape_args
from ..core import backend, dtypes
from ..core.convert import to_array
from ..core.indexed_slices import IndexedSlices, densify
from ..core.registry import register
from ..core.tensor import Tensor
from . import array
from ._util import broadcast_shape, check_axis, require_bool, require_int, require_same_dtype


# ---- gather --------------------------------------------------------------------------------
def _check_gather(params, indices, *, axis):
    require_int("gather", "indices", indices)
    if params.ndim == 0:
        raise ValueError("gather: params must have rank >= 1, got a scalar")
    check_axis("gather", axis, params.ndim)


def _gather_forward(k, xp, params, indices, *, axis):
    a = axis % params.ndim
    moved = xp.moveaxis(params, a, 0)
    width = int(np.prod(moved.shape[1:], dtype=np.int64))  # not -1: size 0 is ambiguous
    rows = xp.ascontiguousarray(moved).reshape(moved.shape[0], width)
    flat_ids = indices.reshape(-1)
    out = xp.empty((flat_ids.shape[0], rows.shape[1]), dtype=params.dtype)
    k.gather_rows(rows, flat_ids, out)
    out = out.reshape(tuple(indices.shape) + tuple(moved.shape[1:]))
    # the gathered axes go where `axis` was
    nb = indices.ndim
    order = list(range(nb, nb + a)) + list(range(nb)) + list(range(nb + a, out.ndim))
    return xp.transpose(out, order), (params.shape, params.dtype, indices, a)


def _gather_backward(k, xp, res, g, *, axis):
    shape, dtype, indices, a = res
    nb = indices.ndim
    n = int(np.prod(indices.shape, dtype=np.int64))
    flat_ids = xp.reshape(indices, (n,))
    if a == 0:  # rows: a sparse gradient, as TF's GatherV2 gradient
        return IndexedSlices(xp.reshape(g, (n,) + tuple(shape[1:])), flat_ids, shape), None
    order = list(range(a, a + nb)) + list(range(a)) + list(range(a + nb, g.ndim))
    moved_shape = (shape[a],) + tuple(shape[:a]) + tuple(shape[a + 1:])
    back = list(range(1, a + 1)) + [0] + list(range(a + 1, len(shape)))
    if isinstance(g, Tensor):  # under nested tapes: through ops, which they record
        rows = xp.reshape(xp.transpose(g, order), (n,) + moved_shape[1:])
        return xp.transpose(densify(IndexedSlices(rows, flat_ids, moved_shape)), back), None
    width = int(np.prod(moved_shape[1:], dtype=np.int64))  # not -1: size 0 is ambiguous
    g_rows = xp.ascontiguousarray(xp.transpose(g, order)).reshape(n, width)
    out = xp.zeros((shape[a], g_rows.shape[1]), dtype=dtype)
    k.scatter_add_rows(g_rows, flat_ids, out)
    return xp.transpose(out.reshape(moved_shape), back), None


_GATHER = register("gather", args=("params", "indices"), check=_check_gather,
                   forward=_gather_forward, backward=_gather_backward, family="indexing",
                   twice_differentiable=True)


@shape_args("axis", "batch_dims")
def gather(params, indices, validate_indices=None, axis=None, batch_dims=0, name=None):
    """Slices of ``params`` along ``axis`` (default 0) at ``indices``: the output shape is
    ``params.shape[:axis] + indices.shape + params.shape[axis+1:]``. Out-of-range indices
    raise ValueError on the CPU (as TF's CPU kernel) and give zeros on the GPU (as TF's GPU
    kernel). The gradient scatter-adds, so duplicate indices accumulate; with respect to
    ``params`` along axis 0 it is an ``IndexedSlices`` (the output gradient's rows at the
    flattened indices), as TF's. Only ``batch_dims=0`` is supported."""
    if batch_dims != 0:
        raise ValueError(f"gather: batch_dims must be 0 (the only value ipu_gpu supports), "
                         f"got {batch_dims}")
    return _GATHER(params, indices, axis=0 if axis is None else axis)


# ---- __getitem__ ---------------------------------------------------------------------------
def _normalize_key(key):
    """The index as a tuple of ints, slices, None, Ellipsis and integer/bool arrays."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for part in key:
        if isinstance(part, Tensor):
            part = part._value
        elif isinstance(part, list):
            part = np.asarray(part)
        if getattr(part, "ndim", None) == 0 and part.dtype.kind in "iu":
            part = int(part)  # a 0-d integer Tensor/array indexes like an int (syncs device)
        if isinstance(part, (bool, np.bool_)):
            raise TypeError("__getitem__: key must not be a bare bool")
        if hasattr(part, "dtype") and getattr(part, "ndim", 0) > 0:
            if part.dtype.kind not in "iub":
                raise TypeError(f"__getitem__: key arrays must be integer or bool, "
                                f"got {part.dtype}")
        elif not (part is None or part is Ellipsis or isinstance(part, (slice, int, np.integer))):
            raise TypeError(f"__getitem__: key must be ints, slices, None, Ellipsis or integer "
                            f"arrays, got {type(part).__name__}")
        out.append(part)
    return tuple(out)


def _check_getitem(x, *, key):
    if x.ndim == 0 and any(p is not None and p is not Ellipsis for p in key):
        raise ValueError("__getitem__: a scalar Tensor can only be indexed with None or ...")


def _getitem_forward(k, xp, x, *, key):
    try:
        y = x[key]
    except IndexError as e:
        raise ValueError(f"__getitem__: key out of range for shape {list(x.shape)}: {e}") from None
    if type(y) is bytes:  # one item of a tf.string tensor
        y = np.array(y, object)
    return y, (x.shape, x.dtype)


def _getitem_backward(k, xp, res, g, *, key):
    shape, dtype = res
    # Through the getitem_grad op, so that under nested tapes the scatter is recorded too.
    out = _GETITEM_GRAD(g, key=key, shape=shape)
    return (out if isinstance(g, Tensor) else out._value,)


_GETITEM = register("getitem", args=("tensor",), check=_check_getitem, forward=_getitem_forward,
                    backward=_getitem_backward, family="indexing", twice_differentiable=True)


def _check_getitem_grad(g, *, key, shape):
    pass  # built only by getitem's backward, from shapes getitem already checked


def _getitem_grad_forward(k, xp, g, *, key, shape):
    out = xp.zeros(shape, g.dtype)
    k.index_add(out, key, g)
    return out, ()


_GETITEM_GRAD = register(
    "getitem_grad", args=("grad",), check=_check_getitem_grad, forward=_getitem_grad_forward,
    backward=lambda k, xp, res, g2, *, key, shape: (g2[key],), family="indexing",
    twice_differentiable=True)


def getitem(tensor, key):
    """numpy-style indexing (ints, slices, None, ..., integer/bool arrays); out-of-range raises
    ValueError; the gradient accumulates over repeated indices. A graph scalar in ``key``
    (``x[:tf.shape(x)[1] - 1]``) makes it TF's strided slice of the run's value."""
    try:
        return _GETITEM(tensor, key=_normalize_key(key))
    except TypeError:  # a graph scalar in the key refuses conversion (nothing recorded yet)
        if not array.symbolic_key(key):
            raise
    return array.tensor_getitem(tensor, key)


# ---- one_hot -------------------------------------------------------------------------------
_ONE_HOT_ARGS = ("indices", "on_value", "off_value")


def _check_one_hot(indices, on, off, *, depth, axis):
    require_int("one_hot", "indices", indices)
    require_same_dtype("one_hot", _ONE_HOT_ARGS[1:], on, off)
    if on.ndim or off.ndim:
        raise ValueError("one_hot: on_value and off_value must be scalars")
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise ValueError(f"one_hot: depth must be a non-negative int, got {depth!r}")
    if not -1 <= axis <= indices.ndim:
        raise ValueError(f"one_hot: axis must be in [-1, {indices.ndim}], got {axis}")


def _one_hot_forward(k, xp, indices, on, off, *, depth, axis):
    hot = indices[..., None] == xp.arange(depth, dtype=indices.dtype)
    out = xp.where(hot, on, off)
    if axis != -1 and axis != indices.ndim:
        out = xp.moveaxis(out, -1, axis)
    return out, None


_ONE_HOT = register("one_hot", args=_ONE_HOT_ARGS, check=_check_one_hot,
                    forward=_one_hot_forward)


@shape_args("depth")
def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A ``depth``-long one-hot axis at ``axis`` (default last): ``on_value`` (default 1) where
    the index matches, ``off_value`` (default 0) elsewhere; indices outside [0, depth) give
    an all-off row, as TF. ``dtype`` defaults to on/off's dtype, else float32."""
    if dtype is not None:
        d = dtypes.as_dtype(dtype, "one_hot: dtype")
    elif on_value is not None and hasattr(on_value, "dtype"):
        d = on_value.dtype
    elif off_value is not None and hasattr(off_value, "dtype"):
        d = off_value.dtype
    else:
        d = dtypes.float32
    src = getattr(indices, "_value", indices)
    xp = backend.xp_of(src) if hasattr(src, "dtype") else backend.default_xp()
    on = on_value if hasattr(on_value, "dtype") else xp.asarray(
        np.asarray(1 if on_value is None else on_value, dtype=d))
    off = off_value if hasattr(off_value, "dtype") else xp.asarray(
        np.asarray(0 if off_value is None else off_value, dtype=d))
    for arg, v in (("on_value", on), ("off_value", off)):
        if v.dtype != d:
            raise TypeError(f"one_hot: {arg} must have dtype {d.name}, got {v.dtype.name}")
    return _ONE_HOT(indices, on, off, depth=depth, axis=-1 if axis is None else axis)


# ---- where ---------------------------------------------------------------------------------
_WHERE_ARGS = ("condition", "x", "y")


def _check_where(c, x, y):
    require_bool("where", "condition", c)
    require_same_dtype("where", _WHERE_ARGS[1:], x, y)
    s = broadcast_shape("where", ("x", "y"), x.shape, y.shape)
    broadcast_shape("where", ("x", "condition"), s, c.shape)


def _where_forward(k, xp, c, x, y):
    return xp.where(c, x, y), (c, x.shape, y.shape)


def _where_backward(k, xp, res, g):
    from ._util import unbroadcast

    c, xs, ys = res
    return None, unbroadcast(xp, xp.where(c, g, 0), xs), unbroadcast(xp, xp.where(c, 0, g), ys)


_WHERE = register("where", args=_WHERE_ARGS, check=_check_where, forward=_where_forward,
                  backward=_where_backward, twice_differentiable=True)


def _check_where_indices(c):
    require_bool("where", "condition", c)


_WHERE_INDICES = register("where_indices", args=("condition",), check=_check_where_indices,
                          forward=lambda k, xp, c: (xp.argwhere(c).astype(np.int64), None))


def where(condition, x=None, y=None, name=None):
    """With x and y: elements of ``x`` where ``condition`` is True, else of ``y`` (all three
    broadcast). With neither: the int64 [n, rank] coordinates of the True elements."""
    if x is None and y is None:
        return _WHERE_INDICES(condition)
    if x is None or y is None:
        raise ValueError("where: x and y must both be given or both be None")
    if hasattr(x, "dtype") != hasattr(y, "dtype"):
        # a Python x or y adopts the dtype (and device) of the other operand, as in TF
        other = x if hasattr(x, "dtype") else y
        xp = backend.xp_of(getattr(other, "_value", other))
        if other is x:
            y = to_array(y, x.dtype, arg="y", op="where", xp=xp)
        else:
            x = to_array(x, y.dtype, arg="x", op="where", xp=xp)
    return _WHERE(condition, x, y)
