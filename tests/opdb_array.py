"""Op-table rows for the array ops (ipu_gpu/ops/array.py: tf.shape, tf.size, tf.rank,
tf.tile, tf.pad, tf.slice, tf.strided_slice, tf.unstack, tf.broadcast_to, tf.reverse,
tf.roll, tf.eye, tf.linspace, tf.meshgrid); see opdb.py. Every sample is one TF accepts
too, so tests/test_array_ops.py also runs them through TensorFlow (``tf_name``)."""

from __future__ import annotations

import numpy as np
from opdb import BOOL, F16, F32, F64, FLOATS, I32, I64, ErrorInput, OpInfo, Sample, make, scalar
from reference import array as rarray

from ipu_gpu.core.convert import convert_to_tensor
from ipu_gpu.errors import InvalidArgumentError
from ipu_gpu.ops import array

DATA = FLOATS + (I32, BOOL)  # data movement: any dtype
IAE = InvalidArgumentError
NO_INTS = np.zeros(0, I32)  # an empty index list TF takes (a bare [] would be float32 there)


def _m(rng, dtype):
    return lambda *shape: make(rng, shape, dtype)


# ---- shape, size, rank ------------------------------------------------------------------------
def query_samples(out_types):
    def gen(rng, dtype):
        m = _m(rng, dtype)
        yield Sample((m(2, 3),), desc="2x3")
        yield Sample((m(),), desc="scalar")
        yield Sample((m(0, 3),), desc="empty")
        yield Sample((m(1),), desc="length 1")
        for t in out_types:
            yield Sample((m(4, 1, 2),), {"out_type": t}, desc=f"out_type {t.name}")
    return gen


def query_errors(name, bad_out_type):
    def gen():
        yield ErrorInput((object(),), {}, TypeError, rf"^{name}: input must")
        if bad_out_type is not None:
            yield ErrorInput((np.zeros(2, F32),), {"out_type": bad_out_type}, TypeError,
                             rf"^{name}: out_type must be")
    return gen


def _out_type(sample, dtype):
    return sample.kwargs.get("out_type", I32)


# ---- tile -------------------------------------------------------------------------------------
def tile_samples(rng, dtype):
    m = _m(rng, dtype)
    yield Sample((m(2, 3), [2, 1]), desc="rows")
    yield Sample((m(2, 3), np.asarray([1, 3], I64)), desc="columns, int64 multiples")
    yield Sample((m(2, 1, 2), [2, 3, 2]), desc="3-D")
    yield Sample((m(1), [4]), desc="length 1 (duplicates)")
    yield Sample((m(0, 3), [2, 2]), desc="empty input")
    yield Sample((m(2, 3), [0, 2]), desc="zero copies")
    yield Sample((m(), NO_INTS), desc="scalar")


def tile_errors():
    x = np.zeros((2, 3), F32)
    yield ErrorInput((x, [2]), {}, IAE, r"^tile: multiples must have one entry per dimension")
    yield ErrorInput((x, [2, -1]), {}, IAE, r"^tile: multiples must be >= 0, got -1 at index 1")
    yield ErrorInput((x, [2.0, 1.0]), {}, TypeError, r"^tile: multiples must hold integers")
    yield ErrorInput((x, [[2, 1]]), {}, IAE, r"^tile: multiples must be a 1-D list")


