"""A forked child running a function, for the fork tests' child-process scripts (imports
nothing of ipu_gpu, so a script can fork before any kernel module loads)."""

from __future__ import annotations

import json
import os


def in_child(fn):
    """(fn()'s JSON result or None, wait status) of a forked child that runs ``fn``."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.write(w, json.dumps(fn()).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    _, status = os.waitpid(pid, 0)
    return json.loads(data) if data else None, status
