"""The run recorder's rules, in process: the engine's spans and per-execution ledger peaks,
which outfeed leaves and fetched tensors are losses, Keras's per-epoch sample counter,
throughput, the figures' pixel sizes, the page without matplotlib, the ledger's window peak
and ``ipu-gpu run``'s ``--report`` parsing."""

from __future__ import annotations

import html as std_html
import json

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import cli
from ipu_gpu.emulation import memory, observe, system
from ipu_gpu.ipu import config, ipu_compiler, scopes
from ipu_gpu.report import Recorder, figures, html, summary
from ipu_gpu.report.recorder import MemorySample
from ipu_gpu.report import write as write_report


@pytest.fixture
def recorder():
    rec = Recorder()
    observe.install(rec)
    yield rec
    observe.uninstall()


def _configure(n):
    cfg = config.IPUConfig()
    cfg.auto_select_ipus = n
    cfg.configure_ipu_system()
    return system.current_system()


def test_engine_runs_give_a_span_per_replica_and_the_ledger_peak(recorder):
    s = _configure(2)
    ipus = s.devices[0].ipus

    def comp():
        a = tf.zeros((1000,), tf.float32)  # 4000 bytes on each replica's IPU
        b = tf.ones((500,), tf.float32)  # 2000 bytes
        del a
        return b

    with scopes.ipu_scope("/device:IPU:0"):
        ipu_compiler.compile(comp)
    assert recorder.executions == 1 and recorder.replicas == 2
    assert sorted((sp.row, sp.replica) for sp in recorder.spans) == [
        (f"IPU {ipus[0].id}", 0), (f"IPU {ipus[1].id}", 1)]
    assert all(0 <= sp.begin <= sp.end for sp in recorder.spans)
    assert sorted(m.ipu for m in recorder.memory) == sorted(i.id for i in ipus)
    for m in recorder.memory:
        assert m.before == 0 and m.peak == 6000 and m.capacity == ipus[0].memory_bytes
    assert recorder.errors == []


def test_no_hook_runs_without_an_observer():
    _configure(1)
    assert observe.observer is None
    with scopes.ipu_scope("/device:IPU:0"):
        out = ipu_compiler.compile(lambda: tf.ones((3,)) * 2.0)
    assert out[0].numpy().tolist() == [2.0, 2.0, 2.0]


def test_ledger_window_peak():
    ledger = memory.MemoryLedger(0, 1000)
    ledger.charge(300)
    ledger.charge(200)
    ledger.release(400)
    assert ledger.take_window_peak() == 500
    assert ledger.take_window_peak() == 100  # the new window starts at the bytes resident
    ledger.charge(50)
    ledger.release(50)
    assert ledger.take_window_peak() == 150 and ledger.peak == 500


class _Runner:
    replication_factor = 2

    def __init__(self):
        self.samples = 0


def test_keras_samples_restart_each_epoch(recorder):
    runner = _Runner()
    for _epoch in range(2):
        runner.samples = 0
        for _ in range(2):
            runner.samples += 64
            recorder.keras_execution({"loss": np.float32(0.5)}, 2, runner)
    assert [n for _, n, _ in recorder.samples] == [64] * 4
    assert recorder.steps == 8 and [p[0] for p in recorder.losses] == [2, 4, 6, 8]
    # one execution per epoch: the count stays at 64 but each execution is new samples
    rec = Recorder()
    for _epoch in range(3):
        runner.samples = 64
        rec.keras_execution({"loss": 1.0}, 4, runner)
    assert [n for _, n, _ in rec.samples] == [64, 64, 64]


