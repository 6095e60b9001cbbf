"""A TF2 program in the shape of Graphcore's PopDist training example
(tutorials/feature_examples/tensorflow2/popdist/popdist_training.py): popdist.tensorflow.
set_ipu_config, ipu.distributed.popdist_strategy.PopDistStrategy, a dataset sharded over the
instances, steps_per_execution from the local replicas, Keras compile/fit in the strategy's
scope, model.save on instance 0. Small synthetic data and a small CNN; ``--strategy ipu``
runs it under IPUStrategy on the same IPUs, for comparison."""

import argparse

import numpy as np
import popdist
import popdist.tensorflow
import tensorflow as tf
from tensorflow.python import ipu
from tensorflow.python.ipu.distributed import popdist_strategy

parser = argparse.ArgumentParser()
parser.add_argument("--strategy", default="popdist", choices=["popdist", "ipu"])
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--save", default="")
args = parser.parse_args()

BATCH_SIZE = 8
LEARNING_RATE = 0.01
tf.random.set_seed(7)


def initialize_model():
    return tf.keras.models.Sequential([
        tf.keras.layers.Conv2D(4, 3, activation="relu"),
        tf.keras.layers.MaxPool2D((2, 2)),
        tf.keras.layers.Dropout(0.25),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(16, activation="relu"),
        tf.keras.layers.Dense(10),
    ])


config = ipu.config.IPUConfig()
popdist.tensorflow.set_ipu_config(config)
config.configure_ipu_system()
ipu.utils.reset_ipu_seed(7)  # the dropout masks of both strategies' runs equal

if args.strategy == "popdist":
    strategy = popdist_strategy.PopDistStrategy()
else:
    strategy = ipu.ipu_strategy.IPUStrategy()

rng = np.random.default_rng(0)
train_x = rng.random((256, 10, 10, 3)).astype(np.float32)
train_y = rng.integers(0, 10, (256, 1)).astype(np.int32)

dataset = tf.data.Dataset.from_tensor_slices((train_x, train_y))
dataset = dataset.shard(num_shards=popdist.getNumInstances(), index=popdist.getInstanceIndex())
dataset = dataset.shuffle(buffer_size=len(dataset), seed=3)
dataset = dataset.batch(batch_size=BATCH_SIZE, drop_remainder=True)

shard_batches = len(dataset)
steps_per_execution = shard_batches // popdist.getNumLocalReplicas()

if popdist.getInstanceIndex() == 0:
    print(f"Number of samples:\t{len(train_y)}")
    print(f"Steps per execution:\t{steps_per_execution}")

with strategy.scope():
    model = initialize_model()
    # PopDistStrategy's Keras averages the replicas' gradients (the loss is divided by
    # num_replicas_in_sync), IPUStrategy's sums them: divide its learning rate to compare
    lr = LEARNING_RATE if args.strategy == "popdist" else \
        LEARNING_RATE / popdist.getNumTotalReplicas()
    optimizer = tf.keras.optimizers.SGD(learning_rate=lr)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer=optimizer, loss=loss_fn, metrics=["accuracy"],
                  steps_per_execution=steps_per_execution)
    history = model.fit(dataset, epochs=args.epochs, verbose=0)
    print("losses " + " ".join(f"{v:.8f}" for v in history.history["loss"]))
    print("weights " + " ".join(f"{float(np.sum(w)):.8f}" for w in model.get_weights()))
    if popdist.getInstanceIndex() == 0 and args.save:
        model.save(args.save)
