"""``tf.unique``: the distinct entries of a vector in order of first appearance, and where
each entry went. No gradient, as TF."""

from __future__ import annotations

import collections

import numpy as np

from ..core import dtypes
from ..core.registry import register
from ..errors import InvalidArgumentError
from ._util import shape_str

Unique = collections.namedtuple("Unique", ["y", "idx"])  # TF's result type

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


def _check(x, *, out_idx):
    if x.ndim != 1:
        raise InvalidArgumentError(f"unique: x must be a 1-D vector, got shape "
                                   f"{shape_str(x.shape)}")
    if x.dtype.kind not in "fiubO":  # O: tf.string
        raise TypeError(f"unique: x must be a numeric or bool tensor, got {x.dtype}")


def _forward(k, xp, x, *, out_idx):
    # the output's size depends on the data, so this runs on the host (numpy) for cupy too
    v = x if xp is np else x.get()
    _, first, inverse = np.unique(v, return_index=True, return_inverse=True, equal_nan=False)
    order = np.argsort(first, kind="stable")  # distinct values by first appearance
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    y, idx = v[first[order]], rank[inverse.reshape(-1)].astype(out_idx)
    return (y, idx) if xp is np else (xp.asarray(y), xp.asarray(idx)), None


_UNIQUE = register("unique", args=("x",), check=_check, forward=_forward)


def unique(x, out_idx=dtypes.int32, name=None):
    """``Unique(y, idx)``: ``y`` the distinct entries of the vector ``x`` in order of first
    appearance, ``idx`` (``out_idx``: int32 or int64) the position in ``y`` of each entry of
    ``x``, so ``x == gather(y, idx)``. Each NaN is distinct; -0.0 and 0.0 are one entry (the
    first seen). No gradient, as TF.

    Raises:
      InvalidArgumentError: x is not 1-D.
      TypeError: a non-numeric x, or out_idx not int32/int64.
    """
    itype = dtypes.as_dtype(out_idx, "unique: out_idx")
    if itype not in _INDEX_TYPES:
        raise TypeError(f"unique: out_idx must be int32 or int64, got {itype}")
    return Unique(*_UNIQUE(x, out_idx=itype))


__all__ = ["Unique", "unique"]
