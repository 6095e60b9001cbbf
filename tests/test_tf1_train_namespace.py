"""tf.compat.v1.train shows TF 1's names: the optimizers, checkpoint readers and the
session-run hooks (the estimator package's), each present in real TF1's tf.train too."""

from __future__ import annotations

import ipu_gpu.compat.v1 as v1
import ipu_gpu.estimator as estimator

_NAMES = ["AdadeltaOptimizer", "CheckpointSaverHook", "CheckpointSaverListener",
          "FtrlOptimizer", "LoggingTensorHook", "NanLossDuringTrainingError", "NanTensorHook",
          "NewCheckpointReader", "ProximalAdagradOptimizer",
          "ProximalGradientDescentOptimizer", "SecondOrStepTimer", "SessionRunArgs",
          "SessionRunContext", "SessionRunHook", "SessionRunValues", "StopAtStepHook",
          "list_variables", "load_checkpoint", "load_variable"]


def test_tf1_train_names_exist_as_in_real_tensorflow(real_tf):
    missing_in_tf = [n for n in _NAMES if not hasattr(real_tf.compat.v1.train, n)]
    missing_here = [n for n in _NAMES if not hasattr(v1.train, n)]
    assert missing_in_tf == [] and missing_here == []


def test_session_run_hooks_are_the_estimators():
    for name in ("SessionRunHook", "SessionRunArgs", "StopAtStepHook", "LoggingTensorHook",
                 "CheckpointSaverHook"):
        assert getattr(v1.train, name) is getattr(estimator, name)

    class Counting(v1.train.SessionRunHook):  # a program's hook, as Graphcore's examples
        def __init__(self):
            self.calls = 0

        def before_run(self, run_context):
            self.calls += 1
            return v1.train.SessionRunArgs(fetches=[])
    hook = Counting()
    assert isinstance(hook, estimator.SessionRunHook) and hook.before_run(None).fetches == []
