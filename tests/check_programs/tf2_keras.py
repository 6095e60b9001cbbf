# A TF2 Keras program in the style of Graphcore's tutorials/tensorflow2/keras (SDK 3.x).
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu
from tensorflow.python.ipu.config import IPUConfig

# Configure the IPU system
cfg = IPUConfig()
cfg.auto_select_ipus = 1
cfg.device_connection.type = ipu.config.DeviceConnectionType.ON_DEMAND
cfg.configure_ipu_system()


def create_dataset(batch_size=32):
    (x_train, y_train), _ = keras.datasets.mnist.load_data()
    x_train = x_train.astype("float32") / 255.0
    y_train = keras.utils.to_categorical(y_train, 10)
    ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    return ds.shuffle(10000).batch(batch_size, drop_remainder=True).repeat()


def create_model():
    return keras.Sequential([
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation=tf.nn.relu),
        keras.layers.Dense(10, activation="softmax"),
    ])


strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    model = create_model()
    model.compile(loss=keras.losses.CategoricalCrossentropy(),
                  optimizer=keras.optimizers.SGD(learning_rate=0.01),
                  steps_per_execution=100)
    model.fit(create_dataset(), steps_per_epoch=100, epochs=2)
    print(np.mean(model.predict(np.zeros((32, 28, 28), np.float32))))
    ipu.utils.not_a_graphcore_function()  # a typo: never provided
