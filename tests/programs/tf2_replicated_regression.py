"""Linear regression on two IPUs, written as Graphcore's TF2 tutorials write IPU programs:
an IPUConfig, an infeed, a training loop compiled for the IPU, a cross-replica mean of the
gradients, and an outfeed of the losses."""

import argparse
import sys

import tensorflow as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import ipu_compiler, loops, scopes
from tensorflow.python.ipu.ops import cross_replica_ops

from ipu_helpers import make_dataset_arrays

parser = argparse.ArgumentParser(description="IPU linear regression")
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--learning-rate", type=float, default=0.1)
parser.add_argument("--exit-code", type=int, default=0)
args = parser.parse_args()

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 2
cfg.configure_ipu_system()

x, y = make_dataset_arrays(64, 4)


def training_step(w):
    with tf.GradientTape() as tape:
        tape.watch(w)
        pred = tf.reduce_sum(x * w, axis=1)
        loss = tf.reduce_mean(tf.square(pred - y))
    g = cross_replica_ops.cross_replica_mean(tape.gradient(loss, w))
    return w - args.learning_rate * g


def training_loop(w0):
    return loops.repeat(args.steps, training_step, inputs=[w0])


with scopes.ipu_scope("/device:IPU:0"):
    (w,) = ipu_compiler.compile(training_loop, [tf.zeros([4])])

final = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, axis=1) - y)).numpy()
print(f"program={__name__} argv={sys.argv[1:]} tf={tf.__version__} final_loss={final:.6f}")
sys.exit(args.exit_code)