# ---- pad --------------------------------------------------------------------------------------
def pad_samples(rng, dtype):
    m = _m(rng, dtype)
    yield Sample((m(2, 3), [[1, 0], [0, 2]]), desc="constant 0")
    yield Sample((m(2, 3), [[1, 1], [2, 0]]), {"constant_values": scalar(dtype, 1.5)},
                 desc="constant, Python value")
    yield Sample((m(2, 3), np.asarray([[0, 2], [1, 1]], I64)),
                 {"constant_values": make(rng, (), dtype)}, desc="constant, 0-d value")
    yield Sample((m(3, 4), [[1, 2], [3, 1]], "REFLECT"), desc="reflect")
    yield Sample((m(3, 4), [[3, 2], [4, 0]]), {"mode": "symmetric"},
                 desc="symmetric, paddings = dimension")
    yield Sample((m(2, 3, 2), [[1, 0], [2, 2], [1, 1]], "REFLECT"), desc="reflect 3-D")
    yield Sample((m(3, 2), [[2, 2], [1, 0]], "REFLECT", 7), desc="reflect ignores the value")
    yield Sample((m(1), [[0, 0]], "REFLECT"), desc="reflect length 1")
    yield Sample((m(1, 2), [[1, 1], [0, 2]], "SYMMETRIC"), desc="symmetric length 1")
    yield Sample((m(0, 3), [[1, 0], [1, 1]]), desc="empty input")
    yield Sample((m(), np.zeros((0, 2), I32)), desc="scalar")


def pad_errors():
    x = np.zeros((2, 3), F32)

    def e(exc, match, arr=x, paddings=((1, 0), (0, 1)), **kw):
        return ErrorInput((arr, [list(p) for p in paddings]), kw, exc, rf"^pad: {match}")

    yield e(ValueError, "mode must be one of", mode="WRAP")
    yield e(IAE, r"paddings must be less than the dimension size \(2\) in REFLECT mode, got "
                 r"\[2, 0\] for dimension 0", paddings=((2, 0), (0, 0)), mode="REFLECT")
    yield e(IAE, r"paddings must be less than the dimension size \(3\)",
            paddings=((0, 0), (0, 3)), mode="reflect")
    yield e(IAE, r"paddings must be no greater than the dimension size \(2\)",
            paddings=((0, 3), (0, 0)), mode="SYMMETRIC")
    yield e(IAE, r"paddings must be non-negative, got \[-1, 0\]", paddings=((-1, 0), (0, 0)))
    yield e(IAE, r"paddings must be non-negative", paddings=((-1, 0), (0, 0)), mode="REFLECT")
    yield e(IAE, r"paddings must have one row per dimension of tensor \(rank 2\), got 1 rows",
            paddings=((1, 0),))
    yield ErrorInput((x, [[1, 0, 1], [0, 0, 0]]), {}, IAE,
                     r"^pad: paddings must be a matrix with 2 columns")
    yield ErrorInput((x, [1, 0]), {}, IAE, r"^pad: paddings must be a matrix with 2 columns")
    yield ErrorInput((x, [[1.0, 0], [0, 0]]), {}, TypeError, r"^pad: paddings must hold integ")
    yield e(TypeError, "constant_values must be int32 like", arr=x.astype(I32),
            constant_values=5.5)
    yield e(TypeError, "constant_values must have the dtype of tensor",
            constant_values=convert_to_tensor(np.float64(1.0)))
    yield e(IAE, "constant_values must be a scalar", constant_values=np.ones(2, F32))
    yield e(IAE, r"paddings must be less than the dimension size \(0\)",
            arr=np.zeros((0, 3), F32), paddings=((0, 0), (1, 1)), mode="REFLECT")


# ---- slice ------------------------------------------------------------------------------------
def slice_samples(rng, dtype):
    m = _m(rng, dtype)
    x = m(3, 4)
    yield Sample((x, [1, 0], [2, -1]), desc="size -1")
    yield Sample((x, [0, 0], [3, 4]), desc="everything")
    yield Sample((x, np.asarray([2, 1], I64), np.asarray([1, 2], I64)), desc="int64")
    yield Sample((x, [3, 1], [0, 2]), desc="begin at the end, empty")
    yield Sample((m(2, 3, 4), [1, 1, 1], [1, -1, 2]), desc="3-D")
    yield Sample((m(1), [0], [1]), desc="length 1")
    yield Sample((m(0, 2), [0, 1], [-1, 1]), desc="empty input")
    yield Sample((m(), NO_INTS, NO_INTS), desc="scalar")


