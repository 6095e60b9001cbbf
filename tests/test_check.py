"""`ipu-gpu check`: the symbols a program uses, read from its AST, provided or missing, and
the agreement with `ipu-gpu run`'s import aliases (a symbol check calls provided imports and
resolves under the aliases; a missing one raises naming the symbol).

Symbols other rooms are adding (Keras layers, IPUStrategy, poptorch, tf.data, placeholders)
are only checked for agreement, not pinned as missing: the test programs' deliberate typos
and TF1's contrib.framework stay missing whatever ipu_gpu grows."""

import ast
import contextlib
import importlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import types

import pytest

from ipu_gpu import aliases, cli, portability
from ipu_gpu.compat import behavior

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_programs")
TUTORIAL_STYLE = ["tf2_keras.py", "tf1_loops.py", "poptorch_mnist.py", "provided_only.py",
                  "keras_notebook.ipynb"]


def program(name):
    return os.path.join(PROGRAMS, name)


def check(name, **kwargs):
    report = portability.check_files([program(name)], **kwargs)
    assert len(report.files) == 1
    return report.files[0]


def symbols(file_report):
    return {s.name: s for s in file_report.symbols}


def provided(file_report):
    return {s.name for s in file_report.symbols if s.provided}


def missing(file_report):
    return {s.name for s in file_report.symbols if not s.provided}


# ---- what check sees ----------------------------------------------------------------------------
def test_tf2_keras_program():
    f = check("tf2_keras.py")
    assert f.tf_version == 2 and f.errors == []
    assert set(symbols(f)) == {
        "tensorflow", "tensorflow.keras", "tensorflow.python.ipu",
        "tensorflow.python.ipu.config.IPUConfig",
        "tensorflow.python.ipu.config.DeviceConnectionType.ON_DEMAND",
        "tensorflow.python.ipu.ipu_strategy.IPUStrategy",
        "tensorflow.python.ipu.utils.not_a_graphcore_function",
        "tensorflow.keras.datasets.mnist.load_data", "tensorflow.keras.utils.to_categorical",
        "tensorflow.data.Dataset.from_tensor_slices", "tensorflow.keras.Sequential",
        "tensorflow.keras.layers.Flatten", "tensorflow.keras.layers.Dense", "tensorflow.nn.relu",
        "tensorflow.keras.losses.CategoricalCrossentropy", "tensorflow.keras.optimizers.SGD",
    }  # never numpy, never attributes of instances (cfg.auto_select_ipus, model.fit)
    assert {"tensorflow", "tensorflow.python.ipu", "tensorflow.python.ipu.config.IPUConfig",
            "tensorflow.python.ipu.config.DeviceConnectionType.ON_DEMAND",
            "tensorflow.nn.relu"} <= provided(f)
    assert "tensorflow.python.ipu.utils.not_a_graphcore_function" in missing(f)
    s = symbols(f)
    assert s["tensorflow.python.ipu.config.IPUConfig"].lines == [6, 9]  # import and call
    assert s["tensorflow.keras.layers.Dense"].lines == [26, 27]
    assert s["tensorflow.keras.layers.Dense"].as_written == "keras.layers.Dense"
    typo = s["tensorflow.python.ipu.utils.not_a_graphcore_function"]
    assert typo.missing == "tensorflow.python.ipu.utils.not_a_graphcore_function"
    assert typo.reason == ("ipu_gpu does not emulate "
                           "tensorflow.python.ipu.utils.not_a_graphcore_function")
    assert typo.group == "tensorflow.python.ipu"
    assert list(f.groups()) == ["tensorflow.python.ipu", "tensorflow.keras", "tensorflow"]


