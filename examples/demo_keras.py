"""Train a Keras classifier of handwritten digits on four IPUs: a model in two pipeline
stages (one IPU each), replicated twice, written as Graphcore's TF2 Keras tutorials write
it (IPUConfig, IPUStrategy, PipelineStage, set_pipelining_options, steps_per_execution,
fit, evaluate). The data is scikit-learn's 8x8 digits, read through a tf.data pipeline.

    ipu-gpu run examples/demo_keras.py [--epochs N]
"""

import argparse
import time

import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tensorflow import keras
from tensorflow.python import ipu

REPLICAS = 2
STAGES = 2
BATCH_SIZE = 8
TEST_SIZE = 352  # held-out digits: whole executions of 22 per batch on every replica
GRADIENT_ACCUMULATION = 4
STEPS_PER_EXECUTION = 8

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=8, help="passes over the training set")
args = parser.parse_args()

tf.random.set_seed(0)


def load_data():
    """The digits scaled to [0, 1], split into a fixed training and held-out set."""
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    return train_test_split(x, y, test_size=TEST_SIZE, random_state=0, stratify=y)


def create_dataset(x, y):
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.shuffle(len(x), seed=0).batch(BATCH_SIZE, drop_remainder=True)
    return ds.repeat().prefetch(16)


class EpochTimer(keras.callbacks.Callback):
    """Wall time of each epoch (the first one includes compiling the program)."""

    def on_train_begin(self, logs=None):
        self.seconds = []

    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds.append(time.perf_counter() - self.start)


def create_model():
    """A functional model in two pipeline stages."""
    images = keras.Input(shape=(8, 8))
    with ipu.keras.PipelineStage(0):
        x = keras.layers.Flatten()(images)
        x = keras.layers.Dense(128, activation="relu")(x)
    with ipu.keras.PipelineStage(1):
        x = keras.layers.Dense(64, activation="relu")(x)
        probabilities = keras.layers.Dense(10, activation="softmax")(x)
    return keras.Model(images, probabilities)


x_train, x_test, y_train, y_test = load_data()

# Two replicas of a two-stage pipeline: four IPUs.
cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = REPLICAS * STAGES
cfg.configure_ipu_system()

# An epoch's steps (batches, over all replicas): whole executions on every replica.
STEPS_PER_ROUND = STEPS_PER_EXECUTION * REPLICAS
steps_per_epoch = len(x_train) // BATCH_SIZE // STEPS_PER_ROUND * STEPS_PER_ROUND

strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    model = create_model()
    model.set_pipelining_options(gradient_accumulation_steps_per_replica=GRADIENT_ACCUMULATION)
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(),
                  optimizer=keras.optimizers.Adam(learning_rate=0.002),
                  metrics=["accuracy"],
                  steps_per_execution=STEPS_PER_EXECUTION)

    timer = EpochTimer()
    model.fit(create_dataset(x_train, y_train), epochs=args.epochs,
              steps_per_epoch=steps_per_epoch, callbacks=[timer])

    test_ds = tf.data.Dataset.from_tensor_slices((x_test, y_test))
    test_ds = test_ds.batch(len(x_test) // STEPS_PER_ROUND, drop_remainder=True)
    loss, accuracy = model.evaluate(test_ds, verbose=0)

# Throughput after the first epoch, which compiles.
timed = timer.seconds[1:] or timer.seconds
samples = len(timed) * steps_per_epoch * BATCH_SIZE
seconds = sum(timed)
print(f"held-out accuracy: {100 * accuracy:.2f}% ({len(x_test)} digits), "
      f"loss {loss:.4f}")
print(f"throughput: {samples / seconds / REPLICAS:.0f} samples/s per replica, "
      f"{samples / seconds:.0f} samples/s total ({REPLICAS} replicas x {STAGES} pipeline "
      f"stages = {REPLICAS * STAGES} IPUs)")
