"""A TF1 IPUEstimator program in the style of Graphcore's ipuestimator tutorial
(feature_examples/tensorflow/ipuestimator/ipu_estimator_cnn.py): a Keras Sequential CNN
called in the model_fn, an IPULoggingTensorHook logging every loss of each device loop,
IPURunConfig/RunConfig with iterations_per_loop, training from a Dataset.from_generator
input_fn, evaluation with tf.metrics.accuracy, prediction, and a second training call that
resumes from the checkpoint in model_dir; ipu.utils.reset_ipu_seed before any configuration
and [N, 1] labels, as the tutorial's. Small fixed data and fixed initial weights, so a test
can rebuild the same training with a plain Session loop."""

import argparse

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.keras import Sequential
from tensorflow.keras.layers import Activation, Conv2D, Dense, Flatten, MaxPooling2D
from tensorflow.python import ipu
from tensorflow.python.ipu.ipu_session_run_hooks import IPULoggingTensorHook

NUM_CLASSES = 3
SEED = 42

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=4)
parser.add_argument("--batches-per-step", type=int, default=2)
parser.add_argument("--steps", type=int, default=6)
parser.add_argument("--resume-steps", type=int, default=2)
parser.add_argument("--learning-rate", type=float, default=0.05)
parser.add_argument("--replicas", type=int, default=1)
parser.add_argument("--model-dir", required=True)
args = parser.parse_args()

ipu.utils.reset_ipu_seed(SEED)
rng = np.random.default_rng(SEED)
x_data = rng.standard_normal((48, 8, 8, 3)).astype(np.float32)
y_data = (x_data.mean(axis=(1, 2)).argmax(axis=1)).astype(np.int32).reshape(-1, 1)
kernel1 = (rng.standard_normal((3, 3, 3, 4)) * 0.3).astype(np.float32)
kernel2 = (rng.standard_normal((64, NUM_CLASSES)) * 0.3).astype(np.float32)
logged = []


def record(values):
    logged.extend(np.ravel(values["loss"]).tolist())
    return " ".join(f"loss = {np.mean(v):.4f}" for v in values.values())


def model_fn(features, labels, mode, params):
    model = Sequential()
    model.add(Conv2D(4, (3, 3), padding="same",
                     kernel_initializer=tf.constant_initializer(kernel1)))
    model.add(Activation("relu"))
    model.add(MaxPooling2D(pool_size=(2, 2)))
    model.add(Flatten())
    model.add(Dense(NUM_CLASSES, kernel_initializer=tf.constant_initializer(kernel2)))
    logits = model(features, training=mode == tf.estimator.ModeKeys.TRAIN)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={
            "class": tf.argmax(logits, axis=-1), "logits": logits})
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        predictions = tf.argmax(input=logits, axis=-1)
        eval_metric_ops = {"accuracy": tf.metrics.accuracy(labels=labels,
                                                           predictions=predictions)}
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=eval_metric_ops)
    loss_logging_hook = IPULoggingTensorHook(
        logging_mode=IPULoggingTensorHook.LoggingMode.ALL, formatter=record, every_n_iter=1)
    log_loss = loss_logging_hook.log({"loss": loss})
    optimizer = tf.train.GradientDescentOptimizer(params["learning_rate"])
    if args.replicas > 1:
        optimizer = ipu.optimizers.CrossReplicaOptimizer(optimizer)
    train_op = tf.group([optimizer.minimize(loss=loss), log_loss])
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op,
                                      training_hooks=[loss_logging_hook])


cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = args.replicas
ipu_run_config = ipu.ipu_run_config.IPURunConfig(iterations_per_loop=args.batches_per_step,
                                                 num_replicas=args.replicas, ipu_options=cfg)
run_config = ipu.ipu_run_config.RunConfig(ipu_run_config=ipu_run_config,
                                          log_step_count_steps=None, save_summary_steps=1,
                                          model_dir=args.model_dir, tf_random_seed=SEED)
estimator = ipu.ipu_estimator.IPUEstimator(config=run_config, model_fn=model_fn,
                                           params={"learning_rate": args.learning_rate})


def train_input_fn():
    def generator():
        return zip(x_data, y_data)
    dataset = tf.data.Dataset.from_generator(generator, (x_data.dtype, y_data.dtype),
                                             (x_data.shape[1:], y_data.shape[1:]))
    return dataset.repeat().batch(args.batch_size, drop_remainder=True)


def test_input_fn():
    dataset = tf.data.Dataset.from_tensor_slices((x_data, y_data))
    return dataset.batch(args.batch_size, drop_remainder=True)


tf.logging.set_verbosity(tf.logging.INFO)
estimator.train(input_fn=train_input_fn, steps=args.steps)
print("losses " + " ".join(f"{v:.7f}" for v in logged))
print(f"global_step {estimator.get_variable_value('global_step')}")
steps = len(x_data) // (args.batch_size * args.replicas)
steps -= steps % args.batches_per_step
metrics = estimator.evaluate(input_fn=test_input_fn, steps=steps)
print(f"eval loss {metrics['loss']:.7f} accuracy {metrics['accuracy']:.7f} "
      f"global_step {metrics['global_step']}")
predictions = estimator.predict(input_fn=lambda: test_input_fn().map(lambda x, y: x),
                                num_predictions=8)
# with replicas each prediction is one replica's batch (Graphcore's flattening)
print("predicted " + " ".join(str(c) for p in predictions for c in np.ravel(p["class"])))
logged.clear()
estimator.train(input_fn=train_input_fn, steps=args.resume_steps)
print("resumed " + " ".join(f"{v:.7f}" for v in logged))
print(f"global_step {estimator.get_variable_value('global_step')}")
