"""Turn pytest-benchmark JSON files into bench/README.md (ratio tables).

    python bench/report.py CPU.json README.md [--gpu GPU.json] [--probe PROBE.json]

CPU.json is a full ``make bench`` run (bench/.last.json). ``--gpu`` merges the GPU rows
(ipu_gpu_cupy, torch_cuda, cupy, cupy_copy, ...) of a run on a GPU machine, e.g.
``IPU_GPU_BACKEND=gpu python3 -m pytest bench -q -m gpu --benchmark-enable
--benchmark-only --benchmark-json=GPU.json``, into the same groups, so the GPU columns and
targets are filled; its machine gets a table of its own. ``--probe`` adds the measurements
of ``tools/gpu_probe.py`` (CUDA graphs, replica and infeed overlap). ``make bench-report
GPU_JSON=... PROBE_JSON=...`` runs this on bench/.last.json without rerunning the benches.

``--also PART.json`` (repeatable, applied in order) lays a partial rerun of some bench files
over CPU.json: each group the part has replaces that group whole, so every ratio still comes
from one run; the README names the run each group came from. ``make bench-part
FILES="bench/test_bench_x.py ..."`` makes such a part in bench/results/. ``--compact`` first
rewrites every input JSON without the per-round timings (which the report does not read), the
form in which runs are kept in bench/results/.

The whole README is rewritten from the template below on every run; edit the template,
not the README.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict

TEMPLATE = """\
# Benchmarks

Written by `bench/report.py` from {sources}
Do not edit by hand: `make bench` rewrites this file, and `make bench-report GPU_JSON=...
PROBE_JSON=...` rewrites it from the last run plus a GPU machine's files (the text lives in
the template inside `bench/report.py`).

`make bench` times ipu_gpu against numpy, torch and TensorFlow on the CPU, all in one pytest
run, on the same inputs. On a machine with cupy and a CUDA GPU it also times ipu_gpu on cupy
against torch CUDA and raw cupy; without one those rows are skipped.

**Read the ratios, not the absolute times.** This is a small shared virtual machine: the same
call can take 1.3-1.5x longer a few minutes later (see
`/work/shared/research/perf_anchors.md` section 1). A ratio of two rows measured in the same
process moments apart is far more stable than either time. Ratios marked **(i)** are
interleaved: inside ipu_gpu's row the peer ran in blocks of about 0.1 s of calls between
blocks of timed ipu_gpu calls, with a 0.1 s pause at each switch, and the ratio is of those
two medians, so load drifting between rows cannot bias it. (Blocks and pauses, because one
library's worker threads keep spinning after its call: alternating single calls slowed the
other library 2-7x.) Unmarked ratios compare rows that ran one after the other: treat
differences below about 1.3x there as noise (ipu_gpu's matmul and numpy's run the same BLAS
call; their ratio shows the noise of the run). A ratio below 1 means ipu_gpu is faster;
above 1, slower.

How each row is measured:
- every implementation's result is first checked against a numpy (float64) reference;
- warm-up calls run before timing, so Numba JIT compilation, first-touch allocation and
  library start-up are not in the numbers;
- `benchmark.pedantic`, one call per round, enough rounds for about `BENCH_SECONDS` (1 s)
  of timing; the table shows the median, with the interquartile range (IQR);
- thread pools: torch, Numba and TensorFlow each get `os.cpu_count()` threads;
- GPU rows synchronise the device inside each timed call.

`python -m pytest bench -q` (benchmarks disabled, the pyproject default) runs each case once
as a quick correctness test.

## Machine

{machine}
{gpu_machine}
## Summary: ipu_gpu time / peer time (median)

{summary}

{target}

{kernel}
{probe}
## Every group

