"""``report.html``: one self-contained page (inline CSS, no scripts) showing the summary's
lines, the run's options, and the PNGs by relative path (``<img src="loss.png">``) with
their pixel sizes; without matplotlib it says which extra to install instead."""

from __future__ import annotations

import html
import json

from . import figures, summary

INSTALL_HINT = ("matplotlib is not installed, so this report has no figures: "
                "pip install ipu-gpu[report]")

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 1.6em; }
table { border-collapse: collapse; } td, th { padding: 0.25em 0.8em; text-align: left;
  border-bottom: 1px solid #ddd; vertical-align: top; }
th { color: #555; font-weight: 600; } code { background: #f4f4f4; padding: 0 0.2em; }
.note { background: #fff4d6; padding: 0.6em; border-left: 4px solid #e0a800; }
img { display: block; margin: 0.6em 0; border: 1px solid #eee; }
"""

_TITLES = {"loss.png": "Loss", "throughput.png": "Throughput", "memory.png": "Memory",
           "timeline.png": "Execution timeline"}


def page(s: dict) -> str:
    """The page for summary ``s`` (``summary.build``'s dict)."""
    esc = html.escape
    rows = "".join(f"<tr><th>{esc(label)}</th><td>{esc(value)}</td></tr>"
                   for label, value in summary.fields(s))
    mem_rows = "".join(
        f"<tr><td>IPU {m['ipu']}</td><td>{m['peak_bytes']}</td>"
        f"<td>{m.get('variable_bytes', 0)}</td><td>{m.get('optimizer_bytes', 0)}</td>"
        f"<td>{m['capacity_bytes']}</td>"
        f"<td>{100 * m['peak_fraction']:.3g}%</td></tr>" for m in s["memory"])
    options = esc(json.dumps({"args": s["args"], **s["options"]}))
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>ipu-gpu run report: {esc(s['program'])}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>ipu-gpu run report: <code>{esc(s['program'])}</code></h1>",
        f"<table>{rows}<tr><th>options</th><td><code>{options}</code></td></tr></table>",
    ]
    if mem_rows:
        parts.append("<h2>Memory per IPU (bytes)</h2><table><tr><th>IPU</th><th>peak</th>"
                     "<th>of which variables</th><th>of which optimizer state</th>"
                     f"<th>IPU memory</th><th>peak / memory</th></tr>{mem_rows}</table>")
    if s["figures"]:
        w, h = figures.SIZE
        for name in s["figures"]:
            parts.append(f"<h2>{esc(_TITLES.get(name, name))}</h2>"
                         f'<img src="{esc(name)}" width="{w}" height="{h}" '
                         f'alt="{esc(_TITLES.get(name, name))}">')
    else:
        parts.append(f'<p class="note">{esc(INSTALL_HINT)}</p>')
    if s["recorder_errors"]:
        errors = "".join(f"<li>{esc(e)}</li>" for e in s["recorder_errors"])
        parts.append(f'<h2>Recorder errors</h2><ul class="note">{errors}</ul>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
