"""Array ops (TF's array_ops) in plain numpy float64: every output element is read from an
explicit per-axis index list (``np.ix_``), built from the documented rule, not from the
slicing arithmetic the ops use."""

from __future__ import annotations

import numpy as np

_slice = slice  # the builtin, before this module's ``slice`` (TF's op) hides it


def _f(x):
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def _ints(v):
    return [int(i) for i in np.asarray(v).reshape(-1)]


def _gather(x, per_axis):
    """x[i0, i1, ...] for every combination of the per-axis index lists."""
    if x.ndim == 0:
        return x.copy()
    if any(len(ix) == 0 for ix in per_axis):
        return np.zeros(tuple(len(ix) for ix in per_axis), x.dtype)
    return x[np.ix_(*[np.asarray(ix, np.int64) for ix in per_axis])]


# ---- shape queries ----------------------------------------------------------------------------
def shape(input, out_type=None):  # noqa: A002 - TF's name
    return np.asarray(np.shape(input), np.int32 if out_type is None else out_type)


def size(input, out_type=None):  # noqa: A002 - TF's name
    return np.asarray(np.size(input), np.int32 if out_type is None else out_type)


def rank(input):  # noqa: A002 - TF's name
    return np.asarray(np.ndim(input), np.int32)


# ---- tile, pad, slice -------------------------------------------------------------------------
def tile(input, multiples):  # noqa: A002 - TF's name
    x = _f(input)
    return _gather(x, [[j % n for j in range(n * m)] for n, m in zip(x.shape, _ints(multiples))])


def _source(j, n, mode):
    """The input index that padded position j (relative to the first input element) copies,
    or None for a constant fill."""
    if 0 <= j < n:
        return j
    if mode == "CONSTANT":
        return None
    if mode == "REFLECT":  # mirror about the edge element, which is not repeated
        return -j if j < 0 else 2 * (n - 1) - j
    return -1 - j if j < 0 else 2 * n - 1 - j  # SYMMETRIC: the edge is repeated


def pad(tensor, paddings, mode="CONSTANT", constant_values=0):
    x = _f(tensor)
    mode = mode.upper()
    pads = np.asarray(paddings).reshape(-1, 2)
    sources = [[_source(j, n, mode) for j in range(-int(a), n + int(b))]
               for n, (a, b) in zip(x.shape, pads)]
    out = np.full(tuple(len(s) for s in sources), np.asarray(constant_values).astype(x.dtype))
    for pos in np.ndindex(out.shape):
        src = tuple(s[p] for s, p in zip(sources, pos))
        if None not in src:
            out[pos] = x[src]
    return out


def slice(input_, begin, size):  # noqa: A001 - TF's name
    x = _f(input_)
    per_axis = []
    for n, b, s in zip(x.shape, _ints(begin), _ints(size)):
        stop = n if s == -1 else b + s
        per_axis.append(list(range(b, stop)))
    return _gather(x, per_axis)


