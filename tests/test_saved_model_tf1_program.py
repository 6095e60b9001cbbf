"""The TF1 SavedModel program (tests/programs/tf1_saved_model.py) through `ipu-gpu run`:
its IPU training losses equal numpy's SGD, its predictions equal numpy's model, the
SavedModels it writes and reloads give the same predictions, and this (fresh) process loads
them again to the same numbers."""

import os
import subprocess
import sys

import numpy as np
import pytest

from ipu_gpu.compat import v1 as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _numpy_reference():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((64, 3)).astype(np.float32)
    y = x.astype(np.float64) @ np.array([[1.0], [-2.0], [0.5]]) + 0.25
    w, b, losses = np.zeros((3, 1)), 0.0, []
    for step in range(16):
        xb, yb = x[step * 8 % 64:][:8].astype(np.float64), y[step * 8 % 64:][:8]
        err = xb @ w + b - yb
        losses.append(np.mean(err ** 2))
        w, b = w - 0.1 * 2 * xb.T @ err / 8, b - 0.1 * 2 * err.mean()
    return np.array(losses), (x[:4] @ w + b).ravel(), x[:4]


@pytest.mark.slow  # a subprocess; the API is tested fast by test_saved_model_tf1.py
def test_tf1_saved_model_program(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("IPU_GPU_BACKEND", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run",
                        os.path.join(ROOT, "tests", "programs", "tf1_saved_model.py"),
                        str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    lines = {}
    for line in r.stdout.strip().splitlines():  # "<tag> [<kind or execution>] <values>"
        words = line.split()
        n = 1 if words[0] == "before" else 2
        lines[" ".join(words[:n])] = np.float64(words[n:])
    losses, predictions, probe = _numpy_reference()
    got = np.concatenate([lines["losses 0"], lines["losses 1"]])
    np.testing.assert_allclose(got, losses, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(lines["before"], predictions, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(lines["after simple"], lines["before"])
    np.testing.assert_array_equal(lines["after builder"], lines["before"])
    for kind, tags in (("simple", ["serve"]), ("builder", ["ipu", "serve"])):
        with tf.Graph().as_default(), tf.Session() as sess:
            tf.saved_model.loader.load(sess, tags, str(tmp_path / kind / "1"))
            out = sess.run("prediction:0", {"serving_input:0": probe}).ravel()
        np.testing.assert_allclose(out, lines["before"], rtol=0, atol=1e-6)
