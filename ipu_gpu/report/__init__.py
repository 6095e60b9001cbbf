"""Run reports: ``ipu-gpu run --report DIR`` records a run (``recorder``) and writes into
DIR ``report.html`` (``html``), ``loss.png``, ``throughput.png``, ``memory.png`` and
``timeline.png`` (``figures``, with the optional ``report`` extra: matplotlib) and
``summary.json`` (``summary``), next to the runner's ``run.json``. ``ipu-gpu report DIR``
reprints the summary from ``summary.json``.

This layer reads the emulation layer (the recorder is installed in ``emulation.observe``);
nothing below imports it.
"""

from __future__ import annotations

import json
import os
import sys

from . import figures, html, summary
from .recorder import Recorder

__all__ = ["Recorder", "load", "write"]


def write(folder: str, rec: Recorder, run: dict) -> dict:
    """Write the report of a finished run into ``folder``; returns its summary. Without
    matplotlib the page and JSON are written and stderr says which extra to install."""
    os.makedirs(folder, exist_ok=True)
    names: list = []
    if figures.available():
        names = figures.write_all(rec, folder)
    else:
        print(f"ipu-gpu run: {html.INSTALL_HINT}", file=sys.stderr)
    s = summary.build(rec, run, names)
    with open(os.path.join(folder, summary.SUMMARY_FILE), "w") as f:
        json.dump(s, f, indent=2)
    with open(os.path.join(folder, summary.REPORT_FILE), "w", encoding="utf-8") as f:
        f.write(html.page(s))
    return s


def load(folder: str) -> dict:
    """The summary a report folder holds (FileNotFoundError if it has none)."""
    with open(os.path.join(folder, summary.SUMMARY_FILE)) as f:
        return json.load(f)
