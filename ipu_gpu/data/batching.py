"""batch, padded_batch and unbatch.

Batching a dataset with an index plan (an in-memory source, possibly shuffled, repeated, taken,
skipped, sharded) gathers each batch with one fancy index per component: the indices of a batch
are collected from the plan's stream and the rows fetched at once, never element by element.
"""

from __future__ import annotations

import numpy as np

from .. import errors
from ..core import nest
from ..core.spec import TensorShape, TensorSpec, as_shape, string
from ..errors import DataLossError
from . import structure
from .dataset import INFINITE, UNKNOWN, Dataset, as_bool, as_int
from .sources import _map_up_to


def _batch_size(value, op: str) -> int:
    n = as_int(value, "batch_size", op)
    if n <= 0:
        raise errors.InvalidArgumentError("Batch size must be greater than zero.")
    return n


def _batched_cardinality(n: int, batch_size: int, drop_remainder: bool) -> int:
    if n in (INFINITE, UNKNOWN):
        return n
    return n // batch_size + (0 if n % batch_size == 0 or drop_remainder else 1)


def _batched_spec(spec: TensorSpec, dim) -> TensorSpec:
    return TensorSpec(TensorShape([dim]).concatenate(spec.shape), spec.dtype)


def _probe_batch(probe, k: int):
    return nest.map_structure(lambda a: np.repeat(a[None], k, axis=0), probe)


def _element_batches(input_dataset, batch_size: int, drop_remainder: bool, combine):
    """Batches of the input's elements taken one at a time: ``combine`` turns each list of
    ``batch_size`` elements (the last one shorter, unless dropped) into a batch."""
    it = input_dataset._elements()
    try:
        batch = []
        for element in it:
            batch.append(element)
            if len(batch) == batch_size:
                yield combine(batch)
                batch = []
        if batch and not drop_remainder:
            yield combine(batch)
    finally:
        it.close()


def stack_components(elements: list):
    """One batch from a list of elements (same structure), each component stacked."""
    first = elements[0]
    if isinstance(first, np.ndarray):
        columns, pack = [elements], None
    elif type(first) is tuple and all(isinstance(a, np.ndarray) for a in first):
        columns, pack = list(zip(*elements)), tuple
    else:
        flats = [nest.flatten(e) for e in elements]
        columns, pack = list(zip(*flats)), (lambda f: nest.pack_sequence_as(first, f))
    out = []
    for i, col in enumerate(columns):
        try:
            out.append(np.stack(col))
        except ValueError:
            shapes = {tuple(a.shape) for a in col}
            if len(shapes) > 1:
                bad = next(a for a in col if a.shape != col[0].shape)
                raise errors.InvalidArgumentError(
                    "Cannot add tensor to the batch: number of elements does not match. Shapes "
                    f"are: [tensor]: {list(bad.shape)}, [batch]: {list(col[0].shape)} "
                    f"(component {i})") from None
            raise
    return out[0] if pack is None else pack(out)


class Batch(Dataset):
    def __init__(self, input_dataset, batch_size, drop_remainder):
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._batch_size = _batch_size(batch_size, "batch")
        self._drop = as_bool(drop_remainder, "drop_remainder", "batch")

    def _compute_spec(self):
        dim = self._batch_size if self._drop else None
        return nest.map_structure(lambda s: _batched_spec(s, dim), self._input.element_spec)

    def _cardinality(self) -> int:
        return _batched_cardinality(self._input._cardinality(), self._batch_size, self._drop)

    def _iter_elements(self):
        plan = self._input._index_plan()
        if plan is not None:
            return self._gathered(plan)
        return _element_batches(self._input, self._batch_size, self._drop, stack_components)

    def _gathered(self, plan):
        bs, gather = self._batch_size, plan.gather
        pending, have = [], 0
        for chunk in plan.chunks():
            p, n = 0, len(chunk)
            while p < n:
                if have == 0 and n - p >= bs:
                    yield gather(chunk[p:p + bs])
                    p += bs
                    continue
                take = min(bs - have, n - p)
                pending.append(chunk[p:p + take])
                have += take
                p += take
                if have == bs:
                    yield gather(np.concatenate(pending))
                    pending, have = [], 0
        if have and not self._drop:
            yield gather(np.concatenate(pending))

    def _probe(self):
        return _probe_batch(self._input._probe(), self._batch_size)


def _default_padding(spec: TensorSpec):
    return np.array(b"", dtype=object) if spec.dtype == string else np.zeros((), spec.dtype)


