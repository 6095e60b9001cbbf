"""A TF 1.15-style training script: a tf.data one-shot iterator feeding a Keras Dense layer
called on graph tensors, a Keras Adam optimizer's minimize building the update op, a global
step, and a MonitoredTrainingSession with StopAtStepHook, LoggingTensorHook and checkpoints;
a second session restores and continues. Prints one line per step."""

import sys
import tempfile

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_v2_behavior()
c = tf.compat.v1

rng = np.random.RandomState(0)
x_all = rng.randn(64, 4).astype(np.float32)
y_all = (x_all @ rng.randn(4, 2)).astype(np.float32)
model_dir = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()


def build():
    ds = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(8).repeat()
    x, y = c.data.make_one_shot_iterator(ds).get_next()
    dense = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.Constant(0.1))
    step = c.train.get_or_create_global_step()

    def loss_fn():
        return tf.reduce_mean(tf.square(dense(x) - y))
    loss = loss_fn()
    # TF 1.15's tf.keras.optimizers.Adam is the OptimizerV2 that TF 2.11+ calls legacy.Adam
    opt = getattr(tf.keras.optimizers, "legacy", tf.keras.optimizers).Adam(0.05)
    update = opt.minimize(loss_fn, var_list=dense.trainable_variables)
    with c.control_dependencies([update]):
        train = c.assign_add(step, 1)
    return step, loss, train, opt


for last in (4, 7):
    with c.Graph().as_default():
        step, loss, train, opt = build()
        hooks = [c.train.StopAtStepHook(last_step=last)]
        with c.train.MonitoredTrainingSession(checkpoint_dir=model_dir, hooks=hooks,
                                              save_checkpoint_steps=2,
                                              save_summaries_steps=None,
                                              log_step_count_steps=None) as sess:
            while not sess.should_stop():
                value, _ = sess.run([loss, train])
                print("step", last, f"{value:.5f}")
print("done")
