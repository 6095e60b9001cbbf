"""Datasets made from values: from_tensor_slices, from_tensors, range, from_generator, zip."""

from __future__ import annotations

import numpy as np

from .. import errors
from ..core import nest
from ..core.spec import TensorShape, TensorSpec, as_shape, spec_dtype, string
from ..core.tensor import Tensor
from . import structure
from .dataset import INFINITE, UNKNOWN, Dataset, IndexPlan, as_int

CHUNK = 8192  # indices per chunk of an index stream


def arange_chunks(n: int):
    """Index chunks 0..n-1 (lazily, so an enormous range costs nothing up front)."""
    for s in range(0, n, CHUNK):
        yield np.arange(s, min(n, s + CHUNK), dtype=np.int64)


def _packer(element):
    """A function packing a flat list of arrays into the structure of ``element``."""
    if isinstance(element, np.ndarray):
        return lambda flat: flat[0]
    if type(element) is tuple and all(isinstance(a, np.ndarray) for a in element):
        return tuple
    return lambda flat: nest.pack_sequence_as(element, flat)


class TensorSlices(Dataset):
    def __init__(self, tensors):
        if tensors is None or (isinstance(tensors, (tuple, dict)) and not tensors):
            raise ValueError("Invalid `element`. `element` should not be empty.")
        element = structure.normalize(tensors, "from_tensor_slices")
        flat = nest.flatten(element)
        n = None
        for a in flat:
            if a.ndim == 0:
                raise ValueError("Unbatching a tensor is only supported for rank >= 1")
            if n is not None and a.shape[0] != n:
                raise ValueError(f"Dimensions {n} and {a.shape[0]} are not compatible")
            n = a.shape[0]
        # copied, as TF embeds the values when the dataset is made
        self._flat = [np.array(a, copy=True) for a in flat]
        for a in self._flat:
            a.flags.writeable = False
        self._element = nest.pack_sequence_as(element, self._flat)
        self._pack = _packer(element)
        self._n = n

    def _compute_spec(self):
        return nest.map_structure(
            lambda a: TensorSpec(a.shape[1:], string if a.dtype == object else a.dtype),
            self._element)

    def _cardinality(self) -> int:
        return self._n

    def _gather(self, idx):
        return self._pack([a[idx] for a in self._flat])

    def _index_plan(self):
        row_bytes = sum(a.itemsize * int(np.prod(a.shape[1:])) for a in self._flat)
        n = self._n
        return IndexPlan(self._gather, lambda: arange_chunks(n), row_bytes)

    def _probe(self):
        if self._n:
            return self._pack([np.array(a[0, ...]) for a in self._flat])
        return super()._probe()


class Tensors(Dataset):
    def __init__(self, tensors):
        element = structure.normalize(tensors, "from_tensors")
        self._element = nest.map_structure(lambda a: np.array(a, copy=True), element)

    def _compute_spec(self):
        return structure.specs_of(self._element)

    def _cardinality(self) -> int:
        return 1

    def _iter_elements(self):
        yield self._element

    def _probe(self):
        return self._element


class Range(Dataset):
    def __init__(self, args, output_type):
        if not 1 <= len(args) <= 3:
            raise ValueError(f"range: takes 1 to 3 arguments (stop, or start, stop[, step]), "
                             f"got {len(args)}")
        values = []
        for name, v in zip(("start", "stop", "step"), args if len(args) > 1 else (0, *args)):
            if isinstance(v, (bool, np.bool_)):
                v = int(v)
            if isinstance(v, (float, np.floating)):
                raise TypeError(f"Cannot convert {v} to EagerTensor of dtype int64")
            values.append(as_int(v, name, "range"))
        if len(values) == 2:
            values.append(1)
        self._start, self._stop, self._step = values
        if self._step == 0:
            raise errors.InvalidArgumentError("step must be a non-zero integer.")
        self._dtype = spec_dtype(output_type, "output_type")
        if self._dtype == string:
            raise TypeError("range: output_type must be a numeric dtype, got string")
        self._n = len(range(self._start, self._stop, self._step))

    def _compute_spec(self):
        return TensorSpec([], self._dtype)

    def _cardinality(self) -> int:
        return self._n

    def _gather(self, idx):
        return (self._start + idx * self._step).astype(self._dtype)

    def _index_plan(self):
        n = self._n
        return IndexPlan(self._gather, lambda: arange_chunks(n), self._dtype.itemsize)

    def _probe(self):
        return np.array(self._start, dtype=self._dtype)


# ---- from_generator ---------------------------------------------------------------------------
def _map_up_to(shallow, fn, *deep, sequences=(tuple, list)):
    """``fn`` applied to the parts of ``deep`` at the leaves of ``shallow`` (tf.nest's
    map_structure_up_to: a shape tuple inside a structure of dtypes is one leaf).
    ``sequences``: the types accepted where ``shallow`` has a tuple."""
    if isinstance(shallow, dict):
        for d in deep:
            if not isinstance(d, dict) or sorted(d) != sorted(shallow):
                raise ValueError(f"the structure {d!r} does not match {shallow!r}")
        return type(shallow)((k, _map_up_to(shallow[k], fn, *[d[k] for d in deep],
                                            sequences=sequences)) for k in shallow)
    if isinstance(shallow, tuple):
        for d in deep:
            if not isinstance(d, sequences) or len(d) != len(shallow):
                raise ValueError(f"the structure {d!r} does not match {shallow!r}")
        items = [_map_up_to(s, fn, *[d[i] for d in deep], sequences=sequences)
                 for i, s in enumerate(shallow)]
        if hasattr(type(shallow), "_fields"):
            return type(shallow)(*items)
        return tuple(items)
    return fn(*deep)


