"""A TF1 program in the style of Graphcore's TF 1.15 examples that trains on the IPU and
exports for serving with TensorFlow's SavedModel API: a loops.repeat training loop over an
infeed compiled on an ipu_scope, then an inference graph sharing the trained variables saved
with tf.saved_model.simple_save (and a SavedModelBuilder with two tag sets), then reloaded
with tf.saved_model.loader.load into a fresh graph and session. Prints ``<tag> <values>``
lines: the losses, the predictions before the export and after the reload."""

import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops
from tensorflow.python.ipu import scopes
from tensorflow.python.saved_model import signature_constants, tag_constants

tf.disable_v2_behavior()
base = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()

rng = np.random.default_rng(5)
features = rng.standard_normal((64, 3)).astype(np.float32)
targets = (features @ np.float32([[1.0], [-2.0], [0.5]]) + 0.25).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((features, targets)).batch(
    8, drop_remainder=True).repeat()
infeed = ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed = ipu_outfeed_queue.IPUOutfeedQueue()


def model(x):
  with tf.variable_scope("regression", reuse=tf.AUTO_REUSE):
    return tf.layers.dense(x, 1, kernel_initializer=tf.zeros_initializer(), name="dense")


def training_step(x, y):
  loss = tf.reduce_mean(tf.square(model(x) - y))
  train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
  return outfeed.enqueue(loss), train_op


with scopes.ipu_scope("/device:IPU:0"):
  train = ipu_compiler.compile(lambda: loops.repeat(8, training_step, [], infeed), [])
losses = outfeed.dequeue()

# The serving graph: a placeholder input on the host, the same variables.
serving_input = tf.placeholder(tf.float32, [None, 3], name="serving_input")
prediction = tf.identity(model(serving_input), name="prediction")
probe = features[:4]

with tf.Session() as sess:
  sess.run(infeed.initializer)
  sess.run(tf.global_variables_initializer())
  for execution in range(2):
    sess.run(train)
    print("losses", execution, " ".join(f"{v:.6f}" for v in sess.run(losses)))
  print("before", " ".join(f"{v:.6f}" for v in sess.run(prediction,
                                                          {serving_input: probe}).ravel()))
  tf.saved_model.simple_save(sess, os.path.join(base, "simple", "1"),
                             inputs={"x": serving_input}, outputs={"y": prediction})
  builder = tf.saved_model.builder.SavedModelBuilder(os.path.join(base, "builder", "1"))
  signature = tf.saved_model.signature_def_utils.predict_signature_def(
      inputs={"features": serving_input}, outputs={"scores": prediction})
  builder.add_meta_graph_and_variables(
      sess, [tag_constants.SERVING],
      signature_def_map={signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: signature})
  builder.add_meta_graph([tag_constants.SERVING, "ipu"])
  builder.save()

for kind, key_in, key_out in (("simple", "x", "y"), ("builder", "features", "scores")):
  with tf.Graph().as_default(), tf.Session() as sess:
    meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                      os.path.join(base, kind, "1"))
    sig = meta.signature_def["serving_default"]
    out = sess.run(sig.outputs[key_out].name, {sig.inputs[key_in].name: probe})
    print("after", kind, " ".join(f"{v:.6f}" for v in out.ravel()))