def test_outfeed_loss_rules(recorder):
    steps = np.array([[1.0, 3.0], [5.0, 7.0]], np.float32)  # 2 steps x 2 replicas
    recorder.outfeed({"acc": 0, "loss": 0}, [steps * 9, steps], 2, None, False)
    assert [p[2] for p in recorder.losses] == [2.0, 6.0]
    recorder.outfeed((0, 0), [steps * 9, steps], 2, ["Mean:0", "xent_loss:0"], False)
    assert [p[2] for p in recorder.losses][2:] == [2.0, 6.0]
    recorder.outfeed(0, [np.array([4.0, 2.0])], 1, ["Mean:0"], False)  # one scalar a step
    assert [p[2] for p in recorder.losses][4:] == [4.0, 2.0]
    recorder.outfeed(0, [np.array([3.0, 5.0])], 2, ["Mean:0"], True)  # LAST: [replicas]
    assert recorder.losses[-1][2] == 4.0
    n = len(recorder.losses)
    recorder.outfeed(0, [np.ones((2, 10), np.float32)], 1, ["logits:0"], False)  # not a loss
    recorder.outfeed((0, 0), [steps, steps], 2, ["a:0", "b:0"], False)  # no loss named
    recorder.outfeed(0, [np.array([1, 2], np.int32)], 1, None, False)  # integer scalars
    assert len(recorder.losses) == n
    assert recorder.steps == n and [p[0] for p in recorder.losses] == list(range(1, n + 1))


class _Named:
    def __init__(self, name, op_type="Mean"):
        self.name = name
        self.op = type("Op", (), {"type": op_type})()


def test_fetched_tensors_named_loss(recorder):
    recorder.fetched([_Named("total_loss:0"), _Named("logits:0"), None],
                     [np.array([1.0, 2.0]), np.ones(3), 5.0])
    recorder.fetched([_Named("loss_dequeue:0", "OutfeedDequeue")], [np.ones(4)])
    assert [(p[0], p[2], p[3]) for p in recorder.losses] == [(1, 1.5, "session")]


def test_infeed_samples_count_at_the_end_of_each_run(recorder):
    for _ in range(4):
        recorder.infeed_element([np.zeros((8, 5))], 2)
    recorder.infeed_element([np.zeros(())], 2)  # an unbatched element: one sample
    recorder.run_ended(recorder.start + 1.0)
    recorder.run_ended(recorder.start + 2.0)  # nothing dequeued: no record
    assert [(t, n) for t, n, _ in recorder.samples] == [(1.0, 33)]
    assert recorder.executions == 2 and recorder.replicas == 2
    assert recorder.training_samples() == [(1.0, 33, "infeed")]  # no loss yet: every run


def test_infeed_samples_are_training_samples_once_a_loss_claims_them(recorder):
    for t in (1.0, 2.0):
        recorder.infeed_element([np.zeros((8, 5))], 1)
        recorder.run_ended(recorder.start + t)
    recorder.outfeed(0, [np.array([0.5, 0.25])], 1, None, False)
    recorder.infeed_element([np.zeros((22, 5))], 1)  # an inference loop after training
    recorder.run_ended(recorder.start + 3.0)
    recorder.outfeed(0, [np.array([3, 4], np.int32)], 1, None, False)  # not a loss
    assert recorder.training_samples() == [(1.0, 8, "infeed training"),
                                           (2.0, 8, "infeed training")]


def test_throughput_leaves_the_first_record_out():
    t = summary.throughput([(2.0, 100, "keras"), (1.0, 50, "keras"), (4.0, 100, "keras")], 2)
    assert t == {"samples": 250, "measured_samples": 200, "seconds": 3.0,
                 "first_left_out": True, "total": 200 / 3.0, "per_replica": 100 / 3.0,
                 "replicas": 2}
    one = summary.throughput([(2.0, 100, "keras")], 1)
    assert one["total"] == 50.0 and not one["first_left_out"]
    assert summary.throughput([], 4)["total"] is None


def test_keras_and_poptorch_counts_win_over_the_infeeds():
    rec = Recorder()
    rec.samples += [(1.0, 10, "infeed"), (2.0, 20, "keras"), (3.0, 20, "keras")]
    assert [n for _, n, _ in rec.training_samples()] == [20, 20]


def _synthetic():
    rec = Recorder()
    rec.losses = [(i + 1, 0.1 * i, 1.0 / (i + 1), "keras") for i in range(10)]
    rec.samples = [(0.1 * i, 64, "keras") for i in range(10)]
    rec.replicas = 2
    rec.memory = [MemorySample(3, 1 << 20, 0.1 * i, 0.1 * i + 0.05, 1024, 1024 * (i + 2))
                  for i in range(10)]
    rec.executions = 10
    rec.steps = 10
    return rec


