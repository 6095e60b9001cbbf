"""``ipu.custom_ops``: precompiled_user_op / cpu_user_operation run the Python implementation
registered for their library (in the program or through IPU_GPU_USER_OPS, so Graphcore's
custom-op tutorial runs unmodified through ``ipu-gpu run``), gradients through it,
inputs_with_gradients, output checks, the error naming what to register, and
codelet_expression_op."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ipu_gpu as ig
import ipu_gpu.compat.v1 as v1
from ipu_gpu import errors, ipu
from ipu_gpu.ipu import custom_ops

ROOT = str(pathlib.Path(__file__).resolve().parents[1])
OUTS = {"output_types": [ig.float32], "output_shapes": [ig.TensorShape([4])]}


@pytest.fixture(autouse=True)
def _clean_registry(monkeypatch):
    monkeypatch.setattr(custom_ops, "_IMPLEMENTATIONS", {})
    monkeypatch.setattr(custom_ops, "_LOADED", set())
    monkeypatch.delenv(custom_ops.ENV_VAR, raising=False)


def test_unregistered_library_names_what_to_register():
    x = np.ones(4, np.float32)
    with pytest.raises(errors.NotFoundError,
                       match=r"register_user_op\('libmine.so', fn, op_name='Build'\)"):
        custom_ops.precompiled_user_op([x], "/some/dir/libmine.so", "codelet.gp", outs=OUTS)
    with pytest.raises(errors.NotFoundError, match=r"op_name='Callback'.*IPU_GPU_USER_OPS"):
        ipu.custom_ops.cpu_user_operation([x], "libmine.so", outs=OUTS)


def test_registered_implementation_values_gradients_and_attributes():
    seen = []

    def scaled_product(x, y, attributes=None):
        seen.append(attributes)
        return [x * y * 3.0, ig.reduce_sum(x)]

    custom_ops.register_user_op("libprod.so", scaled_product)
    outs = {"output_types": [ig.float32, ig.float32],
            "output_shapes": [ig.TensorShape([4]), ig.TensorShape([])]}
    a, b = np.arange(4, dtype=np.float32), np.full(4, 2.0, np.float32)
    xa, xb = ig.Variable(a), ig.Variable(b)
    with ig.GradientTape(persistent=True) as tape:
        prod, total = custom_ops.precompiled_user_op([xa, xb], "/a/b/libprod.so", outs=outs,
                                                     attributes='{"k": 1}')
        loss = ig.reduce_sum(prod) + total
        (only_b,) = custom_ops.precompiled_user_op([xa, xb], "libprod.so", outs=outs,
                                                   inputs_with_gradients=[1])[:1]
    np.testing.assert_array_equal(np.asarray(prod), a * b * 3)
    assert float(total) == a.sum() and seen[0] == '{"k": 1}'
    np.testing.assert_array_equal(np.asarray(tape.gradient(loss, xa)), b * 3 + 1)
    np.testing.assert_array_equal(np.asarray(tape.gradient(loss, xb)), a * 3)
    assert tape.gradient(only_b, xa) is None
    np.testing.assert_array_equal(np.asarray(tape.gradient(only_b, xb)), a * 3)


def test_numpy_implementation_and_cpu_user_operation():
    custom_ops.register_user_op("libhost.so", lambda x, attributes=None: np.sort(np.asarray(x)),
                                op_name="Callback")
    (out,) = custom_ops.cpu_user_operation([np.array([3.0, 1.0, 2.0, 0.0], np.float32)],
                                           "libhost.so", outs=OUTS)
    np.testing.assert_array_equal(np.asarray(out), [0, 1, 2, 3])


def test_outputs_must_match_outs():
    custom_ops.register_user_op("libbad.so", lambda x, attributes=None: x)
    with pytest.raises(ValueError, match="returned 1 outputs, outs describes 0"):
        custom_ops.precompiled_user_op([np.ones(4, np.float32)], "libbad.so")
    wrong = {"output_types": [ig.float32], "output_shapes": [ig.TensorShape([5])]}
    with pytest.raises(ValueError, match=r"output 0 of 'Build' must be a float32 tensor of "
                                         r"shape \(5,\), got float32 \(4,\)"):
        custom_ops.precompiled_user_op([np.ones(4, np.float32)], "libbad.so", outs=wrong)
    with pytest.raises(TypeError, match="fn must be callable"):
        custom_ops.register_user_op("libbad.so", 3)


def test_tf1_graph_with_gradients():
    custom_ops.register_user_op("libsq.so", lambda x, attributes=None: [x * x])
    x = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    with v1.Graph().as_default():
        p = v1.placeholder(np.float32, [4])
        (y,) = custom_ops.precompiled_user_op([p], "libsq.so", outs=OUTS)
        (g,) = v1.gradients(ig.reduce_sum(y), [p])
        with v1.Session() as sess:
            got_y, got_g = sess.run([y, g], {p: x})
    np.testing.assert_array_equal(got_y, x * x)
    np.testing.assert_array_equal(got_g, 2 * x)


TUTORIAL = '''
import os

import numpy as np
import tensorflow.compat.v1 as tf

from tensorflow.python import ipu
tf.disable_v2_behavior()

SIZE = 5


def add_op(x, y):
    outputs = {
        "output_types": [tf.float32],
        "output_shapes": [tf.TensorShape([SIZE])],
    }
    base_path = os.path.realpath(os.path.dirname(__file__))
    lib_path = os.path.join(base_path, "libcustom_op.so")
    gp_path = os.path.join(base_path, "custom_codelet.gp")
    return ipu.custom_ops.precompiled_user_op([x, y], lib_path, gp_path, outs=outputs)


if __name__ == "__main__":
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    with tf.device("cpu"):
        x_data = tf.placeholder(np.float32, [SIZE])
        y_data = tf.placeholder(np.float32, [SIZE])
    with ipu.scopes.ipu_scope("/device:IPU:0"):
        xla_result = ipu.ipu_compiler.compile(add_op, [x_data, y_data])
    with tf.Session() as sess:
        a = np.arange(SIZE) / 10.0
        b = np.arange(SIZE) / 100.0
        result = sess.run(xla_result, feed_dict={x_data: a, y_data: b})
    print("IPU:", result[0].tolist())
    print("numpy:", (a + b).tolist())
'''

REGISTRATION = '''
from ipu_gpu.ipu.custom_ops import register_user_op

# the tutorial's codelet adds its two inputs
register_user_op("libcustom_op.so", lambda x, y, attributes=None: [x + y])
'''


def _run(tmp_path, env_extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("IPU_GPU_BACKEND", "IPU_GPU_NUM_IPUS", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run", "tf_code.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


def test_graphcores_custom_op_tutorial_runs_unmodified(tmp_path):
    (tmp_path / "tf_code.py").write_text(textwrap.dedent(TUTORIAL))
    (tmp_path / "my_user_ops.py").write_text(textwrap.dedent(REGISTRATION))
    r = _run(tmp_path, {custom_ops.ENV_VAR: str(tmp_path / "my_user_ops.py")})
    assert r.returncode == 0, r.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    np.testing.assert_allclose(eval(lines["IPU"]), eval(lines["numpy"]), rtol=1e-6)
    r = _run(tmp_path, {})
    assert r.returncode != 0
    assert "register_user_op('libcustom_op.so', fn, op_name='Build')" in r.stderr


def test_codelet_expression_op():
    a = np.array([[1.0], [2.0]], np.float32)
    b = np.array([1.0, -2.0, 3.0], np.float32)
    out = custom_ops.codelet_expression_op(lambda x, y, z: x * x + y * z, a, b, 2.0)
    assert out.dtype == np.float32 and tuple(out.shape) == (2, 3)
    np.testing.assert_array_equal(np.asarray(out), a * a + b * 2.0)
    n = custom_ops.codelet_expression_op(lambda x: -abs(x), np.array([-3, 4], np.int32))
    np.testing.assert_array_equal(np.asarray(n), [-3, -4])
    v = ig.Variable(b)
    with ig.GradientTape() as tape:
        y = custom_ops.codelet_expression_op(lambda x: x * x, v)
    assert tape.gradient(y, v) is None  # documented: no autograd through the fused codelet
    with pytest.raises(TypeError, match="float16, float32 or int32"):
        custom_ops.codelet_expression_op(lambda x: x, np.ones(2, np.float64))
