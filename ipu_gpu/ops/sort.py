"""Sorting and n-d indexing: ``sort``, ``argsort``, ``math.top_k``, ``gather_nd``,
``scatter_nd``, ``tensor_scatter_nd_update``, ``tensor_scatter_nd_add``, ``boolean_mask``.

Sorting is stable in both directions, as TF's (its sort and argsort are top_k, which puts the
lower index first among equal values). Values of up to 32 bits become unique 64-bit keys
(order-preserving value bits above the index), sorted with xp.sort, and ``top_k`` partitions
them first (O(n) for a small k); 64-bit values take a stable argsort (descending: of the
reversed axis, reversed). NaN sorts above +inf (TF's CPU kernel leaves it wherever its
comparisons happen to put it).

The n-d ops view the first K axes of the indexed tensor as rows (K = ``indices.shape[-1]``)
and go through the indexing kernels with row numbers, so out-of-range coordinates follow TF's
two kernels: InvalidArgumentError on the CPU, zeros (gathers) or nothing (scatters) on the GPU,
without a device sync. Scatter-adds are deterministic; ``tensor_scatter_nd_update`` keeps the
last update of a repeated index, as TF's CPU kernel.
"""

from __future__ import annotations

import collections
import math

import numpy as np

from ..core import backend, dtypes
from ..core.convert import to_array
from ..core.registry import register
from ..errors import InvalidArgumentError
from ._util import check_axis, require_int, require_numeric, require_same_dtype

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def _static_int(op: str, arg: str, value) -> int:
    """An int static argument given as a Python/numpy int or a 0-d integer Tensor."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()  # syncs device
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}: {arg} must be an int, got {value!r}")
    return int(value)


# ---- sort, argsort, top_k -------------------------------------------------------------------
_SIGN32 = np.uint32(0x80000000)


def _keys32(xp, x):
    """uint32 keys in the order of ``x`` (at most 32 bits: floats with -0.0 equal to 0.0 and
    NaN above +inf), or None for 64-bit dtypes."""
    if x.dtype.itemsize > 4:
        return None
    if x.dtype.kind == "f":
        f = x.astype(np.float32) + np.float32(0)  # exact; -0.0 + 0.0 is +0.0
        bits = f.view(np.uint32)
        # IEEE order as unsigned order: negative numbers reversed, positive above them
        keys = xp.where(bits >= _SIGN32, ~bits, bits | _SIGN32)
        return xp.where(xp.isnan(f), np.uint32(0xFFFFFFFF), keys)
    if x.dtype.kind == "i":
        return x.astype(np.int32).view(np.uint32) ^ _SIGN32
    return x.astype(np.uint32)


def _order(xp, x, axis, descending, k=None):
    """Indices that sort ``x`` along ``axis`` stably (equal values keep their index order), or
    the first ``k`` of them along the last axis. Values of at most 32 bits sort as unique
    64-bit keys (value bits, then the index), so the first k come from a partition."""
    keys = _keys32(xp, x) if x.shape[axis] < 2 ** 32 else None
    if keys is None:
        if not descending:
            order = xp.argsort(x, axis=axis, kind="stable")
        else:
            flipped = xp.argsort(xp.flip(x, axis), axis=axis, kind="stable")
            order = (x.shape[axis] - 1) - xp.flip(flipped, axis)
        return order if k is None else order[..., :k]
    if descending:
        keys = ~keys
    keys = xp.moveaxis(keys, axis, -1)
    n = keys.shape[-1]
    packed = (keys.astype(np.uint64) << np.uint64(32)) | xp.arange(n, dtype=np.uint64)
    if k is not None and 0 < k < n:
        packed = xp.partition(packed, k - 1, axis=-1)[..., :k]
    elif k is not None:
        packed = packed[..., :k]
    order = (xp.sort(packed, axis=-1) & np.uint64(0xFFFFFFFF)).astype(np.int64)
    return xp.moveaxis(order, -1, axis)


def _check_sort(name):
    def check(x, *, axis, descending):
        require_numeric(name, "values", x)
        if x.ndim == 0:
            raise InvalidArgumentError(f"{name}: values must have rank >= 1, got a scalar")
        check_axis(name, axis, x.ndim)
    return check


def _sort_forward(k, xp, x, *, axis, descending):
    idx = _order(xp, x, axis, descending)
    return xp.take_along_axis(x, idx, axis=axis), (idx,)


def _sort_backward(k, xp, res, g, *, axis, descending):
    (idx,) = res
    # the cotangent goes back where each value came from: the inverse permutation
    return (xp.take_along_axis(g, xp.argsort(idx, axis=axis), axis=axis),)


def _argsort_forward(k, xp, x, *, axis, descending):
    return _order(xp, x, axis, descending).astype(np.int32), None


_SORT = register("sort", args=("values",), check=_check_sort("sort"), forward=_sort_forward,
                 backward=_sort_backward)
_ARGSORT = register("argsort", args=("values",), check=_check_sort("argsort"),
                    forward=_argsort_forward)


def _direction(op, direction) -> bool:
    if direction not in _DIRECTIONS:
        raise ValueError(f"{op}: direction must be one of ASCENDING, DESCENDING, got "
                         f"{direction!r}")
    return direction == "DESCENDING"


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` (default the last), stably; NaN sorts above +inf.
    The gradient goes back to each value's original position.

    Raises:
      ValueError: an unknown ``direction``; InvalidArgumentError (a ValueError) for a
        scalar or an axis out of range.
      TypeError: a non-numeric tensor or a non-int axis."""
    return _SORT(values, axis=_static_int("sort", "axis", axis),
                 descending=_direction("sort", direction))


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort ``values`` along ``axis``. Always stable (equal values keep
    their order, in both directions), as TF's argsort is whatever ``stable`` says."""
    return _ARGSORT(values, axis=_static_int("argsort", "axis", axis),
                    descending=_direction("argsort", direction))


