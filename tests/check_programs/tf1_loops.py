# A TF1 program in the style of Graphcore's TF 1.15 examples (SDK 2.x): placeholders,
# ipu_compiler.compile, loops.repeat, an infeed.
import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import ipu_compiler, loops, scopes
from tensorflow.python.ipu.ipu_infeed_queue import IPUInfeedQueue

tf.disable_v2_behavior()

dataset = tf.data.Dataset.from_tensors(np.ones([4], np.float32)).repeat()
infeed = IPUInfeedQueue(dataset)


def body(total, x):
    return total + tf.reduce_sum(x)


def my_net(scale):
    total = loops.repeat(10, body, [tf.constant(0.0)], infeed)
    return tf.multiply(total, scale)


with scopes.ipu_scope("/device:IPU:0"):
    x = tf.placeholder(tf.float32, [])
    result = ipu_compiler.compile(my_net, inputs=[x])

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 1
cfg.configure_ipu_system()

with tf.Session() as sess:
    sess.run(infeed.initializer)
    print(sess.run(result, feed_dict={x: 2.0}))
    print(tf.contrib.framework.get_name_scope())  # TF1's contrib.framework: not provided
