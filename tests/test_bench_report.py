"""bench/report.py on tiny fabricated pytest-benchmark JSON dicts: the CPU-only README, a GPU
run's rows merged into the same groups (GPU columns, GPU targets, the GPU machine table) and
the tools/gpu_probe.py section. No GPU and no benchmark run needed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPORT = Path(__file__).resolve().parents[1] / "bench" / "report.py"


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("bench_report", REPORT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _row(group, impl, median, device="cpu", paired=None, **facts):
    extra = {"impl": impl, "device": device, "sizes": {"n": 1}, **facts}
    if paired:
        extra["paired"] = paired
    return {"name": f"test[{group}-{impl}]", "group": group, "params": {"impl": impl},
            "extra_info": extra,
            "stats": {"median": median, "iqr": median / 10, "rounds": 10}}


def _run(rows, when="2026-11-27T15:00:00+00:00"):
    return {"datetime": when, "version": "5.3.1", "machine_info": {}, "benchmarks": rows}


CPU_FACTS = {"cpu": "AMD EPYC", "numpy": "2.4.6", "numba": "0.68.1", "cupy": None}
GPU_FACTS = {"cpu": "Intel Xeon", "gpu": "NVIDIA H200", "cupy": "14.2.0",
             "torch": "2.11.0+cu130", "python": "3.12.3", "numpy": "2.5.2", "numba": "0.68.0"}
G = "conv2d_fwd_bwd-N8"
E = "embedding_gather-V30000"


def _cpu():
    return _run([_row(G, "ipu_gpu", 0.050, **CPU_FACTS), _row(G, "torch", 0.040, **CPU_FACTS),
                 _row(E, "ipu_gpu", 0.004, **CPU_FACTS), _row(E, "torch", 0.005, **CPU_FACTS)])


def _gpu():
    return _run([
        _row(G, "ipu_gpu_cupy", 0.004, "gpu",
             paired={"impl": "torch_cuda", "rounds": 10, "median": 0.005}, **GPU_FACTS),
        _row(G, "torch_cuda", 0.005, "gpu", **GPU_FACTS),
        _row(E, "ipu_gpu_cupy", 0.0003, "gpu", **GPU_FACTS),
        _row(E, "cupy_copy", 0.0002, "cpu", **GPU_FACTS),  # recorded as "cpu" by conftest
        _row(E, "torch", 99.0, **GPU_FACTS),  # a CPU row of the GPU machine: left out
    ], when="2026-11-27T16:40:00+00:00")


PROBE = {
    "graph_launch_cost": {"graph_launch_us": 2.345678, "eager_add_us": 7.891234},
    "replica_overlap": {"n512_R1": {"wall_ms": 12.3456}, "n512_R4": {"wall_ms": 20.04},
                        "n512_R4_over_R1": 1.6232},
    "loop_capture": {"error": "RuntimeError: boom", "trace": "Traceback (most recent ..."},
}


def test_cpu_only(report):
    data = _cpu()
    text, groups = report.render(data, report.group_rows(data), ".last.json")
    assert "## GPU machine" not in text and "## GPU: CUDA graphs" not in text
    line = next(x for x in text.splitlines() if x.startswith(f"| {G} |"))
    assert line.split(" | ")[2] == "1.25×" and line.endswith("| — | — | — | — |")


def test_gpu_rows_merged(report):
    data = _cpu()
    text, groups = report.render(data, report.group_rows(data), ".last.json", _gpu(),
                                 "GPU.json")
    assert set(groups[E]) == {"ipu_gpu", "torch", "ipu_gpu_cupy", "cupy_copy"}
    assert groups[E]["torch"]["stats"]["median"] == 0.005  # the CPU machine's row kept
    conv = next(x for x in text.splitlines() if x.startswith(f"| {G} |")).split(" | ")
    assert conv[5:7] == ["4.000 ms", "0.80× (i)"]  # ipu_gpu(cupy) time, / torch CUDA paired
    emb = next(x for x in text.splitlines() if x.startswith(f"| {E} |"))
    assert emb.endswith("| 1.50× |")  # / cupy copy
    # the GPU targets are measured now
    assert f"  - {G}: 0.80× (met; interleaved)" in text
    assert f"  - {E}: 1.50× (NOT met, 1.20× over; separate rows)" in text
    machine = text.split("## GPU machine", 1)[1].split("## Summary", 1)[0]
    for fact in ("| GPU | NVIDIA H200 |", "| cupy | 14.2.0 |", "| torch | 2.11.0+cu130 |",
                 "| CPU | Intel Xeon |", "| numpy | 2.5.2 |", "2026-11-27T16:40:00"):
        assert fact in machine
    assert "`GPU.json`" in machine and "`.last.json`" in machine
    cpu_machine = text.split("## Machine", 1)[1].split("## GPU machine", 1)[0]
    assert "AMD EPYC" in cpu_machine and "NVIDIA" not in cpu_machine


def test_probe_section(report):
    data = _cpu()
    text, _ = report.render(data, report.group_rows(data), ".last.json", _gpu(), "GPU.json",
                            json.loads(json.dumps(PROBE)), "PROBE.json")
    probe = text.split("## GPU: CUDA graphs, replica and infeed overlap", 1)[1]
    probe = probe.split("## Every group", 1)[0]
    assert "| graph_launch_us | 2.35 |" in probe and "| eager_add_us | 7.89 |" in probe
    assert "| n512_R4_over_R1 | 1.62 |" in probe
    assert "| n512_R1 | 12.3 |" in probe and "| n512_R4 | 20.0 |" in probe
    assert "**error**: RuntimeError: boom" in probe and "Traceback" not in probe


def test_cli(report, tmp_path):
    cpu, gpu, probe = tmp_path / "cpu.json", tmp_path / "gpu.json", tmp_path / "probe.json"
    cpu.write_text(json.dumps(_cpu()))
    gpu.write_text(json.dumps(_gpu()))
    probe.write_text(json.dumps(PROBE))
    out = tmp_path / "README.md"
    assert report.main(["report.py", str(cpu), str(out)]) == 0
    assert "## GPU machine" not in out.read_text()
    assert report.main(["report.py", str(cpu), str(out), "--gpu", str(gpu),
                        "--probe", str(probe)]) == 0
    text = out.read_text()
    assert "## GPU machine" in text and "## GPU: CUDA graphs" in text


def test_partial_rerun_replaces_whole_groups(report):
    data = _cpu()
    part = _run([_row(G, "ipu_gpu", 0.030, **CPU_FACTS), _row(G, "torch", 0.040, **CPU_FACTS),
                 _row("keras_fit-b32-mlp", "ipu_gpu", 0.2, **CPU_FACTS)],
                when="2026-11-28T03:00:00+00:00")
    text, groups = report.render(data, report.group_rows(data), "cpu.json",
                                 parts=[("cpu-part-1.json", part)])
    assert groups[G]["ipu_gpu"]["stats"]["median"] == 0.030  # the part's row
    assert groups[E]["ipu_gpu"]["stats"]["median"] == 0.004  # the full run's row
    assert "keras_fit-b32-mlp" in groups
    conv = next(x for x in text.splitlines() if x.startswith(f"| {G} |"))
    assert conv.split(" | ")[2] == "0.75×"
    assert "`cpu-part-1.json` (run on 2026-11-28 03:00:00 UTC: 2 groups, conv2d_fwd_bwd, " \
           "keras_fit)" in text.split("\n", 3)[2]


def test_partial_rerun_from_another_cpu_is_refused(report):
    data = _cpu()
    part = _run([_row(G, "ipu_gpu", 0.030, **{**CPU_FACTS, "cpu": "Intel Xeon"})])
    with pytest.raises(ValueError, match="Intel Xeon"):
        report.render(data, report.group_rows(data), "cpu.json", parts=[("p.json", part)])


def test_cli_compact_and_also(report, tmp_path):
    cpu, part = tmp_path / "cpu.json", tmp_path / "cpu-part-1.json"
    rows = _cpu()
    rows["benchmarks"][0]["stats"]["data"] = [0.05] * 10
    cpu.write_text(json.dumps(rows))
    part.write_text(json.dumps(_run([_row(G, "ipu_gpu", 0.030, **CPU_FACTS),
                                     _row(G, "torch", 0.040, **CPU_FACTS)])))
    out = tmp_path / "README.md"
    assert report.main(["report.py", str(cpu), str(out), "--also", str(part), "--compact"]) == 0
    assert "data" not in json.loads(cpu.read_text())["benchmarks"][0]["stats"]
    assert "`cpu-part-1.json`" in out.read_text()


@pytest.mark.parametrize("x,want", [(2.345678, "2.35"), (1234.5, "1230"), (0.012345, "0.0123"),
                                    (0.0, "0.0"), (1.5e-5, "1.5e-05"), (3, "3")])
def test_fmt_value(report, x, want):
    assert report.fmt_value(x) == want