class PaddedBatch(Dataset):
    def __init__(self, input_dataset, batch_size, padded_shapes, padding_values, drop_remainder):
        self._input = input_dataset
        self._inputs = (input_dataset,)
        self._batch_size = _batch_size(batch_size, "padded_batch")
        self._drop = as_bool(drop_remainder, "drop_remainder", "padded_batch")
        spec = input_dataset.element_spec
        if padded_shapes is None:
            for i, s in enumerate(nest.flatten(spec)):
                if s.shape.rank is None:
                    raise ValueError("You must provide `padded_shapes` argument because "
                                     f"component {i} has unknown rank.")
            shapes = nest.map_structure(lambda s: s.shape, spec)
        else:
            shapes = _map_up_to(spec, self._padded_shape, padded_shapes, spec)
        if padding_values is None:
            values = nest.map_structure(_default_padding, spec)
        else:
            values = _map_up_to(spec, self._padding_value, padding_values, spec)
        self._shapes, self._values = shapes, values

    @staticmethod
    def _padded_shape(padded, spec: TensorSpec) -> TensorShape:
        if isinstance(padded, (list, tuple)) or hasattr(padded, "__array__"):
            dims = [None if d is None or int(d) == -1 else int(d) for d in np.asarray(
                padded, dtype=object).reshape(-1)] if len(padded) else []
            shape = TensorShape(dims)
        else:
            shape = as_shape(padded)
        ok = True
        if shape.rank is not None and spec.shape.rank is not None:
            ok = shape.rank == spec.shape.rank and all(
                p is None or d is None or p >= d for p, d in zip(shape, spec.shape))
        if not ok:
            raise ValueError(f"The padded shape {shape} is not compatible with the shape "
                             f"{spec.shape} of the corresponding input component.")
        return shape

    @staticmethod
    def _padding_value(value, spec: TensorSpec) -> np.ndarray:
        a = structure.to_numpy(value, "padded_batch")
        if a.ndim != 0:
            raise ValueError("Invalid `padding_values`. `padding_values` values should be "
                             f"scalars, but got {a}.")
        if (string if a.dtype == object else a.dtype) != spec.dtype:
            raise TypeError(f"Invalid `padding_values`. `padding_values` values type {a.dtype} "
                            f"does not match type {spec.dtype} of the corresponding input "
                            "component.")
        return a

    def _compute_spec(self):
        dim = self._batch_size if self._drop else None
        spec = self._input.element_spec
        return _map_up_to(spec, lambda s, shape: TensorSpec(TensorShape([dim]) + shape, s.dtype),
                          spec, self._shapes)

    def _cardinality(self) -> int:
        return _batched_cardinality(self._input._cardinality(), self._batch_size, self._drop)

    def _pad(self, elements: list):
        flats = [nest.flatten(e) for e in elements]
        shapes = nest.flatten(self._shapes)
        values = nest.flatten(self._values)
        out = []
        for i, (shape, value) in enumerate(zip(shapes, values)):
            col = [f[i] for f in flats]
            rank = col[0].ndim
            if any(a.ndim != rank for a in col) or (shape.rank is not None
                                                    and shape.rank != rank):
                raise errors.InvalidArgumentError(
                    f"padded_batch: component {i} must have the same rank in every element")
            target = [max((a.shape[d] for a in col), default=0)
                      if shape.rank is None or shape[d] is None else shape[d]
                      for d in range(rank)]
            for a in col:
                if any(s > t for s, t in zip(a.shape, target)):
                    raise DataLossError(
                        "Attempted to pad to a smaller size than the input element.")
            batch = np.empty([len(col), *target], dtype=col[0].dtype)
            batch[...] = value
            for j, a in enumerate(col):
                batch[(j, *[slice(0, s) for s in a.shape])] = a
            out.append(batch)
        return nest.pack_sequence_as(elements[0], out)

    def _iter_elements(self):
        return _element_batches(self._input, self._batch_size, self._drop, self._pad)

    def _probe(self):
        return self._pad([self._input._probe()] * self._batch_size)


class Unbatch(Dataset):
    def __init__(self, input_dataset):
        self._input = input_dataset
        self._inputs = (input_dataset,)
        spec = input_dataset._spec_or_none()
        if spec is not None:
            dims = set()
            for s in nest.flatten(spec):
                if s.shape.rank == 0:
                    raise ValueError("Cannot unbatch an input with scalar components.")
                if s.shape.rank is not None and s.shape[0] is not None:
                    dims.add(s.shape[0])
            if len(dims) > 1:
                a, b = sorted(dims)[:2]
                raise ValueError("`unbatch()` is only supported for datasets of elements whose "
                                 "components have a matching leading dimension. Encountered "
                                 f"both {a} and {b}.")

    def _compute_spec(self):
        return nest.map_structure(lambda s: TensorSpec(s.shape[1:], s.dtype),
                                  self._input.element_spec)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n in (INFINITE, UNKNOWN):
            return n
        spec = self._input._spec_or_none()
        if spec is None:
            return UNKNOWN
        dims = {s.shape[0] if s.shape.rank else None for s in nest.flatten(spec)}
        if len(dims) == 1 and None not in dims:
            return n * dims.pop()
        return UNKNOWN

    def _iter_elements(self):
        it = self._input._elements()
        try:
            for element in it:
                if isinstance(element, np.ndarray):
                    if element.ndim == 0:
                        raise errors.InvalidArgumentError(
                            "Cannot unbatch an input with scalar components.")
                    for r in range(element.shape[0]):
                        yield element[r, ...]
                    continue
                flat = nest.flatten(element)
                n = {a.shape[0] if a.ndim else None for a in flat}
                if None in n:
                    raise errors.InvalidArgumentError(
                        "Cannot unbatch an input with scalar components.")
                if len(n) > 1:
                    a, b = sorted(n)[:2]
                    raise errors.InvalidArgumentError(
                        "`unbatch()` is only supported for datasets of elements whose "
                        f"components have a matching leading dimension. Encountered both {a} "
                        f"and {b}.")
                for r in range(n.pop()):
                    yield nest.pack_sequence_as(element, [a[r, ...] for a in flat])
        finally:
            it.close()

    def _probe(self):
        p = self._input._probe()
        flat = nest.flatten(p)
        if flat and all(a.ndim and a.shape[0] for a in flat):
            return nest.pack_sequence_as(p, [np.array(a[0, ...]) for a in flat])
        return super()._probe()
