"""Placing values in sorted sequences and fixed-width bins: ``tf.searchsorted`` and
``tf.histogram_fixed_width``. Neither has a gradient, as TF."""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.registry import register
from ..errors import InvalidArgumentError
from ._util import require_numeric, require_same_dtype, shape_str
from .math_extra import _static_int

_INDEX_TYPES = (dtypes.int32, dtypes.int64)


def _index_type(op, arg, value):
    t = dtypes.as_dtype(value, f"{op}: {arg}")
    if t not in _INDEX_TYPES:
        raise TypeError(f"{op}: {arg} must be int32 or int64, got {t}")
    return t


# ---- searchsorted -------------------------------------------------------------------------------
_SV = ("sorted_sequence", "values")


def _check_search(seq, values, *, side, out_type):
    require_numeric("searchsorted", "sorted_sequence", seq)
    require_same_dtype("searchsorted", _SV, seq, values)
    for name, a in zip(_SV, (seq, values)):
        if a.ndim < 1:
            raise InvalidArgumentError(f"searchsorted: {name} must have rank >= 1, got a "
                                       f"scalar")
    if seq.shape[:-1] != values.shape[:-1]:
        raise InvalidArgumentError(f"searchsorted: the leading dimensions of sorted_sequence "
                                   f"{shape_str(seq.shape)} and values "
                                   f"{shape_str(values.shape)} must match")


def _search_forward(k, xp, seq, values, *, side, out_type):
    n = seq.shape[-1]
    rows = int(np.prod(seq.shape[:-1], dtype=np.int64))
    s = seq.reshape(rows, n)
    v = values.reshape(rows, values.shape[-1])
    out = xp.empty(v.shape, out_type)
    for r in range(rows):  # one binary search per row (numpy's and cupy's searchsorted)
        out[r] = xp.searchsorted(s[r], v[r], side=side)
    if v.dtype.kind == "f":  # TF's lower/upper bound: no entry is below a NaN, none above it
        out = xp.where(xp.isnan(v), 0 if side == "left" else n, out).astype(out_type)
    return out.reshape(values.shape), None


_SEARCHSORTED = register("searchsorted", args=_SV, check=_check_search,
                         forward=_search_forward, scalars_follow=True)


def searchsorted(sorted_sequence, values, side="left", out_type=dtypes.int32, name=None):
    """For each of ``values`` (last axis), the index in ``sorted_sequence`` (last axis, sorted
    ascending; leading axes match ``values``') where it would go to keep the order: before
    equal entries for ``side="left"``, after them for ``"right"``. A NaN value goes first
    for "left" and last for "right", as TF's lower/upper bound.

    Raises:
      ValueError: ``side`` is neither "left" nor "right".
      InvalidArgumentError: a scalar argument, or leading dimensions that differ.
      TypeError: the two of different dtypes, or ``out_type`` not int32/int64.
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be either 'right' or 'left', got {side!r}")
    return _SEARCHSORTED(sorted_sequence, values, side=side,
                         out_type=_index_type("searchsorted", "out_type", out_type))


# ---- histogram_fixed_width ----------------------------------------------------------------------
_VR = ("values", "value_range")


_HISTOGRAM_DTYPES = (dtypes.float32, dtypes.float64, dtypes.int32, dtypes.int64)


def _check_histogram(values, value_range, *, nbins, dtype):
    if values.dtype not in _HISTOGRAM_DTYPES:  # TF's kernels: no float16
        raise TypeError(f"histogram_fixed_width: values must be float32, float64, int32 or "
                        f"int64, got {values.dtype}")
    require_same_dtype("histogram_fixed_width", _VR, values, value_range)
    if value_range.shape != (2,):
        raise ValueError(f"histogram_fixed_width: value_range must have shape [2], got "
                         f"{shape_str(value_range.shape)}")
    if nbins <= 0:
        raise InvalidArgumentError(f"histogram_fixed_width: nbins should be a positive "
                                   f"number, got {nbins}")


def _histogram_forward(k, xp, values, value_range, *, nbins, dtype):
    lo, hi = (v.item() for v in value_range)  # two numbers (syncs the device)
    if not lo < hi:
        raise InvalidArgumentError(f"histogram_fixed_width: value_range should satisfy "
                                   f"value_range[0] < value_range[1], got [{lo}, {hi}]")
    if values.dtype.kind == "f" and bool(xp.isnan(values).any()):  # syncs the device
        raise InvalidArgumentError("histogram_fixed_width: values must not contain NaN")
    # TF's kernel: (max(x, lo) - lo) in the values' dtype, then in float64 over the step
    # (hi - lo) / nbins, capped at nbins - 1 and truncated
    low = value_range[0]
    shifted = (xp.maximum(values.reshape(-1), low) - low).astype(np.float64)
    step = float(hi - lo) / nbins
    index = xp.minimum(shifted / step, nbins - 1).astype(np.int64)
    return xp.bincount(index, minlength=nbins).astype(dtype), None


_HISTOGRAM = register("histogram_fixed_width", args=_VR, check=_check_histogram,
                      forward=_histogram_forward, scalars_follow=True)


def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32, name=None):
    """Counts of ``values`` (any shape) in ``nbins`` equal bins over ``value_range`` =
    ``[lo, hi]`` (the values' dtype): values below ``lo`` count in the first bin, values at
    or above ``hi`` in the last. ``dtype`` (int32 or int64) is the counts'.

    Raises:
      InvalidArgumentError: ``nbins`` not positive, ``lo >= hi``, or a NaN value.
      ValueError: ``value_range`` not of shape [2].
    """
    return _HISTOGRAM(values, value_range,
                      nbins=_static_int("histogram_fixed_width", "nbins", nbins),
                      dtype=_index_type("histogram_fixed_width", "dtype", dtype))


__all__ = ["histogram_fixed_width", "searchsorted"]
