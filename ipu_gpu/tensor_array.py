"""``tf.TensorArray``: a list of Tensors of one dtype, written and read by index.

As TensorFlow's eager TensorArray (which ``tf.function`` bodies and ``while_loop`` loops run
here too): ``write``/``unstack``/``scatter``/``split`` return the array itself, elements are
Tensors kept as they were written (a GradientTape differentiates ``stack``/``read``/...
through them), an element never written reads as zeros of the element shape. With
``infer_shape`` the first write fixes the element shape and later writes must match it
(ValueError); ``dynamic_size`` lets writes grow the array. TensorFlow's errors: a write of
another dtype (InvalidArgumentError), past a fixed size or at a negative index
(OutOfRangeError), a read past the end (OutOfRangeError), a second read of an element
cleared by ``clear_after_read`` (InvalidArgumentError; eager TensorFlow's default clears).

In a TF1 graph, elements may be graph tensors (indices and sizes stay Python values): the
array is then a construction-time list, and its results are graph nodes. A TensorArray cannot
be a loop variable of a graph ``while_loop``.
"""

from __future__ import annotations

import numpy as np

from .core.convert import convert_to_tensor
from .core.dtypes import as_dtype
from .core.spec import TensorShape, as_shape
from .core.tensor import Tensor
from .errors import InvalidArgumentError, OutOfRangeError
from .ops.array import unstack as _unstack
from .ops.creation import zeros
from .ops.shape import concat as _concat
from .ops.shape import split as _split
from .ops.shape import stack as _stack

__all__ = ["TensorArray"]


def _symbolic(x) -> bool:
    """A TF1 graph tensor (its value comes with each ``Session.run``): kept as it is, so the
    array's reads and ``stack``/``gather``/``concat`` become graph nodes."""
    return type(x).__name__ == "GraphTensor"


def _int(x, what: str) -> int:
    return int(np.asarray(x.numpy() if isinstance(x, Tensor) else x))


