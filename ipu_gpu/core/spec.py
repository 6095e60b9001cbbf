"""Static shapes and type specs with TensorFlow's semantics: ``TensorShape`` (dimensions may be
unknown, ``None``; the rank itself may be unknown) and ``TensorSpec`` (a shape, a dtype and a
name). tf.data describes its elements with them (``Dataset.element_spec``).

Dtypes are numpy dtypes, as everywhere in ipu_gpu; TensorFlow's ``tf.string`` is
``string = numpy.dtype(object)``, an array whose items are ``bytes``.
"""

from __future__ import annotations

import abc

import numpy as np

from . import dtypes

__all__ = ["Dimension", "TensorShape", "TensorSpec", "as_shape", "spec_dtype", "string"]

string = np.dtype(object)  # tf.string: numpy object arrays holding bytes

_DTYPE_NAMES = {"string": string, "object": string, "str": string, "bytes": string,
                "uint16": np.dtype("uint16"), "uint32": np.dtype("uint32"),
                "uint64": np.dtype("uint64"), "complex64": np.dtype("complex64"),
                "complex128": np.dtype("complex128")}


def spec_dtype(value, arg: str = "dtype") -> np.dtype:
    """The numpy dtype for ``value`` (a dtype, a name, a Python type, a TF dtype), including
    ``string`` (object) and the numeric dtypes tf.data may carry beyond ipu_gpu's ops."""
    if isinstance(value, np.dtype):
        if value.kind in "OSU":
            return string
        return value
    if value in (str, bytes, np.object_, np.bytes_, np.str_, object):
        return string
    name = value if isinstance(value, str) else getattr(value, "name", None)
    if isinstance(name, str) and name in _DTYPE_NAMES:
        return _DTYPE_NAMES[name]
    np_type = getattr(value, "as_numpy_dtype", None)  # a real TF dtype
    if np_type is not None:
        return spec_dtype(np.dtype(np_type), arg)
    return dtypes.as_dtype(value, arg)


def dtype_repr(d: np.dtype) -> str:
    """TensorFlow's spelling of a dtype (``tf.float32``, ``tf.string``)."""
    return "tf.string" if d == string else f"tf.{np.dtype(d).name}"


class Dimension:
    """One dimension of a TensorShape (TF's ``Dimension``): ``value`` is an int or None.

    ``TensorShape.dims`` holds these, as in TensorFlow; indexing a shape gives plain ints."""

    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = _as_dim(value)

    @property
    def value(self):
        return self._value

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("int() of an unknown Dimension is not defined")
        return self._value

    __index__ = __int__

    def __eq__(self, other):
        other = other.value if isinstance(other, Dimension) else other
        if self._value is None or other is None:
            return None
        return self._value == other

    def __ne__(self, other):
        eq = self.__eq__(other)
        return None if eq is None else not eq

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return f"Dimension({self._value})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)


def _as_dim(value):
    """An int >= 0 or None, from an int, None, a Dimension or anything with __index__."""
    if value is None:
        return None
    if isinstance(value, Dimension):
        return value.value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError("Dimension value must be integer or None or have an __index__ method, "
                        f"got value '{value!r}' with type '{type(value)}'")
    v = int(value.__index__())
    if v < 0:
        raise ValueError(f"Dimension {v} must be >= 0")
    return v