_INDEX_TYPES = (dtypes.int16, dtypes.int32, dtypes.int64)


def _check_top_k(x, *, k, index_type):
    require_numeric("top_k", "input", x)
    if x.ndim == 0:
        raise InvalidArgumentError("top_k: input must have rank >= 1, got shape []")
    if k > x.shape[-1]:
        raise InvalidArgumentError(f"top_k: input must have at least k columns. Had "
                                   f"{x.shape[-1]}, needed {k}")


def _top_k_forward(k_, xp, x, *, k, index_type):
    idx = _order(xp, x, x.ndim - 1, True, k)
    return (xp.take_along_axis(x, idx, axis=-1), idx.astype(index_type)), (idx, x.shape)


def _top_k_backward(k_, xp, res, g_values, g_indices, *, k, index_type):
    idx, shape = res
    n = shape[-1]
    rows = math.prod(shape[:-1])
    # each row's k positions are distinct, so one assignment per position
    flat = (idx.reshape(rows, k) + xp.arange(rows).reshape(rows, 1) * n).reshape(-1)
    grad = xp.zeros(rows * n, g_values.dtype)
    grad[flat] = g_values.reshape(-1)
    return (grad.reshape(shape),)


_TOP_K = register("top_k", args=("input",), check=_check_top_k, forward=_top_k_forward,
                  backward=_top_k_backward)

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])  # TF's result type


def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002
    """The ``k`` largest entries of the last axis and their indices (``tf.math.top_k``).

    Equal values come lower index first, as TF's; NaN counts as larger than +inf. The values
    are always returned sorted (TF leaves the order unspecified for ``sorted=False``). The
    gradient goes to the selected positions.

    Returns:
      ``TopKV2(values, indices)`` (a named tuple, as TF's): values of input's dtype and
      indices of ``index_type`` (int16, int32 or int64), both of shape
      ``input.shape[:-1] + [k]``.

    Raises:
      InvalidArgumentError: a scalar input, ``k`` < 0, or fewer than ``k`` entries.
      TypeError: a non-numeric input, a non-int ``k``, or another ``index_type``."""
    count = _static_int("top_k", "k", k)
    if count < 0:
        raise InvalidArgumentError(f"top_k: k must be >= 0, got {count}")
    itype = dtypes.as_dtype(index_type, "top_k: index_type")
    if itype not in _INDEX_TYPES:
        raise TypeError(f"top_k: index_type must be int16, int32 or int64, got {itype}")
    return TopKV2(*_TOP_K(input, k=count, index_type=itype))


