"""The three programs `make demo` runs (examples/demo_keras.py, demo_tf1.py, demo_poptorch.py)
train on scikit-learn's digits through ``ipu-gpu run``, unmodified and with no TensorFlow:
a ``tensorflow``, ``keras`` and ``tf_keras`` that raise on import come first on the path, so
a program (or a package it imports) reaching for the real ones fails the run.

Each prints its held-out accuracy on the same 352 digits and its throughput; the programs are
seeded, so the accuracy at a given size is fixed. Measured here: at ``--epochs 2`` Keras
89.77%, TF1 89.49%, PopTorch 83.24%; at the defaults 96.02%, 96.59%, 94.03%. The thresholds
sit several points below (another CPU may round the sums differently, not by that much).

The subprocesses run with one OpenMP thread: PyTorch's OpenMP pool spin-waits, and on a
loaded 2-core machine that makes a micro-batch of these tiny models 20x slower.
"""

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
HELD_OUT = 352

ACCURACY = re.compile(r"^held-out accuracy: (\d+\.\d\d)% \((\d+) digits\)", re.M)
THROUGHPUT = re.compile(
    r"^throughput: (\d+) samples/s per replica, (\d+) samples/s total \((\d) replicas", re.M)

_SHADOW = "raise ImportError('the demo imported the real {name}')\n"


def _no_tensorflow(tmp_path) -> Path:
    """A folder of ``tensorflow``/``keras``/``tf_keras`` packages that refuse to import."""
    shadow = tmp_path / "shadow"
    for name in ("tensorflow", "keras", "tf_keras"):
        (shadow / name).mkdir(parents=True)
        (shadow / name / "__init__.py").write_text(_SHADOW.format(name=name))
    return shadow


def run_demo(name, tmp_path, *args):
    """``ipu-gpu run --report report examples/NAME args`` in ``tmp_path``: the process."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS",
                        "IPU_GPU_REPORT_DIR")}
    env.update(PYTHONPATH=os.pathsep.join([str(_no_tensorflow(tmp_path)), str(ROOT)]),
               OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", "--report", "report",
                        str(EXAMPLES / name), *args],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


class Demo:
    """One run of a demo at ``--epochs 2``, its output and its report folder."""

    def __init__(self, tmp: Path, name: str):
        self.proc = run_demo(name, tmp, "--epochs", "2")
        self.stdout = self.proc.stdout
        self.dir = tmp / "report"
        self.lines = self.stdout.splitlines()
        self.summary = json.loads((self.dir / "summary.json").read_text())
        self.page = (self.dir / "report.html").read_text()
        self.constants = _constants(name)


def _constants(name: str) -> dict:
    """The demo's upper-case int constants (``BATCH_SIZE = 8``)."""
    source = (EXAMPLES / name).read_text()
    return {k: int(v) for k, v in re.findall(r"^([A-Z_]+) = (\d+)\b", source, re.M)}


@pytest.fixture(scope="module")
def keras_demo(tmp_path_factory):
    return Demo(tmp_path_factory.mktemp("demo_keras"), "demo_keras.py")


@pytest.fixture(scope="module")
def tf1_demo(tmp_path_factory):
    return Demo(tmp_path_factory.mktemp("demo_tf1"), "demo_tf1.py")


@pytest.fixture(scope="module")
def poptorch_demo(tmp_path_factory):
    return Demo(tmp_path_factory.mktemp("demo_poptorch"), "demo_poptorch.py")


def parse(stdout):
    """(accuracy in [0, 1], per-replica and total samples/s, replicas) the program printed."""
    accuracy = ACCURACY.search(stdout)
    throughput = THROUGHPUT.search(stdout)
    assert accuracy and throughput, stdout[-2000:]
    percent, digits = float(accuracy.group(1)), int(accuracy.group(2))
    assert digits == HELD_OUT
    # a whole number of the 352 digits is right (the percentage is rounded to 0.005)
    assert abs(percent * HELD_OUT / 100 - round(percent * HELD_OUT / 100)) <= 0.0176
    per_replica, total, replicas = (int(g) for g in throughput.groups())
    assert per_replica > 0 and abs(per_replica * replicas - total) <= replicas
    return percent / 100, per_replica, total, replicas


@pytest.mark.parametrize("which, replicas, threshold", [
    ("keras_demo", 2, 0.85),
    ("tf1_demo", 4, 0.85),
    ("poptorch_demo", 2, 0.75),
])
def test_demo_program_trains_on_digits(which, replicas, threshold, request):
    demo = request.getfixturevalue(which)
    accuracy, _, _, printed_replicas = parse(demo.stdout)
    assert printed_replicas == replicas
    assert accuracy > threshold
    assert (demo.dir / "run.json").is_file()
    assert "report.html" in demo.lines[-1]  # the last line names the report


@pytest.mark.slow
@pytest.mark.parametrize("name", ["demo_keras.py", "demo_tf1.py", "demo_poptorch.py"])
def test_demo_program_default_size_exceeds_90_percent(name, tmp_path):
    assert parse(run_demo(name, tmp_path).stdout)[0] > 0.92


def test_demo_programs_need_only_the_demo_extras():
    """What the programs import besides the aliased names is in pyproject's demo extra."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    demo = " ".join(extras["demo"] + extras["poptorch"] + extras["report"])
    for name in ("demo_keras.py", "demo_tf1.py", "demo_poptorch.py"):
        source = (EXAMPLES / name).read_text()
        for module in re.findall(r"^(?:from|import) (\w+)", source, re.M):
            if module in ("argparse", "time", "numpy", "tensorflow", "poptorch"):
                continue
            package = {"sklearn": "scikit-learn"}.get(module, module)
            assert package in demo, (name, module)


def test_ipu_gpu_check_finds_every_symbol_of_the_demos():
    """``ipu-gpu check`` (what a user runs first) reports nothing missing in the demos."""
    from ipu_gpu import portability

    names = ["demo_keras.py", "demo_tf1.py", "demo_poptorch.py"]
    report = portability.check_files([str(EXAMPLES / n) for n in names])
    assert report.exit_status == 0
    used = {s.name for f in report.files for s in f.symbols}
    assert {"tensorflow.python.ipu.keras.PipelineStage", "poptorch.trainingModel",
            "tensorflow.compat.v1.Session"} <= used, sorted(used)


# The report of each run: its numbers are the ones the run printed (its summary, and the loss
# the program's own progress output showed last); the page shows them and references its
# PNGs, each PNG decodes at the figure size, and `ipu-gpu report DIR` prints the summary.

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
    shown = _last(r"- loss: ([0-9.]+)[^\n\r]* samples/s", keras_demo.stdout)
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
