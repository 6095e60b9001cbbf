"""The report's PNGs, drawn with matplotlib's Agg backend at a fixed size (``SIZE`` pixels:
``FIGSIZE`` inches at ``DPI``), so a page can give each image its width and height.

``loss.png``: the loss per training step (Keras: the mean of each execution's steps, with
the epoch's running mean its progress bar shows fainter); ``throughput.png``: samples/s total
and per replica between consecutive sample records; ``memory.png``: bytes resident per IPU
over time (each execution drawn at its peak, between its bytes at begin) and each IPU's peak
against its memory; ``timeline.png``: each IPU's (or PopTorch replica's) executions over time.
"""

from __future__ import annotations

import os

from .recorder import Recorder

FIGSIZE = (8.0, 3.5)
DPI = 100
SIZE = (int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI))  # (width, height) in pixels
NAMES = ("loss.png", "throughput.png", "memory.png", "timeline.png")


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def write_all(rec: Recorder, folder: str) -> list:
    """Draw every figure into ``folder``; returns the file names written."""
    from matplotlib.figure import Figure  # no pyplot: no global state; PNGs print by Agg

    written = []
    for name, draw in zip(NAMES, (_loss, _throughput, _memory, _timeline)):
        fig = Figure(figsize=FIGSIZE, dpi=DPI)
        draw(fig, rec)
        fig.savefig(os.path.join(folder, name), dpi=DPI, format="png")
        written.append(name)
    return written


def _empty(ax, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes)
    ax.set_xticks([])
    ax.set_yticks([])


def _loss(fig, rec: Recorder) -> None:
    ax = fig.add_subplot(1, 1, 1)
    ax.set_title("Training loss")
    if not rec.losses:
        _empty(ax, "no training loss was recorded")
        return
    if rec.execution_losses:  # Keras: each execution's own mean, the epoch means faint
        ax.plot([p[0] for p in rec.execution_losses], [p[2] for p in rec.execution_losses],
                marker=".", lw=1, label="mean loss of each execution's steps")
        ax.plot([p[0] for p in rec.losses], [p[2] for p in rec.losses], lw=1, alpha=0.35,
                label="epoch's running mean (Keras progress bar)")
        ax.legend(loc="upper right", fontsize="small")
    else:
        ax.plot([p[0] for p in rec.losses], [p[2] for p in rec.losses], marker=".", lw=1)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    fig.tight_layout()


def _throughput(fig, rec: Recorder) -> None:
    ax = fig.add_subplot(1, 1, 1)
    ax.set_title("Throughput")
    points = sorted(rec.training_samples())
    rates = [(t, n / (t - t0)) for (t0, _, _), (t, n, _) in zip(points, points[1:]) if t > t0]
    if not rates:
        _empty(ax, "fewer than two sample records: no throughput over time")
        return
    ts = [t for t, _ in rates]
    ax.plot(ts, [r for _, r in rates], marker=".", lw=1, label="total")
    ax.plot(ts, [r / rec.replicas for _, r in rates], marker=".", lw=1, ls="--",
            label=f"per replica ({rec.replicas})")
    ax.set_xlabel("seconds since the run began")
    ax.set_ylabel("samples/s")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()


def _memory(fig, rec: Recorder) -> None:
    over_time, peaks = fig.subplots(1, 2, width_ratios=(3, 1))
    over_time.set_title("Bytes resident per IPU")
    peaks.set_title("Peak / IPU memory")
    samples = rec.memory_samples()
    if not samples:
        _empty(over_time, "nothing was charged to an IPU's ledger")
        _empty(peaks, "")
        return
    by_ipu: dict = {}
    for m in sorted(samples, key=lambda m: m.begin):
        xs, ys, _ = by_ipu.setdefault(m.ipu, ([], [], m.capacity))
        xs += [m.begin, m.begin, m.end, m.end]  # an execution's bytes go when it ends
        ys += [m.before / 1024, m.peak / 1024, m.peak / 1024, m.before / 1024]
    for ipu, (xs, ys, _) in sorted(by_ipu.items()):
        over_time.plot(xs, ys, lw=1, label=f"IPU {ipu}")
    over_time.set_xlabel("seconds since the run began")
    over_time.set_ylabel("KiB")
    over_time.legend(loc="upper left", fontsize="small")
    over_time.grid(alpha=0.3)
    ipus = sorted(by_ipu)
    fractions = [100 * max(m.peak for m in samples if m.ipu == i) / by_ipu[i][2]
                 for i in ipus]
    peaks.bar([str(i) for i in ipus], fractions)
    peaks.set_xlabel("IPU")
    peaks.set_ylabel("% of the IPU's memory")
    fig.tight_layout()


_HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")


def _timeline(fig, rec: Recorder) -> None:
    """A Gantt chart: one row per IPU (or PopTorch replica), a bar per execution, coloured
    by replica; where pipeline stages were recorded, a bar per stage and micro-batch
    (hatched by stage; backward passes paler) over the execution's pale bar, and below, the
    first micro-batches of the last execution drawn large."""
    if not rec.spans:
        ax = fig.add_subplot(1, 1, 1)
        ax.set_title("Executions on the emulated IPUs")
        _empty(ax, "no execution was recorded")
        return
    staged = [s for s in rec.spans if s.stage >= 0]
    if not staged:
        ax = fig.add_subplot(1, 1, 1)
        _gantt(ax, rec.spans, False)
        ax.set_title("Executions on the emulated IPUs")
        fig.tight_layout()
        return
    whole, zoom = fig.subplots(2, 1)
    _gantt(whole, rec.spans, True)
    whole.set_title("Executions and pipeline stages on the emulated IPUs")
    window = _zoom_window(rec.spans)
    _gantt(zoom, [s for s in rec.spans if s.end > window[0] and s.begin < window[1]], True)
    zoom.set_xlim(*window)
    zoom.set_title("The last execution's first micro-batches", fontsize="small")
    fig.tight_layout()


def _zoom_window(spans: list, micro_batches: int = 4) -> tuple:
    """(begin, end) of the first ``micro_batches`` micro-batches of one replica in the last
    execution that ran pipeline stages (the last that also ran a backward pass, if any)."""
    staged = [s for s in spans if s.stage >= 0]
    firsts = sorted((s for s in staged if s.stage == 0 and s.phase == "forward"),
                    key=lambda s: s.begin)
    if not firsts:
        return min(s.begin for s in staged), max(s.end for s in staged)
    backward = any(s.phase == "backward" for s in staged)

    def inside(e, phase):
        return (s for s in staged if s.replica == e.replica and s.phase == phase
                and e.begin <= s.begin <= e.end)

    start = firsts[-1]
    for e in sorted((s for s in spans if s.stage < 0), key=lambda s: s.begin, reverse=True):
        if backward and next(inside(e, "backward"), None) is None:
            continue
        first = min((s for s in inside(e, "forward") if s.stage == 0),
                    key=lambda s: s.begin, default=None)
        if first is not None:
            start = first
            break
    later = [s for s in firsts if s.replica == start.replica and s.begin >= start.begin]
    if len(later) > micro_batches:  # up to the next micro-batch's start
        end = later[micro_batches].begin
    else:
        end = max(s.end for s in staged if s.replica == start.replica
                  and s.begin >= start.begin)
    pad = 0.02 * (end - start.begin)
    return start.begin - pad, end + pad


def _gantt(ax, spans: list, staged: bool) -> None:
    from matplotlib.patches import Patch

    rows = sorted({s.row for s in spans}, key=lambda r: (r.split()[0], int(r.split()[1])))
    colors = ["C0", "C1", "C2", "C3", "C4", "C5", "C6", "C7"]
    for y, row in enumerate(rows):
        on_row = [s for s in spans if s.row == row]
        whole = [s for s in on_row if s.stage < 0]
        ax.broken_barh([(s.begin, max(s.end - s.begin, 1e-6)) for s in whole],
                       (y - 0.4, 0.8), alpha=0.25 if staged else 1.0,
                       facecolors=[colors[s.replica % len(colors)] for s in whole])
        for s in on_row:
            if s.stage < 0:
                continue
            ax.broken_barh([(s.begin, max(s.end - s.begin, 1e-6))], (y - 0.3, 0.6),
                           facecolors=colors[s.replica % len(colors)],
                           alpha=0.5 if s.phase == "backward" else 1.0,
                           hatch=_HATCHES[s.stage % len(_HATCHES)], edgecolor="black",
                           linewidth=0.3)
    ax.set_yticks(range(len(rows)), rows, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the run began", fontsize="small")
    replicas = sorted({s.replica for s in spans})[:len(colors)]
    handles = [Patch(color=colors[r], label=f"replica {r}") for r in replicas]
    if staged:
        stages = sorted({s.stage for s in spans if s.stage >= 0})[:len(_HATCHES)]
        handles += [Patch(facecolor="white", edgecolor="black", hatch=_HATCHES[k],
                          label=f"stage {k}") for k in stages]
        if any(s.phase == "backward" for s in spans):
            handles.append(Patch(facecolor="grey", alpha=0.5, label="backward"))
    ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5),
              fontsize="x-small")
