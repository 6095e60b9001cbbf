"""The Graphcore Keras IPU namespace: ``ipu.keras`` (``from tensorflow.python import ipu``),
``keras.ipu``, ``ipu.gradient_accumulation`` / ``ipu.optimizers``'s
``GradientAccumulationReductionMethod``, reached through the alias table as programs import
them; and ``PipelineStage`` scopes assigning stages to layers and layer calls as Graphcore's
Keras does (``_set_pipeline_stage_from_strategy``: a call's stage overrides the stage its
layer was made in)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ipu_gpu
from ipu_gpu import aliases
from ipu_gpu.compat import behavior
from ipu_gpu.ipu.ipu_strategy import IPUStrategy
from ipu_gpu.keras import Input, Model, layers
from ipu_gpu.keras.engine import pipelining
from ipu_gpu.keras.engine.ipu_execution import GradientAccumulationReductionMethod

_NAMES = ("PipelineStage", "SequentialLayerPipelineStageAssignment",
          "NestedModelPipelineStageAssignment", "FunctionalNestedModelPipelineStageAssignment",
          "SequentialNestedModelPipelineStageAssignment",
          "FunctionalLayerPipelineStageAssignment", "ModelLayerPipelineStageAssignment")


@pytest.fixture
def hooked():
    behavior.set_tf_version(None)
    with aliases.installed():
        yield
    behavior.set_tf_version(None)


def test_program_import_forms(hooked):
    ns = {}
    exec("from tensorflow.python import ipu\n"
         "from tensorflow.python.ipu.keras import PipelineStage\n"
         "from tensorflow.python.ipu import gradient_accumulation\n"
         "from tensorflow.python.ipu.optimizers import GradientAccumulationReductionMethod\n"
         "import keras\n"
         "from keras.ipu import SequentialLayerPipelineStageAssignment\n"
         "from keras import ipu as keras_ipu\n", ns)
    for name in _NAMES:
        ours = getattr(pipelining, name)
        assert getattr(ns["ipu"].keras, name) is ours
        assert getattr(ns["keras_ipu"], name) is ours
        assert getattr(ns["keras"].ipu, name) is ours
    assert ns["PipelineStage"] is pipelining.PipelineStage
    assert (ns["gradient_accumulation"].GradientAccumulationReductionMethod
            is ns["GradientAccumulationReductionMethod"]
            is ns["ipu"].optimizers.GradientAccumulationReductionMethod
            is GradientAccumulationReductionMethod)
    assert sys.modules["tensorflow.python.ipu.keras"].PipelineStage is pipelining.PipelineStage


def test_reduction_method_parse():
    method = ipu_gpu.ipu.gradient_accumulation.GradientAccumulationReductionMethod
    assert [m.value for m in method] == [0, 1, 2]
    assert method.parse("running_mean") is method.RUNNING_MEAN
    assert method.parse(method.SUM) is method.SUM
    with pytest.raises(ValueError, match="Cannot parse avg as one of "
                                         "GradientAccumulationReductionMethod. Valid values "
                                         "are: SUM, MEAN, RUNNING_MEAN."):
        method.parse("avg")


def test_pipeline_stage_scopes_assign_functional_stages(fresh_ipu_system):
    with IPUStrategy().scope():
        inputs = Input((4,))
        with pipelining.PipelineStage(0):
            x = layers.Dense(8, name="d0")(inputs)
            x = layers.Dense(8, name="d1")(x)
            late = layers.Dense(8, name="made_in_0")  # made in stage 0, called in stage 1
        with pipelining.PipelineStage(1):
            x = late(x)
            x = layers.Dense(2, name="d2")(x)
            tail = layers.Dense(2, name="made_in_1")
        x = tail(x)  # called outside any scope: its layer's stage
        model = Model(inputs, x)
    assignment = model.get_pipeline_stage_assignment()
    assert [(a.layer.name, a.pipeline_stage) for a in assignment] == [
        ("d0", 0), ("d1", 0), ("made_in_0", 1), ("d2", 1), ("made_in_1", 1)]
    assert all(isinstance(a, pipelining.FunctionalLayerPipelineStageAssignment)
               for a in assignment)
    assert late._pipeline_stage == 0 and late._inbound_nodes[0]._pipeline_stage == 1
    assert not hasattr(tail._inbound_nodes[0], "_pipeline_stage")
    assert not hasattr(layers.Dense(1), "_pipeline_stage")  # Graphcore: only inside a scope
    out = model(np.ones((3, 4), np.float32))
    assert out.shape == (3, 2)


def test_shared_layer_called_in_two_stages(fresh_ipu_system):
    with IPUStrategy().scope():
        inputs = Input((4,))
        shared = layers.Dense(4, name="shared")
        with pipelining.PipelineStage(0):
            x = shared(inputs)
        with pipelining.PipelineStage(1):
            x = shared(x)
        model = Model(inputs, x)
    assignment = model.get_pipeline_stage_assignment()
    assert [(a.layer.name, a.node_index, a.pipeline_stage) for a in assignment] == [
        ("shared", 0, 0), ("shared", 1, 1)]


def test_unassigned_layer_in_a_staged_model_raises(fresh_ipu_system):
    with IPUStrategy().scope():
        inputs = Input((4,))
        with pipelining.PipelineStage(0):
            x = layers.Dense(4)(inputs)
        model = Model(inputs, layers.Dense(2, name="lost")(x))
    with pytest.raises(ValueError, match="lost has not been assigned to one"):
        model.get_pipeline_stage_assignment()


class _Staged(Model):
    """A subclassed model assigning its layer calls to stages inside ``call``."""

    def __init__(self, staged=True, **kwargs):
        super().__init__(**kwargs)
        self.staged = staged
        self.d1 = layers.Dense(4, name="s1")
        self.d2 = layers.Dense(2, name="s2")

    def call(self, x):
        if not self.staged:
            return self.d2(self.d1(x))
        with pipelining.PipelineStage(0):
            x = self.d1(x)
        with pipelining.PipelineStage(1):
            return self.d2(x)


def test_subclassed_models_pipeline_through_their_traced_call(fresh_ipu_system):
    from conftest import configure_ipus

    from ipu_gpu.emulation import system
    from ipu_gpu.keras import optimizers

    configure_ipus(2)
    x = np.random.default_rng(1).standard_normal((16, 3)).astype(np.float32)
    y = np.random.default_rng(2).standard_normal((16, 2)).astype(np.float32)
    with IPUStrategy().scope():
        model = _Staged()
        with pytest.raises(RuntimeError, match=r"^Cannot get pipeline stage assignments for "
                                               r"model `.*` which has not been built yet. "
                                               r"Please call `model.build\(\)` first.$"):
            model.get_pipeline_stage_assignment()
        with pytest.raises(RuntimeError, match="or assign pipeline stages in your graph "
                                               "definition using PipelineStage scopes."):
            model.set_pipeline_stage_assignment([])
        model.build((None, 3))
        assignment = model.get_pipeline_stage_assignment()
        assert [(type(a).__name__, a.layer.name, a.node_index, a.pipeline_stage)
                for a in assignment] == [("ModelLayerPipelineStageAssignment", "s1", 0, 0),
                                         ("ModelLayerPipelineStageAssignment", "s2", 0, 1)]
        initial = model.get_weights()
        model.compile(optimizers.SGD(0.1), "mse", steps_per_execution=4)
        with pytest.raises(ValueError, match="The model which you are attempting to train is "
                                             "pipelined"):
            model.fit(x, y, batch_size=2, verbose=0)
        model.set_pipelining_options(gradient_accumulation_steps_per_replica=4)
        model.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
        # never built: traced at fit from the data's shapes (Graphcore's _build_with_dtypes)
        unbuilt = _Staged()
        unbuilt.compile(optimizers.SGD(0.1), "mse", steps_per_execution=4)
        with pytest.raises(ValueError, match="The model which you are attempting to train is "
                                             "pipelined"):
            unbuilt.fit(x, y, batch_size=2, verbose=0)
        assert [a.pipeline_stage for a in unbuilt.get_pipeline_stage_assignment()] == [0, 1]
    system.reset()  # the twin: one replica on one IPU, as the two-stage pipeline is
    configure_ipus(1)
    with IPUStrategy().scope():
        twin = _Staged(staged=False)
        twin.build((None, 3))
        twin.set_weights(initial)
        twin.compile(optimizers.SGD(0.1), "mse", steps_per_execution=4)
        twin.set_gradient_accumulation_options(gradient_accumulation_steps_per_replica=4)
        twin.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), twin.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    lines = []
    model.print_pipeline_stage_assignment_summary(print_fn=lines.append)
    assert lines[4].startswith("s1 (Dense) (0)") and lines[6].startswith("s2 (Dense) (0)")
    assignment[0].pipeline_stage, assignment[1].pipeline_stage = 1, 0
    with pytest.raises(ValueError, match="Layer s2 in pipeline stage 0 has a dependency from a "
                                         "pipeline stage which has not yet been executed"):
        model.set_pipeline_stage_assignment(assignment)
    wrong = [pipelining.SequentialLayerPipelineStageAssignment(a.layer, 0) for a in assignment]
    with pytest.raises(ValueError, match="must be an instance of "
                                         "`ModelLayerPipelineStageAssignment`. Instead the "
                                         "assignment was of type "
                                         "SequentialLayerPipelineStageAssignment."):
        model.set_pipeline_stage_assignment(wrong)
    model.set_pipeline_stage_assignment(
        [pipelining.ModelLayerPipelineStageAssignment(a.layer, 0, 0) for a in assignment])
    assert [a.pipeline_stage for a in model.get_pipeline_stage_assignment()] == [0, 0]


def test_models_holding_models_take_nested_assignments(fresh_ipu_system):
    with IPUStrategy().scope():
        inner_in = Input((4,))
        inner = Model(inner_in, layers.Dense(4, name="in_d")(inner_in), name="inner")
        x_in = Input((4,))
        out = layers.Dense(1, name="post")(inner(layers.Dense(4, name="pre")(x_in)))
        outer = Model(x_in, out, name="outer")
        seq_inner = ipu_gpu.keras.Sequential([layers.Dense(4, input_shape=(4,), name="si")],
                                             name="seq_inner")
        seq = ipu_gpu.keras.Sequential([layers.Dense(4, input_shape=(3,), name="first"),
                                        seq_inner, layers.Dense(1, name="last")], name="seq")
    assignment = outer.get_pipeline_stage_assignment()
    assert [type(a).__name__ for a in assignment] == [
        "FunctionalLayerPipelineStageAssignment", "FunctionalNestedModelPipelineStageAssignment",
        "FunctionalLayerPipelineStageAssignment"]
    assert str(assignment[1]) == ("Model: inner (node index 0) has the following pipeline "
                                  "stage assignments:\n  Layer: in_d (node index 0) is "
                                  "assigned to pipeline stage: None")
    assignment[0].pipeline_stage = 0
    assignment[1].pipeline_stage_assignments[0].pipeline_stage = 1
    assignment[2].pipeline_stage = 1
    outer.set_pipeline_stage_assignment(assignment)
    lines = []
    outer.print_pipeline_stage_assignment_summary(print_fn=lines.append)
    assert lines[6:8] == ['Nested Model: "inner"', "-" * 89]
    assert lines[8].startswith("in_d (Dense) (0)") and lines[10].startswith("post (Dense) (0)")
    assert pipelining.shard_count(outer.get_pipeline_stage_assignment(), None) == 2
    assignment[2].pipeline_stage = 0
    with pytest.raises(ValueError, match="Layer post in pipeline stage 0 has a dependency"):
        outer.set_pipeline_stage_assignment(assignment)
    with pytest.raises(ValueError, match="The pipeline stage assignment for nested model inner "
                                         "in outer must be an instance of "
                                         "`FunctionalNestedModelPipelineStageAssignment`"):
        outer.set_pipeline_stage_assignment([assignment[0], assignment[0], assignment[2]])

    nested = seq.get_pipeline_stage_assignment()
    assert [type(a).__name__ for a in nested] == [
        "SequentialLayerPipelineStageAssignment", "SequentialNestedModelPipelineStageAssignment",
        "SequentialLayerPipelineStageAssignment"]
    nested[0].pipeline_stage = 0
    nested[1].pipeline_stage_assignments[0].pipeline_stage = 1
    nested[2].pipeline_stage = 1
    seq.set_pipeline_stage_assignment(nested)
    with pytest.raises(ValueError, match="The pipeline stage assignment for nested model "
                                         "seq_inner in seq must be an instance of "
                                         "`SequentialNestedModelPipelineStageAssignment`"):
        seq.set_pipeline_stage_assignment([0, 1, 1])
    nested[2].pipeline_stage = 0
    with pytest.raises(ValueError, match="Layer last in pipeline stage 0 has a dependency"):
        seq.set_pipeline_stage_assignment(nested)
