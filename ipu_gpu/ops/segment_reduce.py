"""``tf.math.unsorted_segment_max``, ``unsorted_segment_min`` and ``unsorted_segment_prod``:
``output[i]`` reduces the ``data[j...]`` with ``segment_ids[j...] == i``.

As TF: empty segments hold the reduction's identity (the dtype's lowest value for max, its
highest for min: ``-3.4028235e38``, not ``-inf``, for float32; 1 for prod); negative ids are
dropped; an id >= ``num_segments`` is TF's CPU ``InvalidArgumentError`` (on both devices
here: TF's GPU kernel drops it). Gradients are TF's: max/min split the cotangent equally
among the elements equal to their segment's result; prod's is the product of the segment's
other elements (0 where the segment holds more than one zero).

The rows are sorted by id (stably) and reduced by a log-depth segmented scan, the same
``xp`` code on both devices; the product's rounding order therefore differs from TF's
left-to-right loop (float results agree to rounding).
"""

from __future__ import annotations

import numpy as np

from ..core.registry import register
from ..errors import InvalidArgumentError
from ._util import require_int
from .math_extra import _SEGMENT_DTYPES, _segment_rows, _static_int

__all__ = ["unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod"]


def _identity(kind: str, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    if kind == "prod":
        return np.ones((), dtype)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return np.asarray(info.min if kind == "max" else info.max, dtype)


def _combine(xp, kind, a, b):
    if kind == "max":
        return xp.maximum(a, b)
    if kind == "min":
        return xp.minimum(a, b)
    return a * b


def _check(kind):
    op = f"unsorted_segment_{kind}"

    def check(data, ids, *, num_segments):
        if data.dtype not in _SEGMENT_DTYPES:
            raise TypeError(f"{op}: data must be float16, float32, float64, int32 or int64, "
                            f"got {data.dtype}")
        require_int(op, "segment_ids", ids)
        if tuple(data.shape[:ids.ndim]) != tuple(ids.shape):
            raise InvalidArgumentError(f"{op}: data.shape = {list(data.shape)} must start "
                                       f"with segment_ids.shape = {list(ids.shape)}")
    return check


def _reduce(xp, kind, rows, flat, num_segments):
    """[num_segments, width]: each segment's reduction of the rows with its id (ids < 0
    dropped; every id < num_segments)."""
    width = rows.shape[1]
    ident = xp.asarray(_identity(kind, rows.dtype))
    keep = flat >= 0
    order = xp.argsort(xp.where(keep, flat, num_segments), kind="stable")
    m = int(keep.sum())
    ids = flat[order][:m]
    acc = rows[order][:m]
    step = 1
    while step < m:  # Hillis-Steele scan within runs of equal ids
        same = (ids[step:] == ids[:-step])[:, None]
        tail = _combine(xp, kind, acc[step:], xp.where(same, acc[:-step], ident))
        acc = xp.concatenate([acc[:step], tail])
        step *= 2
    out = xp.empty((num_segments, width), rows.dtype)
    out[...] = ident
    if m:
        last = xp.concatenate([ids[1:] != ids[:-1], xp.ones(1, bool)])
        out[ids[last]] = acc[last]
    return out


def _forward(kind):
    op = f"unsorted_segment_{kind}"

    def forward(k, xp, data, ids, *, num_segments):
        n, width = _segment_rows(data.shape, ids.ndim)
        flat = ids.reshape(-1).astype(np.int64)
        bad = xp.flatnonzero(flat >= num_segments)
        if bad.size:
            i = int(bad[0])
            raise InvalidArgumentError(f"{op}: segment_ids[{i}] = {int(flat[i])} is out of "
                                       f"range [0, {num_segments})")
        rows = xp.ascontiguousarray(data).reshape(n, width)
        out = _reduce(xp, kind, rows, flat, num_segments)
        shape = (num_segments,) + tuple(data.shape[ids.ndim:])
        return out.reshape(shape), (rows, flat, out, data.shape)
    return forward


def _gather(xp, table, flat):
    """``table[flat]`` with zero rows for the dropped (negative) ids."""
    got = table[xp.maximum(flat, 0)]
    return xp.where((flat >= 0)[:, None], got, xp.zeros((), table.dtype))


def _min_max_backward(k, xp, res, g, *, num_segments):
    rows, flat, out, shape = res
    g = xp.ascontiguousarray(g).reshape(num_segments, -1)
    selected = (rows == _gather(xp, out, flat)) & (flat >= 0)[:, None]
    kept = xp.flatnonzero(flat >= 0)
    count = _scatter_count(xp, selected[kept], flat[kept], num_segments, g.dtype)
    share = g / xp.maximum(count, xp.ones((), g.dtype))
    grad = xp.where(selected, _gather(xp, share, flat), xp.zeros((), g.dtype))
    return grad.reshape(shape), None


def _scatter_count(xp, selected, ids, num_segments, dtype):
    """How many rows of each segment are selected, per column."""
    order = xp.argsort(ids, kind="stable")
    ids, sel = ids[order], selected[order].astype(dtype)
    cum = xp.cumsum(sel, axis=0)
    out = xp.zeros((num_segments, selected.shape[1]), dtype)
    if ids.size:
        last = xp.concatenate([ids[1:] != ids[:-1], xp.ones(1, bool)])
        ends = cum[last]
        starts = xp.concatenate([xp.zeros((1, ends.shape[1]), dtype), ends[:-1]])
        out[ids[last]] = ends - starts
    return out


def _prod_backward(k, xp, res, g, *, num_segments):
    rows, flat, out, shape = res
    g = xp.ascontiguousarray(g).reshape(num_segments, -1)
    zero = rows == 0
    kept = xp.flatnonzero(flat >= 0)
    zeros = _scatter_count(xp, zero[kept], flat[kept], num_segments, g.dtype)
    g = xp.where(zeros > 1, xp.zeros((), g.dtype), g)
    nonzero_rows = xp.where(zero, xp.ones((), rows.dtype), rows)
    nonzero_prod = _reduce(xp, "prod", nonzero_rows, flat, num_segments)
    partial = xp.where(zero, _gather(xp, nonzero_prod, flat),
                       _gather(xp, out, flat) / nonzero_rows)
    return (_gather(xp, g, flat) * partial).reshape(shape), None


_OPS = {kind: register(f"unsorted_segment_{kind}", args=("data", "segment_ids"),
                       check=_check(kind), forward=_forward(kind),
                       backward=_prod_backward if kind == "prod" else _min_max_backward)
        for kind in ("max", "min", "prod")}


def _call(kind, data, segment_ids, num_segments):
    count = _static_int(f"unsorted_segment_{kind}", "num_segments", num_segments)
    if count < 0:
        raise InvalidArgumentError(f"unsorted_segment_{kind}: num_segments must not be "
                                   f"negative, got {count}")
    return _OPS[kind](data, segment_ids, num_segments=count)


def unsorted_segment_max(data, segment_ids, num_segments, name=None):
    """The maximum of each segment's ``data`` rows (``tf.math.unsorted_segment_max``); the
    dtype's lowest value for empty segments. Shape ``[num_segments] +
    data.shape[segment_ids.ndim:]``."""
    return _call("max", data, segment_ids, num_segments)


def unsorted_segment_min(data, segment_ids, num_segments, name=None):
    """The minimum of each segment's ``data`` rows (``tf.math.unsorted_segment_min``); the
    dtype's highest value for empty segments."""
    return _call("min", data, segment_ids, num_segments)


def unsorted_segment_prod(data, segment_ids, num_segments, name=None):
    """The product of each segment's ``data`` rows (``tf.math.unsorted_segment_prod``); 1
    for empty segments."""
    return _call("prod", data, segment_ids, num_segments)
