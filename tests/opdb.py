"""The op table: one ``OpInfo`` row per public op (PyTorch's OpInfo, JAX's lax_reference).

A row names the ipu_gpu callable, its float64 reference (``tests/reference``), a sample
generator, the differentiable positional arguments, the TF rule for the output dtype,
tolerances and the inputs that must raise; elementwise float ops also say how many tensor
arguments they combine and where TF keeps the op (``tests/test_nan_inputs.py`` feeds them
NaN and +-inf and compares with the reference and with TF). ``tests/test_opdb.py`` runs
the generic checks over every row; a new public op needs a row here (or in a
``tests/opdb_<family>.py`` file, see the end of this one) and nothing else.

Samples hold numpy arrays; the tests move them onto the backend under test. Python scalars,
shapes, axes and dtypes stay as they are (they are static arguments or follow the other
operand's dtype, as in TF).
"""

from __future__ import annotations

import dataclasses
import importlib
import pathlib
from collections.abc import Callable, Iterable

import numpy as np
from reference import creation as rcreation
from reference import indexing as rindexing
from reference import math as rmath
from reference import matmul as rmatmul
from reference import nn as rnn
from reference import reduction as rreduction
from reference import shape as rshape

import ipu_gpu as tf
from ipu_gpu.errors import InvalidArgumentError

F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
I32, I64, BOOL = np.dtype("int32"), np.dtype("int64"), np.dtype("bool")
I8, I16 = np.dtype("int8"), np.dtype("int16")
FLOATS = (F16, F32, F64)
NUMERIC = FLOATS + (I32, I64)
FLOATS_I32 = FLOATS + (I32,)

# (rtol, atol) against the float64 reference, by the least precise float dtype involved
DEFAULT_TOL = {F16: (5e-3, 5e-3), F32: (1e-5, 1e-5), F64: (1e-10, 1e-12)}


@dataclasses.dataclass
class Sample:
    """One call: ``op(*args, **kwargs)``. ``vjp=False`` where the op is not smooth at these
    inputs (ties, kinks) or the output is too coarse for finite differences."""

    args: tuple
    kwargs: dict = dataclasses.field(default_factory=dict)
    vjp: bool = True
    desc: str = ""


@dataclasses.dataclass
class ErrorInput:
    """``op(*args, **kwargs)`` must raise ``exc`` with a message matching ``match``, which
    names the op and the offending argument."""

    args: tuple
    kwargs: dict
    exc: type
    match: str


@dataclasses.dataclass
class OpInfo:
    name: str
    op: Callable
    ref: Callable
    sample_inputs: Callable[[np.random.Generator, np.dtype], Iterable[Sample]]
    error_inputs: Callable[[], Iterable[ErrorInput]]
    dtypes: tuple = FLOATS
    diff_args: tuple = ()  # positional indices; a list argument differentiates each element
    out_dtype: Callable[[Sample, np.dtype], np.dtype] | None = None  # None: the sample dtype
    tol: dict = dataclasses.field(default_factory=dict)  # overrides of DEFAULT_TOL
    # n > 0: the first n positional arguments are float tensors combined elementwise
    # (broadcasting, no other argument needed), so any values may go in: NaN and +-inf too
    elementwise: int = 0
    tf_name: str | None = None  # the op's path under TF's top module: "math.add", "nn.relu"

    def expected_dtype(self, sample: Sample, dtype: np.dtype) -> np.dtype:
        return np.dtype(dtype if self.out_dtype is None else self.out_dtype(sample, dtype))

    def tolerance(self, dtype: np.dtype) -> tuple:
        return self.tol.get(dtype, DEFAULT_TOL[dtype])


# ---- value makers -------------------------------------------------------------------------
def make(rng, shape, dtype, low=-2.0, high=2.0):
    """Random values of ``dtype`` in [low, high) (integers: [ceil(low), floor(high)])."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.asarray(rng.uniform(low, high, shape), dtype)
    if dtype.kind in "iu":
        return np.asarray(rng.integers(int(np.ceil(low)), int(np.floor(high)) + 1, shape), dtype)
    return np.asarray(rng.random(shape) < 0.5)


def make_away(rng, shape, dtype, low=0.5, high=2.0):
    """Random values with |v| in [low, high] and random signs: away from 0 (kinks, poles)."""
    mag = make(rng, shape, dtype, low, high)
    return np.asarray(np.where(rng.random(shape) < 0.5, -mag, mag), dtype)


def scalar(dtype, value=1.5):
    """A Python scalar that ``dtype`` holds exactly (it adopts the other operand's dtype)."""
    return bool(value) if np.dtype(dtype).kind == "b" else (
        int(value) if np.dtype(dtype).kind in "iu" else float(value))


def with_ties(rng, x, dtype):
    """A second operand equal to ``x`` at every other element."""
    y = make(rng, x.shape, dtype)
    y.reshape(-1)[::2] = x.reshape(-1)[::2]
    return y


def _same(a_dtype, b_dtype):
    return np.zeros(2, a_dtype), np.zeros(2, b_dtype)


# ---- elementwise binary -------------------------------------------------------------------
BINARY_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 5)), ((), ()), ((0, 3), (1, 3)),
                 ((1,), (1,)), ((2, 1, 3), (4, 1)), ((3,), ())]


def binary_samples(x_maker=make, y_maker=make, ties=False):
    def gen(rng, dtype):
        for xs, ys in BINARY_SHAPES:
            yield Sample((x_maker(rng, xs, dtype), y_maker(rng, ys, dtype)), desc=f"{xs},{ys}")
        # a Python scalar adopts the dtype of the other operand
        yield Sample((x_maker(rng, (2, 3), dtype), scalar(dtype, 2)), desc="scalar y")
        yield Sample((scalar(dtype, 2), y_maker(rng, (3,), dtype)), desc="scalar x")
        if ties:
            x = x_maker(rng, (3, 4), dtype)
            yield Sample((x, with_ties(rng, x, dtype)), vjp=False, desc="ties")
    return gen


def binary_errors(name, kinds="fiu"):
    def gen():
        ok, other = (BOOL, F32) if kinds == "b" else (F32, F64)
        yield ErrorInput(_same(ok, other), {}, TypeError, rf"^{name}: y must have the dtype of x")
        yield ErrorInput((np.zeros((2, 3), ok), np.zeros((4,), ok)), {}, ValueError,
                         rf"^{name}: y must be broadcast-compatible with x")
        if "b" not in kinds:
            yield ErrorInput(_same(BOOL, BOOL), {}, TypeError, rf"^{name}: x must have a dtype")
        if kinds != "b":  # a Python float does not silently truncate to the int operand
            yield ErrorInput((np.zeros(2, I32), 1.5), {}, TypeError,
                             rf"^{name}: y must be int32 like the other operand")
        else:
            yield ErrorInput((np.zeros(2, ok), "a"), {}, InvalidArgumentError,
                             r"Value for attr 'T' of string is not in the list")
        if kinds == "b":
            yield ErrorInput(_same(F32, F32), {}, TypeError, rf"^{name}: x must have a dtype")
    return gen


