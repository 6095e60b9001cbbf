"""``Node``: one ``Layer.__call__`` on KerasTensors, the vertex of a functional graph (the
structure is described in ``keras_tensor``'s docstring)."""

from __future__ import annotations

from ...core import nest
from .. import backend
from . import pipelining
from .keras_tensor import KerasHistory, KerasTensor


class Node:
    """A layer call in a functional graph.

    Args:
      layer: the layer called.
      call_args: the positional arguments, inputs first (empty for an InputLayer's node).
      call_kwargs: the keyword arguments.
      outputs: the KerasTensors the call returned (a nested structure); each gets its
        ``_keras_history``.
    """

    def __init__(self, layer, call_args=None, call_kwargs=None, outputs=None):
        self.layer = layer
        self.call_args = tuple(call_args) if call_args else ()
        self.call_kwargs = dict(call_kwargs) if call_kwargs else {}
        self.is_input = not self.call_args and not self.call_kwargs
        self.outputs = [] if outputs is None else outputs
        self._flat_arguments = nest.flatten((list(self.call_args), list(self.call_kwargs.values())))
        self._keras_inputs = [x for x in self._flat_arguments if isinstance(x, KerasTensor)]

        layer._inbound_nodes.append(self)
        for kt in self._keras_inputs:
            inbound = kt._keras_history.layer if kt._keras_history is not None else None
            if inbound is not None:
                inbound._outbound_nodes.append(self)
        node_index = len(layer._inbound_nodes) - 1
        for i, tensor in enumerate(nest.flatten(self.outputs)):
            tensor._keras_history = KerasHistory(layer, node_index, i)
        self.flat_input_ids = [str(id(t)) for t in self._keras_inputs]
        self.flat_output_ids = [str(id(t)) for t in nest.flatten(self.outputs)]
        stage = pipelining.current_stage()
        if stage is not None:  # a call in a PipelineStage scope: overrides the layer's stage
            self._pipeline_stage = stage

    @property
    def keras_inputs(self) -> list:
        """The KerasTensors among the call's arguments, in flattened order."""
        return self._keras_inputs

    @property
    def parent_nodes(self) -> list:
        """The nodes whose outputs this node consumes."""
        nodes = []
        for kt in self._keras_inputs:
            history = kt._keras_history
            if history is not None:
                nodes.append(history.layer._inbound_nodes[history.node_index])
        return nodes

    def iterate_inbound(self):
        """Yields ``(inbound_layer, node_index, tensor_index, tensor)`` per KerasTensor input."""
        for kt in self._keras_inputs:
            history = kt._keras_history
            yield history.layer, history.node_index, history.tensor_index, kt

    def map_arguments(self, fn):
        """``(args, kwargs)`` of the call with ``fn(kt)`` in place of every KerasTensor."""
        flat = [fn(x) if isinstance(x, KerasTensor) else x for x in self._flat_arguments]
        args, kwargs = nest.pack_sequence_as(
            (list(self.call_args), list(self.call_kwargs.values())), flat)
        return tuple(args), dict(zip(self.call_kwargs.keys(), kwargs))

    @property
    def input_tensors(self):
        return [self.outputs] if self.is_input else self.call_args[0]

    @property
    def output_tensors(self):
        return [self.outputs] if self.is_input else self.outputs

    @property
    def input_shapes(self):
        shapes = nest.map_structure(backend.int_shape, self.input_tensors)
        if isinstance(shapes, list) and len(shapes) == 1 and not self.is_input:
            return shapes[0]
        return shapes

    @property
    def output_shapes(self):
        return nest.map_structure(backend.int_shape, self.output_tensors)

    @property
    def inbound_layers(self):
        """The layers feeding this node (one layer when there is one)."""
        if self.is_input:
            return []
        layers = [kt._keras_history.layer for kt in self._keras_inputs]
        return layers[0] if len(layers) == 1 else layers

    @property
    def outbound_layer(self):
        return self.layer
