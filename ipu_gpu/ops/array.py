"""Array ops (TF's array_ops): shape, size, rank, tile, pad, slice, strided_slice, unstack,
broadcast_to, reverse, roll, and the tensors made from sizes and ranges: eye, linspace,
meshgrid; ``tensor_getitem`` is TF's ``Tensor.__getitem__`` built on strided_slice.

Arguments that say *where* or *how much* (multiples, paddings, begin/end/strides, axes,
shifts, shapes) are static Python ints, read on the host before the op runs; a Tensor given
for one is copied to the host first (# syncs device). Value errors that TF's kernels raise as
``InvalidArgumentError`` raise ``errors.InvalidArgumentError`` (a ValueError) with the
argument named; dtype errors are TypeError (TF raises InvalidArgumentError for an index
argument of the wrong dtype).

Every op but linspace moves data only, so each gradient is another op of this file: the
gradient of ``slice`` is ``pad``, of ``pad`` ``slice``, of ``strided_slice`` its scatter
``strided_slice_grad`` (and back), of a mirror pad ``mirror_pad_grad`` (and back), of
``reverse``/``roll`` themselves; backward rules call those ops through ``_apply``, so nested
tapes record them (second derivatives work). No kernels: numpy and cupy share every line.
"""

from __future__ import annotations

import builtins
import functools

import numpy as np

from ..core import backend, dtypes, registry
from ..core.convert import to_array
from ..core.allocation import AllocationGuard, check_allocation
from ..core.registry import register, symbolic_call
from ..core.tensor import Tensor, wrap
from ._shape_args import shape_args
from ..errors import InvalidArgumentError
from ._util import quiet, require_same_dtype, unbroadcast
from .shape import reshape

_INT32_MAX = 2**31 - 1


# ---- static integer arguments ---------------------------------------------------------------
def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _host_ints(op: str, arg: str, value) -> np.ndarray:
    """``value`` (a Python int or nested list of ints, or an integer Tensor/numpy/cupy array)
    as a host int64 array of its own shape. TypeError for anything but integers."""
    if isinstance(value, Tensor):
        value = value._value
    if backend.is_cupy_array(value):
        value = value.get()  # syncs device
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{op}: {arg} must hold integers, got {value!r}")
    try:
        a = np.asarray(value)
    except (ValueError, TypeError):
        raise ValueError(f"{op}: {arg} must be an int or a rectangular list of ints, got "
                         f"{_short(value)}") from None
    if a.dtype.kind not in "iu":
        if a.size == 0 and isinstance(value, (list, tuple)):
            return np.zeros(a.shape, np.int64)  # [] holds no non-integer
        raise TypeError(f"{op}: {arg} must hold integers (int32 or int64), got "
                        f"{a.dtype.name} {_short(value)}")
    return a.astype(np.int64)


def _int_vector(op: str, arg: str, value, scalar_ok: bool = False) -> tuple:
    """A 1-D integer argument (or a scalar, where ``scalar_ok``) as a tuple of ints."""
    a = _host_ints(op, arg, value)
    if a.ndim != 1 and not (scalar_ok and a.ndim == 0):
        what = "a scalar or a 1-D list of ints" if scalar_ok else "a 1-D list of ints"
        raise InvalidArgumentError(f"{op}: {arg} must be {what}, got shape {list(a.shape)}")
    return tuple(int(v) for v in a.reshape(-1))


def _int_scalar(op: str, arg: str, value) -> int:
    """A Python/numpy int or a one-element integer Tensor as an int (bools count, as TF)."""
    if isinstance(value, Tensor):
        value = value._value
    if backend.is_cupy_array(value):
        value = value.get()  # syncs device
    if isinstance(value, np.ndarray) and value.size == 1 and value.dtype.kind in "iub":
        value = value.reshape(()).item()
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, (int, np.integer, bool, np.bool_)):
        raise TypeError(f"{op}: {arg} must be an integer, got {_short(value)}")
    return int(value)


def _apply(op, g, *extra, **static):
    """``op`` on a cotangent: an array in a plain backward pass (the array comes back), a
    Tensor under nested tapes (the Tensor comes back, recorded for second derivatives)."""
    out = op(g, *extra, **static)
    return out if isinstance(g, Tensor) else out._value


def _out_dtype(op: str, out_type, allowed: tuple) -> np.dtype:
    d = dtypes.as_dtype(out_type, f"{op}: out_type")
    if d not in allowed:
        raise TypeError(f"{op}: out_type must be {' or '.join(a.name for a in allowed)}, got "
                        f"{d.name}")
    return d


# ---- shape, size, rank ----------------------------------------------------------------------
def _check_shape(x, *, out_type):
    if out_type == dtypes.int32:
        for i, d in enumerate(x.shape):
            if d > _INT32_MAX:  # TF's Shape kernel refuses to truncate
                raise InvalidArgumentError(f"shape: out_type must be int64 for a dimension "
                                           f"beyond int32, got int32 and dimension {i} of "
                                           f"size {d}")


def _shape_forward(k, xp, x, *, out_type):
    return xp.asarray(np.asarray(x.shape, dtype=out_type)), None


_SHAPE = register("shape", args=("input",), check=_check_shape, forward=_shape_forward)


def shape(input, out_type=None, name=None) -> Tensor:  # noqa: A002 - TF's name
    """The shape of ``input`` as a 1-D Tensor of ``out_type`` (int32, the default, or int64),
    on the device of ``input``.

    Raises:
      TypeError: ``out_type`` is not int32 or int64.
      InvalidArgumentError: a dimension does not fit int32 and ``out_type`` is int32.
    """
    d = dtypes.int32 if out_type is None else _out_dtype(
        "shape", out_type, (dtypes.int32, dtypes.int64))
    return _SHAPE(input, out_type=d)


def _size_forward(k, xp, x, *, out_type):
    # TF's eager size: np.prod in out_type (int32 wraps past 2**31, as there)
    return xp.asarray(np.asarray(np.prod(x.shape, dtype=out_type), dtype=out_type)), None


