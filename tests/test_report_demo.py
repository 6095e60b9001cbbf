"""The three demo programs (examples/demo_keras.py, demo_tf1.py, demo_poptorch.py) run for
one epoch through `ipu-gpu run --report DIR`: the report's numbers are the ones the run
printed (its summary, and the loss the program's own progress output showed last), the page
shows them and references its PNGs, each PNG decodes at the figure size, and `ipu-gpu
report DIR` prints the same summary."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("sklearn")
from matplotlib import image as mpimg  # noqa: E402

from ipu_gpu import cli  # noqa: E402
from ipu_gpu.report import figures, summary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _constants(name: str) -> dict:
    """The demo's upper-case int constants (``BATCH_SIZE = 8``)."""
    source = (EXAMPLES / name).read_text()
    return {k: int(v) for k, v in re.findall(r"^([A-Z_]+) = (\d+)\b", source, re.M)}


class Demo:
    def __init__(self, tmp: Path, name: str):
        env = {k: v for k, v in os.environ.items()
               if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS",
                            "IPU_GPU_REPORT_DIR")}
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env["OMP_NUM_THREADS"] = "1"  # as tests/test_demo_programs.py: torch's pool spins
        self.proc = subprocess.run(
            [sys.executable, "-m", "ipu_gpu.cli", "run", "--report", "report",
             str(EXAMPLES / name), "--epochs", "1"],
            cwd=tmp, env=env, capture_output=True, text=True, timeout=900)
        assert self.proc.returncode == 0, self.proc.stderr[-3000:]
        self.tmp = tmp
        self.dir = tmp / "report"
        self.lines = self.proc.stdout.splitlines()
        self.summary = json.loads((self.dir / "summary.json").read_text())
        self.page = (self.dir / "report.html").read_text()
        self.constants = _constants(name)


@pytest.fixture(scope="module")
def keras_demo(tmp_path_factory):
    return Demo(tmp_path_factory.mktemp("demo_keras"), "demo_keras.py")


@pytest.fixture(scope="module")
def tf1_demo(tmp_path_factory):
    return Demo(tmp_path_factory.mktemp("demo_tf1"), "demo_tf1.py")


@pytest.fixture(scope="module")
def poptorch_demo(tmp_path_factory):
    return Demo(tmp_path_factory.mktemp("demo_poptorch"), "demo_poptorch.py")


@pytest.mark.parametrize("which", ["keras_demo", "tf1_demo", "poptorch_demo"])
def test_the_report_is_what_the_run_printed(which, request, capsys):
    demo = request.getfixturevalue(which)
    s = demo.summary
    expected = summary.text(s, os.path.join("report", "report.html")).splitlines()
    assert demo.lines[-len(expected):] == expected
    assert demo.lines[-1] == "ipu-gpu: report written to report/report.html"
    for label, value in summary.fields(s):
        assert f"<th>{html.escape(label)}</th><td>{html.escape(value)}</td>" in demo.page
    w, h = figures.SIZE
    for name in figures.NAMES:
        assert f'<img src="{name}" width="{w}" height="{h}"' in demo.page
        assert mpimg.imread(demo.dir / name).shape[:2] == (h, w)
    assert s["recorder_errors"] == [] and s["exit_status"] == 0
    assert s["throughput"]["total"] > 0 and s["loss"]["final"] is not None
    assert cli.main(["report", str(demo.dir)]) == 0
    assert capsys.readouterr().out.splitlines() == summary.text(
        s, os.path.join(str(demo.dir), "report.html")).splitlines()


def _last(pattern: str, text: str) -> float:
    found = re.findall(pattern, text)
    assert found, pattern
    return float(found[-1])


def test_keras_demo_loss_is_the_progress_bars(keras_demo):
    s = keras_demo.summary
    # the epoch's last progress line: "88/88 [===] - 6s 70ms/step - loss: 1.8527 - ..."
    shown = _last(r"- loss: ([0-9.]+)[^\n\r]* samples/s", keras_demo.proc.stdout)
    assert round(s["loss"]["final"], 4) == shown
    assert s["loss"]["sources"] == ["keras"]
    c = keras_demo.constants
    assert s["throughput"]["replicas"] == c["REPLICAS"]
    _check_memory(s)


def test_tf1_demo_losses_and_samples_are_the_programs(tf1_demo):
    s = tf1_demo.summary
    c = tf1_demo.constants
    losses = [v for _, _, v in s["series"]["loss"]]
    assert len(losses) % c["ITERATIONS"] == 0
    last_run = losses[-c["ITERATIONS"]:]  # the tqdm bar shows each run's mean loss
    assert round(sum(last_run) / len(last_run), 4) == _last(r"loss=([0-9.]+)",
                                                            tf1_demo.proc.stderr)
    # training runs only (the inference loop's infeed is left out)
    assert s["throughput"]["samples"] == len(losses) * c["REPLICAS"] * c["BATCH_SIZE"]
    assert s["throughput"]["replicas"] == c["REPLICAS"]
    _check_memory(s)


def test_poptorch_demo_loss_and_samples_are_the_programs(poptorch_demo):
    s = poptorch_demo.summary
    c = poptorch_demo.constants
    assert round(s["loss"]["final"], 4) == _last(r"loss=([0-9.]+)", poptorch_demo.proc.stderr)
    combined = (c["DEVICE_ITERATIONS"] * c["REPLICAS"] * c["GRADIENT_ACCUMULATION"]
                * c["BATCH_SIZE"])
    calls = len(s["series"]["loss"])
    assert s["throughput"]["samples"] == calls * combined
    assert s["steps"] == calls * c["DEVICE_ITERATIONS"]


def _check_memory(s):
    assert s["memory"]
    for m in s["memory"]:
        assert 0 < m["peak_bytes"] <= m["capacity_bytes"]
