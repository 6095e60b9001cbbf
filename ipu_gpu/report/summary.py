"""A run report's numbers (``summary.json``) and the summary text the run prints and
``ipu-gpu report DIR`` reprints.

Throughput: the samples recorded after the first record (which includes compiling) over the
seconds from that first record to the last; with one record, its samples over the seconds
since the run began. Per replica: the total over the replication factor. Peak memory: the
most bytes an IPU's ledger held during any execution, against the IPU's memory. ``series``
holds what the loss and throughput figures draw: ``[step, seconds, loss]`` (``loss``: as the
program showed it; ``execution_loss``: Keras's mean of each execution's steps) and the
training sample records ``[seconds, samples]``.
"""

from __future__ import annotations

from .recorder import Recorder

SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.html"


def throughput(samples: list, replicas: int) -> dict:
    """``{'samples', 'seconds', 'total', 'per_replica', 'replicas'}`` (None rates when
    nothing was recorded) from ``[(seconds, n, source)]``."""
    points = sorted(samples)
    if len(points) >= 2:
        n = sum(p[1] for p in points[1:])
        seconds = points[-1][0] - points[0][0]
    elif points:
        n, seconds = points[0][1], points[0][0]
    else:
        n, seconds = 0, 0.0
    total = n / seconds if n and seconds > 0 else None
    return {"samples": int(sum(p[1] for p in points)), "measured_samples": int(n),
            "seconds": seconds, "first_left_out": len(points) >= 2, "total": total,
            "per_replica": None if total is None else total / replicas,
            "replicas": replicas}


def memory(rec: Recorder) -> list:
    """Per IPU (by id): peak bytes during an execution (variables and optimizer state
    included), the IPU's memory, and the variables' and optimizer state's bytes."""
    by_ipu: dict = {}
    for m in rec.memory_samples():
        peak, capacity = by_ipu.get(m.ipu, (0, m.capacity))
        by_ipu[m.ipu] = (max(peak, m.peak), m.capacity)
    resident = rec.resident()
    return [{"ipu": ipu, "peak_bytes": peak, "capacity_bytes": capacity,
             "peak_fraction": peak / capacity if capacity else None,
             "variable_bytes": resident.get(ipu, (0, 0))[0],
             "optimizer_bytes": resident.get(ipu, (0, 0))[1]}
            for ipu, (peak, capacity) in sorted(by_ipu.items())]


def build(rec: Recorder, run: dict, figures: list) -> dict:
    """The summary of a finished run: ``run`` is run.json's record."""
    losses = rec.losses
    final = losses[-1] if losses else None
    return {
        "program": run["program"], "args": run["args"], "exit_status": run["exit_status"],
        "wall_seconds": run["wall_seconds"],
        "options": {k: run[k] for k in ("backend", "ipus", "tf_version")},
        "executions": rec.executions, "steps": rec.steps,
        "loss": {"final": None if final is None else final[2],
                 "final_step": None if final is None else final[0],
                 "first": losses[0][2] if losses else None, "points": len(losses),
                 "sources": sorted({p[3] for p in losses})},
        "throughput": throughput(rec.training_samples(), rec.replicas),
        "memory": memory(rec),
        "figures": figures, "report": REPORT_FILE, "recorder_errors": list(rec.errors),
        "series": {"loss": [[step, t, v] for step, t, v, _ in losses],
                   "execution_loss": [list(p) for p in rec.execution_losses],
                   "samples": [[t, n] for t, n, _ in sorted(rec.training_samples())]},
    }


def _bytes(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def fields(summary: dict) -> list:
    """``[(label, text)]``: the summary's lines, shared by the text and the HTML page."""
    t = summary["throughput"]
    if t["total"] is None:
        rate = "not measured (no training samples were recorded)"
    else:
        how = ("after the first execution, which compiles" if t["first_left_out"]
               else "one execution, compiling included")
        rate = (f"{t['total']:.1f} samples/s total, {t['per_replica']:.1f} samples/s per "
                f"replica ({t['replicas']} replica{'s' if t['replicas'] != 1 else ''}; {how})")
    loss = summary["loss"]
    final = ("not recorded" if loss["final"] is None
             else f"{loss['final']:.6f} (step {loss['final_step']})")
    mem = summary["memory"]
    peaks = ", ".join(f"IPU {m['ipu']} {_bytes(m['peak_bytes'])} of "
                      f"{_bytes(m['capacity_bytes'])} ({100 * m['peak_fraction']:.3g}%)"
                      for m in mem) or "not recorded (nothing was charged to an IPU's ledger)"
    return [("program", f"{summary['program']} (exit status {summary['exit_status']}, "
                        f"{summary['wall_seconds']:.1f} s, {summary['executions']} "
                        "executions on the emulated IPUs)"),
            ("throughput", rate), ("final loss", final), ("peak memory", peaks)]


def text(summary: dict, report_path: str) -> str:
    """The lines the run prints at its end; the last names the report."""
    lines = ["ipu-gpu: run summary"]
    lines += [f"  {label}: {value}" for label, value in fields(summary)]
    lines.append(f"ipu-gpu: report written to {report_path}")
    return "\n".join(lines)