_SIZE = register("size", args=("input",), check=lambda x, *, out_type: None,
                 forward=_size_forward)


def size(input, out_type=None, name=None) -> Tensor:  # noqa: A002 - TF's name
    """The number of elements of ``input`` as a 0-d Tensor of ``out_type`` (int32 by default;
    any dtype, as TF's eager size, which computes ``np.prod(shape, dtype=out_type)``: int32
    wraps past 2**31 - 1), on the device of ``input``."""
    d = dtypes.int32 if out_type is None else _out_dtype("size", out_type, dtypes.SUPPORTED)
    return _SIZE(input, out_type=d)


_RANK = register("rank", args=("input",), check=lambda x: None,
                 forward=lambda k, xp, x: (xp.asarray(np.asarray(x.ndim, np.int32)), None))


def rank(input, name=None) -> Tensor:  # noqa: A002 - TF's name
    """The number of dimensions of ``input`` as a 0-d int32 Tensor."""
    return _RANK(input)


# ---- tile -----------------------------------------------------------------------------------
def _check_tile(x, *, multiples):
    if len(multiples) != x.ndim:
        raise InvalidArgumentError(f"tile: multiples must have one entry per dimension of "
                                   f"input (rank {x.ndim}), got {list(multiples)}")
    for i, m in enumerate(multiples):
        if m < 0:
            raise InvalidArgumentError(f"tile: multiples must be >= 0, got {m} at index {i}")


def _tile_forward(k, xp, x, *, multiples):
    out_shape = tuple(m * d for m, d in zip(multiples, x.shape))
    check_allocation("tile", xp, out_shape, x.dtype, "multiples sets the shape")
    return xp.tile(x, multiples), (x.shape,)


def _tile_backward(k, xp, res, g, *, multiples):
    (shape,) = res
    split = tuple(s for m, d in zip(multiples, shape) for s in (m, d))
    g = xp.reshape(g, split)  # axis 2i counts the copies of axis i
    if shape:
        g = xp.sum(g, axis=tuple(builtins.range(0, 2 * len(shape), 2)))
    return (xp.reshape(g, shape),)


_TILE = register("tile", args=("input",), check=_check_tile, forward=_tile_forward,
                 backward=_tile_backward, twice_differentiable=True)


@shape_args("multiples")
def tile(input, multiples, name=None) -> Tensor:  # noqa: A002 - TF's name
    """``input`` repeated ``multiples[i]`` times along each axis i; the gradient sums the
    copies.

    Raises:
      TypeError: ``multiples`` does not hold integers.
      InvalidArgumentError: ``multiples`` is not 1-D with one entry per dimension, or holds
        a negative entry.
    """
    return _TILE(input, multiples=_int_vector("tile", "multiples", multiples))


# ---- pad ------------------------------------------------------------------------------------
_PAD_MODES = ("CONSTANT", "REFLECT", "SYMMETRIC")


def _check_paddings(x, paddings):
    if len(paddings) != x.ndim:
        raise InvalidArgumentError(f"pad: paddings must have one row per dimension of tensor "
                                   f"(rank {x.ndim}), got {len(paddings)} rows")
    for i, (a, b) in enumerate(paddings):
        if a < 0 or b < 0:
            raise InvalidArgumentError(f"pad: paddings must be non-negative, got [{a}, {b}] "
                                       f"for dimension {i}")


def _padded_shape(x, paddings) -> tuple:
    return tuple(a + d + b for d, (a, b) in zip(x.shape, paddings))


def _check_pad(x, constant_values, *, paddings):
    require_same_dtype("pad", ("tensor", "constant_values"), x, constant_values)
    if constant_values.ndim != 0:
        raise InvalidArgumentError(f"pad: constant_values must be a scalar, got shape "
                                   f"{list(constant_values.shape)}")
    _check_paddings(x, paddings)


def _interior(paddings, shape) -> tuple:
    return tuple(builtins.slice(a, a + d) for (a, _), d in zip(paddings, shape))


def _pad_forward(k, xp, x, constant_values, *, paddings):
    out_shape = _padded_shape(x, paddings)
    check_allocation("pad", xp, out_shape, x.dtype, "paddings sets the shape")
    out = xp.empty(out_shape, x.dtype)
    out[...] = constant_values
    out[_interior(paddings, x.shape)] = x
    return out, (x.shape,)


def _pad_backward(k, xp, res, g, *, paddings):
    (shape,) = res
    # TF's PadV2 gradient: none for constant_values
    return _apply(_SLICE, g, begin=tuple(a for a, _ in paddings), size=tuple(shape)), None


_PAD = register("pad", args=("tensor", "constant_values"), check=_check_pad,
                forward=_pad_forward, backward=_pad_backward, twice_differentiable=True,
                scalars_follow=True)


def _check_mirror_pad(x, *, paddings, mode):
    _check_paddings(x, paddings)
    for i, ((a, b), d) in enumerate(zip(paddings, x.shape)):
        if mode == "REFLECT" and (a >= d or b >= d):
            raise InvalidArgumentError(
                f"pad: paddings must be less than the dimension size ({d}) in REFLECT mode, "
                f"got [{a}, {b}] for dimension {i}")
        if mode == "SYMMETRIC" and (a > d or b > d):
            raise InvalidArgumentError(
                f"pad: paddings must be no greater than the dimension size ({d}) in SYMMETRIC "
                f"mode, got [{a}, {b}] for dimension {i}")


def _mirror_pad_forward(k, xp, x, *, paddings, mode):
    check_allocation("pad", xp, _padded_shape(x, paddings), x.dtype, "paddings sets the shape")
    if not any(a or b for a, b in paddings):
        return x, ()
    # numpy's and cupy's "reflect" leaves out the edge (TF's REFLECT), "symmetric" repeats it
    return xp.pad(x, paddings, mode=mode.lower()), ()


def _mirror_pad_backward(k, xp, res, g, *, paddings, mode):
    return (_apply(_MIRROR_PAD_GRAD, g, paddings=paddings, mode=mode),)


