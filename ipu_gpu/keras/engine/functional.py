"""Functional models: ``Model(inputs, outputs)`` over the graph of layer calls that
``keras.Input`` KerasTensors recorded (``keras_tensor``/``node``; tf_keras
``engine/functional.py`` semantics).

The graph is mapped once (``_map_graph_network``): every node gets a depth (outputs 0, inputs
deepest) and the layers are ordered by decreasing depth, ties in the order the output walk
first met them; that order is ``model.layers`` and the weights' order. A call runs the nodes
from the deepest up, each node's layer on the values of its recorded arguments, so shared
layers (one layer, several nodes), several inputs and outputs, and nested structures of
them (lists, dicts) all work. Dict inputs are matched to the input layers by name.
"""

from __future__ import annotations

import collections

import numpy as np

from ...core import nest
from ...core.tensor import Tensor
from ...ops import math as _m
from ...ops import shape as _shape
from .. import backend
from .call_context import get_mask, set_mask
from .input_layer import InputLayer
from .input_spec import InputSpec
from .keras_tensor import KerasTensor
from . import pipeline_stages
from .op_lambda import TFOpLambda
from .serialization import get_registered_name
from .training import Model

__all__ = ["Functional"]


class Functional(Model):
    """A ``Model`` defined by a graph of layers (``Model(inputs, outputs)``).

    Args:
      inputs: the model's input KerasTensor(s) (``keras.Input``): one, a list or a dict.
      outputs: KerasTensor(s) computed from them: one, a list or a dict.
      name: the model's name (default ``model``, ``model_1``, ...).
      trainable: whether the model's weights are trained.

    Raises:
      ValueError: inputs that are not ``keras.Input`` tensors, a disconnected graph, a
        cycle, duplicate layer names (Keras's messages).
    """

    _handles_training_tensor = True  # a bool graph tensor goes down to each layer

    def __init__(self, inputs, outputs, name=None, trainable=True, **kwargs):
        unknown = set(kwargs) - {"dtype", "dynamic", "autocast"}
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)}")
        Model.__init__(self, name=name, trainable=trainable)
        self._init_graph_network(inputs, outputs)

    def _init_set_name(self, name) -> None:
        if name:
            self._name = name
            return
        from .serialization import to_snake_case

        cls_name = "Model" if type(self) is Functional else type(self).__name__
        self._name = backend.unique_object_name(to_snake_case(cls_name), zero_based=True)

    def _init_graph_network(self, inputs, outputs):
        from .op_dispatch import forget

        forget()  # the graph is complete: no function call on KerasTensors is in progress
        set_ = object.__setattr__
        if isinstance(inputs, list) and len(nest.flatten(inputs)) == 1:
            inputs = inputs[0]
        if isinstance(outputs, list) and len(nest.flatten(outputs)) == 1:
            outputs = outputs[0]
        flat_inputs, flat_outputs = nest.flatten(inputs), nest.flatten(outputs)
        for x in flat_inputs:
            if not isinstance(x, KerasTensor) or x._keras_history is None or not isinstance(
                    x._keras_history.layer, InputLayer):
                raise ValueError(
                    "Input tensors to a Functional must come from `tf.keras.Input`. Received: "
                    f"{x} (missing previous layer metadata).")
        for x in flat_outputs:
            if not isinstance(x, KerasTensor) or x._keras_history is None:
                raise ValueError(
                    "Output tensors of a Functional model must be the output of a TensorFlow "
                    f"`Layer` (thus holding past layer metadata). Found: {x}")
        nodes, nodes_by_depth, layers = _map_graph_network(flat_inputs, flat_outputs)
        set_(self, "_self_tracked_trackables", layers)  # first: the sub-layer order
        set_(self, "_is_graph_network", True)
        set_(self, "_nested_inputs", inputs)
        set_(self, "_nested_outputs", outputs)
        set_(self, "inputs", flat_inputs)
        set_(self, "outputs", flat_outputs)
        nested = inputs
        set_(self, "_enable_dict_to_input_mapping",
             not isinstance(nested, (list, tuple, dict))
             or (isinstance(nested, (list, tuple))
                 and not any(isinstance(t, (list, tuple, dict)) for t in nested))
             or (isinstance(nested, dict)
                 and not any(isinstance(t, (list, tuple, dict)) for t in nested.values())))
        set_(self, "_input_layers", [x._keras_history.layer for x in flat_inputs])
        set_(self, "_output_layers", [x._keras_history.layer for x in flat_outputs])
        set_(self, "_input_coordinates", [tuple(x._keras_history) for x in flat_inputs])
        set_(self, "_output_coordinates", [tuple(x._keras_history) for x in flat_outputs])
        set_(self, "_network_nodes", nodes)
        set_(self, "_nodes_by_depth", nodes_by_depth)
        set_(self, "_compute_output_and_mask_jointly", True)
        self._autocast = False
        names, used, counts = [], set(), {}
        for layer in self._output_layers:
            proposal = layer.name
            while proposal in used:
                n = counts.get(layer.name, 1)
                proposal = f"{layer.name}_{n}"
                counts[layer.name] = n + 1
            used.add(proposal)
            names.append(proposal)
        set_(self, "output_names", names)
        set_(self, "input_names", [layer.name for layer in self._input_layers])
        self._build_input_shape = nest.map_structure(lambda x: x.shape, inputs)
        self.built = True

    # ---- structure -----------------------------------------------------------------------
    def _tracked_layers(self) -> list:
        return list(self._self_tracked_trackables)

    def _direct_sublayers(self) -> list:
        tracked = list(self.__dict__.get("_self_tracked_trackables", ()))
        ids = {id(layer) for layer in tracked}
        return tracked + [layer for layer in super()._direct_sublayers()
                          if id(layer) not in ids]

    @property
    def input(self):
        return self._nested_inputs

    @property
    def output(self):
        return self._nested_outputs

    @property
    def input_shape(self):
        return nest.map_structure(backend.int_shape, self._nested_inputs)

    @property
    def output_shape(self):
        return nest.map_structure(backend.int_shape, self._nested_outputs)

    @property
    def input_spec(self):
        """One InputSpec per input (shape without the batch size, last axis of 1 squeezable),
        named after the input layers (sorted keys for dict inputs)."""
        manual = self.__dict__.get("_manual_input_spec")
        if manual is not None:
            return manual
        nested = self._nested_inputs
        if isinstance(nested, (dict, list, tuple)) and len(nested) != len(self.inputs):
            return None

        def spec(x, name):
            layer = x._keras_history.layer
            shape = x.shape
            dims = None if shape.rank is None else [None] + shape.as_list()[1:]
            return InputSpec(shape=dims, allow_last_axis_squeeze=True, name=name,
                             optional=getattr(layer, "optional", False))

        if isinstance(nested, dict):
            return [spec(nested[k], k) for k in sorted(nested)]
        return [spec(x, x._keras_history.layer.name) for x in self.inputs]

    @input_spec.setter
    def input_spec(self, value):
        object.__setattr__(self, "_manual_input_spec", value)

    # ---- layers added after construction (add_loss / add_metric of symbolic tensors) ------
    def _graph_network_add_loss(self, symbolic_loss) -> None:
        from .ancillary import AddLoss

        _, _, between = _map_graph_network(self.inputs, [symbolic_loss])  # checked first
        layer = AddLoss(unconditional=False, dtype=symbolic_loss.dtype)
        layer(symbolic_loss)
        self._insert_layers([*between, layer])

    def _graph_network_add_metric(self, value, aggregation, name) -> None:
        from .ancillary import AddMetric

        _, _, between = _map_graph_network(self.inputs, [value])  # checked first, as Keras
        layer = AddMetric(aggregation, name, dtype=value.dtype)
        layer(value)
        self._insert_layers([*between, layer])

    def _insert_layers(self, layers) -> None:
        """Make the nodes of ``layers`` part of the model: each call computes them, though
        they are not outputs. Those of ``layers`` not in the model follow the existing ones
        in ``model.layers``, in the given order (Keras's ``_insert_layers``).

        Raises:
          ValueError: a node not computable from the model's inputs (Keras's "Graph
            disconnected" message)."""
        known = {id(layer) for layer in self._self_tracked_trackables}
        new = [layer for layer in dict.fromkeys(layers) if id(layer) not in known]
        ancillary = list(self.__dict__.get("_ancillary_outputs", ()))
        for layer in new:
            for node in layer._inbound_nodes:
                ancillary.extend(nest.flatten(node.outputs))
        nodes, nodes_by_depth, _ = _map_graph_network(self.inputs, self.outputs + ancillary)
        set_ = object.__setattr__
        set_(self, "_self_tracked_trackables", list(self._self_tracked_trackables) + new)
        set_(self, "_ancillary_outputs", ancillary)
        set_(self, "_network_nodes", nodes)
        set_(self, "_nodes_by_depth", nodes_by_depth)

    # ---- running the graph ---------------------------------------------------------------
    def call(self, inputs, training=None, mask=None):
        return self._run_internal_graph(inputs, training=training, mask=mask)

    def compute_mask(self, inputs, mask):
        outputs = self._run_internal_graph(inputs, mask=mask)
        return nest.map_structure(get_mask, outputs)

    def _flatten_to_reference_inputs(self, tensors):
        if self._enable_dict_to_input_mapping and isinstance(tensors, dict):
            ref = self._nested_inputs
            if not isinstance(ref, (list, tuple, dict)):
                ref = [ref]
            names = (sorted(ref) if isinstance(ref, dict)
                     else [x._keras_history.layer.name for x in ref])
            try:
                return [tensors[n] for n in names]
            except KeyError:
                return nest.flatten(tensors)
        return nest.flatten(tensors)

    @staticmethod
    def _conform_to_reference_input(tensor, ref):
        if not isinstance(tensor, Tensor):
            return tensor
        t_rank, ref_rank = tensor.ndim, ref.shape.rank
        if ref_rank is not None:
            if t_rank == ref_rank + 1 and tensor.shape[-1] == 1:
                tensor = _shape.squeeze(tensor, axis=-1)
            elif t_rank == ref_rank - 1 and ref.shape[-1] == 1:
                tensor = _shape.expand_dims(tensor, -1)
        if tensor.dtype != np.dtype(ref.dtype):
            tensor = _m.cast(tensor, ref.dtype)
        return tensor

    def _run_internal_graph(self, inputs, training=None, mask=None):
        flat = self._flatten_to_reference_inputs(inputs)
        masks = [None] * len(flat) if mask is None else self._flatten_to_reference_inputs(mask)
        values = {}
        for x, y, m in zip(self.inputs, flat, masks):
            y = self._conform_to_reference_input(y, x)
            if m is not None:
                set_mask(y, m)
            values[id(x)] = y
        switch = pipeline_stages.switch(self)  # a pipelined model's stages (None: not)
        if switch is None:
            self._run_nodes(values, None)
        else:
            with switch:
                self._run_nodes(values, switch)
        return nest.pack_sequence_as(self._nested_outputs,
                                     [values[id(x)] for x in self.outputs])

    def _run_nodes(self, values, switch) -> None:
        for depth in sorted(self._nodes_by_depth, reverse=True):
            for node in self._nodes_by_depth[depth]:
                if node.is_input or any(id(t) not in values for t in node.keras_inputs):
                    continue
                args, kwargs = node.map_arguments(lambda kt: values[id(kt)])
                if switch is not None:
                    switch(node)
                outputs = node.layer(*args, **kwargs)
                for kt, value in zip(nest.flatten(node.outputs), nest.flatten(outputs)):
                    values[id(kt)] = value

    def compute_output_shape(self, input_shape):
        return nest.map_structure(lambda x: x.shape, self._nested_outputs)

    def get_config(self) -> dict:
        """The Keras 2 functional config: name, layers (class, config, inbound nodes),
        input and output layers."""
        return get_network_config(self)

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A new functional model (new weights) from ``get_config``'s dict."""
        from .op_dispatch import SlicingOpLambda
        from .op_dispatch import TFOpLambda as OpLayer

        # op layers (``tf.concat`` on KerasTensors) find their function again by its symbol
        from .ancillary import AddLoss, AddMetric

        custom_objects = {"TFOpLambda": OpLayer, "SlicingOpLambda": SlicingOpLambda,
                          "AddLoss": AddLoss, "AddMetric": AddMetric, **(custom_objects or {})}
        inputs, outputs, created = _reconstruct(config, custom_objects)
        model = cls(inputs=inputs, outputs=outputs, name=config.get("name"))
        # layers not leading to the outputs (add_loss / add_metric of symbolic tensors)
        known = {id(layer) for layer in model._self_tracked_trackables}
        extra = [layer for layer in created.values() if id(layer) not in known]
        if extra:
            model._insert_layers(extra)
        return model


