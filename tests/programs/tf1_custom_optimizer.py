"""tf1_replication.py with its optimizer replaced by a subclass of tf.train.Optimizer (a slot
made in _create_slots, the update in _resource_apply_dense), wrapped in
CrossReplicaOptimizer as Graphcore's programs wrap their own optimizers; it must print the
weights tf1_replication.py prints.

A TF1 program in the style of Graphcore's replication feature example (TF 1.15 SDK):
the default graph, an infeed of batches, a loops.repeat training loop compiled once on an
ipu_scope, CrossReplicaOptimizer, the loss through an outfeed, and a Session running the
compiled loop several times, optionally accumulating gradients over mini-batches
(CrossReplicaGradientAccumulationOptimizerV2). Linear regression on fixed synthetic data,
so the final weights can be checked against the combined-batch computation."""

import argparse

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops
from tensorflow.python.ipu import scopes

tf.disable_v2_behavior()

parser = argparse.ArgumentParser()
parser.add_argument("--replicas", type=int, default=1)
parser.add_argument("--iterations", type=int, default=4)
parser.add_argument("--executions", type=int, default=3)
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--learning-rate", type=float, default=0.1)
parser.add_argument("--gradient-accumulation", type=int, default=1)
args = parser.parse_args()

rng = np.random.default_rng(11)
features = rng.standard_normal((1024, 5)).astype(np.float32)
targets = (features @ np.array([[1.0], [-2.0], [0.5], [0.0], [3.0]], np.float32)).astype(
    np.float32)

dataset = tf.data.Dataset.from_tensor_slices((features, targets))
dataset = dataset.batch(args.batch_size, drop_remainder=True).repeat()
infeed_queue = ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed_queue = ipu_outfeed_queue.IPUOutfeedQueue()


class MySGD(tf.train.Optimizer):
    def __init__(self, lr):
        super().__init__(False, "MySGD")
        self._lr = lr

    def _create_slots(self, var_list):
        for v in var_list:
            self._zeros_slot(v, "m", self._name)

    def _resource_apply_dense(self, grad, var):
        m = self.get_slot(var, "m")
        m_t = m.assign(grad)
        return var.assign_sub(self._lr * m_t)


def training_step(x, y):
    weights = tf.Variable(tf.zeros([5, 1]), name="weights")
    prediction = tf.matmul(x, weights)
    loss = tf.reduce_mean(tf.square(prediction - y))
    sgd = MySGD(args.learning_rate)
    if args.gradient_accumulation > 1:
        optimizer = ipu.optimizers.CrossReplicaGradientAccumulationOptimizerV2(
            sgd, num_mini_batches=args.gradient_accumulation)
    else:
        optimizer = ipu.optimizers.CrossReplicaOptimizer(sgd)
    train_op = optimizer.minimize(loss)
    return outfeed_queue.enqueue(loss), train_op


def training_loop():
    return loops.repeat(args.iterations, training_step, [], infeed_queue)


with scopes.ipu_scope("/device:IPU:0"):
    compiled_loop = ipu_compiler.compile(training_loop, [])

dequeue_losses = outfeed_queue.dequeue()

config = ipu.config.IPUConfig()
config.auto_select_ipus = args.replicas
config.configure_ipu_system()

with tf.Session() as sess:
    sess.run(infeed_queue.initializer)
    sess.run(tf.global_variables_initializer())
    for execution in range(args.executions):
        sess.run(compiled_loop)
        losses = sess.run(dequeue_losses)
        print(f"execution {execution} losses {np.shape(losses)} mean {np.mean(losses):.6f}")
    weights = sess.run(tf.global_variables()[0])
    print("weights " + " ".join(f"{w:.7f}" for w in weights.ravel()))
