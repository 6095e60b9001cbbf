"""tests/programs/tf1_ipu_estimator_cnn.py (Graphcore's ipuestimator tutorial shape: a Keras
Sequential CNN in the model_fn, IPULoggingTensorHook, train/evaluate/predict/resume) runs
unmodified through `ipu-gpu run`; its per-step losses, evaluation and predictions equal the
same CNN trained with plain gradient descent by real TensorFlow (eager, tf.nn ops) and by a
plain ipu_gpu TF1 Session loop, on the same data and initial weights."""

import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "programs")
SEED, K = 42, 3


def _run(model_dir, *argv):
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", "tf1_ipu_estimator_cnn.py",
                        "--model-dir", str(model_dir), *map(str, argv)], cwd=PROGRAMS, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # tf.logging at INFO prints as TF 1.15's handler does: the hook's losses, the checkpoints
    assert "INFO:tensorflow:loss = " in r.stderr
    assert "INFO:tensorflow:Saving checkpoints for 6 into " in r.stderr
    return dict(line.split(" ", 1) for line in r.stdout.strip().splitlines())


def _data():
    """The program's data and initial weights (same generator calls)."""
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((48, 8, 8, 3)).astype(np.float32)
    y = (x.mean(axis=(1, 2)).argmax(axis=1)).astype(np.int32)
    k1 = (rng.standard_normal((3, 3, 3, 4)) * 0.3).astype(np.float32)
    k2 = (rng.standard_normal((64, K)) * 0.3).astype(np.float32)
    return x, y, k1, k2


def _batches(x, y, n, steps):
    for s in range(steps):
        idx = np.arange(s * n, (s + 1) * n) % len(x)
        yield x[idx], y[idx]


def _real_tf_training(tf, steps, n, lr=0.05):
    """Real TensorFlow: the CNN (conv 3x3 same + bias, relu, 2x2 max pool, flatten, dense)
    trained by plain gradient descent; returns the losses and a logits function."""
    x, y, k1, k2 = _data()
    weights = [tf.Variable(k1), tf.Variable(tf.zeros(4)), tf.Variable(k2),
               tf.Variable(tf.zeros(K))]

    def logits(xb):
        h = tf.nn.relu(tf.nn.conv2d(xb, weights[0], 1, "SAME") + weights[1])
        h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        return tf.matmul(tf.reshape(h, [xb.shape[0], -1]), weights[2]) + weights[3]

    def loss_of(xb, yb):
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits(xb)))

    losses = []
    for xb, yb in _batches(x, y, n, steps):
        with tf.GradientTape() as tape:
            loss = loss_of(xb, yb)
        grads = tape.gradient(loss, weights)
        for w, g in zip(weights, grads):
            w.assign_sub(lr * g)
        losses.append(float(loss))
    return np.array(losses), lambda xb: logits(xb).numpy(), loss_of


def _session_loop_losses(steps, n, lr=0.05):
    """The same model_fn body built in a plain ipu_gpu TF1 graph, trained by sess.run."""
    import ipu_gpu.compat.v1 as v1
    from ipu_gpu import keras

    x, y, k1, k2 = _data()
    with v1.Graph().as_default():
        xp = v1.placeholder(v1.float32, [n, 8, 8, 3])
        yp = v1.placeholder(v1.int32, [n])
        model = keras.Sequential([
            keras.layers.Conv2D(4, (3, 3), padding="same",
                                kernel_initializer=v1.constant_initializer(k1)),
            keras.layers.Activation("relu"), keras.layers.MaxPooling2D(pool_size=(2, 2)),
            keras.layers.Flatten(),
            keras.layers.Dense(K, kernel_initializer=v1.constant_initializer(k2))])
        loss = v1.losses.sparse_softmax_cross_entropy(labels=yp, logits=model(xp))
        train = v1.train.GradientDescentOptimizer(lr).minimize(loss)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            return np.array([sess.run([loss, train], {xp: xb, yp: yb})[0]
                             for xb, yb in _batches(x, y, n, steps)])


@pytest.mark.slow
@pytest.mark.parametrize("replicas", [1, 2])
def test_ipu_estimator_program_equals_plain_training(tmp_path, real_tf, replicas):
    out = _run(tmp_path, "--replicas", replicas)
    n = 4 * replicas
    losses = np.array(out["losses"].split(), float).reshape(6, replicas).mean(axis=1)
    want, logits, loss_of = _real_tf_training(real_tf, 6, n)
    np.testing.assert_allclose(losses, want, rtol=2e-5, atol=2e-6)
    if replicas == 1:
        np.testing.assert_allclose(losses, _session_loop_losses(6, n), rtol=1e-6, atol=1e-6)
    assert out["global_step"].split()[-1] == "8"  # 6 steps, then 2 resumed
    x, y, _, _ = _data()
    evaluated = (48 // n) - (48 // n) % 2
    xe, ye = x[:evaluated * n], y[:evaluated * n]
    loss, acc, step = out["eval"].split()[1::2]
    np.testing.assert_allclose(float(loss), float(loss_of(xe, ye)), rtol=2e-5)
    np.testing.assert_allclose(float(acc), np.mean(logits(xe).argmax(1) == ye), rtol=1e-6)
    assert step == "6"
    # 8 predictions: examples, or with replicas each replica's batch, as Graphcore's
    m = 8 if replicas == 1 else 8 * 4
    assert out["predicted"].split() == [str(c) for c in logits(x[:m]).argmax(1)]
    # the resumed call continues from the checkpoint with the input started again
    resumed = np.array(out["resumed"].split(), float).reshape(2, replicas).mean(axis=1)
    x2, y2 = x[:2 * n], y[:2 * n]
    for (xb, yb), got in zip(_batches(x2, y2, n, 2), resumed):
        np.testing.assert_allclose(got, float(loss_of(xb, yb)), rtol=2e-5, atol=2e-6)
        break  # the first resumed loss is before any update of the resumed call
