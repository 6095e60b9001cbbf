"""Calling a layer on KerasTensors: infer the outputs' shapes and dtypes, record a Node.

Built-in layers (``Layer._shape_inference``) give their outputs from
``compute_output_signature``. Any other layer is probed: ``call`` runs on stand-in zeros
(ones for bool) whose unknown dimensions are 2, then 3; an output dimension that changes
between the two runs is unknown (None). Where a run fails, the probe tries 4 and 8, then 16
and 32 (a reshape may need a multiple), and raises the first error if none serve. During a
probe, losses and metrics are not recorded and the layer's weights are restored afterwards,
so a probe leaves no trace but built sub-layers. Randomness drawn inside a probed ``call``
does advance ipu_gpu's random streams.
"""

from __future__ import annotations

import numpy as np

from ...core import backend as array_backend
from ...core import nest
from ...core.tensor import wrap
from . import call_context
from .call_context import get_mask
from .input_spec import assert_input_compatibility
from .keras_tensor import KerasTensor
from .node import Node

# sizes of the unknown dimensions in the two runs of a probe; the next pair where a run
# fails (``tf.reshape(x, (-1, 8))`` of a (None, 4) input needs an even batch)
_UNKNOWN_RANK_PROBES = (1, 2, 3, 4)
_PROBE_SIZES = ((2, 3), (4, 8), (16, 32))


def functional_call(layer, inputs, args, kwargs):
    """``layer(inputs, *args, **kwargs)`` with KerasTensors among the arguments: the output
    KerasTensors, recorded as a new node of ``layer``."""
    from .base_layer import _convert_inputs

    if layer._convert_input_args:
        inputs = _convert_inputs(inputs)
    spec = layer._call_spec
    input_masks, implicit = layer._get_input_masks(inputs, args, kwargs)
    mask_by_framework = False
    if spec.expects_mask_arg and implicit:
        kwargs = dict(kwargs)
        kwargs["mask"] = input_masks
        mask_by_framework = True
    ctx = call_context.context()
    args, kwargs, training, training_by_framework = layer._resolve_training(
        args, kwargs, ctx, symbolic=True)
    with call_context.enter(layer, training):
        outputs = _symbolic_outputs(layer, inputs, input_masks, args, kwargs)
    if outputs is None:
        raise ValueError("A layer's `call` method should return a Tensor or a list of Tensors, "
                         f"not None (layer: {layer.name}).")
    if training_by_framework:
        args, kwargs = spec.set_arg_value("training", None, args, kwargs,
                                          pop_kwarg_if_none=True)
    if mask_by_framework:
        kwargs.pop("mask")
    Node(layer, call_args=(inputs, *args), call_kwargs=kwargs, outputs=outputs)
    return outputs


def _symbolic_outputs(layer, inputs, input_masks, args, kwargs):
    assert_input_compatibility(layer.input_spec, inputs, layer.name)
    with call_context.name_scope(layer.name):
        layer._maybe_build(inputs)
    if not layer._shape_inference:
        outputs, masks = probe(layer, inputs, args, kwargs, input_masks)
    else:
        signature = nest.map_structure(lambda t: t.type_spec if isinstance(t, KerasTensor)
                                       else t, _cast_specs(layer, inputs))
        outputs = nest.map_structure(KerasTensor.from_spec,
                                     layer.compute_output_signature(signature))
        masks = _output_masks(layer, inputs, input_masks, outputs)
    if masks is not None:
        for tensor, mask in zip(nest.flatten(outputs), nest.flatten(masks)):
            tensor._keras_mask = mask
    return outputs


def _cast_specs(layer, inputs):
    """The inputs as ``call`` sees them: floating KerasTensors in the compute dtype."""
    compute = layer.compute_dtype
    if not layer._autocast or compute is None or np.dtype(compute).kind != "f":
        return inputs

    def cast(t):
        if isinstance(t, KerasTensor) and t.dtype.kind == "f" and t.dtype != compute:
            return KerasTensor(t.shape, compute, t.name)
        return t

    return nest.map_structure(cast, inputs)


def _output_masks(layer, inputs, input_masks, outputs):
    """The masks of a built-in layer's outputs: the input masks when ``compute_mask`` is
    Keras's default, else ``compute_mask`` probed."""
    from .base_layer import Layer

    if not layer._supports_masking:
        return None
    if type(layer).compute_mask is Layer.compute_mask:
        if input_masks is None:
            return None
        flat_out, flat_masks = nest.flatten(outputs), nest.flatten(input_masks)
        return flat_masks[:len(flat_out)] if len(flat_masks) >= len(flat_out) else None
    return _probe_fn(lambda x, m: layer.compute_mask(x, m), (inputs, input_masks))


