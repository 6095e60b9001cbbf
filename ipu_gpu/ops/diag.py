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


def _entries(rows, cols, k0, k1, width, align):
    """Where diagonals k0..k1 of a rows x cols matrix go in the packed form
    ``[num_diags, width]`` (diagonal k1 first; a short diagonal is placed at the left or the
    right of its row as ``align`` says: its first word for k >= 0, its second for k < 0):
    (packed row, packed column, matrix row, matrix column) index arrays."""
    super_left, sub_left = (part == "LEFT" for part in align.split("_"))
    parts = []
    for d in range(k1, k0 - 1, -1):
        length = max(min(rows - max(-d, 0), cols - max(d, 0)), 0)
        n = np.arange(length)
        left = super_left if d >= 0 else sub_left
        offset = 0 if left else width - length
        parts.append((np.full(length, k1 - d), n + offset, n + max(-d, 0), n + max(d, 0)))
    return tuple(np.concatenate([p[i] for p in parts]).astype(np.int64) for i in range(4))


def _at(xp, index):
    return tuple(i if xp is np else xp.asarray(i) for i in index)


def _max_length(rows, cols, k0, k1):
    return max(min(rows + min(k1, 0), cols - max(k0, 0)), 0)


# ---- linalg.diag --------------------------------------------------------------------------------
def _diag_shape(width, k0, k1, num_rows, num_cols):
    """TF's MatrixDiagV3 shape rule: the smallest matrix holding the diagonals, square unless
    num_rows/num_cols say otherwise."""
    min_rows, min_cols = width - min(k1, 0), width + max(k0, 0)
    if num_rows == -1 and num_cols == -1:
        num_rows = num_cols = max(min_rows, min_cols)
    elif num_rows == -1:
        num_rows = min_rows
    elif num_cols == -1:
        num_cols = min_cols
    if num_rows < min_rows:
        raise InvalidArgumentError(f"diag: the number of rows is too small: num_rows "
                                   f"{num_rows} < {min_rows}")
    if num_cols < min_cols:
        raise InvalidArgumentError(f"diag: the number of columns is too small: num_cols "
                                   f"{num_cols} < {min_cols}")
    if num_rows != min_rows and num_cols != min_cols:
        raise InvalidArgumentError(f"diag: num_rows ({num_rows}) or num_cols ({num_cols}) must "
                                   f"be the minimum ({min_rows} or {min_cols})")
    return num_rows, num_cols


def _check_diag(d, *, k, num_rows, num_cols, padding_value, align):
    k0, k1 = k
    band = k0 != k1
    if d.ndim < 1 + band:
        raise ValueError(f"diag: diagonal must be at least {1 + band}-D, got shape "
                         f"{shape_str(d.shape)}")
    if band and d.shape[-2] != k1 - k0 + 1:
        raise InvalidArgumentError(f"diag: diagonal must have {k1 - k0 + 1} rows (the number "
                                   f"of diagonals k[0]..k[1]), got shape {shape_str(d.shape)}")
    _diag_shape(d.shape[-1], k0, k1, num_rows, num_cols)


def _diag_forward(k_, xp, d, *, k, num_rows, num_cols, padding_value, align):
    k0, k1 = k
    band = k0 != k1
    width = d.shape[-1]
    rows, cols = _diag_shape(width, k0, k1, num_rows, num_cols)
    batch = d.shape[:-2] if band else d.shape[:-1]
    packed = d if band else d[..., None, :]
    pr, pc, r, c = _at(xp, _entries(rows, cols, k0, k1, width, align))
    out = xp.full(batch + (rows, cols), padding_value, d.dtype)
    out[..., r, c] = packed[..., pr, pc]
    return out, (d.shape,)


def _diag_backward(k_, xp, res, g, *, k, num_rows, num_cols, padding_value, align):
    (shape,) = res
    k0, k1 = k
    rows, cols = g.shape[-2:]
    pr, pc, r, c = _at(xp, _entries(rows, cols, k0, k1, shape[-1], align))
    packed = xp.zeros(shape if k0 != k1 else shape[:-1] + (1, shape[-1]), g.dtype)
    packed[..., pr, pc] = g[..., r, c]
    return (packed.reshape(shape),)


