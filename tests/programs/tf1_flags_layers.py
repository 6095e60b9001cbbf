"""A TF1 graph-mode program in the style of TF 1.15 scripts: tf.app.flags and tf.app.run,
tf.layers classes, a named loss fetched by name, tf.nn.fused_batch_norm, FtrlOptimizer and
streaming tf.metrics precision/recall/auc. It runs under `ipu-gpu run` and, unchanged, under
real TensorFlow (`import tensorflow.compat.v1`); it prints one line per step and the metrics."""

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()
flags = tf.app.flags
flags.DEFINE_integer("steps", 4, "training steps")
flags.DEFINE_float("learning_rate", 0.2, "FTRL learning rate")
flags.DEFINE_boolean("dropout", True, "apply the dropout layer")
FLAGS = flags.FLAGS


def main(argv):
    rng = np.random.default_rng(0)
    x_val = rng.standard_normal((8, 4, 4, 2)).astype(np.float32)
    y_val = (x_val.mean((1, 2, 3)) > 0).astype(np.int64)
    k_val = (rng.standard_normal((4 * 4 * 2, 2)) * 0.3).astype(np.float32)
    x_test = rng.standard_normal((16, 4, 4, 2)).astype(np.float32)
    y_test = rng.integers(0, 2, 16)
    x = tf.placeholder(tf.float32, [None, 4, 4, 2], name="images")
    y = tf.placeholder(tf.int64, [None], name="labels")
    with tf.variable_scope("model"):
        gamma = tf.get_variable("gamma", [2], initializer=tf.ones_initializer())
        beta = tf.get_variable("beta", [2], initializer=tf.zeros_initializer())
        h, _, _ = tf.nn.fused_batch_norm(x, gamma, beta)
        h = tf.layers.Flatten()(h)
        h = tf.layers.Dropout(0.5)(h, training=False) if FLAGS.dropout else h
        logits = tf.layers.Dense(2, kernel_initializer=tf.constant_initializer(k_val))(h)
    with tf.name_scope("objective"):
        xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
        tf.reduce_mean(xent, name="loss")
    graph = tf.get_default_graph()
    loss = graph.get_tensor_by_name("objective/loss:0")
    train = tf.train.FtrlOptimizer(FLAGS.learning_rate).minimize(loss)
    probs = tf.nn.softmax(logits)[:, 1]
    classes = tf.argmax(logits, 1)
    _, prec_up = tf.metrics.precision(y, classes)
    _, rec_up = tf.metrics.recall(y, classes)
    _, auc_up = tf.metrics.auc(y, probs, num_thresholds=20)
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        for step in range(FLAGS.steps):
            value, _ = sess.run(["objective/loss:0", train], {x: x_val, y: y_val})
            print(f"step {step} loss {value:.6f}")
        metrics = sess.run([prec_up, rec_up, auc_up], {x: x_test, y: y_test})
        print("metrics " + " ".join(f"{m:.6f}" for m in metrics))
    print("args", argv[1:])


if __name__ == "__main__":
    tf.app.run(main)