# ---- n-d indexing: rows of the first K axes ----------------------------------------------------
def _check_indices(op, indices, rank, target):
    require_int(op, "indices", indices)
    if indices.ndim == 0:
        raise InvalidArgumentError(f"{op}: indices must have rank >= 1, got a scalar")
    if indices.shape[-1] > rank:
        raise InvalidArgumentError(f"{op}: indices.shape[-1] must be <= the rank of {target} "
                                   f"({rank}), got {indices.shape[-1]}")


def _rows(xp, indices, shape):
    """(row number of each index in [prod(shape[:K]), prod(shape[K:])] rows, -1 where it is out
    of range; the number of rows; the row width)."""
    depth = indices.shape[-1]
    dims = tuple(shape[:depth])
    idx = indices.reshape(math.prod(indices.shape[:-1]), depth).astype(np.int64)
    strides = [math.prod(dims[i + 1:]) for i in range(depth)]
    inside = xp.all((idx >= 0) & (idx < xp.asarray(np.asarray(dims, np.int64))), axis=1)
    row = xp.sum(idx * xp.asarray(np.asarray(strides, np.int64)), axis=1)
    return xp.where(inside, row, -1), math.prod(dims), math.prod(shape[depth:])


def _out_of_range(xp, op, indices, row, shape, what):
    """TF's InvalidArgumentError naming the first index outside ``shape``."""
    i = int(xp.flatnonzero(row < 0)[0])  # syncs device (an error path)
    coords = [int(c) for c in indices.reshape(row.shape[0], indices.shape[-1])[i].tolist()]
    return InvalidArgumentError(f"{op}: indices[{i}] = {coords} does not index into {what} "
                                f"{list(shape)}")


def _gather_rows(k, xp, op, src, row, indices, shape, what):
    """src[row] (zero rows for -1 on the GPU); the CPU kernel raises for them."""
    out = xp.empty((row.shape[0], src.shape[1]), src.dtype)
    try:
        k.gather_rows(src, row, out)
    except ValueError:
        raise _out_of_range(xp, op, indices, row, shape, what) from None
    return out


def _addable(a):
    """``a``, with int64 seen as uint64: the same bits add the same way modulo 2**64, and the
    GPU kernel's atomics take uint64 but not int64."""
    return a.view(np.uint64) if a.dtype == np.int64 else a


def _scatter_rows(k, xp, op, updates, row, out, indices, shape, what):
    """out[row] += updates (rows -1 dropped on the GPU); the CPU kernel raises for them."""
    try:
        k.scatter_add_rows(_addable(xp.ascontiguousarray(updates)), row, _addable(out))
    except ValueError:
        raise _out_of_range(xp, op, indices, row, shape, what) from None
    return out


def _check_gather_nd(params, indices):
    if params.ndim == 0:
        raise InvalidArgumentError("gather_nd: params must have rank >= 1, got a scalar")
    _check_indices("gather_nd", indices, params.ndim, "params")


def _gather_nd_forward(k, xp, params, indices):
    row, n_rows, width = _rows(xp, indices, params.shape)
    src = xp.ascontiguousarray(params).reshape(n_rows, width)
    out = _gather_rows(k, xp, "gather_nd", src, row, indices, params.shape, "param shape")
    depth = indices.shape[-1]
    out = out.reshape(tuple(indices.shape[:-1]) + tuple(params.shape[depth:]))
    return out, (row, params.shape, n_rows, width)


def _gather_nd_backward(k, xp, res, g):
    row, shape, n_rows, width = res
    out = xp.zeros((n_rows, width), g.dtype)
    k.scatter_add_rows(xp.ascontiguousarray(g).reshape(row.shape[0], width), row, out)
    return out.reshape(shape), None


