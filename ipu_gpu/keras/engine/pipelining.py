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
device mapping, plus one, rounded up to a power of two).

Not emulated: nested models' assignments (``*NestedModelPipelineStageAssignment``),
``accumulate_outfeed``.
"""

from __future__ import annotations

import math
import threading

from ...core import nest

__all__ = ["FunctionalLayerPipelineStageAssignment", "ModelLayerPipelineStageAssignment",
           "PipelineStage", "SequentialLayerPipelineStageAssignment", "current_stage"]

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


def post_order(model) -> list:
    """The nodes of a functional model in execution order, input nodes excluded."""
    done = {id(x) for x in model.inputs}
    order = []
    for depth in sorted(model._nodes_by_depth, reverse=True):
        for node in model._nodes_by_depth[depth]:
            if node.is_input or any(id(t) not in done for t in node.keras_inputs):
                continue
            order.append(node)
            done.update(id(t) for t in nest.flatten(node.outputs))
    return order


def _is_sequential(model) -> bool:
    from .sequential import Sequential

    return isinstance(model, Sequential)


def _check_list(assignment, expected: int):
    if not isinstance(assignment, list):
        raise ValueError("`pipeline_stage_assignment` needs to be a list.")
    if len(assignment) != expected:
        raise ValueError(f"The length of the provided `pipeline_stage_assignment` "
                         f"({len(assignment)}) does not match the number of layers in the graph "
                         f"({expected}). Each layer needs to be assigned a pipeline stage "
                         "(excluding input layers).")


def validate_sequential(model, assignment) -> list:
    """The assignment as SequentialLayerPipelineStageAssignments, checked."""
    from .training import Model

    _check_list(assignment, len(model.layers))
    assignment = [SequentialLayerPipelineStageAssignment(model.layers[i], a)
                  if isinstance(a, int) else a for i, a in enumerate(assignment)]
    if not all(isinstance(a, SequentialLayerPipelineStageAssignment) for a in assignment):
        raise ValueError("All elements of `pipeline_stage_assignment` must be instances of "
                         "`SequentialLayerPipelineStageAssignment` for layers or  "
                         "`SequentialNestedModelPipelineStageAssignment` for nested models.")
    if any(isinstance(layer, Model) for layer in model.layers):
        raise NotImplementedError("Pipelining Sequential models that contain models is not "
                                  "emulated")
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
    """Check a functional model's assignment (one per layer call, in execution order)."""
    from .training import Model

    nodes = post_order(model)
    _check_list(assignment, len(nodes))
    stage_of = {id(x): 0 for x in model.inputs}
    for a, node in zip(assignment, nodes):
        if isinstance(node.layer, Model):
            raise NotImplementedError("Pipelining functional models that contain models is "
                                      "not emulated")
        if not isinstance(a, ModelLayerPipelineStageAssignment):
            raise ValueError(f"The pipeline stage assignment for layer {node.layer.name} in "
                             f"{model.name} must be an instance of "
                             "`FunctionalLayerPipelineStageAssignment`. Instead the assignment "
                             f"was of type {type(a).__name__}.")
        if a.layer is not node.layer:
            raise ValueError(f"The order of `pipeline_stage_assignment` does not match the "
                             f"post-order generated from the graph ({a.layer.name} != "
                             f"{node.layer.name}).")
        if a.pipeline_stage is None:
            raise ValueError(f"Layer {a.layer.name} with node_index {a.node_index} has not "
                             "been assigned a pipeline stage in `pipeline_stage_assignment`.")
        if any(stage_of.get(id(t), 0) > a.pipeline_stage for t in node.keras_inputs):
            raise ValueError(f"Layer {node.layer.name} in pipeline stage {a.pipeline_stage} has "
                             "a dependency from a pipeline stage which has not yet been "
                             "executed. Layers can only use outputs from current or previous "
                             "pipeline stages.")
        for t in nest.flatten(node.outputs):
            stage_of[id(t)] = a.pipeline_stage
    return list(assignment)


def from_nodes(model):
    """The assignment recorded by ``PipelineStage`` scopes on a functional model's layers
    and calls, or None when there is none.

    Raises:
      ValueError: some layers of a pipelined model have no stage (Graphcore's message).
    """
    if not model._is_graph_network or _is_sequential(model):
        return None
    nodes = post_order(model)

    def stage(node):
        s = getattr(node, "_pipeline_stage", None)
        return getattr(node.layer, "_pipeline_stage", None) if s is None else s

    if all(stage(n) is None for n in nodes):
        return None
    assignment = []
    for node in nodes:
        if stage(node) is None:
            raise ValueError(f"All layers of a pipelined model must have an associated pipeline "
                             f"stage. However, {node.layer.name} has not been assigned to one. "
                             "Pipeline stages can be assigned when a layer is constructed, or "
                             "each time a layer is called. Different pipeline stages can "
                             "assigned to each call.")
        assignment.append(FunctionalLayerPipelineStageAssignment(
            node.layer, node.layer._inbound_nodes.index(node), stage(node)))
    return validate_functional(model, assignment)


def default_assignment(model) -> list:
    """Unassigned entries, one per layer (Sequential) or layer call (functional)."""
    if _is_sequential(model):
        return [SequentialLayerPipelineStageAssignment(layer) for layer in model.layers]
    return [FunctionalLayerPipelineStageAssignment(n.layer, n.layer._inbound_nodes.index(n))
            for n in post_order(model)]


def shard_count(assignment, device_mapping) -> int:
    """The IPUs the pipelined model's stages use: the highest stage (or the device
    mapping's highest IPU) plus one."""
    if device_mapping:
        return max(device_mapping) + 1
    return max(a.pipeline_stage for a in assignment) + 1


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
    for i, a in enumerate(assignment):
        layer = a.layer
        if sequential:
            print_row([f"{layer.name} ({type(layer).__name__})", str(a.pipeline_stage)])
        else:
            names = [x.name for x in nest.flatten(a.inbound_layers)]
            print_row([f"{layer.name} ({type(layer).__name__}) ({a.node_index})",
                       names[0] if names else "", str(a.pipeline_stage)])
            for name in names[1:]:
                print_row(["", name, ""])
        print_fn("=" * line_length if i == len(assignment) - 1 else "_" * line_length)