{groups}
"""

PEER_ORDER = ["torch", "numpy", "tensorflow"]
GPU_PEERS = ["torch_cuda", "cupy", "cupy_copy"]
# the device-to-device copy anchors of the summary's last column (names differ per bench file)
GPU_COPY_PEERS = ("cupy_copy", "copy_cupy")
IMPL_ORDER = ["ipu_gpu", "kernel", "torch", "numpy", "tensorflow",
              "ipu_gpu_cupy", "torch_cuda", "cupy", "cupy_copy", "copy_cupy"]
# The issues' goals: (group prefix, peer, largest allowed ipu_gpu / peer time, what it is).
TARGETS = [
    ("data-slices_shuffle_batch-", "tensorflow", 1.0, "tf.data from_tensor_slices -> shuffle -> "
     "batch -> repeat -> prefetch on MNIST-shaped arrays at >= 1.0× real tf.data's elements/s "
     "(issue 14)"),
    ("data-slices_shuffle_map_batch-", "tensorflow", 2.0, "the same with map(cast and scale) "
     "before batch at >= 0.5× real tf.data's elements/s (issue 14)"),
    ("mlp_train_step", "torch", 1.5, "MLP training step within 1.5× torch eager CPU (issue 2)"),
    ("mlp_train_step-b256", "torch", 1.0, "MLP 784-512-512-10 training step at batch 256 at "
     "most 1.0× torch eager CPU (issue 15)"),
    ("keras_fit-b256-", "tensorflow", 1.0, "keras `model.fit` epoch (MLP 784-512-512-10, small "
     "CNN; Adam, SGD momentum) at batch 256 at most 1.0× real tf-keras on TF's CPU kernels "
     "(issue 16)"),
    ("keras_fit-b32-", "tensorflow", 1.5, "the same at batch 32 at most 1.5× tf-keras "
     "(issue 16)"),
    ("tf1_graph_train", "tensorflow", 1.0, "TF1 graph mode: Session.run of a compiled "
     "100-iteration loops.repeat MLP training loop over an infeed at most 1.0× real TF1 graph "
     "mode running 100 sess.run(train_op) (issue 17)"),
    ("poptorch_train-S16_", "torch", 1.05, "PopTorch `trainingModel` call (MLP 784-256-10 at "
     "micro-batch 32, small CNN at 16; SGD) with deviceIterations 16, gradientAccumulation 1/4, "
     "replicationFactor 1/2 at most 1.05× the plain PyTorch loop doing the same arithmetic "
     "(issue 18)"),
    ("step_vs_kernels", "kernels", 1.15, "an eager training step at most 1.15× its own GEMMs "
     "and convolutions run back to back through the same kernels (issue 15)"),
    ("ctc_loss_fwd_bwd", "torch", 0.5, "CTC loss fwd+bwd at most 0.5× torch's time (issue 3)"),
    ("ctc_loss_fwd_bwd", "torch_cuda", 0.7,
     "On a GPU: CTC loss fwd+bwd at most 0.7× torch CUDA's time (issue 3)"),
    ("ctc_beam_search_decoder", "tensorflow", 0.05,
     "CTC beam search (beam 10) at most 0.05× TF's C++ decoder (issue 3)"),
    ("sequence_slice", "copy_numba_alloc", 1.25,
     "sequence_slice / pack / unpack at >= 80% of the 2-thread copy bandwidth (at most 1.25× a "
     "Numba prange copy of the same bytes, both allocating their output) (issue 4)"),
    ("embedding_gather", "torch", 0.9, "Embedding gather (30000x512 f32, 16384 ids) at most "
     "0.9× torch.index_select(out=) (issue 4)"),
    ("embedding_scatter_add", "torch", 0.9, "Embedding gradient scatter-add (16384x512 into "
     "30000x512) at most 0.9× torch index_add_ (issue 4)"),
    ("embedding_gather", "cupy_copy", 1.25, "On a GPU: embedding gather at >= 80% of "
     "device-to-device copy bandwidth (at most 1.25× a cupy copy of the same bytes) (issue 4)"),
    ("histogram-10M", "cupy_copy", 1.25, "On a GPU: histogram of 10M float32 over 256 levels "
     "at >= 80% of device-to-device copy bandwidth (at most 1.25× a cupy copy of the input) "
     "(issue 19)"),
    ("embedding_scatter_add", "cupy_copy", 1.25, "On a GPU: embedding scatter-add at >= 80% "
     "of copy bandwidth (at most 1.25× a cupy copy of the gradient rows) (issue 19)"),
    ("sequence_slice", "copy_cupy", 1.25, "On a GPU: sequence_slice / pack / unpack at >= 80% "
     "of copy bandwidth (at most 1.25× a cupy copy of the same bytes) (issue 19)"),
    ("mlp_train_step-b256", "torch_cuda", 1.2, "On a GPU: MLP 784-512-512-10 training step at "
     "batch 256, eager, at most 1.2× torch CUDA eager (issue 19)"),
    ("histogram-10M", "numpy", 0.3,
     "Histogram of 10M float32 over 256 explicit levels at most 0.3× np.histogram (issue 4)"),
    ("serialized_matmul-a_columns", "numpy", 1.1,
     "serialized_matmul split m ('a_columns'), 2048³ f32, F=2/4/8, within 1.1× one np.matmul "
     "(issue 5)"),
    ("serialized_matmul-b_rows", "numpy", 1.1,
     "serialized_matmul split n ('b_rows'), 2048³ f32, F=2/4/8, within 1.1× one np.matmul "
     "(issue 5)"),
    ("serialized_matmul-a_rows_b_columns", "numpy", 1.1,
     "serialized_matmul split k ('a_rows_b_columns'), 2048³ f32, F=2/4/8, within 1.1× one "
     "np.matmul (issue 15; 1.3× in issue 5)"),
    ("serialized_matmul-", "cupy", 1.1, "On a GPU: serialized_matmul 2048³ f32, F=2/4/8, every "
     "dimension, within 1.1× one cupy.matmul (issue 5)"),
    ("conv2d_fwd_bwd", "torch", 1.5,
     "conv2d 3x3 64->64 56x56 batch 8 fwd+bwd within 1.5× torch CPU (oneDNN) (issue 5)"),
    ("conv2d_fwd_bwd", "torch_cuda", 1.2,
     "On a GPU: conv2d fwd+bwd within 1.2× torch cuDNN (issue 5)"),
    ("depthwise_conv2d", "torch", 1.5,
     "depthwise_conv2d 3x3, 64 channels, 56x56, batch 8, fwd and fwd+bwd within 1.5× torch CPU "
     "(aim)"),
    ("max_pool2d", "torch", 1.5,
     "max_pool2d 3x3/2 SAME, b8 112² 64ch NHWC, fwd and fwd+bwd within 1.5× torch CPU (aim)"),
    ("avg_pool2d", "torch", 1.5,
     "avg_pool2d 3x3/2 SAME, same sizes, fwd and fwd+bwd within 1.5× torch CPU (aim)"),
]


# Absolute goals: (group prefix, impl, the sizes key counting the calls inside one timed call,
# the largest allowed time per such call in seconds, what it is).
PER_CALL_TARGETS = [
    ("loops_repeat", "ipu_gpu", "iterations", 50e-6,
     "loops.repeat overhead per iteration below 50 µs on the CPU (issue 7)"),
    ("loops_repeat-compiled", "ipu_gpu_cupy", "iterations", 10e-6,
     "On a GPU: loops.repeat in a program, replayed from a CUDA graph, below 10 µs per "
     "iteration (issue 19)"),
]


def fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} µs"


def fmt_ratio(r) -> str:
    if r is None:
        return "—"
    return f"{r:.2f}×" if r >= 0.1 else f"{r:.2g}×"


def impl_of(b) -> str:
    return (b.get("extra_info") or {}).get("impl") or (b.get("params") or {}).get("impl", "?")


def is_gpu_row(b) -> bool:
    """Whether a benchmark row ran on the GPU: ``extra_info.device`` says so, or its impl
    names cupy or CUDA (``cupy_copy``/``copy_cupy`` rows are recorded with device "cpu")."""
    impl = impl_of(b)
    return (b.get("extra_info") or {}).get("device") == "gpu" or "cupy" in impl or "cuda" in impl


def group_rows(data) -> dict:
    """{group: {impl: benchmark row}} of a pytest-benchmark JSON dict, groups sorted."""
    groups = defaultdict(dict)
    for b in data.get("benchmarks", []):
        groups[b.get("group") or b["name"]][impl_of(b)] = b
    return dict(sorted(groups.items()))


def load(path):
    with open(path) as f:
        data = json.load(f)
    return data, group_rows(data)


def compact(path):
    """Rewrite the pytest-benchmark JSON at ``path`` without each row's per-round timings."""
    with open(path) as f:
        data = json.load(f)
    for b in data.get("benchmarks", []):
        b.get("stats", {}).pop("data", None)
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))


