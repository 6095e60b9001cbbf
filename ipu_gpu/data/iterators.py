"""Iterators over datasets: TF2's ``iter(dataset)`` (Tensors), ``as_numpy_iterator()`` (numpy
values) and TF1's one-shot, initializable and reinitializable iterators. Eagerly a TF1
iterator's ``get_next()`` returns the next element at once and ``initializer.run()`` restarts
it; while a TF1 graph is built ``get_next()`` is an ``IteratorGetNext`` node giving the next
element at each ``Session.run`` that computes it (``OutOfRangeError`` at the end, as TF) and
``initializer``/``make_initializer`` are ``MakeIterator`` operations of the graph. The
iterator's position is the Python object's, shared by the Sessions of the graph (TF keeps one
per Session).

``from_tensor_slices``/``from_tensors`` of graph tensors (placeholders fed when the
initializer runs: TF's way of feeding numpy arrays to a pipeline) is a ``FedSource``: its
spec comes from the tensors' static shapes, and each run of an initializer whose dataset
reads it binds the tensors' values of that run, from which the source is made afresh.
A one-shot iterator refuses such a dataset, with TF's error."""

from __future__ import annotations

import sys

import numpy as np

from .. import errors
from ..core import nest
from ..core.spec import TensorSpec
from . import structure
from .dataset import UNKNOWN, Dataset


def _end_of_sequence() -> errors.OutOfRangeError:
    return errors.OutOfRangeError("End of sequence")


def _building() -> bool:
    """Whether a TF1 graph is being built (no graph exists before the graph package loads)."""
    core = sys.modules.get("ipu_gpu.graph.core")
    return core is not None and core.building()


def _make_iterator_op(name: str, fn, dataset=None):
    """The operation running ``fn`` (restarting an iterator on ``dataset``): a graph node
    while a graph is built (binding the values of the graph tensors ``dataset``'s fed sources
    read), else an ``IteratorOp`` that ``run()`` performs at once."""
    fed = _fed_sources(dataset)
    if not _building() and not fed:
        return IteratorOp(name, fn)
    from ..graph.core import add_node, get_default_graph

    tensors = [t for source in fed for t in source._graph_leaves]

    def run(*values):
        values = iter(values)
        for source in fed:
            source._bound = [next(values) for _ in source._graph_leaves]
        fn()
        return []
    return add_node(get_default_graph(), "MakeIterator", name, tensors, run, [])


def _graph_tensor_type():
    core = sys.modules.get("ipu_gpu.graph.core")
    return None if core is None else core.GraphTensor


def _fed_sources(dataset) -> list:
    """The ``FedSource``s ``dataset`` reads (through its inputs), in order, each once."""
    found, todo, seen = [], [dataset] if dataset is not None else [], set()
    while todo:
        ds = todo.pop()
        if id(ds) in seen:
            continue
        seen.add(id(ds))
        if isinstance(ds, FedSource):
            found.append(ds)
        todo.extend(getattr(ds, "_inputs", ()) or ())
    return found


def fed_source(tensors, slices: bool):
    """A ``FedSource`` when ``tensors`` holds graph tensors, else None."""
    graph_tensor = _graph_tensor_type()
    if graph_tensor is None or not _building():  # graph tensors exist only in a graph
        return None
    leaves = nest.flatten(tensors)
    if not any(isinstance(x, graph_tensor) for x in leaves):
        return None
    return FedSource(tensors, slices)


def _static_shape(x, graph_tensor):
    """A graph tensor's static dimensions (None: unknown rank), else the value's shape."""
    if isinstance(x, graph_tensor):
        return None if x.shape.rank is None else x.shape.as_list()
    return list(np.shape(x))


