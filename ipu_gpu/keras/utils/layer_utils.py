"""``Model.summary()``: the layer table, in TF-Keras 2's format (tf_keras 2.21's
``layer_utils.print_summary``, line for line: column positions, wrapping of long cells at
``),``/``],``/``},``/``',``, the blank separator lines, nested models with
``expand_nested``, and the ``Total params: 1234 (4.82 KB)`` footer).

Keras 2.6 printed the same table with ``_`` separator lines between layers, no wrapping and
``Total params: 1,234`` without the memory size; the emulator prints TF-Keras 2's form.
"""

from __future__ import annotations

import re

import numpy as np

from ...core import nest
from .progbar import print_msg

__all__ = ["count_params", "print_summary", "readable_memory_size", "weight_memory_size"]


def _dims(w) -> list:
    return [0 if d is None else int(d) for d in tuple(w.shape)]


def count_params(weights) -> int:
    """Count the total number of scalars composing the weights (each weight once)."""
    unique = {id(w): w for w in weights}.values()
    return int(sum(int(np.prod(_dims(w), dtype=np.int64)) for w in unique
                   if hasattr(w, "shape")))


def weight_memory_size(weights) -> int:
    """The bytes the weights take (each weight once)."""
    unique = {id(w): w for w in weights}.values()
    return int(sum(int(np.prod(_dims(w), dtype=np.int64)) * np.dtype(w.dtype).itemsize
                   for w in unique if hasattr(w, "shape")))


