"""Keras models' ``export_for_ipu_serving`` (Graphcore's Keras extension method) and
``serving.export_keras`` delegating to it: Sequential, functional and subclassed models give
the model's own predictions (numpy reference) from the returned function and from a fresh
process; ``batch_size``, ``steps_per_execution``, output names, CPU pre/postprocessing;
Graphcore's errors (not built, unknown batch size, not made in an IPUStrategy)."""

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


@pytest.fixture(autouse=True)
def _ipu():
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 1
    cfg.configure_ipu_system()
    keras.backend.clear_session()
    np.random.seed(0)
    tf.random.set_seed(0)


def _dense_numpy(x, layer, act=None):
    kernel, bias = (v.numpy() for v in layer.weights)
    y = x @ kernel + bias
    return np.maximum(y, 0) if act == "relu" else y


def _iterations(d) -> int:
    assets = os.path.join(d, "assets")
    return executable.read(os.path.join(assets, os.listdir(assets)[0])).iterations


def _sequential(tmp_path):
    with ipu.ipu_strategy.IPUStrategy().scope():
        model = keras.Sequential([keras.layers.Dense(3, activation="relu"),
                                  keras.layers.Dense(2)])
        model.build((None, 4))
        model.compile(steps_per_execution=3)
    d = str(tmp_path / "seq" / "001")
    fn = model.export_for_ipu_serving(d, batch_size=2, output_names="probs")
    x = np.random.RandomState(1).randn(2, 4).astype(np.float32)
    return model, d, fn, x


def test_sequential_export_for_ipu_serving(tmp_path):
    model, d, fn, x = _sequential(tmp_path)
    assert fn.input_signature[0].shape.as_list() == [2, 4]
    assert _iterations(d) == 3
    want = _dense_numpy(_dense_numpy(x, model.layers[0], "relu"), model.layers[1])
    got = fn(x)
    assert list(got) == ["probs"]
    np.testing.assert_allclose(got["probs"].numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-5, atol=1e-6)
    loaded = tf.saved_model.load(d).signatures["serving_default"]
    out = loaded(**{fn.input_signature[0].name: x})
    np.testing.assert_array_equal(out["probs"].numpy(), got["probs"].numpy())


@pytest.mark.slow  # a subprocess; the reload itself is tested by the test above
def test_sequential_export_reloads_in_a_fresh_process(tmp_path):
    _, d, fn, x = _sequential(tmp_path)
    got = fn(x)
    np.save(tmp_path / "x.npy", x)
    code = ("import numpy as np, ipu_gpu as tf\n"
            f"m = tf.saved_model.load({d!r})\n"
            f"x = np.load({str(tmp_path / 'x.npy')!r})\n"
            "out = m.signatures['serving_default'](**{m.predict.input_signature[0].name: x})\n"
            "print(repr(out['probs'].numpy().tolist()))\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.float32(eval(r.stdout)), got["probs"].numpy(), rtol=0,
                               atol=0)


def test_functional_model_by_input_names_and_export_keras_delegates(tmp_path):
    with ipu.ipu_strategy.IPUStrategy().scope():
        a = keras.layers.Input(shape=(3,), batch_size=2, name="input_a")
        b = keras.layers.Input(shape=(3,), batch_size=2, name="input_b")
        dense = keras.layers.Dense(2)
        model = keras.Model([a, b], [dense(keras.layers.Add()([a, b])),
                                     keras.layers.Multiply()([a, b])])
    x = np.ones((2, 3), np.float32)
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    fn = serving.export_keras(model, str(tmp_path / "f"), output_names=["sum", "prod"])
    assert [s.name for s in fn.input_signature] == ["input_a", "input_b"]
    out = fn(x, y)
    np.testing.assert_allclose(out["sum"].numpy(), _dense_numpy(x + y, dense), rtol=1e-5)
    np.testing.assert_allclose(out["prod"].numpy(), x * y)
    assert _iterations(str(tmp_path / "f")) == 1
    loaded = tf.saved_model.load(str(tmp_path / "f"))
    sig = loaded.signatures["serving_default"](input_a=x, input_b=y)
    np.testing.assert_allclose(sig["prod"].numpy(), x * y)