def probe(layer, inputs, args, kwargs, input_masks):
    """(outputs, masks) of ``layer.call`` on stand-ins for the KerasTensors: KerasTensors
    whose dimensions are None where the two probe sizes give different sizes."""
    weights = [(w, w._value) for w in layer.weights]

    def run(x, a, kw, m):
        ctx = call_context.context()
        with call_context.enter(layer, ctx.training, probing=True), \
                call_context.name_scope(layer.name), np.errstate(all="ignore"):
            x = layer._maybe_cast_inputs(x)
            out = layer.call(x, *a, **kw)
            out_masks = None
            if layer._supports_masking:
                flat = nest.flatten(out)
                existing = [get_mask(t) for t in flat]
                if all(e is not None for e in existing):
                    out_masks = nest.pack_sequence_as(out, existing)
                else:
                    out_masks = layer.compute_mask(x, m)
        return out, out_masks

    try:
        result = _probe_fn(run, (inputs, list(args), dict(kwargs), input_masks), layer.name)
    finally:
        for w, value in weights:  # a probe must not move the weights (BatchNorm statistics)
            if w._value is not value:
                w._value = value
    return result


def symbolic_shape(x):
    """The shape ``x`` stands for: during a probe, the KerasTensor's shape (None where the
    model leaves a dimension open) when ``x`` is one of the stand-ins; else ``x.shape``."""
    stand_ins = getattr(call_context.context(), "stand_ins", None)
    if stand_ins:
        entry = stand_ins.get(id(x))
        if entry is not None and entry[0] is x:
            return entry[1].shape
    return x.shape


def _probe_fn(fn, structure, name=None):
    # An input of unknown rank is stood in for at ranks 1, 2, ... until ``call`` takes one;
    # what it returns then has unknown rank too (as tf-keras's trace of ``call`` gives).
    unknown = any(isinstance(v, KerasTensor) and v.shape.rank is None
                  for v in nest.flatten(structure))
    first_error = None
    for rank in (_UNKNOWN_RANK_PROBES if unknown else (None,)):
        for sizes in _PROBE_SIZES:
            try:
                runs = _probe_runs(fn, structure, sizes, name, rank)
            except Exception as e:  # noqa: BLE001 - the first error is raised if none serves
                if first_error is None:
                    first_error = e
                continue
            break
        else:
            continue
        break
    else:
        raise first_error
    first, second = runs
    flat_a, flat_b = nest.flatten(first), nest.flatten(second)
    if len(flat_a) != len(flat_b):
        raise ValueError(f"Layer {name}: `call` returned differently structured outputs for "
                         "different batch sizes")
    merged = [_merge(a, b, name) for a, b in zip(flat_a, flat_b)]
    if unknown:
        merged = [None if m is None else KerasTensor(None, m.dtype) for m in merged]
    return nest.pack_sequence_as(first, merged)


def _probe_runs(fn, structure, sizes, name, rank=None):
    runs = []
    ctx = call_context.context()
    saved = getattr(ctx, "stand_ins", None)
    for size in sizes:
        made = {}

        def stand_in(v, size=size, made=made):
            out = _stand_in(v, size, rank)
            if out is not v:
                made[id(out)] = (out, v)
            return out

        concrete = nest.map_structure(stand_in, structure)
        ctx.stand_ins = {**(saved or {}), **made}
        try:
            runs.append(fn(*concrete))
        finally:
            ctx.stand_ins = saved
    return runs


def _stand_in(value, size, rank):
    if not isinstance(value, KerasTensor):
        return value
    if value.shape.rank is None:
        dims = [size] * rank
    else:
        dims = [size if d is None else d for d in value.shape.as_list()]
    if value.dtype.kind == "O":  # tf.string: host strings ("0", a number to to_number)
        strings = np.empty(dims, object)
        strings.fill(b"0")
        return wrap(strings)
    xp = array_backend.default_xp()
    make = xp.ones if value.dtype.kind == "b" else xp.zeros
    return wrap(make(dims, value.dtype))


def _merge(a, b, name):
    if a is None and b is None:
        return None
    shape_a, shape_b = getattr(a, "shape", None), getattr(b, "shape", None)
    if shape_a is None or shape_b is None or not hasattr(a, "dtype"):
        raise TypeError(f"Layer {name}: `call` must return tensors when called on Keras "
                        f"symbolic inputs, got {type(a).__name__}")
    if len(shape_a) != len(shape_b):
        return KerasTensor(None, a.dtype)
    return KerasTensor([x if x == y else None for x, y in zip(shape_a, shape_b)], a.dtype)
