r"""The portability table of a tree of IPU programs (docs/portability.md): `ipu-gpu check --json`
on each program, then programs fully provided / with missing symbols and the most-missed
symbols, as Markdown.

A program is a folder holding .py/.ipynb files that use an aliased package (TensorFlow, Keras,
ipu_tensorflow_addons, PopTorch, popdist): its own files, without tests (test_*.py, *_test.py,
conftest.py, tests/ and test/ folders, which drive the program rather than being it) and
without its subfolders (a subfolder holding such files is a program of its own). A symbol a
program reaches from several of its files counts once, and as missing if any file misses it.

Extract the tree from a clone (or bare mirror) of graphcore/examples, then run:

    git --git-dir=REPO ls-tree -r HEAD --name-only | grep -E '^tutorials/.*\.(py|ipynb)$' |
        while read f; do mkdir -p "/tmp/gc_examples/$(dirname "$f")";
        git --git-dir=REPO show "HEAD:$f" > "/tmp/gc_examples/$f"; done
    python tools/portability_table.py /tmp/gc_examples/tutorials \
        --source "graphcore/examples at commit COMMIT (DATE)" > docs/portability.md
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
    """`ipu-gpu check --json FILES` (exit status 1 just means something is missing)."""
    out = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "check", "--json", *files],
                         capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, IPU_GPU_BACKEND="cpu"))
    if out.returncode not in (0, 1):
        raise RuntimeError(f"ipu-gpu check failed ({out.returncode}): {out.stderr}")
    return json.loads(out.stdout)


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


def markdown(rows: list, source: str, tree: str, skipped: list) -> str:
    full = [r for r in rows if not r["missing"] and not r["errors"]]
    by_symbol = collections.Counter(s for r in rows for s in r["missing"])
    by_prefix = collections.Counter(p for r in rows for p in set(r["missing"].values()))
    total_symbols = len({s for r in rows for s in r["missing"]})
    lines = [
        "# Portability of Graphcore's tutorials",
        "",
        "What `ipu-gpu check` says about each program of the `tutorials/` tree of Graphcore's "
        "examples repository (Poplar SDK 3.x): how many of the TensorFlow, IPU, Keras and "
        "PopTorch symbols it uses ipu_gpu provides. The next issues are ranked by the "
        "most-missed symbols below.",
        "",
        "## How it was produced",
        "",
        f"- Source: {source}; the `.py`/`.ipynb` files of `tutorials/` extracted with "
        "`git show` (Graphcore's code is not in this repository).",
        f"- Generated {datetime.date.today().isoformat()} with ipu_gpu at commit "
        f"`{_ipu_gpu_commit()}` by `python tools/portability_table.py {tree} --source "
        "\"...\" > docs/portability.md`, which runs `ipu-gpu check --json FILES...` on each "
        "program (the extraction commands are in the script's docstring).",
        "- A program is a folder with `.py`/`.ipynb` files using TensorFlow, Keras, "
        "ipu_tensorflow_addons, PopTorch or popdist (tests and subfolders left out; a "
        "subfolder is its own program). A symbol counts once per program, as missing if any "
        "of the program's files misses it. Each file is read as the TensorFlow version "
        "`aliases.detect_tf_version` gives it.",
        "- Not counted: `torch`, `torchvision`, `numpy` and other packages ipu_gpu does not "
        "alias (PopTorch programs still need the real PyTorch); attributes of objects "
        "(`model.fit`, `opts.deviceIterations`); dynamic access.",
        f"- Folders using none of those packages are left out ({len(skipped)}, listed at the "
        "end).",
        "",
        "## Summary",
        "",
        f"- Programs: {len(rows)}",
        f"- Fully provided: {len(full)}",
        f"- With missing symbols: {sum(bool(r['missing']) for r in rows)}",
        f"- With files `check` could not read: {sum(bool(r['errors']) for r in rows)}",
        f"- TensorFlow programs: {sum('tensorflow' in r['frameworks'] for r in rows)}, "
        f"PopTorch programs: {sum('poptorch' in r['frameworks'] for r in rows)}",
        f"- Symbols used, summed over programs: {sum(r['symbols'] for r in rows)}, of which "
        f"provided: {sum(r['provided'] for r in rows)}",
        f"- Distinct missing symbols: {total_symbols}",
        "",
        "## The 20 most-missed symbols",
        "",
        "| # | Symbol | Programs missing it |",
        "|---:|---|---:|",
    ]
    ranked = sorted(by_symbol.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
    lines += [f"| {i} | `{s}` | {n} |" for i, (s, n) in enumerate(ranked, 1)]
    lines += [
        "",
        "## The 20 most-missed modules and names",
        "",
        "The first part of each missing symbol ipu_gpu lacks (`tensorflow.keras.layers` for "
        "`tensorflow.keras.layers.Dense` when the whole module is absent): one entry here is "
        "often one issue.",
        "",
        "| # | Missing from ipu_gpu | Programs |",
        "|---:|---|---:|",
    ]
    ranked = sorted(by_prefix.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
    lines += [f"| {i} | `{s}` | {n} |" for i, (s, n) in enumerate(ranked, 1)]
    lines += [
        "",
        "## Programs",
        "",
        "| Program | Uses | Files | Symbols | Provided | Missing | Fully provided |",
        "|---|---|---:|---:|---:|---:|:---:|",
    ]
    for r in rows:
        uses = ", ".join(r["frameworks"])
        if r["tf_versions"]:
            uses += " (TF" + "/".join(str(v) for v in r["tf_versions"]) + ")"
        mark = "yes" if r in full else ("no (unreadable file)" if r["errors"] else "no")
        lines.append(f"| `{r['program']}` | {uses} | {r['files']} | {r['symbols']} | "
                     f"{r['provided']} | {len(r['missing'])} | {mark} |")
    lines += ["", "## Left out", "",
              "Folders whose .py/.ipynb files import none of the aliased packages (Poplar, "
              "PopART, PopXL, PopVision's libpva, optimum-graphcore, the repository's own test "
              "utilities):", ""]
    lines += [f"- `{name}`" for name in skipped]
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", help="the tutorials/ folder of graphcore/examples")
    parser.add_argument("--source", default="graphcore/examples",
                        help="where the tree came from (repository, commit, date)")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    base = os.path.dirname(os.path.abspath(args.tree))
    rows, skipped = [], []
    for folder, files in program_folders(args.tree).items():
        name = os.path.relpath(folder, base)
        row = summarize(name, check(files))
        (skipped.append(name) if row is None else rows.append(row))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"source": args.source, "programs": rows, "skipped": skipped}, f,
                      indent=2)
    print(markdown(rows, args.source, args.tree, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())
