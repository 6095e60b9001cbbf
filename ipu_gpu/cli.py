"""The ``ipu-gpu`` command.

``ipu-gpu run [--backend cpu|gpu] [--ipus N] [--tf1|--tf2] [--report [DIR]] PROGRAM.py
[ARGS...]`` runs an unmodified IPU program on the emulator (``runner.py``); ``python -m
ipu_gpu`` takes the same arguments. ``--report DIR`` (or ``IPU_GPU_REPORT_DIR=DIR``) writes a
report of the run into DIR (``ipu_gpu.report``); ``--report`` without a folder, or directly
before the program, writes it into ``reports/<program name>/``.

``ipu-gpu report DIR`` reprints the summary of the report in DIR.

``ipu-gpu check [--json] [--tf1|--tf2] PROGRAM.py [MORE.py ...]`` reads the programs (or
folders of .py/.ipynb files) without running them and lists every TensorFlow, IPU, Keras and
PopTorch symbol they use, provided or missing, grouped by module, with file:line
(``portability.py``); it exits 0 only when nothing is missing.

``ipu-gpu info`` prints the emulated IPU device listing in the style of Graphcore's
``gc-info -l`` (the configuration ids ``select_ipus`` takes), the emulated IPU (version,
tiles, memory) and the physical backend the emulated IPUs run on (GPU names and memory, or
the CPU cores); ``--json`` prints the same as JSON. ``python -m ipu_gpu.cli info`` is the
same command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def backend_info() -> dict:
    """The physical backend: ``{'backend': 'gpu', 'gpus': [...]}`` or ``{'backend': 'cpu',
    'cpu': ..., 'cores': n}``, plus how the emulated IPUs are bound to it."""
    from .core import backend

    try:
        name = backend.backend_name()
    except backend.BackendError as e:
        return {"backend": "unavailable", "error": str(e)}
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {"backend": name, "cpu": cpu_name(), "cores": cores}
    if name == "gpu":
        cupy = sys.modules.get("cupy") or backend.cupy_if_gpu()
        gpus = []
        for i in range(cupy.cuda.runtime.getDeviceCount()):
            props = cupy.cuda.runtime.getDeviceProperties(i)
            gpu_name = props["name"]
            gpus.append({"index": i, "name": gpu_name.decode() if isinstance(gpu_name, bytes)
                         else str(gpu_name), "memory_bytes": int(props["totalGlobalMem"])})
        info["gpus"] = gpus
        info["binding"] = ("each emulated IPU: a worker thread and its own CUDA stream; IPUs "
                           f"dealt round-robin over {len(gpus)} GPU(s)")
    else:
        info["binding"] = "each emulated IPU: a CPU worker thread"
    return info


def info_dict() -> dict:
    from .emulation import poplar_flags, topology

    ipu = {v: topology.version_info(v) for v in topology.VERSIONS}
    return {
        "listing": [c.to_dict() for c in topology.LISTING],
        "num_ipus": topology.NUM_IPUS,
        "ipu_versions": ipu,
        "default_version": "ipu2",
        "use_ipu_model": poplar_flags.parse().use_ipu_model,
        "physical": backend_info(),
    }


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def info_text(info: dict) -> str:
    from .emulation import topology

    lines = [f"ipu_gpu emulated device listing ({info['num_ipus']} IPUs, gc-info -l style):",
             "", topology.gc_info_listing(), ""]
    lines.append("Emulated IPU (IPUConfig.ipu_model.version / device_connection.version; "
                 "ipu_model.tiles_per_ipu overrides the tiles):")
    for v, d in info["ipu_versions"].items():
        default = " (default)" if v == info["default_version"] else ""
        lines.append(f"  {v}{default}: {d['tiles']} tiles x {d['bytes_per_tile'] // 1024} KiB "
                     f"= {d['memory_bytes']} bytes ({d['memory_bytes'] / 1e6:.0f} MB)")
    lines.append("")
    phys = info["physical"]
    if phys["backend"] == "gpu":
        gpus = ", ".join(f"GPU {g['index']}: {g['name']} ({_gib(g['memory_bytes'])})"
                         for g in phys["gpus"])
        lines.append(f"Physical backend: gpu - {gpus}")
    elif phys["backend"] == "cpu":
        lines.append(f"Physical backend: cpu - {phys['cpu']}, {phys['cores']} cores")
    else:
        lines.append(f"Physical backend: unavailable - {phys['error']}")
    if "binding" in phys:
        lines.append(f"Binding: {phys['binding']}")
    return "\n".join(lines)


def add_run_arguments(parser) -> None:
    """The options and arguments of ``ipu-gpu run`` (and ``python -m ipu_gpu``)."""
    parser.add_argument("--backend", choices=("cpu", "gpu"),
                        help="the physical backend (default: gpu when one is usable)")
    parser.add_argument("--ipus", type=int, choices=(1, 2, 4, 8, 16),
                        help="how many IPUs the emulated system offers (default 16)")
    version = parser.add_mutually_exclusive_group()
    version.add_argument("--tf1", dest="tf_version", action="store_const", const=1,
                         help="`import tensorflow` shows TF 1.15's names")
    version.add_argument("--tf2", dest="tf_version", action="store_const", const=2,
                         help="`import tensorflow` shows TF 2's names")
    parser.add_argument("--report", metavar="DIR", nargs="?", const=DEFAULT_REPORT,
                        help="write a report of the run (HTML page, PNGs, summary.json) into "
                        "DIR (default: reports/<program name>/)")
    parser.add_argument("program", help="the Python program to run, unmodified")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the program's arguments")


DEFAULT_REPORT = ""  # --report without a folder


def run_argv(argv: list) -> list:
    """``argv`` of ``ipu-gpu run`` with ``--report`` directly before the program read as
    ``--report`` without a folder (a report folder is never an existing .py/.ipynb file)."""
    argv = list(argv)
    i = 0
    while i < len(argv) - 1:
        a = argv[i]
        if a == "--report":
            nxt = argv[i + 1]
            if nxt.endswith((".py", ".ipynb")) and os.path.isfile(nxt):
                argv[i] = "--report=" + DEFAULT_REPORT
            break
        if a in ("--backend", "--ipus"):
            i += 2
        elif a.startswith("-") and a != "--":
            i += 1
        else:
            break  # the program: the rest are its arguments
    return argv


def report_dir(args) -> str | None:
    """The report folder of a parsed ``run`` (None: no report)."""
    folder = args.report
    if folder is None:
        folder = os.environ.get("IPU_GPU_REPORT_DIR") or None
    if folder == DEFAULT_REPORT:
        stem = os.path.splitext(os.path.basename(args.program))[0]
        folder = os.path.join("reports", stem)
    return folder


def run_command(args) -> int:
    from .runner import run_program

    return run_program(args.program, args.args, backend=args.backend, ipus=args.ipus,
                       tf_version=args.tf_version, report_dir=report_dir(args))


def report_command(args) -> int:
    from .report import load, summary

    try:
        s = load(args.dir)
    except FileNotFoundError:
        print(f"ipu-gpu report: {args.dir!r} holds no report (no {summary.SUMMARY_FILE}); "
              "write one with `ipu-gpu run --report DIR PROGRAM.py`", file=sys.stderr)
        return 2
    print(summary.text(s, os.path.join(args.dir, summary.REPORT_FILE)))
    return 0


def add_check_arguments(parser) -> None:
    """The options and arguments of ``ipu-gpu check``."""
    parser.add_argument("--json", action="store_true", help="print JSON")
    version = parser.add_mutually_exclusive_group()
    version.add_argument("--tf1", dest="tf_version", action="store_const", const=1,
                         help="read every file as a TF 1.15 program")
    version.add_argument("--tf2", dest="tf_version", action="store_const", const=2,
                         help="read every file as a TF 2 program")
    parser.add_argument("files", nargs="+", metavar="PROGRAM",
                        help="a program (.py, .ipynb) or a folder of them")


def check_command(args) -> int:
    from .portability import check_files  # lazily: `import ipu_gpu` stays fast

    try:
        report = check_files(args.files, tf_version=args.tf_version)
    except FileNotFoundError as e:
        print(f"ipu-gpu check: {e}", file=sys.stderr)
        return 2
    print(report.to_json() if args.json else report.to_text())
    return report.exit_status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="ipu-gpu", description="ipu_gpu: Graphcore IPU TensorFlow API on GPUs and CPUs")
    sub = parser.add_subparsers(dest="command")
    p_info = sub.add_parser("info", help="list the emulated IPU devices and the physical "
                            "backend (like gc-info -l)")
    p_info.add_argument("--json", action="store_true", help="print JSON")
    p_run = sub.add_parser("run", help="run an unmodified IPU program (TensorFlow, Keras, "
                           "PopTorch) on the emulated IPUs")
    add_run_arguments(p_run)
    p_check = sub.add_parser("check", help="list the TensorFlow/IPU/Keras/PopTorch symbols "
                             "programs use and whether ipu_gpu provides each, without running "
                             "them (exit status 0 only when nothing is missing)")
    add_check_arguments(p_check)
    p_report = sub.add_parser("report", help="reprint the summary of a run's report "
                              "(`ipu-gpu run --report DIR`)")
    p_report.add_argument("dir", metavar="DIR", help="the report folder")
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "run":
        argv = ["run", *run_argv(argv[1:])]
    args = parser.parse_args(argv)
    if args.command == "run":
        return run_command(args)
    if args.command == "report":
        return report_command(args)
    if args.command == "check":
        return check_command(args)
    if args.command != "info":
        parser.print_help(sys.stderr)
        return 2
    info = info_dict()
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(info_text(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