def test_tf1_program_reads_compat_v1_names():
    f = check("tf1_loops.py")
    assert f.tf_version == 1
    assert set(symbols(f)) == {
        "tensorflow.compat.v1", "tensorflow.compat.v1.disable_v2_behavior",
        "tensorflow.compat.v1.data.Dataset.from_tensors", "tensorflow.compat.v1.reduce_sum",
        "tensorflow.compat.v1.constant", "tensorflow.compat.v1.multiply",
        "tensorflow.compat.v1.placeholder", "tensorflow.compat.v1.float32",
        "tensorflow.compat.v1.Session", "tensorflow.compat.v1.contrib.framework.get_name_scope",
        "tensorflow.python.ipu", "tensorflow.python.ipu.ipu_compiler",
        "tensorflow.python.ipu.loops", "tensorflow.python.ipu.scopes",
        "tensorflow.python.ipu.ipu_infeed_queue.IPUInfeedQueue",
        "tensorflow.python.ipu.loops.repeat", "tensorflow.python.ipu.scopes.ipu_scope",
        "tensorflow.python.ipu.ipu_compiler.compile", "tensorflow.python.ipu.config.IPUConfig",
    }
    assert {"tensorflow.compat.v1", "tensorflow.compat.v1.disable_v2_behavior",
            "tensorflow.compat.v1.constant", "tensorflow.python.ipu.ipu_compiler.compile",
            "tensorflow.python.ipu.loops.repeat", "tensorflow.python.ipu.scopes.ipu_scope",
            "tensorflow.python.ipu.ipu_infeed_queue.IPUInfeedQueue"} <= provided(f)
    contrib = symbols(f)["tensorflow.compat.v1.contrib.framework.get_name_scope"]
    assert contrib.provided and contrib.group == "tensorflow.compat.v1"  # E2 provides it


def test_poptorch_program():
    f = check("poptorch_mnist.py")
    assert f.tf_version is None  # no TensorFlow in it
    assert set(symbols(f)) == {
        "poptorch", "poptorch.optim", "poptorch.Options", "poptorch.DataLoader",
        "poptorch.DataLoaderMode.Async", "poptorch.optim.SGD", "poptorch.trainingModel",
        "poptorch.not_a_poptorch_function",
    }  # torch and torchvision are not aliased: the real PyTorch runs them
    assert "poptorch.not_a_poptorch_function" in missing(f)
    assert symbols(f)["poptorch.optim.SGD"].as_written == "optim.SGD"
    assert {s.group for s in f.symbols} == {"poptorch"}


def test_fully_provided_program():
    f = check("provided_only.py")
    assert missing(f) == set() and f.errors == []
    assert "tensorflow.python.ipu.ipu_compiler.compile" in provided(f)
    assert portability.check_files([program("provided_only.py")]).exit_status == 0


def test_scoping():
    f = check("scoping.py")
    s = symbols(f)
    assert set(s) == {
        "tensorflow", "tensorflow.python.ipu.config.*", "tensorflow.python.ipu.scopes",
        "tensorflow.python.ipu.not_a_scopes_module", "tensorflow.nn", "tensorflow.nn.relu",
        "tensorflow.compat.v1", "tensorflow.compat.v1.constant", "tensorflow.nn.softmax",
        "tensorflow.python.ipu.config.IPUConfig", "tensorflow.math.square",
        "tensorflow.python.ipu.scopes.ipu_scope",
    }  # `tf.anything` under a parameter named tf is no symbol
    assert s["tensorflow.nn.relu"].lines == [11, 27]  # `relu = nn.relu`, then relu(x)
    assert s["tensorflow.nn.softmax"].lines == [27]  # the class's `nn` is invisible here
    assert s["tensorflow.compat.v1.constant"].lines == [20]  # the local import wins
    # the try body's import is in effect after the try, not the except handler's fallback
    assert s["tensorflow.python.ipu.scopes.ipu_scope"].provided


def test_star_import_binds_what_run_binds():
    """Names after `from M import *` are M's, provided only if the star import binds them at
    run time; an alias module without __all__ binds none (see the report of issue 13)."""
    f = check("scoping.py")
    star = symbols(f)["tensorflow.python.ipu.config.*"]
    used = symbols(f)["tensorflow.python.ipu.config.IPUConfig"]
    assert used.lines == [30]
    with aliases.installed(tf_version=2):
        namespace = {}
        exec("from tensorflow.python.ipu.config import *", namespace)
        binds = "IPUConfig" in namespace
    assert star.provided == binds and used.provided == binds
    if not binds:
        assert star.missing == "tensorflow.python.ipu.config.*"
        assert used.missing == "tensorflow.python.ipu.config.*"


