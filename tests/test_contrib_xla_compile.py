"""``tf.contrib.compiler.xla.compile`` (TF 1.15; E2: most-missed in Graphcore's TF1 programs):
importable under TF1 only, ``ipu_compiler.compile`` inside an ``ipu_scope``, the same nodes
with xla.compile's output conventions elsewhere; values against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu.compat.v1 as v1
from ipu_gpu import aliases
from ipu_gpu.compat import behavior
from ipu_gpu.ipu import config as ipu_config
from ipu_gpu.ipu import ipu_compiler, scopes

X = np.array([1.5, -2.0, 3.0], np.float32)


def _tf1(source: str, **names) -> dict:
    behavior.set_tf_version(None)
    ns = {"X": X, **names}
    try:
        with aliases.installed():
            aliases.install(tf_version=1)
            exec(source, ns)
    finally:
        behavior.set_tf_version(None)
    return ns


def test_imports_in_tf1_only():
    ns = _tf1("import tensorflow.contrib.compiler.xla as xla\n"
              "from tensorflow.contrib.compiler import xla as xla2\n"
              "import tensorflow as tf\n"
              "same = xla.compile is xla2.compile is tf.contrib.compiler.xla.compile\n"
              "from tensorflow.contrib import layers\n"
              "xavier = layers.xavier_initializer\n")
    assert ns["same"] and callable(ns["xavier"])  # the rest of tf.contrib still there
    behavior.set_tf_version(None)
    with aliases.installed():
        aliases.install(tf_version=2)
        with pytest.raises(ImportError, match="ipu_gpu does not emulate tensorflow.contrib"):
            exec("import tensorflow.contrib.compiler.xla\n", {})
    behavior.set_tf_version(None)
    ok, _ = aliases.resolve("tensorflow.contrib.compiler.xla.compile")
    assert not ok  # TF2 reading


def test_conventions_outside_an_ipu_scope():
    from ipu_gpu.compat.v1.contrib.compiler import xla

    with v1.Graph().as_default():
        x = v1.placeholder(v1.float32, [3])
        v = v1.get_variable("v", initializer=np.float32(0.0))
        single = xla.compile(lambda a: a * 2.0 + 1.0, [x])
        both = xla.compile(lambda: [v + 1.0, v1.assign_add(v, 10.0).op])
        none = xla.compile(lambda: None)
        only_op = xla.compile(lambda: v1.assign_add(v, 100.0).op)
        assert isinstance(single, list) and len(single) == 1 and len(both) == 1
        assert isinstance(none, type(only_op))
        with pytest.raises(ValueError, match="followed by zero or more Operations"):
            xla.compile(lambda: [v1.no_op(), x])
        with pytest.raises(TypeError):
            xla.compile(lambda a: a, x)
        with v1.Session() as sess:
            sess.run(v1.global_variables_initializer())
            np.testing.assert_allclose(sess.run(single[0], {x: X}), X * 2.0 + 1.0)
            assert sess.run(both[0]) in (1.0, 11.0)  # XLA orders the read and the assign
            assert sess.run(v) == 10.0  # fetching the tensor ran the operation
            sess.run(none)
            sess.run(only_op)
            assert sess.run(v) == 110.0


def test_inside_an_ipu_scope_it_is_ipu_compiler_compile():
    from ipu_gpu.compat.v1.contrib.compiler import xla

    cfg = ipu_config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    with v1.Graph().as_default():
        x = v1.placeholder(v1.float32, [3])
        with scopes.ipu_scope("/device:IPU:0"):
            ours = xla.compile(lambda a: v1.reduce_sum(a * a), [x])
            ref = ipu_compiler.compile(lambda a: v1.reduce_sum(a * a), [x])
        with v1.Session() as sess:
            got, want = sess.run([ours[0], ref[0]], {x: X})
    assert got == want
    np.testing.assert_allclose(got, np.sum(X * X), rtol=1e-6)


# ---- tf.contrib.framework's checkpoint readers ----------------------------------------------
def test_contrib_checkpoint_utils_read_a_saved_checkpoint(tmp_path):
    w0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    ns = _tf1("import tensorflow as tf\n"
              "from tensorflow.contrib.framework.python.framework.checkpoint_utils import (\n"
              "    list_variables, load_variable)\n"
              "from tensorflow.contrib.framework.python.framework import checkpoint_utils\n"
              "with tf.Graph().as_default():\n"
              "    w = tf.get_variable('dense/kernel', initializer=W0)\n"
              "    b = tf.get_variable('dense/bias', initializer=tf.zeros([3]))\n"
              "    with tf.Session() as sess:\n"
              "        sess.run(tf.global_variables_initializer())\n"
              "        prefix = tf.train.Saver().save(sess, PREFIX, global_step=3)\n"
              "names = list_variables(DIR)\n"
              "kernel = load_variable(prefix, 'dense/kernel:0')\n"
              "same = checkpoint_utils.load_variable is tf.contrib.framework.load_variable\n"
              "try:\n"
              "    load_variable(prefix, 'nope')\n"
              "except tf.errors.NotFoundError as e:\n"
              "    missing = str(e)\n",
              W0=w0, PREFIX=str(tmp_path / "m"), DIR=str(tmp_path))
    assert ns["names"] == [("dense/bias", [3]), ("dense/kernel", [2, 3])]
    np.testing.assert_array_equal(ns["kernel"], w0)
    assert ns["same"] and ns["missing"] == "Key nope not found in checkpoint"


@pytest.mark.parametrize("source, version", [
    ("import tensorflow as tf\nimport tensorflow.contrib as contrib\n", 1),
    ("import tensorflow as tf\nfrom tensorflow import contrib\n", 1),
    ("from tensorflow.contrib.compiler import xla\n", 1),
    ("import tensorflow as tf\nfrom tensorflow import keras\n", 2),
    ("import tensorflow as tf\nfrom tensorflow import contribution\n", 2),
])
def test_importing_tf_contrib_marks_a_tf1_program(source, version):
    assert aliases.detect_tf_version(source) == version


def test_contrib_framework_get_name_scope(real_tf):
    def scopes(tf1, graph):
        out = []
        with graph.as_default():
            out.append(tf1.contrib.framework.get_name_scope() if tf1 is v1 else
                       tf1.get_default_graph().get_name_scope())
            with tf1.name_scope("outer"):
                with tf1.name_scope("inner"):
                    out.append(v1.contrib.framework.get_name_scope() if tf1 is v1 else
                               tf1.get_default_graph().get_name_scope())
                with tf1.name_scope("inner"):  # made unique: inner_1
                    out.append(v1.contrib.framework.get_name_scope() if tf1 is v1 else
                               tf1.get_default_graph().get_name_scope())
        return out

    ours = scopes(v1, v1.Graph())
    theirs = scopes(real_tf.compat.v1, real_tf.Graph())
    assert ours == theirs == ["", "outer/inner", "outer/inner_1"]
