"""An IPU program on the emulated system: configure IPUs, feed data with an infeed queue,
train inside ``ipu_compiler.compile`` with ``loops.repeat`` and read the losses back from an
outfeed queue. Written as for Graphcore's SDK and run unmodified:

    ipu-gpu run examples/ipu_train.py      (or: python -m ipu_gpu examples/ipu_train.py)
"""

import time

import numpy as np

import tensorflow as tf
from tensorflow.python import ipu

BATCH, FEATURES, CLASSES, STEPS = 64, 32, 4, 50


def dataset(rng, batches):
    """Points around four class centres, as a tf.data pipeline of static-shaped batches."""
    centres = rng.normal(0, 2.0, (CLASSES, FEATURES)).astype(np.float32)
    y = rng.integers(0, CLASSES, batches * BATCH).astype(np.int32)
    x = centres[y] + rng.normal(0, 1.0, (batches * BATCH, FEATURES)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000, seed=0)
    return ds.batch(BATCH, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def main(lr=0.2):
    rng = np.random.default_rng(0)
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()

    infeed = ipu.ipu_infeed_queue.IPUInfeedQueue(dataset(rng, STEPS))
    outfeed = ipu.ipu_outfeed_queue.IPUOutfeedQueue()
    w = tf.Variable(rng.normal(0, 0.1, (FEATURES, CLASSES)).astype(np.float32))
    b = tf.Variable(np.zeros(CLASSES, np.float32))

    def step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.matmul(x, w) + b
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
        return outfeed.enqueue(loss)

    def training_loop():
        return ipu.loops.repeat(STEPS, step, infeed_queue=infeed)

    start = time.perf_counter()
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        ipu.ipu_compiler.compile(training_loop)
    losses = outfeed.dequeue().numpy()
    print(f"{STEPS} steps on the emulated IPU in {time.perf_counter() - start:.2f} s: "
          f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
    ipu.config.reset_ipu_configuration()
    return losses


if __name__ == "__main__":
    main()
