"""tf.saved_model.save/load in ipu_gpu's format: tf.Module functions and signatures traced
once, compared with the original functions and a numpy reference, reloaded in a fresh
process, loaded variables read by the loaded functions; errors."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ipu_gpu as tf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W = (np.arange(6, dtype=np.float32).reshape(3, 2) - 2) / 3
B = np.float32([0.5, -0.5])


class Dense(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(W, name="w")
        self.b = tf.Variable(B, name="b")

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def predict(self, x):
        y = tf.nn.relu(tf.matmul(x, self.w) + self.b)
        return {"y": y, "total": tf.reduce_sum(y, axis=1)}


def _ref(x, w=W, b=B):
    y = np.maximum(x @ w + b, 0)
    return y, y.sum(1)


def test_module_round_trip_matches_numpy(tmp_path):
    m = Dense()
    tf.saved_model.save(m, str(tmp_path))
    assert tf.saved_model.contains_saved_model(str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    ry, rt = _ref(x)
    out = loaded.predict(x)
    np.testing.assert_allclose(out["y"].numpy(), ry, rtol=1e-6)
    np.testing.assert_allclose(out["total"].numpy(), rt, rtol=1e-6)
    sig = loaded.signatures["serving_default"]
    out = sig(x=tf.constant(x))
    np.testing.assert_allclose(out["y"].numpy(), ry, rtol=1e-6)
    with pytest.raises(TypeError, match="takes 0 positional arguments"):
        sig(x)
    # the loaded functions read the loaded variables
    assert sorted(v.name for v in loaded.variables) == ["b:0", "w:0"]
    next(v for v in loaded.variables if v.name == "w:0").assign(W * 2)
    np.testing.assert_allclose(loaded.predict(x)["y"].numpy(), _ref(x, W * 2)[0], rtol=1e-6)
    with pytest.raises(ValueError, match="must have shape"):
        loaded.predict(np.zeros((2, 4), np.float32))


def test_signature_of_a_plain_function_returns_output_names(tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32), tf.TensorSpec([2], tf.float32)])
    def f(a, b):
        return a * b, a - b

    tf.saved_model.save(f, str(tmp_path), signatures=f)
    loaded = tf.saved_model.load(str(tmp_path))
    a, b = np.float32([1, 2]), np.float32([3, -4])
    out = loaded.signatures["serving_default"](a=a, b=b)
    np.testing.assert_array_equal(out["output_0"].numpy(), a * b)
    np.testing.assert_array_equal(out["output_1"].numpy(), a - b)
    p, q = loaded(a, b)
    np.testing.assert_array_equal(q.numpy(), a - b)


def test_load_in_a_fresh_process(tmp_path):
    tf.saved_model.save(Dense(), str(tmp_path))
    code = ("import numpy as np, ipu_gpu as tf\n"
            f"m = tf.saved_model.load({str(tmp_path)!r})\n"
            "x = np.array([[1., 2., -3.]], np.float32)\n"
            "print(m.signatures['serving_default'](x=x)['y'].numpy().tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode == 0, r.stderr
    got = np.array(eval(r.stdout.strip()), np.float32)  # noqa: S307 - a list we printed
    np.testing.assert_allclose(got, _ref(np.float32([[1, 2, -3]]))[0], rtol=1e-6)


def test_errors(tmp_path):
    with pytest.raises(OSError, match="SavedModel file does not exist"):
        tf.saved_model.load(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="Only `tf.functions` with an input signature"):
        tf.saved_model.save(Dense(), str(tmp_path), signatures={"k": lambda x: x})

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
    def uses_python(x):
        return tf.py_function(lambda v: v * 2, [x], tf.float32)

    with pytest.raises(ValueError, match="ipu_gpu cannot save"):
        tf.saved_model.save(uses_python, str(tmp_path / "py"), signatures=uses_python)


def test_keras_model_signature_uses_layer_names(tmp_path):
    from ipu_gpu import keras

    inp = keras.layers.Input(shape=(3,), name="feat")
    model = keras.Model(inp, keras.layers.Dense(2, name="head")(inp))
    tf.saved_model.save(model, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    sig = loaded.signatures["serving_default"]
    assert list(sig.structured_input_signature[1]) == ["feat"]
    assert list(sig.structured_outputs) == ["head"]
    x = np.random.default_rng(2).standard_normal((4, 3)).astype(np.float32)
    kernel, bias = (v.numpy() for v in model.weights)
    np.testing.assert_allclose(sig(feat=x)["head"].numpy(), x @ kernel + bias, rtol=1e-5)
    np.testing.assert_allclose(loaded(x).numpy(), x @ kernel + bias, rtol=1e-5)


def test_signature_names_and_values_match_real_tensorflow(tmp_path, real_tf):
    tft = real_tf

    def build(lib):
        class Pair(lib.Module):
            def __init__(self):
                super().__init__()
                self.v = lib.Variable(np.float32([0.5, -1.5]))

            @lib.function(input_signature=[lib.TensorSpec([2], lib.float32)])
            def pair(self, x):
                return x * self.v, lib.reduce_sum(x)
        return Pair()

    x = np.float32([3, 4])
    results = []
    for lib, sub in ((tf, "ours"), (tft, "tf")):
        lib.saved_model.save(build(lib), str(tmp_path / sub))
        sig = lib.saved_model.load(str(tmp_path / sub)).signatures["serving_default"]
        out = sig(x=lib.constant(x))
        results.append(({k: np.asarray(v) for k, v in out.items()},
                        sorted(sig.structured_outputs)))
    (ours, our_keys), (theirs, their_keys) = results
    assert our_keys == their_keys == ["output_0", "output_1"]
    for k in theirs:
        np.testing.assert_allclose(ours[k], theirs[k])
