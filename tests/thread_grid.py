"""Runs a test module's bits function in a child process under every Numba x OpenBLAS thread
count pair (Numba 1-4, OpenBLAS 1-3): how the determinism tests show bits independent of the
thread count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap


def bits_per_thread_count(module: str, function: str) -> dict:
    """{"<numba threads>,<blas threads>": function()} for the 12 pairs, ``function`` a
    JSON-serialisable result of ``module`` (a module of this directory), run in a child
    started with NUMBA_NUM_THREADS=4."""
    script = textwrap.dedent(f"""
        import json, sys
        import numba
        from threadpoolctl import threadpool_limits
        sys.path.insert(0, sys.argv[1])
        from {module} import {function} as bits
        runs = {{}}
        for nt in (1, 2, 3, 4):
            numba.set_num_threads(nt)
            for blas in (1, 2, 3):
                with threadpool_limits(blas, "blas"):
                    runs[f"{{nt}},{{blas}}"] = bits()
        print(json.dumps(runs))
        """)
    env = dict(os.environ, NUMBA_NUM_THREADS="4")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", script,
                           os.path.dirname(__file__)], env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(runs) == 12
    return runs
