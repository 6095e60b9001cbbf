"""A TF2 program in the shape of Graphcore's PopDist inference example
(tutorials/feature_examples/tensorflow2/popdist/popdist_inference.py): PopDistStrategy, a
test dataset sharded over the instances, a model loaded from the training example's .h5,
compiled with metrics and steps_per_execution, and evaluated. ``--strategy ipu`` runs it
under IPUStrategy."""

import argparse

import numpy as np
import popdist
import popdist.tensorflow
import tensorflow as tf
from tensorflow.python import ipu
from tensorflow.python.ipu.distributed import popdist_strategy

parser = argparse.ArgumentParser()
parser.add_argument("--strategy", default="popdist", choices=["popdist", "ipu"])
parser.add_argument("--model", default="saved_model.h5")
args = parser.parse_args()

BATCH_SIZE = 8

config = ipu.config.IPUConfig()
popdist.tensorflow.set_ipu_config(config)
config.configure_ipu_system()

if args.strategy == "popdist":
    strategy = popdist_strategy.PopDistStrategy()
else:
    strategy = ipu.ipu_strategy.IPUStrategy()

rng = np.random.default_rng(1)
test_x = rng.random((64, 10, 10, 3)).astype(np.float32)
test_y = rng.integers(0, 10, (64, 1)).astype(np.int32)

dataset = tf.data.Dataset.from_tensor_slices((test_x, test_y))
dataset = dataset.shard(num_shards=popdist.getNumInstances(), index=popdist.getInstanceIndex())
dataset = dataset.batch(batch_size=BATCH_SIZE, drop_remainder=True)

shard_batches = len(dataset)
steps_per_execution = shard_batches // popdist.getNumLocalReplicas()

with strategy.scope():
    model = tf.keras.models.load_model(args.model)
    model.compile(metrics=["accuracy"], steps_per_execution=steps_per_execution)
    hist = model.evaluate(dataset, verbose=0)
    print(f"accuracy {hist[-1] if isinstance(hist, list) else hist:.8f}")
    predictions = model.predict(dataset.map(lambda x, y: x), verbose=0)
    print(f"predictions {predictions.shape} {float(np.sum(predictions)):.6f}")