def _map_graph_network(inputs, outputs):
    """(node set, {depth: [nodes]}, layers in Keras's order) of the graph from ``inputs`` to
    ``outputs``.

    Raises:
      ValueError: a disconnected graph, a cycle or duplicate layer names.
    """
    finished, in_progress = set(), set()
    ordered = []  # nodes in decreasing depth
    layer_indices = {}

    def visit(tensor):
        layer, node_index, _ = tensor._keras_history
        node = layer._inbound_nodes[node_index]
        if id(node) in finished:
            return
        if id(node) in in_progress:
            raise ValueError(f'Tensor {tensor} from layer "{layer.name}" is part of a cycle.')
        layer_indices.setdefault(layer, len(layer_indices))
        in_progress.add(id(node))
        if not node.is_input:
            for t in node.keras_inputs:
                visit(t)
        finished.add(id(node))
        in_progress.discard(id(node))
        ordered.append(node)

    for output in outputs:
        visit(output)
    node_depths, layer_depths = {}, {}
    node_by_id = {}
    for node in reversed(ordered):
        node_by_id[id(node)] = node
        depth = max(node_depths.setdefault(id(node), 0), layer_depths.get(node.layer, 0))
        layer_depths[node.layer] = depth
        node_depths[id(node)] = depth
        for parent in node.parent_nodes:
            node_by_id[id(parent)] = parent
            node_depths[id(parent)] = max(depth + 1, node_depths.get(id(parent), 0))
    for x in inputs:
        layer = x._keras_history.layer
        if layer not in layer_depths:
            layer_depths[layer] = 0
            layer_indices[layer] = -1
            node = layer._inbound_nodes[0]
            node_by_id[id(node)] = node
            node_depths[id(node)] = 0
    nodes_by_depth = collections.defaultdict(list)
    for node_id, depth in node_depths.items():
        nodes_by_depth[depth].append(node_by_id[node_id])
    layers_by_depth = collections.defaultdict(list)
    for layer, depth in layer_depths.items():
        layers_by_depth[depth].append(layer)
    layers = []
    for depth in sorted(layers_by_depth, reverse=True):
        layers.extend(sorted(layers_by_depth[depth], key=lambda x: layer_indices[x]))
    computable = {id(x) for x in inputs}
    done_names = []
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            if node.is_input:
                continue
            for x in node.keras_inputs:
                if id(x) not in computable:
                    raise ValueError(f"Graph disconnected: cannot obtain value for tensor {x} at "
                                     f'layer "{node.layer.name}". The following previous layers '
                                     f"were accessed without issue: {done_names}")
            for x in nest.flatten(node.outputs):
                computable.add(id(x))
            done_names.append(node.layer.name)
    names = [layer.name for layer in layers]
    for name in names:
        if names.count(name) != 1:
            raise ValueError(f'The name "{name}" is used {names.count(name)} times in the model. '
                             "All layer names should be unique.")
    network_nodes = {f"{n.layer.name}_ib-{n.layer._inbound_nodes.index(n)}" for n in ordered}
    return network_nodes, dict(nodes_by_depth), layers


