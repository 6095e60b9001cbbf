"""``tf.sequence_mask`` and ``tf.repeat``: masks of sequence lengths, and elements repeated
along an axis (with the gradient summing each element's copies)."""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.convert import convert_to_tensor
from ..core.registry import register, symbolic_call
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError
from . import reduction, shape
from ._util import check_axis, require_numeric, shape_str
from .creation import zeros
from .math_extra import _acc


# ---- sequence_mask ------------------------------------------------------------------------------
def _check_mask(lengths, maxlen, *, dtype):
    require_numeric("sequence_mask", "lengths", lengths)
    require_numeric("sequence_mask", "maxlen", maxlen)
    if maxlen.ndim != 0:
        raise ValueError(f"sequence_mask: maxlen must be a scalar, got shape "
                         f"{shape_str(maxlen.shape)}")


def _mask_forward(k, xp, lengths, maxlen, *, dtype):
    n = maxlen.item()  # the output's size: read at once (syncs the device)
    if n < 0:
        raise InvalidArgumentError(f"sequence_mask: maxlen must be non-negative, got {n}")
    steps = xp.arange(int(np.ceil(n)), dtype=maxlen.dtype)
    mask = steps < lengths.astype(maxlen.dtype)[..., None]
    return (mask if dtype is None else mask.astype(dtype)), None


_SEQUENCE_MASK = register("sequence_mask", args=("lengths", "maxlen"), check=_check_mask,
                          forward=_mask_forward)


def sequence_mask(lengths, maxlen=None, dtype=None, name=None):
    """``mask[i..., j] = j < lengths[i...]``, of shape ``lengths.shape + [maxlen]``; ``maxlen``
    (a scalar) defaults to the largest length (0 for no lengths). The lengths are cast to
    maxlen's dtype first (a Python int: int32), as TF. ``dtype`` (default bool) is the
    output's.

    Raises:
      TypeError: non-numeric ``lengths`` or ``maxlen``.
      ValueError: ``maxlen`` is not a scalar.
      InvalidArgumentError: a negative ``maxlen``.
    """
    node = symbolic_call(sequence_mask, (lengths, maxlen), dict(dtype=dtype))
    if node is not NotImplemented:  # a graph tensor argument: one graph node
        return node
    if maxlen is None:  # max(0, max(lengths)), as ops that a graph or a Keras model records
        flat = shape.reshape(lengths, [-1])
        maxlen = reduction.reduce_max(shape.concat([flat, zeros([1], flat.dtype)], 0))
    out = None if dtype is None else dtypes.as_dtype(dtype, "sequence_mask: dtype")
    return _SEQUENCE_MASK(lengths, maxlen, dtype=None if out == dtypes.bool_ else out)


# ---- repeat -------------------------------------------------------------------------------------
def _check_repeat(x, *, repeats, axis):
    check_axis("repeat", axis, x.ndim)
    if len(repeats) not in (1, x.shape[axis]):
        raise ValueError(f"repeat: repeats must have 1 or {x.shape[axis]} elements (the size "
                         f"of input's axis {axis}), got {len(repeats)}")


def _counts(repeats, n):
    counts = np.maximum(np.asarray(repeats, np.int64), 0)  # TF repeats a negative count 0 times
    return np.broadcast_to(counts, (n,))


def _repeat_forward(k, xp, x, *, repeats, axis):
    n = x.shape[axis]
    counts = _counts(repeats, n)
    # cupy's repeat takes the counts as a list
    return xp.repeat(x, counts if xp is np else counts.tolist(), axis=axis), (n,)


def _repeat_backward(k, xp, res, g, *, repeats, axis):
    # the copies of element i are the slice [ends[i] - counts[i], ends[i]) of g: differences
    # of g's running sum (from 0) at the slice ends
    (n,) = res
    counts = _counts(repeats, n)
    ends = np.cumsum(counts)
    running = xp.cumsum(g, axis=axis, dtype=_acc(g.dtype))
    pad = [(0, 0)] * g.ndim
    pad[axis] = (1, 0)
    running = xp.pad(running, pad)

    def at(indices):
        return xp.take(running, indices if xp is np else xp.asarray(indices), axis=axis)

    return ((at(ends) - at(ends - counts)).astype(g.dtype),)


_REPEAT = register("repeat", args=("input",), check=_check_repeat, forward=_repeat_forward,
                   backward=_repeat_backward)


def repeat(input, repeats, axis=None, name=None):  # noqa: A002 - TF's name
    """``input`` with element i along ``axis`` repeated ``repeats[i]`` times (a scalar
    ``repeats`` repeats every element that often); ``axis=None`` repeats the flattened
    input. Negative counts repeat 0 times, as TF. The gradient sums each element's copies.

    Raises:
      TypeError: ``repeats`` is not an integer.
      ValueError: ``repeats`` has rank above 1, or a length that is neither 1 nor the size
        of ``axis``; ``axis`` out of range.
    """
    if not isinstance(input, Tensor) or not isinstance(repeats, (Tensor, int, list, tuple)):
        node = symbolic_call(repeat, (input, repeats), dict(axis=axis))
        if node is not NotImplemented:  # a graph tensor argument: one graph node
            return node
    # arrays and KerasTensors go to the ops as they are (the ops record Keras layers)
    x = input if hasattr(input, "shape") and hasattr(input, "dtype") else convert_to_tensor(input)
    counts = np.asarray(repeats.numpy() if hasattr(repeats, "numpy") else repeats)
    if counts.dtype.kind not in "iu":
        raise TypeError(f"repeat: repeats must be an integer tensor, got {counts.dtype}")
    if counts.ndim > 1:
        raise ValueError(f"repeat: repeats must have rank at most 1, got shape "
                         f"{shape_str(counts.shape)}")
    if axis is None:
        x, axis = shape.reshape(x, [-1]), 0
    return _REPEAT(x, repeats=tuple(int(c) for c in counts.reshape(-1)), axis=axis)


__all__ = ["repeat", "sequence_mask"]
