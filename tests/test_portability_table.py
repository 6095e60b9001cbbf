"""tools/portability_table.py over several trees: one section per tree, a ranking over all."""

import contextlib
import importlib.util
import io
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _table():
    spec = importlib.util.spec_from_file_location(
        "portability_table", os.path.join(ROOT, "tools", "portability_table.py"))
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return table


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_several_trees(tmp_path):
    table = _table()
    a, b = tmp_path / "one" / "apps", tmp_path / "two" / "tutorials"
    _write(a / "x" / "main.py", "import tensorflow as tf\ntf.not_a_tf_symbol_x\n"
           "tf.not_a_tf_symbol_y\n")
    _write(a / "y" / "main.py", "import tensorflow as tf\ntf.not_a_tf_symbol_x\n")
    _write(b / "z" / "main.py", "import tensorflow as tf\ntf.not_a_tf_symbol_x\ntf.constant\n")
    _write(b / "poplar" / "run.py", "import popart\n")
    out, text = tmp_path / "rows.json", io.StringIO()
    with contextlib.redirect_stdout(text):  # options between the trees, as documented
        assert table.main([str(a), "--source", "A src", str(b), "--source", "B src",
                           "--json", str(out)]) == 0
    trees = json.loads(out.read_text())["trees"]
    assert [t["source"] for t in trees] == ["A src", "B src"]
    assert [r["program"] for r in trees[0]["programs"]] == ["apps/x", "apps/y"]
    assert trees[1]["skipped"] == ["tutorials/poplar"]
    assert trees[1]["programs"][0]["missing"] == {
        "tensorflow.not_a_tf_symbol_x": "tensorflow.not_a_tf_symbol_x"}
    md = text.getvalue()
    overall = md[md.index("## All trees"):md.index("## Tree `apps/`")]
    assert "- Programs: 3\n- Fully provided: 0\n" in overall
    assert "| 1 | `tensorflow.not_a_tf_symbol_x` | 3 |  |" in overall  # ranked over all trees
    assert "| 2 | `tensorflow.not_a_tf_symbol_y` | 1 |  |" in overall
    second = md[md.index("## Tree `tutorials/`"):]
    assert "Source: B src." in second and "- Programs: 1\n" in second
    assert "| 1 | `tensorflow.not_a_tf_symbol_x` | 1 |  |" in second
    assert "- `tutorials/poplar`" in second and "apps/x" not in second


def test_one_source_per_tree(tmp_path, capsys):
    table = _table()
    with pytest.raises(SystemExit):
        table.main([str(tmp_path), str(tmp_path), "--source", "only one"])
    assert "2 trees but 1 --source" in capsys.readouterr().err


def test_notes_say_why_a_symbol_is_missing():
    table = _table()
    assert table.note("tensorflow.compiler.plugin.poplar.ops.gen_ipu_ops").startswith(
        "out of scope")
    assert "handle" in table.note("tensorflow.python.training.training_ops.apply_momentum")
    assert table.note("tensorflow") == ""  # only the named prefixes and below
    assert table.note("tensorflow.python.framework.graph_utilities") == ""
