"""A TF2 program in the style of Graphcore's serving examples: a single-step model with CPU
pre- and postprocessing and a two-stage pipeline exported with ipu.serving, then run through
the returned functions and the reloaded SavedModels. Prints ``<tag> <values>`` lines."""

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.python.ipu import config, ipu_strategy, serving

base = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
input_shape = (4,)

cfg = config.IPUConfig()
cfg.auto_select_ipus = 2
cfg.configure_ipu_system()

scale = tf.Variable(np.float32([1.0, -2.0, 3.0, -4.0]))


@tf.function(input_signature=(tf.TensorSpec(input_shape, tf.float32),))
def preprocessing_step(x):
  return tf.abs(x)


@tf.function(input_signature=(tf.TensorSpec(input_shape, tf.float32),))
def predict_step(x):
  return x * scale + 1.0


@tf.function(input_signature=(tf.TensorSpec(input_shape, tf.float32),))
def postprocessing_step(y):
  return tf.reduce_sum(y), tf.reduce_max(y)


single = serving.export_single_step(
    predict_step, os.path.join(base, "single", "001"), iterations=8,
    output_names=["total", "largest"], preprocessing_step=preprocessing_step,
    postprocessing_step=postprocessing_step)


def stage1(x):
  return x * 2


def stage2(x):
  return x + 3


pipelined = serving.export_pipeline(
    [stage1, stage2], os.path.join(base, "pipeline", "001"), iterations=4,
    device_mapping=[0, 1],
    predict_step_signature=(tf.TensorSpec(input_shape, tf.float32),))

strategy = ipu_strategy.IPUStrategy()
with strategy.scope():
  for i in range(3):
    data = np.arange(4, dtype=np.float32) - i
    out = single(data)
    print("single", i, out["total"].numpy(), out["largest"].numpy())
    print("pipeline", i, " ".join(str(v) for v in pipelined(data)[0].numpy()))

loaded = tf.saved_model.load(os.path.join(base, "single", "001"))
out = loaded.signatures["serving_default"](x=np.ones(4, np.float32))
print("reloaded", out["total"].numpy(), out["largest"].numpy())