_MIRROR_PAD = register("mirror_pad", args=("tensor",), check=_check_mirror_pad,
                       forward=_mirror_pad_forward, backward=_mirror_pad_backward,
                       twice_differentiable=True)


def _along(ndim, axis, start, stop):
    index = [builtins.slice(None)] * ndim
    index[axis] = builtins.slice(start, stop)
    return tuple(index)


def _mirror_pad_grad_forward(k, xp, g, *, paddings, mode):
    """TF's MirrorPadGrad: the padded cotangent folded back onto the input, one axis at a
    time (each mirrored border is added, reversed, onto the rows it copied)."""
    edge = 1 if mode == "REFLECT" else 0
    nd = g.ndim
    for axis, (a, b) in enumerate(paddings):
        if not (a or b):
            continue
        n = g.shape[axis] - a - b
        core = g[_along(nd, axis, a, a + n)].copy()
        if a:
            core[_along(nd, axis, edge, edge + a)] += xp.flip(g[_along(nd, axis, 0, a)], axis)
        if b:
            core[_along(nd, axis, n - edge - b, n - edge)] += xp.flip(
                g[_along(nd, axis, a + n, a + n + b)], axis)
        g = core
    return g, ()


_MIRROR_PAD_GRAD = register(
    "mirror_pad_grad", args=("grad",), check=lambda g, *, paddings, mode: None,
    forward=_mirror_pad_grad_forward, twice_differentiable=True,
    backward=lambda k, xp, res, g2, *, paddings, mode: (
        _apply(_MIRROR_PAD, g2, paddings=paddings, mode=mode),))


@shape_args("paddings")
def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None) -> Tensor:
    """``tensor`` padded by ``paddings`` ([rank, 2]: before and after each dimension).

    ``mode`` (any case): "CONSTANT" fills with ``constant_values`` (a scalar of the tensor's
    dtype; a Python number takes that dtype), "REFLECT" mirrors without the edge (paddings
    must be less than the dimension), "SYMMETRIC" with it (paddings at most the dimension);
    ``constant_values`` is ignored by the mirror modes, as in TF. The gradient with respect
    to ``tensor`` is a slice (mirror modes fold the borders back, as TF's MirrorPadGrad);
    ``constant_values`` gets none, as in TF.

    Raises:
      ValueError: an unknown ``mode``.
      TypeError: ``paddings`` does not hold integers; ``constant_values`` has another dtype.
      InvalidArgumentError: ``paddings`` is not [rank, 2], is negative, or too large for the
        mirror mode; ``constant_values`` is not a scalar.
    """
    m = mode.upper() if isinstance(mode, str) else mode
    if m not in _PAD_MODES:
        raise ValueError(f'pad: mode must be one of "CONSTANT", "REFLECT", or "SYMMETRIC", '
                         f"got {mode!r}")
    p = _host_ints("pad", "paddings", paddings)
    if p.ndim != 2 or p.shape[1] != 2:
        raise InvalidArgumentError(f"pad: paddings must be a matrix with 2 columns, got shape "
                                   f"{list(p.shape)}")
    pads = tuple((int(a), int(b)) for a, b in p)
    if m == "CONSTANT":
        if not isinstance(tensor, Tensor):  # constant_values follows tensor, never the reverse
            node = symbolic_call(pad, (tensor, paddings),  # a graph tensor: one graph node
                                 dict(mode=mode, constant_values=constant_values))
            if node is not NotImplemented:
                return node
            tensor = wrap(to_array(tensor, arg="tensor", op="pad"))
        if isinstance(constant_values, (np.ndarray, np.generic)):  # TF converts numpy values
            constant_values = backend.xp_of(tensor._value).asarray(to_array(
                constant_values, tensor.dtype, arg="constant_values", op="pad"))
        return _PAD(tensor, constant_values, paddings=pads)
    return _MIRROR_PAD(tensor, paddings=pads, mode=m)


# ---- slice ----------------------------------------------------------------------------------
def _check_slice(x, *, begin, size):
    if len(begin) != x.ndim or len(size) != x.ndim:
        raise InvalidArgumentError(f"slice: begin and size must have one entry per dimension "
                                   f"of input_ (rank {x.ndim}), got {len(begin)} and "
                                   f"{len(size)} entries")
    for i, (b, s, d) in enumerate(zip(begin, size, x.shape)):
        if not 0 <= b <= d:
            raise InvalidArgumentError(f"slice: begin[{i}] must be in [0, {d}], got {b}")
        if s != -1 and not 0 <= s <= d - b:
            raise InvalidArgumentError(f"slice: size[{i}] must be -1 or in [0, {d - b}], "
                                       f"got {s}")


def _slice_forward(k, xp, x, *, begin, size):
    index = tuple(builtins.slice(b, d if s == -1 else b + s)
                  for b, s, d in zip(begin, size, x.shape))
    return x[index], (x.shape,)


def _slice_backward(k, xp, res, g, *, begin, size):
    (shape,) = res
    after = tuple(d - b - n for d, b, n in zip(shape, begin, g.shape))
    return (_apply(_PAD, g, 0, paddings=tuple(zip(begin, after))),)


_SLICE = register("slice", args=("input_",), check=_check_slice, forward=_slice_forward,
                  backward=_slice_backward, twice_differentiable=True)


@shape_args("begin", "size")
def slice(input_, begin, size, name=None) -> Tensor:  # noqa: A001 - TF's name
    """The block of ``input_`` starting at ``begin`` with ``size`` elements per dimension
    (-1: all the rest); the gradient pads with zeros.

    Raises:
      TypeError: ``begin`` or ``size`` does not hold integers.
      InvalidArgumentError: ``begin``/``size`` are not 1-D with one entry per dimension, or
        reach outside ``input_``.
    """
    return _SLICE(input_, begin=_int_vector("slice", "begin", begin),
                  size=_int_vector("slice", "size", size))


# ---- strided_slice --------------------------------------------------------------------------
_NEW, _SHRINK = -1, -2


