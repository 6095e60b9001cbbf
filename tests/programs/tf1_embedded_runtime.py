"""A TF1 program in the style of Graphcore's embedded application runtime example: a loop
over an infeed compiled with application_compile_op, then run batch by batch through the
embedded runtime from plain Sessions. Prints one line per call: ``<i> <values>``."""

import os
import sys
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python.ipu import (application_compile_op, embedded_runtime,
                                   ipu_infeed_queue, ipu_outfeed_queue, loops)
from tensorflow.python.ipu.config import IPUConfig

tf.disable_v2_behavior()

width = 3
steps = 5
exec_dir = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()

dataset = tf.data.Dataset.from_tensors(tf.zeros([width], tf.float32)).repeat()
infeed = ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed = ipu_outfeed_queue.IPUOutfeedQueue()

weights = tf.get_variable("weights", initializer=np.linspace(-1, 1, width * 2, dtype=np.float32)
                          .reshape(width, 2))


def body(x):
  hidden = tf.nn.relu(tf.matmul(tf.expand_dims(x, 0), weights) + 0.5)
  return outfeed.enqueue({"scores": tf.reduce_sum(hidden, axis=1), "hidden": hidden})


def program():
  return loops.repeat(steps, body, [], infeed)


config = IPUConfig()
config.auto_select_ipus = 1
config.configure_ipu_system()

path = os.path.join(exec_dir, "application.poplar_exec")
compile_op = application_compile_op.experimental_application_compile_op(
    program, output_path=path, freeze_variables=True)

with tf.Session() as sess:
  sess.run(tf.global_variables_initializer())
  print("compiled", sess.run(compile_op).decode() == path)

context = embedded_runtime.embedded_runtime_start(path, [], "tf1_engine")
batch = tf.placeholder(tf.float32, shape=[width])
result = embedded_runtime.embedded_runtime_call([batch], context)

with tf.Session() as sess:
  for i in range(steps + 2):
    hidden, scores = sess.run(result, {batch: np.full([width], i - 2, np.float32)})
    print(i, " ".join(f"{v:.5f}" for v in np.concatenate([hidden.ravel(), scores])))
