"""The smaller examples (examples/ipu_train.py, train_mlp.py) keep working and learning."""

import os
import pathlib
import runpy
import subprocess
import sys

import numpy as np

EXAMPLES = pathlib.Path(__file__).parents[1] / "examples"


def _load(name):
    return runpy.run_path(str(EXAMPLES / name), run_name="example")


def test_ipu_program_runs_unmodified_and_trains():
    """The example imports tensorflow: `ipu-gpu run` (here `python -m ipu_gpu`) runs it."""
    env = {k: v for k, v in os.environ.items() if k not in ("IPU_GPU_BACKEND", "TF_POPLAR_FLAGS")}
    r = subprocess.run([sys.executable, "-m", "ipu_gpu", str(EXAMPLES / "ipu_train.py")],
                       capture_output=True, text=True, timeout=300, env=env,
                       cwd=EXAMPLES.parent)
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip().splitlines()[-1]
    assert "50 steps on the emulated IPU" in line
    first, last = (float(v) for v in line.split("loss ")[1].split(" -> "))
    assert last < 0.1 * first


def test_ipu_program_under_the_aliases_in_process(fresh_ipu_system, capsys):
    from ipu_gpu import aliases

    with aliases.installed():
        losses = _load("ipu_train.py")["main"]()
    assert losses.shape == (50,) and losses.dtype == np.float32
    assert losses[-1] < 0.1 * losses[0]
    assert "steps on the emulated IPU" in capsys.readouterr().out


def test_mlp_example_trains(capsys):
    _load("train_mlp.py")["main"](steps=60)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("step")]
    first, last = (float(ln.split("loss")[1].split()[0]) for ln in (lines[0], lines[-1]))
    assert last < 0.5 * first
