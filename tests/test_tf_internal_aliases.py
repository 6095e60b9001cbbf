"""TF 1.15 / 2.6 internal modules Graphcore's applications import (docs/portability.md, the
most-missed symbols): ``tensorflow.python.ops.{init_ops,linalg_ops,variable_scope,
control_flow_ops}``, ``tensorflow.python.framework.ops`` and
``tensorflow.python.distribute.distribution_strategy_context``. Their names are TF1's
(``linalg_ops.norm`` is ``tf.compat.v1.norm``); a TF1 program using them gives what the same
program written with real TF's public ``tf.compat.v1`` names gives, and numpy."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu
import ipu_gpu.compat.v1 as v1
from ipu_gpu import aliases, portability
from ipu_gpu.compat import behavior

X = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)

PROGRAM = """
from tensorflow.python.framework import ops
from tensorflow.python.ops import control_flow_ops, init_ops, linalg_ops, variable_scope

with ops.Graph().as_default() as g:
    assert ops.get_default_graph() is g
    x = tf.placeholder(tf.float32, [3, 4])
    with variable_scope.variable_scope("layer", reuse=variable_scope.AUTO_REUSE):
        w = variable_scope.get_variable(
            "w", [4, 2], initializer=init_ops.glorot_uniform_initializer(seed=3))
        b = variable_scope.get_variable("b", [2], initializer=init_ops.constant_initializer(0.5))
        z = variable_scope.get_variable("z", [2], initializer=init_ops.zeros_initializer())
        again = variable_scope.get_variable("w", [4, 2])
        scope_name = variable_scope.get_variable_scope().name
    with ops.name_scope("out"), ops.colocate_with(w), ops.device("/device:CPU:0"):
        y = tf.matmul(x, w) + b + z
        n = linalg_ops.norm(y, ord="euclidean", axis=1, keepdims=True)
        big = control_flow_ops.cond(tf.reduce_sum(n) > 1.0, lambda: n * 2.0, lambda: n)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        result = sess.run([w, y, n, big], {x: X})
    result.append(scope_name)
    result.append(again is w)