def _divide_dtype(sample, dtype):
    # TF truediv: int8/int16 divide as float32, int32/int64 as float64
    return {I8: F32, I16: F32, I32: F64, I64: F64}.get(dtype, dtype)


def _bool(sample, dtype):
    return BOOL


# ---- elementwise unary ---------------------------------------------------------------------
UNARY_SHAPES = [(2, 3), (), (0,), (1,), (3, 1, 2)]


def unary_samples(maker=make, extra=()):
    def gen(rng, dtype):
        for s in UNARY_SHAPES:
            yield Sample((maker(rng, s, dtype),), desc=str(s))
        for values in extra:
            if np.dtype(dtype).kind == "f":
                yield Sample((np.asarray(values, dtype),), desc="extreme")
    return gen


def unary_errors(name, arg="x", bad=BOOL, what="must be"):
    def gen():
        yield ErrorInput((np.zeros(3, bad),), {}, TypeError, rf"^{name}: {arg} {what}")
    return gen


def positive(rng, shape, dtype):
    return make(rng, shape, dtype, 0.2, 3.0)


# ---- comparisons / logic -----------------------------------------------------------------
def logical_samples(rng, dtype):
    for xs, ys in BINARY_SHAPES:
        yield Sample((make(rng, xs, BOOL), make(rng, ys, BOOL)), desc=f"{xs},{ys}")
    yield Sample((make(rng, (2, 3), BOOL), True), desc="scalar y")


# ---- clip_by_value -------------------------------------------------------------------------
def clip_samples(rng, dtype):
    lo, hi = (-1, 1) if np.dtype(dtype).kind in "iu" else (-0.5, 0.75)
    yield Sample((make(rng, (2, 3), dtype), lo, hi), desc="scalar bounds")
    yield Sample((make(rng, (2, 3), dtype, -3, 3), make(rng, (3,), dtype, -2, -0.5),
                  make(rng, (3,), dtype, 0.5, 2)), desc="row bounds")
    yield Sample((make(rng, (4, 2), dtype, -3, 3), make(rng, (4, 1), dtype, -2, -0.5),
                  np.asarray(1, dtype)), desc="column and 0-d bounds")
    yield Sample((make(rng, (0, 3), dtype), make(rng, (3,), dtype, -2, -0.5),
                  make(rng, (3,), dtype, 0.5, 2)), desc="empty")
    yield Sample((make(rng, (), dtype, -3, 3), np.asarray(lo, dtype), np.asarray(hi, dtype)),
                 desc="scalar t")


def clip_errors():
    t = np.zeros((2, 3), F32)
    yield ErrorInput((t, np.zeros(4, F32), np.ones(3, F32)), {}, ValueError,
                     r"^clip_by_value: clip_value_min must be broadcast-compatible")
    yield ErrorInput((t, np.zeros((2, 2, 3), F32), np.ones(3, F32)), {}, ValueError,
                     r"^clip_by_value: clip_value_min must broadcast to the shape of t")
    yield ErrorInput((t, np.zeros(3, F32), np.ones(3, F64)), {}, TypeError,
                     r"^clip_by_value: clip_value_max must have the dtype of t")
    yield ErrorInput((np.zeros(3, BOOL), False, True), {}, TypeError, r"^clip_by_value: t must")


# ---- identity, stop_gradient, cast -------------------------------------------------------
def passthrough_samples(rng, dtype):
    for s in UNARY_SHAPES:
        yield Sample((make(rng, s, dtype),), desc=str(s))


def passthrough_errors(name):
    def gen():
        yield ErrorInput((object(),), {}, TypeError, rf"^{name}: input must be")  # str: tf.string
        yield ErrorInput((np.array([1j]),), {}, TypeError, rf"^{name}: input must have a dtype")
    return gen


CAST_TARGETS = (F16, F32, F64, I32, I64, BOOL)


def cast_samples(rng, dtype):
    for target in CAST_TARGETS:
        yield Sample((make(rng, (2, 3), dtype, -3, 3),), {"dtype": target}, vjp=target == F64,
                     desc=target.name)
    yield Sample((make(rng, (0, 2), dtype),), {"dtype": F32}, vjp=False, desc="empty")
    yield Sample((np.asarray([-1.75, -0.5, 0.0, 0.5, 1.75]).astype(dtype),), {"dtype": I32},
                 vjp=False, desc="truncates toward zero")


def cast_errors():
    yield ErrorInput((np.zeros(2, F32),), {"dtype": "complex64"}, TypeError, r"^cast: dtype")


# ---- matmul --------------------------------------------------------------------------------
def matmul_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype)
    yield Sample((m(2, 3), m(3, 4)))
    yield Sample((m(1, 1), m(1, 1)), desc="1x1")
    yield Sample((m(2, 2, 3), m(3, 4)), desc="batch x matrix")
    yield Sample((m(1, 3, 2), m(4, 2, 5)), desc="broadcast batch")
    yield Sample((m(3, 2), m(3, 4)), {"transpose_a": True})
    yield Sample((m(2, 3), m(4, 3)), {"transpose_b": True})
    yield Sample((m(2, 3, 2), m(2, 4, 3)), {"transpose_a": True, "transpose_b": True})
    yield Sample((m(2, 0), m(0, 3)), desc="K=0")
    yield Sample((m(0, 3), m(3, 2)), desc="M=0")


def matmul_errors():
    yield ErrorInput((np.zeros((2, 3), F32), np.zeros((4, 2), F32)), {}, ValueError,
                     r"^matmul: b must have 3 rows")
    yield ErrorInput((np.zeros(3, F32), np.zeros((3, 2), F32)), {}, ValueError,
                     r"^matmul: a must have rank >= 2")
    yield ErrorInput((np.zeros((2, 3), F32), np.zeros((3, 2), F64)), {}, TypeError,
                     r"^matmul: b must have the dtype of a")
    yield ErrorInput((np.zeros((2, 2), BOOL), np.zeros((2, 2), BOOL)), {}, TypeError,
                     r"^matmul: a must be")
    yield ErrorInput((np.zeros((2, 2, 3), F32), np.zeros((3, 3, 2), F32)), {}, ValueError,
                     r"^matmul: b's batch dimensions")


# ---- reductions -----------------------------------------------------------------------------
def reduction_samples(ties=False):
    def gen(rng, dtype):
        x = make(rng, (2, 3, 4), dtype, -5, 5)
        for axis in (None, 0, -1, [0, 2], (1,)):
            yield Sample((x,), {"axis": axis}, desc=f"axis={axis}")
        yield Sample((x,), {"axis": 1, "keepdims": True}, desc="keepdims")
        yield Sample((x,), {"axis": None, "keepdims": True}, desc="keepdims all")
        yield Sample((make(rng, (), dtype),), {}, desc="scalar")
        yield Sample((make(rng, (1,), dtype),), {"axis": 0}, desc="length 1")
        for axis in (0, 1, None):
            yield Sample((make(rng, (0, 3), dtype),), {"axis": axis}, desc=f"empty axis={axis}")
        if ties:
            t = np.asarray([[1, 3, 3], [2, 2, 0]], dtype)
            yield Sample((t,), {"axis": 1}, vjp=False, desc="ties")
    return gen


