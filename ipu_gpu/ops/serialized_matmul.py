"""Graphcore's ``ipu.math_ops.serialized_matmul``: a matmul computed as ``serialization_factor``
smaller matmuls along one of its three dimensions, and a gradient serialized the same way.

Graphcore's names for the dimensions are its own: with ``op(a)`` of shape [..., m, k] and
``op(b)`` [..., k, n] after the transposes, ``'a_columns'`` splits m, ``'a_rows_b_columns'``
splits k and ``'b_rows'`` splits n. Splitting m or n changes no output element's arithmetic
(the kernels run such a forward or backward matmul as one GEMM: the unsplit matmul's bits);
splitting k adds the F partial products in slice order, ``((p0 + p1) + p2) + ...``, in the
output dtype, as Graphcore's Python ``+=`` does. The backward matmuls split the same problem
dimension, with the serialisation function Graphcore's custom gradient picks for each
(dimension, transpose_a, transpose_b) (``_GRAD_DIMS``); gradients of broadcast operands are
summed over the broadcast batch axes slice by slice (Graphcore's per-slice ``reduce_sum``).
"""

from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.registry import register
from ..core.tensor import Tensor
from ._util import broadcast_shape, require_same_dtype, unbroadcast
from .matmul import _mT

_AB = ("a", "b")
_NAME = "serialized_matmul"
_DTYPES = (dtypes.float16, dtypes.float32, dtypes.int32)
DIMENSIONS = ("a_columns", "a_rows_b_columns", "b_rows")

# (serialization_dimension, transpose_a, transpose_b) -> (grad_a's, grad_b's serialization),
# Graphcore's custom-gradient table (tf_ipu_semantics.md section 1). Every entry splits the
# same problem dimension as the forward (m, k or n), so the forward's divisibility check holds.
_GRAD_DIMS = {
    ("a_columns", False, False): ("a_columns", "a_rows_b_columns"),
    ("a_columns", False, True): ("a_columns", "a_rows_b_columns"),
    ("a_columns", True, False): ("b_rows", "a_rows_b_columns"),
    ("a_columns", True, True): ("b_rows", "a_rows_b_columns"),
    ("a_rows_b_columns", False, False): ("b_rows", "a_columns"),
    ("a_rows_b_columns", False, True): ("b_rows", "b_rows"),
    ("a_rows_b_columns", True, False): ("a_columns", "a_columns"),
    ("a_rows_b_columns", True, True): ("a_columns", "b_rows"),
    ("b_rows", False, False): ("a_rows_b_columns", "b_rows"),
    ("b_rows", False, True): ("a_rows_b_columns", "a_columns"),
    ("b_rows", True, False): ("a_rows_b_columns", "b_rows"),
    ("b_rows", True, True): ("a_rows_b_columns", "a_columns"),
}


def _operands(a, b, g, transpose_a, transpose_b):
    """((lhs, rhs, transpose_lhs, transpose_rhs) of dA, the same of dB): the standard matmul
    gradients in the operand order Graphcore's custom gradient uses."""
    if not transpose_a and not transpose_b:
        return (g, b, False, True), (a, g, True, False)  # dA = g b^T, dB = a^T g
    if not transpose_a:
        return (g, b, False, False), (g, a, True, False)  # dA = g b, dB = g^T a
    if not transpose_b:
        return (b, g, False, True), (a, g, False, False)  # dA = b g^T, dB = a g
    return (b, g, True, True), (g, a, True, True)  # dA = b^T g^T, dB = g^T a^T


def _check(a, b, *, serialization_factor, serialization_dimension, transpose_a, transpose_b):
    # Graphcore's order: factor, ranks, dimension name, then the split dimension's checks;
    # what its tf.matmul would refuse (inner sizes, batch shapes, dtypes) comes last.
    f = serialization_factor
    if f < 1:
        raise ValueError(f"{_NAME}: serialization_factor has to be at least 1, but was {f}.")
    for arg, x in zip(_AB, (a, b)):
        if x.ndim < 2:
            raise ValueError(f"{_NAME}: Expected tensor '{arg}' to have a minimum rank of 2")
    if serialization_dimension not in DIMENSIONS:
        raise ValueError(f"{_NAME}: Invalid serialization_dimension={serialization_dimension}, "
                         f"expected one of: 'a_columns', 'a_rows_b_columns', 'b_rows'.")
    m, k_a = (a.shape[-1], a.shape[-2]) if transpose_a else a.shape[-2:]
    k_b, n = (b.shape[-1], b.shape[-2]) if transpose_b else b.shape[-2:]
    if serialization_dimension == "a_columns" and m % f:
        raise ValueError(f"{_NAME}: Expected 'serialization_factor' ({f}) to divide the columns "
                         f"dimension of 'a' ({m}).")
    if serialization_dimension == "a_rows_b_columns":
        if k_a != k_b:
            raise ValueError(f"{_NAME}: Expected the number of columns in 'a' ({k_a}) to match "
                             f"the number of rows in 'b' ({k_b}).")
        if k_a % f:
            raise ValueError(f"{_NAME}: Expected 'serialization_factor' ({f}) to divide the rows "
                             f"dimension of 'a' ({k_a}).")
    if serialization_dimension == "b_rows" and n % f:
        raise ValueError(f"{_NAME}: Expected 'serialization_factor' ({f}) to divide the rows "
                         f"dimension of 'b' ({n}).")
    if k_a != k_b:
        raise ValueError(f"{_NAME}: b must have {k_a} rows (the inner dimension of a), got "
                         f"{k_b} (a {list(a.shape)}, b {list(b.shape)}, transpose_a={transpose_a}, "
                         f"transpose_b={transpose_b})")
    broadcast_shape(_NAME, ("a's batch dimensions", "b's batch dimensions"), a.shape[:-2],
                    b.shape[:-2])
    require_same_dtype(_NAME, _AB, a, b)
    if a.dtype not in _DTYPES:
        raise TypeError(f"{_NAME}: a must be float16, float32 or int32, got {a.dtype}")


