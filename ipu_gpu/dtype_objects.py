"""The dtype objects a program sees as ``tf.float32``, ``tf.int32``, ... (``tf.DType``).

Inside ipu_gpu dtypes are numpy dtypes (``core/dtypes.py``); these objects wrap one and add
TF's ``DType`` API: ``name``, ``min``/``max`` (TF's values and errors), ``limits``,
``size``, ``is_floating``/``is_integer``/``is_unsigned``/``is_bool``, ``as_numpy_dtype``,
``as_datatype_enum``, ``base_dtype``/``real_dtype``, ``is_compatible_with``; ``repr`` is
``tf.float32``, ``str`` ``<dtype: 'float32'>``. Everything numpy needs still works on
them: numpy reads their ``dtype`` attribute (``np.zeros(2, tf.float32)``), they compare
and hash equal to their numpy dtype (and to its name, as TF's compare), and other numpy
dtype attributes (``kind``, ``itemsize``, ...) are the numpy dtype's.

``tf.bfloat16`` exists as a dtype object (its name, limits, size and enum are TF's) so
programs can name it (mixed-precision policies, comparisons), but no tensor can have it:
like the IPU, ipu_gpu computes in float16/float32, and converting to it raises TF's
``TypeError`` for an unsupported dtype.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DType", "as_dtype", "bfloat16", "wrap"]

# TF's DataType enum values
_ENUMS = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
          "string": 7, "int64": 9, "bool": 10, "bfloat16": 14, "uint16": 17, "float16": 19,
          "uint32": 22, "uint64": 23}
# TF's dtype_range (image intensity limits): floats are -1..1
_RANGES = {"bool": (False, True), "uint8": (0, 255), "int8": (-128, 127),
           "int16": (-32768, 32767), "int32": (-2**31, 2**31 - 1),
           "int64": (-2**63, 2**63 - 1), "float32": (-1, 1), "float64": (-1, 1)}
_BFLOAT16_MAX = 3.3895313892515355e38


class DType:
    """A TensorFlow dtype (``tf.DType``) over ipu_gpu's numpy dtype."""

    __slots__ = ("_np", "_name")

    def __init__(self, np_dtype, name=None):
        object.__setattr__(self, "_np", None if np_dtype is None else np.dtype(np_dtype))
        object.__setattr__(self, "_name", name or self._np.name)

    # ---- numpy's view ----
    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype (what ``np.dtype(tf.float32)`` reads)."""
        if self._np is None:
            raise TypeError(f"dtype must be one of ['bool', 'float16', 'float32', 'float64', "
                            f"'int16', 'int32', 'int64', 'int8', 'uint8'], got {self._name} "
                            "(ipu_gpu, like the IPU, has no bfloat16)")
        return self._np

    def __getattr__(self, attr):
        return getattr(self.dtype, attr)

    def __eq__(self, other):
        if isinstance(other, DType):
            return self._name == other._name
        if other is None:
            return False
        if isinstance(other, str):
            return other == self._name or (other == "half" and self._name == "float16") or \
                (other == "double" and self._name == "float64") or \
                (other == "float" and self._name == "float32")
        if self._np is None:
            return getattr(other, "name", None) == self._name
        try:
            return self._np == np.dtype(other)
        except TypeError:
            return False

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(self._np) if self._np is not None else hash(self._name)

    def __repr__(self) -> str:
        return f"tf.{self._name}"

    def __str__(self) -> str:
        return f"<dtype: '{self._name}'>"

    def __reduce__(self):
        return wrap, (self._name,)

    # ---- TF's DType API ----
    @property
    def name(self) -> str:
        return self._name

    @property
    def as_numpy_dtype(self):
        """The numpy scalar type (``np.float32``)."""
        return self.dtype.type

    @property
    def as_datatype_enum(self) -> int:
        return _ENUMS[self._name]

    @property
    def base_dtype(self) -> DType:
        return self

    @property
    def real_dtype(self) -> DType:
        return self

    @property
    def size(self) -> int:
        return 2 if self._np is None else self._np.itemsize

    is_floating = property(lambda self: self._np is None or self._np.kind == "f")
    is_integer = property(lambda self: self._np is not None and self._np.kind in "iu")
    is_unsigned = property(lambda self: self._np is not None and self._np.kind == "u")
    is_bool = property(lambda self: self._np is not None and self._np.kind == "b")
    is_complex = property(lambda self: False)
    is_quantized = property(lambda self: False)
    is_numpy_compatible = property(lambda self: self._np is not None)

    def _info(self, which: str):
        if self._np is None:  # bfloat16
            return np.float32(-_BFLOAT16_MAX if which == "min" else _BFLOAT16_MAX)
        if self._np.kind in "bOSU":
            raise TypeError(f"Cannot find {'minimum' if which == 'min' else 'maximum'} value "
                            f"of {self} with type {self}.")
        info = np.finfo(self._np) if self._np.kind == "f" else np.iinfo(self._np)
        return getattr(info, which)

    @property
    def min(self):
        """The smallest value of the dtype (TypeError for bool and string)."""
        return self._info("min")

    @property
    def max(self):
        """The largest value of the dtype (TypeError for bool and string)."""
        return self._info("max")

    @property
    def limits(self):
        """TF's intensity limits ``(0, max)`` (floats: ``(0, 1)``).

        Raises:
          ValueError: float16 and bfloat16 (TF's message)."""
        if self._name not in _RANGES:
            raise ValueError(f"{self} does not have defined limits.")
        return 0, _RANGES[self._name][1]

    def is_compatible_with(self, other) -> bool:
        """Whether ``other`` (a dtype or its name) is this dtype."""
        return self == other


_BY_NAME: dict = {}


def wrap(value):
    """The ``DType`` of a numpy dtype or a dtype name (the same object each time)."""
    name = value if isinstance(value, str) else np.dtype(value).name
    if name == "object":
        name = "string"
    found = _BY_NAME.get(name)
    if found is None:
        if name == "bfloat16":
            found = DType(None, "bfloat16")
        else:
            found = DType(object if name == "string" else name, name)
        _BY_NAME[name] = found
    return found


bfloat16 = wrap("bfloat16")


def as_dtype(type_value):
    """``tf.as_dtype``: the DType of a dtype, a name, a Python or numpy type (``tf.string``
    for strings, the numpy object dtype ipu_gpu stores them in).

    Raises:
      TypeError: an unsupported dtype."""
    if type_value is bfloat16 or type_value == "bfloat16":
        return bfloat16
    from .core.dtypes import as_dtype as _as_numpy_dtype

    d = _as_numpy_dtype(type_value)
    return d if d.kind == "O" else wrap(d)