def get_network_config(network) -> dict:
    """Keras 2's functional config (``functional.get_network_config``)."""
    node_key = {}
    for layer in network.layers:
        kept = 0
        for i in range(len(layer._inbound_nodes)):
            if f"{layer.name}_ib-{i}" in network._network_nodes:
                node_key[(layer.name, i)] = kept
                kept += 1

    def history_entry(kt, kwargs=None):
        layer, node_index, tensor_index = kt._keras_history
        return [layer.name, node_key.get((layer.name, node_index), 0), tensor_index,
                kwargs or {}]

    layer_configs = []
    for layer in network.layers:
        inbound = []
        for i, node in enumerate(layer._inbound_nodes):
            if node.is_input or f"{layer.name}_ib-{i}" not in network._network_nodes:
                continue
            if isinstance(layer, TFOpLambda):
                inbound.append(_op_node_data(node, history_entry))
                continue
            kwargs = {k: v for k, v in node.call_kwargs.items()
                      if not any(isinstance(t, KerasTensor) for t in nest.flatten(v))}
            inbound.append([history_entry(t, kwargs) for t in node.keras_inputs])
        layer_configs.append({"class_name": get_registered_name(type(layer)),
                              "config": layer.get_config(),
                              "name": layer.name, "inbound_nodes": inbound})

    def coords(tensors):
        return [history_entry(t)[:3] for t in tensors]

    return {"name": network.name, "layers": layer_configs,
            "input_layers": coords(network.inputs), "output_layers": coords(network.outputs)}


