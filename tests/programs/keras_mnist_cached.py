"""Keras MNIST on the IPU, in the style of Graphcore's TF2 Keras tutorial: the dataset comes
from ``keras.datasets.mnist.load_data()`` (the Keras cache), is scaled to [0, 1] and fed by a
``tf.data`` pipeline; the IPU system is configured with ``IPUConfig``; a ``Sequential`` model
is built, compiled with ``steps_per_execution`` and trained with ``fit`` inside an
``IPUStrategy`` scope, then evaluated on the test split.

With ``--replicas R`` each of the R replicas takes its own batch per step and the gradients
are summed over the replicas, so the learning rate is divided by R: an update is then the
mean-gradient step on R batches. ``steps_per_epoch`` counts batches over all replicas.

The last line printed is ``test_loss=... test_accuracy=... replicas=... steps_per_epoch=...``.
"""

import argparse

import tensorflow as tf
from tensorflow import keras
from tensorflow.python import ipu

NUM_CLASSES = 10


def parse_params():
    parser = argparse.ArgumentParser(description="Keras MNIST on the IPU")
    parser.add_argument("--replicas", type=int, default=1,
                        help="how many IPUs the model is replicated over")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="the batch size of one replica")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=0.1,
                        help="SGD's learning rate for one replica's mean gradient")
    parser.add_argument("--steps-per-execution", type=int, default=None,
                        help="one replica's steps in one IPU program (default: an epoch)")
    parser.add_argument("--seed", type=int, default=1234,
                        help="seeds the weight initialisers and the shuffle")
    return parser.parse_args()


def load_data(batch_size, replicas, seed):
    """The train and test datasets and how many batches each yields per pass."""
    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()

    # Pixels from [0, 255] to [0, 1]; labels as one-hot rows.
    x_train = x_train.astype("float32") / 255
    x_test = x_test.astype("float32") / 255
    y_train = keras.utils.to_categorical(y_train, NUM_CLASSES)
    y_test = keras.utils.to_categorical(y_test, NUM_CLASSES)

    # Every replica needs the same number of whole batches.
    train_batches = len(x_train) // (batch_size * replicas) * replicas
    test_batches = len(x_test) // (batch_size * replicas) * replicas

    train = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    train = train.shuffle(len(x_train), seed=seed)
    train = train.batch(batch_size, drop_remainder=True).repeat()

    test = tf.data.Dataset.from_tensor_slices((x_test, y_test))
    test = test.batch(batch_size, drop_remainder=True).repeat()
    return (train, test), (train_batches, test_batches)


def model_fn():
    return keras.Sequential([
        keras.layers.Flatten(input_shape=(28, 28)),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(NUM_CLASSES, activation="softmax"),
    ])


args = parse_params()
keras.utils.set_random_seed(args.seed)
(train_ds, test_ds), (steps_per_epoch, test_steps) = load_data(
    args.batch_size, args.replicas, args.seed)
# One execution runs an epoch: steps_per_execution counts one replica's steps.
steps_per_execution = args.steps_per_execution or steps_per_epoch // args.replicas

ipu_config = ipu.config.IPUConfig()
ipu_config.device_connection.type = ipu.config.DeviceConnectionType.ON_DEMAND
ipu_config.auto_select_ipus = args.replicas
ipu_config.configure_ipu_system()

strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    model = model_fn()
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=args.learning_rate / args.replicas),
        loss="categorical_crossentropy",
        metrics=["accuracy"],
        steps_per_execution=steps_per_execution,
    )
    model.summary()

    print("Training")
    model.fit(train_ds, epochs=args.epochs, steps_per_epoch=steps_per_epoch)

    print("Evaluation")
    test_loss, test_accuracy = model.evaluate(test_ds, steps=test_steps)

print(f"test_loss={test_loss:.4f} test_accuracy={test_accuracy:.4f} "
      f"replicas={args.replicas} steps_per_epoch={steps_per_epoch}")