_GATHER_ND = register("gather_nd", args=("params", "indices"), check=_check_gather_nd,
                      forward=_gather_nd_forward, backward=_gather_nd_backward,
                      family="indexing")


def gather_nd(params, indices, batch_dims=0, name=None):
    """Slices of ``params`` at n-d coordinates (``tf.gather_nd``): with K =
    ``indices.shape[-1]``, the output is ``indices.shape[:-1] + params.shape[K:]`` and
    ``output[i...] = params[indices[i...]]``. Coordinates outside ``params`` raise
    InvalidArgumentError on the CPU and give zeros on the GPU (TF's two kernels). The gradient
    scatter-adds (repeated coordinates accumulate). Only ``batch_dims=0`` is supported."""
    if batch_dims != 0:
        raise ValueError(f"gather_nd: batch_dims must be 0 (the only value ipu_gpu supports), "
                         f"got {batch_dims}")
    return _GATHER_ND(params, indices)


# ---- scatter_nd, tensor_scatter_nd_update, tensor_scatter_nd_add ------------------------------
_SCATTER_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def _check_updates(op, indices, updates, shape, target):
    """TF's shape rule: updates.shape == indices.shape[:-1] + shape[K:]; no indices into an
    empty tensor."""
    _check_indices(op, indices, len(shape), target)
    want = tuple(indices.shape[:-1]) + tuple(shape[indices.shape[-1]:])
    if tuple(updates.shape) != want:
        raise InvalidArgumentError(f"{op}: updates must have shape {list(want)} "
                                   f"(indices.shape[:-1] + {target}.shape[K:]), got "
                                   f"{list(updates.shape)}")
    if math.prod(shape) == 0 and math.prod(indices.shape[:-1]) > 0:
        raise InvalidArgumentError(f"{op}: indices and updates must be empty for an empty "
                                   f"{target} of shape {list(shape)}")


def _check_scatter_nd(indices, updates, *, shape):
    if updates.dtype not in _SCATTER_DTYPES:
        raise TypeError(f"scatter_nd: updates must be float16, float32, float64, int32 or "
                        f"int64, got {updates.dtype}")
    _check_updates("scatter_nd", indices, updates, shape, "shape")


def _scatter_nd_forward(k, xp, indices, updates, *, shape):
    row, n_rows, width = _rows(xp, indices, shape)
    out = xp.zeros((n_rows, width), updates.dtype)
    _scatter_rows(k, xp, "scatter_nd", updates.reshape(row.shape[0], width), row, out, indices,
                  shape, "shape")
    return out.reshape(shape), (row, n_rows, width, updates.shape)


def _updates_grad(k, xp, g, res):
    """The gradient of scattered updates: the cotangent rows they went to (zeros where they
    were dropped on the GPU)."""
    row, n_rows, width, updates_shape = res
    out = xp.empty((row.shape[0], width), g.dtype)
    k.gather_rows(xp.ascontiguousarray(g).reshape(n_rows, width), row, out)
    return out.reshape(updates_shape)


def _scatter_nd_backward(k, xp, res, g, *, shape):
    return None, _updates_grad(k, xp, g, res)


_SCATTER_ND = register("scatter_nd", args=("indices", "updates"), check=_check_scatter_nd,
                       forward=_scatter_nd_forward, backward=_scatter_nd_backward,
                       family="indexing")


def _shape_arg(op, shape) -> tuple:
    if hasattr(shape, "numpy") and not isinstance(shape, np.ndarray):
        shape = shape.numpy()  # syncs device
    if isinstance(shape, np.ndarray):
        shape = shape.tolist()
    items = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    for d in items:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{op}: shape must be a list of ints, got {shape!r}")
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f"{op}: shape must be a list of ints, got {shape!r}")
    if any(d < 0 for d in items):
        raise InvalidArgumentError(f"{op}: shape must not have negative dimensions, got "
                                   f"{items}")
    return tuple(int(d) for d in items)