class TensorShape(metaclass=abc.ABCMeta):  # noqa: B024 - ABC only for register()
    """The static shape of a tensor: a list of dimensions, each an int or None (unknown), or
    an unknown rank (``TensorShape(None)``). TensorFlow's semantics: ``==`` compares the
    dimension lists (so ``TensorShape([None]) == [None]``), ``is_compatible_with`` and
    ``merge_with`` treat None as a wildcard.
    """

    # An eager Tensor's shape (core.tensor.TensorShape, a tuple) registers as one too.

    __slots__ = ("_dims",)

    def __init__(self, dims=None):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape) and not isinstance(dims, tuple):
            self._dims = dims._dims
        else:
            try:
                items = list(dims)
            except TypeError:  # a single number is a rank-1 shape, as in TF
                items = [dims]
            self._dims = tuple(_as_dim(d) for d in items)

    # ---- reading --------------------------------------------------------------------------
    @property
    def rank(self):
        """The number of dimensions, or None when unknown."""
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self):
        """The dimensions as ``Dimension`` objects (None when the rank is unknown)."""
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    def as_list(self) -> list:
        """The dimensions as a list of ints and Nones; ValueError for an unknown rank."""
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self) -> bool:
        return self._dims is not None and None not in self._dims

    def num_elements(self):
        """The product of the dimensions, or None unless the shape is fully defined."""
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __bool__(self) -> bool:
        return self._dims is not None  # TF: True unless the rank is unknown, even for []

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            return TensorShape(None) if isinstance(key, slice) else None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    # ---- comparing and combining ----------------------------------------------------------
    def is_compatible_with(self, other) -> bool:
        """Whether some fully defined shape matches both (None matches anything)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def assert_is_compatible_with(self, other) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def merge_with(self, other) -> TensorShape:
        """The most specific shape compatible with both; ValueError when they conflict."""
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def most_specific_compatible_shape(self, other) -> TensorShape:
        """The most specific shape both are compatible with: dimensions that differ become
        None, a rank that differs makes the rank unknown."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(self._dims, other._dims)])

    def concatenate(self, other) -> TensorShape:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __add__(self, other) -> TensorShape:
        return self.concatenate(other)

    def __radd__(self, other) -> TensorShape:
        return as_shape(other).concatenate(self)

    def with_rank(self, rank: int) -> TensorShape:
        try:
            return self.merge_with(TensorShape([None] * rank))
        except ValueError:
            raise ValueError(f"Shape {self} must have rank {rank}") from None

    def with_rank_at_least(self, rank: int) -> TensorShape:
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def assert_has_rank(self, rank: int) -> None:
        if self._dims is not None and len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_is_fully_defined(self) -> None:
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._dims)

    def __reduce__(self):
        return TensorShape, (None if self._dims is None else list(self._dims),)

    def __repr__(self) -> str:
        return "TensorShape(None)" if self._dims is None else f"TensorShape({list(self._dims)})"

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({self._dims[0]},)"
        return "(" + ", ".join(str(d) for d in self._dims) + ")"


def as_shape(value) -> TensorShape:
    """``value`` as a TensorShape (a TensorShape passes through)."""
    if isinstance(value, TensorShape) and not isinstance(value, tuple):  # not an eager shape
        return value
    return TensorShape(value)


def unknown_shape(rank=None) -> TensorShape:
    """A shape of unknown rank, or of ``rank`` unknown dimensions."""
    return TensorShape(None if rank is None else [None] * rank)


class TensorSpec:
    """The type of a tensor: a shape (``TensorShape``), a dtype and an optional name.

    ``tf.data`` describes each element component by one (``Dataset.element_spec``).
    """

    __slots__ = ("_shape", "_dtype", "_name")

    def __init__(self, shape, dtype=dtypes.float32, name: str | None = None):
        self._shape = as_shape(shape)
        self._dtype = spec_dtype(dtype)
        self._name = name

    @classmethod
    def from_tensor(cls, tensor, name: str | None = None) -> TensorSpec:
        """The spec of a Tensor or array (its full static shape and dtype)."""
        value = getattr(tensor, "_value", tensor)
        a = value if hasattr(value, "shape") and hasattr(value, "dtype") else np.asarray(value)
        return cls(a.shape, a.dtype, name)

    @classmethod
    def from_spec(cls, spec, name: str | None = None) -> TensorSpec:
        return cls(spec.shape, spec.dtype, name if name is not None else spec.name)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def name(self):
        return self._name

    def is_compatible_with(self, other) -> bool:
        """Whether ``other`` (a spec, a Tensor or an array) has this dtype and a compatible
        shape."""
        if isinstance(other, TensorSpec):
            shape, dtype = other.shape, other.dtype
        else:
            value = getattr(other, "_value", other)
            if not (hasattr(value, "shape") and hasattr(value, "dtype")):
                value = np.asarray(value)
            shape, dtype = value.shape, spec_dtype(value.dtype)
        return dtype == self._dtype and self._shape.is_compatible_with(shape)

    def most_specific_compatible_type(self, other: TensorSpec) -> TensorSpec:
        if other.dtype != self._dtype:
            raise ValueError(f"No TypeSpec is compatible with both {self} and {other}")
        return TensorSpec(self._shape.most_specific_compatible_shape(other.shape), self._dtype,
                          self._name if self._name == other.name else None)

    def __eq__(self, other):
        if not isinstance(other, TensorSpec):
            return NotImplemented
        return (self._shape == other._shape and self._dtype == other._dtype
                and self._name == other._name)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self._shape, self._dtype, self._name))

    def __reduce__(self):
        return TensorSpec, (self._shape, self._dtype, self._name)

    def __repr__(self) -> str:
        name = "None" if self._name is None else repr(self._name)
        return f"TensorSpec(shape={self._shape}, dtype={dtype_repr(self._dtype)}, name={name})"
