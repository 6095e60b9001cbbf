"""A minimal ``tf.SparseTensor`` (what ``VarLenFeature`` parses into) and ``to_dense``.

Only what parsing needs: the three component Tensors, the static shape and conversion to a
dense Tensor. Sparse arithmetic is not emulated.
"""

from __future__ import annotations

import numpy as np

from ..core.spec import TensorShape
from ..core.tensor import Tensor, wrap
from ..errors import InvalidArgumentError

__all__ = ["SparseTensor", "to_dense"]


def _host(value, dtype=None) -> np.ndarray:
    a = value._value if isinstance(value, Tensor) else np.asarray(value)
    if hasattr(a, "get"):
        a = a.get()  # syncs device
    return a if dtype is None else a.astype(dtype, copy=False)


class SparseTensor:
    """``tf.SparseTensor(indices, values, dense_shape)``: ``indices`` [N, rank] int64,
    ``values`` [N], ``dense_shape`` [rank] int64, all host Tensors."""

    def __init__(self, indices, values, dense_shape):
        self.indices = wrap(_host(indices, np.int64).reshape(-1, len(_host(dense_shape))))
        self.values = values if isinstance(values, Tensor) else wrap(_host(values))
        self.dense_shape = wrap(_host(dense_shape, np.int64).reshape(-1))

    @property
    def shape(self) -> TensorShape:
        return TensorShape([int(d) for d in self.dense_shape._value])

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def dtype(self):
        return self.values.dtype

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self.indices._value.tolist()}, "
                f"values={self.values._value.tolist()}, "
                f"dense_shape={self.dense_shape._value.tolist()})")


def to_dense(sp_input: SparseTensor, default_value=None, validate_indices=True, name=None):
    """``tf.sparse.to_dense``: the dense Tensor, ``default_value`` (0, or b"" for strings)
    where no index is given."""
    if not isinstance(sp_input, SparseTensor):
        raise TypeError(f"to_dense: sp_input must be a SparseTensor, got "
                        f"{type(sp_input).__name__}")
    values = sp_input.values._value
    shape = tuple(int(d) for d in sp_input.dense_shape._value)
    idx = sp_input.indices._value
    if validate_indices and len(idx) and ((idx < 0).any() or (idx >= np.asarray(shape)).any()):
        bad = int(np.argmax(((idx < 0) | (idx >= np.asarray(shape))).any(axis=1)))
        raise InvalidArgumentError(f"to_dense: indices[{bad}] = {idx[bad].tolist()} is out of "
                                   f"bounds: need 0 <= index < {list(shape)}")
    if default_value is None:
        default_value = b"" if values.dtype == object else 0
    out = np.empty(shape, dtype=values.dtype)
    out[...] = default_value
    if len(idx):
        out[tuple(idx.T)] = values
    return wrap(out)
