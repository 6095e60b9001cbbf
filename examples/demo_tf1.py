"""Train a classifier of handwritten digits on four replicated IPUs with TensorFlow 1, written
as Graphcore's TF1 tutorials write it: an infeed queue over a tf.data dataset, a
``loops.repeat`` training loop compiled by ``ipu_compiler.compile`` in an ``ipu_scope``,
gradients accumulated and reduced over the replicas
(``CrossReplicaGradientAccumulationOptimizerV2``), the losses through an outfeed queue and a
Session running the compiled loop; then an inference program measures held-out accuracy.
The data is scikit-learn's 8x8 digits.

    ipu-gpu run examples/demo_tf1.py [--epochs N]
"""

import argparse
import time

import numpy as np
import tensorflow.compat.v1 as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tensorflow.python import ipu
from tensorflow.python.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops
from tensorflow.python.ipu import scopes
from tqdm import tqdm

tf.disable_v2_behavior()

REPLICAS = 4
BATCH_SIZE = 8
GRADIENT_ACCUMULATION = 2
ITERATIONS = 8  # loop iterations (batches per replica) in one run of the training program
TEST_SIZE = 352
TEST_BATCH_SIZE = 22  # TEST_SIZE / REPLICAS / TEST_BATCH_SIZE = 4 iterations per replica

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=8, help="passes over the training set")
parser.add_argument("--learning-rate", type=float, default=0.002)
args = parser.parse_args()

tf.set_random_seed(0)

digits = load_digits()
x_train, x_test, y_train, y_test = train_test_split(
    (digits.images / 16.0).astype(np.float32), digits.target.astype(np.int32),
    test_size=TEST_SIZE, random_state=0, stratify=digits.target)

train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
train_ds = train_ds.shuffle(len(x_train), seed=0).batch(BATCH_SIZE, drop_remainder=True)
train_ds = train_ds.repeat()
test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test))
test_ds = test_ds.batch(TEST_BATCH_SIZE, drop_remainder=True)

infeed_queue = ipu_infeed_queue.IPUInfeedQueue(train_ds)
outfeed_queue = ipu_outfeed_queue.IPUOutfeedQueue()
test_infeed_queue = ipu_infeed_queue.IPUInfeedQueue(test_ds)
test_outfeed_queue = ipu_outfeed_queue.IPUOutfeedQueue()


def model(images):
    """A two-hidden-layer MLP; its variables are shared by training and inference."""
    with tf.variable_scope("model", reuse=tf.AUTO_REUSE, use_resource=True):
        x = tf.layers.flatten(images)
        x = tf.layers.dense(x, 128, activation=tf.nn.relu, name="dense1")
        x = tf.layers.dense(x, 64, activation=tf.nn.relu, name="dense2")
        return tf.layers.dense(x, 10, name="logits")


def training_step(images, labels):
    logits = model(images)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    optimizer = ipu.optimizers.CrossReplicaGradientAccumulationOptimizerV2(
        tf.train.AdamOptimizer(args.learning_rate),
        num_mini_batches=GRADIENT_ACCUMULATION)
    train_op = optimizer.minimize(loss)
    return outfeed_queue.enqueue(loss), train_op


def training_loop():
    return loops.repeat(ITERATIONS, training_step, [], infeed_queue)


def inference_step(images, labels):
    predictions = tf.argmax(model(images), axis=1, output_type=tf.int32)
    correct = tf.reduce_sum(tf.cast(tf.equal(predictions, labels), tf.int32))
    return test_outfeed_queue.enqueue(correct)


def inference_loop():
    return loops.repeat(TEST_SIZE // REPLICAS // TEST_BATCH_SIZE, inference_step, [],
                        test_infeed_queue)


with scopes.ipu_scope("/device:IPU:0"):
    train = ipu_compiler.compile(training_loop, [])
    test = ipu_compiler.compile(inference_loop, [])

dequeue_losses = outfeed_queue.dequeue()
dequeue_correct = test_outfeed_queue.dequeue()

config = ipu.config.IPUConfig()
config.auto_select_ipus = REPLICAS
config.configure_ipu_system()

samples_per_run = ITERATIONS * REPLICAS * BATCH_SIZE
runs = args.epochs * len(x_train) // samples_per_run

with tf.Session() as sess:
    sess.run(infeed_queue.initializer)
    sess.run(test_infeed_queue.initializer)
    sess.run(tf.global_variables_initializer())

    samples, start = 0, None
    progress = tqdm(range(runs), desc="training", unit="run")
    for _ in progress:
        sess.run(train)
        losses = sess.run(dequeue_losses)
        if start is None:  # throughput after the first run, which compiles
            start = time.perf_counter()
        else:
            samples += samples_per_run
        progress.set_postfix(loss=f"{np.mean(losses):.4f}")
    seconds = time.perf_counter() - start

    sess.run(test)
    correct = int(np.sum(sess.run(dequeue_correct)))

print(f"held-out accuracy: {100 * correct / TEST_SIZE:.2f}% ({TEST_SIZE} digits)")
print(f"throughput: {samples / seconds / REPLICAS:.0f} samples/s per replica, "
      f"{samples / seconds:.0f} samples/s total ({REPLICAS} replicas = {REPLICAS} IPUs, "
      f"gradients of {GRADIENT_ACCUMULATION} batches accumulated per update)")