class TensorArray:
    """A dynamically written array of Tensors (``tf.TensorArray``)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None,
                 tensor_array_name=None, handle=None, flow=None, infer_shape=True,
                 element_shape=None, colocate_with_first_write_call=True, name=None):
        if size is None and not dynamic_size:
            raise ValueError("Size must be provided if handle is not provided")
        self._dtype = as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = bool(infer_shape)
        self._element_shape = as_shape(element_shape) if element_shape is not None \
            else TensorShape(None)
        self._elements: list = [None] * (0 if size is None else _int(size, "size"))
        self._cleared: set = set()

    # ---- properties -------------------------------------------------------
    @property
    def dtype(self):
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        return self._element_shape

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def size(self, name=None) -> Tensor:
        """The number of elements, an int32 scalar."""
        return convert_to_tensor(np.int32(len(self._elements)))

    def identity(self):
        return self

    def close(self, name=None):
        self._elements = []

    # ---- writing ----------------------------------------------------------
    def _value(self, value) -> Tensor:
        t = value if isinstance(value, Tensor) or _symbolic(value) else convert_to_tensor(
            value, dtype=self._dtype)
        if t.dtype != self._dtype:
            raise InvalidArgumentError(f"TensorArray dtype is {self._dtype.name} but Op is trying "
                                       f"to write dtype {t.dtype.name}")
        return t

    def _merge_shape(self, t: Tensor) -> None:
        shape = as_shape(t.shape)
        if not self._element_shape.is_compatible_with(shape):
            raise ValueError(f"Incompatible shape for value ({tuple(t.shape)}), expected "
                             f"({tuple(self._element_shape.as_list())})")
        if self._infer_shape:
            self._element_shape = self._element_shape.merge_with(shape)

    def _put(self, index: int, t: Tensor) -> None:
        if index < 0:
            raise OutOfRangeError(f"Writing to negative indices (index {index}) is not allowed.")
        if index >= len(self._elements):
            if not self._dynamic_size:
                raise OutOfRangeError(f"Tried to write to index {index} but array is not "
                                      f"resizeable and size is: {len(self._elements)}")
            self._elements.extend([None] * (index + 1 - len(self._elements)))
        self._merge_shape(t)
        self._elements[index] = t
        self._cleared.discard(index)

    def write(self, index, value, name=None):
        """Write ``value`` at ``index``; returns the array."""
        self._put(_int(index, "index"), self._value(value))
        return self

    def unstack(self, value, name=None):
        """Write the slices of ``value`` along axis 0 at indices 0, 1, ..."""
        t = self._value(value)
        n = int(t.shape[0])
        if not self._dynamic_size and n > len(self._elements):
            raise ValueError(f"Cannot unstack {n} tensors into a TensorArray of static size "
                             f"{len(self._elements)} ")
        for i, row in enumerate(_unstack(t) if n else []):
            self._put(i, row)
        return self

    def scatter(self, indices, value, name=None):
        """Write the slices of ``value`` along axis 0 at ``indices``."""
        t = self._value(value)
        idx = [int(i) for i in np.asarray(
            indices.numpy() if isinstance(indices, Tensor) else indices).reshape(-1)]
        if len(idx) != int(t.shape[0]):
            raise InvalidArgumentError(f"Expected len(indices) == values.shape[0], but saw: "
                                       f"{len(idx)} vs. {int(t.shape[0])}")
        for i, row in zip(idx, _unstack(t) if idx else []):
            self._put(i, row)
        return self

    def split(self, value, lengths, name=None):
        """Write consecutive pieces of ``value`` (of ``lengths`` rows) at 0, 1, ..."""
        t = self._value(value)
        sizes = [int(n) for n in np.asarray(
            lengths.numpy() if isinstance(lengths, Tensor) else lengths).reshape(-1)]
        if sum(sizes) != int(t.shape[0]):
            raise InvalidArgumentError(f"Expected sum of lengths to be equal to values.shape[0], "
                                       f"but sum of lengths is {sum(sizes)} and value's shape is: "
                                       f"{list(t.shape)}")
        if not self._dynamic_size and len(sizes) > len(self._elements):
            raise InvalidArgumentError(f"TensorArray's size is not equal to the size of lengths "
                                       f"({len(self._elements)} vs. {len(sizes)}), and the "
                                       f"TensorArray is not marked as dynamically resizeable")
        saved, self._infer_shape = self._infer_shape, False
        try:
            for i, piece in enumerate(_split(t, sizes) if sizes else []):
                self._put(i, piece)
        finally:
            self._infer_shape = saved
        return self

    # ---- reading ----------------------------------------------------------
    def _get(self, index: int) -> Tensor:
        n = len(self._elements)
        if index < 0 or index >= n:
            raise OutOfRangeError(f"Tried to read from index {index} but array size is: {n}")
        if index in self._cleared:
            raise InvalidArgumentError(f"Could not read index {index} twice because it was "
                                       f"cleared after a previous read (perhaps try setting "
                                       f"clear_after_read = false?)")
        t = self._elements[index]
        if t is None:
            if not self._element_shape.is_fully_defined():
                raise ValueError(f"Cannot convert a partially known TensorShape "
                                 f"{self._element_shape} to a Tensor.")
            t = zeros(self._element_shape.as_list(), self._dtype)
        return t

    def read(self, index, name=None) -> Tensor:
        """The element at ``index``."""
        i = _int(index, "index")
        t = self._get(i)
        if self._clear_after_read:
            self._elements[i] = None
            self._cleared.add(i)
        return t

    def _all(self) -> list:
        return [self._get(i) for i in range(len(self._elements))]

    def stack(self, name=None) -> Tensor:
        """All elements stacked along a new axis 0."""
        if not self._elements:
            shape = self._element_shape.as_list() if self._element_shape.rank is not None \
                else []
            return zeros([0, *[0 if d is None else d for d in shape]], self._dtype)
        return _stack(self._all())

    def gather(self, indices, element_shape=None, name=None) -> Tensor:
        """The elements at ``indices`` stacked."""
        idx = np.asarray(indices.numpy() if isinstance(indices, Tensor) else indices)
        if idx.size == 0:
            return zeros([0, *(self._element_shape.as_list() or [])], self._dtype)
        return _stack([self._get(int(i)) for i in idx.reshape(-1)])

    def concat(self, name=None) -> Tensor:
        """All elements concatenated along axis 0."""
        if not self._elements:
            return zeros([0], self._dtype)
        return _concat(self._all(), 0)

    def __repr__(self):
        return (f"<ipu_gpu.TensorArray: size={len(self._elements)}, dtype={self._dtype.name}, "
                f"element_shape={self._element_shape}>")