def overlay_parts(groups, parts) -> tuple[dict, list]:
    """``groups`` with each ``(name, data)`` part's groups replacing the same-named ones
    whole, in order; and, per part, the names of the groups it supplied."""
    merged = dict(groups)
    supplied = []
    for _, data in parts:
        part_groups = group_rows(data)
        merged.update(part_groups)
        supplied.append(sorted(part_groups))
    return dict(sorted(merged.items())), supplied


def parts_sources(parts, supplied) -> str:
    """The README's sentence naming each partial rerun and the groups it supplied."""
    if not parts:
        return ""
    lines = [f"`{name}` (run on {fmt_when(data)}: {len(names)} groups, "
             f"{', '.join(sorted({n.split('-')[0] for n in names}))})"
             for (name, data), names in zip(parts, supplied)]
    return (" Later reruns of some bench files on the same machine replace whole groups: "
            + "; ".join(lines) + ".")


def cpu_of(data) -> str:
    extra = next((b.get("extra_info") for b in data.get("benchmarks", [])
                  if b.get("extra_info")), {}) or {}
    return extra.get("cpu") or ((data.get("machine_info") or {}).get("cpu") or {}).get(
        "brand_raw", "?")


def merge_gpu(groups, gpu_groups) -> dict:
    """``groups`` (the CPU run) with the GPU rows of ``gpu_groups`` (a run on a GPU machine)
    added to the same groups; a GPU row of the GPU run replaces one of the CPU run. The GPU
    run's CPU rows, if any, are left out: CPU rows all come from one machine."""
    merged = {name: dict(rows) for name, rows in groups.items()}
    for name, rows in gpu_groups.items():
        for impl, b in rows.items():
            if is_gpu_row(b):
                merged.setdefault(name, {})[impl] = b
    return dict(sorted(merged.items()))


