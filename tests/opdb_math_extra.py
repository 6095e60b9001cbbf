"""Op-table rows for the math, sorting/indexing and nn ops of issue 14 (see tests/opdb.py)."""

from __future__ import annotations

import numpy as np
from opdb import (BOOL, F16, F32, F64, FLOATS, I32, I64, UNARY_SHAPES, ErrorInput, OpInfo, Sample,
                  make, make_away, reduction_errors, reduction_samples, unary_errors,
                  unary_samples)
from reference import math_extra as rmath
from reference import nn as rnn
from reference import sort as rsort

from ipu_gpu.ops import math, math_extra, nn, reduction, sort

FLOATS_I32 = FLOATS + (I32,)


# ---- elementwise ------------------------------------------------------------------------------
def _above_minus_one(rng, shape, dtype):
    return make(rng, shape, dtype, -0.9, 3.0)


def _unary(name, fn, ref, maker=make, extra=(), diff=(0,), dtypes=FLOATS, out_dtype=None,
           arg="x", tf_name="math"):
    errors = unary_errors(name, arg, I32, "must be a floating-point")
    return OpInfo(name, fn, ref, unary_samples(maker, extra), errors, dtypes=dtypes,
                  diff_args=diff, out_dtype=out_dtype, elementwise=1,
                  tf_name=tf_name and f"{tf_name}.{name}")


def _bool(sample, dtype):
    return BOOL


SPECIALS = ([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0],)
HALVES = ([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, -3.5, 4.5],)


def round_errors():
    yield ErrorInput((np.zeros(3, BOOL),), {}, TypeError, r"^round: x must be a float or signed")
    yield ErrorInput((np.zeros(3, np.uint8),), {}, TypeError, r"^round: x must be")


ELEMENTWISE = [
    _unary("log1p", math.log1p, rmath.log1p, _above_minus_one),
    _unary("expm1", math.expm1, rmath.expm1, extra=([-40.0, 1e-7, 10.0],)),
    _unary("softplus", math.softplus, rmath.softplus, arg="features",
           extra=([-40.0, -20.0, -14.0, 14.0, 20.0, 40.0],)),
    # TF 2.21's float64 erf gives NaN at +-inf (its float32 erf gives +-1): compared with TF
    # apart from that in tests/test_math_extra.py
    _unary("erf", math.erf, rmath.erf, extra=([-6.0, -1.0, 1e-30, 0.9, 3.0, 7.0],),
           tf_name=None),
    _unary("erfc", math.erfc, rmath.erfc, extra=([-6.0, -1.0, 0.3, 0.9, 3.0, 9.0],)),
    _unary("reciprocal", math.reciprocal, rmath.reciprocal, make_away),
    _unary("floor", math.floor, rmath.floor, diff=(), extra=HALVES),
    _unary("ceil", math.ceil, rmath.ceil, diff=(), extra=HALVES),
    OpInfo("round", math.round, rmath.round, unary_samples(extra=HALVES), round_errors,
           dtypes=FLOATS + (I32, I64), elementwise=1, tf_name="math.round"),
    _unary("is_nan", math.is_nan, rmath.is_nan, extra=SPECIALS, diff=(), out_dtype=_bool),
    _unary("is_finite", math.is_finite, rmath.is_finite, extra=SPECIALS, diff=(),
           out_dtype=_bool),
    _unary("is_inf", math.is_inf, rmath.is_inf, extra=SPECIALS, diff=(), out_dtype=_bool),
]


# ---- reductions ---------------------------------------------------------------------------------
def _reduced_count(x, axis):
    if axis is None:
        return x.size
    axes = [axis] if np.ndim(axis) == 0 else list(axis)
    return int(np.prod([x.shape[a] for a in axes]))


def std_samples(rng, dtype):
    # a deviation of 0 (one element reduced) has a NaN gradient, as TF's
    for s in reduction_samples()(rng, dtype):
        x = s.args[0]
        if x.size and _reduced_count(x, s.kwargs.get("axis")) == 1:
            s.vjp = False
        yield s
    x = np.asarray([[1.0, 1.0, 1.0], [2.0, -1.0, 4.0]], dtype)
    yield Sample((x,), {"axis": 1}, vjp=False, desc="constant row")


def prod_samples(rng, dtype):
    # reduction_samples' values, scaled so that 24 of them multiply within float16's range
    for s in reduction_samples()(rng, dtype):
        if np.dtype(dtype).kind == "f":
            s.args = (np.asarray(s.args[0] * 0.3, dtype),)
        yield s
    if np.dtype(dtype).kind == "f":
        x = np.asarray([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5], [1.0, -2.0, 0.5]], dtype)
        yield Sample((x,), {"axis": 1}, desc="zeros")
    else:
        big = np.asarray([[70000, 70000], [-3, 5]], dtype)
        yield Sample((big,), {"axis": 1}, desc="wraps")


def logsumexp_samples(rng, dtype):
    yield from reduction_samples()(rng, dtype)
    special = np.asarray([[-np.inf, -np.inf], [np.inf, 1.0], [np.inf, -np.inf], [3.0, np.nan],
                          [-np.inf, 2.0]], dtype)
    yield Sample((special,), {"axis": 1}, vjp=False, desc="infinities and NaN")
    if np.dtype(dtype) != F16:
        yield Sample((np.asarray([1000.0, 999.0, -1000.0], dtype),), desc="large values")


def float_reduction_errors(name):
    def gen():
        yield from reduction_errors(name)()
        yield ErrorInput((np.zeros(3, I32),), {}, TypeError,
                         rf"^{name}: input_tensor must be a floating-point")
    return gen