@functools.lru_cache(maxsize=512)
def _strided_plan(shape, begin, end, strides, begin_mask, end_mask, ellipsis_mask,
                  new_axis_mask, shrink_axis_mask):
    """TF's ValidateStridedSliceOp (tensorflow/core/util/strided_slice_op.cc) for a known
    shape: the numpy basic index (ints and slices) of the dense slice, and the final shape
    (shrunk axes dropped, new axes inserted). Raises TF's errors."""
    op = "strided_slice"
    if ellipsis_mask & (ellipsis_mask - 1):
        raise InvalidArgumentError(f"{op}: ellipsis_mask must have at most one bit set "
                                   f"(multiple ellipses are not allowed), got {ellipsis_mask}")
    # Step 1: count the new axes after the ellipsis; no ellipsis means one at the end
    n_sparse = len(begin)
    seen = False
    new_after = 0
    for i in builtins.range(n_sparse):
        if seen and new_axis_mask >> i & 1:
            new_after += 1
        if ellipsis_mask >> i & 1:
            seen = True
    if not seen:
        ellipsis_mask |= 1 << n_sparse
        n_sparse += 1
    # Step 2: the dense spec, one entry per input dimension (ellipsis > new axis > the rest)
    dims = len(shape)
    d_begin, d_end, d_stride = [0] * dims, [0] * dims, [1] * dims
    d_begin_mask = d_end_mask = d_shrink = 0
    gather = []  # per output dimension: a dense index, or _NEW
    full = 0
    for i in builtins.range(n_sparse):
        if ellipsis_mask >> i & 1:
            stop = min(dims - (n_sparse - i) + 1 + new_after, dims)
            while full < stop:
                d_begin_mask |= 1 << full
                d_end_mask |= 1 << full
                gather.append(full)
                full += 1
        elif new_axis_mask >> i & 1:
            gather.append(_NEW)
        else:
            if full == dims:
                if dims == 0:
                    raise InvalidArgumentError(f"{op}: input_ must have rank >= 1 to be "
                                               f"indexed (attempting to slice scalar input)")
                raise InvalidArgumentError(f"{op}: begin must index at most {dims} dimensions "
                                           f"(the rank of input_), got index out of range "
                                           f"using input dim {full}")
            d_begin[full], d_end[full], d_stride[full] = begin[i], end[i], strides[i]
            d_begin_mask |= (begin_mask >> i & 1) << full
            d_end_mask |= (end_mask >> i & 1) << full
            if shrink_axis_mask >> i & 1:
                d_shrink |= 1 << full
                gather.append(_SHRINK)
            else:
                gather.append(full)
            full += 1
    # Step 3: canonical begin/end per dimension, bounds checks, the processing shape
    index, processing = [], []
    for i in builtins.range(dims):
        b, e, s, d = d_begin[i], d_end[i], d_stride[i], shape[i]
        if s == 0:
            raise InvalidArgumentError(f"{op}: strides must be non-zero, got 0 for "
                                       f"dimension {i}")
        shrink = d_shrink >> i & 1
        lo, hi = (0, d) if s > 0 else (-1, d - 1)
        if shrink and s <= 0:
            raise InvalidArgumentError(f"{op}: strides must be positive where "
                                       f"shrink_axis_mask indexes one element, got {s} for "
                                       f"dimension {i} (only stride 1 allowed on non-range "
                                       f"indexing)")
        if shrink:
            b = b + d if b < 0 else b
            if not 0 <= b < d:
                raise InvalidArgumentError(f"{op}: begin must index inside dimension {i} of "
                                           f"size {d}, got slice index {b} of dimension {i} "
                                           f"out of bounds")
            e = b + 1
        else:
            masked = (d_begin_mask >> i & 1, d_end_mask >> i & 1)
            bounds = []
            for x, c in ((b, 0), (e, 1)):
                if masked[c]:
                    bounds.append((lo, hi)[c] if s > 0 else (lo, hi)[1 - c])
                else:
                    x = x + d if x < 0 else x
                    bounds.append(min(max(x, lo), hi))
            b, e = bounds
        length = e - b
        if length == 0 or (length < 0) != (s < 0):
            n = 0
        else:
            q, r = divmod(abs(length), abs(s))
            n = q + (r != 0)
        processing.append(n)
        if shrink:
            index.append(b)
        elif n == 0:
            index.append(builtins.slice(0, 0))
        else:  # a negative end here is -1: "before element 0", which a slice says with None
            index.append(builtins.slice(b, e if e >= 0 else None, s))
    # Step 4: the final shape
    final = tuple(1 if g == _NEW else processing[g] for g in gather if g != _SHRINK)
    return tuple(index), final


def _check_strided_slice(x, **spec):
    _strided_plan(tuple(x.shape), **spec)


def _strided_slice_forward(k, xp, x, **spec):
    index, final = _strided_plan(tuple(x.shape), **spec)
    return xp.reshape(x[index], final), (x.shape,)


def _strided_slice_backward(k, xp, res, g, **spec):
    (shape,) = res
    index, final = _strided_plan(tuple(shape), **spec)
    return (_apply(_STRIDED_SLICE_GRAD, g, shape=tuple(shape), index=index, final=final),)


_STRIDED_SLICE = register("strided_slice", args=("input_",), check=_check_strided_slice,
                          forward=_strided_slice_forward, backward=_strided_slice_backward,
                          twice_differentiable=True)


def _strided_slice_grad_forward(k, xp, g, *, shape, index, final):
    """TF's StridedSliceGrad: zeros of the input's shape with the slice's cotangent written
    where the slice read (a basic index never reads an element twice)."""
    out = xp.zeros(shape, g.dtype)
    out[index] = xp.reshape(g, out[index].shape)
    return out, ()


_STRIDED_SLICE_GRAD = register(
    "strided_slice_grad", args=("grad",), check=lambda g, *, shape, index, final: None,
    forward=_strided_slice_grad_forward, twice_differentiable=True,
    backward=lambda k, xp, res, g2, *, shape, index, final: (xp.reshape(g2[index], final),))


def _mask(arg: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"strided_slice: {arg} must be an int, got {_short(value)}")
    if not -(2**31) <= value <= _INT32_MAX:
        raise InvalidArgumentError(f"strided_slice: {arg} must fit in int32, got {value}")
    return int(value) & 0xFFFFFFFF  # the int32 bit pattern (-1: every bit)


