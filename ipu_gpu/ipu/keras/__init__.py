"""``ipu.keras`` (``from tensorflow.python import ipu``; Graphcore's
``tensorflow/python/ipu/keras``): the pipeline-stage API of Graphcore's Keras,
re-exported from ``ipu_gpu.keras.engine.pipelining`` (the same objects as ``keras.ipu``'s).

Not provided: ``FunctionalExtension``/``SequentialExtension`` (their methods are
``Model``'s here), ``ipu.keras.layers`` and ``ipu.keras.losses``.
"""

from ...keras.engine.pipelining import (
    FunctionalLayerPipelineStageAssignment, FunctionalNestedModelPipelineStageAssignment,
    ModelLayerPipelineStageAssignment, NestedModelPipelineStageAssignment, PipelineStage,
    SequentialLayerPipelineStageAssignment, SequentialNestedModelPipelineStageAssignment)

__all__ = ["FunctionalLayerPipelineStageAssignment",
           "FunctionalNestedModelPipelineStageAssignment", "ModelLayerPipelineStageAssignment",
           "NestedModelPipelineStageAssignment", "PipelineStage",
           "SequentialLayerPipelineStageAssignment",
           "SequentialNestedModelPipelineStageAssignment"]
