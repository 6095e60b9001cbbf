"""``ipu-gpu run PROGRAM.py [ARGS...]``: run an unmodified IPU program as ``python PROGRAM.py
ARGS`` would, with the import aliases installed before its first import.

The program sees ``sys.argv == [PROGRAM.py, *ARGS]``, ``__name__ == "__main__"``, its own
``__file__``, its folder first on ``sys.path`` (sibling modules import), and ``sys.exit``
codes leave the process unchanged. A traceback starts at the program's own frames. Options
(before the program) become the environment the emulator reads: ``--backend`` sets
``IPU_GPU_BACKEND``, ``--ipus`` ``IPU_GPU_NUM_IPUS``, ``--report DIR`` ``IPU_GPU_REPORT_DIR``
(where the run's reports go; the run writes ``run.json`` there: program, arguments, options,
TensorFlow version, exit status and wall time). ``--tf1``/``--tf2`` force what ``import
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
    started = time.perf_counter()
    status = _execute(path, source)
    if report_dir is not None:
        _write_run_report(report_dir, program, args, backend, ipus, tf_version or detected,
                          status, time.perf_counter() - started)
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
