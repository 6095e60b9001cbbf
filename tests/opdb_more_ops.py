"""Op-table rows for selu, cumprod, sequence_mask, repeat and tensordot (issue 17; see
tests/opdb.py)."""

from __future__ import annotations

import numpy as np
from opdb import (BOOL, F16, F32, FLOATS, I32, I64, ErrorInput, OpInfo, Sample, make, make_away,
                  unary_errors, unary_samples)
from reference import more_ops as rmore

from ipu_gpu.ops import cumprod as cumprod_ops
from ipu_gpu.ops import nn, sequence_ops, tensordot

FLOATS_I32 = FLOATS + (I32,)


def cumprod_samples(rng, dtype):
    x = make_away(rng, (2, 3, 4), dtype, 0.5, 1.5)
    for axis in (0, 1, -1):
        yield Sample((x,), {"axis": axis}, desc=f"axis={axis}")
    yield Sample((x, 1, True), desc="exclusive")
    yield Sample((x,), {"axis": 2, "reverse": True}, desc="reverse")
    yield Sample((x,), {"axis": -2, "exclusive": True, "reverse": True}, desc="both")
    yield Sample((make_away(rng, (1,), dtype),), {"exclusive": True}, desc="length 1")
    yield Sample((make(rng, (0, 3), dtype),), {"exclusive": True}, desc="empty axis")
    if np.dtype(dtype).kind == "i":
        yield Sample((np.asarray([2 ** 20, 2 ** 20, 3], dtype),), desc="wraps")


def cumprod_errors():
    x = np.zeros(3, F32)
    yield ErrorInput((x,), {"axis": 1}, ValueError, r"^cumprod: axis must be in \[-1, 1\)")
    yield ErrorInput((x,), {"axis": 0.5}, TypeError, r"^cumprod: axis must be an int")
    yield ErrorInput((np.zeros(3, BOOL),), {}, TypeError, r"^cumprod: x must be a numeric")


def sequence_mask_samples(rng, dtype):
    lengths = rng.integers(0, 6, (4,)).astype(dtype)
    yield Sample((lengths, 6), desc="maxlen 6")
    yield Sample((lengths,), desc="maxlen from the lengths")
    yield Sample((rng.integers(0, 4, (2, 3)).astype(dtype), 3), desc="2-D lengths")
    yield Sample((lengths, 2), desc="maxlen below some lengths")
    yield Sample((np.zeros(0, dtype),), desc="no lengths")
    yield Sample((np.asarray([1, 3], dtype), 4), {"dtype": "float32"}, desc="float32 output")
    yield Sample((np.asarray(2, dtype), 3), desc="scalar length")


def _mask_dtype(sample, dtype):
    return np.dtype(sample.kwargs.get("dtype", "bool"))


def sequence_mask_errors():
    yield ErrorInput((np.asarray([1, 2], I32), np.asarray([3, 4], I32)), {}, ValueError,
                     r"^sequence_mask: maxlen must be a scalar")
    yield ErrorInput((np.asarray([True]), 3), {}, TypeError,
                     r"^sequence_mask: lengths must be a numeric")
    yield ErrorInput((np.asarray([1, 2], I32), -1), {}, ValueError,
                     r"^sequence_mask: maxlen must be non-negative")


def repeat_samples(rng, dtype):
    x = make(rng, (3, 2), dtype)
    yield Sample((x, [1, 0, 2]), {"axis": 0}, desc="per element, a zero")
    yield Sample((x, 2), {"axis": 1}, desc="scalar count")
    yield Sample((x, 3), desc="flattened")
    yield Sample((x, [2, 1]), {"axis": -1}, desc="negative axis")
    yield Sample((x, [1, -1, 1]), {"axis": 0}, desc="a negative count")
    yield Sample((make(rng, (0, 2), dtype), 2), {"axis": 0}, desc="empty")
    yield Sample((make(rng, (1,), dtype), [4]), {"axis": 0}, desc="length 1")


def repeat_errors():
    x = np.zeros((3, 2), F32)
    yield ErrorInput((x, [1, 2]), {"axis": 0}, ValueError, r"^repeat: repeats must have 1 or 3")
    yield ErrorInput((x, [1.5, 2.0, 1.0]), {"axis": 0}, TypeError,
                     r"^repeat: repeats must be an integer")
    yield ErrorInput((x, [[1, 2, 1]]), {"axis": 0}, ValueError,
                     r"^repeat: repeats must have rank at most 1")
    yield ErrorInput((x, 2), {"axis": 2}, ValueError, r"^repeat: axis must be in \[-2, 2\)")


def tensordot_samples(rng, dtype):
    a, b = make(rng, (2, 3, 4), dtype), make(rng, (4, 3, 5), dtype)
    yield Sample((a, b, [[1, 2], [1, 0]]), desc="two pairs")
    yield Sample((a, make(rng, (4, 2), dtype), 1), desc="axes=1")
    yield Sample((make(rng, (3,), dtype), make(rng, (2,), dtype), 0), desc="outer product")
    yield Sample((a, make(rng, (3, 4), dtype), 2), desc="axes=2")
    yield Sample((a, b, [[-1], [0]]), desc="negative axis")
    yield Sample((a, make(rng, (2, 3, 4), dtype), 3), desc="full contraction")
    yield Sample((make(rng, (0, 3), dtype), make(rng, (3, 2), dtype), 1), desc="empty")


def tensordot_errors():
    a, b = np.zeros((2, 3), F32), np.zeros((3, 4), F32)
    yield ErrorInput((a, b, 3), {}, ValueError, r"^tensordot: axes must be at most the rank")
    yield ErrorInput((a, b, -1), {}, ValueError, r"^tensordot: axes must be at least 0")
    yield ErrorInput((a, b, [[0], [0]]), {}, ValueError,
                     r"^tensordot: axis 0 of a \(size 2\) and axis 0 of b \(size 3\)")
    yield ErrorInput((a, b, [[0, 1], [0]]), {}, ValueError,
                     r"^tensordot: the two axis lists of axes must have one length")
    yield ErrorInput((a, b, [[5], [0]]), {}, ValueError, r"^tensordot: axis 5 is out of range")
    yield ErrorInput((a, np.zeros((3, 4), np.float64), 1), {}, TypeError, r"^matmul: ")


ROWS = [
    OpInfo("selu", nn.selu, rmore.selu, unary_samples(make_away, ([-30.0, -0.5, 5.0],)),
           unary_errors("selu", "features", I32, "must be a floating-point"), diff_args=(0,),
           elementwise=1, tf_name="nn.selu"),
    OpInfo("cumprod", cumprod_ops.cumprod, rmore.cumprod, cumprod_samples, cumprod_errors,
           dtypes=FLOATS_I32, diff_args=(0,), tol={F16: (1e-2, 1e-2)}),
    OpInfo("sequence_mask", sequence_ops.sequence_mask, rmore.sequence_mask,
           sequence_mask_samples, sequence_mask_errors, dtypes=(I32, I64),
           out_dtype=_mask_dtype),
    OpInfo("repeat", sequence_ops.repeat, rmore.repeat, repeat_samples, repeat_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("tensordot", tensordot.tensordot, rmore.tensordot, tensordot_samples,
           tensordot_errors, dtypes=FLOATS_I32, diff_args=(0, 1), tol={F16: (1e-2, 1e-2)}),
]
