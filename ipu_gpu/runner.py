"""``ipu-gpu run PROGRAM.py [ARGS...]``: run an unmodified IPU program as ``python PROGRAM.py
ARGS`` would, with the import aliases installed before its first import.

The program sees ``sys.argv == [PROGRAM.py, *ARGS]``, ``__name__ == "__main__"``, its own
``__file__``, its folder first on ``sys.path`` (sibling modules import), and ``sys.exit``
codes leave the process unchanged. A traceback starts at the program's own frames. Options
(before the program) become the environment the emulator reads: ``--backend`` sets
``IPU_GPU_BACKEND``, ``--ipus`` ``IPU_GPU_NUM_IPUS``, ``--report DIR`` ``IPU_GPU_REPORT_DIR``
(where the run's report goes: ``run.json``, the program, arguments, options, TensorFlow
version, exit status and wall time, and the report of ``ipu_gpu.report``: ``report.html``,
its PNGs and ``summary.json``, written also when the program fails or exits; the run's last
lines are then the report's summary and ``ipu-gpu: report written to DIR/report.html``).
Without ``report_dir`` nothing is recorded. ``--tf1``/``--tf2`` force what ``import
tensorflow`` shows; otherwise the program's source decides (``aliases.detect_tf_version``).
"""

from __future__ import annotations

import json
import os
import sys
import time
import tokenize
import traceback

from . import aliases
from .compat import behavior
from .emulation import observe


def run_program(program: str, args=(), backend: str | None = None, ipus: int | None = None,
                tf_version: int | None = None, report_dir: str | None = None) -> int:
    """Run ``program`` as ``__main__`` with ``args``; return its exit status (0, the
    ``sys.exit`` code, or 1 after printing an uncaught exception's traceback)."""
    path = os.path.abspath(program)
    if not os.path.isfile(path):
        print(f"ipu-gpu run: can't open file {program!r}: no such file", file=sys.stderr)
        return 2
    with tokenize.open(path) as f:  # honours the file's coding declaration, as python does
        source = f.read()
    _set_environment(backend, ipus, report_dir)
    detected = aliases.detect_tf_version(source)
    aliases.install(tf_version=tf_version)
    behavior.set_tf_version(tf_version or detected)
    sys.argv = [program, *args]
    sys.path.insert(0, os.path.dirname(path))
    recorder = _start_recording() if report_dir is not None else None
    started = time.perf_counter()
    try:
        status = _execute(path, source)
    finally:
        if recorder is not None:
            observe.uninstall()
    if report_dir is not None:
        record = _write_run_report(report_dir, program, args, backend, ipus,
                                   tf_version or detected, status,
                                   time.perf_counter() - started)
        _write_report(report_dir, recorder, record)
    return status


def _set_environment(backend, ipus, report_dir) -> None:
    if backend is not None:
        if backend not in ("cpu", "gpu"):
            raise ValueError(f"ipu-gpu run: --backend must be cpu or gpu, got {backend!r}")
        os.environ["IPU_GPU_BACKEND"] = backend
    if ipus is not None:
        os.environ["IPU_GPU_NUM_IPUS"] = str(ipus)
    if report_dir is not None:
        os.makedirs(report_dir, exist_ok=True)
        os.environ["IPU_GPU_REPORT_DIR"] = os.path.abspath(report_dir)


def _execute(path: str, source: str) -> int:
    main = _fresh_main(path)
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        code = compile(source, path, "exec")
        exec(code, main.__dict__)
    except SystemExit as e:
        return _exit_status(e.code)
    except BaseException as e:  # noqa: BLE001 - reported like the interpreter would
        _print_program_traceback(e, path)
        return 130 if isinstance(e, KeyboardInterrupt) else 1
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main
    return 0


def _fresh_main(path: str):
    import types

    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__builtins__ = __builtins__
    main.__loader__ = None
    main.__spec__ = None
    return main


def _exit_status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints it and exits 1
    return 1


def _print_program_traceback(exc: BaseException, path: str) -> None:
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb if tb is not None else exc.__traceback__)


def _write_run_report(report_dir, program, args, backend, ipus, tf_version, status,
                      seconds) -> None:
    record = {"program": program, "args": list(args), "backend": backend, "ipus": ipus,
              "tf_version": tf_version, "exit_status": status, "wall_seconds": seconds}
    with open(os.path.join(report_dir, "run.json"), "w") as f:
        json.dump(record, f, indent=2)
    return record


def _start_recording():
    from .report import Recorder

    recorder = Recorder()
    observe.install(recorder)
    return recorder


def _write_report(report_dir, recorder, record) -> None:
    """The report files, then the summary on stdout, its last line naming the page; a
    report that cannot be written is said on stderr and leaves the exit status alone."""
    from . import report
    from .report import summary

    try:
        s = report.write(report_dir, recorder, record)
    except Exception as e:  # noqa: BLE001 - a report never changes the run's outcome
        print(f"ipu-gpu run: the report could not be written to {report_dir}: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
        return
    sys.stderr.flush()
    print(summary.text(s, os.path.join(report_dir, summary.REPORT_FILE)), flush=True)
