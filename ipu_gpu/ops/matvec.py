"""``tf.linalg.matvec``: matrix (batch) times vector, ``matmul`` of ``a`` and ``b`` as a
column (so its batch broadcasting, dtypes, errors and gradient are ``matmul``'s)."""

from __future__ import annotations

from .matmul import matmul
from .shape import expand_dims, squeeze

__all__ = ["matvec"]


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False,
           name=None):
    """``a @ b`` over the last axes: ``a`` of shape ``[..., M, N]`` (``[..., N, M]``
    transposed), ``b`` of shape ``[..., N]``; the result has shape ``[..., M]``.
    ``adjoint_a`` is ``transpose_a`` for real dtypes; ``a_is_sparse``/``b_is_sparse`` are
    hints TF may ignore.

    Raises:
      ValueError: both ``transpose_a`` and ``adjoint_a`` (TF's message)."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of `transpose_a` and `adjoint_a` can be True. Received "
                         f"`transpose_a`={transpose_a}, `adjoint_a`={adjoint_a}.")
    column = matmul(a, expand_dims(b, -1), transpose_a=bool(transpose_a or adjoint_a))
    return squeeze(column, axis=-1)