def bool_reduction_errors(name):
    def gen():
        yield ErrorInput((np.zeros(3, F32),), {}, TypeError,
                         rf"^{name}: input_tensor must be a bool tensor, got float32")
        yield ErrorInput((np.zeros((2, 3), BOOL),), {"axis": 2}, ValueError,
                         rf"^{name}: axis must be in \[-2, 2\)")
    return gen


def count_nonzero_samples(rng, dtype):
    x = make(rng, (2, 3, 4), dtype, -1, 1)
    if np.dtype(dtype).kind == "f":
        x = np.where(rng.random(x.shape) < 0.3, 0, x).astype(dtype)
        x[0, 0, 0] = np.nan  # not zero
    for axis in (None, 0, [0, 2], -1):
        yield Sample((x,), {"axis": axis}, desc=f"axis={axis}")
    yield Sample((x,), {"axis": 1, "keepdims": True, "dtype": I32}, desc="keepdims, int32")
    yield Sample((x,), {"dtype": F32}, desc="float32 count")
    yield Sample((make(rng, (0, 3), dtype),), {"axis": 0}, desc="empty")
    yield Sample((make(rng, (), dtype),), desc="scalar")


def _count_dtype(sample, dtype):
    return sample.kwargs.get("dtype", I64)


def count_nonzero_errors():
    yield ErrorInput((np.zeros(3, F32),), {"axis": 1}, ValueError,
                     r"^count_nonzero: axis must be in \[-1, 1\)")
    yield ErrorInput((np.zeros(3, F32),), {"dtype": "bool"}, TypeError,
                     r"^count_nonzero: dtype must be a numeric dtype")
    yield ErrorInput((np.asarray([1j]),), {}, TypeError, r"^count_nonzero: input must")


def moments_samples(rng, dtype):
    x = make(rng, (3, 4, 2), dtype, -3, 3)
    yield Sample((x, [0]), desc="axes [0]")
    yield Sample((x, [0, 1, 2]), desc="all axes")
    yield Sample((x, [0, 2]), {"keepdims": True}, desc="keepdims")
    yield Sample((x,), {"axes": -1}, desc="axes int")
    yield Sample((make(rng, (1, 3), dtype), [0]), vjp=True, desc="length 1")
    yield Sample((make(rng, (0, 3), dtype), [0]), desc="empty")


def moments_errors():
    yield ErrorInput((np.zeros((2, 3), F32), [2]), {}, ValueError,
                     r"^moments: axes must be in \[-2, 2\)")
    yield ErrorInput((np.zeros(3, BOOL), [0]), {}, TypeError, r"^moments: x must be a numeric")


def norm_samples(rng, dtype):
    x = make_away(rng, (3, 4), dtype)
    for ord_ in ("euclidean", 1, 2, np.inf, 3, 0.5):
        yield Sample((x,), {"ord": ord_}, desc=f"ord={ord_}")
        yield Sample((x,), {"ord": ord_, "axis": -1}, desc=f"ord={ord_}, axis -1")
    for ord_ in ("fro", "euclidean", 1, 2, np.inf):
        yield Sample((x,), {"ord": ord_, "axis": [0, 1]}, desc=f"matrix ord={ord_}")
        yield Sample((x,), {"ord": ord_, "axis": (1, 0), "keepdims": True},
                     desc=f"matrix ord={ord_}, transposed, keepdims")
    x3 = make_away(rng, (2, 3, 2), dtype)
    yield Sample((x3,), {"ord": 2, "axis": (0, 2)}, desc="batched spectral norm")
    yield Sample((x3,), {"axis": 1, "keepdims": True}, desc="3-D, keepdims")
    yield Sample((make_away(rng, (1,), dtype),), desc="length 1")
    yield Sample((np.zeros((0, 3), dtype),), {"axis": 0}, desc="empty")
    yield Sample((make_away(rng, (2,), dtype),), {"ord": np.inf}, desc="inf")


def norm_errors():
    x = np.zeros((2, 2), F32)
    yield ErrorInput((x,), {"ord": "fro"}, ValueError,
                     r"^norm: ord must be a supported vector norm, got fro")
    yield ErrorInput((x,), {"ord": -1, "axis": 1}, ValueError, r"^norm: ord must be a supported")
    yield ErrorInput((x,), {"ord": 3, "axis": [0, 1]}, ValueError,
                     r"^norm: ord must be a supported matrix norm")
    yield ErrorInput((x,), {"axis": (0, 0)}, ValueError, r"^norm: axis must be None, an integer")
    yield ErrorInput((x,), {"axis": [0]}, ValueError, r"^norm: axis must be None, an integer")
    yield ErrorInput((x,), {"axis": (0, -2)}, ValueError, r"^norm: axis must name 2 different")
    yield ErrorInput((x,), {"axis": 2}, ValueError, r"^norm: axis must be in \[-2, 2\)")
    yield ErrorInput((np.zeros(2, I32),), {}, TypeError, r"^norm: tensor must be a floating")