@shape_args("begin", "end", "strides")
def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                  new_axis_mask=0, shrink_axis_mask=0, var=None, name=None) -> Tensor:
    """``input_[begin:end:strides]`` with TF's masks, exactly as TF's StridedSlice: bit i of
    ``begin_mask``/``end_mask`` ignores ``begin[i]``/``end[i]`` (the widest range for the
    stride's direction), of ``ellipsis_mask`` makes entry i an ellipsis (at most one),
    of ``new_axis_mask`` inserts a size-1 axis, of ``shrink_axis_mask`` takes the single
    element ``begin[i]`` and drops the axis. Negative indices count from the end; ranges are
    clamped to the dimension. ``strides`` defaults to ones. The gradient scatters into zeros.
    ``var`` is accepted and ignored.

    Raises:
      TypeError: ``begin``/``end``/``strides`` do not hold integers; a mask is not an int.
      InvalidArgumentError: ``begin``/``end``/``strides`` are not 1-D of one length (< 32);
        several ellipses; a zero stride; a shrunk index outside its dimension or with a
        stride <= 0; more indexed dimensions than ``input_`` has.
    """
    b = _host_ints("strided_slice", "begin", begin)
    e = _host_ints("strided_slice", "end", end)
    s = np.ones_like(b) if strides is None else _host_ints("strided_slice", "strides", strides)
    if not (b.ndim == e.ndim == s.ndim == 1 and b.size == e.size == s.size and b.size < 32):
        raise InvalidArgumentError(
            f"strided_slice: begin, end and strides must be 1-D with one length (below 32), "
            f"got shapes {list(b.shape)}, {list(e.shape)} and {list(s.shape)}")
    return _STRIDED_SLICE(
        input_, begin=tuple(b.tolist()), end=tuple(e.tolist()), strides=tuple(s.tolist()),
        begin_mask=_mask("begin_mask", begin_mask), end_mask=_mask("end_mask", end_mask),
        ellipsis_mask=_mask("ellipsis_mask", ellipsis_mask),
        new_axis_mask=_mask("new_axis_mask", new_axis_mask),
        shrink_axis_mask=_mask("shrink_axis_mask", shrink_axis_mask))


def _index_int(value):
    """A slice bound or index as TF's ``_check_index`` accepts it: None, a Python/numpy int,
    or a 0-d integer Tensor/array (read on the host: # syncs device); else None is returned
    for "not an integer"."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    if not isinstance(value, Tensor) and _symbolic_scalar(value):
        return None  # known at run time only
    v = value._value if isinstance(value, Tensor) else value
    if getattr(v, "ndim", None) == 0 and v.dtype.kind in "iu":
        return int(v.get() if backend.is_cupy_array(v) else v)
    return None


def _symbolic_scalar(value) -> bool:
    """A scalar integer graph tensor (TF takes one as an index or slice bound)."""
    return (isinstance(value, registry._symbolic_types)
            and getattr(value, "ndim", None) == 0
            and np.dtype(getattr(value, "dtype", None) or np.float32).kind in "iu")


def symbolic_key(key) -> bool:
    """Whether an indexing ``key`` holds a graph scalar (an index or a slice bound)."""
    types = registry._symbolic_types
    if not types:
        return False
    for p in key if type(key) in (tuple, list) else (key,):
        t = type(p)
        if t is int or p is None or p is Ellipsis:
            continue
        if t is builtins.slice:
            for v in (p.start, p.stop, p.step):
                if v is not None and type(v) is not int and _symbolic_scalar(v):
                    return True
        elif _symbolic_scalar(p):
            return True
    return False


def _is_index_array(part) -> bool:
    """An integer or bool array (or a list of them): numpy's advanced indexing."""
    if isinstance(part, list):
        return True
    v = part._value if isinstance(part, Tensor) else part
    return getattr(v, "ndim", 0) > 0 and getattr(v, "dtype", None) is not None


