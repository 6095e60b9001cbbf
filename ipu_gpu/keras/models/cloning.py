"""``keras.models.clone_model``: a new model with the same architecture and new weights
(tf_keras ``models/cloning.py`` semantics for functional and Sequential models)."""

from __future__ import annotations

from ...core import nest
from ..engine.functional import Functional
from ..engine.input_layer import Input, InputLayer
from ..engine.keras_tensor import KerasTensor
from ..engine.sequential import Sequential
from ..engine.training import Model

__all__ = ["clone_model"]


def _clone_layer(layer):
    return type(layer).from_config(layer.get_config())


def _clone_input(layer):
    shape = layer._batch_input_shape
    return Input(batch_shape=shape, dtype=layer.dtype, name=layer.name,
                 optional=getattr(layer, "optional", False))


def clone_model(model, input_tensors=None, clone_function=None):
    """Clone a Functional or Sequential ``keras.Model`` instance: new layers (from their
    configs, or ``clone_function(layer)``), new weights (freshly initialised), the same
    graph. ``InputLayer``s are recreated unless ``input_tensors`` (``keras.Input`` tensors)
    are given.

    Raises:
      ValueError: a subclassed model, or ``model`` is not a Model (Keras's messages).
    """
    clone_function = clone_function or _clone_layer
    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, clone_function)
    if not isinstance(model, Model):
        raise ValueError(f"Expected `model` argument to be a `Model` instance. Received: "
                         f"model={model}")
    if not isinstance(model, Functional):
        raise ValueError(f"Expected `model` argument to be a functional `Model` instance, but "
                         f"got a subclassed model instead: {model}")
    return _clone_functional(model, input_tensors, clone_function)


def _clone_functional(model, input_tensors, clone_function):
    values = {}
    if input_tensors is not None:
        new_inputs = nest.flatten(input_tensors)
        if len(new_inputs) != len(model.inputs):
            raise ValueError(f"Expected {len(model.inputs)} input tensors, got "
                             f"{len(new_inputs)}.")
    else:
        new_inputs = [_clone_input(x._keras_history.layer) for x in model.inputs]
    for old, new in zip(model.inputs, new_inputs):
        values[id(old)] = new
    clones = {}
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            if node.is_input:
                continue
            layer = node.layer
            if id(layer) not in clones:
                clones[id(layer)] = clone_function(layer)
            args, kwargs = node.map_arguments(lambda kt: values[id(kt)])
            outputs = clones[id(layer)](*args, **kwargs)
            for kt, value in zip(nest.flatten(node.outputs), nest.flatten(outputs)):
                values[id(kt)] = value
    inputs = nest.pack_sequence_as(model._nested_inputs, new_inputs)
    outputs = nest.pack_sequence_as(model._nested_outputs,
                                    [values[id(x)] for x in model.outputs])
    return Functional(inputs, outputs, name=model.name)


def _clone_sequential(model, input_tensors, clone_function):
    layers = [clone_function(layer) for layer in model.layers]
    if input_tensors is not None:
        x = nest.flatten(input_tensors)
        if len(x) != 1 or not isinstance(x[0], KerasTensor):
            raise ValueError("To clone a `Sequential` model, we expect at most one tensor as "
                             f"part of `input_tensors`. Received: input_tensors={input_tensors}")
        return Sequential([x[0]._keras_history.layer] + layers, name=model.name)
    tracked = model._self_tracked_trackables
    if tracked and isinstance(tracked[0], InputLayer) and model._has_explicit_input_shape:
        layers = [_clone_input(tracked[0])._keras_history.layer] + layers
    return Sequential(layers, name=model.name)