class FedSource(Dataset):
    """``from_tensor_slices`` (``slices``) or ``from_tensors`` of a structure holding graph
    tensors: made afresh from the values an initializer's run binds (see the module
    docstring).

    Raises:
      ValueError: a scalar sliced, or components of different known first dimensions."""

    def __init__(self, tensors, slices: bool):
        graph_tensor = _graph_tensor_type()
        self._tensors, self._slices = tensors, slices
        self._graph_leaves = [x for x in nest.flatten(tensors) if isinstance(x, graph_tensor)]
        self._bound = None
        firsts = set()
        for x in nest.flatten(tensors):
            shape = _static_shape(x, graph_tensor)
            if slices:
                if shape is not None and len(shape) == 0:
                    raise ValueError("Unbatching a tensor is only supported for rank >= 1")
                if shape and shape[0] is not None:
                    firsts.add(shape[0])
        if len(firsts) > 1:
            a, b = sorted(firsts)[:2]
            raise ValueError(f"Dimensions {a} and {b} are not compatible")

    def _compute_spec(self):
        graph_tensor = _graph_tensor_type()

        def spec(x):
            if isinstance(x, graph_tensor):
                shape = _static_shape(x, graph_tensor)
                return TensorSpec(None if shape is None else shape[1:] if self._slices
                                  else shape, x.dtype)
            a = structure.normalize(x, "from_tensor_slices")
            return TensorSpec(a.shape[1:] if self._slices else a.shape,
                              structure.string if a.dtype == object else a.dtype)
        return nest.map_structure(spec, self._tensors)

    def _cardinality(self) -> int:
        return UNKNOWN if self._slices else 1

    def _source(self) -> Dataset:
        """The source made from the bound values."""
        if self._bound is None:
            raise TypeError(f"Cannot convert a symbolic graph tensor "
                            f"({self._graph_leaves[0].name}) to a numpy array: run the "
                            "initializer of an iterator over this dataset, feeding it")
        graph_tensor = _graph_tensor_type()
        values = iter(self._bound)
        tensors = nest.map_structure(
            lambda x: np.asarray(next(values)) if isinstance(x, graph_tensor) else x,
            self._tensors)
        return Dataset.from_tensor_slices(tensors) if self._slices \
            else Dataset.from_tensors(tensors)

    def _index_plan(self):
        return None if self._bound is None else self._source()._index_plan()

    def _iter_elements(self):
        yield from self._source()._elements()


class OwnedIterator:
    """``iter(dataset)``: yields elements as ipu_gpu Tensors; ``get_next()`` raises
    ``tf.errors.OutOfRangeError`` at the end where ``next()`` raises StopIteration."""

    def __init__(self, dataset: Dataset):
        self._dataset = dataset
        self._it = dataset._elements()

    @property
    def element_spec(self):
        return self._dataset.element_spec

    def __iter__(self):
        return self

    def __next__(self):
        return structure.to_tensors(next(self._it))

    def get_next(self, name=None):
        try:
            return structure.to_tensors(next(self._it))
        except StopIteration:
            raise _end_of_sequence() from None

    def close(self) -> None:
        """Stops the iteration now (ends prefetch threads, closes files)."""
        self._it.close()


class NumpyIterator:
    """``dataset.as_numpy_iterator()``: elements as numpy values (0-d components as numpy
    scalars, strings as bytes)."""

    def __init__(self, dataset: Dataset):
        self._dataset = dataset
        self._it = dataset._elements()

    def __iter__(self):
        return self

    def __next__(self):
        return structure.to_numpy_output(next(self._it))

    next = __next__

    def close(self) -> None:
        self._it.close()

    def __repr__(self) -> str:
        return "<NumpyIterator>"


class IteratorOp:
    """An operation of a TF1 iterator (``iterator.initializer``): ``run()`` performs it now."""

    def __init__(self, name: str, fn):
        self.name = name
        self._fn = fn

    def run(self, feed_dict=None, session=None):
        self._fn()

    def __repr__(self) -> str:
        return f"<ipu_gpu.data iterator operation {self.name}>"


