"""``tf.experimental.numpy``: numpy's joining and splitting functions on Tensors, as TF's
``tf.experimental.numpy`` gives them (numpy's type promotion over the inputs; results are
Tensors, differentiable through ``concat``/``split``/``reshape``).

Only this family is provided; ``ipu-gpu check`` names any other function a program uses."""

from __future__ import annotations

import numpy as np

from ..core.convert import constant
from ..core.tensor import Tensor
from ..ops.math import cast
from ..ops.shape import concat, reshape, split as _tf_split, stack as _tf_stack

__all__ = ["asarray", "atleast_1d", "atleast_2d", "atleast_3d", "concatenate",
           "dsplit", "dstack", "hsplit", "hstack", "split", "stack", "vsplit", "vstack"]


def asarray(a, dtype=None):
    """``a`` as a Tensor (of ``dtype`` when given)."""
    t = a if isinstance(a, Tensor) else constant(np.asarray(a))
    return t if dtype is None else cast(t, np.dtype(dtype).name)


def _promoted(arrays) -> list:
    tensors = [asarray(a) for a in arrays]
    dtype = np.result_type(*[np.dtype(t.dtype.name) for t in tensors])
    return [t if np.dtype(t.dtype.name) == dtype else cast(t, dtype.name) for t in tensors]


def _at_least(a, rank: int):
    t = asarray(a)
    shape = tuple(t.shape)
    if len(shape) >= rank:
        return t
    if len(shape) == 0:
        return reshape(t, (1,) * rank)
    if len(shape) == 1:  # numpy: (n,) -> (1, n) -> (1, n, 1)
        return reshape(t, (1, shape[0]) if rank == 2 else (1, shape[0], 1))
    return reshape(t, shape + (1,))  # (m, n) -> (m, n, 1)


def atleast_1d(*arys):
    """Each array with at least one dimension (a list when more than one is given)."""
    out = [_at_least(a, 1) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """Each array with at least two dimensions (``(n,)`` becomes ``(1, n)``)."""
    out = [_at_least(a, 2) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """Each array with at least three dimensions (``(n,)`` becomes ``(1, n, 1)``,
    ``(m, n)`` becomes ``(m, n, 1)``)."""
    out = [_at_least(a, 3) for a in arys]
    return out[0] if len(out) == 1 else out


def concatenate(arys, axis=0):
    """The arrays joined along ``axis`` (numpy's type promotion; ``axis=None`` flattens)."""
    tensors = _promoted(arys)
    if axis is None:
        tensors, axis = [reshape(t, (-1,)) for t in tensors], 0
    return concat(tensors, axis=axis)


def stack(arrays, axis=0):
    """The arrays stacked along a new ``axis``."""
    return _tf_stack(_promoted(arrays), axis=axis)


def hstack(tup):
    """Joined along axis 1 (axis 0 for 1-D arrays)."""
    tensors = [_at_least(a, 1) for a in tup]
    return concatenate(tensors, axis=0 if len(tensors[0].shape) == 1 else 1)


def vstack(tup):
    """Joined along axis 0 after ``atleast_2d``."""
    return concatenate([_at_least(a, 2) for a in tup], axis=0)


def dstack(tup):
    """Joined along axis 2 after ``atleast_3d``."""
    return concatenate([_at_least(a, 3) for a in tup], axis=2)


def _sizes(t, boundaries, axis: int) -> list:
    """TF's ``_boundaries_to_sizes``: boundaries past the end give empty pieces; a boundary
    below the previous one (negative ones included) is an error."""
    shape = tuple(t.shape)
    if axis >= len(shape):
        raise ValueError(f"axis {axis} is out of bound for shape {shape}")
    total, sizes, taken, prev = shape[axis], [], 0, 0
    for i, b in enumerate(boundaries):
        b = int(b)
        if b - prev < 0:
            raise ValueError(f"The {i}-th boundary {b} is smaller than the previous boundary "
                             f"{prev}")
        size = min(b - prev, max(0, total - taken))
        sizes.append(size)
        taken += size
        prev = b
    return [*sizes, max(0, total - taken)]


def split(ary, indices_or_sections, axis=0):
    """``ary`` split along ``axis`` into ``indices_or_sections`` equal pieces, or at the given
    increasing boundaries.

    Raises:
      InvalidArgumentError: a section count that does not divide the axis (or is below 1).
      ValueError: decreasing or negative boundaries; an axis ``ary`` does not have.
    """
    t = asarray(ary)
    if isinstance(indices_or_sections, (int, np.integer)):
        return _tf_split(t, int(indices_or_sections), axis=axis)
    return _tf_split(t, _sizes(t, indices_or_sections, axis), axis=axis)


def _split_on_axis(ary, indices_or_sections, axis: int):
    t = asarray(ary)
    if axis == 1 and len(t.shape) == 1:  # hsplit of a 1-D array splits axis 0
        axis = 0
    if isinstance(indices_or_sections, (int, np.integer)):
        n = tuple(t.shape)[axis]  # IndexError for a missing axis, as TF
        if int(indices_or_sections) and n % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return split(t, indices_or_sections, axis=axis)


def hsplit(ary, indices_or_sections):
    """Split along axis 1 (axis 0 for 1-D arrays).

    Raises:
      ValueError: a section count that does not divide the axis.
    """
    return _split_on_axis(ary, indices_or_sections, 1)


def vsplit(ary, indices_or_sections):
    """Split along axis 0 (1-D arrays too, as TF)."""
    return _split_on_axis(ary, indices_or_sections, 0)


def dsplit(ary, indices_or_sections):
    """Split along axis 2.

    Raises:
      IndexError: ``ary`` has fewer than three dimensions and a section count is given;
      ValueError: the same with boundaries (TF's two errors).
    """
    return _split_on_axis(ary, indices_or_sections, 2)