def slice_errors():
    x = np.zeros((2, 3), F32)
    yield ErrorInput((x, [0, 1], [2, 3]), {}, IAE,
                     r"^slice: size\[1\] must be -1 or in \[0, 2\], got 3")
    yield ErrorInput((x, [-1, 0], [1, 1]), {}, IAE, r"^slice: begin\[0\] must be in \[0, 2\], "
                                                    r"got -1")
    yield ErrorInput((x, [3, 0], [0, 1]), {}, IAE, r"^slice: begin\[0\] must be in \[0, 2\]")
    yield ErrorInput((x, [0, 0], [1, -2]), {}, IAE, r"^slice: size\[1\] must be -1 or in")
    yield ErrorInput((x, [0], [1]), {}, IAE,
                     r"^slice: begin and size must have one entry per dimension")
    yield ErrorInput((x, [0.0, 0], [1, 1]), {}, TypeError, r"^slice: begin must hold integers")
    yield ErrorInput((x, [[0, 0]], [1, 1]), {}, IAE, r"^slice: begin must be a 1-D list")


# ---- strided_slice ------------------------------------------------------------------------------
def spec(key) -> tuple:
    """A Python index (ints, slices, None, ...) as TF's __getitem__ spells it for
    strided_slice: (begin, end, strides) and the masks."""
    begin, end, strides = [], [], []
    masks = dict.fromkeys(("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                           "shrink_axis_mask"), 0)
    for i, k in enumerate(key if isinstance(key, tuple) else (key,)):
        bit = 1 << i
        if isinstance(k, slice):
            begin.append(0 if k.start is None else k.start)
            end.append(0 if k.stop is None else k.stop)
            strides.append(1 if k.step is None else k.step)
            masks["begin_mask"] |= bit if k.start is None else 0
            masks["end_mask"] |= bit if k.stop is None else 0
        elif k is Ellipsis or k is None:
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["ellipsis_mask" if k is Ellipsis else "new_axis_mask"] |= bit
        else:
            begin.append(k)
            end.append(k + 1)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
    return (np.asarray(begin, I32), np.asarray(end, I32), np.asarray(strides, I32)), masks


def _ss(x, key, desc, vjp=True):
    args, masks = spec(key)
    return Sample((x,) + args, masks, vjp=vjp, desc=desc)


def strided_slice_samples(rng, dtype):
    m = _m(rng, dtype)
    x = m(4, 5, 3)
    s = np.s_
    yield _ss(x, s[1:3, ::2], "ranges")
    yield _ss(x, s[::-1, -1:-6:-2], "negative strides")
    yield _ss(x, s[-10:10:3, 5:0:-1], "out-of-range bounds clamp")
    yield _ss(x, s[..., 1:2], "ellipsis first")
    yield _ss(x, s[2, ..., None, -1], "index, ellipsis, new axis, index")
    yield _ss(x, s[None, 1, None, ::-3], "new axes around an index")
    yield _ss(x, s[-1], "negative index")
    yield _ss(x, s[1:1, 2:1], "empty ranges")
    yield _ss(x, s[..., None, None], "new axes after the ellipsis")
    yield Sample((x, [1, 0, 0], [3, 4, 2], [1, 2, 1]),
                 {"begin_mask": 0b10, "end_mask": 0b101}, desc="raw masks")
    yield Sample((x, [0, 3], [0, 1], [1, 1]), {"new_axis_mask": 1, "shrink_axis_mask": 3},
                 desc="new axis wins over shrink on one entry")
    yield Sample((x, [1], [2], [1]), {"begin_mask": 0b110, "shrink_axis_mask": 0b10},
                 desc="mask bits past the spec are ignored")
    yield Sample((x, [0, 1], [0, 4], [1, 2]), {"ellipsis_mask": 1, "new_axis_mask": 1},
                 desc="ellipsis wins over new axis")
    yield Sample((x, [2], [0], [3]), {"shrink_axis_mask": 1}, desc="shrink with stride 3")
    yield Sample((x, [1, 2], [3, 4]), desc="default strides")
    yield _ss(m(0, 3), s[:, 1], "empty input")
    yield _ss(m(1), s[0], "length 1")
    yield _ss(make(rng, (6,), dtype), s[::-1], "reverse all")
    yield _ss(m(), s[..., None], "scalar, new axis")
    yield Sample((m(), NO_INTS, NO_INTS, NO_INTS), desc="scalar, empty spec")


def strided_slice_errors():
    x = np.zeros((2, 3), F32)

    def e(exc, match, b=(0, 1), en=(2, 3), st=(1, 1), arr=x, **kw):
        return ErrorInput((arr, list(b), list(en), list(st)), kw, exc,
                          rf"^strided_slice: {match}")

    yield e(IAE, "ellipsis_mask must have at most one bit set", ellipsis_mask=3)
    yield e(IAE, r"strides must be non-zero, got 0 for dimension 1", st=(1, 0))
    yield e(IAE, "begin must index inside dimension 0 of size 2, got slice index 5",
            b=(5,), en=(6,), st=(1,), shrink_axis_mask=1)
    yield e(IAE, "strides must be positive where shrink_axis_mask", b=(1,), en=(0,), st=(-1,),
            shrink_axis_mask=1)
    yield e(IAE, "begin must index at most 2 dimensions", b=(0, 0, 0), en=(1, 1, 1),
            st=(1, 1, 1))
    yield e(IAE, "input_ must have rank >= 1", arr=np.float32(1), b=(0,), en=(1,), st=(1,))
    yield e(IAE, r"begin, end and strides must be 1-D with one length", en=(2,))
    yield e(IAE, r"begin, end and strides must be 1-D with one length", b=(0,) * 32,
            en=(1,) * 32, st=(1,) * 32)
    yield ErrorInput((x, [[0]], [[1]], [[1]]), {}, IAE,
                     r"^strided_slice: begin, end and strides must be 1-D")
    yield e(TypeError, "begin must hold integers", b=(0.0, 1))
    yield e(TypeError, "begin_mask must be an int", begin_mask=1.5)
    yield e(IAE, "end_mask must fit in int32", end_mask=2**32)


# ---- unstack ------------------------------------------------------------------------------------
def unstack_samples(rng, dtype):
    m = _m(rng, dtype)
    x = m(2, 3)
    yield Sample((x,), desc="axis 0")
    yield Sample((x,), {"axis": 1}, desc="axis 1")
    yield Sample((m(2, 3, 4),), {"axis": -1, "num": 4}, desc="axis -1, num")
    yield Sample((np.repeat(m(1, 3), 3, axis=0),), desc="duplicate rows")
    yield Sample((m(1),), desc="length 1")
    yield Sample((m(0, 3),), vjp=False, desc="empty axis: no outputs")
    yield Sample((m(2, 0),), {"axis": 0}, desc="empty slices")


def unstack_errors():
    x = np.zeros((2, 3), F32)
    yield ErrorInput((np.float32(1),), {}, ValueError, r"^unstack: value must have rank >= 1")
    yield ErrorInput((x,), {"axis": 2}, ValueError, r"^unstack: axis must be in \[-2, 2\), got 2")
    yield ErrorInput((x,), {"axis": -3}, ValueError, r"^unstack: axis must be in")
    yield ErrorInput((x,), {"num": 3}, IAE, r"^unstack: num must be the size of axis 0 \(2\), "
                                            r"got 3")
    yield ErrorInput((x,), {"num": 1.5}, TypeError, r"^unstack: num must be an integer")


# ---- broadcast_to -------------------------------------------------------------------------------
def broadcast_to_samples(rng, dtype):
    m = _m(rng, dtype)
    yield Sample((m(3), [2, 3]), desc="rows")
    yield Sample((m(2, 1), np.asarray([2, 2, 4], I64)), desc="new and widened axes, int64")
    yield Sample((m(), [2, 2]), desc="scalar")
    yield Sample((m(1), [4]), desc="length 1 (duplicates)")
    yield Sample((m(1), [0]), desc="to empty")
    yield Sample((m(0), [2, 0]), desc="empty input")
    yield Sample((m(2, 3), [2, 3]), desc="same shape")


def broadcast_to_errors():
    v = np.zeros(3, F32)
    yield ErrorInput((v, [2, 4]), {}, IAE, r"^broadcast_to: shape must be broadcast-compatible "
                                           r"with input \[3\], got \[2, 4\]")
    yield ErrorInput((np.zeros((2, 3), F32), [3]), {}, IAE,
                     r"^broadcast_to: shape must have at least 2 dimensions")
    yield ErrorInput((v, [-1, 3]), {}, IAE, r"^broadcast_to: shape must not have negative")
    yield ErrorInput((v, [2.0, 3.0]), {}, TypeError, r"^broadcast_to: shape must hold integers")
    yield ErrorInput((v, [[2, 3]]), {}, IAE, r"^broadcast_to: shape must be a 1-D list")
    yield ErrorInput((np.zeros(0, F32), [1]), {}, IAE, r"^broadcast_to: shape must be broadcast")


# ---- reverse, roll ------------------------------------------------------------------------------
def reverse_samples(rng, dtype):
    m = _m(rng, dtype)
    x = m(2, 3)
    yield Sample((x, [1]), desc="axis 1")
    yield Sample((x, [-1]), desc="axis -1")
    yield Sample((x, [0, 1]), desc="both")
    yield Sample((x, NO_INTS), desc="no axis")
    yield Sample((m(2, 3, 4), np.asarray([2, 0], I64)), desc="3-D, int64")
    yield Sample((m(1), [0]), desc="length 1")
    yield Sample((m(0, 3), [0]), desc="empty input")
    yield Sample((m(), NO_INTS), desc="scalar")


def reverse_errors():
    x = np.zeros((2, 3), F32)
    yield ErrorInput((x, [1, -1]), {}, IAE, r"^reverse: axis must not name a dimension twice")
    yield ErrorInput((x, [2]), {}, IAE, r"^reverse: axis must be in \[-2, 2\), got 2")
    yield ErrorInput((x, [-3]), {}, IAE, r"^reverse: axis must be in \[-2, 2\), got -3")
    yield ErrorInput((x, 1), {}, IAE, r"^reverse: axis must be a 1-D list")
    yield ErrorInput((x, [1.0]), {}, TypeError, r"^reverse: axis must hold integers")


def roll_samples(rng, dtype):
    m = _m(rng, dtype)
    x = m(2, 3)
    yield Sample((x, 1, 1), desc="scalar shift and axis")
    yield Sample((x, [1, -1], [0, 1]), desc="two axes")
    yield Sample((x, [1, 1], [1, 1]), desc="repeated axis adds up")
    yield Sample((x, 7, -1), desc="shift past the size")
    yield Sample((m(2, 3, 4), np.asarray([-5, 2], I64), np.asarray([2, 0], I64)), desc="int64")
    yield Sample((m(1), 3, 0), desc="length 1")
    yield Sample((m(0, 2), 1, 0), desc="empty axis")
    yield Sample((x, NO_INTS, NO_INTS), desc="no shift")


def roll_errors():
    x = np.zeros((2, 3), F32)
    yield ErrorInput((x, [1, 1], [0]), {}, IAE, r"^roll: shift and axis must have the same size")
    yield ErrorInput((x, [1, 2], 1), {}, IAE, r"^roll: shift and axis must have the same size")
    yield ErrorInput((x, [1], 1), {}, IAE, r"^roll: shift and axis must have the same size")
    yield ErrorInput((x, 1, 2), {}, IAE, r"^roll: axis must be in \[-2, 2\), got 2")
    yield ErrorInput((np.float32(1), 1, 0), {}, IAE, r"^roll: input must have rank >= 1")
    yield ErrorInput((x, 1.0, 1), {}, TypeError, r"^roll: shift must hold integers")
    yield ErrorInput((x, 1, 1.0), {}, TypeError, r"^roll: axis must hold integers")
    yield ErrorInput((x, [[1]], [[1]]), {}, IAE, r"^roll: shift must be a scalar or a 1-D list")


# ---- eye -----------------------------------------------------------------------------------------
def eye_samples(rng, dtype):
    d = {"dtype": dtype}
    yield Sample((3,), d, desc="3x3")
    yield Sample((2, 3), d, desc="2x3")
    yield Sample((3,), {"num_columns": 2, **d}, desc="3x2")
    yield Sample((2,), {"batch_shape": [3], **d}, desc="batch")
    yield Sample((2, 3), {"batch_shape": (2, 1), **d}, desc="2-D batch")
    yield Sample((1,), d, desc="1x1")
    yield Sample((0,), d, desc="0x0")
    yield Sample((2, 0), {"batch_shape": [0], **d}, desc="empty batch and columns")


def eye_errors():
    yield ErrorInput((2.0,), {}, TypeError, r"^eye: num_rows must be a non-negative int")
    yield ErrorInput((True,), {}, TypeError, r"^eye: num_rows must be a non-negative int")
    yield ErrorInput((-1,), {}, IAE, r"^eye: num_rows must be >= 0, got -1")
    yield ErrorInput((2, -1), {}, IAE, r"^eye: num_columns must be >= 0")
    yield ErrorInput((2,), {"batch_shape": [-1]}, IAE, r"^eye: batch_shape must not have neg")
    yield ErrorInput((2,), {"batch_shape": [2.0]}, TypeError, r"^eye: batch_shape must hold")
    yield ErrorInput((2,), {"dtype": "complex64"}, TypeError, r"^eye: dtype")


# ---- linspace ------------------------------------------------------------------------------------
def linspace_samples(rng, dtype):
    def v(shape, low, high):
        return make(rng, shape, dtype, low, high)

    yield Sample((v((), -3, 0), v((), 1, 4), 5), desc="scalars")
    yield Sample((v((2,), -3, 0), v((2,), 1, 4), 4), {"axis": -1}, desc="vectors, axis -1")
    yield Sample((v((2, 1), -3, 0), v((3,), 1, 4), 3), {"axis": 1}, desc="broadcast, axis 1")
    yield Sample((v((3,), -3, 0), v((), 1, 4), 6), desc="vector and scalar")
    yield Sample((v((), -3, 0), v((), 1, 4), 2), desc="num 2")
    yield Sample((v((), -3, 0), v((), 1, 4), 1), desc="num 1")
    yield Sample((v((2,), -3, 0), v((2,), 1, 4), 0), desc="num 0")
    same = v((), 1, 2)
    yield Sample((same, same.copy(), 4), desc="start == stop (duplicates)")
    yield Sample((v((), 3, 4), v((), -2, -1), np.int64(5)), desc="decreasing, numpy num")
    if dtype == F32:
        yield Sample((0.0, 1.0, 5), desc="Python floats")
        yield Sample((np.float32(2.0), 3, 3), desc="Python int stop takes start's dtype")


def _linspace_dtype(sample, dtype):
    d = np.asarray(sample.args[0]).dtype
    if isinstance(sample.args[0], float):
        return F32
    return d if d.kind == "f" else F64


def linspace_errors():
    f = np.float32
    yield ErrorInput((f(0), f(1), 2.5), {}, TypeError, r"^linspace: num must be an integer")
    yield ErrorInput((f(0), f(1), -1), {}, IAE, r"^linspace: num must be >= 0, got -1")
    yield ErrorInput((np.zeros(3, F32), np.ones(2, F32), 3), {}, IAE,
                     r"^linspace: stop must be broadcast-compatible with start")
    yield ErrorInput((np.zeros(2, F32), np.ones(2, F32), 3), {"axis": 2}, IAE,
                     r"^linspace: axis must be in \[-2, 1\], got 2")
    yield ErrorInput((np.zeros(2, F32), np.ones(2, F64), 3), {}, TypeError,
                     r"^linspace: stop must have the dtype of start")
    yield ErrorInput((0, 1.5, 3), {}, TypeError, r"^linspace: stop must be convertible to int32")
    yield ErrorInput((np.zeros(2, BOOL), np.ones(2, BOOL), 3), {}, TypeError,
                     r"^linspace: start must be a floating-point or integer")


# ---- meshgrid ------------------------------------------------------------------------------------
def meshgrid_samples(rng, dtype):
    m = _m(rng, dtype)
    yield Sample((m(3), m(2)), desc="xy")
    yield Sample((m(3), m(2)), {"indexing": "ij"}, desc="ij")
    yield Sample((m(2), m(3), m(4)), desc="three, xy")
    yield Sample((m(2), m(1), m(3)), {"indexing": "ij"}, desc="three, ij")
    yield Sample((m(4),), desc="one")
    yield Sample((m(2, 2), m(3)), desc="2-D input is flattened")
    yield Sample((m(), m(2)), desc="scalar input")
    yield Sample((m(0), m(2)), desc="empty input")
    dup = np.repeat(m(1), 3)
    yield Sample((dup, m(2)), desc="duplicates")
    yield Sample((), desc="no inputs")


def meshgrid_errors():
    a, b = np.zeros(3, F32), np.zeros(2, F32)
    yield ErrorInput((a, b), {"indexing": "xx"}, ValueError,
                     r"^meshgrid: indexing must be 'xy' or 'ij', got 'xx'")
    yield ErrorInput((a, b), {"foo": 1}, TypeError, r"^meshgrid: 'foo' is an invalid keyword")
    yield ErrorInput((a, b.astype(F64)), {}, TypeError,
                     r"^meshgrid: args\[1\] must have the dtype of args\[0\]")


ROWS = [
    OpInfo("shape", array.shape, rarray.shape, query_samples((I32, I64)),
           query_errors("shape", F32), dtypes=DATA, out_dtype=_out_type, tf_name="shape"),
    OpInfo("size", array.size, rarray.size, query_samples((I64, F32, F16, BOOL)),
           query_errors("size", "complex64"), dtypes=DATA, out_dtype=_out_type, tf_name="size"),
    OpInfo("rank", array.rank, rarray.rank, query_samples(()), query_errors("rank", None),
           dtypes=DATA, out_dtype=lambda s, d: I32, tf_name="rank"),
    OpInfo("tile", array.tile, rarray.tile, tile_samples, tile_errors, dtypes=DATA,
           diff_args=(0,), tf_name="tile"),
    OpInfo("pad", array.pad, rarray.pad, pad_samples, pad_errors, dtypes=DATA, diff_args=(0,),
           tf_name="pad"),
    OpInfo("slice", array.slice, rarray.slice, slice_samples, slice_errors, dtypes=DATA,
           diff_args=(0,), tf_name="slice"),
    OpInfo("strided_slice", array.strided_slice, rarray.strided_slice, strided_slice_samples,
           strided_slice_errors, dtypes=DATA, diff_args=(0,), tf_name="strided_slice"),
    OpInfo("unstack", array.unstack, rarray.unstack, unstack_samples, unstack_errors,
           dtypes=DATA, diff_args=(0,), tf_name="unstack"),
    OpInfo("broadcast_to", array.broadcast_to, rarray.broadcast_to, broadcast_to_samples,
           broadcast_to_errors, dtypes=DATA, diff_args=(0,), tf_name="broadcast_to"),
    OpInfo("reverse", array.reverse, rarray.reverse, reverse_samples, reverse_errors,
           dtypes=DATA, diff_args=(0,), tf_name="reverse"),
    OpInfo("roll", array.roll, rarray.roll, roll_samples, roll_errors, dtypes=DATA,
           diff_args=(0,), tf_name="roll"),
    OpInfo("eye", array.eye, rarray.eye, eye_samples, eye_errors, dtypes=DATA,
           out_dtype=lambda s, d: s.kwargs["dtype"], tf_name="eye"),
    OpInfo("linspace", array.linspace, rarray.linspace, linspace_samples, linspace_errors,
           dtypes=FLOATS + (I32,), diff_args=(0, 1), out_dtype=_linspace_dtype,
           tf_name="linspace"),
    OpInfo("meshgrid", array.meshgrid, rarray.meshgrid, meshgrid_samples, meshgrid_errors,
           dtypes=DATA, diff_args=(0, 1, 2), tf_name="meshgrid"),
]
