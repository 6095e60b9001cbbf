"""``tf.IndexedSlices``: a sparse gradient, the rows ``values[i]`` of a dense tensor of shape
``dense_shape`` at row ``indices[i]`` (duplicates sum), and ``tf.IndexedSlicesSpec``.

As in TensorFlow, the gradient of a row gather (``tf.gather`` on axis 0,
``tf.nn.embedding_lookup``) with respect to its params is one; the tape concatenates such
gradients where they meet and densifies them where they meet a dense one. An op given one
densifies it (``densify``: ``unsorted_segment_sum`` of the values, recorded on tapes like any
op), so does ``convert_to_tensor``; ``identity``, ``cast`` and the clip functions keep it,
and the Keras optimizers update only its rows.
"""

from __future__ import annotations

import numpy as np

from . import dtypes
from .spec import TensorShape as SpecShape
from .spec import as_shape, dtype_repr
from .tensor import OPS, Tensor, wrap

__all__ = ["IndexedSlices", "IndexedSlicesSpec", "densify"]


def _as_tensor(value, what: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    if hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, np.generic):
        return wrap(value)  # a numpy/cupy array (the tape's gradients)
    from .convert import convert_to_tensor

    try:
        return convert_to_tensor(value)
    except TypeError:
        raise TypeError(f"IndexedSlices: {what} must be a Tensor or convertible to one, got "
                        f"{type(value).__name__}") from None


class IndexedSlices:
    """A sparse representation of a set of tensor slices at given indices.

    ``IndexedSlices(values, indices, dense_shape)`` stands for the dense tensor ``dense``
    with ``dense[indices[i]] = values[i]`` for each i (rows of repeated indices summed,
    the others zero).

    Args:
      values: A Tensor of any dtype with shape ``[D0, R1, ..., Rm]``.
      indices: A 1-D integer Tensor with shape ``[D0]``.
      dense_shape: A 1-D int Tensor (or a list) with the dense shape ``[LARGE0, R1, ...,
        Rm]``, or None.

    Deliberate difference: ``values``, ``indices`` and ``dense_shape`` are converted to
    Tensors (TensorFlow keeps what it is given).
    """

    __slots__ = ("_values", "_indices", "_dense_shape", "_static_shape")

    def __init__(self, values, indices, dense_shape=None):
        self._values = _as_tensor(values, "values")
        self._indices = _as_tensor(indices, "indices")
        if self._indices.dtype.kind not in "iu":
            raise TypeError(f"IndexedSlices: indices must be an integer Tensor, got "
                            f"{self._indices.dtype.name}")
        self._static_shape = None
        if dense_shape is None:
            self._dense_shape = None
        elif isinstance(dense_shape, Tensor):
            self._dense_shape = dense_shape
        else:
            dims = tuple(int(d) for d in dense_shape)
            self._static_shape = dims
            big = any(d > np.iinfo(np.int32).max for d in dims)
            self._dense_shape = wrap(np.array(dims, np.int64 if big else np.int32))

    @property
    def values(self) -> Tensor:
        """A Tensor containing the values of the slices."""
        return self._values

    @property
    def indices(self) -> Tensor:
        """A 1-D Tensor containing the indices of the slices."""
        return self._indices

    @property
    def dense_shape(self):
        """A 1-D Tensor containing the shape of the corresponding dense tensor (or None)."""
        return self._dense_shape

    def _dims(self):
        """The dense shape as a tuple of ints, or None (reads a device tensor: syncs)."""
        if self._static_shape is None and self._dense_shape is not None:
            self._static_shape = tuple(int(d) for d in self._dense_shape.numpy())
        return self._static_shape

    @property
    def shape(self) -> SpecShape:
        """The static shape of the dense tensor: ``dense_shape``, else unknown (as TF)."""
        dims = self._dims()
        return SpecShape(None if dims is None else list(dims))

    @property
    def dtype(self) -> np.dtype:
        """The dtype of the elements (``values.dtype``)."""
        return self._values.dtype

    @property
    def device(self) -> str:
        """The device of the values."""
        return self._values.device

    @property
    def name(self) -> str:
        return getattr(self._values, "name", "")

    @property
    def _type_spec(self) -> IndexedSlicesSpec:
        ds = self._dense_shape
        return IndexedSlicesSpec(self.shape, self.dtype, self._indices.dtype,
                                 None if ds is None else ds.dtype, [self._indices.shape[0]])

    def __neg__(self) -> IndexedSlices:
        return IndexedSlices(-self._values, self._indices, self._dense_shape)

    def __str__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"