def test_star_import_of_unknown_names(tmp_path):
    path = tmp_path / "star.py"
    path.write_text("from tensorflow.python.ipu.scopes import *\nfrom helpers import *\n"
                    "ipu_scope('/device:IPU:0')\nsomething_from_helpers()\nprint(len([]))\n")
    f = portability.check_files([str(path)]).files[0]
    # with another star import in play an unknown name may come from it: not reported
    names = set(symbols(f)) - {"tensorflow.python.ipu.scopes.*"}
    assert names <= {"tensorflow.python.ipu.scopes.ipu_scope"}
    assert not any("print" in n or "len" in n or "helpers" in n for n in symbols(f))


def test_notebook():
    f = check("keras_notebook.ipynb")
    assert f.errors == [] and f.tf_version == 2
    s = symbols(f)
    assert set(s) == {
        "tensorflow", "tensorflow.python.ipu", "tensorflow.keras",
        "tensorflow.python.ipu.config.IPUConfig", "tensorflow.python.ipu.ipu_strategy.IPUStrategy",
        "tensorflow.constant", "tensorflow.keras.utils.to_categorical",
    }  # the %%bash cell's text is not Python; !, % lines are skipped
    assert s["tensorflow.python.ipu"].cells == [(2, 2)]  # (code cell, line in it)
    assert s["tensorflow.python.ipu.config.IPUConfig"].cells == [(4, 1)]
    assert s["tensorflow.constant"].cells == [(5, 3)]  # after %%time
    assert s["tensorflow.constant"].to_dict()["cells"] == [[5, 3]]


def test_notebook_with_a_broken_cell(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": ["import poptorch\n"]},
                    {"cell_type": "code", "source": "def f(:\n"},
                    {"cell_type": "code", "source": ["poptorch.Options()"]}],
          "nbformat": 4, "nbformat_minor": 5, "metadata": {}}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb))
    f = portability.check_files([str(path)]).files[0]
    assert f.errors == [{"cell": 2, "line": 1, "message": "SyntaxError: invalid syntax"}]
    assert symbols(f)["poptorch.Options"].cells == [(3, 1)]  # the other cells are read
    (tmp_path / "bad.ipynb").write_text("{not json")
    bad = portability.check_files([str(tmp_path / "bad.ipynb")])
    assert bad.files[0].errors[0]["message"].startswith("not a notebook")
    assert bad.exit_status == 1


BROKEN = "import tensorflow as tf\n\ndef f(:\n    return tf.constant(1)\n"


def test_syntax_error_is_reported_not_raised(tmp_path, capsys):
    path = tmp_path / "syntax_error.py"
    path.write_text(BROKEN)
    f = portability.check_files([str(path)]).files[0]
    assert f.symbols == [] and f.errors == [{"line": 3, "message": "SyntaxError: invalid syntax"}]
    assert cli.main(["check", str(path)]) == 1
    assert "syntax_error.py:3: SyntaxError: invalid syntax" in capsys.readouterr().out
    (tmp_path / "latin1.py").write_bytes(b"import tensorflow\nx = '\xff'\n")
    undecodable = portability.check_files([str(tmp_path / "latin1.py")]).files[0]
    assert undecodable.errors and undecodable.errors[0]["line"] in (0, 2)


def test_tf_version_is_restored_and_can_be_forced():
    saved = behavior.tf_version()
    try:
        behavior.set_tf_version(None)
        assert check("tf1_loops.py").tf_version == 1
        assert behavior.tf_version() is None
        assert check("provided_only.py", tf_version=1).tf_version == 1
        assert behavior.tf_version() is None
        with pytest.raises(ValueError, match="tf_version must be 1, 2 or None"):
            portability.check_files([program("provided_only.py")], tf_version=3)
    finally:
        behavior.set_tf_version(saved)


def test_directory_argument():
    report = portability.check_files([PROGRAMS])
    names = sorted(os.path.basename(f.path) for f in report.files)
    assert names == sorted(n for n in os.listdir(PROGRAMS) if n.endswith((".py", ".ipynb")))