REDUCTIONS = [
    OpInfo("reduce_prod", reduction.reduce_prod, rmath.reduce_prod, prod_samples,
           reduction_errors("reduce_prod"), dtypes=FLOATS_I32, diff_args=(0,),
           tol={F16: (1e-2, 1e-2)}),
    OpInfo("reduce_any", reduction.reduce_any, rmath.reduce_any, reduction_samples(),
           bool_reduction_errors("reduce_any"), dtypes=(BOOL,)),
    OpInfo("reduce_all", reduction.reduce_all, rmath.reduce_all, reduction_samples(),
           bool_reduction_errors("reduce_all"), dtypes=(BOOL,)),
    OpInfo("reduce_logsumexp", reduction.reduce_logsumexp, rmath.reduce_logsumexp,
           logsumexp_samples, float_reduction_errors("reduce_logsumexp"), diff_args=(0,)),
    OpInfo("reduce_variance", reduction.reduce_variance, rmath.reduce_variance,
           reduction_samples(), float_reduction_errors("reduce_variance"), diff_args=(0,),
           tol={F16: (5e-3, 2e-2)}),
    OpInfo("reduce_std", reduction.reduce_std, rmath.reduce_std, std_samples,
           float_reduction_errors("reduce_std"), diff_args=(0,)),
    OpInfo("count_nonzero", reduction.count_nonzero, rmath.count_nonzero, count_nonzero_samples,
           count_nonzero_errors, dtypes=FLOATS + (I32, BOOL), out_dtype=_count_dtype),
    OpInfo("moments", reduction.moments, rmath.moments, moments_samples, moments_errors,
           dtypes=FLOATS_I32, diff_args=(0,), tol={F16: (5e-3, 2e-2)}),
    OpInfo("norm", reduction.norm, rmath.norm, norm_samples, norm_errors, diff_args=(0,),
           tol={F16: (5e-3, 1e-2)}),
]



# ---- cumsum, unsorted_segment_sum, einsum ---------------------------------------------------
def cumsum_samples(rng, dtype):
    x = make(rng, (2, 3, 4), dtype, -3, 3)
    for axis in (0, 1, -1):
        yield Sample((x,), {"axis": axis}, desc=f"axis={axis}")
    yield Sample((x, 1, True), desc="exclusive")
    yield Sample((x,), {"axis": 2, "reverse": True}, desc="reverse")
    yield Sample((x,), {"axis": -2, "exclusive": True, "reverse": True}, desc="both")
    yield Sample((make(rng, (1,), dtype),), {"exclusive": True}, desc="length 1, exclusive")
    yield Sample((make(rng, (0, 3), dtype),), {"exclusive": True}, desc="empty axis")
    yield Sample((make(rng, (3, 0), dtype),), {"axis": 0}, desc="empty other axis")
    if np.dtype(dtype).kind == "i":
        big = np.asarray([2 ** 30, 2 ** 30, 2 ** 30], dtype)
        yield Sample((big,), desc="wraps")


def cumsum_errors():
    x = np.zeros(3, F32)
    yield ErrorInput((x,), {"axis": 1}, ValueError, r"^cumsum: axis must be in \[-1, 1\)")
    yield ErrorInput((np.float32(1),), {}, ValueError, r"^cumsum: axis must be in \[0, 0\)")
    yield ErrorInput((x,), {"axis": 0.5}, TypeError, r"^cumsum: axis must be an int")
    yield ErrorInput((x,), {"axis": [0]}, TypeError, r"^cumsum: axis must be an int")
    yield ErrorInput((np.zeros(3, BOOL),), {}, TypeError, r"^cumsum: x must be a numeric")


def segment_samples(rng, dtype):
    data = make(rng, (5, 3), dtype)
    yield Sample((data, np.asarray([0, 2, -1, 0, 2], I32), 4),
                 desc="duplicates, a negative id, empty segments")
    yield Sample((make(rng, (2, 2, 3), dtype), np.asarray([[0, 1], [1, -1]], I64), 2),
                 desc="2-D ids")
    yield Sample((make(rng, (), dtype), np.asarray(1, I32), 2), desc="scalar id")
    yield Sample((make(rng, (4,), dtype), np.asarray([3, 3, 3, 3], I32), 4), desc="one segment")
    yield Sample((make(rng, (0, 3), dtype), np.zeros(0, I32), 2), desc="no data")
    yield Sample((make(rng, (2,), dtype), np.asarray([-1, -5], I32), 0), desc="no segments")
    yield Sample((make(rng, (1, 2), dtype), np.asarray([0], I32), 1), desc="length 1")


def segment_errors():
    n = "unsorted_segment_sum"
    d = np.zeros(4, F32)
    yield ErrorInput((d, np.asarray([0, 2, 3, 0], I32), 3), {}, ValueError,
                     rf"^{n}: segment_ids\[2\] = 3 is out of range \[0, 3\)")
    yield ErrorInput((d, np.asarray([0, 1], I32), 2), {}, ValueError,
                     rf"^{n}: data.shape = \[4\] must start with segment_ids.shape = \[2\]")
    yield ErrorInput((d, np.zeros(4, I32), -1), {}, ValueError,
                     rf"^{n}: num_segments must not be negative, got -1")
    yield ErrorInput((d, np.zeros(4, F32), 1), {}, TypeError, rf"^{n}: segment_ids must be an")
    yield ErrorInput((d, np.zeros(4, I32), 1.0), {}, TypeError, rf"^{n}: num_segments must be")
    yield ErrorInput((np.zeros(4, BOOL), np.zeros(4, I32), 1), {}, TypeError,
                     rf"^{n}: data must be float16")


