"""Diagonals and bands of (batches of) matrices: ``tf.linalg.diag``, ``diag_part``,
``band_part``, and TF 1's tensor ``diag``/``diag_part``. Gradients are each other's: the
diagonal of the cotangent for ``diag``, the cotangent on the diagonal for ``diag_part``,
the band of the cotangent for ``band_part``."""

from __future__ import annotations

import numpy as np

from ..core.registry import register, symbolic_call
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError
from . import shape as shape_ops
from ._util import shape_str
from .math_extra import _static_int


def _diagonal_index(rows, cols, k, length):
    """(row, column) indices of diagonal k's first ``length`` entries."""
    i = np.arange(length)
    return i + max(-k, 0), i + max(k, 0)


def _take(xp, a, rows, cols):
    if xp is not np:
        rows, cols = xp.asarray(rows), xp.asarray(cols)
    return a[..., rows, cols]


# ---- linalg.diag --------------------------------------------------------------------------------
def _diag_shape(length, k, num_rows, num_cols):
    """TF's MatrixDiagV3 shape rule: the smallest matrix holding diagonal k, square unless
    num_rows/num_cols say otherwise."""
    min_rows, min_cols = length + max(-k, 0), length + max(k, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    elif num_rows == -1:
        num_rows = min_rows
    elif num_cols == -1:
        num_cols = min_cols
    if num_rows < min_rows:
        raise InvalidArgumentError(f"diag: the number of rows is too small: num_rows "
                                   f"{num_rows} < {min_rows} for diagonal {k} of length {length}")
    if num_cols < min_cols:
        raise InvalidArgumentError(f"diag: the number of columns is too small: num_cols "
                                   f"{num_cols} < {min_cols} for diagonal {k} of length {length}")
    if num_rows != min_rows and num_cols != min_cols:
        raise InvalidArgumentError(f"diag: num_rows ({num_rows}) or num_cols ({num_cols}) must "
                                   f"be the minimum ({min_rows} or {min_cols})")
    return num_rows, num_cols


def _check_diag(d, *, k, num_rows, num_cols, padding_value):
    if d.ndim < 1:
        raise ValueError(f"diag: diagonal must be at least 1-D, got shape {shape_str(d.shape)}")
    _diag_shape(d.shape[-1], k, num_rows, num_cols)


def _diag_forward(k_, xp, d, *, k, num_rows, num_cols, padding_value):
    length = d.shape[-1]
    rows, cols = _diag_shape(length, k, num_rows, num_cols)
    out = xp.full(d.shape[:-1] + (rows, cols), padding_value, d.dtype)
    r, c = _diagonal_index(rows, cols, k, length)
    if xp is not np:
        r, c = xp.asarray(r), xp.asarray(c)
    out[..., r, c] = d
    return out, (length,)


def _diag_backward(k_, xp, res, g, *, k, num_rows, num_cols, padding_value):
    (length,) = res
    r, c = _diagonal_index(None, None, k, length)
    return (_take(xp, g, r, c),)


_DIAG = register("diag", args=("diagonal",), check=_check_diag, forward=_diag_forward,
                 backward=_diag_backward)


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT"):
    """Matrices (one per batch entry) with ``diagonal`` (last axis) on diagonal ``k`` (an
    int: 0 main, > 0 above, < 0 below) and ``padding_value`` elsewhere; square and as small
    as holds it unless ``num_rows``/``num_cols`` say otherwise (TF's MatrixDiagV3 rule).
    ``align`` only matters for bands of diagonals, which this does not take (k a pair:
    TypeError)."""
    _check_align("diag", align)
    return _DIAG(diagonal, k=_single_k("diag", k), num_rows=_static_int("diag", "num_rows",
                 num_rows), num_cols=_static_int("diag", "num_cols", num_cols),
                 padding_value=_scalar("diag", padding_value))


def _single_k(op, k):
    if isinstance(k, (list, tuple)) or (isinstance(k, np.ndarray) and k.ndim):
        raise TypeError(f"{op}: k must be one int (a band of diagonals, k=(low, high), is not "
                        f"emulated), got {k!r}")
    return _static_int(op, "k", k)


def _scalar(op, value):
    if hasattr(value, "numpy"):
        value = value.numpy()
    value = np.asarray(value)
    if value.ndim:
        raise ValueError(f"{op}: padding_value must be a scalar, got shape "
                         f"{shape_str(value.shape)}")
    return value.item()


_ALIGNS = ("LEFT_LEFT", "LEFT_RIGHT", "RIGHT_LEFT", "RIGHT_RIGHT")


def _check_align(op, align):
    if align not in _ALIGNS:
        raise ValueError(f"{op}: align must be one of {', '.join(_ALIGNS)}, got {align!r}")


# ---- linalg.diag_part ---------------------------------------------------------------------------
def _part_length(rows, cols, k):
    return max(min(rows - max(-k, 0), cols - max(k, 0)), 0)


def _check_diag_part(x, *, k):
    if x.ndim < 2:
        raise ValueError(f"diag_part: input must be at least 2-D, got shape "
                         f"{shape_str(x.shape)}")
    rows, cols = x.shape[-2:]
    if (rows or cols) and not -rows < k < cols:
        raise InvalidArgumentError(f"diag_part: k is out of bound: {k}, it must be between "
                                   f"{-rows} and {cols} (exclusive)")


def _diag_part_forward(k_, xp, x, *, k):
    rows, cols = x.shape[-2:]
    r, c = _diagonal_index(rows, cols, k, _part_length(rows, cols, k))
    return xp.ascontiguousarray(_take(xp, x, r, c)), (x.shape,)


def _diag_part_backward(k_, xp, res, g, *, k):
    (shape,) = res
    rows, cols = shape[-2:]
    r, c = _diagonal_index(rows, cols, k, _part_length(rows, cols, k))
    out = xp.zeros(shape, g.dtype)
    if xp is not np:
        r, c = xp.asarray(r), xp.asarray(c)
    out[..., r, c] = g
    return (out,)


_DIAG_PART = register("diag_part", args=("input",), check=_check_diag_part,
                      forward=_diag_part_forward, backward=_diag_part_backward)


def diag_part(input, name="diag_part", k=0, padding_value=0,  # noqa: A002 - TF's name
              align="RIGHT_LEFT"):
    """Diagonal ``k`` (an int) of the matrices in the last two axes of ``input``: shape
    ``input.shape[:-2] + [length]``. ``padding_value`` and ``align`` only matter for bands of
    diagonals, which this does not take (k a pair: TypeError)."""
    _check_align("diag_part", align)
    _scalar("diag_part", padding_value)
    return _DIAG_PART(input, k=_single_k("diag_part", k))


# ---- linalg.band_part ---------------------------------------------------------------------------
def _band_mask(rows, cols, lower, upper):
    i = np.arange(rows)[:, None]
    j = np.arange(cols)[None, :]
    return ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))


