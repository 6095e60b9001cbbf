"""Norm clipping (``tf.clip_by_norm``, ``tf.clip_by_global_norm``, ``tf.linalg.global_norm``):
TF's arithmetic composed from core ops, so gradients are TF's. As TF's, they take
IndexedSlices (sparse gradients) and return them, computing on the values (rows of repeated
indices are not summed first). ``clip_by_value`` lives with the math ops."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.indexed_slices import IndexedSlices
from .indexing import where
from .math import divide, greater, maximum, minimum, multiply, sqrt, subtract
from .nn import l2_loss
from .reduction import reduce_sum
from .shape import stack

__all__ = ["clip_by_global_norm", "clip_by_norm", "global_norm"]


def _values(t):
    return t.values if isinstance(t, IndexedSlices) else t


def _like(t, values):
    """``values`` in the form of ``t``: an IndexedSlices with ``t``'s indices, or as is."""
    if isinstance(t, IndexedSlices):
        return IndexedSlices(values, t.indices, t.dense_shape)
    return values


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """``t * clip_norm / max(l2norm(t), clip_norm)``, the norm over ``axes`` (default all).

    Args:
      t: A Tensor or IndexedSlices (clipped by the norm of its values; one is returned).
      clip_norm: A positive scalar.
      axes: The dimensions the norm is computed over (None: all).
      name: Ignored.

    Returns:
      The clipped Tensor (or IndexedSlices); a zero norm leaves ``t`` as it is and keeps the
      gradient finite, as TF's."""
    values = _values(t)
    l2sum = reduce_sum(multiply(values, values), axes, keepdims=True)
    positive = greater(l2sum, 0.0)
    l2norm = where(positive, sqrt(where(positive, l2sum, 1.0)), l2sum)
    return _like(t, divide(multiply(values, clip_norm), maximum(l2norm, clip_norm)))


def _check_list(t_list, op):
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"{op}: `t_list` should be a sequence of tensors. Received "
                        f"{type(t_list)}.")


def global_norm(t_list, name=None):
    """``sqrt(sum(||t||^2))`` over the tensors of ``t_list`` (None entries skipped; an
    IndexedSlices counts its values), in their dtype.

    Raises:
      TypeError: ``t_list`` is not a sequence."""
    _check_list(t_list, "global_norm")
    half_squares = stack([l2_loss(_values(t)) for t in t_list if t is not None])
    return sqrt(multiply(reduce_sum(half_squares), 2.0))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """``(t_list scaled by clip_norm / max(global_norm, clip_norm), global_norm)``; every value
    NaN when the global norm is not finite, None entries kept, IndexedSlices kept (their
    values scaled), as TF's.

    Raises:
      TypeError: ``t_list`` is not a sequence."""
    _check_list(t_list, "clip_by_global_norm")
    if use_norm is None:
        use_norm = global_norm(t_list)
    scale = multiply(clip_norm, minimum(divide(1.0, use_norm), 1.0 / clip_norm))
    scale = scale + subtract(use_norm, use_norm)  # NaN for an infinite norm, as TF
    clipped = [None if t is None else _like(t, multiply(_values(t), scale)) for t in t_list]
    return clipped, use_norm
