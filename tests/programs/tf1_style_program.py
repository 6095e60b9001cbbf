"""A program written for Graphcore's TF 1.15 build: `import tensorflow as tf` with TF1 names.
It asks for the TF1 behaviour, prints the version it sees, then runs a small graph in a
tf.Session (`--session`) or reaches for a TF1 name ipu_gpu does not emulate yet
(`--missing` picks tf.contrib.slim, which TF1 programs still reach for and ipu_gpu
does not provide)."""

import sys

import tensorflow as tf

tf.disable_v2_behavior()
print("version", tf.__version__)
print("constant", tf.constant([1.0, 2.0]).numpy().tolist())
if "--session" in sys.argv:
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [2])
        doubled = x * 2.0
        with tf.Session() as sess:
            print("session", sess.run(doubled, feed_dict={x: [1.0, 2.0]}).tolist())
if "--missing" in sys.argv:
    print(tf.contrib.slim.conv2d)