RUN = {"program": "p.py", "args": [], "backend": "cpu", "ipus": None, "tf_version": 2,
       "exit_status": 0, "wall_seconds": 1.5}


def test_figures_have_the_fixed_pixel_size(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib import image as mpimg

    for rec in (_synthetic(), Recorder()):  # with data, and an empty run
        s = write_report(str(tmp_path), rec, RUN)
        assert s["figures"] == list(figures.NAMES)
        for name in figures.NAMES:
            assert mpimg.imread(tmp_path / name).shape[:2] == (figures.SIZE[1],
                                                                figures.SIZE[0])
    assert figures.SIZE == (800, 350)


def test_without_matplotlib_the_page_says_which_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(figures, "available", lambda: False)
    s = write_report(str(tmp_path), _synthetic(), RUN)
    assert s["figures"] == []
    assert "pip install ipu-gpu[report]" in capsys.readouterr().err
    page = (tmp_path / "report.html").read_text()
    assert "pip install ipu-gpu[report]" in page and "<img" not in page
    assert json.loads((tmp_path / "summary.json").read_text()) == s
    assert not any((tmp_path / name).exists() for name in figures.NAMES)


def test_summary_text_and_page_show_the_same_numbers():
    s = summary.build(_synthetic(), RUN, list(figures.NAMES))
    text = summary.text(s, "out/report.html").splitlines()
    assert text[0] == "ipu-gpu: run summary"
    assert text[-1] == "ipu-gpu: report written to out/report.html"
    assert text[2] == ("  throughput: 640.0 samples/s total, 320.0 samples/s per replica "
                       "(2 replicas; after the first execution, which compiles)")
    assert text[3] == "  final loss: 0.100000 (step 10)"
    assert text[4] == "  peak memory: IPU 3 11.00 KiB of 1.00 MiB (1.07%)"
    page = html.page(s)
    for label, value in summary.fields(s):
        assert (f"<th>{std_html.escape(label)}</th><td>{std_html.escape(value)}</td>"
                in page)
    assert page.count("<img ") == 4 and "<script" not in page


@pytest.mark.parametrize("argv, expected", [
    (["--report", "prog.py"], ["--report=", "prog.py"]),
    (["--backend", "cpu", "--report", "prog.py", "--report", "x"],
     ["--backend", "cpu", "--report=", "prog.py", "--report", "x"]),
    (["--report", "out", "prog.py"], ["--report", "out", "prog.py"]),
    (["prog.py", "--report", "prog.py"], ["prog.py", "--report", "prog.py"]),
])
def test_report_directly_before_the_program_takes_the_default_folder(
        argv, expected, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "prog.py").write_text("")
    assert cli.run_argv(argv) == expected


def test_report_folder_defaults(monkeypatch):
    monkeypatch.delenv("IPU_GPU_REPORT_DIR", raising=False)

    class Args:
        program = "examples/demo_keras.py"
        report = cli.DEFAULT_REPORT

    assert cli.report_dir(Args) == "reports/demo_keras"
    Args.report = None
    assert cli.report_dir(Args) is None
    monkeypatch.setenv("IPU_GPU_REPORT_DIR", "elsewhere")
    assert cli.report_dir(Args) == "elsewhere"


class _DeviceArray:
    """A cupy-like array: the recorder copies it to the host with ``get()``."""

    def __init__(self, a):
        self._a = np.asarray(a)
        self.shape, self.dtype, self.ndim = self._a.shape, self._a.dtype, self._a.ndim

    def get(self):
        return self._a


def test_device_arrays_are_read_on_the_host(recorder):
    recorder.outfeed({"loss": 0}, [_DeviceArray([[1.0, 2.0], [3.0, 4.0]])], 2, None, False)
    recorder.infeed_element([_DeviceArray(np.zeros((6, 2)))], 1)
    recorder.run_ended(recorder.start + 1.0)
    assert [p[2] for p in recorder.losses] == [1.5, 3.5]
    assert [n for _, n, _ in recorder.samples] == [6] and recorder.errors == []


def test_the_page_needs_nothing_outside_its_folder():
    page = html.page(summary.build(_synthetic(), RUN, list(figures.NAMES)))
    assert "http" not in page and "<script" not in page and "<link" not in page
    assert "<style>" in page