def fmt_when(data) -> str:
    return str(data.get("datetime", "?"))[:19].replace("T", " ") + " UTC"


def machine_section(data, groups) -> str:
    extra = next((b["extra_info"] for g in groups.values() for b in g.values()
                  if b.get("extra_info")), {})
    mi = data.get("machine_info", {})
    cpu = extra.get("cpu") or (mi.get("cpu") or {}).get("brand_raw") or mi.get("processor", "?")
    rows = [
        ("CPU", cpu),
        ("vector instruction set", extra.get("vector_isa", "?")),
        ("BLAS of numpy (ipu_gpu's matmul)", extra.get("blas", "?")),
        ("torch's CPU kernels", extra.get("torch_cpu") or "—"),
        ("TensorFlow's CPU kernels", extra.get("tensorflow_cpu") or "—"),
        ("cores (os.cpu_count)", extra.get("cores", "?")),
        ("threads given to torch / Numba / TF", extra.get("threads", "?")),
        ("Numba threading layer", extra.get("numba_threading_layer") or "?"),
        ("GPU", extra.get("gpu") or "none"),
        ("python", extra.get("python") or mi.get("python_version", "?")),
        ("numpy", extra.get("numpy", "?")),
        ("numba", extra.get("numba", "?")),
        ("torch", extra.get("torch") or "not installed"),
        ("tensorflow", extra.get("tensorflow") or "not installed"),
        ("cupy", extra.get("cupy") or "not installed / no GPU"),
        ("date", data.get("datetime", "?")),
        ("pytest-benchmark", data.get("version", "?")),
    ]
    return "| | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)


