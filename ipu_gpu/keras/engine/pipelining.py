"""Pipeline stage assignments of Keras models (Graphcore's ``keras.ipu`` extensions:
``set_pipeline_stage_assignment``, ``get_pipeline_stage_assignment``,
``reset_pipeline_stage_assignment``, ``print_pipeline_stage_assignment_summary`` and the
``PipelineStage`` scope), with Graphcore's checks and messages.

How a pipelined model trains: Graphcore's pipeline runs every stage on the next
micro-batch, accumulates the gradients of ``gradient_accumulation_steps_per_replica``
micro-batches and applies them once; all schedules give the losses and weights of that
accumulation up to float reassociation (``pipelining_test_util``). The emulator runs the
stages in order on one replica (``ipu_execution``: the accumulation and the update are the
same), so a pipelined model trains as its unpipelined twin with that gradient
accumulation; the stages only set how many IPUs a replica takes (the highest stage, or the
device mapping, plus one, rounded up to a power of two) and the depth the IPU accepts
(``check_pipeline``).

Models holding models take ``*NestedModelPipelineStageAssignment`` entries (the nested
model's own assignment list) and are checked as Graphcore checks them (each call only uses
outputs of its own or earlier stages); a subclassed model is pipelined through the graph of
its ``call`` traced on ``keras.Input`` tensors of its build shape (``PipelineStage`` scopes
inside ``call`` assign the calls). ``accumulate_outfeed`` changes nothing here.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ...core import nest
from . import option_keys

__all__ = ["FunctionalLayerPipelineStageAssignment",
           "FunctionalNestedModelPipelineStageAssignment", "ModelLayerPipelineStageAssignment",
           "NestedModelPipelineStageAssignment", "PipelineStage",
           "SequentialLayerPipelineStageAssignment",
           "SequentialNestedModelPipelineStageAssignment", "current_stage"]

_LOCAL = threading.local()


def current_stage():
    """The stage of the innermost ``PipelineStage`` scope on this thread, or None (layers
    and layer calls made inside record it as ``_pipeline_stage``)."""
    return getattr(_LOCAL, "stage", None)


class PipelineStage:
    """A scope within which Keras layers and/or calls to Keras layers are assigned to
    pipeline stages (calls take precedence over constructions).

    Args:
      stage: The pipeline stage that any Keras layers created and/or called will be
        assigned to within this scope.

    Raises:
      ValueError: a negative stage. RuntimeError: outside an IPUStrategy's scope, or nested.
    """

    def __init__(self, stage):
        self._stage = stage

    def __enter__(self):
        from ... import distribute
        from ...ipu.ipu_strategy import IPUStrategyV1

        if self._stage < 0:
            raise ValueError("%d is not a valid pipeline stage.")  # sic, Graphcore's message
        if not isinstance(distribute.get_strategy(), IPUStrategyV1):
            raise RuntimeError("PipelineStage may only be used from within an IPUStrategy "
                               "context.")
        if current_stage() is not None:
            raise RuntimeError("Pipeline stages must not be nested.")
        _LOCAL.stage = self._stage
        return self

    def __exit__(self, *exc):
        _LOCAL.stage = None


class ModelLayerPipelineStageAssignment:
    """Which pipeline stage one call (``node_index``) of a layer of a model runs in."""

    def __init__(self, layer, node_index, pipeline_stage=None):
        self._layer = layer
        self._node_index = node_index
        self.pipeline_stage = pipeline_stage

    @property
    def layer(self):
        return self._layer

    @property
    def node_index(self):
        return self._node_index

    @property
    def inbound_layers(self):
        """The input layers of this call (to tell the calls of a shared layer apart)."""
        node = self._layer._inbound_nodes[self._node_index]
        return [n.layer for n in node.parent_nodes]

    @property
    def is_nested_model(self) -> bool:
        return False

    def __str__(self) -> str:
        return (f"Layer: {self.layer.name} (node index {self.node_index}) is assigned to "
                f"pipeline stage: {self.pipeline_stage}")


class FunctionalLayerPipelineStageAssignment(ModelLayerPipelineStageAssignment):
    """The assignment of one call of a layer of a functional model."""


class SequentialLayerPipelineStageAssignment:
    """Which pipeline stage a layer of a Sequential model runs in."""

    def __init__(self, layer, pipeline_stage=None):
        self._layer = layer
        self.pipeline_stage = pipeline_stage

    @property
    def layer(self):
        return self._layer

    @property
    def is_nested_model(self) -> bool:
        return False

    def __str__(self) -> str:
        return f"Layer: {self.layer.name} is assigned to pipeline stage: {self.pipeline_stage}"


class NestedModelPipelineStageAssignment:
    """The pipeline stage assignments of the layers of a model called (``node_index``)
    inside a model subclass (its own assignment list, in its own format)."""

    def __init__(self, nested_model, node_index, pipeline_stage_assignments):
        self._nested_model = nested_model
        self._node_index = node_index
        self._pipeline_stage_assignments = list(pipeline_stage_assignments)

    @property
    def nested_model(self):
        return self._nested_model

    @property
    def node_index(self):
        return self._node_index

    @property
    def inbound_layers(self):
        node = self._nested_model._inbound_nodes[self._node_index]
        return [n.layer for n in node.parent_nodes]

    @property
    def pipeline_stage_assignments(self) -> list:
        return list(self._pipeline_stage_assignments)

    @property
    def is_nested_model(self) -> bool:
        return True

    def __str__(self) -> str:
        inner = "".join(f"\n  {x}" for x in self.pipeline_stage_assignments)
        return (f"Model: {self.nested_model.name} (node index {self.node_index}) has the "
                f"following pipeline stage assignments:{inner}")


class FunctionalNestedModelPipelineStageAssignment(NestedModelPipelineStageAssignment):
    """The assignments of the layers of a model called inside a functional model."""


class SequentialNestedModelPipelineStageAssignment:
    """The pipeline stage assignments of the layers of a model inside a Sequential model."""

    def __init__(self, nested_model, pipeline_stage_assignments):
        self._nested_model = nested_model
        self._pipeline_stage_assignments = list(pipeline_stage_assignments)

    @property
    def nested_model(self):
        return self._nested_model

    @property
    def pipeline_stage_assignments(self) -> list:
        return list(self._pipeline_stage_assignments)

    @property
    def is_nested_model(self) -> bool:
        return True

    def __str__(self) -> str:
        inner = "".join(f"\n  {x}" for x in self.pipeline_stage_assignments)
        return (f"Model: {self.nested_model.name} has the following pipeline stage "
                f"assignments:{inner}")


# ---- the layer-call graph of a model ---------------------------------------------------------
def _is_model(layer) -> bool:
    from .training import Model

    return isinstance(layer, Model)


def graph(model):
    """(inputs, {depth: nodes}) of the model's layer calls: a functional model's own; a
    subclassed model's traced once (Graphcore's ``_trace_graph_network``: ``call`` run on
    ``keras.Input`` tensors of the shape the model was built with), else None."""
    if model._is_graph_network:
        return model.inputs, model._nodes_by_depth, model.outputs
    return model.__dict__.get("_pipeline_graph")


def trace(model, inputs=None):
    """Trace a built subclassed model's ``call`` into its layer-call graph (PipelineStage
    scopes in ``call`` record their stages on the nodes); returns ``graph(model)``.

    Raises:
      RuntimeError: the model is not built (Graphcore's message names ``action``).
      ValueError: ``call`` cannot run on symbolic float inputs (Graphcore's message)."""
    from ... import distribute
    from . import call_context
    from .functional import _map_graph_network
    from .input_layer import Input

    found = model.__dict__.get("_pipeline_graph")
    if found is not None:
        return found
    shape = model._build_input_shape
    if inputs is None and (not model.built or shape is None):
        return None

    def as_input(s):
        return Input(batch_shape=tuple(getattr(s, "as_list", lambda: s)()))

    if inputs is not None:
        pass
    elif isinstance(shape, dict):
        inputs = {k: as_input(v) for k, v in shape.items()}
    elif isinstance(shape, (list, tuple)) and shape and all(
            isinstance(x, (list, tuple)) or hasattr(x, "as_list") for x in shape):
        inputs = [as_input(x) for x in shape]
    else:
        inputs = as_input(shape)
    spec = model._call_spec
    kwargs = {a: False for a in spec.arg_names[1:] if a == "training"
              and a not in spec.defaults}
    strategy = model.distribute_strategy
    # losses and metrics ``call`` adds on the symbolic tensors are not the model's
    kept = [(layer, list(layer._losses), list(layer._metrics))
            for layer in model._flatten_layers()]
    try:
        with strategy.scope() if strategy is not distribute.get_strategy() else _null(), \
                call_context.enter(model, False), call_context.name_scope(model.name):
            outputs = model.call(inputs, **kwargs)
    except TypeError as e:
        raise ValueError("You cannot pass a plain shape to your model's `build` function if "
                         "your layers do not support float type inputs. You must pass a "
                         "`keras.Input` object with the required dtype, or `call` your model "
                         "on real tensor data (of the correct dtype).") from e
    finally:
        for layer, losses, metrics in kept:
            layer._losses[:] = losses
            with layer._metrics_lock:
                layer._metrics[:] = metrics
    flat_inputs, flat_outputs = nest.flatten(inputs), nest.flatten(outputs)
    _, nodes_by_depth, _ = _map_graph_network(flat_inputs, flat_outputs)
    found = (flat_inputs, nodes_by_depth, flat_outputs)
    object.__setattr__(model, "_pipeline_graph", found)
    return found


def trace_for_data(model, x) -> None:
    """Trace an unbuilt subclassed model on ``keras.Input`` tensors with the shapes (batch
    size open) and dtypes of the inputs ``x`` (arrays, Tensors, a dataset of ``(x, ...)``
    elements, or nested lists and dicts of them); a model whose ``call`` cannot run on
    them stays untraced (it is then built from the first batch, unpipelined)."""
    from ...data import Dataset
    from .input_layer import Input

    if isinstance(x, Dataset):
        spec = x.element_spec
        if isinstance(spec, tuple):
            spec = spec[0]
        leaves = [(s.shape.as_list(), s.dtype) for s in nest.flatten(spec)]
        structure = spec
    else:
        flat = nest.flatten(x)
        if not flat or not all(hasattr(v, "shape") and hasattr(v, "dtype") for v in flat):
            return
        leaves = [([None, *list(v.shape)[1:]], v.dtype) for v in flat]
        structure = x
    try:
        inputs = nest.pack_sequence_as(structure, [
            Input(batch_shape=tuple(shape), dtype=np.dtype(dtype).name)
            for shape, dtype in leaves])
        shapes = nest.map_structure(lambda t: tuple(t.shape.as_list()), inputs)
        model.build(shapes)
        trace(model, inputs)
    except Exception:  # noqa: BLE001 - Graphcore raises here; the emulator trains unpipelined
        object.__setattr__(model, "_pipeline_graph", None)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _built_graph(model, action: str):
    found = graph(model) if model._is_graph_network else trace(model)
    if found is None:
        extra = (", or assign pipeline stages in your graph definition using PipelineStage "
                 "scopes." if action == "set" else ".")
        raise RuntimeError(f"Cannot {action} pipeline stage assignments for model "
                           f"`{model.name}` which has not been built yet. Please call "
                           f"`model.build()` first{extra}")
    return found


def post_order(model, found=None) -> list:
    """The nodes of a model's layer-call graph in execution order, input nodes excluded."""
    inputs, nodes_by_depth, _ = found if found is not None else graph(model)
    done = {id(x) for x in inputs}
    order = []
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            if node.is_input or any(id(t) not in done for t in node.keras_inputs):
                continue
            order.append(node)
            done.update(id(t) for t in nest.flatten(node.outputs))
    return order


def _is_sequential(model) -> bool:
    from .sequential import Sequential

    return isinstance(model, Sequential)


def _kind(model) -> str:
    """The prefix of the model's assignment classes: Sequential, Functional or Model."""
    if _is_sequential(model):
        return "Sequential"
    return "Functional" if model._is_graph_network else "Model"


def _check_list(assignment, expected: int):
    if not isinstance(assignment, list):
        raise ValueError("`pipeline_stage_assignment` needs to be a list.")
    if len(assignment) != expected:
        raise ValueError(f"The length of the provided `pipeline_stage_assignment` "
                         f"({len(assignment)}) does not match the number of layers in the graph "
                         f"({expected}). Each layer needs to be assigned a pipeline stage "
                         "(excluding input layers).")


def validate_sequential(model, assignment) -> list:
    """The assignment as SequentialLayerPipelineStageAssignments, checked (a Sequential model
    holding models: as a graph, Graphcore's ``_get_pipelined_post_order``)."""
    _check_list(assignment, len(model.layers))
    assignment = [SequentialLayerPipelineStageAssignment(model.layers[i], a)
                  if isinstance(a, int) else a for i, a in enumerate(assignment)]
    if not all(isinstance(a, (SequentialLayerPipelineStageAssignment,
                              SequentialNestedModelPipelineStageAssignment))
               for a in assignment):
        raise ValueError("All elements of `pipeline_stage_assignment` must be instances of "
                         "`SequentialLayerPipelineStageAssignment` for layers or  "
                         "`SequentialNestedModelPipelineStageAssignment` for nested models.")
    if any(_is_model(layer) for layer in model.layers):
        _stages(model, assignment, None)
        return assignment
    previous = 0
    for i, a in enumerate(assignment):
        if a.pipeline_stage is None:
            raise ValueError(f"Layer {a.layer.name} has not been assigned a pipeline stage.")
        if model.layers[i] is not a.layer:
            raise ValueError(f"The provided assignment at index {i} `pipeline_stage_assignment` "
                             f"is for layer {a.layer.name}, but the layer in the Sequential "
                             f"model at index {i} is {model.layers[i].name}.")
        if i == 0 and a.pipeline_stage != 0:
            raise ValueError("The first layer in a pipelined sequential model needs to be "
                             "assigned to the 0th pipeline stage, however it was assigned to "
                             f"{a.pipeline_stage}.")
        if i > 0 and a.pipeline_stage not in (previous, previous + 1):
            raise ValueError(f"Layer {a.layer.name} has been assigned to pipeline stage "
                             f"{a.pipeline_stage}, however the previous layer in the Sequential "
                             f"model was assigned to pipeline stage {previous}. A layer in a "
                             "Sequential model can only be assigned to the same pipeline stage "
                             "as the previous layer or to the next pipeline stage.")
        previous = a.pipeline_stage
    return assignment


def validate_functional(model, assignment) -> list:
    """Check a functional or subclassed model's assignment (one per layer call, in execution
    order; a nested model's call takes a ``*NestedModelPipelineStageAssignment``)."""
    found = _built_graph(model, "set")
    if not isinstance(assignment, list):
        raise ValueError("`pipeline_stage_assignment` needs to be a list.")
    _stages(model, assignment, None, found)
    return list(assignment)


def _steps(model, found=None) -> list:
    """(layer, node or None, input keys, output keys) per layer call in execution order: a
    Sequential model's layers as a chain, a graph's nodes by tensor identity."""
    if _is_sequential(model):
        return [(layer, None, [("chain", i)], [("chain", i + 1)])
                for i, layer in enumerate(model.layers)]
    return [(node.layer, node, [id(t) for t in node.keras_inputs],
             [id(t) for t in nest.flatten(node.outputs)])
            for node in post_order(model, found)]


def _input_keys(model, found=None) -> list:
    if _is_sequential(model):
        return [("chain", 0)]
    inputs = (found if found is not None else graph(model))[0]
    return [id(x) for x in inputs]


def _stages(model, assignment, input_stages, found=None) -> list:
    """Graphcore's ``_get_pipelined_post_order`` check: every layer call (nested models'
    included, with their own assignments) may only use outputs of its own or earlier
    stages. ``input_stages``: the stages of the model's inputs (None: a top-level model, its
    inputs in stage 0). Returns the stages of the model's outputs."""
    kind = _kind(model)
    if found is None and kind != "Sequential":
        found = _built_graph(model, "set")
    steps = _steps(model, found)
    _check_list(assignment, len(steps))
    stage_of = dict(zip(_input_keys(model, found), input_stages or [0] * len(
        _input_keys(model, found))))
    nested_class = ("SequentialNestedModelPipelineStageAssignment" if kind == "Sequential"
                    else "FunctionalNestedModelPipelineStageAssignment"
                    if kind == "Functional" else "NestedModelPipelineStageAssignment")
    nested_types = ((SequentialNestedModelPipelineStageAssignment,) if kind == "Sequential"
                    else (NestedModelPipelineStageAssignment,))
    layer_types = ((SequentialLayerPipelineStageAssignment,) if kind == "Sequential"
                   else (ModelLayerPipelineStageAssignment,))
    for a, (layer, node, ins, outs) in zip(assignment, steps):
        if _is_model(layer):
            if not isinstance(a, nested_types):
                raise ValueError(f"The pipeline stage assignment for nested model {layer.name} "
                                 f"in {model.name} must be an instance of `{nested_class}`. "
                                 f"Instead the assignment was of type {type(a).__name__}.")
            if a.nested_model is not layer:
                raise ValueError(f"The order of `pipeline_stage_assignment` does not match the "
                                 f"post-order generated from the graph ({a.nested_model.name} "
                                 f"!= {layer.name}).")
            produced = _stages(layer, a.pipeline_stage_assignments,
                               [stage_of.get(k, 0) for k in ins])
            stage_of.update(zip(outs, produced if len(produced) == len(outs)
                                else [max(produced, default=0)] * len(outs)))
            continue
        if not isinstance(a, layer_types):
            raise ValueError(f"The pipeline stage assignment for layer {layer.name} in "
                             f"{model.name} must be an instance of `{kind}LayerPipelineStage"
                             f"Assignment`. Instead the assignment was of type "
                             f"{type(a).__name__}.")
        if a.layer is not layer:
            raise ValueError(f"The order of `pipeline_stage_assignment` does not match the "
                             f"post-order generated from the graph ({a.layer.name} != "
                             f"{layer.name}).")
        if a.pipeline_stage is None:
            where = "" if kind == "Sequential" else f" with node_index {a.node_index}"
            raise ValueError(f"Layer {a.layer.name}{where} has not been assigned a pipeline "
                             "stage in `pipeline_stage_assignment`.")
        if node is not None and kind != "Sequential":
            calls = layer._inbound_nodes
            if len(calls) <= a.node_index:
                raise ValueError(f"Layer {layer.name} has {len(calls)} invocation(s) in the "
                                 "graph, but `pipeline_stage_assignment` contains an "
                                 f"assignment for node_index {a.node_index}.")
            if calls[a.node_index] is not node:
                raise ValueError("The order of `pipeline_stage_assignment` does not match the "
                                 "post-order generated from the graph (missmatched nodes of "
                                 f"layer {layer.name}).")
        if any(stage_of.get(k, 0) > a.pipeline_stage for k in ins):
            raise ValueError(f"Layer {layer.name} in pipeline stage {a.pipeline_stage} has a "
                             "dependency from a pipeline stage which has not yet been "
                             "executed. Layers can only use outputs from current or previous "
                             "pipeline stages.")
        for k in outs:
            stage_of[k] = a.pipeline_stage
    if kind == "Sequential":
        return [stage_of.get(("chain", len(steps)), 0)]
    return [stage_of.get(id(t), 0) for t in found[2]]


def from_nodes(model, quiet=False):
    """The assignment recorded by ``PipelineStage`` scopes on a functional or subclassed
    model's layers and calls (a nested model's own, as a nested assignment), or None when
    there is none. ``quiet``: a subclassed model whose ``call`` cannot be traced is not
    pipelined (``fit`` of a model never asked about its stages).

    Raises:
      ValueError: some layers of a pipelined model have no stage (Graphcore's message).
    """
    if _is_sequential(model):
        return None
    if model._is_graph_network:
        found = graph(model)
    else:
        try:
            found = trace(model)
        except Exception:  # noqa: BLE001 - see ``quiet``
            if not quiet:
                raise
            return None
        if found is None:
            return None
    nodes = post_order(model, found)

    def stage(node):
        s = getattr(node, "_pipeline_stage", None)
        return getattr(node.layer, "_pipeline_stage", None) if s is None else s

    if all(stage(n) is None for n in nodes if not _is_model(n.layer)):
        return None
    layer_class = (FunctionalLayerPipelineStageAssignment if model._is_graph_network
                   else ModelLayerPipelineStageAssignment)
    nested_class = (FunctionalNestedModelPipelineStageAssignment if model._is_graph_network
                    else NestedModelPipelineStageAssignment)
    assignment = []
    for node in nodes:
        index = node.layer._inbound_nodes.index(node)
        if _is_model(node.layer):
            assignment.append(nested_class(node.layer, index,
                                           node.layer.get_pipeline_stage_assignment()))
            continue
        if stage(node) is None:
            raise ValueError(f"All layers of a pipelined model must have an associated pipeline "
                             f"stage. However, {node.layer.name} has not been assigned to one. "
                             "Pipeline stages can be assigned when a layer is constructed, or "
                             "each time a layer is called. Different pipeline stages can "
                             "assigned to each call.")
        assignment.append(layer_class(node.layer, index, stage(node)))
    return validate_functional(model, assignment)


def default_assignment(model) -> list:
    """Unassigned entries, one per layer (Sequential) or layer call (functional or
    subclassed), nested models' own assignments for the models among them.

    Raises:
      RuntimeError: a subclassed model not built (Graphcore's message)."""
    if _is_sequential(model):
        return [SequentialNestedModelPipelineStageAssignment(
                    layer, layer.get_pipeline_stage_assignment()) if _is_model(layer)
                else SequentialLayerPipelineStageAssignment(layer) for layer in model.layers]
    found = _built_graph(model, "get")
    layer_class = (FunctionalLayerPipelineStageAssignment if model._is_graph_network
                   else ModelLayerPipelineStageAssignment)
    nested_class = (FunctionalNestedModelPipelineStageAssignment if model._is_graph_network
                    else NestedModelPipelineStageAssignment)
    out = []
    for n in post_order(model, found):
        index = n.layer._inbound_nodes.index(n)
        out.append(nested_class(n.layer, index, n.layer.get_pipeline_stage_assignment())
                   if _is_model(n.layer) else layer_class(n.layer, index))
    return out


def _flat_stages(assignment) -> list:
    stages = []
    for a in assignment:
        if getattr(a, "is_nested_model", False):
            stages.extend(_flat_stages(a.pipeline_stage_assignments))
        elif a.pipeline_stage is not None:
            stages.append(a.pipeline_stage)
    return stages


def shard_count(assignment, device_mapping) -> int:
    """The IPUs the pipelined model's stages use: the highest stage (or the device
    mapping's highest IPU) plus one."""
    if device_mapping:
        return max(device_mapping) + 1
    return max(_flat_stages(assignment)) + 1


_EXPLICIT = {"gradient_accumulation_count": "gradient_accumulation_steps_per_replica",
             "device_mapping": "device_mapping", "accumulate_outfeed": "accumulate_outfeed"}
_AUTOMATIC = ("computational_stages", "repeat_count", "inputs", "infeed_queue", "outfeed_queue",
              "optimizer_function")
_INCOMPATIBLE = ("outfeed_loss", "outfeed_mask", "batch_serialization_iterations")


def validate_pipelining_kwargs(kwargs) -> dict:
    """``set_pipelining_options``' ``pipelining_kwargs`` (the other arguments of
    ``pipelining_ops.pipeline``: ``pipeline_schedule``, ``recomputation_mode``,
    ``*_poplar_options`` as ``PipelineStageOptions``, ...), checked as Graphcore's Keras and
    ``pipeline`` check them.

    Raises:
      ValueError: a key Keras sets itself or that is incompatible (Graphcore's messages).
      TypeError: an argument ``pipeline`` does not take, or a value of the wrong kind."""
    import inspect

    from ...ipu import pipelining_ops

    for key, alternative in _EXPLICIT.items():
        if key in kwargs:
            raise ValueError(f"Found `{key}` key in `pipelining_kwargs`. Set the `{alternative}` "
                             "argument to `set_pipelining_options` instead.")
    option_keys.refuse(kwargs, _AUTOMATIC, "pipelining_kwargs", option_keys.AUTOMATIC)
    option_keys.refuse(kwargs, _INCOMPATIBLE, "pipelining_kwargs", option_keys.INCOMPATIBLE)
    known = inspect.signature(pipelining_ops.pipeline).parameters
    for key in kwargs:
        if key not in known:
            raise TypeError(f"pipeline() got an unexpected keyword argument '{key}'")
    pipelining_ops.validate_schedule_options(**{k: kwargs[k] for k in (
        "pipeline_schedule", "recomputation_mode", "forward_propagation_stages_poplar_options",
        "backward_propagation_stages_poplar_options", "weight_update_poplar_options")
        if k in kwargs})
    return dict(kwargs)


def check_pipeline(assignment, device_mapping, kwargs, depth: int, training: bool) -> None:
    """The checks ``pipeline`` and the IPU make of the pipeline Graphcore's Keras builds
    from the stages: at least two stages, one IPU per stage in ``device_mapping``, no
    Interleaved training with two stages on one IPU, and a depth of ``depth`` micro-batches
    (``fit``: ``gradient_accumulation_steps_per_replica``; ``evaluate``/``predict``: the
    ``steps_per_execution``) that is a multiple of, and at least, the schedule's overlap
    length (Grouped: the stages, twice when training; Interleaved: the rotations of the
    stages over the IPUs; Sequential: 1).

    Raises:
      ValueError, NotImplementedError: ``pipeline``'s messages.
      FailedPreconditionError: the IPU's (raised when the pipeline compiles)."""
    from ...ipu import pipelining_ops

    stages = max(_flat_stages(assignment)) + 1
    if stages < 2:
        raise ValueError("Pipeline requires at least two computational stages.")
    mapping = list(device_mapping) if device_mapping else list(range(stages))
    if len(mapping) != stages:
        raise ValueError(f"Each stage must be mapped to an IPU: {len(mapping)} mappings != "
                         f"{stages} stages")
    schedule = kwargs.get("pipeline_schedule") or pipelining_ops.PipelineSchedule.Grouped
    if (schedule == pipelining_ops.PipelineSchedule.Interleaved and training
            and len(set(mapping)) != len(mapping)):
        raise NotImplementedError(
            "The pipelining schedule 'Interleaved' does not currently support multiple "
            "pipeline stages on the same device for training graphs. Please use a different "
            "pipeline schedule.")
    pipelining_ops.check_depth(
        depth, pipelining_ops._overlap_length(schedule, mapping, training))


def ipus_per_replica(shards: int) -> int:
    """Shards rounded up to a power of two (a replica takes such a block of IPUs)."""
    return 2 ** int(math.ceil(math.log2(shards))) if shards > 1 else 1


def print_summary(model, assignment, line_length=None, print_fn=None):
    """Graphcore's ``print_pipeline_stage_assignment_summary`` table."""
    from ..utils.progbar import print_msg

    sequential = _is_sequential(model)
    line_length = line_length or (60 if sequential else 89)
    print_fn = print_fn or print_msg
    if sequential:
        headers, widths = ["Layer (type)", "Pipeline Stage"], [0.5, 1.0]
    else:
        headers = ["Layer (type) (node index)", "Input Layers", "Pipeline Stage"]
        widths = [0.4, 0.8, 1.0]
    positions = [int(line_length * p) for p in widths]

    def print_row(fields):
        line = ""
        for i, field in enumerate(fields):
            if i > 0:
                line = line[:-1] + " "
            line += str(field)
            line = line[:positions[i]]
            line += " " * (positions[i] - len(line))
        print_fn(line)

    print_fn(f'Model: "{model.name}"')
    print_fn("_" * line_length)
    print_row(headers)
    print_fn("=" * line_length)

    def print_assignments(assignments):
        for i, a in enumerate(assignments):
            if a.is_nested_model:
                print_fn(f'Nested Model: "{a.nested_model.name}"')
                print_fn("-" * line_length)
                print_assignments(a.pipeline_stage_assignments)
                continue
            layer = a.layer
            if sequential:
                print_row([f"{layer.name} ({type(layer).__name__})", str(a.pipeline_stage)])
            else:
                names = [x.name for x in nest.flatten(a.inbound_layers)]
                print_row([f"{layer.name} ({type(layer).__name__}) ({a.node_index})",
                           names[0] if names else "", str(a.pipeline_stage)])
                for name in names[1:]:
                    print_row(["", name, ""])
            last = i == len(assignments) - 1 or assignments[i + 1].is_nested_model
            print_fn("=" * line_length if last else "_" * line_length)
    print_assignments(assignment)