class _TF1Iterator:
    _dataset: Dataset | None = None
    _it = None

    @property
    def element_spec(self):
        return self._spec

    @property
    def output_types(self):
        return nest.map_structure(lambda s: s.dtype, self._spec)

    @property
    def output_shapes(self):
        return nest.map_structure(lambda s: s.shape, self._spec)

    def _start(self, dataset: Dataset) -> None:
        if self._it is not None:
            self._it.close()
        self._dataset = dataset
        self._it = dataset._elements()

    def get_next(self, name=None):
        """The next element as Tensors; ``OutOfRangeError`` ("End of sequence") at the end.
        While a TF1 graph is built: the element's graph tensors, computed anew by each
        ``Session.run`` that needs them (TF's ``IteratorGetNext``)."""
        if _building():
            return self._graph_get_next(name)
        return self._next_element()

    def _graph_get_next(self, name):
        from ..graph.core import add_node, get_default_graph

        flat = nest.flatten(self._spec)

        def run():
            return list(nest.flatten(self._next_element()))
        specs = [(s.dtype, None if s.shape.rank is None else s.shape.as_list()) for s in flat]
        op = add_node(get_default_graph(), "IteratorGetNext", name or "IteratorGetNext", [],
                      run, specs)
        return nest.pack_sequence_as(self._spec, list(op.outputs))

    def _next_element(self):
        if self._it is None:
            from ..errors import FailedPreconditionError

            raise FailedPreconditionError("GetNext() failed because the iterator has not been "
                                          "initialized. Ensure that you have run the "
                                          "initializer operation for this iterator before "
                                          "getting the next element.")
        try:
            return structure.to_tensors(next(self._it))
        except StopIteration:
            raise _end_of_sequence() from None

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return self._next_element()
        except errors.OutOfRangeError:
            raise StopIteration from None


class OneShotIterator(_TF1Iterator):
    """``make_one_shot_iterator``: iterates the dataset once, started when made.

    Raises:
      ValueError: the dataset reads fed graph tensors (TF's message)."""

    def __init__(self, dataset: Dataset):
        fed = _fed_sources(dataset)
        if fed:
            t = fed[0]._graph_leaves[0]
            raise ValueError(f"Cannot capture a placeholder (name:{t.op.name}, "
                             f"type:{t.op.type}) by value.")
        self._spec = dataset.element_spec
        self._start(dataset)


class InitializableIterator(_TF1Iterator):
    """``make_initializable_iterator``: each run of ``initializer`` starts the dataset again."""

    def __init__(self, dataset: Dataset):
        self._spec = dataset.element_spec
        self._initial = dataset
        self.initializer = _make_iterator_op("MakeIterator",
                                             lambda: self._start(self._initial), dataset)


class Iterator(_TF1Iterator):
    """TF1's reinitializable iterator, ``tf.compat.v1.data.Iterator.from_structure``: one
    iterator for several datasets of one structure, each started by its
    ``make_initializer(dataset)`` operation."""

    def __init__(self, spec):
        self._spec = spec

    @classmethod
    def from_structure(cls, output_types, output_shapes=None, shared_name=None,
                       output_classes=None):
        from ..core.spec import TensorSpec
        from .sources import _map_up_to

        if output_shapes is None:
            spec = nest.map_structure(lambda t: TensorSpec(None, t), output_types)
        else:
            spec = _map_up_to(output_types, lambda t, s: TensorSpec(s, t), output_types,
                              output_shapes)
        return cls(spec)

    @classmethod
    def from_dataset(cls, dataset: Dataset):
        it = cls(dataset.element_spec)
        it.initializer = it.make_initializer(dataset)
        return it

    def make_initializer(self, dataset: Dataset, name=None):
        spec = dataset.element_spec
        if not structure.same_structure(spec, self._spec) or any(
                a.dtype != b.dtype or not b.shape.is_compatible_with(a.shape)
                for a, b in zip(nest.flatten(spec), nest.flatten(self._spec))):
            raise TypeError(f"Expected output types {self.output_types} and shapes "
                            f"{self.output_shapes} but got dataset with element_spec {spec}")
        return _make_iterator_op(name or "MakeIterator", lambda: self._start(dataset),
                                 dataset)


def make_one_shot_iterator(dataset: Dataset) -> OneShotIterator:
    """``tf.compat.v1.data.make_one_shot_iterator``."""
    return OneShotIterator(dataset)


def make_initializable_iterator(dataset: Dataset, shared_name=None) -> InitializableIterator:
    """``tf.compat.v1.data.make_initializable_iterator``."""
    return InitializableIterator(dataset)
