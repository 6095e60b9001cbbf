"""A TF1 sharded model in the style of Graphcore's sharding tutorial
(feature_examples/tensorflow/sharding): two halves of a computation on shards 0 and 1 of one
replica, run by a Session in a device loop with an infeed and an outfeed.

Usage: python tf1_sharding.py IPUS  (prints the results for a test to read)."""

import sys

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python import ipu

tf.disable_v2_behavior()

IPUS = int(sys.argv[1])
STEPS = 3

# sharded programs keep their host tensors on the CPU
with tf.device("cpu"):
    scale = tf.placeholder(np.float32, [], name="scale")

features = np.arange(STEPS * 4, dtype=np.float32).reshape(STEPS, 4)
dataset = tf.data.Dataset.from_tensor_slices(features).repeat()
infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed = ipu.ipu_outfeed_queue.IPUOutfeedQueue()


def step(x):
    with ipu.scopes.ipu_shard(0):
        first = x * scale + 1.0
    with ipu.scopes.ipu_shard(1):
        second = tf.reduce_sum(first * first)
        return outfeed.enqueue({"first": first, "second": second})


def model():
    return ipu.loops.repeat(STEPS, step, infeed_queue=infeed)


with ipu.scopes.ipu_scope("/device:IPU:0"):
    program = ipu.ipu_compiler.compile(model, [])
dequeue = outfeed.dequeue()

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = IPUS
cfg.configure_ipu_system()

with tf.Session() as sess:
    sess.run(infeed.initializer)
    sess.run(program, {scale: 2.0})
    out = sess.run(dequeue)
    print("FIRST_SHAPE", list(out["first"].shape))
    print("SECOND_SHAPE", list(out["second"].shape))
    print("SECOND", np.asarray(out["second"]).reshape(-1).tolist())
