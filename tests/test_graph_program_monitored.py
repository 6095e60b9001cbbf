"""A TF 1.15-style script (tests/programs/tf1_monitored_training.py: a one-shot iterator's
get_next feeding a Keras layer on graph tensors, a Keras Adam minimize building the update,
MonitoredTrainingSession with StopAtStepHook and checkpoints, a second session restoring
the first) runs unmodified under `ipu-gpu run` and prints the losses real TensorFlow prints
running the same file."""

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


def _env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _losses(stdout: str) -> list:
    lines = [line.split() for line in stdout.splitlines() if line.startswith("step ")]
    return [(int(s), float(v)) for _, s, v in lines]


def _ours(model_dir):
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run",
                        "tf1_monitored_training.py", str(model_dir)], cwd=PROGRAMS,
                       env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().endswith("done")
    return _losses(r.stdout)


@pytest.mark.slow  # a subprocess importing ipu_gpu; the features have fast unit tests
def test_tf1_monitored_script_runs_under_ipu_gpu_run(tmp_path):
    losses = _ours(tmp_path / "model")
    # the first session stops at global step 4, the second restores it and stops at 7
    assert [s for s, _ in losses] == [4] * 4 + [7] * 3
    assert losses[-1][1] < losses[0][1]
    assert sorted(os.listdir(tmp_path / "model"))[0] == "checkpoint"


@pytest.mark.slow
def test_tf1_monitored_script_prints_what_real_tensorflow_prints(tmp_path):
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("the reference TensorFlow is not installed")
    r = subprocess.run([sys.executable, "tf1_monitored_training.py", str(tmp_path / "tf")],
                       cwd=PROGRAMS,
                       env=_env(TF_USE_LEGACY_KERAS="1", TF_ENABLE_ONEDNN_OPTS="0",
                                TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES=""),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    theirs, ours = _losses(r.stdout), _ours(tmp_path / "ours")
    assert [s for s, _ in ours] == [s for s, _ in theirs]
    np.testing.assert_allclose([v for _, v in ours], [v for _, v in theirs], rtol=1e-4,
                               atol=2e-5)