def einsum_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype)
    yield Sample(("ij,jk->ik", m(2, 3), m(3, 4)), desc="matmul")
    yield Sample(("ij,jk", m(2, 3), m(3, 4)), desc="implicit output")
    yield Sample(("ii->i", m(3, 3)), desc="diagonal")
    yield Sample(("ii", m(3, 3)), desc="trace")
    yield Sample(("iji->j", m(2, 3, 2)), desc="diagonal summed")
    yield Sample(("ij->", m(2, 3)), desc="sum")
    yield Sample(("ij -> ji", m(2, 3)), desc="transpose, spaces")
    yield Sample(("...ij,...jk->...ik", m(5, 2, 3), m(1, 3, 4)), desc="broadcast ellipsis")
    yield Sample(("...j,j", m(2, 3), m(3)), desc="implicit ellipsis")
    yield Sample(("bij,bjk->bik", m(2, 2, 3), m(2, 3, 2)), desc="batched")
    yield Sample(("i,j->ij", m(2), m(3)), desc="outer")
    yield Sample(("ij,jk,kl->il", m(2, 3), m(3, 4), m(4, 2)), desc="three operands")
    yield Sample(("ij,ij->ij", m(2, 3), m(2, 3)), desc="elementwise")
    yield Sample(("ij,jK->iK", m(0, 3), m(3, 2)), desc="empty, upper-case label")
    yield Sample(("i->i", m(1)), desc="length 1")


def einsum_errors():
    a, b = np.zeros((2, 3), F32), np.zeros((3, 4), F32)
    yield ErrorInput(("ij,jk->ik", a), {}, ValueError,
                     r"^einsum: equation 'ij,jk->ik' must have one term per input")
    yield ErrorInput(("ijk,jk->ik", a, b), {}, ValueError, r"^einsum: inputs\[0\] must have rank 3")
    yield ErrorInput(("ij,jk->ik", a, np.zeros((4, 4), F32)), {}, ValueError,
                     r"^einsum: label 'j' must have one size, got 3 and 4")
    yield ErrorInput(("ij,jk->iz", a, b), {}, ValueError,
                     r"^einsum: output subscripts must appear in the inputs")
    yield ErrorInput(("ij->ii", a), {}, ValueError, r"^einsum: output subscripts must not repeat")
    yield ErrorInput(("ij..,jk->ik", a, b), {}, ValueError, r"^einsum: equation must be letters")
    yield ErrorInput(("ij,jk->ik", a, b.astype(F64)), {}, TypeError,
                     r"^einsum: inputs\[1\] must have the dtype of inputs\[0\]")
    yield ErrorInput(("ij->ij", a.astype(BOOL)), {}, TypeError, r"^einsum: inputs must be")
    yield ErrorInput((3, a), {}, TypeError, r"^einsum: equation must be a string")