def reduction_errors(name):
    def gen():
        x = np.zeros((2, 3), F32)
        yield ErrorInput((x,), {"axis": 2}, ValueError, rf"^{name}: axis must be in \[-2, 2\)")
        yield ErrorInput((x,), {"axis": [0, -2]}, ValueError, rf"^{name}: axis must not repeat")
        yield ErrorInput((x,), {"axis": 0.5}, TypeError, rf"^{name}: axis must be an int")
        yield ErrorInput((np.zeros(3, BOOL),), {}, TypeError, rf"^{name}: input_tensor must be")
    return gen


def argreduce_samples(rng, dtype):
    x = make(rng, (2, 3, 4), dtype, -5, 5)
    for axis in (0, 1, -1):
        yield Sample((x,), {"axis": axis}, desc=f"axis={axis}")
    yield Sample((make(rng, (5,), dtype),), {}, desc="default axis")
    yield Sample((make(rng, (1,), dtype),), {"axis": 0}, desc="length 1")
    yield Sample((x,), {"axis": 2, "output_type": I32}, desc="int32")
    yield Sample((np.asarray([[1, 3, 3], [2, 0, 2]], dtype),), {"axis": 1}, desc="ties")
    yield Sample((make(rng, (0, 3), dtype),), {"axis": 1}, desc="empty other axis")


def argreduce_errors(name):
    def gen():
        yield ErrorInput((np.zeros((2, 3), F32),), {"axis": 2}, ValueError, rf"^{name}: axis")
        yield ErrorInput((np.zeros((0, 3), F32),), {"axis": 0}, ValueError,
                         rf"^{name}: input must not be empty")
        yield ErrorInput((np.zeros(3, F32),), {"output_type": F32}, TypeError,
                         rf"^{name}: output_type must be int32 or int64")
        yield ErrorInput((np.float32(1.0),), {}, ValueError, rf"^{name}: input must have rank")
    return gen


def _argreduce_dtype(sample, dtype):
    return sample.kwargs.get("output_type", I64)


# ---- shape ops ----------------------------------------------------------------------------
def reshape_samples(rng, dtype):
    x = make(rng, (2, 3), dtype)
    for shape in ((3, 2), (-1,), (6, 1), (1, -1, 3), [2, 3]):
        yield Sample((x, shape), desc=str(shape))
    yield Sample((make(rng, (1,), dtype), ()), desc="to scalar")
    yield Sample((make(rng, (), dtype), (1, 1)), desc="from scalar")
    yield Sample((make(rng, (0, 3), dtype), (3, 0)), desc="empty")
    yield Sample((make(rng, (0, 3), dtype), (-1, 3)), desc="empty with -1")


def reshape_errors():
    x = np.zeros((2, 3), F32)
    yield ErrorInput((x, (4,)), {}, ValueError, r"^reshape: shape \[4\] must have 6 elements")
    yield ErrorInput((x, (-1, -1)), {}, ValueError, r"^reshape: shape must have at most one -1")
    yield ErrorInput((x, (2.0, 3)), {}, TypeError, r"^reshape: shape must be a list of ints")


def transpose_samples(rng, dtype):
    yield Sample((make(rng, (2, 3), dtype),), desc="default")
    yield Sample((make(rng, (2, 3, 4), dtype), (1, 0, 2)), desc="perm")
    yield Sample((make(rng, (2, 3, 4), dtype),), {"perm": [2, 0, 1]}, desc="perm kw")
    yield Sample((make(rng, (), dtype),), desc="scalar")
    yield Sample((make(rng, (0, 2), dtype),), desc="empty")


def transpose_errors():
    yield ErrorInput((np.zeros((2, 3), F32), (0, 0)), {}, ValueError, r"^transpose: perm must be")
    yield ErrorInput((np.zeros((2, 3), F32), (0, 1, 2)), {}, ValueError, r"^transpose: perm")


def expand_dims_samples(rng, dtype):
    for shape, axis in (((2, 3), 0), ((2, 3), -1), ((2, 3), 1), ((), 0), ((0,), 1), ((3,), -2)):
        yield Sample((make(rng, shape, dtype), axis), desc=f"{shape} axis={axis}")


def expand_dims_errors():
    yield ErrorInput((np.zeros(2, F32), 2), {}, ValueError, r"^expand_dims: axis must be in")
    yield ErrorInput((np.zeros(2, F32), 1.5), {}, TypeError, r"^expand_dims: axis must be an int")


def squeeze_samples(rng, dtype):
    x = make(rng, (1, 3, 1), dtype)
    yield Sample((x,), desc="all")
    yield Sample((x, [0]), desc="axis [0]")
    yield Sample((x,), {"axis": -1}, desc="axis -1")
    yield Sample((make(rng, (1, 1), dtype),), desc="to scalar")
    yield Sample((make(rng, (0, 1), dtype),), desc="empty")


def squeeze_errors():
    yield ErrorInput((np.zeros((1, 3), F32), 1), {}, ValueError, r"^squeeze: axis 1 must have")
    yield ErrorInput((np.zeros((1, 3), F32), 2), {}, ValueError, r"^squeeze: axis must be in")


def concat_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype)
    yield Sample(([m(2, 3), m(1, 3)], 0))
    yield Sample(([m(2, 1), m(2, 3), m(2, 0)], -1), desc="three, one empty")
    yield Sample(([m(0, 3), m(2, 3)], 0), desc="empty first")
    yield Sample(([m(3)], 0), desc="one tensor")
    yield Sample(([m(2, 2, 1), m(2, 2, 2)],), {"axis": 2}, desc="axis kw")


def concat_errors():
    a = np.zeros((2, 3), F32)
    yield ErrorInput(([a, np.zeros((2, 4), F32)], 0), {}, ValueError,
                     r"^concat: values\[1\] must match values\[0\]")
    yield ErrorInput(([a, np.zeros((2, 3), F64)], 0), {}, TypeError,
                     r"^concat: values\[1\] must have the dtype of values\[0\]")
    yield ErrorInput(([np.float32(1), np.float32(2)], 0), {}, ValueError,
                     r"^concat: values must have rank >= 1")
    yield ErrorInput(([a, a], 2), {}, ValueError, r"^concat: axis must be in")
    yield ErrorInput((a, 0), {}, TypeError, r"^concat: values must be a list")


def stack_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype)
    yield Sample(([m(2, 3), m(2, 3), m(2, 3)],), desc="axis 0")
    yield Sample(([m(2, 3), m(2, 3)],), {"axis": 1})
    yield Sample(([m(2, 3), m(2, 3)], -1), desc="axis -1")
    yield Sample(([m(), m()],), desc="scalars")
    yield Sample(([m(0, 2), m(0, 2)],), {"axis": 1}, desc="empty")
    yield Sample(([m(3)],), desc="one tensor")


def stack_errors():
    a = np.zeros((2, 3), F32)
    yield ErrorInput(([a, np.zeros((3, 2), F32)],), {}, ValueError,
                     r"^stack: values\[1\] must have the shape of values\[0\]")
    yield ErrorInput(([a, a],), {"axis": 3}, ValueError, r"^stack: axis must be in")
    yield ErrorInput(([],), {}, ValueError, r"^stack: values must be a non-empty list")