# ---- strided_slice ----------------------------------------------------------------------------
def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0):
    """TF's documented rules: entry i of the spec is an ellipsis (bit i of ellipsis_mask;
    without one, an ellipsis follows the last entry), else a new axis, else an index
    (shrink) or a range over the next input dimension. The ellipsis covers the dimensions the
    other index/range entries leave; a range clamps like a Python slice, a masked bound is
    left open."""
    x = _f(input_)
    begin, end = _ints(begin), _ints(end)
    strides = [1] * len(begin) if strides is None else _ints(strides)
    n = len(begin)
    kinds = []
    for i in range(n):
        if ellipsis_mask >> i & 1:
            kinds.append("...")
        elif new_axis_mask >> i & 1:
            kinds.append("new")
        elif shrink_axis_mask >> i & 1:
            kinds.append("index")
        else:
            kinds.append("range")
    if "..." not in kinds:
        kinds.append("...")
    at = kinds.index("...")
    real_before = sum(k in ("index", "range") for k in kinds[:at])
    real_after = sum(k in ("index", "range") for k in kinds[at + 1:])
    covered = max(0, x.ndim - real_before - real_after)

    per_axis, out_shape = [], []
    dim = 0
    for i, k in enumerate(kinds):
        if k == "...":
            for _ in range(covered):
                per_axis.append(list(range(x.shape[dim])))
                out_shape.append(x.shape[dim])
                dim += 1
        elif k == "new":
            out_shape.append(1)
        elif k == "index":
            j = begin[i] + x.shape[dim] if begin[i] < 0 else begin[i]
            per_axis.append([j])
            dim += 1
        else:
            s = strides[i]
            start = None if begin_mask >> i & 1 else begin[i]
            stop = None if end_mask >> i & 1 else end[i]
            ix = list(range(*_slice(start, stop, s).indices(x.shape[dim])))
            per_axis.append(ix)
            out_shape.append(len(ix))
            dim += 1
    return _gather(x, per_axis).reshape(out_shape)


# ---- unstack, broadcast_to, reverse, roll ---------------------------------------------------
def unstack(value, num=None, axis=0):
    x = _f(value)
    return [np.take(x, i, axis=axis) for i in range(x.shape[axis])]


def broadcast_to(input, shape):  # noqa: A002 - TF's name
    x = _f(input)
    shape = tuple(_ints(shape))
    lead = len(shape) - x.ndim
    per_axis = [[0 if d == 1 else j for j in range(t)]
                for d, t in zip(x.shape, shape[lead:])]
    return np.broadcast_to(_gather(x, per_axis), shape).copy()


def reverse(tensor, axis):
    x = _f(tensor)
    flip = {a % x.ndim for a in _ints(axis)} if x.ndim else set()
    return _gather(x, [list(range(n))[::-1] if d in flip else list(range(n))
                       for d, n in enumerate(x.shape)])


def roll(input, shift, axis):  # noqa: A002 - TF's name
    x = _f(input)
    total = [0] * x.ndim
    for s, a in zip(_ints(shift), _ints(axis)):
        total[a % x.ndim] += s
    return _gather(x, [[(j - t) % n for j in range(n)] if n else []
                       for n, t in zip(x.shape, total)])


# ---- eye, linspace, meshgrid -----------------------------------------------------------------
def eye(num_rows, num_columns=None, batch_shape=None, dtype=np.float32):
    cols = num_rows if num_columns is None else num_columns
    batch = tuple(_ints(batch_shape)) if batch_shape is not None else ()
    out = np.zeros(batch + (num_rows, cols), np.float64)
    for i in range(min(num_rows, cols)):
        out[..., i, i] = 1.0
    return out


def linspace(start, stop, num, axis=0):
    start, stop = np.broadcast_arrays(np.asarray(start, np.float64),
                                      np.asarray(stop, np.float64))
    num = int(np.asarray(num).reshape(-1)[0])
    values = [start + (stop - start) * (i / (num - 1)) if num > 1 else start
              for i in range(num)]
    if num > 1:
        values[-1] = stop
    out = np.stack(values) if values else np.zeros((0,) + start.shape)
    return np.moveaxis(out, 0, axis % (start.ndim + 1))


def meshgrid(*args, indexing="xy"):
    vectors = [_f(a).reshape(-1) for a in args]
    if not vectors:
        return []
    lengths = [len(v) for v in vectors]
    out_shape = list(lengths)
    if indexing == "xy" and len(vectors) > 1:
        out_shape[0], out_shape[1] = out_shape[1], out_shape[0]
    outs = []
    for k, v in enumerate(vectors):
        axis = k
        if indexing == "xy" and len(vectors) > 1 and k < 2:
            axis = 1 - k
        out = np.empty(out_shape, v.dtype)
        for pos in np.ndindex(*out_shape):
            out[pos] = v[pos[axis]]
        outs.append(out)
    return outs