def readable_memory_size(size) -> str:
    """``1234`` -> ``'1.21 KB'`` (powers of 1024, two decimals)."""
    for unit in ("Byte", "KB", "MB", "GB", "TB", "PB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _layer_range_bounds(model, layer_range):
    if layer_range is None:
        return [0, len(model.layers)]
    if len(layer_range) != 2:
        raise ValueError(f"layer_range must be a list or tuple of length 2. Received: "
                         f"layer_range = {layer_range} of length {len(layer_range)}")
    if not isinstance(layer_range[0], str) or not isinstance(layer_range[1], str):
        raise ValueError(f"layer_range should contain string type only. Received: "
                         f"{layer_range}")
    lower = [i for i, layer in enumerate(model.layers) if re.match(layer_range[0], layer.name)]
    upper = [i for i, layer in enumerate(model.layers) if re.match(layer_range[1], layer.name)]
    if not lower or not upper:
        raise ValueError(f"Passed layer_names do not match the layer names in the model. "
                         f"Received: {layer_range}")
    if min(lower) > max(upper):
        return [min(upper), max(lower) + 1]
    return [min(lower), max(upper) + 1]


def _is_sequential_like(model) -> bool:
    if type(model).__name__ == "Sequential" or not getattr(model, "_is_graph_network", False):
        return True
    nodes = []
    for v in model._nodes_by_depth.values():
        if len(v) > 1 or (len(v) == 1 and len(nest.flatten(v[0].keras_inputs)) > 1):
            return False
        nodes += v
    for layer in model.layers:
        seen = False
        for node in layer._inbound_nodes:
            if any(node is n for n in nodes):
                if seen:
                    return False
                seen = True
    return True


def _format_shape(shape):
    """Output shapes print as Keras prints them: tuples with None, lists of tuples."""
    if shape is None:
        return None
    if isinstance(shape, list):
        return [_format_shape(s) for s in shape]
    if isinstance(shape, dict):
        return {k: _format_shape(v) for k, v in shape.items()}
    if isinstance(shape, tuple) and all(d is None or isinstance(d, int) for d in shape):
        return shape
    dims = getattr(shape, "as_list", None)
    if dims is not None:
        return tuple(dims())
    return shape


def print_summary(model, line_length=None, positions=None, print_fn=None,
                  expand_nested=False, show_trainable=False, layer_range=None):
    """Prints a summary of a model.

    Args:
      model: Keras model instance.
      line_length: Total length of printed lines (65 for sequential-like models, 98 for
        others).
      positions: Relative or absolute positions of log elements in each line (default
        ``[0.45, 0.85, 1.0]`` or ``[0.3, 0.6, 0.7, 1.0]``).
      print_fn: Print function to use (default: stdout); called once per line.
      expand_nested: Whether to expand the nested models.
      show_trainable: Whether to show if a layer is trainable.
      layer_range: a list or tuple of 2 strings, regular expressions of the first and last
        layer names to print.
    """
    if print_fn is None:
        print_fn = print_msg
    sequential_like = _is_sequential_like(model)
    relevant_nodes = []
    if sequential_like:
        line_length = line_length or 65
        positions = positions or [0.45, 0.85, 1.0]
        to_display = ["Layer (type)", "Output Shape", "Param #"]
    else:
        line_length = line_length or 98
        positions = positions or [0.3, 0.6, 0.7, 1.0]
        to_display = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
        for v in model._nodes_by_depth.values():
            relevant_nodes += v
    positions = list(positions)
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]
    if show_trainable:
        line_length += 11
        positions.append(line_length)
        to_display.append("Trainable")
    bounds = _layer_range_bounds(model, layer_range)

    def print_row(fields, nested_level=0):
        left = [str(x) for x in fields]
        while any(left):
            line = ""
            for col in range(len(left)):
                start = positions[col - 1] if col > 0 else 0
                end = positions[col]
                space = 2 if col != len(positions) - 1 else 0
                cutoff = end - start - space
                if col != len(positions) - 1:
                    cutoff -= 1
                if col == 0:
                    cutoff -= nested_level
                fit = left[col][:cutoff]
                breaks = [fit.find(x) + len(x) for x in ("),", "},", "],", "',")
                          if fit.find(x) >= 0]
                if breaks:
                    cutoff = min(breaks)
                    fit = fit[:cutoff]
                if col == 0:
                    line += "|" * nested_level + " "
                line += fit + (" " * space if space else "")
                left[col] = left[col][cutoff:]
                if nested_level and col == len(positions) - 1:
                    line += " " * (positions[col] - len(line) - nested_level)
                else:
                    line += " " * (positions[col] - len(line))
            line += "|" * nested_level
            print_fn(line)

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_row(to_display)
    print_fn("=" * line_length)

    def output_shape_of(layer):
        try:
            return _format_shape(layer.output_shape)
        except AttributeError:
            return "multiple"
        except RuntimeError:
            return "?"

    def print_layer_summary(layer, nested_level=0):
        if not layer.built and not getattr(layer, "_is_graph_network", False):
            params = "0 (unused)"
        else:
            params = layer.count_params()
        fields = [f"{layer.name} ({type(layer).__name__})", output_shape_of(layer), params]
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        print_row(fields, nested_level)

    def print_layer_summary_with_connections(layer, nested_level=0):
        connections = []
        for node in layer._inbound_nodes:
            if relevant_nodes and not any(node is n for n in relevant_nodes):
                continue
            for inbound, node_index, tensor_index, _ in node.iterate_inbound():
                connections.append(f"{inbound.name}[{node_index}][{tensor_index}]")
        fields = [f"{layer.name} ({type(layer).__name__})", output_shape_of(layer),
                  layer.count_params(), connections]
        if show_trainable:
            fields.append("Y" if layer.trainable else "N")
        print_row(fields, nested_level)

    def print_layer(layer, nested_level=0, is_nested_last=False):
        if sequential_like:
            print_layer_summary(layer, nested_level)
        else:
            print_layer_summary_with_connections(layer, nested_level)
        if expand_nested and getattr(layer, "layers", None):
            print_fn("|" * (nested_level + 1) + "¯" * (line_length - 2 * nested_level - 2)
                     + "|" * (nested_level + 1))
            inner = layer.layers
            for i, sub in enumerate(inner):
                print_layer(sub, nested_level + 1, i == len(inner) - 1)
            print_fn("|" * nested_level + "¯" * (line_length - 2 * nested_level)
                     + "|" * nested_level)
            is_nested_last = True  # tf-keras's loop leaves it so: no blank line follows
        if not is_nested_last:
            print_fn("|" * nested_level + " " * (line_length - 2 * nested_level)
                     + "|" * nested_level)

    for layer in model.layers[bounds[0]:bounds[1]]:
        print_layer(layer)
    print_fn("=" * line_length)
    trainable = model.trainable_weights
    frozen = model.non_trainable_weights
    t_count, n_count = count_params(trainable), count_params(frozen)
    t_size, n_size = weight_memory_size(trainable), weight_memory_size(frozen)
    print_fn(f"Total params: {t_count + n_count} ({readable_memory_size(t_size + n_size)})")
    print_fn(f"Trainable params: {t_count} ({readable_memory_size(t_size)})")
    print_fn(f"Non-trainable params: {n_count} ({readable_memory_size(n_size)})")
    print_fn("_" * line_length)