SCANS = [
    OpInfo("cumsum", math_extra.cumsum, rmath.cumsum, cumsum_samples, cumsum_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("unsorted_segment_sum", math_extra.unsorted_segment_sum, rmath.unsorted_segment_sum,
           segment_samples, segment_errors, dtypes=FLOATS_I32 + (I64,), diff_args=(0,)),
    OpInfo("einsum", math_extra.einsum, rmath.einsum, einsum_samples, einsum_errors,
           dtypes=FLOATS_I32, diff_args=(1, 2, 3), tol={F16: (1e-2, 1e-2)}),
]



# ---- sorting and n-d indexing --------------------------------------------------------------------
def _int32(sample, dtype):
    return I32


def sort_samples(rng, dtype):
    x = make(rng, (3, 5), dtype, -4, 4)
    yield Sample((x,), desc="last axis")
    yield Sample((x,), {"axis": 0}, desc="axis 0")
    yield Sample((x,), {"direction": "DESCENDING"}, desc="descending")
    yield Sample((make(rng, (2, 3, 4), dtype), 1, "DESCENDING"), desc="3-D, axis 1")
    ties = np.asarray([[2, 1, 2, 0, 1, 2], [0, 0, 0, 0, 0, 0]], dtype)
    yield Sample((ties,), vjp=False, desc="ties")
    yield Sample((ties,), {"direction": "DESCENDING"}, vjp=False, desc="ties, descending")
    yield Sample((make(rng, (1,), dtype),), desc="length 1")
    yield Sample((make(rng, (0,), dtype),), desc="empty")
    yield Sample((make(rng, (2, 0), dtype),), {"axis": 0}, desc="empty rows")
    if np.dtype(dtype).kind == "f":
        special = np.asarray([1.0, np.nan, -np.inf, 0.0, -0.0, np.inf, np.nan, -1.0], dtype)
        yield Sample((special,), vjp=False, desc="NaN, infinities, signed zeros")
        yield Sample((special,), {"direction": "DESCENDING"}, vjp=False,
                     desc="NaN, infinities, signed zeros, descending")


def sort_errors(name):
    def gen():
        x = np.zeros(3, F32)
        yield ErrorInput((x,), {"direction": "UP"}, ValueError,
                         rf"^{name}: direction must be one of ASCENDING, DESCENDING")
        yield ErrorInput((x,), {"axis": 1}, ValueError, rf"^{name}: axis must be in \[-1, 1\)")
        yield ErrorInput((np.float32(1),), {}, ValueError, rf"^{name}: values must have rank")
        yield ErrorInput((np.zeros(3, BOOL),), {}, TypeError, rf"^{name}: values must be")
        yield ErrorInput((x,), {"axis": 0.0}, TypeError, rf"^{name}: axis must be an int")
    return gen


def top_k_values(input, k=1, sorted=True, index_type=I32):  # noqa: A002
    """top_k's values (the op table checks one output dtype per row; the indices are checked
    against the reference and TF in tests/test_math_extra.py)."""
    return sort.top_k(input, k, sorted, index_type)[0]


def top_k_values_ref(input, k=1, sorted=True, index_type=I32):  # noqa: A002
    return rsort.top_k(input, k, sorted, index_type)[0]


def top_k_samples(rng, dtype):
    x = make(rng, (3, 6), dtype, -4, 4)
    yield Sample((x, 3), desc="k 3")
    yield Sample((x,), desc="default k")
    yield Sample((x, 6), desc="k = n")
    yield Sample((x, 0), desc="k 0")
    yield Sample((x,), {"k": 2, "sorted": False, "index_type": I64}, desc="unsorted, int64")
    yield Sample((make(rng, (2, 2, 5), dtype), 2), desc="3-D")
    ties = np.asarray([[1, 3, 3, 2, 3], [0, 0, 0, 0, 0]], dtype)
    yield Sample((ties, 3), vjp=False, desc="ties")
    yield Sample((make(rng, (1,), dtype), 1), desc="length 1")
    yield Sample((make(rng, (0, 4), dtype), 2), desc="no rows")


def top_k_errors():
    x = np.zeros((2, 3), F32)
    yield ErrorInput((x, 4), {}, ValueError,
                     r"^top_k: input must have at least k columns. Had 3, needed 4")
    yield ErrorInput((x, -1), {}, ValueError, r"^top_k: k must be >= 0, got -1")
    yield ErrorInput((np.float32(1), 1), {}, ValueError, r"^top_k: input must have rank >= 1")
    yield ErrorInput((x, 2.0), {}, TypeError, r"^top_k: k must be an int")
    yield ErrorInput((x, 1), {"index_type": F32}, TypeError,
                     r"^top_k: index_type must be int16, int32 or int64")
    yield ErrorInput((x.astype(BOOL), 1), {}, TypeError, r"^top_k: input must be")


def gather_nd_samples(rng, dtype):
    p = make(rng, (3, 4), dtype)
    yield Sample((p, np.asarray([[1, 0], [2, 3], [1, 0]], I32)), desc="elements, duplicates")
    yield Sample((p, np.asarray([[2], [0], [2]], I64)), desc="rows")
    yield Sample((make(rng, (2, 3, 2), dtype), np.asarray([[[0, 2]], [[1, 1]]], I32)),
                 desc="3-D indices")
    yield Sample((p, np.zeros((2, 0), I32)), desc="K = 0: the whole tensor per index")
    yield Sample((p, np.zeros((0, 2), I32)), desc="no indices")
    yield Sample((make(rng, (1,), dtype), np.asarray([[0], [0]], I32)), desc="length 1")
    yield Sample((make(rng, (0, 3), dtype), np.zeros((2, 0), I32)), desc="empty params")


def gather_nd_errors():
    p = np.zeros((2, 2), F32)
    n = "gather_nd"
    yield ErrorInput((p, np.asarray([[1, 0], [2, 0]], I32)), {}, ValueError,
                     rf"^{n}: indices\[1\] = \[2, 0\] does not index into param shape \[2, 2\]")
    yield ErrorInput((p, np.asarray([[1, -1]], I64)), {}, ValueError,
                     rf"^{n}: indices\[0\] = \[1, -1\] does not index into param shape")
    yield ErrorInput((p, np.asarray([[1, 0, 0]], I32)), {}, ValueError,
                     rf"^{n}: indices.shape\[-1\] must be <= the rank of params \(2\), got 3")
    yield ErrorInput((p, np.asarray([[1.0, 0.0]], F32)), {}, TypeError,
                     rf"^{n}: indices must be an integer")
    yield ErrorInput((p, np.asarray(1, I32)), {}, ValueError, rf"^{n}: indices must have rank")
    yield ErrorInput((np.float32(1), np.zeros(0, I32)), {}, ValueError,
                     rf"^{n}: params must have rank")
    yield ErrorInput((p, np.asarray([[1], [0]], I32)), {"batch_dims": 1}, ValueError,
                     rf"^{n}: batch_dims must be 0")


def scatter_nd_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype)
    yield Sample((np.asarray([[1], [3], [1]], I32), m(3), [5]), desc="duplicates accumulate")
    yield Sample((np.asarray([[2], [0]], I64), m(2, 3), (4, 3)), desc="rows")
    yield Sample((np.asarray([[0, 1], [2, 2], [0, 1]], I32), m(3), [3, 3]), desc="elements")
    yield Sample((np.asarray([[[1]], [[0]]], I32), m(2, 1, 2), [2, 2]), desc="3-D indices")
    yield Sample((np.zeros((0, 1), I32), m(0), [4]), desc="no indices")
    yield Sample((np.zeros((0, 1), I32), m(0, 0), [0, 0]), desc="empty output")
    yield Sample((np.asarray([[0]], I32), m(1), [1]), desc="length 1")


def scatter_nd_errors():
    n = "scatter_nd"
    yield ErrorInput((np.asarray([[1], [5]], I32), np.zeros(2, F32), [5]), {}, ValueError,
                     rf"^{n}: indices\[1\] = \[5\] does not index into shape \[5\]")
    yield ErrorInput((np.asarray([[-1]], I32), np.zeros(1, F32), [5]), {}, ValueError,
                     rf"^{n}: indices\[0\] = \[-1\] does not index into shape")
    yield ErrorInput((np.asarray([[1], [3]], I32), np.zeros(3, F32), [5]), {}, ValueError,
                     rf"^{n}: updates must have shape \[2\]")
    yield ErrorInput((np.asarray([[1]], I32), np.zeros(1, F32), [-5]), {}, ValueError,
                     rf"^{n}: shape must not have negative dimensions")
    yield ErrorInput((np.asarray([[1, 1]], I32), np.zeros(1, F32), [5]), {}, ValueError,
                     rf"^{n}: indices.shape\[-1\] must be <= the rank of shape \(1\)")
    yield ErrorInput((np.asarray([[0]], I32), np.zeros((1, 3), F32), [0, 3]), {}, ValueError,
                     rf"^{n}: indices and updates must be empty for an empty shape")
    yield ErrorInput((np.asarray([[1]], I32), np.zeros(1, BOOL), [3]), {}, TypeError,
                     rf"^{n}: updates must be float16")
    yield ErrorInput((np.asarray([[1.0]], F32), np.zeros(1, F32), [3]), {}, TypeError,
                     rf"^{n}: indices must be an integer")
    yield ErrorInput((np.asarray([[1]], I32), np.zeros(1, F32), [3.0]), {}, TypeError,
                     rf"^{n}: shape must be a list of ints")


