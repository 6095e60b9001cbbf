"""A Keras MNIST-style training program written as Graphcore's TF2 tutorials write it
(IPUConfig, IPUStrategy, a Sequential model built in the strategy's scope, compile with
steps_per_execution, fit on a repeated tf.data dataset, evaluate). The images are synthetic
(each class a noisy template) so the program needs no download."""

import argparse

import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu

parser = argparse.ArgumentParser()
parser.add_argument("--replicas", type=int, default=1)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--steps-per-execution", type=int, default=8)
args = parser.parse_args()

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = args.replicas
cfg.configure_ipu_system()


def create_dataset(n=512, batch_size=32):
    rng = np.random.default_rng(0)
    templates = rng.uniform(0, 1, size=(10, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, size=n).astype(np.int32)
    x = templates[y] + 0.3 * rng.normal(size=(n, 28, 28)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size, drop_remainder=True)
    ds = ds.map(lambda d, lab: (tf.cast(d, tf.float32), tf.cast(lab, tf.int32)))
    return ds.repeat().prefetch(16), (x, y)


dataset, (x_all, y_all) = create_dataset()

strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    model = keras.Sequential([
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(),
                  optimizer=keras.optimizers.SGD(learning_rate=0.05),
                  metrics=["accuracy"],
                  steps_per_execution=args.steps_per_execution)
    history = model.fit(dataset, epochs=args.epochs, steps_per_epoch=16 * args.replicas)
    loss, accuracy = model.evaluate(x_all, y_all, batch_size=32, verbose=0)

print(f"first_loss={history.history['loss'][0]:.4f} final_loss={loss:.4f} "
      f"accuracy={accuracy:.4f} replicas={strategy.num_replicas_in_sync}")