def _check_band(x, *, num_lower, num_upper):
    if x.ndim < 2:
        raise ValueError(f"band_part: input must be at least 2-D, got shape "
                         f"{shape_str(x.shape)}")
    rows, cols = x.shape[-2:]
    if num_lower > rows:
        raise InvalidArgumentError(f"band_part: num_lower must be negative or at most the "
                                   f"number of rows ({rows}), got {num_lower}")
    if num_upper > cols:
        raise InvalidArgumentError(f"band_part: num_upper must be negative or at most the "
                                   f"number of columns ({cols}), got {num_upper}")


def _band(xp, a, num_lower, num_upper):
    mask = _band_mask(*a.shape[-2:], num_lower, num_upper)
    return xp.where(mask if xp is np else xp.asarray(mask), a, xp.zeros((), a.dtype))


_BAND_PART = register(
    "band_part", args=("input",), check=_check_band,
    forward=lambda k, xp, x, *, num_lower, num_upper: (_band(xp, x, num_lower, num_upper), ()),
    backward=lambda k, xp, res, g, *, num_lower, num_upper: (_band(xp, g, num_lower,
                                                                    num_upper),))


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002 - TF's name
    """``input`` (batches of matrices in the last two axes) with the entries outside the band
    zeroed: entry (i, j) stays where ``i - j <= num_lower`` and ``j - i <= num_upper``, a
    negative bound keeping that whole triangle (``band_part(x, -1, 0)``: lower triangle)."""
    return _BAND_PART(input, num_lower=_static_int("band_part", "num_lower", num_lower),
                      num_upper=_static_int("band_part", "num_upper", num_upper))


# ---- TF 1's tensor diag / diag_part -------------------------------------------------------------
def tensor_diag(diagonal, name=None):
    """TF 1's ``tf.diag``: a tensor of shape ``D + D`` (``D = diagonal.shape``) with
    ``diagonal[i...]`` at ``[i..., i...]`` and zeros elsewhere (not batched)."""
    if not isinstance(diagonal, Tensor):
        node = symbolic_call(tensor_diag, (diagonal,), {})
        if node is not NotImplemented:  # a graph tensor: one graph node
            return node
    from ..core.convert import convert_to_tensor

    d = convert_to_tensor(diagonal)
    dims = list(d.shape)
    if not dims:
        raise InvalidArgumentError("diag: diagonal must be at least rank 1, got a scalar")
    if d.dtype.kind not in "fiuc":
        raise TypeError(f"diag: diagonal must be a numeric tensor, got {d.dtype}")
    return shape_ops.reshape(diag(shape_ops.reshape(d, [-1])), dims + dims)


def tensor_diag_part(input, name=None):  # noqa: A002 - TF's name
    """TF 1's ``tf.diag_part``: of a tensor of shape ``D + D``, the entries ``[i..., i...]``
    (shape ``D``)."""
    if not isinstance(input, Tensor):
        node = symbolic_call(tensor_diag_part, (input,), {})
        if node is not NotImplemented:  # a graph tensor: one graph node
            return node
    from ..core.convert import convert_to_tensor

    x = convert_to_tensor(input)
    dims = list(x.shape)
    half = len(dims) // 2
    if len(dims) % 2 or dims[:half] != dims[half:]:
        raise InvalidArgumentError(f"diag_part: input must have shape D + D (an even rank "
                                   f"and matching halves), got {shape_str(dims)}")
    n = int(np.prod(dims[:half], dtype=np.int64))
    return shape_ops.reshape(diag_part(shape_ops.reshape(x, [n, n])), dims[:half])


__all__ = ["band_part", "diag", "diag_part", "tensor_diag", "tensor_diag_part"]