def test_subclassed_model_with_cpu_pre_and_postprocessing(tmp_path):
    class Scale(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(2, kernel_initializer="ones")

        def call(self, x):
            return self.dense(x) * 2.0

    with ipu.ipu_strategy.IPUStrategy().scope():
        model = Scale()
        model.build((4, 3))

    @tf.function(input_signature=(tf.TensorSpec((4, 3), tf.float32),))
    def pre(x):
        return tf.abs(x)

    @tf.function(input_signature=(tf.TensorSpec((4, 2), tf.float32),))
    def post(y):
        return tf.reduce_sum(y, axis=1)

    fn = model.export_for_ipu_serving(str(tmp_path / "s"), preprocessing_step=pre,
                                      postprocessing_step=post)
    x = -np.arange(12, dtype=np.float32).reshape(4, 3)
    want = (_dense_numpy(np.abs(x), model.dense) * 2).sum(axis=1)
    np.testing.assert_allclose(fn(x).numpy(), want, rtol=1e-5)

    @tf.function(input_signature=(tf.TensorSpec((4, 5), tf.float32),))
    def bad_post(y):
        return y

    with pytest.raises(ValueError, match="does not match required `postprocessing_step"):
        model.export_for_ipu_serving(str(tmp_path / "bad"), postprocessing_step=bad_post)
    with pytest.raises(ValueError, match="Please mark it as tf.function"):
        model.export_for_ipu_serving(str(tmp_path / "bad2"), preprocessing_step=lambda x: x)


def test_graphcore_errors(tmp_path):
    with ipu.ipu_strategy.IPUStrategy().scope():
        unbuilt = keras.Sequential([keras.layers.Dense(2)])
        free = keras.Sequential([keras.layers.Dense(2)])
        free.build((None, 3))
    with pytest.raises(RuntimeError, match="Cannot get model's input signature"):
        unbuilt.export_for_ipu_serving(str(tmp_path / "u"))
    with pytest.raises(ValueError, match="Not all dimensions of inputs can be determined"):
        free.export_for_ipu_serving(str(tmp_path / "u"))
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    with pytest.raises(ValueError, match="is not empty. Please specify an empty directory"):
        free.export_for_ipu_serving(str(full), batch_size=1)
    fn = free.export_for_ipu_serving(str(full), batch_size=1, purge_export_dir=True)
    x = np.float32([[1, 2, 3]])
    np.testing.assert_allclose(fn(x)[0].numpy(), _dense_numpy(x, free.layers[0]), rtol=1e-5)
    outside = keras.Sequential([keras.layers.Dense(1)])
    outside.build((2, 3))
    assert not hasattr(outside, "export_for_ipu_serving")
    with pytest.raises(AttributeError, match="has no attribute 'export_for_ipu_serving'"):
        outside.export_for_ipu_serving(str(tmp_path / "o"))
    with pytest.raises(ValueError, match="was not created inside an IPU strategy"):
        serving.export_keras(outside, str(tmp_path / "o"))
    no_ext = ipu.ipu_strategy.IPUStrategy(enable_keras_extensions=False)
    with no_ext.scope():
        plain = keras.Sequential([keras.layers.Dense(1)])
    assert not hasattr(plain, "export_for_ipu_serving")


def test_pipelined_model_exports_its_stages_in_order(tmp_path):
    """Graphcore's exporting_pipelined_model_example: the runtime function prints the even
    numbers from 2."""
    cfg = ipu.config.IPUConfig()
    cfg.auto_select_ipus = 2
    cfg.configure_ipu_system()
    with ipu.ipu_strategy.IPUStrategy().scope():
        a = keras.layers.Input(shape=(4,), batch_size=1, name="input_1")
        b = keras.layers.Input(shape=(4,), batch_size=1, name="input_2")
        with keras.ipu.PipelineStage(0):
            x = keras.layers.Multiply()([a, b])
        with keras.ipu.PipelineStage(1):
            x = keras.layers.Add()([x, b])
        model = keras.Model(inputs=[a, b], outputs=x)
        model.set_pipelining_options(device_mapping=[0, 1])
        model.build([(1, 4), (1, 4)])
        model.compile(steps_per_execution=16)
    fn = model.export_for_ipu_serving(str(tmp_path / "p"))
    assert _iterations(str(tmp_path / "p")) == 16
    for i in range(18):  # past the 16 iterations: the engine restarts
        out = fn(np.full((1, 4), i, np.float32), np.full((1, 4), 2, np.float32))
        np.testing.assert_array_equal(out[0].numpy(), np.full((1, 4), 2 * i + 2, np.float32))