"""


@pytest.fixture
def tf1_hook():
    behavior.set_tf_version(None)
    with aliases.installed():
        aliases.install(tf_version=1)
        yield
    behavior.set_tf_version(None)


def test_the_names_are_tf1s(tf1_hook):
    ns = {}
    exec("from tensorflow.python.framework import ops\n"
         "from tensorflow.python.ops import control_flow_ops, init_ops, linalg_ops\n"
         "from tensorflow.python.ops import variable_scope\n"
         "from tensorflow.python.distribute import distribution_strategy_context as dsc\n", ns)
    assert ns["linalg_ops"].norm is v1.norm
    assert ns["init_ops"].glorot_uniform_initializer is v1.glorot_uniform_initializer
    assert ns["variable_scope"].variable_scope is v1.variable_scope
    assert ns["control_flow_ops"].cond is v1.cond
    assert ns["control_flow_ops"].while_loop is v1.while_loop
    assert ns["ops"].colocate_with is v1.colocate_with and ns["ops"].device is v1.device
    assert ns["ops"].Tensor is ipu_gpu.Tensor  # the tensor names stay the core's
    assert ns["dsc"].get_strategy is ipu_gpu.distribute.get_strategy
    with pytest.raises(ImportError, match="tensorflow.python.ops.init_ops.Zeros"):
        exec("from tensorflow.python.ops.init_ops import Zeros\n", {})


def test_check_reports_them_provided(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text("import tensorflow as tf\ntf.disable_v2_behavior()\nX = None\n" + PROGRAM)
    report = portability.check_files([str(path)])
    assert report.files[0].tf_version == 1
    assert not report.files[0].missing, [s.name for s in report.files[0].missing]


def test_a_tf1_program_gives_what_real_tf_gives(real_tf):
    behavior.set_tf_version(None)
    with aliases.installed():  # real TF imports its own internals lazily: left after
        aliases.install(tf_version=1)
        ns = {"tf": __import__("tensorflow").compat.v1, "X": X}
        exec(PROGRAM, ns)
    behavior.set_tf_version(None)
    w, y, n, big, scope_name, reused = ns["result"]
    assert scope_name == "layer" and reused
    limit = np.sqrt(6.0 / (4 + 2))
    assert w.shape == (4, 2) and np.all(np.abs(w) <= limit)
    np.testing.assert_allclose(y, X @ w + 0.5, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(n, np.linalg.norm(X @ w + 0.5, axis=1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_allclose(big, n * (2.0 if n.sum() > 1.0 else 1.0), rtol=1e-6)
    # the same program on real TF, with its weights: y, n and big agree
    real = real_tf.compat.v1
    with real_tf.Graph().as_default():
        x = real.placeholder(real_tf.float32, [3, 4])
        with real.variable_scope("layer", reuse=real.AUTO_REUSE):
            rw = real.get_variable("w", initializer=w)
            rb = real.get_variable("b", [2], initializer=real.constant_initializer(0.5))
            rz = real.get_variable("z", [2], initializer=real.zeros_initializer())
            scope = real.get_variable_scope().name
        ry = real_tf.matmul(x, rw) + rb + rz
        rn = real.norm(ry, ord="euclidean", axis=1, keepdims=True)
        rbig = real.cond(real_tf.reduce_sum(rn) > 1.0, lambda: rn * 2.0, lambda: rn)
        with real.Session() as sess:
            sess.run(real.global_variables_initializer())
            ty, tn, tbig = sess.run([ry, rn, rbig], {x: X})
    assert scope == scope_name
    np.testing.assert_allclose(y, ty, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(n, tn, rtol=1e-6)
    np.testing.assert_allclose(big, tbig, rtol=1e-6)


def test_distribution_strategy_context(real_tf):
    behavior.set_tf_version(None)
    with aliases.installed():
        ns = {}
        exec("from tensorflow.python.distribute import distribution_strategy_context as d\n"
             "import tensorflow as tf\n"
             "outside = (d.has_strategy(), d.in_cross_replica_context(),\n"
             "           d.get_replica_context() is not None)\n"
             "strategy = tf.distribute.OneDeviceStrategy('/cpu:0')\n"
             "with strategy.scope():\n"
             "    inside = (d.has_strategy(), d.get_strategy() is strategy,\n"
             "              d.in_cross_replica_context(), d.get_replica_context() is None)\n", ns)
    behavior.set_tf_version(None)
    d = real_tf.distribute
    outside = (d.has_strategy(), d.in_cross_replica_context(), d.get_replica_context() is not None)
    strategy = d.OneDeviceStrategy("/cpu:0")
    with strategy.scope():
        inside = (d.has_strategy(), d.get_strategy() is strategy, d.in_cross_replica_context(),
                  d.get_replica_context() is None)
    assert ns["outside"] == outside == (False, False, True)
    assert ns["inside"] == inside == (True, True, True, True)


def test_pywrap_tensorflow_reads_a_saved_checkpoint(tmp_path):
    behavior.set_tf_version(None)
    with aliases.installed():
        aliases.install(tf_version=1)
        ns = {"X": X, "path": str(tmp_path / "model")}
        exec("import tensorflow as tf\n"
             "from tensorflow import pywrap_tensorflow\n"
             "from tensorflow.python import pywrap_tensorflow as inner\n"
             "with tf.Graph().as_default():\n"
             "    w = tf.get_variable('w', initializer=X)\n"
             "    step = tf.get_variable('step', initializer=tf.constant(7, tf.int64))\n"
             "    with tf.Session() as sess:\n"
             "        sess.run(tf.global_variables_initializer())\n"
             "        prefix = tf.train.Saver().save(sess, path)\n"
             "reader = pywrap_tensorflow.NewCheckpointReader(prefix)\n"
             "same = inner.NewCheckpointReader is pywrap_tensorflow.NewCheckpointReader\n"
             "shapes = reader.get_variable_to_shape_map()\n"
             "dtypes = reader.get_variable_to_dtype_map()\n"
             "w_value, step_value = reader.get_tensor('w'), reader.get_tensor('step')\n"
             "try:\n"
             "    reader.get_tensor('nope')\n"
             "except tf.errors.NotFoundError as e:\n"
             "    missing = str(e)\n"
             "try:\n"
             "    pywrap_tensorflow.NewCheckpointReader(path + '-none')\n"
             "except tf.errors.NotFoundError as e:\n"
             "    no_file = str(e)\n", ns)
    behavior.set_tf_version(None)
    assert ns["same"] and ns["shapes"] == {"w": [3, 4], "step": []}
    assert ns["dtypes"]["w"] == ipu_gpu.float32 and ns["dtypes"]["step"] == ipu_gpu.int64
    np.testing.assert_array_equal(ns["w_value"], X)
    assert ns["step_value"] == 7
    assert ns["missing"] == "Key nope not found in checkpoint"  # TF's message
    assert "Failed to find any matching files for" in ns["no_file"]


# ---- tf.timestamp ---------------------------------------------------------------------------
def test_timestamp_eager_matches_tf(real_tf):
    import time

    before = time.time()
    ours = ipu_gpu.timestamp(name="t")
    theirs = real_tf.timestamp()
    after = time.time()
    assert ours.dtype == ipu_gpu.float64 and ours.shape == ()
    assert theirs.dtype == real_tf.float64 and theirs.shape == ()
    assert before - 1e-6 <= float(ours) <= float(theirs) <= after + 1e-6
    assert float(ours) == round(float(ours) * 1e6) / 1e6  # whole microseconds, as TF's
    assert getattr(v1.timestamp, "__wrapped__", v1.timestamp) is ipu_gpu.timestamp  # TF1 names


def test_timestamp_in_a_tf1_graph_reads_the_clock_at_each_run(real_tf):
    import time

    with v1.Graph().as_default():
        t = v1.timestamp(name="clock")
        elapsed = t - v1.timestamp()
        with v1.Session() as sess:
            first = sess.run(t)
            time.sleep(0.02)
            second, gap = sess.run([t, elapsed])
    with real_tf.Graph().as_default():
        rt = real_tf.timestamp(name="clock")
        with real_tf.compat.v1.Session() as sess:
            r1 = sess.run(rt)
            time.sleep(0.02)
            r2 = sess.run(rt)
    assert t.name == rt.name == "clock:0" and t.dtype == ipu_gpu.float64
    assert second - first >= 0.019 and r2 - r1 >= 0.019  # slept 0.02 s; micros truncated
    assert abs(gap) < 1.0 and isinstance(second, np.float64) and isinstance(r2, np.float64)
