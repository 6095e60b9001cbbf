"""A TF2-era IPUPipelineEstimator program in the style of Graphcore's CIFAR-10 pipeline
estimator tutorial: `import tensorflow as tf`, Keras layers split into two pipeline stages
(functools.partial over layer lists), the loss from tf.keras.losses in the last stage,
tf.compat.v1 GradientDescentOptimizer in the optimizer function, accuracy through
tf.compat.v1.metrics in eval_metrics_fn, two IPUs as two shards. Fixed data, initial
weights and order (no shuffle, no dropout), so a test can recompute the training."""

import argparse
from functools import partial

import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Activation, Conv2D, Dense, Flatten
from tensorflow.python import ipu

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, default=4)
parser.add_argument("--gradient-accumulation-count", type=int, default=4)
parser.add_argument("--executions", type=int, default=3)
parser.add_argument("--learning-rate", type=float, default=0.05)
parser.add_argument("--model-dir", default=None)
opts = parser.parse_args()

rng = np.random.default_rng(5)
x_data = rng.standard_normal((64, 8, 8, 3)).astype(np.float32)
y_data = (x_data.mean(axis=(1, 2)).argmax(axis=1)).astype(np.int32)
kernel1 = (rng.standard_normal((3, 3, 3, 4)) * 0.3).astype(np.float32)
kernel2 = (rng.standard_normal((256, 3)) * 0.1).astype(np.float32)


def layers():
    return [Conv2D(4, (3, 3), padding="same",
                   kernel_initializer=tf.compat.v1.constant_initializer(kernel1)),
            Activation("relu"), Flatten(),
            Dense(3, kernel_initializer=tf.compat.v1.constant_initializer(kernel2))]


def stage(stage_layers, features, labels):
    for layer in stage_layers:
        features = layer(features)
    return features, labels


def estimator_model(opts, mode):
    model = layers()
    first, second = partial(stage, model[:2]), partial(stage, model[2:])

    def final_stage(features, labels):
        logits, labels = second(features, labels)
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True))
        return loss, tf.argmax(input=logits, axis=-1, output_type=tf.int32), labels

    def optimizer_fn(loss, predictions, labels):
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(opts.learning_rate)
        return ipu.ops.pipelining_ops.OptimizerFunctionOutput(optimizer, loss)

    def metric_fn(loss, predictions, labels):
        return {"loss": loss, "accuracy": tf.compat.v1.metrics.accuracy(labels, predictions)}

    return ipu.ipu_pipeline_estimator.IPUPipelineEstimatorSpec(
        mode=mode, computational_stages=[first, final_stage],
        gradient_accumulation_count=opts.gradient_accumulation_count,
        optimizer_function=optimizer_fn, eval_metrics_fn=metric_fn)


def dataset(batch_size, repeat):
    ds = tf.data.Dataset.from_tensor_slices((x_data, y_data))
    ds = ds.repeat() if repeat else ds
    return ds.batch(batch_size, drop_remainder=True)


cfg = ipu.config.IPUConfig()
cfg.auto_select_ipus = 2
steps_per_loop = opts.gradient_accumulation_count
run_config = ipu.ipu_run_config.RunConfig(
    ipu_run_config=ipu.ipu_run_config.IPURunConfig(
        num_shards=2, iterations_per_loop=steps_per_loop, ipu_options=cfg),
    log_step_count_steps=None, model_dir=opts.model_dir)
estimator = ipu.ipu_pipeline_estimator.IPUPipelineEstimator(
    config=run_config, model_fn=partial(estimator_model, opts))
estimator.train(partial(dataset, opts.batch_size, True),
                steps=opts.executions * steps_per_loop)
test_steps = len(y_data) // opts.batch_size
test_steps -= test_steps % steps_per_loop
result = estimator.evaluate(partial(dataset, opts.batch_size, False), steps=test_steps)
print(f"global_step {result['global_step']}")
print(f"eval loss {result['loss']:.7f} accuracy {result['accuracy']:.7f}")
