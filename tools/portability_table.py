r"""The portability table of trees of IPU programs (docs/portability.md): `ipu-gpu check --json`
on each program, then programs fully provided / with missing symbols and the most-missed
symbols, as Markdown: one section per tree, and with several trees a ranking over all of them.

A program is a folder holding .py/.ipynb files that use an aliased package (TensorFlow, Keras,
ipu_tensorflow_addons, PopTorch, popdist): its own files, without tests (test_*.py, *_test.py,
conftest.py, tests/ and test/ folders, which drive the program rather than being it) and
without its subfolders (a subfolder holding such files is a program of its own). A symbol a
program reaches from several of its files counts once, and as missing if any file misses it.
Program names are paths relative to the folder above the tree.

Extract the trees from clones (or the bare mirrors) of graphcore/examples and
graphcore/tutorials (`extract REPO REV PATTERN DEST`; files over 2 MB are data, left out):

    extract() { git --git-dir="$1" ls-tree -r -l "$2" | awk '$4 < 2000000' | cut -f2 |
        grep -E "$3" | while read f; do mkdir -p "$4/$(dirname "$f")";
        git --git-dir="$1" show "$2:$f" > "$4/$f"; done; }
    extract EXAMPLES 3cc8f81f13728dd8c17d0d3c8d2fc1549b159485 '^tutorials/.*\.(py|ipynb)$' \
        /tmp/gc_examples
    extract EXAMPLES v2.5.0 '^applications/(tensorflow|tensorflow2|pytorch|keras)/.*\.(py|ipynb)$' \
        /tmp/gc_apps
    extract TUTORIALS sdk-release-2.6 '\.(py|ipynb)$' /tmp/gc_tutorials_repo/graphcore-tutorials
    python tools/portability_table.py \
        /tmp/gc_examples/tutorials --source "graphcore/examples at ..." \
        /tmp/gc_apps/applications --source "graphcore/examples at ..." \
        /tmp/gc_tutorials_repo/graphcore-tutorials --source "graphcore/tutorials at ..." \
        > docs/portability.md
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST_FOLDERS = {"tests", "test"}


# Why a missing symbol is not provided, where that is known (longest prefix wins): the notes
# column of the rankings. Symbols without a note are simply not done yet.
NOTES = {
    "tensorflow.compiler":
        "out of scope: TF's compiler internals; programs take the Poplar plugin's generated "
        "raw-op bindings from it (private; the public `ipu.*` modules wrapping them are "
        "emulated)",
    "tensorflow.python.framework.graph_util":
        "needs GraphDef protobufs of ipu_gpu's TF1 graphs (ipu_gpu/graph)",
    "tensorflow.compat.v1.graph_util":
        "needs GraphDef protobufs of ipu_gpu's TF1 graphs (ipu_gpu/graph)",
    "tensorflow.core.framework": "TF's protobuf messages (GraphDef, AttrValue): as graph_util",
    "tensorflow.compat.v1.GraphDef": "TF's protobuf messages: as graph_util",
    "tensorflow.compat.v1.import_graph_def": "TF's protobuf messages: as graph_util",
    "tensorflow.python.tools": "freeze_graph and other GraphDef tools: as graph_util",
    "tensorflow.python.training.training_ops":
        "the raw optimizer kernels take `var.handle`; ipu_gpu variables have no resource "
        "handle (ipu_gpu/core, ipu_gpu/graph)",
    "tensorflow.compat.v1.profiler": "FLOP/memory profiles of a GraphDef: as graph_util",
    "tensorflow.raw_ops": "TF's raw-op namespace, one name per C++ kernel",
}


def note(symbol: str) -> str:
    best = ""
    for prefix in NOTES:
        if (symbol == prefix or symbol.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    return NOTES.get(best, "")


def is_test(name: str) -> bool:
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def program_folders(tree: str) -> dict:
    """{folder: [its non-test .py/.ipynb files]} for every folder under ``tree``."""
    out = {}
    for root, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in TEST_FOLDERS and not d.startswith("."))
        files = [os.path.join(root, n) for n in sorted(names)
                 if n.endswith((".py", ".ipynb")) and not is_test(n)]
        if files:
            out[root] = files
    return out


def check(files: list) -> dict:
    """What `ipu-gpu check --json FILES` prints, computed in this process (one interpreter for
    every program: starting one per program was most of the time)."""
    os.environ.setdefault("IPU_GPU_BACKEND", "cpu")
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from ipu_gpu.portability import check_files

    return json.loads(check_files(files).to_json())


def summarize(folder: str, report: dict) -> dict | None:
    """One program's row, or None when it uses no aliased package."""
    status: dict = {}  # symbol -> (provided, first missing prefix)
    versions, errors = set(), 0
    for f in report["files"]:
        errors += len(f["errors"])
        if f["tf_version"] is not None:
            versions.add(f["tf_version"])
        for entries in f["groups"].values():
            for e in entries:
                old = status.get(e["symbol"], (True, None))
                status[e["symbol"]] = (old[0] and e["provided"],
                                       old[1] if not old[0] else e.get("missing"))
    if not status:
        return None
    tops = {s.split(".")[0] for s in status}
    missing = {s: m for s, (ok, m) in status.items() if not ok}
    return {"program": folder, "files": len(report["files"]), "errors": errors,
            "frameworks": sorted(tops), "tf_versions": sorted(versions),
            "symbols": len(status), "provided": len(status) - len(missing),
            "missing": missing}


