"""Iterators over datasets: TF2's ``iter(dataset)`` (Tensors), ``as_numpy_iterator()`` (numpy
values) and TF1's one-shot and initializable iterators (eager here: ``get_next()`` returns the
next element at once; a Session will call ``initializer.run()`` and ``get_next()`` the same
way)."""

from __future__ import annotations

from .. import errors
from ..core import nest
from . import structure
from .dataset import Dataset


def _end_of_sequence() -> errors.OutOfRangeError:
    return errors.OutOfRangeError("End of sequence")


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
        """The next element as Tensors; ``OutOfRangeError`` ("End of sequence") at the end."""
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
            return self.get_next()
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
        self.initializer = IteratorOp("MakeIterator", lambda: self._start(self._initial))


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

    def make_initializer(self, dataset: Dataset, name=None) -> IteratorOp:
        spec = dataset.element_spec
        if not structure.same_structure(spec, self._spec) or any(
                a.dtype != b.dtype or not b.shape.is_compatible_with(a.shape)
                for a, b in zip(nest.flatten(spec), nest.flatten(self._spec))):
            raise TypeError(f"Expected output types {self.output_types} and shapes "
                            f"{self.output_shapes} but got dataset with element_spec {spec}")
        return IteratorOp("MakeIterator", lambda: self._start(dataset))


def make_one_shot_iterator(dataset: Dataset) -> OneShotIterator:
    """``tf.compat.v1.data.make_one_shot_iterator``."""
    return OneShotIterator(dataset)


def make_initializable_iterator(dataset: Dataset, shared_name=None) -> InitializableIterator:
    """``tf.compat.v1.data.make_initializable_iterator``."""
    return InitializableIterator(dataset)