def tensor_scatter_samples(duplicates_vjp):
    def gen(rng, dtype):
        def m(*shape):
            return make(rng, shape, dtype)
        yield Sample((m(4), np.asarray([[1], [1], [3]], I32), m(3)), vjp=duplicates_vjp,
                     desc="duplicates")
        yield Sample((m(4, 3), np.asarray([[2], [0]], I64), m(2, 3)), desc="rows")
        yield Sample((m(3, 3), np.asarray([[0, 1], [2, 2]], I32), m(2)), desc="elements")
        yield Sample((m(4), np.zeros((0, 1), I32), m(0)), desc="no indices")
        yield Sample((m(1), np.asarray([[0]], I32), m(1)), desc="length 1")
        yield Sample((m(0, 2), np.zeros((0, 1), I32), m(0, 2)), desc="empty tensor")
    return gen


def tensor_scatter_errors(n):
    def gen():
        t = np.zeros(4, F32)
        yield ErrorInput((t, np.asarray([[1], [4]], I32), np.zeros(2, F32)), {}, ValueError,
                         rf"^{n}: indices\[1\] = \[4\] does not index into shape \[4\]")
        yield ErrorInput((t, np.asarray([[1], [2]], I32), np.zeros(3, F32)), {}, ValueError,
                         rf"^{n}: updates must have shape \[2\]")
        yield ErrorInput((t, np.asarray([[1]], I32), np.zeros(1, F64)), {}, TypeError,
                         rf"^{n}: updates must have the dtype of tensor")
        yield ErrorInput((t, np.asarray(1, I32), np.float32(3)), {}, ValueError,
                         rf"^{n}: indices must have rank >= 1")
        yield ErrorInput((np.float32(1), np.zeros(0, I32), np.float32(3)), {}, ValueError,
                         rf"^{n}: tensor must have rank >= 1")
    return gen


def boolean_mask_samples(rng, dtype):
    x = make(rng, (3, 2), dtype)
    yield Sample((x, np.asarray([True, False, True])), desc="rows")
    yield Sample((x, np.asarray([False, True])), {"axis": 1}, desc="axis 1")
    yield Sample((x, np.asarray([[True, False], [False, True], [True, True]])), desc="2-D mask")
    yield Sample((make(rng, (2, 3, 2), dtype), np.asarray([[1, 0, 1], [0, 0, 2]], I32), 0),
                 desc="numeric mask over two axes")
    yield Sample((x, np.zeros(3, BOOL)), desc="nothing selected")
    yield Sample((make(rng, (0, 2), dtype), np.zeros(0, BOOL)), desc="empty")
    yield Sample((make(rng, (1,), dtype), np.asarray([True])), desc="length 1")


def boolean_mask_errors():
    x = np.zeros((3, 2), F32)
    n = "boolean_mask"
    yield ErrorInput((x, True), {}, ValueError, rf"^{n}: mask cannot be scalar")
    yield ErrorInput((x, np.asarray([True, False])), {}, ValueError,
                     rf"^{n}: mask must have shape \[3\]")
    yield ErrorInput((x, np.asarray([True, False])), {"axis": -1}, ValueError,
                     rf"^{n}: axis must be in \[0, 1\]")
    yield ErrorInput((x, np.zeros((1, 1, 1), BOOL)), {}, ValueError, rf"^{n}: axis must be in")
    yield ErrorInput((x, np.asarray(["a", "b", "c"])), {}, TypeError, rf"^{n}: mask must")