def tensor_getitem(tensor, key):
    """``tensor[key]`` as TF's ``Tensor.__getitem__`` (its ``_slice_helper``) reads it: a bool
    Tensor/array key is a boolean mask; otherwise a list key is read as a tuple (``x[[0, 1]]``
    is ``x[0, 1]``), and ints (shrink), slices, ``None`` (new axis) and one ``...`` become one
    ``strided_slice`` with TF's masks, so values, errors and gradients are TF's. Integer arrays
    inside a tuple key (numpy's advanced indexing, which TF refuses with TypeError) are kept
    as an ipu_gpu extension: such keys go to numpy-style indexing.

    Raises:
      TypeError: a float or other non-index part.
      ValueError: a bare bool key (TF: "mask cannot be scalar").
      InvalidArgumentError: what ``strided_slice`` refuses (an index out of range, a zero
        step, two ellipses, more indices than dimensions, indexing a scalar).
    """
    from . import indexing  # numpy-style indexing: bool masks and the advanced extension

    if isinstance(key, (bool, np.bool_)):
        raise ValueError("__getitem__: key must not be a bare bool (a mask cannot be scalar)")
    k = key._value if isinstance(key, Tensor) else key
    if getattr(k, "ndim", 0) > 0 and getattr(k, "dtype", None) is not None and \
            k.dtype.kind == "b":
        return indexing.getitem(tensor, key)
    parts = tuple(key) if isinstance(key, (list, tuple)) else (key,)
    begin, end, strides = [], [], []
    masks = dict.fromkeys(("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                           "shrink_axis_mask"), 0)
    for i, part in enumerate(parts):
        bit = 1 << i
        if isinstance(part, builtins.slice):
            bounds = []
            for v, default, mask in ((part.start, 0, "begin_mask"), (part.stop, 0, "end_mask"),
                                     (part.step, 1, None)):
                n = None if v is None else _index_int(v)
                if n is None and _symbolic_scalar(v):
                    n = v  # a graph scalar: strided_slice makes one node of the run's value
                if v is not None and n is None:
                    raise TypeError(f"__getitem__: slice bounds must be integers or scalar "
                                    f"integer Tensors, got {_short(v)}")
                if n is None and mask:
                    masks[mask] |= bit  # an open bound
                bounds.append(default if n is None else n)
            b, e, st = bounds
        elif part is Ellipsis or part is None:
            b, e, st = 0, 0, 1
            masks["ellipsis_mask" if part is Ellipsis else "new_axis_mask"] |= bit
        else:
            n = _index_int(part)
            if n is None and _symbolic_scalar(part):
                n = part
            if n is None:
                if _is_index_array(part):
                    return indexing.getitem(tensor, parts)
                raise TypeError(f"__getitem__: key must hold integers, slices (`:`), "
                                f"ellipsis (`...`), None (tf.newaxis) or scalar integer "
                                f"Tensors, got {_short(part)}")
            b, e, st = n, n + 1, 1
            masks["shrink_axis_mask"] |= bit
        begin.append(b)
        end.append(e)
        strides.append(st)
    if not parts:
        return tensor if isinstance(tensor, Tensor) else wrap(to_array(tensor))
    return strided_slice(tensor, begin, end, strides, **masks)


# ---- unstack --------------------------------------------------------------------------------
def _check_unstack(x, *, num, axis):
    if x.ndim == 0:
        raise ValueError("unstack: value must have rank >= 1, got a scalar")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"unstack: axis must be an int, got {_short(axis)}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"unstack: axis must be in [{-x.ndim}, {x.ndim}), got {axis}")
    n = x.shape[axis % x.ndim]
    if num is not None and num != n:
        raise InvalidArgumentError(f"unstack: num must be the size of axis {axis} ({n}), "
                                   f"got {num}")


def _unstack_forward(k, xp, x, *, num, axis):
    a = axis % x.ndim
    lead = (builtins.slice(None),) * a
    return [x[lead + (i,)] for i in builtins.range(x.shape[a])], (a,)


def _unstack_backward(k, xp, res, *gs, num, axis):
    (a,) = res
    parts = [xp.reshape(g, tuple(g.shape[:a]) + (1,) + tuple(g.shape[a:])) for g in gs]
    return (xp.concatenate(parts, axis=a),)


_UNSTACK = register("unstack", args=("value",), check=_check_unstack,
                    forward=_unstack_forward, backward=_unstack_backward,
                    twice_differentiable=True)


def unstack(value, num=None, axis=0, name=None) -> list:
    """The slices of ``value`` along ``axis`` as a list of Tensors (rank one less).

    Raises:
      ValueError: ``value`` is a scalar or ``axis`` is outside [-rank, rank).
      InvalidArgumentError: ``num`` is given and is not the size of ``axis``.
    """
    n = None if num is None else _int_scalar("unstack", "num", num)
    return _UNSTACK(value, num=n, axis=axis)


# ---- broadcast_to ---------------------------------------------------------------------------
def _check_broadcast_to(x, *, shape):
    if any(d < 0 for d in shape):
        raise InvalidArgumentError(f"broadcast_to: shape must not have negative sizes, got "
                                   f"{list(shape)}")
    if x.ndim > len(shape):
        raise InvalidArgumentError(f"broadcast_to: shape must have at least {x.ndim} "
                                   f"dimensions (the rank of input), got {list(shape)}")
    for d, t in zip(x.shape[::-1], shape[::-1]):
        if d != t and d != 1:
            raise InvalidArgumentError(f"broadcast_to: shape must be broadcast-compatible "
                                       f"with input {list(x.shape)}, got {list(shape)}")


def _broadcast_to_forward(k, xp, x, *, shape):
    check_allocation("broadcast_to", xp, shape, x.dtype, "shape sets the shape")
    out = xp.empty(shape, x.dtype)  # materialised, as TF's (a zero-stride view is not)
    out[...] = x
    return out, (x.shape,)


_BROADCAST_TO = register(
    "broadcast_to", args=("input",), check=_check_broadcast_to,
    forward=_broadcast_to_forward, twice_differentiable=True,
    backward=lambda k, xp, res, g, *, shape: (unbroadcast(xp, g, res[0]),))


@shape_args("shape")
def broadcast_to(input, shape, name=None) -> Tensor:  # noqa: A002 - TF's name
    """``input`` broadcast (numpy rules) to ``shape``; the gradient sums over the broadcast
    axes.

    Raises:
      TypeError: ``shape`` does not hold integers.
      InvalidArgumentError: ``shape`` is not 1-D, negative, or not broadcast-compatible.
    """
    return _BROADCAST_TO(input, shape=_int_vector("broadcast_to", "shape", shape))


# ---- reverse, roll --------------------------------------------------------------------------
def _check_axes(op, axes, ndim):
    for a in axes:
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(f"{op}: axis must be in [{-ndim}, {ndim}), got {a}")


def _check_reverse(x, *, axis):
    _check_axes("reverse", axis, x.ndim)
    dims = [a % x.ndim for a in axis]
    if len(set(dims)) != len(dims):
        raise InvalidArgumentError(f"reverse: axis must not name a dimension twice, got "
                                   f"{list(axis)}")


def _reverse_forward(k, xp, x, *, axis):
    if not axis:
        return x, ()
    return xp.flip(x, axis=tuple(a % x.ndim for a in axis)), ()


_REVERSE = register(
    "reverse", args=("tensor",), check=_check_reverse, forward=_reverse_forward,
    twice_differentiable=True,
    backward=lambda k, xp, res, g, *, axis: (_apply(_REVERSE, g, axis=axis),))


def reverse(tensor, axis, name=None) -> Tensor:
    """``tensor`` with the dimensions in ``axis`` (a 1-D list; negative counts from the end)
    reversed.

    Raises:
      TypeError: ``axis`` does not hold integers.
      InvalidArgumentError: ``axis`` is not 1-D, out of range, or names a dimension twice.

    Deliberate difference: TF refuses tensors of rank > 8 (UnimplementedError); any rank
    works here.
    """
    return _REVERSE(tensor, axis=_int_vector("reverse", "axis", axis))


def _check_roll(x, *, shift, axis):
    if x.ndim == 0:
        raise InvalidArgumentError("roll: input must have rank >= 1, got a scalar")
    _check_axes("roll", axis, x.ndim)


def _roll_forward(k, xp, x, *, shift, axis):
    totals = {}
    for s, a in zip(shift, axis):  # shifts of one axis add up, as in TF
        a %= x.ndim
        totals[a] = totals.get(a, 0) + s
    moves = [(s % x.shape[a], a) for a, s in totals.items() if x.shape[a] and s % x.shape[a]]
    if not moves:
        return x, ()
    return xp.roll(x, tuple(s for s, _ in moves), axis=tuple(a for _, a in moves)), ()


_ROLL = register(
    "roll", args=("input",), check=_check_roll, forward=_roll_forward,
    twice_differentiable=True,
    backward=lambda k, xp, res, g, *, shift, axis: (
        _apply(_ROLL, g, shift=tuple(-s for s in shift), axis=axis),))


def roll(input, shift, axis, name=None) -> Tensor:  # noqa: A002 - TF's name
    """``input`` with its elements shifted ``shift`` places along ``axis`` (scalars, or 1-D
    lists of one length; shifts of a repeated axis add up), wrapping around.

    Raises:
      TypeError: ``shift`` or ``axis`` does not hold integers.
      InvalidArgumentError: ``input`` is a scalar; ``shift``/``axis`` are not scalars or 1-D
        of one size; an axis is out of range.
    """
    s = _int_vector("roll", "shift", shift, scalar_ok=True)
    a = _int_vector("roll", "axis", axis, scalar_ok=True)
    s_shape = _host_ints("roll", "shift", shift).shape
    a_shape = _host_ints("roll", "axis", axis).shape
    if s_shape != a_shape:  # TF compares shapes: shift [1] with axis 1 is refused
        raise InvalidArgumentError(f"roll: shift and axis must have the same size, got shapes "
                                   f"{list(s_shape)} and {list(a_shape)}")
    return _ROLL(input, shift=s, axis=a)


# ---- eye ------------------------------------------------------------------------------------
def _eye_size(arg: str, value) -> int:
    if isinstance(value, Tensor) or backend.is_cupy_array(value) or isinstance(value,
                                                                               np.ndarray):
        v = value._value if isinstance(value, Tensor) else value
        if v.ndim != 0 or v.dtype.kind not in "iu":
            raise TypeError(f"eye: {arg} must be a non-negative int, got {_short(value)}")
        value = int(v.get() if backend.is_cupy_array(v) else v)  # syncs device
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"eye: {arg} must be a non-negative int, got {_short(value)}")
    if value < 0:  # TF's Fill kernel: "Dimension -1 must be >= 0"
        raise InvalidArgumentError(f"eye: {arg} must be >= 0, got {value}")
    return int(value)


@shape_args("num_rows", "num_columns", "batch_shape")
def eye(num_rows, num_columns=None, batch_shape=None, dtype=dtypes.float32,
        name=None) -> Tensor:
    """An identity matrix of ``num_rows`` x ``num_columns`` (default: square), or a batch of
    them of shape ``batch_shape + [num_rows, num_columns]``, of ``dtype`` (float32), on the
    current backend.

    Raises:
      TypeError: a size that is not an int; ``batch_shape`` not of ints; an unknown dtype.
      InvalidArgumentError: a negative size.
      ResourceExhaustedError: the output cannot be allocated.
    """
    rows = _eye_size("num_rows", num_rows)
    cols = rows if num_columns is None else _eye_size("num_columns", num_columns)
    batch = () if batch_shape is None else _int_vector("eye", "batch_shape", batch_shape)
    if any(d < 0 for d in batch):
        raise InvalidArgumentError(f"eye: batch_shape must not have negative sizes, got "
                                   f"{list(batch)}")
    d = dtypes.as_dtype(dtype, "eye: dtype")
    shape = batch + (rows, cols)
    xp = backend.default_xp()
    check_allocation("eye", xp, shape, d)
    with AllocationGuard("eye", xp):
        out = xp.empty(shape, d)
        out[...] = xp.eye(rows, cols, dtype=d)
    return wrap(out)


# ---- linspace -------------------------------------------------------------------------------
def _linspace_dtype(d: np.dtype) -> np.dtype:
    """TF computes ``(stop - start) / (num - 1)`` with truediv: floats keep their dtype,
    int8/int16/uint8 become float32, int32/int64 float64."""
    if d.kind == "f":
        return d
    return dtypes.float32 if d.itemsize < 4 else dtypes.float64


def _check_linspace(start, stop, *, num, axis):
    if start.dtype.kind not in "iuf":
        raise TypeError(f"linspace: start must be a floating-point or integer tensor, got "
                        f"{start.dtype}")
    require_same_dtype("linspace", ("start", "stop"), start, stop)
    try:
        shape = np.broadcast_shapes(start.shape, stop.shape)
    except ValueError:
        raise InvalidArgumentError(f"linspace: stop must be broadcast-compatible with start "
                                   f"{list(start.shape)}, got {list(stop.shape)}") from None
    if num < 0:  # TF's Range kernel: "Requires start <= limit when delta > 0"
        raise InvalidArgumentError(f"linspace: num must be >= 0, got {num}")
    r = len(shape)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"linspace: axis must be an int, got {_short(axis)}")
    if not -r - 1 <= axis <= r:  # TF's ExpandDims kernel
        raise InvalidArgumentError(f"linspace: axis must be in [{-r - 1}, {r}], got {axis}")


