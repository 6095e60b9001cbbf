"""``PreprocessingLayer``: the base of layers whose state is computed from data by
``adapt`` (tf-keras's ``base_preprocessing_layer``): ``update_state`` per batch, then
``finalize_state``; ``reset_state`` clears what an earlier ``adapt`` learnt."""

from __future__ import annotations

import numpy as np

from ....core import registry
from ....core.spec import TensorShape
from ....core.tensor import Tensor
from ...backend import is_graph_tensor
from ...engine.base_layer import Layer

__all__ = ["PreprocessingLayer", "adapt_batches", "on_values"]


def on_values(fn, *args):
    """``fn(*args)``; when an argument is a TF1 graph tensor, one graph node calling ``fn``
    on each ``Session.run``'s values (these layers compute on concrete values: lookups,
    hashes, random draws)."""
    if any(is_graph_tensor(a) for a in args):
        node = registry.symbolic_call(fn, args, {})
        if node is not NotImplemented:
            return node
    return fn(*args)


def adapt_batches(data, batch_size=None, steps=None):
    """The batches ``adapt`` reads (at most ``steps``): a ``tf.data`` dataset's elements, or
    an array split along its first axis into batches of ``batch_size`` (default 32).

    Raises:
      ValueError: ``batch_size`` given with a dataset.
    """
    from ....data.dataset import Dataset

    if isinstance(data, Dataset):
        if batch_size is not None:
            raise ValueError("The `batch_size` argument must not be specified for the given "
                             "input type. Received input: "
                             f"{data}, batch_size: {batch_size}")
        for step, element in enumerate(data):
            if steps is not None and step >= steps:
                return
            yield element
        return
    array = data.numpy() if isinstance(data, Tensor) else np.asarray(data)
    if array.ndim == 0:
        yield array
        return
    batch = 32 if batch_size is None else int(batch_size)
    for step, start in enumerate(range(0, array.shape[0], batch)):
        if steps is not None and step >= steps:
            return
        yield array[start:start + batch]


def _as_array(batch) -> np.ndarray:
    return batch.numpy() if isinstance(batch, Tensor) else np.asarray(batch)


class PreprocessingLayer(Layer):
    """A layer with state computed from data by ``adapt`` (subclasses implement
    ``update_state``, ``finalize_state`` and ``reset_state``)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._is_adapted = False

    @property
    def is_adapted(self) -> bool:
        """Whether ``adapt`` has run."""
        return self._is_adapted

    def update_state(self, data) -> None:
        """Fold one batch into the layer's state."""
        raise NotImplementedError

    def reset_state(self) -> None:
        """Forget the state learnt by ``adapt``."""

    def finalize_state(self) -> None:
        """Turn the accumulated state into what ``call`` uses."""

    def adapt(self, data, batch_size=None, steps=None, reset_state=True) -> None:
        """Compute the layer's state from ``data`` (an array or a ``tf.data`` dataset of
        batches): builds the layer from the first batch's shape, resets the state of an
        earlier ``adapt`` (unless ``reset_state`` is False, Keras 2.6's argument), folds in
        each batch, then finalizes."""
        if self.built and reset_state:
            self.reset_state()
        for batch in adapt_batches(data, batch_size, steps):
            batch = _as_array(batch)
            if not self.built:
                self._adapt_build(batch)
            self.update_state(batch)
        self.finalize_state()
        self._is_adapted = True

    def _adapt_build(self, batch: np.ndarray) -> None:
        """Build for the batches' shape, the batch size unknown (tf-keras traces its adapt
        step on batches of any size)."""
        if getattr(self, "_batch_input_shape", None) is None:
            self._batch_input_shape = (None,) * batch.ndim
        shape = TensorShape([None, *batch.shape[1:]] if batch.ndim else [])
        self.build(shape)
        Layer.build(self, shape)
