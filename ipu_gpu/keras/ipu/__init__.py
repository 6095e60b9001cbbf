"""``keras.ipu``: Graphcore's Keras IPU integration (``keras/ipu/__init__.py`` of Graphcore's
Keras 2.6 fork): ``PipelineStage`` and the pipeline stage assignment classes, from
``engine/pipelining.py``. Not provided: ``ALSOptimizer``,
``ALSOptimizerGradientAccumulationWrapper``.
"""

from ..engine.pipelining import (
    FunctionalLayerPipelineStageAssignment, FunctionalNestedModelPipelineStageAssignment,
    ModelLayerPipelineStageAssignment, NestedModelPipelineStageAssignment, PipelineStage,
    SequentialLayerPipelineStageAssignment, SequentialNestedModelPipelineStageAssignment)

__all__ = ["FunctionalLayerPipelineStageAssignment",
           "FunctionalNestedModelPipelineStageAssignment", "ModelLayerPipelineStageAssignment",
           "NestedModelPipelineStageAssignment", "PipelineStage",
           "SequentialLayerPipelineStageAssignment",
           "SequentialNestedModelPipelineStageAssignment"]