def split_samples(rng, dtype):
    x = make(rng, (6, 4), dtype)
    yield Sample((x, 3), desc="3 equal parts")
    yield Sample((x, [1, 2, -1]), {"axis": 1}, desc="sizes with -1")
    yield Sample((x, [0, 4]), {"axis": 1}, desc="an empty part")
    yield Sample((make(rng, (5,), dtype), 1), desc="one part")
    yield Sample((x, [2, 4], -2), desc="axis -2")


def split_errors():
    yield ErrorInput((np.zeros(4, F32), 3), {}, ValueError,
                     r"^split: num_or_size_splits must evenly divide")
    yield ErrorInput((np.zeros(4, F32), [1, 1]), {}, ValueError,
                     r"^split: num_or_size_splits must add up")
    yield ErrorInput((np.zeros((4, 2), F32), 2), {"axis": 2}, ValueError, r"^split: axis must be")
    yield ErrorInput((np.float32(1.0), 1), {}, ValueError, r"^split: value must have rank")


# ---- indexing -----------------------------------------------------------------------------
def gather_samples(rng, dtype):
    p = make(rng, (5, 3), dtype)
    yield Sample((p, np.asarray([0, 2, 2, 4], I32)), desc="duplicates")
    yield Sample((p, np.asarray([[0, 1], [1, 1]], I64)), {"axis": 1}, desc="axis 1, 2-D ids")
    yield Sample((p, np.zeros(0, I32)), desc="no indices")
    yield Sample((make(rng, (5,), dtype), np.asarray(3, I64)), desc="0-d index")
    yield Sample((make(rng, (4, 2, 3), dtype), np.asarray([2, 0, 2], I32)), {"axis": -1},
                 desc="axis -1")
    yield Sample((make(rng, (1,), dtype), np.asarray([0, 0, 0], I32)), desc="length 1")
    yield Sample((make(rng, (0, 3), dtype), np.zeros((2, 0), I32)), desc="empty params")


def gather_errors():
    p = np.zeros((4, 3), F32)
    yield ErrorInput((p, np.asarray([0, 4], I32)), {}, ValueError,
                     r"^gather: indices must be in \[0, 4\), got 4")
    yield ErrorInput((p, np.asarray([-1], I64)), {}, ValueError,
                     r"^gather: indices must be in \[0, 4\), got -1")
    yield ErrorInput((p, np.asarray([0.0], F32)), {}, TypeError, r"^gather: indices must be an")
    yield ErrorInput((np.float32(1), np.asarray([0], I32)), {}, ValueError,
                     r"^gather: params must have rank")
    yield ErrorInput((p, np.asarray([0], I32)), {"axis": 2}, ValueError, r"^gather: axis must be")


def getitem(tensor, key):
    """``Tensor.__getitem__`` as a function of (tensor, key)."""
    return tf.convert_to_tensor(tensor)[key]


def getitem_samples(rng, dtype):
    x = make(rng, (4, 5), dtype)
    keys = [1, -1, slice(1, 3), (slice(None), 2), (Ellipsis, None), np.asarray([0, 2, 2]),
            (slice(None, None, -1),), slice(2, 2), (np.asarray([3, 0, 3]), slice(1, 4)),
            (1, np.asarray([4, 4])), [0, 0, 3], (slice(None), slice(None, None, 2))]
    for key in keys:
        yield Sample((x, key), desc=repr(key))
    yield Sample((x, x > 0), desc="bool mask")
    yield Sample((make(rng, (), dtype), Ellipsis), desc="scalar[...]")
    yield Sample((make(rng, (3,), dtype), None), desc="new axis")
    yield Sample((make(rng, (0, 2), dtype), (slice(None), 1)), desc="empty")


def getitem_errors():
    x = np.zeros((4, 5), F32)
    yield ErrorInput((x, 10), {}, ValueError, r"^__getitem__: key out of range")
    yield ErrorInput((x, (0, 5)), {}, ValueError, r"^__getitem__: key out of range")
    yield ErrorInput((x, 1.5), {}, TypeError, r"^__getitem__: key must be")
    yield ErrorInput((x, np.asarray([0.5])), {}, TypeError, r"^__getitem__: key arrays must be")


def one_hot_samples(rng, dtype):
    yield Sample((np.asarray([0, 2, 1, 1], dtype), 3), desc="duplicates")
    yield Sample((np.asarray([-1, 3, 1], dtype), 3), desc="out of range gives off rows")
    yield Sample((make(rng, (2, 3), dtype, 0, 3), 4), {"axis": 0}, desc="axis 0")
    yield Sample((make(rng, (2, 3), dtype, 0, 3), 4), {"axis": 1}, desc="axis 1")
    yield Sample((make(rng, (3,), dtype, 0, 2), 3),
                 {"on_value": 5.0, "off_value": -1.0, "dtype": F64}, desc="on/off, float64")
    yield Sample((make(rng, (3,), dtype, 0, 2), 3),
                 {"on_value": np.asarray(7, I32), "off_value": np.asarray(2, I32)}, desc="int")
    yield Sample((np.zeros(0, dtype), 3), desc="no indices")
    yield Sample((np.asarray(1, dtype), 2), desc="scalar index")
    yield Sample((np.asarray([0, 1], dtype), 0), desc="depth 0")


def _one_hot_dtype(sample, dtype):
    kw = sample.kwargs
    if "dtype" in kw:
        return kw["dtype"]
    for v in (kw.get("on_value"), kw.get("off_value")):
        if hasattr(v, "dtype"):
            return v.dtype
    return F32


def one_hot_errors():
    yield ErrorInput((np.asarray([0.0]), 3), {}, TypeError, r"^one_hot: indices must be an")
    yield ErrorInput((np.asarray([0]), -1), {}, ValueError, r"^one_hot: depth must be")
    yield ErrorInput((np.asarray([0]), 3), {"axis": 5}, ValueError, r"^one_hot: axis must be")
    yield ErrorInput((np.asarray([0]), 3), {"on_value": np.asarray(1.0, F32),
                                            "off_value": np.asarray(0.0, F64)},
                     TypeError, r"^one_hot: off_value must have (the )?dtype")


def where_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype)
    yield Sample((make(rng, (2, 3), BOOL), m(2, 3), m(2, 3)))
    yield Sample((make(rng, (3,), BOOL), m(2, 3), m()), desc="broadcast, 0-d y")
    yield Sample((make(rng, (2, 1), BOOL), m(1, 3), m(2, 3)), desc="all broadcast")
    yield Sample((make(rng, (0, 3), BOOL), m(0, 3), m(3)), desc="empty")
    yield Sample((make(rng, (2, 3), BOOL), m(2, 3), scalar(dtype, 1)), desc="scalar y")
    yield Sample((make(rng, (2, 3), BOOL), scalar(dtype, 1), m(2, 3)), desc="scalar x")
    yield Sample((make(rng, (2, 3), BOOL),), desc="coordinates")
    yield Sample((np.zeros((0, 2), BOOL),), desc="coordinates of nothing")