def scatter_nd(indices, updates, shape, name=None):
    """A tensor of ``shape``, zero but for ``updates`` added at the n-d ``indices``
    (``tf.scatter_nd``): with K = ``indices.shape[-1]``, ``updates`` has shape
    ``indices.shape[:-1] + shape[K:]`` and repeated indices accumulate (deterministically,
    in index order). Indices outside ``shape`` raise InvalidArgumentError on the CPU and are
    dropped on the GPU (TF's two kernels). The gradient of ``updates`` gathers the cotangent.
    ``updates`` is float16/32/64 or int32/64 (TF's bool scatter is not supported)."""
    return _SCATTER_ND(indices, updates, shape=_shape_arg("scatter_nd", shape))


_TIU = ("tensor", "indices", "updates")


def _check_tensor_scatter(op, kinds, what):
    def check(tensor, indices, updates):
        require_same_dtype(op, ("tensor", "updates"), tensor, updates)
        if tensor.dtype not in kinds:
            raise TypeError(f"{op}: tensor must be {what}, got {tensor.dtype}")
        if tensor.ndim == 0:
            raise InvalidArgumentError(f"{op}: tensor must have rank >= 1, got a scalar")
        _check_updates(op, indices, updates, tensor.shape, "tensor")
    return check


def _update_forward(k, xp, tensor, indices, updates):
    row, n_rows, width = _rows(xp, indices, tensor.shape)
    # the kernels' range rule, on zero-width rows: raises on the CPU, passes on the GPU
    _gather_rows(k, xp, "tensor_scatter_nd_update", xp.empty((n_rows, 0), tensor.dtype), row,
                 indices, tensor.shape, "shape")
    out = xp.array(tensor, copy=True).reshape(n_rows, width)
    n = row.shape[0]
    if n:
        # the last update of a repeated index wins, as TF's CPU kernel: keep the last
        # occurrence of each row (first occurrence in the reversed list)
        _, first = xp.unique(row[::-1], return_index=True)
        last = (n - 1) - first
        last = last[row[last] >= 0]
        out[row[last]] = updates.reshape(n, width)[last]
    return out.reshape(tensor.shape), (row, n_rows, width, updates.shape)


def _update_backward(k, xp, res, g):
    row, n_rows, width, _ = res
    g_tensor = xp.array(g, copy=True).reshape(n_rows, width)
    g_tensor[row[row >= 0]] = 0  # overwritten entries get nothing
    return g_tensor.reshape(g.shape), None, _updates_grad(k, xp, g, res)


def _add_forward(k, xp, tensor, indices, updates):
    row, n_rows, width = _rows(xp, indices, tensor.shape)
    delta = xp.zeros((n_rows, width), tensor.dtype)
    _scatter_rows(k, xp, "tensor_scatter_nd_add", updates.reshape(row.shape[0], width), row,
                  delta, indices, tensor.shape, "shape")
    return tensor + delta.reshape(tensor.shape), (row, n_rows, width, updates.shape)


def _add_backward(k, xp, res, g):
    return g, None, _updates_grad(k, xp, g, res)


_ANY_DTYPES = tuple(np.dtype(d) for d in ("float16", "float32", "float64", "int8", "int16",
                                          "int32", "int64", "uint8", "bool"))
_TENSOR_SCATTER_UPDATE = register(
    "tensor_scatter_nd_update", args=_TIU,
    check=_check_tensor_scatter("tensor_scatter_nd_update", _ANY_DTYPES,
                                "a numeric or bool tensor"),
    forward=_update_forward, backward=_update_backward, family="indexing")
_TENSOR_SCATTER_ADD = register(
    "tensor_scatter_nd_add", args=_TIU,
    check=_check_tensor_scatter("tensor_scatter_nd_add", _SCATTER_DTYPES,
                                "float16, float32, float64, int32 or int64"),
    forward=_add_forward, backward=_add_backward, family="indexing")


def _like(value, other, arg, op):
    """A Python ``value`` converted to the dtype and device of ``other``, as TF converts the
    operands that share one dtype attribute."""
    if hasattr(value, "dtype") or not hasattr(other, "dtype"):
        return value
    src = getattr(other, "_value", other)
    return to_array(value, src.dtype, arg=arg, op=op, xp=backend.xp_of(src))