def _generator_value(value, spec: TensorSpec) -> np.ndarray:
    """A yielded component converted to ``spec.dtype`` as TF's convert_to_tensor would."""
    if isinstance(value, (tuple, list)) and not structure._has_string(value):
        value = np.asarray(value)
        if value.size == 0:
            value = value.astype(spec.dtype if spec.dtype != string else object)
    a = structure.to_numpy(value, "from_generator")
    src, dst = a.dtype, spec.dtype
    if (src == string) != (dst == string):
        raise TypeError(f"cannot convert a {src} value to {dst}")
    if dst == string:
        return a
    python_scalar = not isinstance(value, (np.ndarray, np.generic, Tensor))
    if src.kind == "f" and dst.kind in "iub":
        raise TypeError(f"cannot convert a float value to {dst}")
    if src.kind == "b" and dst.kind == "f" and python_scalar:
        raise TypeError(f"cannot convert a bool value to {dst}")
    return a.astype(dst, copy=False)


class Generator(Dataset):
    def __init__(self, generator, output_types, output_shapes, args, output_signature):
        if not callable(generator):
            raise TypeError("`generator` must be a Python callable.")
        if output_signature is not None:
            if output_types is not None:
                raise TypeError("The `output_types` argument can not be used together with "
                                "the `output_signature` argument.")
            if output_shapes is not None:
                raise TypeError("The `output_shapes` argument can not be used together with "
                                "the `output_signature` argument.")
            for s in nest.flatten(output_signature):
                if not isinstance(s, TensorSpec):
                    if hasattr(s, "shape") and hasattr(s, "dtype"):  # a real tf.TensorSpec
                        continue
                    raise TypeError("`output_signature` must contain objects that are subclass "
                                    f"of `tf.TypeSpec` but found {type(s)} which is not.")
            spec = nest.map_structure(lambda s: TensorSpec(
                s.shape.as_list() if getattr(s.shape, "rank", 0) is not None else None,
                s.dtype, getattr(s, "name", None)), output_signature)
        else:
            if output_types is None:
                raise TypeError("To specify the output signature you need to provide either "
                                "the `output_signature` argument or the `output_types` "
                                "argument.")
            if output_shapes is None:
                spec = nest.map_structure(lambda t: TensorSpec(None, t), output_types)
            else:
                spec = _map_up_to(output_types, lambda t, s: TensorSpec(
                    None if s is None else as_shape(s), t), output_types, output_shapes)
        self._spec = spec
        self._generator = generator
        self._args = () if args is None else tuple(args)

    def _compute_spec(self):
        return self._spec

    def _convert(self, value):
        try:
            return _map_up_to(self._spec, _generator_value, value, self._spec,
                              sequences=(tuple,))
        except (TypeError, ValueError) as e:
            raise errors.InvalidArgumentError(
                "TypeError: `generator` yielded an element that did not match the expected "
                f"structure. The expected structure was {self._spec}, but the yielded element "
                f"was {value}.") from e

    def _check_shapes(self, element):
        for a, s in zip(nest.flatten(element), nest.flatten(self._spec)):
            if not s.shape.is_compatible_with(a.shape):
                raise errors.InvalidArgumentError(
                    f"TypeError: `generator` yielded an element of shape {TensorShape(a.shape)} "
                    f"where an element of shape {s.shape} was expected.")

    def _iter_elements(self):
        args = [structure.to_numpy_output(structure.to_numpy(a, "from_generator"))
                for a in self._args]
        for value in self._generator(*args):
            element = self._convert(value)
            self._check_shapes(element)
            yield element


class Zip(Dataset):
    def __init__(self, datasets):
        if isinstance(datasets, list):
            datasets = tuple(datasets)
        for d in nest.flatten(datasets):
            if not isinstance(d, Dataset):
                raise TypeError("Invalid input to `zip`. Inputs are expected to be (nested) "
                                "structures of `tf.data.Dataset` objects but encountered "
                                f"object of type {type(d)}.")
        self._datasets = datasets
        self._inputs = tuple(nest.flatten(datasets))

    def _compute_spec(self):
        return nest.map_structure(lambda d: d.element_spec, self._datasets)

    def _cardinality(self) -> int:
        result = INFINITE
        for d in self._inputs:
            n = d._cardinality()
            if n == UNKNOWN:
                return UNKNOWN
            if n != INFINITE:
                result = n if result == INFINITE else min(result, n)
        return result

    def _iter_elements(self):
        its = [d._elements() for d in self._inputs]
        try:
            while True:
                parts = []
                for it in its:
                    try:
                        parts.append(next(it))
                    except StopIteration:
                        return
                yield nest.pack_sequence_as(self._datasets, parts)
        finally:
            for it in its:
                it.close()

    def _probe(self):
        return nest.pack_sequence_as(self._datasets, [d._probe() for d in self._inputs])