def _where_dtype(sample, dtype):
    return I64 if len(sample.args) == 1 else dtype


def where_errors():
    c = np.zeros((2, 3), BOOL)
    x = np.zeros((2, 3), F32)
    yield ErrorInput((x, x, x), {}, TypeError, r"^where: condition must be a bool")
    yield ErrorInput((c, x, np.zeros((2, 3), F64)), {}, TypeError,
                     r"^where: y must have the dtype of x")
    yield ErrorInput((c, x, np.zeros((4,), F32)), {}, ValueError, r"^where: y must be broadcast")
    yield ErrorInput((np.zeros(4, BOOL), x, x), {}, ValueError,
                     r"^where: condition must be broadcast")
    yield ErrorInput((c, x), {}, ValueError, r"^where: x and y must both be given")
    yield ErrorInput((c, np.zeros((2, 3), I32), 1.5), {}, TypeError,
                     r"^where: y must be convertible to int32")


# ---- creation -----------------------------------------------------------------------------
CREATION_SHAPES = [(2, 3), (), (0,), [4], 3]


def zeros_ones_samples(rng, dtype):
    for shape in CREATION_SHAPES:
        yield Sample((shape,), {"dtype": dtype}, desc=repr(shape))
    if dtype == F32:
        yield Sample(((2, 2),), desc="default float32")


def zeros_ones_errors(name):
    def gen():
        yield ErrorInput(((2, -1),), {}, ValueError, rf"^{name}: shape must not have negative")
        yield ErrorInput(((2.0, 1),), {}, TypeError, rf"^{name}: shape must be a list of ints")
        yield ErrorInput(((2,),), {"dtype": "complex64"}, TypeError, rf"^{name}: dtype")
    return gen


def like_samples(rng, dtype):
    for s in UNARY_SHAPES:
        yield Sample((make(rng, s, dtype),), desc=str(s))
    yield Sample((make(rng, (2, 2), dtype),), {"dtype": I32}, desc="dtype int32")
    yield Sample((make(rng, (2, 2), dtype),), {"dtype": "float64"}, desc="dtype name")


def _like_dtype(sample, dtype):
    return sample.kwargs.get("dtype") or dtype


def like_errors(name):
    def gen():
        yield ErrorInput((object(),), {}, TypeError, rf"^{name}: input must be")
        yield ErrorInput((np.zeros(2, F32),), {"dtype": "complex64"}, TypeError,
                         rf"^{name}: dtype")
    return gen


def fill_samples(rng, dtype):
    v = make(rng, (), dtype)
    for dims in CREATION_SHAPES:
        yield Sample((dims, v), desc=repr(dims))
    if dtype == F32:
        yield Sample(((2,), 1.5), desc="Python float")
    if dtype == I32:
        yield Sample(((2,), 7), desc="Python int")


def fill_errors():
    yield ErrorInput(((2,), np.zeros(2, F32)), {}, ValueError, r"^fill: value must be a scalar")
    yield ErrorInput(((2, -1), np.float32(1)), {}, ValueError, r"^fill: dims must not have")
    yield ErrorInput(((2.5,), np.float32(1)), {}, TypeError, r"^fill: dims must be a list")


def range_samples(rng, dtype):
    if dtype == I32:
        for args in ((5,), (1, 7, 2), (5, 1, -1), (3, 3), (0, 10, 3), (0,)):
            yield Sample(args, desc=repr(args))
    elif dtype == F32:
        for args in ((0.5, 2.0, 0.5), (1.0, 0.0, -0.25), (0, 1, 0.3), (2.5,)):
            yield Sample(args, desc=repr(args))
    yield Sample((1, 7, 2), {"dtype": dtype}, desc="dtype kw")
    yield Sample((4,), {"dtype": dtype}, desc="limit only, dtype kw")


def _range_dtype(sample, dtype):
    if "dtype" in sample.kwargs:
        return sample.kwargs["dtype"]
    return F32 if any(isinstance(a, float) for a in sample.args) else I32


def range_errors():
    yield ErrorInput((0, 5, 0), {}, ValueError, r"^range: delta must not be 0")
    yield ErrorInput((-4,), {}, tf.errors.InvalidArgumentError,
                     r"^range: limit must be >= start when delta > 0, got start 0 and limit -4")
    yield ErrorInput((5, 1), {}, tf.errors.InvalidArgumentError, r"^range: limit must be >= start")
    yield ErrorInput((1, 5, -1), {}, tf.errors.InvalidArgumentError,
                     r"^range: limit must be <= start when delta < 0")
    yield ErrorInput(("a",), {}, TypeError, r"^range: limit must be a number")
    yield ErrorInput(("a", 3), {}, TypeError, r"^range: start must be a number")
    yield ErrorInput((0, 3), {"dtype": "complex64"}, TypeError, r"^range: dtype")


def constant_samples(rng, dtype):
    yield Sample((make(rng, (2, 3), dtype),), desc="array")
    yield Sample((make(rng, (2, 3), dtype),), {"dtype": F64}, desc="array to float64")
    yield Sample((make(rng, (4,), dtype),), {"shape": (2, 2)}, desc="reshaped")
    yield Sample((make(rng, (), dtype),), {"shape": (2, 3)}, desc="broadcast scalar")
    yield Sample((make(rng, (0, 2), dtype),), desc="empty")
    if dtype == F32:
        yield Sample((1.5,), {"shape": (2, 2)}, desc="Python float")
        yield Sample(([[1.0, 2.0], [3.0, 4.5]],), desc="nested list")
    if dtype == I32:
        yield Sample(([[1, 2], [3, 4]],), desc="int list")
        yield Sample((3,), desc="Python int")


def _constant_dtype(sample, dtype):
    if sample.kwargs.get("dtype") is not None:
        return sample.kwargs["dtype"]
    v = sample.args[0]
    if hasattr(v, "dtype"):
        return v.dtype
    return F32 if np.asarray(v).dtype.kind == "f" else I32


def constant_errors():
    yield ErrorInput(([1.5],), {"dtype": I32}, TypeError, r"^constant: value must be")
    yield ErrorInput((np.zeros(3, F32),), {"shape": (2, 2)}, TypeError, r"^constant: value")
    yield ErrorInput((object(),), {}, TypeError, r"^constant: value must be")


def convert_samples(rng, dtype):
    yield Sample((make(rng, (2, 3), dtype),), desc="array")
    yield Sample((make(rng, (2, 3), dtype),), {"dtype": dtype}, desc="same dtype")
    yield Sample((make(rng, (), dtype),), desc="0-d")
    yield Sample((make(rng, (0,), dtype),), desc="empty")
    if dtype == F32:
        yield Sample(([1.5, -2.0],), desc="list")
        yield Sample((2.5,), desc="Python float")
    if dtype == I32:
        yield Sample(([[1, 2], [3, 4]],), desc="int list")