def gpu_machine_section(data, groups, cpu_json="the CPU run", gpu_json="the GPU run") -> str:
    """The "GPU machine" table: facts from the GPU rows' extra_info of a run on a GPU
    machine (``groups`` of that run alone), with a line on which rows came from where."""
    extras = [b.get("extra_info") or {} for rows in groups.values() for b in rows.values()
              if is_gpu_row(b)]
    extra = next((e for e in extras if e.get("gpu")), extras[0] if extras else {})
    mi = data.get("machine_info", {})
    commit = data.get("commit_info") or {}
    cpu = extra.get("cpu") or (mi.get("cpu") or {}).get("brand_raw") or mi.get("processor", "?")
    rows = [
        ("GPU", extra.get("gpu") or "?"),
        ("cupy", extra.get("cupy") or "?"),
        ("torch", extra.get("torch") or "not installed"),
        ("CPU", cpu),
        ("cores (os.cpu_count)", extra.get("cores", "?")),
        ("python", extra.get("python") or mi.get("python_version", "?")),
        ("numpy", extra.get("numpy", "?")),
        ("numba", extra.get("numba", "?")),
        ("commit", (str(commit.get("id") or "?")[:12]
                    + (" (dirty)" if commit.get("dirty") else ""))),
        ("date", data.get("datetime", "?")),
        ("pytest-benchmark", data.get("version", "?")),
    ]
    text = (f"The GPU rows of every table below ({len(extras)} rows: `ipu_gpu_cupy`, "
            f"`torch_cuda`, `cupy`, the `cupy` copy anchors) come from `{gpu_json}`, run on "
            f"this machine; the CPU rows come from `{cpu_json}`, run on the machine of the "
            "table above. A ratio is only ever taken between two rows of the same machine.")
    return (f"## GPU machine\n\n{text}\n\n| | |\n|---|---|\n"
            + "\n".join(f"| {k} | {v} |" for k, v in rows) + "\n")


def fmt_num(x: float) -> str:
    """A float to 3 significant digits, without an exponent between 1e-3 and 1e6."""
    if not math.isfinite(x) or x == 0:
        return str(x)
    if 1e-3 <= abs(x) < 1e6:
        digits = 2 - math.floor(math.log10(abs(x)))
        return f"{round(x, digits):.{max(digits, 0)}f}"
    return f"{x:.3g}"


def fmt_value(v) -> str:
    if isinstance(v, bool) or v is None or isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return fmt_num(v)
    if isinstance(v, dict):
        return ", ".join(f"{k}: {fmt_value(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt_value(x) for x in v) + "]"
    return " ".join(str(v).split())


def cell(v, width=200) -> str:
    """``v`` formatted for one markdown table cell: one line, pipes escaped, shortened."""
    text = fmt_value(v)
    if len(text) > width:
        text = text[:width - 3] + "..."
    return text.replace("|", "\\|")


