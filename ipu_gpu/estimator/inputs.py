"""The input of a plain ``Estimator``: a ``Dataset`` returned by ``input_fn`` becomes one
graph node yielding the dataset's next element at each run of the graph (TF's
``IteratorGetNext`` of a one-shot iterator), ``OutOfRangeError`` at its end."""

from __future__ import annotations

__all__ = ["dataset_get_next"]


def dataset_get_next(dataset):
    """The element structure of ``dataset`` as graph tensors of one ``IteratorGetNext`` node
    of the default graph (``data/iterators.py``'s one-shot iterator)."""
    from ..data.iterators import OneShotIterator

    return OneShotIterator(dataset).get_next()
