"""Op-table rows for linalg.diag, diag_part, band_part and TF 1's tensor diag/diag_part
(issue 17; see tests/opdb.py)."""

from __future__ import annotations

import numpy as np
from opdb import F32, FLOATS, I32, ErrorInput, OpInfo, Sample, make
from reference import diag as rdiag

from ipu_gpu.errors import InvalidArgumentError
from ipu_gpu.ops import diag

FLOATS_I32 = FLOATS + (I32,)


def diag_samples(rng, dtype):
    yield Sample((make(rng, (3,), dtype),), desc="main")
    yield Sample((make(rng, (2, 4), dtype),), {"k": 1}, desc="batched, above")
    yield Sample((make(rng, (3,), dtype),), {"k": -2, "num_rows": 5}, desc="below, num_rows")
    yield Sample((make(rng, (3,), dtype),), {"k": 1, "num_cols": 4, "padding_value": 7},
                 desc="padding")
    yield Sample((make(rng, (1,), dtype),), desc="length 1")
    yield Sample((make(rng, (0,), dtype),), desc="empty")
    yield Sample((make(rng, (2, 3, 4), dtype),), {"k": (-1, 1)}, desc="band")
    yield Sample((make(rng, (2, 3), dtype),), {"k": (0, 1), "num_rows": 4, "align": "LEFT_RIGHT",
                                               "padding_value": 2}, desc="band, align, rows")


def diag_errors():
    yield ErrorInput((np.float32(1),), {}, ValueError, r"^diag: diagonal must be at least 1-D")
    yield ErrorInput((np.zeros(3, F32),), {"k": 1, "num_rows": 2, "num_cols": 2},
                     InvalidArgumentError, r"^diag: the number of rows is too small")
    yield ErrorInput((np.zeros(3, F32),), {"k": (0, 1)}, ValueError,
                     r"^diag: diagonal must be at least 2-D")
    yield ErrorInput((np.zeros((3, 3), F32),), {"k": (0, 1)}, InvalidArgumentError,
                     r"^diag: diagonal must have 2 rows")
    yield ErrorInput((np.zeros(3, F32),), {"align": "UP"}, ValueError, r"^diag: align must be")


def diag_part_samples(rng, dtype):
    yield Sample((make(rng, (3, 3), dtype),), desc="square")
    yield Sample((make(rng, (2, 3, 4), dtype),), {"k": 1}, desc="batched, above")
    yield Sample((make(rng, (3, 4), dtype),), {"k": -2}, desc="below")
    yield Sample((make(rng, (1, 1), dtype),), desc="1x1")
    yield Sample((make(rng, (0, 2, 2), dtype),), desc="empty batch")
    yield Sample((make(rng, (2, 3, 4), dtype),), {"k": (-1, 2), "padding_value": 5},
                 desc="band")
    yield Sample((make(rng, (4, 3), dtype),), {"k": (-2, 0), "align": "LEFT_RIGHT"},
                 desc="band, align")


def diag_part_errors():
    yield ErrorInput((np.zeros(3, F32),), {}, ValueError, r"^diag_part: input must be at least")
    yield ErrorInput((np.zeros((3, 4), F32),), {"k": 5}, InvalidArgumentError,
                     r"^diag_part: k is out of bound")
    yield ErrorInput((np.zeros((3, 4), F32),), {"k": (2, 1)}, InvalidArgumentError,
                     r"^diag_part: k\[0\] \(2\) must not be larger than k\[1\]")


def band_samples(rng, dtype):
    x = make(rng, (2, 3, 4), dtype)
    for lower, upper in ((-1, 0), (0, -1), (1, 1), (0, 0), (-1, -1), (3, 4)):
        yield Sample((x, lower, upper), desc=f"{lower},{upper}")
    yield Sample((make(rng, (0, 3), dtype), -1, 0), desc="empty")


def band_errors():
    yield ErrorInput((np.zeros(4, F32), 1, 0), {}, ValueError,
                     r"^band_part: input must be at least 2-D")
    yield ErrorInput((np.zeros((3, 4), F32), 5, 0), {}, InvalidArgumentError,
                     r"^band_part: num_lower must be negative or at most the number of rows")
    yield ErrorInput((np.zeros((3, 4), F32), 0, 5), {}, InvalidArgumentError,
                     r"^band_part: num_upper must be")
    yield ErrorInput((np.zeros((3, 4), F32), 0.5, 0), {}, TypeError,
                     r"^band_part: num_lower must be an int")


def tensor_diag_samples(rng, dtype):
    yield Sample((make(rng, (3,), dtype),), desc="vector")
    yield Sample((make(rng, (2, 3), dtype),), desc="matrix")
    yield Sample((make(rng, (1,), dtype),), desc="length 1")


def tensor_diag_errors():
    yield ErrorInput((np.float32(1),), {}, InvalidArgumentError,
                     r"^diag: diagonal must be at least rank 1")
    yield ErrorInput((np.asarray([True]),), {}, TypeError, r"^diag: diagonal must be a numeric")


def tensor_diag_part_samples(rng, dtype):
    yield Sample((make(rng, (3, 3), dtype),), desc="matrix")
    yield Sample((make(rng, (2, 3, 2, 3), dtype),), desc="rank 4")


def tensor_diag_part_errors():
    yield ErrorInput((np.zeros((2, 3), F32),), {}, InvalidArgumentError,
                     r"^diag_part: input must have shape D \+ D")


ROWS = [
    OpInfo("linalg.diag", diag.diag, rdiag.diag, diag_samples, diag_errors, dtypes=FLOATS_I32,
           diff_args=(0,)),
    OpInfo("linalg.diag_part", diag.diag_part, rdiag.diag_part, diag_part_samples,
           diag_part_errors, dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("band_part", diag.band_part, rdiag.band_part, band_samples, band_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("tensor_diag", diag.tensor_diag, rdiag.tensor_diag, tensor_diag_samples,
           tensor_diag_errors, dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("tensor_diag_part", diag.tensor_diag_part, rdiag.tensor_diag_part,
           tensor_diag_part_samples, tensor_diag_part_errors, dtypes=FLOATS_I32,
           diff_args=(0,)),
]
