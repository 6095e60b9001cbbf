"""Op-table rows for unique, searchsorted and histogram_fixed_width (issue 17; see
tests/opdb.py)."""

from __future__ import annotations

import numpy as np
from opdb import F32, F64, FLOATS, I32, I64, ErrorInput, OpInfo, Sample, make
from reference import bucketing as rbucketing

from ipu_gpu.errors import InvalidArgumentError
from ipu_gpu.ops import bucketing, unique

FLOATS_I32 = FLOATS + (I32,)


def _index(sample, dtype):
    return np.dtype(sample.kwargs.get("out_type", sample.kwargs.get("dtype", "int32")))


def unique_samples(rng, dtype):
    x = make(rng, (12,), dtype, -3, 3)
    x = np.round(x) if np.dtype(dtype).kind == "f" else x  # repeats
    yield Sample((x,), desc="repeats")
    yield Sample((np.zeros(0, dtype),), desc="empty")
    yield Sample((np.asarray([5], dtype),), desc="length 1")
    yield Sample((x,), {"out_idx": "int64"}, desc="int64 idx")


def unique_y(x, out_idx="int32"):
    return unique.unique(x, out_idx).y


def unique_idx(x, out_idx="int32"):
    return unique.unique(x, out_idx).idx


def _idx_dtype(sample, dtype):
    return np.dtype(sample.kwargs.get("out_idx", "int32"))


def unique_errors():
    yield ErrorInput((np.zeros((2, 2), F32),), {}, InvalidArgumentError,
                     r"^unique: x must be a 1-D vector")
    yield ErrorInput((np.zeros(2, F32),), {"out_idx": "float32"}, TypeError,
                     r"^unique: out_idx must be int32 or int64")


def search_samples(rng, dtype):
    seq = np.sort(make(rng, (2, 6), dtype, -3, 3), axis=-1)
    values = make(rng, (2, 5), dtype, -4, 4)
    values[0, :2] = seq[0, 1:3]  # ties
    for side in ("left", "right"):
        yield Sample((seq, values), {"side": side}, desc=side)
    yield Sample((seq[0], values[0]), {"side": "right", "out_type": "int64"}, desc="1-D")
    yield Sample((np.zeros((3, 0), dtype), make(rng, (3, 2), dtype)), desc="empty sequence")
    yield Sample((seq, np.zeros((2, 0), dtype)), desc="no values")


def search_errors():
    seq = np.zeros((2, 3), F32)
    yield ErrorInput((seq, np.zeros((2, 1), F32)), {"side": "mid"}, ValueError,
                     r"^searchsorted: side must be either 'right' or 'left'")
    yield ErrorInput((seq, np.zeros((3, 1), F32)), {}, InvalidArgumentError,
                     r"^searchsorted: the leading dimensions")
    yield ErrorInput((seq, np.zeros((2, 1), F64)), {}, TypeError,
                     r"^searchsorted: values must have the dtype of sorted_sequence")
    yield ErrorInput((np.zeros(3, F32), np.float32(1)), {}, InvalidArgumentError,
                     r"^searchsorted: values must have rank >= 1")


def histogram_samples(rng, dtype):
    lo, hi = (-2.0, 3.0)
    v = make(rng, (4, 5), dtype, -3, 4)
    rng_ = np.asarray([lo, hi], dtype)
    yield Sample((v, rng_), {"nbins": 7}, desc="7 bins, values outside")
    yield Sample((v, rng_), desc="100 bins")
    yield Sample((v, rng_), {"nbins": 1, "dtype": "int64"}, desc="1 bin, int64")
    yield Sample((np.zeros(0, dtype), rng_), {"nbins": 3}, desc="no values")


def histogram_errors():
    r = np.asarray([0.0, 1.0], F32)
    yield ErrorInput((np.zeros(3, F32), r), {"nbins": 0}, InvalidArgumentError,
                     r"^histogram_fixed_width: nbins should be a positive number")
    yield ErrorInput((np.zeros(3, F32), r[::-1].copy()), {}, InvalidArgumentError,
                     r"^histogram_fixed_width: value_range should satisfy")
    yield ErrorInput((np.zeros(3, F32), np.zeros(3, F32)), {}, ValueError,
                     r"^histogram_fixed_width: value_range must have shape \[2\]")
    yield ErrorInput((np.zeros(3, np.float16), r.astype(np.float16)), {}, TypeError,
                     r"^histogram_fixed_width: values must be float32, float64, int32 or int64")
    yield ErrorInput((np.zeros(3, F32), r), {"dtype": "float32"}, TypeError,
                     r"^histogram_fixed_width: dtype must be int32 or int64")


ROWS = [
    # two rows: the table checks one output dtype per row
    OpInfo("unique", unique_y, lambda x, out_idx="int32": rbucketing.unique(x, out_idx)[0],
           unique_samples, unique_errors, dtypes=(F32, F64, I32, I64)),
    OpInfo("unique.idx", unique_idx, lambda x, out_idx="int32": rbucketing.unique(x, out_idx)[1],
           unique_samples, unique_errors, dtypes=(F32, F64, I32, I64), out_dtype=_idx_dtype),
    OpInfo("searchsorted", bucketing.searchsorted, rbucketing.searchsorted, search_samples,
           search_errors, dtypes=FLOATS_I32, out_dtype=_index),
    OpInfo("histogram_fixed_width", bucketing.histogram_fixed_width,
           rbucketing.histogram_fixed_width, histogram_samples, histogram_errors,
           dtypes=(F32, F64, I32, I64), out_dtype=_index),
]