SORTING = [
    OpInfo("sort", sort.sort, rsort.sort, sort_samples, sort_errors("sort"), dtypes=FLOATS_I32,
           diff_args=(0,)),
    OpInfo("argsort", sort.argsort, rsort.argsort, sort_samples, sort_errors("argsort"),
           dtypes=FLOATS_I32, out_dtype=_int32),
    OpInfo("top_k", top_k_values, top_k_values_ref, top_k_samples, top_k_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("gather_nd", sort.gather_nd, rsort.gather_nd, gather_nd_samples, gather_nd_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("scatter_nd", sort.scatter_nd, rsort.scatter_nd, scatter_nd_samples,
           scatter_nd_errors, dtypes=FLOATS_I32 + (I64,), diff_args=(1,)),
    # TF's gradient gives an earlier update of a repeated index the cotangent too, where the
    # finite difference sees nothing: no VJP check for duplicates
    OpInfo("tensor_scatter_nd_update", sort.tensor_scatter_nd_update,
           rsort.tensor_scatter_nd_update, tensor_scatter_samples(False),
           tensor_scatter_errors("tensor_scatter_nd_update"), dtypes=FLOATS + (I32, BOOL),
           diff_args=(0, 2)),
    OpInfo("tensor_scatter_nd_add", sort.tensor_scatter_nd_add, rsort.tensor_scatter_nd_add,
           tensor_scatter_samples(True), tensor_scatter_errors("tensor_scatter_nd_add"),
           dtypes=FLOATS_I32 + (I64,), diff_args=(0, 2)),
    OpInfo("boolean_mask", sort.boolean_mask, rsort.boolean_mask, boolean_mask_samples,
           boolean_mask_errors, dtypes=FLOATS_I32, diff_args=(0,)),
]



# ---- nn ------------------------------------------------------------------------------------------
def gelu_samples(rng, dtype):
    for shape in UNARY_SHAPES:
        yield Sample((make(rng, shape, dtype, -4, 4),), desc=str(shape))
        yield Sample((make(rng, shape, dtype, -4, 4), True), desc=f"{shape}, approximate")
    yield Sample((np.asarray([-12.0, -5.0, 0.0, 5.0, 12.0], dtype),), desc="tails")


def gelu_errors():
    yield ErrorInput((np.zeros(2, I32),), {}, ValueError,
                     r"^gelu: features must be a floating-point tensor, got int32")


def silu_samples(rng, dtype):
    for shape in UNARY_SHAPES:
        yield Sample((make(rng, shape, dtype, -4, 4),), desc=str(shape))
    x = make(rng, (2, 3), dtype, -4, 4)
    yield Sample((x, 2.0), desc="beta 2")
    yield Sample((x, make(rng, (3,), dtype, 0.5, 2)), desc="beta per column")
    yield Sample((x, np.asarray(0.5, dtype)), desc="0-d beta")


def silu_errors():
    yield ErrorInput((np.zeros(2, I32),), {}, TypeError, r"^silu: features must be a floating")
    yield ErrorInput((np.zeros((2, 3), F32), np.ones((4,), F32)), {}, ValueError,
                     r"^silu: beta must be broadcast-compatible")
    yield ErrorInput((np.zeros((3,), F32), np.ones((2, 3), F32)), {}, ValueError,
                     r"^silu: beta must broadcast to the shape of features")


def l2_normalize_samples(rng, dtype):
    x = make_away(rng, (3, 4), dtype)
    yield Sample((x,), desc="all axes")
    yield Sample((x, 1), desc="axis 1")
    yield Sample((x,), {"axis": [0, 1]}, desc="axis list")
    yield Sample((x,), {"axis": -1, "epsilon": 4.0}, desc="epsilon above some norms")
    yield Sample((x,), {"dim": 0}, desc="dim (deprecated name)")
    yield Sample((make_away(rng, (1,), dtype),), desc="length 1")
    yield Sample((make(rng, (0, 3), dtype), 1), desc="empty")
    if np.dtype(dtype) != F16:  # 1e-12 is 0 in float16: there a zero vector gives NaN, as TF
        z = np.zeros((2, 3), dtype)
        z[1] = make_away(rng, (3,), dtype)
        # finite differences of a zero row cross the kink at sum(x**2) = epsilon
        yield Sample((z, 1), vjp=False, desc="a zero row")


def l2_normalize_errors():
    yield ErrorInput((np.zeros(2, I32),), {}, TypeError, r"^l2_normalize: x must be a floating")
    yield ErrorInput((np.zeros(2, F32), 1), {}, ValueError,
                     r"^l2_normalize: axis must be in \[-1, 1\)")
    yield ErrorInput((np.zeros(2, F32), 0), {"dim": 0}, ValueError,
                     r"^l2_normalize: give axis or dim")


def xw_plus_b_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype)
    yield Sample((m(2, 3), m(3, 4), m(4)))
    yield Sample((m(2, 2, 3), m(3, 4), m(4)), desc="batch of matrices")
    yield Sample((m(0, 3), m(3, 2), m(2)), desc="no rows")
    yield Sample((m(1, 1), m(1, 1), m(1)), desc="1x1")


def xw_plus_b_errors():
    x, w, b = np.zeros((2, 3), F32), np.zeros((3, 4), F32), np.zeros(4, F32)
    yield ErrorInput((x[0], w, b), {}, ValueError, r"^xw_plus_b: x must have rank >= 2")
    yield ErrorInput((x, w[None], b), {}, ValueError, r"^xw_plus_b: weights must have rank 2")
    yield ErrorInput((x, w, b[None]), {}, ValueError, r"^xw_plus_b: biases must have rank 1")


def pool1d_samples(explicit):
    def gen(rng, dtype):
        def x(*shape):
            return make(rng, shape, dtype)
        yield Sample((x(2, 6, 3), 2, 2, "VALID"), desc="k2 s2 VALID")
        yield Sample((x(2, 7, 2), 3, 2, "SAME"), desc="k3 s2 SAME")
        yield Sample((x(2, 3, 5), [1, 1, 2], [1, 1, 1], "VALID", "NCW"),
                     desc="NCW, 3-element ksize/strides")
        yield Sample((x(1, 5, 2), [1, 3, 1], 2, "SAME"), desc="3-element ksize")
        yield Sample((x(0, 4, 2), 2, 2, "VALID"), desc="empty batch")
        yield Sample((x(1, 1, 1), 1, 1, "VALID"), desc="length 1")
        ties = np.asarray(rng.integers(-1, 2, (2, 6, 2)), dtype)
        yield Sample((ties, 3, 1, "SAME"), vjp=False, desc="ties")
        if explicit:
            yield Sample((x(2, 5, 3), 3, 2, [[0, 0], [1, 2], [0, 0]]), desc="explicit padding")
    return gen


def pool1d_errors(name):
    def gen():
        x = np.zeros((1, 4, 2), F32)
        yield ErrorInput((x[None], 2, 2, "VALID"), {}, ValueError,
                         rf"^{name}: input must be 3-dimensional")
        yield ErrorInput((x, 2, 2, "VALID", "NHWC"), {}, ValueError,
                         rf"^{name}: data_format must be 'NWC' or 'NCW'")
        yield ErrorInput((x, [2, 2], 2, "VALID"), {}, ValueError,
                         rf"^{name}: ksize must have length 1 or 3")
        yield ErrorInput((x, 2, [1, 1, 1, 1], "VALID"), {}, ValueError,
                         rf"^{name}: strides must have length 1 or 3")
        yield ErrorInput((x.astype(I32), 2, 2, "VALID"), {}, TypeError,
                         rf"^{name}: input must be float16, float32 or float64")
        yield ErrorInput((x, 2.0, 2, "VALID"), {}, TypeError, rf"^{name}: ksize must be an int")
    return gen


def pool_nd_samples(rng, dtype):
    def x(*shape):
        return make(rng, shape, dtype)
    yield Sample((x(2, 6, 3), 2, 2, "VALID"), desc="rank 3: 1-D pooling")
    yield Sample((x(2, 3, 6), 3, 2, "SAME", "NCW"), desc="rank 3, NCW")
    yield Sample((x(2, 5, 4, 3), 2, 2, "VALID"), desc="rank 4: 2-D pooling")
    yield Sample((x(2, 3, 5, 4), [1, 1, 2, 2], [1, 1, 1, 2], "SAME", "NCHW"),
                 desc="rank 4, NCHW, 4-element ksize")
    yield Sample((x(0, 4, 4, 1), 2, 2, "SAME"), desc="empty batch")
    yield Sample((x(2, 5, 4, 6, 3), 2, 2, "VALID"), desc="rank 5: 3-D pooling")
    yield Sample((x(1, 4, 5, 3, 2), [2, 3, 2], [1, 2, 2], "SAME"),
                 desc="rank 5, SAME, 3-element ksize")


def pool_nd_errors(name):
    def gen():
        yield ErrorInput((np.zeros((2, 2), F32), 2, 2, "VALID"), {}, ValueError,
                         rf"^{name}: input must have rank 3, 4 or 5")
    return gen


def embedding_samples(rng, dtype):
    p = make(rng, (7, 3), dtype)
    yield Sample((p, np.asarray([0, 6, 2, 2], I32)), desc="duplicates")
    yield Sample(([p[:3], p[3:5], p[5:]], np.asarray([[0, 3], [6, 2], [5, 5]], I64)),
                 desc="three partitions ('div'), 2-D ids")
    yield Sample(([p],), {"ids": np.asarray([1, 4], I32)}, desc="a list of one")
    big = make_away(rng, (4, 3), dtype, 0.5, 2.0)
    yield Sample((big, np.asarray([0, 1, 2, 3, 1], I32)), {"max_norm": 2.0}, desc="max_norm")
    yield Sample((make_away(rng, (5,), dtype, 0.5, 3.0), np.asarray([[0, 4], [2, 2]], I32)),
                 {"max_norm": 1.5}, desc="rank-1 params, max_norm per element")
    yield Sample((p, np.zeros((0,), I32)), desc="no ids")
    yield Sample((make(rng, (1, 2), dtype), np.asarray(0, I32)), desc="one row, 0-d id")


def embedding_errors():
    p = np.zeros((7, 2), F32)
    n = "embedding_lookup"
    yield ErrorInput(([], np.asarray([0], I32)), {}, ValueError,
                     rf"^{n}: params must be a tensor or a non-empty list")
    yield ErrorInput(([p[:2], p[2:]], np.asarray([0], I32)), {}, ValueError,
                     rf"^{n}: params must be split as TF's 'div' strategy splits 7 rows over 2 "
                     r"tensors \(\[4, 3\] rows\), got \[2, 5\]")
    yield ErrorInput((p, np.asarray([0.0], F32)), {}, TypeError, rf"^{n}: ids must be an integer")
    yield ErrorInput((p, np.asarray([7], I32)), {}, ValueError, rf"^{n}: ids must be in \[0, 7\)")


NN = [
    OpInfo("gelu", nn.gelu, rnn.gelu, gelu_samples, gelu_errors, diff_args=(0,), elementwise=1,
           tf_name="nn.gelu"),
    OpInfo("silu", nn.silu, rnn.silu, silu_samples, silu_errors, diff_args=(0, 1),
           elementwise=2, tf_name="nn.silu"),
    OpInfo("l2_normalize", nn.l2_normalize, rnn.l2_normalize, l2_normalize_samples,
           l2_normalize_errors, diff_args=(0,)),
    OpInfo("xw_plus_b", nn.xw_plus_b, rnn.xw_plus_b, xw_plus_b_samples, xw_plus_b_errors,
           diff_args=(0, 1, 2), tol={F16: (1e-2, 1e-2)}),
    OpInfo("max_pool1d", nn.max_pool1d, rnn.max_pool1d, pool1d_samples(True),
           pool1d_errors("max_pool1d"), diff_args=(0,)),
    OpInfo("avg_pool1d", nn.avg_pool1d, rnn.avg_pool1d, pool1d_samples(False),
           pool1d_errors("avg_pool1d"), diff_args=(0,)),
    OpInfo("max_pool", nn.max_pool, rnn.max_pool, pool_nd_samples, pool_nd_errors("max_pool"),
           diff_args=(0,)),
    OpInfo("avg_pool", nn.avg_pool, rnn.avg_pool, pool_nd_samples, pool_nd_errors("avg_pool"),
           diff_args=(0,)),
    # tf.nn's, beside Graphcore's ipu.embedding_ops.embedding_lookup row
    OpInfo("nn.embedding_lookup", nn.embedding_lookup, rnn.embedding_lookup, embedding_samples,
           embedding_errors, diff_args=(0,)),
]

ROWS = ELEMENTWISE + REDUCTIONS + SCANS + SORTING + NN