# ---- the command --------------------------------------------------------------------------------
def test_exit_statuses(capsys):
    assert cli.main(["check", program("provided_only.py")]) == 0
    out = capsys.readouterr().out
    assert "10 symbols, 10 provided, 0 missing" in out and "not fully provided" not in out
    assert cli.main(["check", program("provided_only.py"), program("tf2_keras.py")]) == 1
    out = capsys.readouterr().out
    assert "MISSING  tensorflow.python.ipu.utils.not_a_graphcore_function" in out
    assert "tf2_keras.py:39" in out
    assert cli.main(["check", program("no_such_program.py")]) == 2
    assert "can't open file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["check"])
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        cli.main(["check", "--tf1", "--tf2", program("provided_only.py")])
    assert e.value.code == 2


def test_json_shape(tmp_path, capsys):
    broken = tmp_path / "syntax_error.py"
    broken.write_text(BROKEN)
    assert cli.main(["check", "--json", program("tf2_keras.py"), str(broken)]) == 1
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"files", "summary"}
    f, err = out["files"]
    assert set(f) == {"path", "tf_version", "errors", "provided", "missing", "groups"}
    assert f["path"] == program("tf2_keras.py") and f["tf_version"] == 2
    assert list(f["groups"]) == ["tensorflow.python.ipu", "tensorflow.keras", "tensorflow"]
    entry = next(e for e in f["groups"]["tensorflow.python.ipu"]
                 if e["symbol"] == "tensorflow.python.ipu.config.IPUConfig")
    assert entry == {"symbol": "tensorflow.python.ipu.config.IPUConfig", "provided": True,
                     "lines": [6, 9], "as_written": "from tensorflow.python.ipu.config import "
                     "IPUConfig"}
    typo = next(e for e in f["groups"]["tensorflow.python.ipu"]
                if e["symbol"].endswith("not_a_graphcore_function"))
    assert typo["provided"] is False and typo["lines"] == [39]
    assert typo["missing"] == typo["symbol"] and "does not emulate" in typo["reason"]
    assert err["errors"] == [{"line": 3, "message": "SyntaxError: invalid syntax"}]
    summary = out["summary"]
    assert summary["files"] == 2 and summary["files_with_errors"] == 1
    assert summary["symbols"] == summary["provided"] + summary["missing"] == 16
    assert f["provided"] + f["missing"] == 16 and summary["ok"] is False
    assert typo["symbol"] in summary["missing_symbols"]


def test_import_ipu_gpu_stays_lazy():
    code = ("import sys, ipu_gpu, ipu_gpu.cli; "
            "assert 'ipu_gpu.portability' not in sys.modules, 'portability imported'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120,
                   env=dict(os.environ, PYTHONPATH=ROOT, IPU_GPU_BACKEND="cpu"))


# ---- check and run agree ------------------------------------------------------------------------
def _access(symbol: str):
    """What a program's `import`/`from ... import`/attribute access does with ``symbol``:
    import its top module, then take each attribute, importing a submodule where the
    attribute is not there yet (as `from package import submodule` does)."""
    parts = symbol.split(".")
    obj = importlib.import_module(parts[0])
    for i in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[i])
        except AttributeError:
            if not isinstance(obj, types.ModuleType):
                raise
            obj = importlib.import_module(".".join(parts[:i + 1]))
    return obj


ALL_PROGRAMS = TUTORIAL_STYLE + ["scoping.py"]


@pytest.mark.parametrize("name", ALL_PROGRAMS)
def test_every_symbol_check_reports_agrees_with_the_aliases(name):
    f = check(name)
    assert f.symbols
    with aliases.installed(tf_version=f.tf_version):
        for s in f.symbols:
            if s.name.endswith(".*") or (s.missing or "").endswith(".*"):
                continue  # star imports: test_star_import_binds_what_run_binds
            if s.provided:
                _access(s.name)  # raises if check was wrong
                continue
            with pytest.raises((ImportError, AttributeError)) as e:
                _access(s.name)
            parent = s.missing.rpartition(".")[0]
            if parent and not isinstance(_access(parent), types.ModuleType):
                assert s.missing.rpartition(".")[2] in str(e.value)  # a class attribute
            else:
                assert f"ipu_gpu does not emulate {s.missing}" in str(e.value), s.name