def _linspace_forward(k, xp, start, stop, *, num, axis):
    shape = np.broadcast_shapes(start.shape, stop.shape)
    a = axis % (len(shape) + 1)
    d = _linspace_dtype(start.dtype)
    out_shape = shape[:a] + (num,) + shape[a:]
    check_allocation("linspace", xp, out_shape, d, "num sets the shape")
    # TF's linspace_nd: [start, start + delta * i for i in 1..num-2, stop], cut to num, each
    # step rounded in the output dtype
    lo = xp.broadcast_to(start, shape)
    hi = xp.broadcast_to(stop, shape)
    n_steps = max(num - 1, 1)
    with quiet(xp):  # integer differences wrap and float16 overflows to inf, as in TF
        delta = (hi - lo).astype(d) / xp.asarray(n_steps, dtype=d)
        lo, hi = lo.astype(d), hi.astype(d)
        steps = xp.arange(1, n_steps, dtype=np.int64).astype(d)
        steps = steps.reshape((1,) * a + (-1,) + (1,) * (len(shape) - a))
        mid = xp.expand_dims(lo, a) + xp.expand_dims(delta, a) * steps
    out = xp.concatenate([xp.expand_dims(lo, a), mid, xp.expand_dims(hi, a)], axis=a)
    return out[_along(out.ndim, a, 0, num)], (start.shape, stop.shape, shape, a)


