"""A sentiment model in the style of Graphcore's ipu_tensorflow_addons documentation example
(docs/example_ipu_specific_keras_layers.py): IMDB reviews from the Keras cache, the add-on
Embedding and LSTM layers in a pipelined functional model on 2 IPUs, trained with
IPUStrategyV1, steps_per_execution and fit. Prints the loss history as JSON at the end."""

import argparse
import json

import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu

from ipu_tensorflow_addons.keras import layers as ipu_layers
from ipu_tensorflow_addons.keras import optimizers as ipu_optimizers

MAX_FEATURES = 200
SEQ_LEN = 12
BATCH = 8


def get_dataset():
    (x_train, y_train), _ = keras.datasets.imdb.load_data(num_words=MAX_FEATURES)
    x_train = keras.preprocessing.sequence.pad_sequences(x_train, maxlen=SEQ_LEN)
    ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    ds = ds.repeat()
    ds = ds.map(lambda x, y: (x, tf.cast(y, tf.int32)))
    return ds.batch(BATCH, drop_remainder=True)


def get_model():
    inputs = keras.layers.Input(shape=(SEQ_LEN), dtype=tf.int32, batch_size=BATCH)
    with keras.ipu.PipelineStage(0):
        x = ipu_layers.Embedding(MAX_FEATURES, 16)(inputs)
        x = ipu_layers.LSTM(16, dropout=0.2, dropout_seed=[1, 2])(x)
        x = ipu_layers.LayerNormalization()(x)
    with keras.ipu.PipelineStage(1):
        a = keras.layers.Dense(8, activation="relu")(x)
        a = ipu_layers.Dropout(0.1, seed=[3, 4])(a)
    with keras.ipu.PipelineStage(2):
        b = keras.layers.Dense(8, activation="relu")(x)
        b = ipu_layers.RecomputationCheckpoint()(b)
    with keras.ipu.PipelineStage(3):
        x = keras.layers.Concatenate()([a, b])
        x = keras.layers.Dense(1, activation="sigmoid")(x)
    return keras.Model(inputs, x)


parser = argparse.ArgumentParser("Config Parser", add_help=False)
parser.add_argument("--steps-per-epoch", type=int, default=32)
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 2
cfg.configure_ipu_system()

tf.random.set_seed(16)
strategy = ipu.ipu_strategy.IPUStrategyV1()
with strategy.scope():
    model = get_model()
    model.set_pipelining_options(gradient_accumulation_steps_per_replica=8,
                                 device_mapping=[0, 1, 1, 0])
    model.compile(loss="binary_crossentropy",
                  optimizer=ipu_optimizers.AdamIpuOptimizer(0.005),
                  steps_per_execution=16)
    history = model.fit(get_dataset(), steps_per_epoch=args.steps_per_epoch,
                        epochs=args.epochs, verbose=2)
print("HISTORY " + json.dumps(history.history))
