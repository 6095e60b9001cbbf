"""A TF 1.15-style script (tests/programs/tf1_flags_layers.py: tf.app.flags/tf.app.run,
tf.layers classes, a named loss fetched by name, fused_batch_norm, FtrlOptimizer, streaming
precision/recall/auc) runs unmodified under `ipu-gpu run` and prints what real TensorFlow
prints running the same file."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).with_name("programs")
ROOT = str(Path(__file__).resolve().parents[1])
ARGS = ["--steps", "3", "--nodropout", "extra"]


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _lines(stdout: str) -> list:
    return [line for line in stdout.splitlines()
            if line.startswith(("step ", "metrics ", "args "))]


def _ours():
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", "tf1_flags_layers.py",
                        *ARGS], cwd=PROGRAMS, env=_env(), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return _lines(r.stdout)


@pytest.mark.slow  # a subprocess importing ipu_gpu; the features have fast unit tests
def test_tf1_script_runs_under_ipu_gpu_run():
    lines = _ours()
    assert len(lines) == 5 and lines[-1] == "args ['extra']"
    losses = [float(line.split()[-1]) for line in lines[:3]]
    assert losses[-1] < losses[0]


@pytest.mark.slow
def test_tf1_script_prints_what_real_tensorflow_prints():
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("the reference TensorFlow is not installed")
    r = subprocess.run([sys.executable, "tf1_flags_layers.py", *ARGS], cwd=PROGRAMS,
                       env=_env(TF_USE_LEGACY_KERAS="1", TF_ENABLE_ONEDNN_OPTS="0",
                                TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    theirs, ours = _lines(r.stdout), _ours()
    assert len(ours) == len(theirs) == 5
    for a, b in zip(ours, theirs):
        head_a, head_b = a.split()[:1], b.split()[:1]
        assert head_a == head_b
        if a.startswith("args"):
            assert a == b
            continue
        np.testing.assert_allclose([float(t) for t in a.split()[1:] if _number(t)],
                                   [float(t) for t in b.split()[1:] if _number(t)],
                                   rtol=1e-5, atol=1e-6)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