def probe_section(probe, source="the probe") -> str:
    """The measurements of tools/gpu_probe.py ({name: {key: value}}), rendered generically:
    per name, a key/value table of its plain values and a table of its dict values (one row
    each, a column per inner key); ``trace`` keys are left out, ``error`` shown as an error."""
    if not probe:
        return ""
    out = ["## GPU: CUDA graphs, replica and infeed overlap", "",
           f"Measured by `tools/gpu_probe.py` on the GPU machine (`{source}`): what no pytest "
           "row measures. Units are in the names (`_us`, `_ms`, `GBps`; `_over_` is a ratio); "
           "numbers to 3 significant digits.", ""]
    for name, vals in probe.items():
        out += [f"### {name}", ""]
        if not isinstance(vals, dict):
            out += [cell(vals), ""]
            continue
        vals = {k: v for k, v in vals.items() if k != "trace"}
        if "error" in vals:
            out += [f"**error**: {cell(vals.pop('error'), 400)}", ""]
        plain = {k: v for k, v in vals.items() if not isinstance(v, dict)}
        nested = {k: v for k, v in vals.items() if isinstance(v, dict)}
        if plain:
            out += ["| | |", "|---|---|"]
            out += [f"| {cell(k)} | {cell(v)} |" for k, v in plain.items()]
            out.append("")
        if nested:
            cols = list(dict.fromkeys(k for v in nested.values() for k in v))
            out += ["| | " + " | ".join(cell(c) for c in cols) + " |",
                    "|---|" + "---|" * len(cols)]
            out += [f"| {cell(k)} | " + " | ".join(cell(v[c]) if c in v else "—" for c in cols)
                    + " |" for k, v in nested.items()]
            out.append("")
    return "\n".join(out)


def median(b):
    return b["stats"]["median"] if b else None


def ratio(ours, other):
    if ours is None or other is None or not other:
        return None
    return ours / other


def paired_ratio(rows, ours_impl, peer):
    """(ratio, interleaved?): ours / peer from the interleaved measurement inside our row
    when it has one for this peer, else from the two rows' medians."""
    b = rows.get(ours_impl)
    pair = ((b or {}).get("extra_info") or {}).get("paired")
    if pair and pair.get("impl") == peer:
        return ratio(median(b), pair["median"]), True
    return ratio(median(b), median(rows.get(peer))), False


def fmt_paired(r_and_flag) -> str:
    r, interleaved = r_and_flag
    return fmt_ratio(r) + (" (i)" if interleaved and r is not None else "")


def summary_section(groups) -> str:
    head = ("| group | ipu_gpu | ipu_gpu / torch | ipu_gpu / numpy | ipu_gpu / tensorflow "
            "| ipu_gpu(cupy) | ipu_gpu(cupy) / torch CUDA | ipu_gpu(cupy) / cupy "
            "| ipu_gpu(cupy) / cupy copy |\n"
            "|---|---|---|---|---|---|---|---|---|")
    lines = []
    for name, rows in groups.items():
        if "ipu_gpu" not in rows and "ipu_gpu_cupy" not in rows:
            continue
        ours = median(rows.get("ipu_gpu"))
        gpu_ours = median(rows.get("ipu_gpu_cupy"))
        copy = next((p for p in GPU_COPY_PEERS if p in rows), GPU_COPY_PEERS[0])
        cells = [fmt_time(ours) if ours else "—"]
        cells += [fmt_paired(paired_ratio(rows, "ipu_gpu", p)) for p in PEER_ORDER]
        cells += [fmt_time(gpu_ours) if gpu_ours else "—"]
        cells += [fmt_paired(paired_ratio(rows, "ipu_gpu_cupy", p))
                  for p in [*GPU_PEERS[:-1], copy]]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return head + "\n" + "\n".join(lines) if lines else "(no ipu_gpu rows in this run)"


def target_section(groups) -> str:
    out = ["**Targets** (ipu_gpu time / peer time, met when at or below the limit):"]
    for prefix, peer, limit, what in TARGETS:
        out.append(f"- {what}:")
        for name, rows in groups.items():
            if not name.startswith(prefix):
                continue
            ours = "ipu_gpu_cupy" if peer in (*GPU_PEERS, *GPU_COPY_PEERS) else "ipu_gpu"
            r, interleaved = paired_ratio(rows, ours, peer)
            if r is None:
                out.append(f"  - {name}: not measured ({ours} or {peer} row missing)")
            else:
                verdict = "met" if r <= limit else f"NOT met, {r / limit:.2f}× over"
                how = "interleaved" if interleaved else "separate rows"
                out.append(f"  - {name}: {fmt_ratio(r)} ({verdict}; {how})")
    return "\n".join(out)


