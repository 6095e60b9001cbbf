"""Iterators over datasets: TF2's ``iter(dataset)`` (Tensors), ``as_numpy_iterator()`` (numpy
values) and TF1's one-shot, initializable and reinitializable iterators. Eagerly a TF1
iterator's ``get_next()`` returns the next element at once and ``initializer.run()`` restarts
it; while a TF1 graph is built ``get_next()`` is an ``IteratorGetNext`` node giving the next
element at each ``Session.run`` that computes it (``OutOfRangeError`` at the end, as TF) and
``initializer``/``make_initializer`` are ``MakeIterator`` operations of the graph. The
iterator's position is the Python object's, shared by the Sessions of the graph (TF keeps one
per Session)."""

from __future__ import annotations

import sys

from .. import errors
from ..core import nest
from . import structure
from .dataset import Dataset


def _end_of_sequence() -> errors.OutOfRangeError:
    return errors.OutOfRangeError("End of sequence")


def _building() -> bool:
    """Whether a TF1 graph is being built (no graph exists before the graph package loads)."""
    core = sys.modules.get("ipu_gpu.graph.core")
    return core is not None and core.building()


def _make_iterator_op(name: str, fn):
    """The operation running ``fn`` (restarting an iterator): a graph node while a graph is
    built, else an ``IteratorOp`` that ``run()`` performs at once."""
    if not _building():
        return IteratorOp(name, fn)
    from ..graph.core import add_node, get_default_graph

    def run():
        fn()
        return []
    return add_node(get_default_graph(), "MakeIterator", name, [], run, [])


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
    """``make_one_shot_iterator``: iterates the dataset once, started when made."""

    def __init__(self, dataset: Dataset):
        self._spec = dataset.element_spec
        self._start(dataset)


class InitializableIterator(_TF1Iterator):
    """``make_initializable_iterator``: each run of ``initializer`` starts the dataset again."""

    def __init__(self, dataset: Dataset):
        self._spec = dataset.element_spec
        self._initial = dataset
        self.initializer = _make_iterator_op("MakeIterator",
                                             lambda: self._start(self._initial))


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
        return _make_iterator_op(name or "MakeIterator", lambda: self._start(dataset))


def make_one_shot_iterator(dataset: Dataset) -> OneShotIterator:
    """``tf.compat.v1.data.make_one_shot_iterator``."""
    return OneShotIterator(dataset)


def make_initializable_iterator(dataset: Dataset, shared_name=None) -> InitializableIterator:
    """``tf.compat.v1.data.make_initializable_iterator``."""
    return InitializableIterator(dataset)