def _ipu_gpu_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _ranked(counter: collections.Counter, n: int = 20) -> list:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def _rank_tables(rows: list, h: str) -> list:
    """The most-missed symbols and first missing prefixes of ``rows``, headings at level ``h``."""
    by_symbol = collections.Counter(s for r in rows for s in r["missing"])
    by_prefix = collections.Counter(p for r in rows for p in set(r["missing"].values()))
    lines = [f"{h} The 20 most-missed symbols", "",
             "| # | Symbol | Programs missing it | Note |", "|---:|---|---:|---|"]
    lines += [f"| {i} | `{s}` | {n} | {note(s)} |"
              for i, (s, n) in enumerate(_ranked(by_symbol), 1)]
    lines += [
        "", f"{h} The 20 most-missed modules and names", "",
        "The first part of each missing symbol ipu_gpu lacks (`tensorflow.keras.layers` for "
        "`tensorflow.keras.layers.Dense` when the whole module is absent): one entry here is "
        "often one issue.", "",
        "| # | Missing from ipu_gpu | Programs | Note |", "|---:|---|---:|---|"]
    lines += [f"| {i} | `{s}` | {n} | {note(s)} |"
              for i, (s, n) in enumerate(_ranked(by_prefix), 1)]
    return lines + [""]


def _summary(rows: list, skipped: list) -> list:
    full = [r for r in rows if not r["missing"] and not r["errors"]]
    return [
        f"- Programs: {len(rows)}",
        f"- Fully provided: {len(full)}",
        f"- With missing symbols: {sum(bool(r['missing']) for r in rows)}",
        f"- With files `check` could not read: {sum(bool(r['errors']) for r in rows)}",
        f"- TensorFlow programs: {sum('tensorflow' in r['frameworks'] for r in rows)}, "
        f"PopTorch programs: {sum('poptorch' in r['frameworks'] for r in rows)}",
        f"- Symbols used, summed over programs: {sum(r['symbols'] for r in rows)}, of which "
        f"provided: {sum(r['provided'] for r in rows)}",
        f"- Distinct missing symbols: {len({s for r in rows for s in r['missing']})}",
        f"- Folders using none of the aliased packages (left out): {len(skipped)}",
        "",
    ]


