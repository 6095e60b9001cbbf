"""``tf.tensordot``: the sum of products over pairs of axes of two tensors, as TF builds it:
transposes and reshapes to one matmul (so its gradient and graph mode are matmul's)."""

from __future__ import annotations

import numpy as np

from ..core.convert import convert_to_tensor
from ..core.registry import symbolic_call
from ..core.tensor import Tensor
from . import matmul, shape


def _axes_lists(axes, a_rank, b_rank):
    """(a's contracted axes, b's contracted axes) from TF's ``axes``: an int N (a's last N
    against b's first N) or a pair of ints or of equal-length int lists."""
    if hasattr(axes, "numpy"):
        axes = axes.numpy()
    if isinstance(axes, np.ndarray):
        axes = axes.tolist()
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if n < 0:
            raise ValueError(f"tensordot: axes must be at least 0, got {n}")
        if n > a_rank or n > b_rank:
            raise ValueError(f"tensordot: axes must be at most the rank of a ({a_rank}) and "
                             f"of b ({b_rank}), got {n}")
        return list(range(a_rank - n, a_rank)), list(range(n))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, got "
                         f"{axes!r}")
    a_axes, b_axes = ([x] if isinstance(x, (int, np.integer)) else list(x) for x in axes)
    if len(a_axes) != len(b_axes):
        raise ValueError(f"tensordot: the two axis lists of axes must have one length, got "
                         f"{len(a_axes)} and {len(b_axes)}")
    for name, lst, rank in (("a", a_axes, a_rank), ("b", b_axes, b_rank)):
        for ax in lst:
            if isinstance(ax, bool) or not isinstance(ax, (int, np.integer)):
                raise TypeError(f"tensordot: axes must hold ints, got {ax!r}")
            if not -rank <= ax < rank:
                raise ValueError(f"tensordot: axis {ax} is out of range for {name} of rank "
                                 f"{rank}")
    return [int(x) % a_rank for x in a_axes], [int(x) % b_rank for x in b_axes]


def tensordot(a, b, axes, name=None):
    """``sum over the paired axes of a[...] * b[...]``: the free axes of ``a`` (in order)
    followed by those of ``b``. ``axes`` is an int N (a's last N axes against b's first N)
    or a pair ``[a_axes, b_axes]`` of axes or equal-length axis lists. a and b have one
    dtype; paired axes have one size.

    Raises:
      ValueError: bad ``axes``; paired axes of different sizes.
      TypeError: a and b of different dtypes.
    """
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        node = symbolic_call(tensordot, (a, b, axes), {})
        if node is not NotImplemented:  # a graph tensor argument: one graph node
            return node
    # KerasTensors keep their own (None batch) shape: the ops below record Keras layers
    a, b = (x if hasattr(x, "shape") and hasattr(x, "dtype") else convert_to_tensor(x)
            for x in (a, b))
    a_shape, b_shape = list(a.shape), list(b.shape)
    a_axes, b_axes = _axes_lists(axes, len(a_shape), len(b_shape))
    for i, j in zip(a_axes, b_axes):
        if None not in (a_shape[i], b_shape[j]) and a_shape[i] != b_shape[j]:
            raise ValueError(f"tensordot: axis {i} of a (size {a_shape[i]}) and axis {j} of b "
                             f"(size {b_shape[j]}) must have one size")
    a_free = [i for i in range(len(a_shape)) if i not in a_axes]
    b_free = [j for j in range(len(b_shape)) if j not in b_axes]
    k = _size([a_shape[i] for i in a_axes])
    a2 = shape.reshape(shape.transpose(a, a_free + a_axes),
                       [_size([a_shape[i] for i in a_free]), k])
    b2 = shape.reshape(shape.transpose(b, b_axes + b_free),
                       [k, _size([b_shape[j] for j in b_free])])
    out = [a_shape[i] for i in a_free] + [b_shape[j] for j in b_free]
    return shape.reshape(matmul.matmul(a2, b2), [-1 if d is None else d for d in out])


def _size(dims):
    """The product of ``dims``; -1 (reshape infers it) where one is unknown (None)."""
    return -1 if None in dims else int(np.prod(dims, dtype=np.int64))


__all__ = ["tensordot"]
