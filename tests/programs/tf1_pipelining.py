"""A TF1 program in the style of Graphcore's pipelining feature example (TF 1.15 SDK,
feature_examples/tensorflow/pipelining/pipelining.py): an MLP split into two pipeline stages
with Keras layers, the learning rate fed through a placeholder and passed through the stages,
an optimizer_function returning OptimizerFunctionOutput, outfeed_loss, the schedule chosen by
name from PipelineSchedule, two IPUs, and a Session running the compiled pipeline once per
step. Fixed synthetic data and constant initial weights instead of MNIST, so the losses can
be checked against a float64 model."""

import argparse

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.keras import layers
from tensorflow.python import ipu

tf.disable_eager_execution()
tf.disable_v2_behavior()


def parse_args():
    pipeline_schedule_options = [p.name for p in ipu.pipelining_ops.PipelineSchedule]
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeat-count", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--gradient-accumulation-count", type=int, default=8)
    parser.add_argument("--pipeline-schedule", type=str, default="Grouped",
                        choices=pipeline_schedule_options)
    parser.add_argument("--ipus", type=int, default=2)
    return parser.parse_args()


def initial_weights():
    rng = np.random.default_rng(5)
    return [rng.uniform(-0.4, 0.4, (16, 16)).astype(np.float32),
            rng.uniform(-0.4, 0.4, (16, 8)).astype(np.float32),
            rng.uniform(-0.4, 0.4, (8, 4)).astype(np.float32)]


def create_dataset(args):
    rng = np.random.default_rng(9)
    x_train = rng.uniform(0.0, 1.0, (512, 4, 4)).astype(np.float32)
    y_train = (x_train.reshape(512, 16)[:, :4].argmax(axis=1)).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    dataset = dataset.batch(args.batch_size, drop_remainder=True)
    return dataset.repeat()


W0, W1, W2 = initial_weights()


def stage1(lr, images, labels):
    partial = layers.Flatten()(images)
    partial = layers.Dense(16, activation=tf.nn.relu,
                           kernel_initializer=tf.constant_initializer(W0))(partial)
    partial = layers.Dense(8, activation=tf.nn.relu,
                           kernel_initializer=tf.constant_initializer(W1))(partial)
    return lr, partial, labels


def stage2(lr, partial, labels):
    logits = layers.Dense(4, kernel_initializer=tf.constant_initializer(W2))(partial)
    cross_entropy = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                   logits=logits)
    loss = tf.reduce_mean(cross_entropy)
    return lr, loss


def optimizer_function(lr, loss):
    optimizer = tf.train.GradientDescentOptimizer(lr)
    return ipu.pipelining_ops.OptimizerFunctionOutput(optimizer, loss)


def model(lr):
    with tf.variable_scope("FCModel", use_resource=True):
        pipeline_op = ipu.pipelining_ops.pipeline(
            computational_stages=[stage1, stage2],
            gradient_accumulation_count=args.gradient_accumulation_count,
            repeat_count=args.repeat_count,
            inputs=[lr],
            infeed_queue=infeed_queue,
            outfeed_queue=outfeed_queue,
            optimizer_function=optimizer_function,
            pipeline_schedule=next(p for p in ipu.pipelining_ops.PipelineSchedule
                                   if args.pipeline_schedule == p.name),
            outfeed_loss=True,
            name="Pipeline")
    return pipeline_op


if __name__ == "__main__":
    args = parse_args()
    dataset = create_dataset(args)
    infeed_queue = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset)
    outfeed_queue = ipu.ipu_outfeed_queue.IPUOutfeedQueue()

    with tf.device('cpu'):
        lr = tf.placeholder(np.float32, [])

    with ipu.scopes.ipu_scope("/device:IPU:0"):
        compiled_model = ipu.ipu_compiler.compile(model, inputs=[lr])

    outfeed_op = outfeed_queue.dequeue()

    ipu.utils.move_variable_initialization_to_cpu()
    init_op = tf.global_variables_initializer()

    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = args.ipus
    cfg.selection_order = ipu.config.SelectionOrder.SNAKE
    cfg.configure_ipu_system()

    with tf.Session() as sess:
        sess.run(init_op)
        sess.run(infeed_queue.initializer)
        for step in range(args.steps):
            sess.run(compiled_model, {lr: args.learning_rate})
            losses = sess.run(outfeed_op)
            print("Step {}, losses {} {}, Mean loss: {:.3f}".format(
                step, np.shape(losses), " ".join(f"{v:.7f}" for v in np.ravel(losses)),
                np.mean(losses)))
