"""`ipu-gpu run --report DIR` on small Keras (IPUStrategy fit), TF 1 (infeed, loops.repeat,
outfeed, Session) and PopTorch (trainingModel then inferenceModel) programs: the report
files exist, the page references each PNG and shows the numbers of summary.json, which are
the numbers the run printed last; the losses are the ones the program itself saw; the
samples are the ones the program consumed; each PNG decodes at the figure size;
`ipu-gpu report DIR` reprints the same summary; without --report nothing is recorded."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
from matplotlib import image as mpimg  # noqa: E402

from ipu_gpu.emulation import topology  # noqa: E402
from ipu_gpu.report import figures, summary  # noqa: E402

ROOT = str(Path(__file__).resolve().parents[1])
IPU_MEMORY = topology.version_info("ipu2")["memory_bytes"]

KERAS = """
import numpy as np
import tensorflow as tf
from tensorflow.python import ipu

config = ipu.config.IPUConfig()
config.auto_select_ipus = 2
config.configure_ipu_system()
rng = np.random.default_rng(0)
x = rng.standard_normal((256, 8)).astype(np.float32)
y = (x @ rng.standard_normal((8, 1))).astype(np.float32)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16, drop_remainder=True).repeat()
strategy = ipu.ipu_strategy.IPUStrategy()
with strategy.scope():
    tf.random.set_seed(1)
    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse", steps_per_execution=2)
    history = model.fit(ds, epochs=3, steps_per_epoch=8, verbose=0)
print("losses", " ".join(repr(v) for v in history.history["loss"]))
"""

TF1 = """
import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.python import ipu
from tensorflow.python.ipu import ipu_compiler, ipu_infeed_queue, ipu_outfeed_queue, loops
from tensorflow.python.ipu import scopes

tf.disable_v2_behavior()
rng = np.random.default_rng(11)
features = rng.standard_normal((1024, 5)).astype(np.float32)
targets = (features @ np.array([[1.0], [-2.0], [0.5], [0.0], [3.0]], np.float32))
dataset = tf.data.Dataset.from_tensor_slices((features, targets.astype(np.float32)))
dataset = dataset.batch(8, drop_remainder=True).repeat()
infeed_queue = ipu_infeed_queue.IPUInfeedQueue(dataset)
outfeed_queue = ipu_outfeed_queue.IPUOutfeedQueue()


def training_step(x, y):
    weights = tf.Variable(tf.zeros([5, 1]), name="weights")
    loss = tf.reduce_mean(tf.square(tf.matmul(x, weights) - y))
    optimizer = ipu.optimizers.CrossReplicaOptimizer(tf.train.GradientDescentOptimizer(0.1))
    return outfeed_queue.enqueue(loss), optimizer.minimize(loss)


def training_loop():
    return loops.repeat(4, training_step, [], infeed_queue)


with scopes.ipu_scope("/device:IPU:0"):
    compiled_loop = ipu_compiler.compile(training_loop, [])
dequeue_losses = outfeed_queue.dequeue()
config = ipu.config.IPUConfig()
config.auto_select_ipus = 2
config.configure_ipu_system()
with tf.Session() as sess:
    sess.run(infeed_queue.initializer)
    sess.run(tf.global_variables_initializer())
    seen = []
    for execution in range(3):
        sess.run(compiled_loop)
        seen += [float(np.mean(v)) for v in sess.run(dequeue_losses)]
print("losses", " ".join(repr(v) for v in seen))
"""

POPTORCH = """
import torch
import poptorch

torch.manual_seed(0)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, x, labels=None):
        out = self.fc(x)
        return out if labels is None else (out, self.loss(out, labels))


x = torch.randn(64, 8)
labels = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
opts = poptorch.Options().deviceIterations(2).replicationFactor(2)
opts.Training.gradientAccumulation(2)
loader = poptorch.DataLoader(opts, torch.utils.data.TensorDataset(x, labels), batch_size=2)
model = Model()
training = poptorch.trainingModel(model, opts,
                                  optimizer=poptorch.optim.SGD(model.parameters(), lr=0.1))
seen = []
for xb, yb in loader:
    _, loss = training(xb, yb)
    seen.append(float(loss.float().mean()))