def densify(slices: IndexedSlices, dtype=None, arg: str = "value") -> Tensor:
    """The dense Tensor ``slices`` stands for (TF's IndexedSlices conversion): the values
    scatter-added at their indices (``unsorted_segment_sum``, on the tapes like any op).

    Raises:
      ValueError: ``slices`` has no ``dense_shape`` (TensorFlow's message).
      TypeError: ``dtype`` is given and differs from the values'.
    """
    if dtype is not None and np.dtype(dtype) != slices.dtype:
        raise TypeError(f"convert_to_tensor: {arg} must have dtype {np.dtype(dtype).name}, got "
                        f"IndexedSlices of dtype {slices.dtype.name}")
    dims = slices._dims()
    if dims is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices for argument `{arg}` "
                         f"without dense_shape: {slices}")
    values = slices._values
    if tuple(values.shape[1:]) != tuple(dims[1:]):
        raise ValueError(f"IndexedSlices: values must have shape [n] + {list(dims[1:])}, got "
                         f"{list(values.shape)}")
    return OPS["unsorted_segment_sum"](values, slices._indices, dims[0])


class IndexedSlicesSpec:
    """The type of an IndexedSlices (``tf.IndexedSlicesSpec``).

    Args:
      shape: The dense shape (a TensorShape or list; None: unknown rank).
      dtype: The values' dtype.
      indices_dtype: The indices' dtype (int32 or int64).
      dense_shape_dtype: The dense_shape's dtype, or None when there is none.
      indices_shape: The indices' shape (a 1-D shape).
    """

    __slots__ = ("_shape", "_dtype", "_indices_dtype", "_dense_shape_dtype", "_indices_shape")

    def __init__(self, shape=None, dtype=dtypes.float32, indices_dtype=dtypes.int64,
                 dense_shape_dtype=None, indices_shape=None):
        self._shape = as_shape(shape)
        self._dtype = dtypes.as_dtype(dtype, "IndexedSlicesSpec: dtype")
        self._indices_dtype = dtypes.as_dtype(indices_dtype, "IndexedSlicesSpec: indices_dtype")
        self._dense_shape_dtype = (None if dense_shape_dtype is None else dtypes.as_dtype(
            dense_shape_dtype, "IndexedSlicesSpec: dense_shape_dtype"))
        self._indices_shape = as_shape([None] if indices_shape is None else indices_shape)
        if self._indices_shape.rank not in (None, 1):
            raise ValueError(f"IndexedSlicesSpec: indices_shape must be 1-D, got "
                             f"{self._indices_shape}")

    value_type = IndexedSlices

    @property
    def shape(self) -> SpecShape:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    def is_compatible_with(self, other) -> bool:
        if isinstance(other, IndexedSlices):
            other = other._type_spec
        if not isinstance(other, IndexedSlicesSpec):
            return False
        return (self._dtype == other._dtype and self._indices_dtype == other._indices_dtype
                and self._dense_shape_dtype == other._dense_shape_dtype
                and self._shape.is_compatible_with(other._shape)
                and self._indices_shape.is_compatible_with(other._indices_shape))

    def _key(self):
        return (self._shape, self._dtype, self._indices_dtype, self._dense_shape_dtype,
                self._indices_shape)

    def __eq__(self, other):
        if not isinstance(other, IndexedSlicesSpec):
            return NotImplemented
        return self._key() == other._key()

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        ds = "None" if self._dense_shape_dtype is None else dtype_repr(self._dense_shape_dtype)
        return (f"IndexedSlicesSpec({self._shape!r}, {dtype_repr(self._dtype)}, "
                f"{dtype_repr(self._indices_dtype)}, {ds}, {self._indices_shape!r})")