_DIAG = register("diag", args=("diagonal",), check=_check_diag, forward=_diag_forward,
                 backward=_diag_backward)


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0,
         align="RIGHT_LEFT"):
    """Matrices (one per batch entry) with ``diagonal`` on diagonal ``k`` (an int: 0 main,
    > 0 above, < 0 below) and ``padding_value`` elsewhere; with ``k=(k0, k1)``, ``diagonal``'s
    last two axes are the diagonals k1 down to k0 (``[num_diags, width]``, a short one placed
    by ``align``: its first word for k >= 0, its second for k < 0). The matrices are square
    and as small as hold them unless ``num_rows``/``num_cols`` say otherwise (TF's
    MatrixDiagV3 rule). The gradient is the diagonals of the cotangent."""
    _check_align("diag", align)
    return _DIAG(diagonal, k=_k_pair("diag", k), num_rows=_static_int("diag", "num_rows",
                 num_rows), num_cols=_static_int("diag", "num_cols", num_cols),
                 padding_value=_scalar("diag", padding_value), align=align)


def _k_pair(op, k):
    """(k0, k1) from an int or a pair of ints, k0 <= k1."""
    if hasattr(k, "numpy"):
        k = k.numpy()
    if isinstance(k, np.ndarray):
        k = k.tolist()
    if isinstance(k, (list, tuple)):
        if len(k) not in (1, 2):
            raise ValueError(f"{op}: k must be an int or a pair of ints, got {k!r}")
        k0, k1 = (_static_int(op, "k", v) for v in (k[0], k[-1]))
        if k0 > k1:
            raise InvalidArgumentError(f"{op}: k[0] ({k0}) must not be larger than k[1] "
                                       f"({k1})")
        return k0, k1
    k = _static_int(op, "k", k)
    return k, k


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
def _check_diag_part(x, *, k, padding_value, align):
    if x.ndim < 2:
        raise ValueError(f"diag_part: input must be at least 2-D, got shape "
                         f"{shape_str(x.shape)}")
    rows, cols = x.shape[-2:]
    for v in k:
        if (rows or cols) and not -rows < v < cols:
            raise InvalidArgumentError(f"diag_part: k is out of bound: {v}, it must be "
                                       f"between {-rows} and {cols} (exclusive)")


def _diag_part_forward(k_, xp, x, *, k, padding_value, align):
    k0, k1 = k
    rows, cols = x.shape[-2:]
    width = _max_length(rows, cols, k0, k1)
    pr, pc, r, c = _at(xp, _entries(rows, cols, k0, k1, width, align))
    out = xp.full(x.shape[:-2] + (k1 - k0 + 1, width), padding_value, x.dtype)
    out[..., pr, pc] = x[..., r, c]
    return (out if k0 != k1 else out[..., 0, :]), (x.shape,)


def _diag_part_backward(k_, xp, res, g, *, k, padding_value, align):
    (shape,) = res
    k0, k1 = k
    rows, cols = shape[-2:]
    packed = g if k0 != k1 else g[..., None, :]
    pr, pc, r, c = _at(xp, _entries(rows, cols, k0, k1, packed.shape[-1], align))
    out = xp.zeros(shape, g.dtype)
    out[..., r, c] = packed[..., pr, pc]
    return (out,)


_DIAG_PART = register("diag_part", args=("input",), check=_check_diag_part,
                      forward=_diag_part_forward, backward=_diag_part_backward)


def diag_part(input, name="diag_part", k=0, padding_value=0,  # noqa: A002 - TF's name
              align="RIGHT_LEFT"):
    """Diagonal ``k`` of the matrices in the last two axes of ``input`` (shape
    ``input.shape[:-2] + [length]``); with ``k=(k0, k1)``, diagonals k1 down to k0 as
    ``[..., num_diags, max_length]``, the short ones padded with ``padding_value`` on the
    side ``align`` says (its first word for k >= 0, its second for k < 0)."""
    _check_align("diag_part", align)
    return _DIAG_PART(input, k=_k_pair("diag_part", k),
                      padding_value=_scalar("diag_part", padding_value), align=align)


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