def tensor_scatter_nd_update(tensor, indices, updates, name=None):
    """A copy of ``tensor`` with the slices at the n-d ``indices`` replaced by ``updates``
    (``tf.tensor_scatter_nd_update``; shapes as ``scatter_nd`` with ``tensor.shape``). A
    repeated index keeps its last update, as TF's CPU kernel. Indices outside ``tensor``
    raise InvalidArgumentError on the CPU and are dropped on the GPU. Gradients: the
    cotangent for ``tensor`` except where it was overwritten, the cotangent gathered at the
    indices for ``updates`` (also for repeated indices' earlier updates, as TF's)."""
    updates = _like(updates, tensor, "updates", "tensor_scatter_nd_update")
    return _TENSOR_SCATTER_UPDATE(tensor, indices, updates)


def tensor_scatter_nd_add(tensor, indices, updates, name=None):
    """``tensor`` plus ``updates`` added at the n-d ``indices``
    (``tf.tensor_scatter_nd_add``); repeated indices accumulate (deterministically). Range
    rule as ``scatter_nd``; float16/32/64 and int32/64."""
    updates = _like(updates, tensor, "updates", "tensor_scatter_nd_add")
    return _TENSOR_SCATTER_ADD(tensor, indices, updates)


# ---- boolean_mask --------------------------------------------------------------------------------
def _check_boolean_mask(tensor, mask, *, axis):
    if mask.dtype.kind not in "biuf":
        raise TypeError(f"boolean_mask: mask must be a bool tensor, got {mask.dtype}")
    if mask.ndim == 0:
        raise ValueError("boolean_mask: mask cannot be scalar")
    if not 0 <= axis <= tensor.ndim - mask.ndim:
        raise ValueError(f"boolean_mask: axis must be in [0, {tensor.ndim - mask.ndim}] for a "
                         f"rank-{mask.ndim} mask of a rank-{tensor.ndim} tensor, got {axis}")
    if tuple(mask.shape) != tuple(tensor.shape[axis:axis + mask.ndim]):
        raise ValueError(f"boolean_mask: mask must have shape "
                         f"{list(tensor.shape[axis:axis + mask.ndim])} (tensor.shape[axis:axis "
                         f"+ mask.ndim]), got {list(mask.shape)}")


def _boolean_mask_forward(k, xp, tensor, mask, *, axis):
    # the output size depends on the mask: this syncs the device
    picks = xp.flatnonzero(mask.reshape(-1))
    flat_shape = (tuple(tensor.shape[:axis]) + (math.prod(mask.shape),)
                  + tuple(tensor.shape[axis + mask.ndim:]))
    out = xp.take(tensor.reshape(flat_shape), picks, axis=axis)
    return out, (picks, flat_shape, tensor.shape)


def _boolean_mask_backward(k, xp, res, g, *, axis):
    picks, flat_shape, shape = res
    grad = xp.zeros(flat_shape, g.dtype)
    grad[(slice(None),) * axis + (picks,)] = g  # picks are distinct
    return grad.reshape(shape), None


_BOOLEAN_MASK = register("boolean_mask", args=("tensor", "mask"), check=_check_boolean_mask,
                         forward=_boolean_mask_forward, backward=_boolean_mask_backward)


def boolean_mask(tensor, mask, axis=None, name=None):
    """The entries (or slices) of ``tensor`` where ``mask`` is True (``tf.boolean_mask``):
    ``mask`` covers ``tensor.shape[axis:axis + mask.ndim]`` (axis default 0), and those axes
    become one axis of the selected entries, in row-major order. A numeric mask selects its
    non-zero entries, as TF does. The gradient puts the cotangent back, zeros elsewhere.
    Reading the mask syncs the device (the output size depends on it).

    Raises:
      ValueError: a scalar mask, a mask shape that does not match, or ``axis`` outside
        [0, tensor.ndim - mask.ndim] (TF fails for negative axes too)."""
    return _BOOLEAN_MASK(tensor, mask, axis=0 if axis is None else _static_int(
        "boolean_mask", "axis", axis))
