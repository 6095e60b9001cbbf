"""ipu.serving: export_single_step, export_pipeline and export_keras write ipu_gpu
SavedModels whose returned and reloaded functions give numpy's results (variables frozen at
export); Graphcore's argument errors; a fresh process loads the export; the TF2 serving
program runs through `ipu-gpu run`."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu import ipu, keras
from ipu_gpu.ipu import serving
from ipu_gpu.saved_model import executable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIG = (tf.TensorSpec((4,), tf.float32),)
W = np.float32([[1, -1], [2, 0.5], [-3, 1], [0.25, 2]])


def _mlp():
    w = tf.Variable(W)

    @tf.function(input_signature=SIG)
    def predict_step(x):
        return tf.nn.relu(tf.matmul(tf.expand_dims(x, 0), w)), tf.reduce_sum(x)
    return w, predict_step


def _ref(x):
    return np.maximum(x[None] @ W, 0), x.sum()


def test_export_single_step_matches_numpy_and_freezes(tmp_path):
    w, predict_step = _mlp()
    d = str(tmp_path / "m" / "001")
    fn = serving.export_single_step(predict_step, d, 3, output_names=["h", "s"])
    w.assign(W * 0)  # exported values are frozen
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = rng.standard_normal(4).astype(np.float32)
        out = fn(x)
        rh, rs = _ref(x)
        np.testing.assert_allclose(out["h"].numpy(), rh, rtol=1e-6)
        np.testing.assert_allclose(out["s"].numpy(), rs, rtol=1e-6)
    exe = executable.read(os.path.join(d, "assets", os.listdir(os.path.join(d, "assets"))[0]))
    assert exe.iterations == 3 and exe.portable
    sig = tf.saved_model.load(d).signatures["serving_default"]
    x = np.float32([1, 2, 3, 4])
    np.testing.assert_allclose(sig(x=x)["h"].numpy(), _ref(x)[0], rtol=1e-6)


def test_signature_from_dataset_and_plain_function(tmp_path):
    ds = tf.data.Dataset.from_tensors(np.zeros((2, 3), np.float32))
    fn = serving.export_single_step(lambda a: a * 3 - 1, str(tmp_path / "d"), 2,
                                    input_dataset=ds)
    assert [s.name for s in fn.input_signature] == ["a"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(fn(x)[0].numpy(), x * 3 - 1)


def test_pre_and_postprocessing(tmp_path):
    _, predict_step = _mlp()

    @tf.function(input_signature=SIG)
    def pre(x):
        return tf.abs(x) - 1.0

    @tf.function(input_signature=(tf.TensorSpec((1, 2), tf.float32),
                                  tf.TensorSpec((), tf.float32)))
    def post(h, s):
        return tf.reduce_max(h) + s

    fn = serving.export_single_step(predict_step, str(tmp_path / "p"), 2,
                                    preprocessing_step=pre, postprocessing_step=post)
    x = np.float32([-3, 0.5, 2, -1])
    h, s = _ref(np.abs(x) - 1)
    np.testing.assert_allclose(fn(x).numpy(), h.max() + s, rtol=1e-6)

    @tf.function(input_signature=(tf.TensorSpec((3,), tf.float32),))
    def bad_post(h):
        return h

    with pytest.raises(ValueError, match="The number of the `predict_step` outputs does not"):
        serving.export_single_step(predict_step, str(tmp_path / "q"), 2,
                                   postprocessing_step=bad_post)


def test_export_pipeline(tmp_path):
    fn = serving.export_pipeline([lambda x: x * 2, lambda x: x + 3], str(tmp_path / "pipe"),
                                 4, device_mapping=[0, 1], predict_step_signature=SIG)
    x = np.float32([1, -2, 3, 0])
    np.testing.assert_allclose(fn(x)[0].numpy(), 2 * x + 3)
    with pytest.raises(ValueError, match="device_mapping must have the same length"):
        serving.export_pipeline([lambda x: x], str(tmp_path / "pipe2"), 4,
                                device_mapping=[0, 1], predict_step_signature=SIG)


def test_export_keras(tmp_path):
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    with ipu.ipu_strategy.IPUStrategy().scope():
        a = keras.layers.Input(shape=(3,), batch_size=2, name="a")
        b = keras.layers.Input(shape=(3,), batch_size=2, name="b")
        dense = keras.layers.Dense(2, kernel_initializer="glorot_uniform")
        model = keras.Model([a, b], dense(keras.layers.Add()([a, b])))
        model.compile(steps_per_execution=5)
    d = str(tmp_path / "k")
    fn = serving.export_keras(model, d)
    assert [s.name for s in fn.input_signature] == ["a", "b"]
    x, y = np.ones((2, 3), np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)
    kernel, bias = (v.numpy() for v in dense.weights)
    np.testing.assert_allclose(fn(x, y)[0].numpy(), (x + y) @ kernel + bias, rtol=1e-5)
    exe = executable.read(os.path.join(d, "assets", os.listdir(os.path.join(d, "assets"))[0]))
    assert exe.iterations == 5
    plain = keras.Sequential([keras.layers.Dense(1)])
    plain.build((2, 3))
    with pytest.raises(ValueError, match="was not created inside an IPU strategy"):
        serving.export_keras(plain, str(tmp_path / "plain"))


def test_argument_errors(tmp_path):
    _, predict_step = _mlp()
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    with pytest.raises(ValueError, match="is not empty. Please specify an empty directory"):
        serving.export_single_step(predict_step, str(full), 2)
    serving.export_single_step(predict_step, str(full), 2, purge_export_dir=True)
    assert not (full / "x").exists()
    d = str(tmp_path / "e")
    with pytest.raises(ValueError, match="Please mark it as tf.function"):
        serving.export_single_step(lambda x: x, d, 2)
    with pytest.raises(ValueError, match="Both `predict_step_signature` and `input_dataset`"):
        serving.export_single_step(predict_step, d, 2, SIG,
                                   input_dataset=tf.data.Dataset.from_tensors(np.zeros(4)))
    with pytest.raises(TypeError, match="must be an instance of tuple or list"):
        serving.export_single_step(predict_step, d, 2, SIG[0])
    with pytest.raises(ValueError, match="`predict_step_signature` must be not empty"):
        serving.export_single_step(predict_step, d, 2, ())
    with pytest.raises(TypeError, match=r"`predict_step_signature\[0\]` is not an instance"):
        serving.export_single_step(predict_step, d, 2, [(4,)])
    with pytest.raises(TypeError, match="should be an instance of tf.Dataset"):
        serving.export_single_step(lambda x: x, d, 2, input_dataset=[1, 2])
    with pytest.raises(TypeError, match="output_names must be either a string or a list"):
        serving.export_single_step(predict_step, d, 2, output_names=("a", "b"))
    with pytest.raises(ValueError, match="Length of input_signature does not match"):
        serving.export_single_step(lambda x, y: x, d, 2, SIG)


def test_serving_program_through_ipu_gpu_run_and_fresh_load(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("IPU_GPU_BACKEND", "TF_POPLAR_FLAGS")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "ipu_gpu.cli", "run",
                        os.path.join(ROOT, "tests", "programs", "tf2_serving_export.py"),
                        str(tmp_path)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    scale = np.float32([1, -2, 3, -4])
    lines = r.stdout.strip().splitlines()
    for i in range(3):
        data = np.arange(4, dtype=np.float32) - i
        y = np.abs(data) * scale + 1
        tag, k, total, largest = lines[2 * i].split()
        assert (tag, int(k)) == ("single", i)
        np.testing.assert_allclose([float(total), float(largest)], [y.sum(), y.max()],
                                   rtol=1e-6)
        tag, k, *vals = lines[2 * i + 1].split()
        np.testing.assert_allclose(np.float32(vals), data * 2 + 3)
    y = np.ones(4, np.float32) * scale + 1
    assert lines[-1].split()[1:] == [str(np.float32(y.sum())), str(np.float32(y.max()))]
    code = ("import numpy as np, ipu_gpu as tf\n"
            f"m = tf.saved_model.load({str(tmp_path / 'pipeline' / '001')!r})\n"
            "print(m.predict(np.float32([1, 2, 3, 4]))[0].numpy().tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[5.0, 7.0, 9.0, 11.0]"


def test_tf1_graph_export_with_variable_initializer(tmp_path):
    from ipu_gpu.compat import v1

    with v1.Graph().as_default():
        def predict_step(x):
            w = v1.get_variable("w", shape=[4, 2], initializer=v1.zeros_initializer())
            return tf.matmul(tf.expand_dims(x, 0), w)

        def variable_initializer(sess):
            sess.run(v1.global_variables_initializer())
            sess.run(v1.trainable_variables()[0].assign(W))

        fn = serving.export_single_step(predict_step, str(tmp_path / "tf1"), 2, SIG,
                                        variable_initializer=variable_initializer)
    x = np.float32([1, 2, 3, 4])
    np.testing.assert_allclose(fn(x)[0].numpy(), x[None] @ W, rtol=1e-6)
