"""Layer code that needs its input's concrete shape, on TF1 graph tensors whose batch (or
other) dimension is unknown until ``Session.run`` (Graphcore's TF1 programs call Keras layers
on ``placeholder([None, ...])`` and infeed tensors)."""

from __future__ import annotations

from ...core import registry
from ..backend import is_graph_tensor


def unknown_dims(x) -> bool:
    """True for a TF1 graph tensor with an unknown dimension (or rank)."""
    if not is_graph_tensor(x):
        return False
    shape = x.shape
    return shape.rank is None or None in shape.as_list()


def call_on_values(fn, *args, reads=()):
    """``fn(*args)``; when an argument is a graph tensor of unknown shape, one graph node
    that calls ``fn`` on the run's values, as TF-Keras reads ``tf.shape`` at run time. The
    node runs on the run's tape; ``reads``, the variables ``fn`` reads (a layer's weights),
    are its inputs too, so that gradients reach them."""
    if any(unknown_dims(a) for a in args):
        n = len(args)

        def keras_layer_call(*values):
            return fn(*values[:n])
        node = registry.symbolic_call(keras_layer_call, (*args, *reads), {})
        if node is not NotImplemented:
            return node
    return fn(*args)


def reshape_dims(shape) -> tuple:
    """A target shape holding at most one unknown dimension (None: a graph tensor's batch)
    with that dimension as reshape's -1."""
    return tuple(-1 if d is None else d for d in shape)