def _linspace_backward(k, xp, res, g, *, num, axis):
    start_shape, stop_shape, shape, a = res
    gm = xp.moveaxis(g, a, 0)
    if num <= 1:
        g_start = gm[0] if num == 1 else xp.zeros(shape, g.dtype)
        g_stop = xp.zeros(shape, g.dtype)
    else:
        mid = gm[1:num - 1]
        steps = xp.arange(1, num - 1).astype(g.dtype).reshape((-1,) + (1,) * len(shape))
        g_delta = xp.sum(mid * steps, axis=0) / (num - 1)  # delta = (stop - start) / (num - 1)
        g_start = gm[0] + xp.sum(mid, axis=0) - g_delta
        g_stop = gm[num - 1] + g_delta
    return unbroadcast(xp, g_start, start_shape), unbroadcast(xp, g_stop, stop_shape)


_LINSPACE = register("linspace", args=("start", "stop"), check=_check_linspace,
                     forward=_linspace_forward, backward=_linspace_backward)


def _as_operand(value, dtype, arg, xp):
    if isinstance(value, Tensor) or isinstance(value, np.ndarray) or backend.is_cupy_array(
            value):
        return value
    a = to_array(value, dtype, arg=arg, op="linspace", xp=xp)
    return backend.to_device(xp, a) if type(a) is np.ndarray else a  # numpy scalars too


def linspace(start, stop, num, name=None, axis=0) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (both included) along a new
    axis ``axis``, as TF's ``linspace`` (``linspace_nd``): ``start`` and ``stop`` broadcast
    against each other; value i is ``start + i * ((stop - start) / (num - 1))`` computed in
    the output dtype, the last is ``stop`` exactly; ``num`` 1 gives ``[start]``, 0 nothing.

    ``stop`` is converted to the dtype of ``start`` (a Python float ``start`` is float32).
    The output dtype is that of ``start`` for floats; integer inputs give float64 (int32,
    int64) or float32 (narrower), TF's true division. Gradients flow to ``start`` and
    ``stop``.

    Raises:
      TypeError: ``num`` is not an integer; ``stop`` cannot take the dtype of ``start``;
        bool inputs.
      InvalidArgumentError: ``num`` < 0; ``start`` and ``stop`` do not broadcast; ``axis``
        outside [-rank-1, rank].
    """
    n = _int_scalar("linspace", "num", num)
    arrays = [getattr(v, "_value", v) for v in (start, stop)]
    # an array places the output; numpy scalars, like Python numbers, take the backend's
    anchor = next((v for v in arrays if hasattr(v, "dtype") and hasattr(v, "ndim")
                   and not isinstance(v, np.generic)), None)
    xp = backend.default_xp() if anchor is None else backend.xp_of(anchor)
    start = _as_operand(start, None, "start", xp)
    start_dtype = getattr(start, "dtype", None)
    stop = _as_operand(stop, start_dtype, "stop", xp)
    return _LINSPACE(start, stop, num=n, axis=axis)


# ---- meshgrid -------------------------------------------------------------------------------
def meshgrid(*args, **kwargs) -> list:
    """Coordinate grids from 1-D coordinate vectors (other ranks are flattened, as in TF).

    With ``indexing="xy"`` (the default, Cartesian) the first two output axes are swapped:
    for inputs of lengths M and N the outputs are N x M; ``"ij"`` (matrix) gives M x N. All
    inputs must share a dtype. ``name`` is accepted and ignored. Gradients flow to every
    input (the sum over the broadcast axes).

    Raises:
      TypeError: an unknown keyword argument; inputs of different dtypes or devices.
      ValueError: ``indexing`` is not "xy" or "ij".
    """
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: {sorted(kwargs)[0]!r} is an invalid keyword argument")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    if not args:
        return []
    tensors = [a if isinstance(a, Tensor) else wrap(to_array(a, arg=f"args[{i}]",
                                                              op="meshgrid"))
               for i, a in enumerate(args)]
    first = tensors[0]
    for i, t in enumerate(tensors[1:], 1):
        if t.dtype != first.dtype:
            raise TypeError(f"meshgrid: args[{i}] must have the dtype of args[0] "
                            f"({first.dtype.name}), got {t.dtype.name}")
        if t.device != first.device:
            raise TypeError(f"meshgrid: args[{i}] must be on the device of args[0] "
                            f"({first.device}), got {t.device}")
    n = len(tensors)
    sizes = [int(np.prod(t.shape, dtype=np.int64)) for t in tensors]
    columns = [(1,) * i + (sizes[i],) + (1,) * (n - i - 1) for i in builtins.range(n)]
    out_shape = list(sizes)
    if indexing == "xy" and n > 1:
        columns[0] = (1, sizes[0]) + (1,) * (n - 2)
        columns[1] = (sizes[1], 1) + (1,) * (n - 2)
        out_shape[0], out_shape[1] = sizes[1], sizes[0]
    return [broadcast_to(reshape(t, c), out_shape) for t, c in zip(tensors, columns)]


__all__ = ["broadcast_to", "eye", "linspace", "meshgrid", "pad", "rank", "reverse", "roll",
           "shape", "size", "slice", "strided_slice", "tensor_getitem", "tile", "unstack"]
