"""tests/programs/tf2_ipu_pipeline_estimator.py (Graphcore's TF2 pipeline-estimator tutorial
shape: Keras layers in two stages, tf.keras.losses in the last, two shards) runs unmodified
through `ipu-gpu run`; its evaluation after training equals real TensorFlow's computation of
the same pipelined training (per execution, the gradients of the gradient_accumulation_count
micro-batches summed at the same weights, then one gradient-descent step)."""

import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_pipeline_estimator_program_equals_real_tf(tmp_path, real_tf):
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run",
                        "tf2_ipu_pipeline_estimator.py", "--model-dir", str(tmp_path)],
                       cwd=os.path.join(ROOT, "tests", "programs"), env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = dict(line.split(" ", 1) for line in r.stdout.strip().splitlines())
    assert out["global_step"] == "12"
    tf = real_tf
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 8, 8, 3)).astype(np.float32)
    y = (x.mean(axis=(1, 2)).argmax(axis=1)).astype(np.int32)
    k1 = (rng.standard_normal((3, 3, 3, 4)) * 0.3).astype(np.float32)
    k2 = (rng.standard_normal((256, 3)) * 0.1).astype(np.float32)
    weights = [tf.Variable(k1), tf.Variable(tf.zeros(4)), tf.Variable(k2),
               tf.Variable(tf.zeros(3))]

    def logits(xb):
        h = tf.nn.relu(tf.nn.conv2d(xb, weights[0], 1, "SAME") + weights[1])
        return tf.matmul(tf.reshape(h, [xb.shape[0], -1]), weights[2]) + weights[3]

    def loss_of(xb, yb):
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(yb, logits(xb)))

    batch, ga = 4, 4
    for execution in range(3):
        total = [tf.zeros_like(w) for w in weights]
        for m in range(ga):
            i = (execution * ga + m) * batch
            with tf.GradientTape() as tape:
                loss = loss_of(x[i:i + batch], y[i:i + batch])
            total = [t + g for t, g in zip(total, tape.gradient(loss, weights))]
        for w, g in zip(weights, total):
            w.assign_sub(0.05 * g)
    loss, _, acc = out["eval"].split()[1:]
    np.testing.assert_allclose(float(loss), float(loss_of(x, y)), rtol=2e-5)
    np.testing.assert_allclose(float(acc), np.mean(logits(x).numpy().argmax(1) == y),
                               rtol=1e-6)