def convert_errors():
    yield ErrorInput((object(),), {}, TypeError, r"^convert_to_tensor: value must be")
    yield ErrorInput((tf.constant(np.zeros(2, F32)),), {"dtype": I32}, TypeError,
                     r"^convert_to_tensor: value must have dtype int32")
    yield ErrorInput(([1.5],), {"dtype": I32}, TypeError, r"^convert_to_tensor: value must be")
    yield ErrorInput((np.zeros(2, F32),), {"dtype": "complex64"}, TypeError,
                     r"^convert_to_tensor: dtype")


# ---- nn ---------------------------------------------------------------------------------------
def leaky_samples(rng, dtype):
    for s in UNARY_SHAPES:
        yield Sample((make(rng, s, dtype),), desc=str(s))
    yield Sample((make(rng, (2, 3), dtype),), {"alpha": 0.1}, desc="alpha 0.1")
    yield Sample((make(rng, (2, 3), dtype), 0.5), desc="alpha positional")


def leaky_errors():
    yield ErrorInput((np.zeros(2, I32),), {}, TypeError, r"^leaky_relu: features must be")
    yield ErrorInput((np.zeros(2, F32),), {"alpha": "x"}, TypeError,
                     r"^leaky_relu: alpha must be a number")


def softmax_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype, -3, 3)
    yield Sample((m(2, 5),), desc="default axis")
    yield Sample((m(2, 5),), {"axis": 0})
    yield Sample((m(5),), desc="1-D")
    yield Sample((m(3, 1),), desc="one class")
    yield Sample((m(0, 4),), desc="no rows")
    yield Sample((m(2, 3, 4), 1), desc="axis 1 positional")
    if np.dtype(dtype) != F16:
        yield Sample((np.asarray([[1000.0, 0.0, -1000.0]], dtype),), desc="large logits")


def softmax_errors(name):
    def gen():
        yield ErrorInput((np.zeros((2, 3), I32),), {}, TypeError, rf"^{name}: logits must be")
        yield ErrorInput((np.float32(1),), {}, ValueError, rf"^{name}: logits must have rank")
        yield ErrorInput((np.zeros((2, 3), F32),), {"axis": 2}, ValueError,
                         rf"^{name}: axis must be in")
    return gen


def sigmoid_xent_samples(rng, dtype):
    for s in UNARY_SHAPES:
        yield Sample((make(rng, s, dtype, 0, 1), make(rng, s, dtype, -4, 4)), desc=str(s))
    if np.dtype(dtype) != F16:
        yield Sample((np.asarray([0.0, 1.0, 0.25], dtype), np.asarray([-60.0, 60.0, 30.0], dtype)),
                     desc="large logits")


def sigmoid_xent_errors():
    n = "sigmoid_cross_entropy_with_logits"
    yield ErrorInput((np.zeros(3, F32), np.zeros(4, F32)), {}, ValueError,
                     rf"^{n}: labels must have the shape of logits")
    yield ErrorInput((np.zeros(3, F64), np.zeros(3, F32)), {}, TypeError,
                     rf"^{n}: labels must have the dtype of logits")
    yield ErrorInput((np.zeros(3, I32), np.zeros(3, I32)), {}, TypeError, rf"^{n}: logits must be")
    yield ErrorInput((np.zeros(3, F32),), {}, ValueError, rf"^{n}: both labels and logits")


