"""A TF1 program in the shape of Graphcore's PopDist training example
(feature_examples/tensorflow/popdist/popdist_training.py): popdist.tensorflow.set_ipu_config,
hvd.init(), the Horovod PopDistStrategy, a dataset sharded over the instances, a Keras model
trained in the strategy's scope by a GradientTape step inside loops.repeat over an infeed,
strategy.experimental_run_v2 and strategy.reduce inside ipu_compiler.compile, a Session
running the compiled loop each epoch. A linear model on fixed synthetic data, so the
weights can be checked against plain gradient descent on the global batch.
The optimizer sums the gradients over the replicas itself, as TF 1.15's distribution-aware
optimizers do inside ``experimental_run_v2``. ``--strategy ipu`` runs the same program under
IPUStrategy with an explicit replica sum."""

import argparse

import numpy as np
import popdist
import popdist.tensorflow
import tensorflow.compat.v1 as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import horovod as hvd
from tensorflow.python.ipu.horovod import popdist_strategy

tf.disable_v2_behavior()

parser = argparse.ArgumentParser()
parser.add_argument("--strategy", default="popdist", choices=["popdist", "ipu"])
parser.add_argument("--replicas", type=int, default=1)
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()

BATCH_SIZE = 4
LEARNING_RATE = 0.05

config = ipu.config.IPUConfig()
if args.strategy == "popdist":
    popdist.tensorflow.set_ipu_config(config, ipus_per_replica=1)
else:
    config.auto_select_ipus = args.replicas
config.configure_ipu_system()

if args.strategy == "popdist":
    hvd.init()
    strategy = popdist_strategy.PopDistStrategy()
    num_total_replicas = popdist.getNumTotalReplicas()
else:
    strategy = ipu.ipu_strategy.IPUStrategy()
    num_total_replicas = args.replicas

rng = np.random.default_rng(3)
train_x = rng.standard_normal((256, 6)).astype(np.float32)
train_y = (train_x @ rng.standard_normal((6, 1)).astype(np.float32)).astype(np.float32)

global_batch_size = num_total_replicas * BATCH_SIZE
num_iterations = 4

dataset = tf.data.Dataset.from_tensor_slices((train_x, train_y))
dataset = dataset.shard(num_shards=popdist.getNumInstances(), index=popdist.getInstanceIndex())
dataset = dataset.repeat()
dataset = dataset.batch(batch_size=BATCH_SIZE, drop_remainder=True)

with strategy.scope():
    model = tf.keras.models.Sequential([
        tf.keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
    # (the example's tf.keras.optimizers.SGD is a TF2 optimizer: ipu_gpu runs Keras
    # optimizers eagerly only, so this TF1 program takes TF1's)
    optimizer = tf.train.GradientDescentOptimizer(LEARNING_RATE)
    infeed_queue = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset)

    def per_replica_step(loss_sum, x, y):
        with tf.GradientTape() as tape:
            prediction = model(x, training=True)
            per_example_loss = tf.reduce_mean(tf.square(prediction - y), axis=-1)
            loss = tf.nn.compute_average_loss(per_example_loss,
                                              global_batch_size=global_batch_size)
        loss_sum += loss
        gradients = tape.gradient(loss, model.trainable_variables)
        # under experimental_run_v2 the optimizer is distribution-aware: its apply_gradients
        # sums the gradients over the replicas (Graphcore's example relies on it); the
        # IPUStrategy variant runs the loop outside the strategy's run, so it sums them
        if args.strategy == "ipu":
            gradients = [ipu.cross_replica_ops.cross_replica_sum(g) for g in gradients]
        train_op = optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return loss_sum, train_op

    def per_replica_loop():
        return ipu.loops.repeat(num_iterations, per_replica_step, infeed_queue=infeed_queue,
                                inputs=[0.0])

    def run_model():
        if args.strategy == "popdist":
            per_replica_loss = strategy.experimental_run_v2(per_replica_loop)
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_loss) / \
                num_iterations
        per_replica_loss = per_replica_loop()
        return ipu.cross_replica_ops.cross_replica_sum(per_replica_loss) / num_iterations

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        compiled_model = ipu.ipu_compiler.compile(run_model)

    with tf.Session() as sess:
        sess.run(infeed_queue.initializer)
        sess.run(tf.global_variables_initializer())
        for epoch in range(args.epochs):
            loss = sess.run(compiled_model)[0]
            print(f"Epoch {epoch + 1}: loss={np.ravel(loss)[0]:.8f}")
        weights = sess.run(model.trainable_variables[0])
        print("weights " + " ".join(f"{w:.8f}" for w in np.ravel(weights)))