def _tree_section(tree: dict, h: str) -> list:
    rows, skipped = tree["programs"], tree["skipped"]
    lines = [f"{h} Summary", "", f"Source: {tree['source']}.", ""] + _summary(rows, skipped)
    lines += _rank_tables(rows, h)
    lines += [
        f"{h} Programs", "",
        "| Program | Uses | Files | Symbols | Provided | Missing | Fully provided |",
        "|---|---|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        uses = ", ".join(r["frameworks"])
        if r["tf_versions"]:
            uses += " (TF" + "/".join(str(v) for v in r["tf_versions"]) + ")"
        full = not r["missing"] and not r["errors"]
        mark = "yes" if full else ("no (unreadable file)" if r["errors"] else "no")
        lines.append(f"| `{r['program']}` | {uses} | {r['files']} | {r['symbols']} | "
                     f"{r['provided']} | {len(r['missing'])} | {mark} |")
    lines += ["", f"{h} Left out", "",
              "Folders whose .py/.ipynb files import none of the aliased packages (Poplar, "
              "PopART, PopXL, PopVision's libpva, optimum-graphcore, the repository's own test "
              "utilities):", ""]
    lines += [f"- `{name}`" for name in skipped]
    return lines + [""]


def markdown(trees: list) -> str:
    """The document: how it was made, then per tree its summary, rankings and programs; with
    several trees first the rankings over all their programs."""
    args = " ".join(f"{t['tree']} --source \"...\"" for t in trees)
    lines = [
        "# Portability of Graphcore's example programs",
        "",
        "What `ipu-gpu check` says about each program of trees of Graphcore's public example "
        "code: how many of the TensorFlow, IPU, Keras and PopTorch symbols it uses ipu_gpu "
        "provides. The next issues are ranked by the most-missed symbols below.",
        "",
        "## How it was produced",
        "",
    ]
    lines += [f"- Tree `{os.path.basename(t['tree'])}/`: {t['source']}; its `.py`/`.ipynb` "
              "files extracted with `git show` (Graphcore's code is not in this repository)."
              for t in trees]
    lines += [
        f"- Generated {datetime.date.today().isoformat()} with ipu_gpu at commit "
        f"`{_ipu_gpu_commit()}` by `python tools/portability_table.py {args} > "
        "docs/portability.md`, which runs `ipu-gpu check --json FILES...` on each "
        "program (the extraction commands are in the script's docstring).",
        "- A program is a folder with `.py`/`.ipynb` files using TensorFlow, Keras, "
        "ipu_tensorflow_addons, PopTorch or popdist (tests and subfolders left out; a "
        "subfolder is its own program). A symbol counts once per program, as missing if any "
        "of the program's files misses it. Each file is read as the TensorFlow version "
        "`aliases.detect_tf_version` gives it.",
        "- Not counted: `torch`, `torchvision`, `numpy` and other packages ipu_gpu does not "
        "alias (PopTorch programs still need the real PyTorch); attributes of objects "
        "(`model.fit`, `opts.deviceIterations`); dynamic access.",
        "",
    ]
    if len(trees) == 1:
        return "\n".join(lines + ["## Summary", ""] + _tree_section(trees[0], "##")[4:])
    rows = [r for t in trees for r in t["programs"]]
    lines += ["## All trees", ""] + _summary(rows, [n for t in trees for n in t["skipped"]])
    lines += _rank_tables(rows, "###")
    for t in trees:
        lines += [f"## Tree `{os.path.basename(t['tree'])}/` ({t['source'].split()[0]})", ""]
        lines += _tree_section(t, "###")
    return "\n".join(lines)


def table(tree: str, source: str) -> dict:
    """The rows of one tree: {tree, source, programs, skipped}."""
    base = os.path.dirname(os.path.abspath(tree))
    rows, skipped = [], []
    for folder, files in program_folders(tree).items():
        name = os.path.relpath(folder, base)
        row = summarize(name, check(files))
        (skipped.append(name) if row is None else rows.append(row))
    return {"tree": tree, "source": source, "programs": rows, "skipped": skipped}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", metavar="TREE",
                        help="a tree of programs (the tutorials/ folder of graphcore/examples)")
    parser.add_argument("--source", action="append", default=[],
                        help="where a tree came from (repository, commit, date); one per tree, "
                             "in the trees' order")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_intermixed_args(argv)
    sources = args.source or ["graphcore/examples"] * len(args.trees)
    if len(sources) != len(args.trees):
        parser.error(f"{len(args.trees)} trees but {len(sources)} --source")
    trees = [table(t, s) for t, s in zip(args.trees, sources)]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(trees[0] if len(trees) == 1 else {"trees": trees}, f, indent=2)
    print(markdown(trees))
    return 0


if __name__ == "__main__":
    sys.exit(main())
