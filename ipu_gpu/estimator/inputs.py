"""The input of a plain ``Estimator``: a ``Dataset`` returned by ``input_fn`` becomes one
graph node yielding the dataset's next element at each run of the graph (TF's
``IteratorGetNext`` of a one-shot iterator), ``OutOfRangeError`` at its end."""

from __future__ import annotations

from ..core import nest

__all__ = ["dataset_get_next"]


def dataset_get_next(dataset):
    """The element structure of ``dataset`` as graph tensors of one node of the default
    graph; the dataset is iterated once, from the node's first run."""
    from ..data import structure
    from ..errors import OutOfRangeError
    from ..graph.core import add_node, get_default_graph

    spec = dataset.element_spec
    flat = nest.flatten(spec)
    state = {}

    def run():
        if "it" not in state:
            state["it"] = dataset._elements()
        try:
            element = next(state["it"])
        except StopIteration:
            raise OutOfRangeError("End of sequence") from None
        return list(nest.flatten(structure.to_tensors(element)))

    specs = [(s.dtype, None if s.shape.rank is None else s.shape.as_list()) for s in flat]
    op = add_node(get_default_graph(), "IteratorGetNext", "IteratorGetNext", [], run, specs)
    return nest.pack_sequence_as(spec, list(op.outputs))
