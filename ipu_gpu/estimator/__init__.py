"""``tf.estimator`` (TF 1.15) on the TF1 graph mode: ``Estimator``, ``EstimatorSpec``,
``ModeKeys``, ``RunConfig``, ``WarmStartSettings``, and the session-run hooks an Estimator
program passes (``SessionRunHook`` and its arguments, ``LoggingTensorHook``,
``StopAtStepHook``, ``CheckpointSaverHook``/``CheckpointSaverListener``,
``NanTensorHook``), and ``export`` (serving input receivers, export outputs: what
``Estimator.export_saved_model`` takes). The IPU estimators build on it
(``ipu/ipu_estimator.py``)."""

from . import export
from .estimator import Estimator, WarmStartSettings
from .hooks import (CheckpointSaverHook, CheckpointSaverListener, LoggingTensorHook,
                    NanLossDuringTrainingError, NanTensorHook, SessionRunArgs,
                    SessionRunContext, SessionRunHook, SessionRunValues, StepCounterHook,
                    StopAtStepHook)
from .model_fn import EstimatorSpec, ModeKeys
from .run_config import RunConfig

__all__ = ["CheckpointSaverHook", "CheckpointSaverListener", "Estimator", "EstimatorSpec",
           "LoggingTensorHook", "ModeKeys", "NanLossDuringTrainingError", "NanTensorHook",
           "RunConfig", "SessionRunArgs", "SessionRunContext", "SessionRunHook",
           "SessionRunValues", "StepCounterHook", "StopAtStepHook", "WarmStartSettings",
           "export"]