def _serialized(k, xp, lhs, rhs, transpose_lhs, transpose_rhs, dimension, factor, shape=None):
    """op(lhs) @ op(rhs) through the kernel, split along ``dimension``; with ``shape`` (an
    operand's shape, for its gradient), summed over the batch axes that broadcasting added."""
    x = _mT(xp, lhs) if transpose_lhs else lhs
    y = _mT(xp, rhs) if transpose_rhs else rhs
    full = np.broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1])
    reduce_axes = ()
    if shape is not None and tuple(shape) != full:
        lead = len(full) - len(shape)
        reduce_axes = tuple(range(lead)) + tuple(
            i for i in range(lead, len(full) - 2) if shape[i - lead] == 1 and full[i] != 1)
    kept = tuple(1 if i in reduce_axes else s for i, s in enumerate(full))
    out = xp.empty(kept, x.dtype)
    k.serialized_matmul(x, y, dimension, factor, out, reduce_axes)
    return out if shape is None else xp.reshape(out, tuple(shape))


def _forward(k, xp, a, b, *, serialization_factor, serialization_dimension, transpose_a,
             transpose_b):
    out = _serialized(k, xp, a, b, transpose_a, transpose_b, serialization_dimension,
                      serialization_factor)
    return out, (a, b)


def _backward(k, xp, res, g, *, serialization_factor, serialization_dimension, transpose_a,
              transpose_b, needed=(True, True)):
    a, b = res
    dims = _GRAD_DIMS[serialization_dimension, transpose_a, transpose_b]
    grads = []
    for want, x, (lhs, rhs, tl, tr), dim in zip(needed, (a, b),
                                               _operands(a, b, g, transpose_a, transpose_b),
                                               dims):
        if not want:  # the tape throws this gradient away (a data batch, an int operand)
            grads.append(None)
        elif isinstance(x, Tensor):
            # Nested tapes (second derivatives): the backward as serialized_matmul ops on
            # Tensors, so the outer tape records it.
            grads.append(unbroadcast(xp, _SERIALIZED_MATMUL(
                lhs, rhs, serialization_factor=serialization_factor,
                serialization_dimension=dim, transpose_a=tl, transpose_b=tr), x.shape))
        else:
            grads.append(_serialized(k, xp, lhs, rhs, tl, tr, dim, serialization_factor,
                                     x.shape))
    return tuple(grads)


_SERIALIZED_MATMUL = register(_NAME, args=_AB, check=_check, forward=_forward,
                              backward=_backward, family="serialized_matmul",
                              twice_differentiable=True, scalars_follow=True,
                              partial_backward=True)


def serialized_matmul(a, b, serialization_factor, serialization_dimension, transpose_a=False,
                      transpose_b=False, name=None):
    """Multiplies matrix ``a`` by matrix ``b``, producing ``a * b``, with the multiplication
    serialized on one of its dimensions (Graphcore's ``ipu.math_ops.serialized_matmul``).

    On the IPU, serializing a matmul trades extra computation and tensor copies for smaller
    code. Here it selects how the product is split into smaller GEMMs, which decides the
    floating-point accumulation order when the inner dimension is split.

    After any transposes the inputs must have rank >= 2, the inner two dimensions must be
    valid matrix-multiplication dimensions and the outer (batch) dimensions broadcast as in
    ``tf.matmul``. With ``a`` of shape [..., m, k] and ``b`` of shape [..., k, n] *after* the
    transposes, the multiplication is serialized:

    * along the columns dimension of ``a`` (the m-dimension) with ``'a_columns'``;
    * along the rows dimension of ``a`` and the columns dimension of ``b`` (the k-dimension)
      with ``'a_rows_b_columns'``: the partial products are added in slice order;
    * along the rows dimension of ``b`` (the n-dimension) with ``'b_rows'``.

    The gradient of a serialized matmul is serialized too (the backward matmuls split the
    same dimension). Adjoint and sparse matrices are not supported.

    Args:
      a: Tensor of type float16, float32 or int32 and rank >= 2.
      b: Tensor of the same type as ``a`` and rank >= 2.
      serialization_factor: the number of smaller matmuls the operation is broken into
        (converted with ``int()``); must divide the dimension it serializes.
      serialization_dimension: ``'a_columns'``, ``'a_rows_b_columns'`` or ``'b_rows'``: the
        dimension along which the operation is serialized.
      transpose_a: if True, ``a`` is transposed (last two axes) before the multiplication.
      transpose_b: if True, ``b`` is transposed (last two axes) before the multiplication.
      name: name for the operation (optional; unused).

    Returns:
      A Tensor of the type of ``a`` and ``b`` whose inner-most matrices are the products of
      the corresponding matrices of ``a`` and ``b``; without transposes
      ``output[..., i, j] = sum_k a[..., i, k] * b[..., k, j]``.

    Raises:
      ValueError: Graphcore's messages (after the ``serialized_matmul:`` prefix) for a factor
        below 1, a rank below 2, an unknown ``serialization_dimension``, a factor that does
        not divide the split dimension, and mismatched inner sizes under
        ``'a_rows_b_columns'``; also mismatched inner sizes (other dimensions) and batch
        shapes that do not broadcast.
      TypeError: dtypes other than float16/float32/int32, or ``a`` and ``b`` of different
        dtypes.
    """
    return _SERIALIZED_MATMUL(a, b, serialization_factor=int(serialization_factor),
                              serialization_dimension=serialization_dimension,
                              transpose_a=bool(transpose_a), transpose_b=bool(transpose_b))
