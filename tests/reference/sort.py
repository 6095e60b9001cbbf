"""Sorting and n-d indexing in float64, by loops over the definitions: sort, argsort, top_k,
gather_nd, scatter_nd, tensor_scatter_nd_update, tensor_scatter_nd_add, boolean_mask."""

from __future__ import annotations

import math

import numpy as np


def _f(x):
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind == "f" else x


def _key(v):
    # NaN above everything; -0.0 equals 0.0, so they keep their order
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def _order(run, descending):
    """Stable: equal values keep their index order in both directions."""
    return sorted(range(len(run)), key=lambda i: _key(run[i].item()), reverse=descending)


def argsort(values, axis=-1, direction="ASCENDING", stable=False):
    x = _f(values)
    moved = np.moveaxis(x, axis, -1)
    out = np.zeros(moved.shape, np.int32)
    for pos in np.ndindex(moved.shape[:-1]):
        out[pos] = _order(moved[pos], direction == "DESCENDING")
    return np.moveaxis(out, -1, axis)


def sort(values, axis=-1, direction="ASCENDING"):
    x = _f(values)
    idx = argsort(x, axis, direction)
    return np.take_along_axis(x, idx.astype(np.int64), axis=axis)


def top_k(input, k=1, sorted=True, index_type=np.int32):  # noqa: A002
    x = _f(input)
    idx = argsort(x, -1, "DESCENDING")[..., :k]
    return np.take_along_axis(x, idx.astype(np.int64), axis=-1), idx.astype(index_type)


def _coords(indices):
    indices = np.asarray(indices)
    lead = indices.shape[:-1]
    return indices.reshape(int(np.prod(lead, dtype=np.int64)), indices.shape[-1]), lead


def _check(coord, shape):
    for c, d in zip(coord, shape):
        if not 0 <= c < d:
            raise ValueError(f"index {list(coord)} outside {list(shape)}")


def gather_nd(params, indices, batch_dims=0):
    params = _f(params)
    coords, lead = _coords(indices)
    depth = coords.shape[1]
    out = np.zeros((len(coords),) + params.shape[depth:], params.dtype)
    for i, c in enumerate(coords):
        _check(c, params.shape)
        out[i] = params[tuple(int(v) for v in c)]
    return out.reshape(tuple(lead) + params.shape[depth:])


def _scatter(target, indices, updates, combine):
    coords, lead = _coords(indices)
    depth = coords.shape[1]
    updates = _f(updates).reshape((len(coords),) + target.shape[depth:])
    for i, c in enumerate(coords):
        _check(c, target.shape)
        at = tuple(int(v) for v in c)
        target[at] = combine(target[at], updates[i])
    return target


def scatter_nd(indices, updates, shape):
    out = np.zeros(tuple(shape), _f(updates).dtype)
    return _scatter(out, indices, updates, lambda old, new: old + new)


def tensor_scatter_nd_update(tensor, indices, updates):
    # in index order: a repeated index keeps the last update
    return _scatter(_f(tensor).copy(), indices, updates, lambda old, new: new)


def tensor_scatter_nd_add(tensor, indices, updates):
    return _scatter(_f(tensor).copy(), indices, updates, lambda old, new: old + new)


def boolean_mask(tensor, mask, axis=None):
    x, mask = _f(tensor), np.asarray(mask)
    a = 0 if axis is None else axis
    lead = x.shape[:a]
    rest = x.shape[a + mask.ndim:]
    flat = x.reshape(lead + (mask.size,) + rest)
    picks = [i for i, m in enumerate(mask.reshape(-1)) if m]
    out = np.zeros(lead + (len(picks),) + rest, x.dtype)
    for j, i in enumerate(picks):
        out[(slice(None),) * a + (j,)] = flat[(slice(None),) * a + (i,)]
    return out
