"""``tf.RaggedTensor`` of ragged rank 1, as ``tf.strings.split`` returns it: ``values`` (a
1-D Tensor) cut into rows by ``row_splits`` (int64, starting at 0). Host only, no gradient.
"""

from __future__ import annotations

import numpy as np

from .core.convert import convert_to_tensor
from .core.spec import TensorShape
from .core.tensor import Tensor, wrap
from .errors import InvalidArgumentError

__all__ = ["RaggedTensor"]


class RaggedTensor:
    """Rows of different lengths: row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``."""

    def __init__(self, values, row_splits):
        self._values = convert_to_tensor(values)
        splits = np.asarray(convert_to_tensor(row_splits).numpy(), np.int64)
        if splits.ndim != 1 or splits.size == 0 or splits[0] != 0 or (np.diff(splits) < 0).any() \
                or splits[-1] != self._values.shape[0]:
            raise InvalidArgumentError(None, None, "Arguments to _from_row_partition do not form a "
                                       "valid RaggedTensor")
        self._row_splits = wrap(splits)

    @classmethod
    def from_row_splits(cls, values, row_splits, name=None, validate=True):
        return cls(values, row_splits)

    @classmethod
    def from_row_lengths(cls, values, row_lengths, name=None, validate=True):
        lengths = np.asarray(convert_to_tensor(row_lengths).numpy(), np.int64)
        return cls(values, np.concatenate([[0], np.cumsum(lengths)]))

    @property
    def values(self) -> Tensor:
        return self._values

    @property
    def flat_values(self) -> Tensor:
        return self._values

    @property
    def row_splits(self) -> Tensor:
        return self._row_splits

    @property
    def dtype(self):
        return self._values.dtype

    @property
    def ragged_rank(self) -> int:
        return 1

    @property
    def shape(self) -> TensorShape:
        return TensorShape([self.nrows_int(), None, *self._values.shape[1:]])

    def nrows_int(self) -> int:
        return int(self._row_splits._value.size - 1)

    def nrows(self, out_type=np.int64) -> Tensor:
        return wrap(np.asarray(self.nrows_int(), out_type))

    def row_lengths(self) -> Tensor:
        return wrap(np.diff(self._row_splits._value))

    def _rows(self):
        v, s = self._values._value, self._row_splits._value
        return [v[s[i]:s[i + 1]] for i in range(s.size - 1)]

    def to_list(self) -> list:
        return [row.tolist() for row in self._rows()]

    def to_tensor(self, default_value=None, name=None, shape=None) -> Tensor:
        """The dense tensor, rows padded with ``default_value`` (zero: b"" for strings) to the
        longest row, or cut/padded to ``shape``."""
        rows = self._rows()
        v = self._values._value
        width = max((len(r) for r in rows), default=0)
        nrows = len(rows)
        if shape is not None:
            dims = list(shape)
            nrows = nrows if dims[0] is None else int(dims[0])
            width = width if dims[1] is None else int(dims[1])
        if default_value is None:
            fill = b"" if v.dtype == object else v.dtype.type(0)
        else:
            fill = convert_to_tensor(default_value)._value.reshape(()).item()
        out = np.empty((nrows, width, *v.shape[1:]), v.dtype)
        out[...] = fill
        for i, row in enumerate(rows[:nrows]):
            out[i, :min(len(row), width)] = row[:width]
        return wrap(out)

    def numpy(self) -> np.ndarray:
        out = np.empty(self.nrows_int(), object)
        for i, row in enumerate(self._rows()):
            out[i] = row
        return out

    def __getitem__(self, i):
        if isinstance(i, (int, np.integer)):
            rows = self._rows()
            return wrap(rows[i].copy())
        raise TypeError(f"RaggedTensor indices must be ints, got {type(i).__name__}")

    def __len__(self) -> int:
        return self.nrows_int()

    def __repr__(self) -> str:
        return f"<ipu_gpu.RaggedTensor {self.to_list()}>"
