"""``keras.Sequential``: a plain stack of single-input, single-output layers (tf_keras
``engine/sequential.py`` semantics).

With an input shape known (an ``Input`` added first, or ``input_shape``/``batch_input_shape``/
``input_dim`` on the first layer) the model is a functional graph from the start and every
``add`` extends it. Otherwise it is built at its first call (or ``build(input_shape)``): the
graph is made for the inputs' shape with an unknown batch size, as TF-Keras does when
``fit`` first calls it inside a function. Inputs that are not tensors fall back to calling
the layers in turn.
"""

from __future__ import annotations

from ...core import nest
from ...core.spec import TensorShape
from ...core.tensor import Tensor
from .base_layer import Layer
from .functional import Functional
from .input_layer import Input, InputLayer
from .keras_tensor import KerasTensor
from .training import Model

__all__ = ["Sequential"]

_SINGLE_OUTPUT = ("All layers in a Sequential model should have a single output tensor. For "
                  "multi-output layers, use the functional API.")


class Sequential(Functional):
    """``Sequential`` groups a linear stack of layers into a ``Model``.

    Args:
      layers: Optional list of layers to add to the model.
      name: Optional name for the model.
    """

    def __init__(self, layers=None, name=None):
        Model.__init__(self, name=name, autocast=False)
        set_ = object.__setattr__
        set_(self, "_self_tracked_trackables", [])
        set_(self, "_has_explicit_input_shape", False)
        set_(self, "_graph_initialized", False)
        set_(self, "_inferred_input_shape", None)
        set_(self, "_use_legacy_deferred_behavior", False)
        set_(self, "_created_nodes", [])
        self._supports_masking = True
        if layers:
            if not isinstance(layers, (list, tuple)):
                layers = [layers]
            for layer in layers:
                self.add(layer)

    def _init_set_name(self, name) -> None:
        Model._init_set_name(self, name)

    @property
    def layers(self) -> list:
        """The layers, each once (Keras's ``layers`` drops a layer added again: a deferred
        model called on data runs it once)."""
        layers = _unique(self._self_tracked_trackables)
        if layers and isinstance(layers[0], InputLayer):
            return layers[1:]
        return layers

    def _tracked_layers(self) -> list:
        return list(self._self_tracked_trackables)

    def add(self, layer):
        """Adds a layer instance on top of the layer stack.

        Raises:
          TypeError: not a layer (Keras's message).
          ValueError: a layer name already in the model, or a layer with several outputs.
        """
        history = getattr(layer, "_keras_history", None)
        if history is not None and isinstance(history.layer, InputLayer):
            layer = history.layer
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Received: "
                            f"layer={layer} of type {type(layer)}.")
        for ref in self.layers:
            if ref.name == layer.name and ref is not layer:
                raise ValueError(f"All layers added to a Sequential model should have unique "
                                 f'names. Name "{layer.name}" is already the name of a layer in '
                                 "this model. Update the `name` argument to pass a unique name.")
        self.built = False
        set_inputs = False
        tracked = self._self_tracked_trackables
        if not tracked:
            if isinstance(layer, InputLayer):
                set_inputs = True
            else:
                batch_shape = getattr(layer, "_batch_input_shape", None)
                if batch_shape:
                    x = Input(batch_shape=batch_shape, dtype=layer.dtype,
                              name=layer.name + "_input")
                    layer(x)
                    set_inputs = True
            if set_inputs:
                outputs = nest.flatten(layer._inbound_nodes[-1].outputs)
                if len(outputs) != 1:
                    raise ValueError(_SINGLE_OUTPUT)
                self._set_graph_ends(_source_inputs(outputs[0]), outputs)
                object.__setattr__(self, "_has_explicit_input_shape", True)
        elif self.outputs:
            output = layer(self.outputs[0])
            if len(nest.flatten(output)) != 1:
                raise ValueError(_SINGLE_OUTPUT)
            self._set_graph_ends(self.inputs, [output])
        if set_inputs or self._graph_initialized:
            Functional._init_graph_network(self, self.inputs, self.outputs)
            object.__setattr__(self, "_graph_initialized", True)
        else:
            tracked.append(layer)

    def _set_graph_ends(self, inputs, outputs):
        object.__setattr__(self, "inputs", list(inputs))
        object.__setattr__(self, "outputs", list(outputs))

    def pop(self):
        """Removes the last layer in the model.

        Raises:
          TypeError: there are no layers in the model.
        """
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        self._self_tracked_trackables.pop()
        set_ = object.__setattr__
        if not self.layers:
            set_(self, "outputs", None)
            set_(self, "inputs", None)
            self.built = False
            set_(self, "_inferred_input_shape", None)
            set_(self, "_has_explicit_input_shape", False)
            set_(self, "_graph_initialized", False)
        elif self._graph_initialized:
            last = self.layers[-1]
            last._outbound_nodes.clear()
            tracked = list(self._self_tracked_trackables)
            output = last._inbound_nodes[-1].outputs
            Functional._init_graph_network(self, self.inputs, [nest.flatten(output)[0]])
            # keep the layers popped from the graph out of it
            set_(self, "_self_tracked_trackables", tracked)

    # ---- deferred building -----------------------------------------------------------------
    def _maybe_build(self, inputs) -> None:
        if not self.built and not self._graph_initialized:
            flat = nest.flatten(inputs)
            if len(flat) == 1 and isinstance(flat[0], (Tensor, KerasTensor)):
                self._build_graph_for_shape(flat[0].shape, flat[0].dtype)
        super()._maybe_build(inputs)

    def _build_graph_for_shape(self, input_shape, dtype=None, relax_batch=True) -> None:
        """Make the functional graph for inputs of ``input_shape`` (batch size unknown
        unless ``relax_batch`` is False)."""
        if input_shape is None or not self.layers or self._has_explicit_input_shape \
                or self._use_legacy_deferred_behavior:
            return
        if isinstance(input_shape, TensorShape) and not isinstance(input_shape, tuple):
            dims = input_shape.as_list() if input_shape.rank is not None else None
        else:
            dims = [None if d is None else int(d) for d in input_shape]
        if not dims:
            return
        new_shape = tuple([None] + dims[1:]) if relax_batch else tuple(dims)
        if new_shape == self._inferred_input_shape:
            return
        for layer in self.layers:  # forget the nodes of an earlier inferred graph
            for node in list(layer._inbound_nodes):
                if any(node is n for n in self._created_nodes):
                    layer._inbound_nodes.remove(node)
        x = Input(batch_shape=new_shape, dtype=dtype, name=self.layers[0].name + "_input")
        inputs, created = x, []
        try:
            for layer in self.layers:
                before = len(layer._inbound_nodes)
                x = layer(x)
                created.extend(layer._inbound_nodes[before:])
                if len(nest.flatten(x)) != 1:
                    raise ValueError(_SINGLE_OUTPUT)
        except (TypeError, NotImplementedError):
            object.__setattr__(self, "_use_legacy_deferred_behavior", True)
            return
        layers = list(self._self_tracked_trackables)
        Functional._init_graph_network(self, inputs, x)
        object.__setattr__(self, "_self_tracked_trackables",
                           [inputs._keras_history.layer] + layers)
        object.__setattr__(self, "_graph_initialized", True)
        object.__setattr__(self, "_created_nodes", created)
        object.__setattr__(self, "_inferred_input_shape", new_shape)

    def build(self, input_shape=None):
        """Builds the model for inputs of ``input_shape`` (batch dimension included).

        Raises:
          ValueError: no input shape and none known (Keras's message).
        """
        if self._graph_initialized:
            self.built = True
            return
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        self._build_graph_for_shape(input_shape, relax_batch=False)
        if not self.built:
            self._build_input_shape = input_shape
            Layer.build(self, input_shape)
        self.built = True

    def call(self, inputs, training=None, mask=None):
        if not self._has_explicit_input_shape and not self._graph_initialized:
            if isinstance(inputs, (Tensor, KerasTensor)):
                self._build_graph_for_shape(inputs.shape, inputs.dtype)
            else:
                object.__setattr__(self, "_use_legacy_deferred_behavior", True)
        if self._graph_initialized:
            self.built = True
            return self._run_internal_graph(inputs, training=training, mask=mask)
        outputs = inputs
        for layer in self.layers:
            spec = layer._call_spec
            kwargs = {}
            if "mask" in spec.arg_names or "mask" in spec.defaults:
                kwargs["mask"] = mask
            if "training" in spec.arg_names or "training" in spec.defaults:
                kwargs["training"] = training
            outputs = layer(outputs, **kwargs)
            mask = None
        self.built = True
        return outputs

    def compute_output_shape(self, input_shape):
        shape = input_shape
        for layer in self.layers:
            shape = layer.compute_output_shape(shape)
        return shape

    @property
    def input_spec(self):
        manual = self.__dict__.get("_manual_input_spec")
        if manual is not None:
            return manual
        if self._has_explicit_input_shape:
            return Functional.input_spec.fget(self)
        return None

    @input_spec.setter
    def input_spec(self, value):
        object.__setattr__(self, "_manual_input_spec", value)

    def get_config(self) -> dict:
        """``{"name", "layers"}`` (the InputLayer first when the input shape is known), plus
        ``build_input_shape`` for a model built without one."""
        from .serialization import get_registered_name

        layers = [{"class_name": get_registered_name(type(layer)), "config": layer.get_config()}
                  for layer in _unique(self._self_tracked_trackables)]
        config = {"name": self.name, "layers": layers}
        if not self._graph_initialized and self._build_input_shape is not None:
            config["build_input_shape"] = self._build_input_shape
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A new model (new weights) from ``get_config``'s dict."""
        from ..models.saving import _sequential_from_config

        return _sequential_from_config(cls, config, custom_objects)


def _source_inputs(tensor):
    """The Input KerasTensors ``tensor`` is computed from."""
    layer, node_index, _ = tensor._keras_history
    node = layer._inbound_nodes[node_index]
    if node.is_input:
        return [tensor]
    found = []
    for x in node.keras_inputs:
        for source in _source_inputs(x):
            if not any(source is f for f in found):
                found.append(source)
    return found


def _unique(layers) -> list:
    """``layers`` in order, each layer object once."""
    seen = set()
    out = []
    for layer in layers:
        if id(layer) not in seen:
            seen.add(id(layer))
            out.append(layer)
    return out