training.detachFromDevice()
inference = poptorch.inferenceModel(model, poptorch.Options().deviceIterations(4))
inference(x[:16])
print("losses", " ".join(repr(v) for v in seen))
"""


def _env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS",
                        "IPU_GPU_REPORT_DIR")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _cli(*argv, cwd, env_extra=None):
    env = _env()
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "ipu_gpu.cli", *map(str, argv)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)


class Run:
    def __init__(self, tmp, name, source):
        (tmp / f"{name}.py").write_text(textwrap.dedent(source))
        self.dir = tmp / "report"
        self.proc = _cli("run", "--report", "report", f"{name}.py", cwd=tmp)
        assert self.proc.returncode == 0, self.proc.stderr
        self.lines = self.proc.stdout.splitlines()
        self.summary = json.loads((self.dir / "summary.json").read_text())
        self.page = (self.dir / "report.html").read_text()
        self.losses = [float(v) for v in next(line for line in self.lines
                                              if line.startswith("losses ")).split()[1:]]


@pytest.fixture(scope="module")
def keras_run(tmp_path_factory):
    return Run(tmp_path_factory.mktemp("keras"), "keras_fit", KERAS)


@pytest.fixture(scope="module")
def tf1_run(tmp_path_factory):
    return Run(tmp_path_factory.mktemp("tf1"), "tf1_loop", TF1)


@pytest.fixture(scope="module")
def poptorch_run(tmp_path_factory):
    return Run(tmp_path_factory.mktemp("poptorch"), "poptorch_train", POPTORCH)


RUNS = ["keras_run", "tf1_run", "poptorch_run"]


@pytest.mark.parametrize("which", RUNS)
def test_the_report_files_and_the_pngs_at_the_figure_size(which, request):
    run = request.getfixturevalue(which)
    for name in ("report.html", "summary.json", "run.json", *figures.NAMES):
        assert (run.dir / name).is_file(), name
    w, h = figures.SIZE
    for name in figures.NAMES:
        assert f'<img src="{name}" width="{w}" height="{h}"' in run.page
        pixels = mpimg.imread(run.dir / name)
        assert pixels.shape[:2] == (h, w), name
    assert run.summary["figures"] == list(figures.NAMES)
    assert run.summary["recorder_errors"] == []


@pytest.mark.parametrize("which", RUNS)
def test_printed_summary_is_summary_json_and_is_on_the_page(which, request):
    run = request.getfixturevalue(which)
    expected = summary.text(run.summary, os.path.join("report", "report.html")).splitlines()
    assert run.lines[-len(expected):] == expected
    assert run.lines[-1] == "ipu-gpu: report written to report/report.html"
    for label, value in summary.fields(run.summary):
        assert f"<th>{html.escape(label)}</th><td>{html.escape(value)}</td>" in run.page
    t = run.summary["throughput"]
    assert f"{t['total']:.1f} samples/s total" in run.lines[-4]
    assert (f"{t['per_replica']:.1f} samples/s per replica (2 replicas; after the first "
            "execution, which compiles)") in run.lines[-4]
    assert f"{run.summary['loss']['final']:.6f}" in run.lines[-3]


@pytest.mark.parametrize("which", RUNS)
def test_ipu_gpu_report_reprints_the_summary(which, request):
    run = request.getfixturevalue(which)
    r = _cli("report", "report", cwd=run.dir.parent)
    assert r.returncode == 0, r.stderr
    expected = summary.text(run.summary, os.path.join("report", "report.html"))
    assert r.stdout.splitlines() == expected.splitlines()
    assert run.lines[-len(r.stdout.splitlines()):] == r.stdout.splitlines()


def test_keras_losses_samples_and_memory(keras_run):
    s = keras_run.summary
    # logs['loss'] after each execution; the last of an epoch is history's value
    assert s["loss"]["sources"] == ["keras"] and s["loss"]["points"] == 6
    assert s["loss"]["final"] == keras_run.losses[-1]
    assert s["steps"] == 12 and s["executions"] == 6
    t = s["throughput"]
    assert t["samples"] == 3 * 8 * 16 and t["replicas"] == 2
    assert t["measured_samples"] == t["samples"] - 2 * 2 * 16
    assert t["total"] == pytest.approx(t["measured_samples"] / t["seconds"])
    assert t["per_replica"] == pytest.approx(t["total"] / 2)
    _check_memory(s, ipus=2)


def test_tf1_losses_are_the_outfeeds_and_samples_the_infeeds(tf1_run):
    s = tf1_run.summary
    assert s["loss"]["sources"] == ["outfeed"] and s["loss"]["points"] == 12
    assert s["loss"]["final"] == pytest.approx(tf1_run.losses[-1], rel=1e-12)
    assert s["loss"]["first"] == pytest.approx(tf1_run.losses[0], rel=1e-12)
    assert s["steps"] == 12 and s["executions"] == 3
    t = s["throughput"]
    assert t["samples"] == 3 * 4 * 8 * 2 and t["measured_samples"] == 2 * 4 * 8 * 2
    _check_memory(s, ipus=2)
    for m in s["memory"]:  # each replica's copy of the graph's one [5, 1] float32 variable
        assert m["variable_bytes"] == 5 * 4 and m["optimizer_bytes"] == 0
        assert m["peak_bytes"] > m["variable_bytes"]


def test_poptorch_losses_and_combined_batches(poptorch_run):
    s = poptorch_run.summary
    calls = 64 // (2 * 2 * 2 * 2)
    assert s["loss"]["sources"] == ["poptorch"] and s["loss"]["points"] == calls
    assert s["loss"]["final"] == pytest.approx(poptorch_run.losses[-1], rel=1e-6)
    assert s["steps"] == 2 * calls and s["executions"] == calls + 1  # + the inference call
    t = s["throughput"]
    assert t["samples"] == 64 and t["measured_samples"] == 64 - 16 and t["replicas"] == 2
    # each replica's IPU holds Linear(8, 4)'s parameters and, training with SGD, their
    # gradients (no optimizer state), and the activations of a micro-batch
    _check_memory(s, ipus=2)
    params = (8 * 4 + 4) * 4
    for m in s["memory"]:
        assert m["variable_bytes"] == params and m["optimizer_bytes"] == params
        assert m["peak_bytes"] > 2 * params


def _check_memory(s, ipus):
    assert len(s["memory"]) == ipus
    for m in s["memory"]:
        assert m["capacity_bytes"] == IPU_MEMORY
        assert 0 < m["peak_bytes"] <= m["capacity_bytes"]
        assert m["peak_fraction"] == m["peak_bytes"] / m["capacity_bytes"]


def test_a_failing_program_still_gets_its_report_in_the_default_folder(tmp_path):
    (tmp_path / "fails.py").write_text("print('working')\nraise SystemExit(3)\n")
    r = _cli("run", "--report", "fails.py", cwd=tmp_path)
    assert r.returncode == 3, r.stderr
    folder = tmp_path / "reports" / "fails"
    s = json.loads((folder / "summary.json").read_text())
    assert s["exit_status"] == 3 and s["executions"] == 0 and s["loss"]["final"] is None
    assert r.stdout.splitlines()[0] == "working"
    assert r.stdout.splitlines()[-1] == (
        f"ipu-gpu: report written to {os.path.join('reports', 'fails', 'report.html')}")
    assert "throughput: not measured" in r.stdout


def test_the_environment_variable_asks_for_a_report(tmp_path):
    (tmp_path / "quiet.py").write_text("pass\n")
    r = _cli("run", "quiet.py", cwd=tmp_path, env_extra={"IPU_GPU_REPORT_DIR": "envdir"})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "envdir" / "report.html").is_file()
    assert r.stdout.splitlines()[-1] == "ipu-gpu: report written to envdir/report.html"


def test_without_report_nothing_is_recorded(tmp_path):
    (tmp_path / "probe.py").write_text(textwrap.dedent("""
        import sys
        import numpy as np
        import tensorflow as tf
        from tensorflow.python import ipu
        from ipu_gpu.emulation import observe

        config = ipu.config.IPUConfig()
        config.auto_select_ipus = 1
        config.configure_ipu_system()
        strategy = ipu.ipu_strategy.IPUStrategy()
        print(float(strategy.run(lambda: tf.reduce_sum(tf.ones([4])))))
        print(observe.observer, "ipu_gpu.report" in sys.modules)
    """))
    r = _cli("run", "probe.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["4.0", "None False"]
    assert not (tmp_path / "reports").exists()


def test_report_of_a_folder_without_one_is_a_usage_error(tmp_path):
    r = _cli("report", tmp_path, cwd=tmp_path)
    assert r.returncode == 2 and "holds no report" in r.stderr