def _probabilities(rng, shape, dtype, axis=-1):
    p = rng.dirichlet(np.ones(shape[axis]), size=int(np.prod(shape)) // max(shape[axis], 1))
    p = p.reshape(tuple(s for i, s in enumerate(shape) if i != axis % len(shape)) + (shape[axis],))
    return np.moveaxis(p, -1, axis).astype(dtype)


def softmax_xent_samples(rng, dtype):
    for shape in ((2, 5), (5,), (3, 1), (2, 3, 4)):
        yield Sample((_probabilities(rng, shape, dtype), make(rng, shape, dtype, -3, 3)),
                     desc=str(shape))
    yield Sample((_probabilities(rng, (4, 3), dtype, 0), make(rng, (4, 3), dtype, -3, 3)),
                 {"axis": 0}, desc="axis 0")
    yield Sample((np.zeros((0, 4), dtype), np.zeros((0, 4), dtype)), desc="no rows")
    # labels that are not distributions: the loss is still defined, but TF's gradient
    # (softmax - labels) assumes rows summing to 1, so no VJP check
    yield Sample((make(rng, (2, 3), dtype, 0, 1), make(rng, (2, 3), dtype, -3, 3)),
                 vjp=False, desc="unnormalised labels")


def softmax_xent_errors():
    n = "softmax_cross_entropy_with_logits"
    yield ErrorInput((np.zeros((2, 3), F32), np.zeros((2, 4), F32)), {}, ValueError,
                     rf"^{n}: labels must have the shape of logits")
    yield ErrorInput((np.float32(0), np.float32(0)), {}, ValueError,
                     rf"^{n}: logits must have rank")
    yield ErrorInput((np.zeros((2, 3), F32), np.zeros((2, 3), F32)), {"axis": 2}, ValueError,
                     rf"^{n}: axis must be in")
    yield ErrorInput((np.zeros((2, 0), F32), np.zeros((2, 0), F32)), {}, ValueError,
                     rf"^{n}: logits must have at least one class")
    yield ErrorInput((np.zeros(3, F64), np.zeros(3, F32)), {}, TypeError,
                     rf"^{n}: labels must have the dtype of logits")


def sparse_xent_samples(rng, dtype):
    yield Sample((np.asarray([0, 4, 4, 1], I32), make(rng, (4, 5), dtype, -3, 3)),
                 desc="duplicates")
    yield Sample((np.asarray(2, I64), make(rng, (5,), dtype, -3, 3)), desc="1-D logits")
    yield Sample((make(rng, (2, 3), I64, 0, 3), make(rng, (2, 3, 4), dtype, -3, 3)), desc="3-D")
    yield Sample((np.zeros(0, I32), np.zeros((0, 4), dtype)), desc="no rows")
    yield Sample((np.zeros(3, I32), make(rng, (3, 1), dtype)), desc="one class")


def sparse_xent_errors():
    n = "sparse_softmax_cross_entropy_with_logits"
    logits = np.zeros((2, 3), F32)
    yield ErrorInput((np.asarray([0, 3], I32), logits), {}, ValueError,
                     rf"^{n}: labels must be in \[0, 3\), got 3")
    yield ErrorInput((np.asarray([-1, 0], I64), logits), {}, ValueError,
                     rf"^{n}: labels must be in \[0, 3\), got -1")
    yield ErrorInput((np.asarray([0.0, 1.0], F32), logits), {}, TypeError,
                     rf"^{n}: labels must be an integer")
    yield ErrorInput((np.asarray([0, 1, 2], I32), logits), {}, ValueError,
                     rf"^{n}: labels must have shape \[2\]")
    yield ErrorInput((np.asarray([0, 1], I32), np.zeros((2, 3), I32)), {}, TypeError,
                     rf"^{n}: logits must be a floating-point")
    yield ErrorInput((np.zeros(2, I32), np.zeros((2, 0), F32)), {}, ValueError,
                     rf"^{n}: logits must have at least one class")


def bias_add_samples(rng, dtype):
    def m(*shape):
        return make(rng, shape, dtype)
    yield Sample((m(2, 3), m(3)))
    yield Sample((m(2, 3, 4, 5), m(3)), {"data_format": "NCHW"}, desc="NCHW")
    yield Sample((m(2, 3, 4), m(4)), {"data_format": "N...C"}, desc="N...C")
    yield Sample((m(0, 3), m(3)), desc="no rows")
    yield Sample((m(1, 1), m(1)), desc="1x1")


def bias_add_errors():
    v = np.zeros((2, 3), F32)
    yield ErrorInput((v, np.zeros(4, F32)), {}, ValueError, r"^bias_add: bias must have 3 elements")
    yield ErrorInput((v, np.zeros((1, 3), F32)), {}, ValueError, r"^bias_add: bias must be 1-D")
    yield ErrorInput((np.zeros(3, F32), np.zeros(3, F32)), {}, ValueError,
                     r"^bias_add: value must have rank >= 2")
    yield ErrorInput((v, np.zeros(3, F32)), {"data_format": "HWNC"}, ValueError,
                     r"^bias_add: data_format must be")
    yield ErrorInput((v, np.zeros(3, F64)), {}, TypeError, r"^bias_add: bias must have the dtype")


def l2_loss_samples(rng, dtype):
    for s in ((2, 3), (), (0,), (5,)):
        yield Sample((make(rng, s, dtype),), desc=str(s))


# ---- the table -----------------------------------------------------------------------------
def _binary(name, fn, ref, dtypes=NUMERIC, diff=(0, 1), samples=None, errors=None, **kw):
    return OpInfo(name, fn, ref, samples or binary_samples(), errors or binary_errors(name),
                  dtypes=dtypes, diff_args=diff, elementwise=2, tf_name=f"math.{name}", **kw)


def pow_errors():
    yield from binary_errors("pow")()
    yield ErrorInput((np.array([2, 3], I32), np.array([1, -1], I32)), {}, ValueError,
                     r"^pow: y must be non-negative for integer inputs")


def _unary(name, fn, ref, dtypes=FLOATS, maker=make, diff=(0,), extra=(), **kw):
    kinds = "float" if dtypes == FLOATS else "numeric"
    errors = unary_errors(name, bad=I32 if kinds == "float" else BOOL,
                          what="must be a floating-point" if kinds == "float" else "must be")
    return OpInfo(name, fn, ref, unary_samples(maker, extra), errors, dtypes=dtypes,
                  diff_args=diff, elementwise=1, tf_name=f"math.{name}", **kw)


def _comparison(name, fn, ref, dtypes=FLOATS + (I32, BOOL), kinds="fiub"):
    return OpInfo(name, fn, ref, binary_samples(ties=True), binary_errors(name, kinds),
                  dtypes=dtypes, out_dtype=_bool, elementwise=2, tf_name=f"math.{name}")


_nonzero = make_away
OPS: list[OpInfo] = [
    # math: arithmetic
    _binary("add", tf.add, rmath.add),
    _binary("subtract", tf.subtract, rmath.subtract),
    _binary("multiply", tf.multiply, rmath.multiply),
    _binary("divide", tf.divide, rmath.divide, samples=binary_samples(y_maker=_nonzero),
            dtypes=NUMERIC + (I8, I16), out_dtype=_divide_dtype),
    _binary("pow", tf.pow, rmath.pow,  # integers to negative powers are an error in TF
            samples=binary_samples(x_maker=lambda r, s, d: make(r, s, d, 0.5, 3),
                                   y_maker=lambda r, s, d: make(r, s, d, -2 * (d.kind == "f"), 2)),
            errors=pow_errors),
    _binary("maximum", tf.maximum, rmath.maximum, samples=binary_samples(ties=True)),
    _binary("minimum", tf.minimum, rmath.minimum, samples=binary_samples(ties=True)),
    _binary("floordiv", tf.floordiv, rmath.floordiv, diff=(),
            samples=binary_samples(x_maker=lambda r, s, d: make(r, s, d, -9, 9),
                                   y_maker=_nonzero)),
    _binary("floormod", tf.floormod, rmath.floormod,
            samples=binary_samples(x_maker=lambda r, s, d: make(r, s, d, -9, 9),
                                   y_maker=_nonzero)),
    # math: unary
    _unary("negative", tf.negative, rmath.negative, dtypes=NUMERIC),
    _unary("square", tf.square, rmath.square, dtypes=NUMERIC),
    _unary("abs", tf.abs, rmath.abs, dtypes=NUMERIC, maker=make_away),
    _unary("sign", tf.sign, rmath.sign, dtypes=NUMERIC, maker=make_away),
    _unary("sqrt", tf.sqrt, rmath.sqrt, maker=positive),
    _unary("rsqrt", tf.math.rsqrt, rmath.rsqrt, maker=positive),
    _unary("exp", tf.exp, rmath.exp),
    _unary("log", tf.math.log, rmath.log, maker=positive),
    _unary("tanh", tf.tanh, rmath.tanh, extra=([-30.0, 30.0],)),
    _unary("sigmoid", tf.sigmoid, rmath.sigmoid, extra=([-60.0, -30.0, 30.0, 60.0],)),
    # comparisons and logic
    _comparison("equal", tf.equal, rmath.equal),
    _comparison("not_equal", tf.not_equal, rmath.not_equal),
    _comparison("less", tf.less, rmath.less, FLOATS_I32, "fiu"),
    _comparison("less_equal", tf.less_equal, rmath.less_equal, FLOATS_I32, "fiu"),
    _comparison("greater", tf.greater, rmath.greater, FLOATS_I32, "fiu"),
    _comparison("greater_equal", tf.greater_equal, rmath.greater_equal, FLOATS_I32, "fiu"),
    OpInfo("logical_and", tf.logical_and, rmath.logical_and, logical_samples,
           binary_errors("logical_and", "b"), dtypes=(BOOL,)),
    OpInfo("logical_or", tf.logical_or, rmath.logical_or, logical_samples,
           binary_errors("logical_or", "b"), dtypes=(BOOL,)),
    OpInfo("logical_not", tf.logical_not, rmath.logical_not, passthrough_samples,
           unary_errors("logical_not", bad=F32, what="must be a bool"), dtypes=(BOOL,)),
    # cast, clip, identity
    OpInfo("clip_by_value", tf.clip_by_value, rmath.clip_by_value, clip_samples, clip_errors,
           dtypes=NUMERIC, diff_args=(0, 1, 2), elementwise=3, tf_name="clip_by_value"),
    OpInfo("identity", tf.identity, rmath.identity, passthrough_samples,
           passthrough_errors("identity"), dtypes=FLOATS + (I32, BOOL), diff_args=(0,),
           elementwise=1, tf_name="identity"),
    OpInfo("stop_gradient", tf.stop_gradient, rmath.stop_gradient, passthrough_samples,
           passthrough_errors("stop_gradient"), dtypes=FLOATS + (I32, BOOL), elementwise=1,
           tf_name="stop_gradient"),
    OpInfo("cast", tf.cast, rmath.cast, cast_samples, cast_errors, dtypes=FLOATS + (I32, BOOL),
           diff_args=(0,), out_dtype=lambda s, d: s.kwargs["dtype"]),
    # matmul
    OpInfo("matmul", tf.matmul, rmatmul.matmul, matmul_samples, matmul_errors,
           dtypes=FLOATS_I32, diff_args=(0, 1), tol={F16: (1e-2, 1e-2)}),
    # reductions
    OpInfo("reduce_sum", tf.reduce_sum, rreduction.reduce_sum, reduction_samples(),
           reduction_errors("reduce_sum"), dtypes=FLOATS_I32, diff_args=(0,),
           tol={F16: (5e-3, 2e-2)}),
    OpInfo("reduce_mean", tf.reduce_mean, rreduction.reduce_mean, reduction_samples(),
           reduction_errors("reduce_mean"), dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("reduce_max", tf.reduce_max, rreduction.reduce_max, reduction_samples(ties=True),
           reduction_errors("reduce_max"), dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("reduce_min", tf.reduce_min, rreduction.reduce_min, reduction_samples(ties=True),
           reduction_errors("reduce_min"), dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("argmax", tf.argmax, rreduction.argmax, argreduce_samples, argreduce_errors("argmax"),
           dtypes=FLOATS_I32, out_dtype=_argreduce_dtype),
    OpInfo("argmin", tf.argmin, rreduction.argmin, argreduce_samples, argreduce_errors("argmin"),
           dtypes=FLOATS_I32, out_dtype=_argreduce_dtype),
    # shape
    OpInfo("reshape", tf.reshape, rshape.reshape, reshape_samples, reshape_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("transpose", tf.transpose, rshape.transpose, transpose_samples, transpose_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("expand_dims", tf.expand_dims, rshape.expand_dims, expand_dims_samples,
           expand_dims_errors, dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("squeeze", tf.squeeze, rshape.squeeze, squeeze_samples, squeeze_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("concat", tf.concat, rshape.concat, concat_samples, concat_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("stack", tf.stack, rshape.stack, stack_samples, stack_errors, dtypes=FLOATS_I32,
           diff_args=(0,)),
    OpInfo("split", tf.split, rshape.split, split_samples, split_errors, dtypes=FLOATS_I32,
           diff_args=(0,)),
    # indexing
    OpInfo("gather", tf.gather, rindexing.gather, gather_samples, gather_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("getitem", getitem, rindexing.getitem, getitem_samples, getitem_errors,
           dtypes=FLOATS_I32, diff_args=(0,)),
    OpInfo("one_hot", tf.one_hot, rindexing.one_hot, one_hot_samples, one_hot_errors,
           dtypes=(I32, I64), out_dtype=_one_hot_dtype),
    OpInfo("where", tf.where, rindexing.where, where_samples, where_errors, dtypes=FLOATS_I32,
           diff_args=(1, 2), out_dtype=_where_dtype),
    # creation
    OpInfo("zeros", tf.zeros, rcreation.zeros, zeros_ones_samples, zeros_ones_errors("zeros"),
           dtypes=FLOATS + (I32, BOOL)),
    OpInfo("ones", tf.ones, rcreation.ones, zeros_ones_samples, zeros_ones_errors("ones"),
           dtypes=FLOATS + (I32, BOOL)),
    OpInfo("zeros_like", tf.zeros_like, rcreation.zeros_like, like_samples,
           like_errors("zeros_like"), dtypes=FLOATS + (I32, BOOL), out_dtype=_like_dtype),
    OpInfo("ones_like", tf.ones_like, rcreation.ones_like, like_samples,
           like_errors("ones_like"), dtypes=FLOATS + (I32, BOOL), out_dtype=_like_dtype),
    OpInfo("fill", tf.fill, rcreation.fill, fill_samples, fill_errors, dtypes=FLOATS_I32,
           diff_args=(1,)),
    OpInfo("range", tf.range, rcreation.range, range_samples, range_errors,
           dtypes=(I32, I64, F32, F64), out_dtype=_range_dtype),
    OpInfo("constant", tf.constant, rcreation.constant, constant_samples, constant_errors,
           dtypes=FLOATS + (I32, BOOL), out_dtype=_constant_dtype),
    OpInfo("convert_to_tensor", tf.convert_to_tensor, rcreation.convert_to_tensor,
           convert_samples, convert_errors, dtypes=FLOATS + (I32, BOOL),
           out_dtype=_constant_dtype),
    # nn
    OpInfo("relu", tf.nn.relu, rnn.relu, unary_samples(make_away),
           unary_errors("relu", "features"), diff_args=(0,), elementwise=1,
           tf_name="nn.relu"),
    OpInfo("leaky_relu", tf.nn.leaky_relu, rnn.leaky_relu, leaky_samples, leaky_errors,
           diff_args=(0,), elementwise=1, tf_name="nn.leaky_relu"),
    OpInfo("elu", tf.nn.elu, rnn.elu, unary_samples(make_away),
           unary_errors("elu", "features", I32), diff_args=(0,), elementwise=1,
           tf_name="nn.elu"),
    OpInfo("softmax", tf.nn.softmax, rnn.softmax, softmax_samples, softmax_errors("softmax"),
           diff_args=(0,)),
    OpInfo("log_softmax", tf.nn.log_softmax, rnn.log_softmax, softmax_samples,
           softmax_errors("log_softmax"), diff_args=(0,), tol={F16: (5e-3, 1e-2)}),
    OpInfo("sigmoid_cross_entropy_with_logits", tf.nn.sigmoid_cross_entropy_with_logits,
           rnn.sigmoid_cross_entropy_with_logits, sigmoid_xent_samples, sigmoid_xent_errors,
           diff_args=(0, 1), tol={F16: (5e-3, 1e-2)}, elementwise=2,
           tf_name="nn.sigmoid_cross_entropy_with_logits"),
    OpInfo("softmax_cross_entropy_with_logits", tf.nn.softmax_cross_entropy_with_logits,
           rnn.softmax_cross_entropy_with_logits, softmax_xent_samples, softmax_xent_errors,
           diff_args=(0, 1)),
    OpInfo("sparse_softmax_cross_entropy_with_logits",
           tf.nn.sparse_softmax_cross_entropy_with_logits,
           rnn.sparse_softmax_cross_entropy_with_logits, sparse_xent_samples, sparse_xent_errors,
           diff_args=(1,)),
    OpInfo("bias_add", tf.nn.bias_add, rnn.bias_add, bias_add_samples, bias_add_errors,
           dtypes=FLOATS_I32, diff_args=(0, 1)),
    OpInfo("l2_loss", tf.nn.l2_loss, rnn.l2_loss, l2_loss_samples,
           unary_errors("l2_loss", "t", I32, "must be a floating-point"), diff_args=(0,),
           tol={F16: (5e-3, 1e-2)}),
]

# More rows live in tests/opdb_<family>.py files (one per op family, each a ``ROWS`` list),
# so op families can be added without touching this file.
for _path in sorted(pathlib.Path(__file__).parent.glob("opdb_*.py")):
    OPS += importlib.import_module(_path.stem).ROWS

OPS_BY_NAME = {row.name: row for row in OPS}
assert len(OPS_BY_NAME) == len(OPS), "duplicate op-table rows"
