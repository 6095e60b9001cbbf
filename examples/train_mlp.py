"""Train a small MLP classifier with the TF-shaped core: Variables, GradientTape, nn ops.

Runs on the GPU through CuPy when one is present, else on the CPU (numpy + Numba).
    python examples/train_mlp.py
"""

import time

import numpy as np

import ipu_gpu as tf


def make_data(rng, n=2048, features=32, classes=4):
    centres = rng.normal(0, 2.0, (classes, features)).astype(np.float32)
    labels = rng.integers(0, classes, n).astype(np.int32)
    x = centres[labels] + rng.normal(0, 1.0, (n, features)).astype(np.float32)
    return tf.constant(x), tf.constant(labels)


def dense(rng, fan_in, fan_out):
    w = rng.normal(0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)).astype(np.float32)
    return tf.Variable(w), tf.Variable(np.zeros(fan_out, np.float32))


def main(steps=200, lr=0.1):
    rng = np.random.default_rng(0)
    x, y = make_data(rng)
    params = [*dense(rng, 32, 64), *dense(rng, 64, 64), *dense(rng, 64, 4)]
    start = time.perf_counter()
    for step in range(steps):
        with tf.GradientTape() as tape:
            h = x
            for i in range(0, len(params), 2):
                h = tf.nn.bias_add(tf.matmul(h, params[i]), params[i + 1])
                if i + 2 < len(params):
                    h = tf.nn.relu(h)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, h))
        grads = tape.gradient(loss, params)
        for p, g in zip(params, grads):
            p.assign_sub(lr * g)
        if step % 50 == 0 or step == steps - 1:
            accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(h, axis=1, output_type=tf.int32),
                                                       y), tf.float32))
            print(f"step {step:4d}  loss {float(loss):.4f}  accuracy {float(accuracy):.3f}")
    print(f"backend {tf.backend_name()}, {steps} steps in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
