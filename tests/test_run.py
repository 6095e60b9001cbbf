"""`ipu-gpu run` and `python -m ipu_gpu` run unmodified programs (tests/programs/, written in
the style of Graphcore's tutorials) as `python PROGRAM.py ARGS` would: argv, __name__,
__file__, sibling imports, exit codes, tracebacks at the program's lines, the options."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).with_name("programs")
ROOT = str(Path(__file__).resolve().parents[1])


def _run(*argv, cwd=None, module=False, env_extra=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    entry = ["-m", "ipu_gpu"] if module else ["-m", "ipu_gpu.cli", "run"]
    return subprocess.run([sys.executable, *entry, *map(str, argv)], cwd=cwd or PROGRAMS,
                          env=env, capture_output=True, text=True, timeout=300)


def test_a_tf2_ipu_program_runs_unmodified():
    r = _run("tf2_replicated_regression.py", "--steps", "30", "--learning-rate", "0.2")
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("program=__main__ argv=['--steps', '30', '--learning-rate', '0.2'] "
                           "tf=2.6.3 final_loss=")
    assert float(line.rsplit("=", 1)[1]) < 1e-3


def test_python_dash_m_is_the_same_command():
    a = _run("tf2_replicated_regression.py", "--steps", "5")
    b = _run("tf2_replicated_regression.py", "--steps", "5", module=True)
    assert a.returncode == b.returncode == 0, a.stderr + b.stderr
    assert a.stdout == b.stdout


def test_exit_codes_pass_through():
    r = _run("tf2_replicated_regression.py", "--steps", "1", "--exit-code", "3")
    assert r.returncode == 3, r.stderr


def test_argparse_errors_exit_2_as_python_would():
    r = _run("tf2_replicated_regression.py", "--no-such-option")
    assert r.returncode == 2
    assert "unrecognized arguments: --no-such-option" in r.stderr


def test_file_and_argv0_are_the_programs(tmp_path):
    prog = tmp_path / "where.py"
    prog.write_text("import sys\nprint(__file__)\nprint(sys.argv[0])\nprint(sys.path[0])\n")
    r = _run(prog, "x", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    file_, argv0, path0 = r.stdout.splitlines()
    assert file_ == str(prog) and argv0 == str(prog) and path0 == str(tmp_path)


def test_traceback_starts_at_the_programs_lines():
    r = _run("raises_in_helper.py")
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert "raises_in_helper.py\", line 10, in <module>" in lines[1]
    assert any("raises_in_helper.py\", line 7, in build" in ln for ln in lines)
    assert "runner.py" not in r.stderr and "cli.py" not in r.stderr
    assert lines[-1].startswith("ipu_gpu.errors.InvalidArgumentError: reshape: shape [2, 2] "
                                "must have 3 elements")


def test_tf1_program_sees_tf1_names_and_a_named_error_for_what_is_missing():
    r = _run("tf1_style_program.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["version 1.15.5", "constant [1.0, 2.0]"]
    r = _run("tf1_style_program.py", "--session")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[2] == "session [2.0, 4.0]"
    r = _run("tf1_style_program.py", "--missing")
    assert r.returncode == 1
    assert ("AttributeError: module 'tensorflow.contrib' has no attribute 'slim': ipu_gpu "
            "does not emulate tensorflow.contrib.slim") in r.stderr


def test_tf_version_flags_force_what_tensorflow_shows(tmp_path):
    prog = tmp_path / "version.py"
    prog.write_text("import tensorflow as tf\nprint(tf.__version__)\n")
    assert _run(prog, cwd=tmp_path).stdout.strip() == "2.6.3"
    r = _run("--tf1", prog, cwd=tmp_path)
    assert r.stdout.strip() == "1.15.5", r.stderr
    r = _run("--tf2", PROGRAMS / "tf1_style_program.py", cwd=tmp_path)
    assert r.returncode == 1  # forced TF2: the TF1-only switch is not at the top level
    assert "ipu_gpu does not emulate tensorflow.disable_v2_behavior" in r.stderr


def test_ipus_option_sizes_the_emulated_system(tmp_path):
    prog = tmp_path / "ipus.py"
    prog.write_text(
        "from tensorflow.python import ipu\n"
        "cfg = ipu.config.IPUConfig()\n"
        "cfg.auto_select_ipus = 8\n"
        "try:\n"
        "    cfg.configure_ipu_system()\n"
        "    print('configured 8')\n"
        "except ValueError as e:\n"
        "    print('refused:', e)\n")
    assert _run(prog, cwd=tmp_path).stdout.strip() == "configured 8"
    r = _run("--ipus", "4", prog, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("refused: auto_select_ipus: could not find an IPU device "
                               "configuration with 8 IPUs; the emulated 4-IPU system")
    r = _run("--ipus", "3", prog, cwd=tmp_path)
    assert r.returncode == 2 and "invalid choice: 3" in r.stderr


def test_backend_and_report_options(tmp_path):
    prog = tmp_path / "backend.py"
    prog.write_text("import ipu_gpu\nprint(ipu_gpu.backend_name())\n")
    report = tmp_path / "reports"
    r = _run("--backend", "cpu", "--report", report, prog, "a", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "cpu"
    assert lines[-1] == f"ipu-gpu: report written to {report / 'report.html'}"
    record = json.loads((report / "run.json").read_text())
    assert record["args"] == ["a"] and record["exit_status"] == 0
    assert record["backend"] == "cpu" and record["wall_seconds"] >= 0


def test_missing_program_is_a_usage_error(tmp_path):
    r = _run(tmp_path / "absent.py", cwd=tmp_path)
    assert r.returncode == 2 and "can't open file" in r.stderr


def test_real_torch_stays_real():
    pytest.importorskip("torch")
    r = _run("uses_real_torch.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "torch torch Tensor tf 1.0"


def test_the_readme_example_runs_unmodified(tmp_path):
    readme = (Path(ROOT) / "README.md").read_text()
    start = readme.index("# regression.py")
    (tmp_path / "regression.py").write_text(readme[start:readme.index("```", start)])
    r = _run("regression.py", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    w = [float(v) for v in r.stdout.strip().strip("[]").split()]
    assert w == pytest.approx([0.25, 0.5, 0.75, 1.0], abs=1e-3)


@pytest.mark.parametrize("replicas, ga", [(1, 1), (2, 1), (4, 1), (1, 2), (2, 4), (4, 2)])
def test_a_tf1_replication_program_runs_unmodified_in_graph_mode(replicas, ga):
    """Graphcore's TF1 replication example shape (default graph, compile once, Session.run
    many times): the weights after 3 executions of 4 iterations equal plain gradient descent
    on the combined batch of 8 * R * GA (the replicas' gradients averaged, the mini-batches'
    summed: GA times the learning rate), and the outfeed holds [iterations, replicas]
    losses."""
    r = _run("tf1_replication.py", "--replicas", replicas, "--gradient-accumulation", ga)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    shape = "(4,)" if replicas == 1 else f"(4, {replicas})"
    assert lines[0].startswith(f"execution 0 losses {shape} mean ")
    got = np.array([float(v) for v in lines[-1].split()[1:]])
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1024, 5)).astype(np.float32).astype(np.float64)
    y = x @ np.array([[1.0], [-2.0], [0.5], [0.0], [3.0]])
    w, n = np.zeros((5, 1)), 8 * replicas * ga
    for step in range(12 // ga):
        xb, yb = x[step * n:(step + 1) * n], y[step * n:(step + 1) * n]
        w = w - 0.1 * ga * 2 * xb.T @ (xb @ w - yb) / n
    np.testing.assert_allclose(got, w.ravel(), rtol=1e-5, atol=2e-6)
