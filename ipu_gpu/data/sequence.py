"""Transformations of the order of elements: repeat, take, skip, shard, concatenate,
enumerate (and the pass-through that carries ``with_options``). Over an index plan they
transform the index stream, so a following batch still gathers whole batches at once.
Cardinalities follow TF's kernels exactly (including ``take`` with a negative count other
than -1)."""

from __future__ import annotations

import numpy as np

from .. import errors
from ..core import nest
from ..core.spec import TensorSpec
from .dataset import INFINITE, UNKNOWN, Dataset, as_int
from .structure import same_structure


class _Passthrough(Dataset):
    """The input unchanged (``with_options`` attaches its options to one)."""

    def __init__(self, input_dataset):
        self._input = input_dataset
        self._inputs = (input_dataset,)

    def _compute_spec(self):
        return self._input.element_spec

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _index_plan(self):
        return self._input._index_plan()

    def _iter_elements(self):
        return self._input._elements()

    def _probe(self):
        return self._input._probe()


class Repeat(_Passthrough):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = -1 if count is None else as_int(count, "count", "repeat")

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return 0 if n == 0 else INFINITE
        if self._count == 0:
            return 0
        if n in (INFINITE, UNKNOWN):
            return n
        return self._count * n

    def _epochs(self, start):
        """Runs ``start()`` (one iteration of the input) count times; stops early when an
        iteration is empty, so repeating an empty dataset forever ends (as TF)."""
        i = 0
        while self._count < 0 or i < self._count:
            it = start()
            empty = True
            try:
                for item in it:
                    empty = False
                    yield item
            finally:
                it.close()
            if empty:
                return
            i += 1

    def _index_plan(self):
        plan = self._input._index_plan()
        if plan is None:
            return None
        return plan.with_chunks(lambda: self._epochs(lambda: _nonempty(plan.chunks())))

    def _iter_elements(self):
        return self._epochs(self._input._elements)


def _nonempty(chunks):
    for c in chunks:
        if len(c):
            yield c


class Take(_Passthrough):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = as_int(count, "count", "take")

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n == UNKNOWN:
            return UNKNOWN
        if n == INFINITE:
            return self._count
        if self._count == -1:
            return n
        return min(n, self._count)

    def _index_plan(self):
        plan = self._input._index_plan()
        if plan is None or self._count < 0:
            return plan
        count = self._count

        def chunks():
            left = count
            if left == 0:
                return
            it = plan.chunks()
            try:
                for c in it:
                    yield c[:left]
                    left -= min(left, len(c))
                    if left == 0:
                        return
            finally:
                it.close()
        return plan.with_chunks(chunks)

    def _iter_elements(self):
        if self._count < 0:
            yield from self._input._elements()
            return
        if self._count == 0:
            return
        it = self._input._elements()
        try:
            for i, element in enumerate(it, 1):
                yield element
                if i == self._count:
                    return
        finally:
            it.close()


class Skip(_Passthrough):
    def __init__(self, input_dataset, count):
        super().__init__(input_dataset)
        self._count = as_int(count, "count", "skip")

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        return 0 if self._count < 0 else max(0, n - self._count)

    def _index_plan(self):
        plan = self._input._index_plan()
        if plan is None:
            return None
        count = self._count

        def chunks():
            if count < 0:
                return
            left = count
            for c in plan.chunks():
                if left:
                    k = min(left, len(c))
                    left -= k
                    c = c[k:]
                if len(c):
                    yield c
        return plan.with_chunks(chunks)

    def _iter_elements(self):
        if self._count < 0:
            return
        it = self._input._elements()
        try:
            for i, element in enumerate(it):
                if i >= self._count:
                    yield element
        finally:
            it.close()


class Shard(_Passthrough):
    def __init__(self, input_dataset, num_shards, index):
        super().__init__(input_dataset)
        self._num = as_int(num_shards, "num_shards", "shard")
        self._index = as_int(index, "index", "shard")
        if self._num <= 0:
            raise errors.InvalidArgumentError("Number of shards must be greater than zero "
                                              f"(currently num_shards = {self._num}).")
        if not 0 <= self._index < self._num:
            raise errors.InvalidArgumentError(f"Index must be between 0 and {self._num - 1} "
                                              f"(currently index = {self._index}).")

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        return n // self._num + (1 if self._index < n % self._num else 0)

    def _index_plan(self):
        plan = self._input._index_plan()
        if plan is None:
            return None
        num, index = self._num, self._index

        def chunks():
            pos = 0
            for c in plan.chunks():
                first = (index - pos) % num
                pos += len(c)
                kept = c[first::num]
                if len(kept):
                    yield kept
        return plan.with_chunks(chunks)

    def _iter_elements(self):
        it = self._input._elements()
        try:
            for i, element in enumerate(it):
                if i % self._num == self._index:
                    yield element
        finally:
            it.close()


def _incompatible(a, b) -> TypeError:
    return TypeError(f"Incompatible dataset elements:\n  {a} vs. \n  {b}")


class Concatenate(Dataset):
    def __init__(self, first, second):
        if not isinstance(second, Dataset):
            raise TypeError(f"concatenate: dataset must be a Dataset, got "
                            f"{type(second).__name__}")
        self._first, self._second = first, second
        self._inputs = (first, second)
        a, b = first._spec_or_none(), second._spec_or_none()
        if a is not None and b is not None:
            self._merge(a, b)

    @staticmethod
    def _merge(a, b):
        if not same_structure(a, b):
            raise _incompatible(a, b)
        fa, fb = nest.flatten(a), nest.flatten(b)
        if any(x.dtype != y.dtype for x, y in zip(fa, fb)):
            raise _incompatible(a, b)
        return nest.pack_sequence_as(a, [TensorSpec(x.shape.most_specific_compatible_shape(
            y.shape), x.dtype) for x, y in zip(fa, fb)])

    def _compute_spec(self):
        return self._merge(self._first.element_spec, self._second.element_spec)

    def _cardinality(self) -> int:
        n1, n2 = self._first._cardinality(), self._second._cardinality()
        if INFINITE in (n1, n2):
            return INFINITE
        if UNKNOWN in (n1, n2):
            return UNKNOWN
        return n1 + n2

    def _iter_elements(self):
        for ds in (self._first, self._second):
            it = ds._elements()
            try:
                yield from it
            finally:
                it.close()

    def _probe(self):
        return self._first._probe()


class Enumerate(Dataset):
    def __init__(self, input_dataset, start):
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._start = as_int(start, "start", "enumerate")

    def _compute_spec(self):
        return (TensorSpec([], np.int64), self._input.element_spec)

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _iter_elements(self):
        it = self._input._elements()
        try:
            for i, element in enumerate(it, self._start):
                yield (np.array(i, dtype=np.int64), element)
        finally:
            it.close()

    def _probe(self):
        return (np.array(self._start, dtype=np.int64), self._input._probe())