def per_call_section(groups) -> str:
    out = []
    for prefix, impl, key, limit, what in PER_CALL_TARGETS:
        lines = []
        for name, rows in groups.items():
            b = rows.get(impl)
            count = ((b or {}).get("extra_info") or {}).get("sizes", {}).get(key)
            if name.startswith(prefix) and b and count:
                t = median(b) / count
                verdict = "met" if t <= limit else f"NOT met, {t / limit:.2f}× over"
                lines.append(f"  - {name}: {fmt_time(t)} per {key[:-1]} ({verdict})")
        if lines:
            out += [f"- {what}:", *lines]
    return "\n".join(out)


def dispatch_section(groups) -> str:
    """Per-op cost of the dispatch groups: time per call / ops per call, per implementation."""
    lines = []
    for name, rows in groups.items():
        if not name.startswith("dispatch-"):
            continue
        cells = []
        for impl in ("ipu_gpu", "numpy", "torch"):
            b = rows.get(impl)
            ops = ((b or {}).get("extra_info") or {}).get("sizes", {}).get("ops")
            if b and ops:
                cells.append(f"{impl} {median(b) / ops * 1e6:.1f} µs")
        if cells:
            lines.append(f"- {name[len('dispatch-'):]}: " + ", ".join(cells) + " per op")
    if not lines:
        return ""
    return ("**Per-op dispatch cost** (1-element tensors, so the time is what every op pays "
            "whatever its size: conversion, checks, kernel choice, output wrapping, tape "
            "record and backward rule):\n" + "\n".join(lines))


def kernel_section(groups) -> str:
    lines = []
    for name, rows in groups.items():
        r = ratio(median(rows.get("kernel")), median(rows.get("numpy")))
        if r is not None:
            lines.append(f"- {name}: kernel / numpy = {r:.2f}× "
                         f"({fmt_time(median(rows['kernel']))} vs "
                         f"{fmt_time(median(rows['numpy']))})")
    if not lines:
        return ""
    return ("**Kernels called directly** (the `kernel` rows: an op's CPU kernel, e.g. "
            "`softmax_cpu` or `sequence_slice_cpu`, writing into its outputs) against the "
            "group's `numpy` row (plain numpy array expressions for the same result):\n"
            + "\n".join(lines))


def group_table(name, rows) -> str:
    ours_impl = next((i for i in ("ipu_gpu", "kernel") if i in rows), None)
    ours = median(rows.get(ours_impl)) if ours_impl else None
    gpu_ours = median(rows.get("ipu_gpu_cupy"))
    order = [i for i in IMPL_ORDER if i in rows] + sorted(set(rows) - set(IMPL_ORDER))
    sizes = next((b["extra_info"].get("sizes") for b in rows.values()
                  if b.get("extra_info", {}).get("sizes")), None)
    out = [f"### {name}", ""]
    if sizes:
        out += ["sizes: " + ", ".join(f"{k}={v}" for k, v in sizes.items()), ""]
    last = f"{ours_impl or 'ours'} / this"
    if gpu_ours is not None:
        last += " (GPU rows: ipu_gpu_cupy / this)"
    out += [f"| implementation | median | IQR | rounds | {last} |",
            "|---|---|---|---|---|"]
    for impl in order:
        st = rows[impl]["stats"]
        mine = gpu_ours if is_gpu_row(rows[impl]) else ours
        out.append(f"| {impl} | {fmt_time(st['median'])} | {fmt_time(st['iqr'])} | "
                   f"{st['rounds']} | {fmt_ratio(ratio(mine, st['median']))} |")
    return "\n".join(out)


