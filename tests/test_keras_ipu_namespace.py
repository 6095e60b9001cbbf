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