def _import_statements(path):
    """The top-level import statements of a program (of a notebook's Python cells)."""
    if not path.endswith(".ipynb"):
        with open(path) as fh:
            return [n for n in ast.parse(fh.read()).body
                    if isinstance(n, (ast.Import, ast.ImportFrom))]
    with open(path) as fh:
        cells = ["".join(c["source"]) for c in json.load(fh)["cells"]
                 if c["cell_type"] == "code"]
    out = []
    for cell in cells:
        if cell.startswith("%%bash"):
            continue
        lines = [line[:len(line) - len(line.lstrip())] + "pass"
                 if line.lstrip().startswith(("!", "%")) else line
                 for line in cell.splitlines()]
        out += [n for n in ast.parse("\n".join(lines)).body
                if isinstance(n, (ast.Import, ast.ImportFrom))]
    return out


@pytest.mark.parametrize("name", TUTORIAL_STYLE)
def test_the_programs_own_statements_agree(name):
    """The program's own import statements and the expressions as written: each runs under
    the aliases exactly when check calls everything it introduces provided."""
    f = check(name)
    by_name = symbols(f)
    namespace = {}
    with aliases.installed(tf_version=f.tf_version):
        for node in _import_statements(program(name)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [a.name for a in node.names]
            tops = [module or n for n in names]
            if tops[0].split(".")[0] not in aliases.TOP_LEVELS:
                continue
            introduced = [f"{module}.{n}" if module else n for n in names]
            ok = all(by_name[s].provided for s in introduced)
            statement = ast.unparse(node)
            if ok:
                exec(statement, namespace)
            else:
                with pytest.raises(ImportError, match="ipu_gpu does not emulate"):
                    exec(statement, {})
        for s in f.symbols:
            if s.as_written.startswith(("import ", "from ")):
                continue  # the statements above
            if s.provided:
                eval(s.as_written, namespace)
            else:
                with pytest.raises((AttributeError, NameError)):
                    eval(s.as_written, namespace)  # NameError: its import failed above


# ---- the portability table (tools/portability_table.py) ----------------------------------------
def test_portability_table(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "portability_table", os.path.join(ROOT, "tools", "portability_table.py"))
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    tree = tmp_path / "tutorials"
    for folder, name in [("ok", "provided_only.py"), ("keras", "tf2_keras.py"),
                         ("keras", "keras_notebook.ipynb")]:
        (tree / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(program(name), tree / folder / name)
    (tree / "keras" / "tests").mkdir()
    (tree / "keras" / "tests" / "test_it.py").write_text("import poptorch\n")
    (tree / "keras" / "test_main.py").write_text("import poptorch\n")
    (tree / "poplar").mkdir()
    (tree / "poplar" / "run.py").write_text("import popart\n")
    assert sorted(os.path.basename(f) for fs in table.program_folders(str(tree)).values()
                  for f in fs) == ["keras_notebook.ipynb", "provided_only.py", "run.py",
                                   "tf2_keras.py"]  # tests are not the program
    out = tmp_path / "rows.json"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert table.main([str(tree), "--source", "here", "--json", str(out)]) == 0
    rows = {r["program"]: r for r in json.loads(out.read_text())["programs"]}
    assert set(rows) == {"tutorials/ok", "tutorials/keras"}
    assert rows["tutorials/ok"]["missing"] == {} and rows["tutorials/ok"]["provided"] == 10
    keras = rows["tutorials/keras"]
    assert keras["files"] == 2 and keras["tf_versions"] == [2]
    both = portability.check_files([program("tf2_keras.py"), program("keras_notebook.ipynb")])
    union = {s.name for f in both.files for s in f.symbols}
    assert keras["symbols"] == len(union)  # a symbol both files use counts once
    assert set(keras["missing"]) == {s.name for f in both.files for s in f.missing}
    assert keras["missing"]["tensorflow.python.ipu.utils.not_a_graphcore_function"] == \
        "tensorflow.python.ipu.utils.not_a_graphcore_function"
    md = text.getvalue()
    assert "- Programs: 2\n- Fully provided: 1\n" in md
    assert "| `tutorials/ok` | tensorflow (TF2) | 1 | 10 | 10 | 0 | yes |" in md
    assert "- `tutorials/poplar`" in md
