"""A program written for Graphcore's TF 1.15 build: `import tensorflow as tf` with TF1 names.
It asks for the TF1 behaviour, prints the version it sees, then reaches for a graph-mode name
(`--session` picks tf.Session)."""

import sys

import tensorflow as tf

tf.disable_v2_behavior()
print("version", tf.__version__)
print("constant", tf.constant([1.0, 2.0]).numpy().tolist())
if "--session" in sys.argv:
    with tf.Session() as sess:
        pass