def base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def render(data, groups, cpu_json="bench.json", gpu=None, gpu_json="gpu.json", probe=None,
           probe_json="probe.json", parts=()) -> str:
    """(README text, merged groups): ``data``/``groups`` the CPU run (its JSON dict and
    ``group_rows``), ``gpu`` the JSON dict of a run on a GPU machine whose GPU rows join the
    groups, ``probe`` the dict tools/gpu_probe.py wrote, ``parts`` ``(name, JSON dict)``
    partial CPU reruns on the same machine laid over the CPU run."""
    for name, part in parts:
        if cpu_of(part) != cpu_of(data):
            raise ValueError(f"{name} ran on {cpu_of(part)!r}, not on the CPU run's "
                             f"{cpu_of(data)!r}: its rows cannot join that run's table")
    groups, supplied = overlay_parts(groups, parts)
    sources = f"`{cpu_json}` (run on {fmt_when(data)})"
    gpu_machine = ""
    if gpu is not None:
        gpu_groups = group_rows(gpu)
        gpu_machine = "\n" + gpu_machine_section(gpu, gpu_groups, cpu_json, gpu_json)
        sources = (f"`{cpu_json}` (the CPU rows, run on {fmt_when(data)} on the machine of "
                   f"the first table) and `{gpu_json}` (the GPU rows, run on {fmt_when(gpu)} "
                   "on the GPU machine of the second table)")
        machine = machine_section(data, groups)
        groups = merge_gpu(groups, gpu_groups)
    else:
        machine = machine_section(data, groups)
    if probe:
        sources += f", with the GPU probe `{probe_json}` (tools/gpu_probe.py)"
    sources += "." + parts_sources(parts, supplied)
    return TEMPLATE.format(
        sources=sources,
        machine=machine,
        gpu_machine=gpu_machine,
        summary=summary_section(groups),
        target="\n\n".join(filter(None, [
            "\n".join(filter(None, [target_section(groups), per_call_section(groups)])),
            dispatch_section(groups)])),
        kernel=kernel_section(groups),
        probe=("\n" + probe_section(probe, probe_json) + "\n") if probe else "",
        groups="\n\n".join(group_table(n, r) for n, r in groups.items()),
    ), groups


def main(argv):
    ap = argparse.ArgumentParser(prog="report.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cpu_json", help="pytest-benchmark JSON of the full run (bench/.last.json)")
    ap.add_argument("readme", help="the README to (re)write (bench/README.md)")
    ap.add_argument("--gpu", metavar="GPU.json",
                    help="pytest-benchmark JSON of the -m gpu run on a GPU machine")
    ap.add_argument("--probe", metavar="PROBE.json", help="JSON written by tools/gpu_probe.py")
    ap.add_argument("--also", metavar="PART.json", action="append", default=[],
                    help="a partial CPU rerun whose groups replace the CPU run's (repeatable)")
    ap.add_argument("--compact", action="store_true",
                    help="first rewrite the input JSON files without per-round timings")
    args = ap.parse_args(argv[1:])
    if args.compact:
        for path in [args.cpu_json, *args.also, *filter(None, [args.gpu])]:
            compact(path)
    data, groups = load(args.cpu_json)
    parts = [(base(p), load(p)[0]) for p in args.also]
    gpu = probe = None
    if args.gpu:
        with open(args.gpu) as f:
            gpu = json.load(f)
    if args.probe:
        with open(args.probe) as f:
            probe = json.load(f)
    text, groups = render(data, groups, base(args.cpu_json), gpu,
                          base(args.gpu or "gpu.json"), probe, base(args.probe or "probe.json"),
                          parts)
    with open(args.readme, "w") as f:
        f.write(text)
    print(f"wrote {args.readme}: {len(groups)} groups")
    print(summary_section(groups))
    print(target_section(groups))
    print(per_call_section(groups))
    print(kernel_section(groups))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