def _op_node_data(node, history_entry) -> list:
    """An op layer's node as TF-Keras writes it: one entry per leaf of the first argument
    (``["_CONSTANT_VALUE", -1, value, kwargs]`` for a leaf that is not a KerasTensor), each
    with the keyword arguments, where KerasTensors are ``[layer, node, tensor]``
    (``tf.matmul(a, b=t)``, ``x * t``)."""
    def encode(value):
        if isinstance(value, KerasTensor):
            return history_entry(value)[:3]
        if isinstance(value, (list, tuple)):
            return type(value)(encode(v) for v in value)
        if isinstance(value, dict):
            return {k: encode(v) for k, v in value.items()}
        return value

    kwargs = encode(dict(node.call_kwargs))
    first = node.call_args[0] if node.call_args else None
    return [history_entry(t, kwargs) if isinstance(t, KerasTensor)
            else ["_CONSTANT_VALUE", -1, t, kwargs] for t in nest.flatten(first)]


def _reconstruct(config, custom_objects=None):
    """(inputs, outputs, {name: layer}) of the functional graph ``config`` describes, with new
    layers,
    reading, as TF-Keras does, constant leaves of an op layer's first argument and
    KerasTensors among the keyword arguments.

    Raises:
      ValueError: a node whose inputs never become available; Keras 3's node format."""
    from ..models.saving import _deserialize_layer

    created, pending = {}, collections.OrderedDict()
    for layer_data in config["layers"]:
        layer = _deserialize_layer(layer_data, custom_objects)
        name = layer_data.get("name", layer.name)
        created[name] = layer
        if layer_data.get("inbound_nodes"):
            pending[name] = list(layer_data["inbound_nodes"])

    def tensor_of(name, node_index, tensor_index):
        layer = created[name]
        if len(layer._inbound_nodes) <= node_index:
            return None
        return nest.flatten(layer._inbound_nodes[node_index].outputs)[tensor_index]

    class _NotYet(Exception):
        pass

    def decode(value):
        if (isinstance(value, (list, tuple)) and len(value) == 3 and isinstance(value[0], str)
                and value[0] in created and all(isinstance(v, int) for v in value[1:])):
            t = tensor_of(*value)
            if t is None:
                raise _NotYet
            return t
        if isinstance(value, (list, tuple)):
            return type(value)(decode(v) for v in value)
        if isinstance(value, dict):
            return {k: decode(v) for k, v in value.items()}
        return value

    def process(name, node_data) -> bool:
        if isinstance(node_data, dict):  # tf-keras 2.13+ writes {"args", "kwargs"}
            raise ValueError("from_config: the node format of Keras 3 configs is not read")
        inputs, kwargs = [], {}
        try:
            for entry in node_data:
                if entry[0] == "_CONSTANT_VALUE":
                    inputs.append(entry[2])
                else:
                    t = tensor_of(entry[0], entry[1], entry[2])
                    if t is None:
                        return False
                    inputs.append(t)
                if len(entry) > 3 and entry[3]:
                    kwargs = decode(dict(entry[3]))
        except _NotYet:
            return False
        created[name](inputs[0] if len(inputs) == 1 else inputs, **kwargs)
        return True

    while pending:
        progressed = False
        for name in list(pending):
            nodes = pending[name]
            while nodes and process(name, nodes[0]):
                nodes.pop(0)
                progressed = True
            if not nodes:
                del pending[name]
        if not progressed:
            raise ValueError(f"from_config: cannot compute the inputs of layers {list(pending)}")

    def ends(key):
        coords = config[key]
        if coords and not isinstance(coords[0], (list, tuple)):
            coords = [coords]
        tensors = [tensor_of(c[0], c[1], c[2]) for c in coords]
        return tensors[0] if len(tensors) == 1 else tensors

    return ends("input_layers"), ends("output_layers"), created
