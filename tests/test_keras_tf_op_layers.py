"""ipu_gpu functions called on KerasTensors while a functional model is built record
``TFOpLambda`` layers, as TF-Keras does (``keras/engine/op_dispatch.py`` and the op registry's
symbolic hook): the names and types in ``model.layers``, output shapes, the numbers of a
forward pass and of training with identical weights, configs and clones, against tf-keras."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu import keras
from ipu_gpu.keras import backend as K
from ipu_gpu.keras import layers as L
from ipu_gpu.keras.engine import KerasTensor
from ipu_gpu.keras.engine.op_dispatch import TFOpLambda
from ipu_gpu.keras.engine.functional import Functional


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


@pytest.fixture(autouse=True)
def fresh_names():
    K.clear_session()
    yield
    K.clear_session()


def _graph(tf, keras_mod):
    """A model through the ops of issue 16: concat, relu, operators, reshape, transpose,
    matmul, reduce_mean, split, a comparison, cast."""
    a = keras_mod.Input((4,), name="a")
    b = keras_mod.Input((4,), name="b")
    h = keras_mod.layers.Dense(6, name="d1")(a)
    x = tf.concat([h, b], axis=-1)
    x = tf.nn.relu(x) * 2.0 + b[:, :1]
    x = tf.reshape(x, (-1, 5, 2))
    x = tf.transpose(x, [0, 2, 1])
    m = tf.matmul(x, tf.transpose(x, [0, 2, 1]))
    r = tf.reduce_mean(x, axis=1)
    s1, s2 = tf.split(r, [2, 3], axis=1)
    c = tf.cast(s1 > 0.5, "float32")
    y = tf.concat([s2, c, tf.reshape(m, (-1, 4))], axis=-1)
    out = keras_mod.layers.Dense(1, name="d2")(y)
    return keras_mod.Model([a, b], out)


def _training_graph(tf, keras_mod):
    """Trainable layers on both sides of op layers (no products of activations, so plain
    SGD stays stable)."""
    a = keras_mod.Input((4,), name="a")
    b = keras_mod.Input((4,), name="b")
    h = keras_mod.layers.Dense(6, activation="tanh", name="d1")(a)
    x = tf.concat([h, b], axis=-1)
    x = tf.nn.relu(x) * 0.5 - b[:, :1]
    x = tf.reshape(x, (-1, 5, 2))
    r = tf.reduce_mean(tf.transpose(x, [0, 2, 1]), axis=1)
    s1, s2 = tf.split(r, [2, 3], axis=1)
    y = tf.concat([s2, tf.matmul(s1, tf.ones((2, 2)))], axis=-1)
    out = keras_mod.layers.Dense(1, name="d2")(y)
    return keras_mod.Model([a, b], out)


def _data(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return ([rng.standard_normal((n, 4)).astype(np.float32) for _ in range(2)],
            rng.standard_normal((n, 1)).astype(np.float32))


def _pair(tfk, build=_graph):
    import tensorflow as tf

    K.clear_session()
    tfk.backend.clear_session()
    ours = build(ig, keras)
    theirs = build(tf, tfk)
    theirs.set_weights(ours.get_weights())
    return ours, theirs


def _layers(model):
    return [(type(layer).__name__, layer.name) for layer in model.layers]


# ---- eager calls are untouched -------------------------------------------------------------
def test_eager_ops_and_their_errors_are_unchanged():
    t = ig.constant([[1.0, 2.0]])
    np.testing.assert_array_equal(ig.concat([t, t], axis=0).numpy(), [[1, 2], [1, 2]])
    np.testing.assert_array_equal(ig.add(t, 1.0).numpy(), [[2, 3]])
    with pytest.raises(TypeError):  # a value that is not a tensor still fails as before
        ig.add(t, object())
    with pytest.raises(TypeError, match="Lambda"):  # code needing a KerasTensor's value
        np.asarray(L.Input((2,)))


# ---- layers, shapes, numbers against tf-keras ----------------------------------------------
def test_op_layers_match_tf_keras(tfk):
    ours, theirs = _pair(tfk)
    assert _layers(ours) == _layers(theirs)
    assert "tf.concat" in [layer.name for layer in ours.layers]
    assert all(isinstance(layer, TFOpLambda) for layer in ours.layers
               if layer.name.startswith("tf."))
    assert ours.output_shape == theirs.output_shape == (None, 1)
    for ol, tl in zip(ours.layers, theirs.layers):
        assert ol.output_shape == tl.output_shape, ol.name
    (xa, xb), _ = _data()
    np.testing.assert_allclose(ours([xa, xb]).numpy(), theirs([xa, xb]).numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(ours.predict([xa, xb], verbose=0),
                               theirs.predict([xa, xb], verbose=0), rtol=1e-5, atol=1e-6)


def test_summary_shows_op_layers():
    model = _graph(ig, keras)
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "tf.concat (TFOpLambda)" in text
    assert "tf.math.reduce_mean" in text and "tf.__operators__.add" in text


@pytest.mark.parametrize("case", ["reduce_mean", "cast", "split", "transpose", "matmul",
                                  "relu", "reshape", "concat", "mul", "radd", "getitem"])
def test_single_function_layer(tfk, case):
    import tensorflow as tf

    def build(t, k):
        a = k.Input((6,), name="a")
        b = k.Input((6,), name="b")
        out = {
            "reduce_mean": lambda: t.reduce_mean(a, axis=1, keepdims=True),
            "cast": lambda: t.cast(a, "int32"),
            "split": lambda: t.split(a, 3, axis=1)[1],
            "transpose": lambda: t.transpose(t.reshape(a, (-1, 2, 3))),
            "matmul": lambda: t.matmul(t.reshape(a, (-1, 2, 3)), t.reshape(b, (-1, 3, 2))),
            "relu": lambda: t.nn.relu(a),
            "reshape": lambda: t.reshape(a, (-1, 12)),
            "concat": lambda: t.concat([a, b, a], axis=1),
            "mul": lambda: a * 3.0,
            "radd": lambda: 1.5 + a,
            "getitem": lambda: a[:, 1:4],
        }[case]()
        return k.Model([a, b], out)

    K.clear_session()
    tfk.backend.clear_session()
    ours, theirs = build(ig, keras), build(tf, tfk)
    assert _layers(ours) == _layers(theirs)
    assert ours.output_shape == theirs.output_shape
    assert ours.output.dtype == theirs.output.dtype.as_numpy_dtype
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(2)]
    np.testing.assert_allclose(ours(xs).numpy(), theirs(xs).numpy(), rtol=1e-6, atol=1e-6)
    # the layer's config names the function as TF-Keras does
    ours_config = ours.get_config()["layers"][-1]
    theirs_config = theirs.get_config()["layers"][-1]
    assert ours_config["class_name"] == theirs_config["class_name"]
    assert ours_config["config"]["function"] == theirs_config["config"]["function"]
    assert ours_config["config"]["name"] == theirs_config["config"]["name"]


@pytest.mark.parametrize("fn", ["expand_dims", "stack", "squeeze"])
def test_shape_functions_reading_the_batch_size(tfk, fn):
    import tensorflow as tf

    def build(t, k):
        a = k.Input((4,), name="a")
        out = {"expand_dims": lambda: t.expand_dims(a, 1),
               "stack": lambda: t.stack([a, a], axis=1),
               "squeeze": lambda: t.squeeze(t.reshape(a, (-1, 1, 4)), axis=1)}[fn]()
        return k.Model(a, out)

    tfk.backend.clear_session()
    ours, theirs = build(ig, keras), build(tf, tfk)
    assert _layers(ours) == _layers(theirs)
    assert ours.output_shape == theirs.output_shape


def test_a_function_of_several_ops_is_one_layer():
    a = L.Input((5,))
    mean, variance = ig.nn.moments(a, axes=[1])
    assert mean._keras_history.layer is variance._keras_history.layer
    model = keras.Model(a, [mean, variance])
    assert [layer.name for layer in model.layers] == ["input_1", "tf.nn.moments"]
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    m, v = model(x)
    np.testing.assert_allclose(m.numpy(), x.mean(1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v.numpy(), x.var(1), rtol=1e-5, atol=1e-6)


def test_probe_finds_a_batch_size_the_function_accepts():
    a = L.Input((4,))
    y = ig.reshape(a, (-1, 8))  # a (None, 4) input reshaped to rows of 8: even batches only
    assert y.shape.as_list() == [None, 8]
    model = keras.Model(a, y)
    assert model(np.ones((6, 4), np.float32)).shape == (3, 8)


def test_function_in_a_user_closure_is_recorded():
    def block(x):
        return ig.reduce_sum(ig.square(x), axis=-1)

    a = L.Input((3,))
    model = keras.Model(a, block(a))
    assert [layer.name for layer in model.layers] == ["input_1", "tf.math.square",
                                                      "tf.math.reduce_sum"]
    np.testing.assert_allclose(model(np.array([[1.0, 2.0, 3.0]], np.float32)).numpy(), [14.0])


# ---- training --------------------------------------------------------------------------------
def test_training_through_op_layers_matches_tf_keras(tfk):
    ours, theirs = _pair(tfk, _training_graph)
    assert _layers(ours) == _layers(theirs)
    x, y = _data(16, seed=3)
    ours.compile(optimizer=keras.optimizers.SGD(0.02), loss="mse")
    theirs.compile(optimizer=tfk.optimizers.SGD(0.02), loss="mse")
    h1 = ours.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    h2 = theirs.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-4)
    for w1, w2 in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(w1, w2, rtol=1e-4, atol=1e-5)


# ---- configs and clones ----------------------------------------------------------------------
def test_clone_model_and_from_config_rebuild_op_layers(tfk):
    import tensorflow as tf

    model = _graph(ig, keras)
    (xa, xb), _ = _data(seed=4)
    expected = model([xa, xb]).numpy()
    clone = keras.models.clone_model(model)
    assert _layers(clone) == _layers(model)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone([xa, xb]).numpy(), expected, rtol=1e-6)
    rebuilt = Functional.from_config(model.get_config())
    assert _layers(rebuilt) == _layers(model)
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_allclose(rebuilt([xa, xb]).numpy(), expected, rtol=1e-6)
    # TF-Keras writes the same function names
    tfk.backend.clear_session()
    theirs = _graph(tf, tfk)
    ours_functions = {c["name"]: c["config"].get("function")
                      for c in model.get_config()["layers"]}
    theirs_functions = {c["name"]: c["config"].get("function")
                        for c in theirs.get_config()["layers"]}
    assert ours_functions == theirs_functions


def test_op_layer_config_round_trip():
    layer = TFOpLambda.from_config({"name": "tf.math.reduce_mean_7", "trainable": True,
                                    "dtype": "float32", "function": "math.reduce_mean"})
    assert layer.function is ig.math.reduce_mean and layer.name == "tf.math.reduce_mean_7"
    assert layer.get_config()["function"] == "math.reduce_mean"
    assert TFOpLambda.from_config({"name": "t", "function": "compat.v1.transpose"}).function \
        is ig.transpose
    assert TFOpLambda.from_config({"name": "g", "function": "__operators__.getitem"}) \
        .symbol == "tf.__operators__.getitem"
    with pytest.raises(ValueError, match="could not be found"):
        TFOpLambda.from_config({"name": "n", "function": "math.no_such_function"})


def test_keras_tensors_and_eager_values_mix():
    a = L.Input((3,))
    w = ig.constant([[1.0], [2.0], [3.0]])
    y = ig.matmul(a, w) + ig.constant([0.5])
    assert isinstance(y, KerasTensor) and y.shape.as_list() == [None, 1]
    model = keras.Model(a, y)
    np.testing.assert_allclose(model(np.ones((2, 3), np.float32)).numpy(), [[6.5], [6.5]])


def test_operator_layers_rebuild_from_config(tfk):
    import tensorflow as tf

    def build(t, k):
        a = k.Input((3,), name="a")
        b = k.Input((3,), name="b")
        y = (2.0 - a) * b + t.matmul(a, t.ones((3, 3)))
        return k.Model([a, b], [y, -y[:, :2], t.reduce_sum(y, axis=-1) > 1.0])

    K.clear_session()
    tfk.backend.clear_session()
    model, theirs = build(ig, keras), build(tf, tfk)
    assert _layers(model) == _layers(theirs)
    xs = [np.random.default_rng(5).standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
    for ours_out, theirs_out in zip(model(xs), theirs(xs)):
        np.testing.assert_allclose(ours_out.numpy(), theirs_out.numpy(), rtol=1e-6)
    for rebuilt in (Functional.from_config(model.get_config()),
                    keras.models.clone_model(model)):
        assert _layers(rebuilt) == _layers(model)
        for got, want in zip(rebuilt(xs), model(xs)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_eager_tensor_operand_on_the_left():
    a = L.Input((3,))
    c = ig.constant([1.0, 2.0, 4.0])
    outputs = [c * a, c - a, c / a, c < a]
    assert [y._keras_history.layer.name for y in outputs] == [
        "tf.math.multiply", "tf.math.subtract", "tf.math.truediv", "tf.math.greater"]
    model = keras.Model(a, outputs)
    x = np.full((1, 3), 2.0, np.float32)
    got = [t.numpy() for t in model(x)]
    c = np.array([1.0, 2.0, 4.0], np.float32)
    for g, want in zip(got, [c * x, c - x, c / x, c < x]):
        np.testing.assert_array_equal(g, want)


def test_keras_tensor_captured_in_a_layer_call_is_refused():
    a = L.Input((3,))
    with pytest.raises(TypeError, match="Lambda"):
        L.Lambda(lambda x: x + ig.reduce_sum(a))(a)


def test_configs_with_op_layers_rebuild_through_every_entry_point():
    """``Model.from_config``, ``models.model_from_config`` and ``clone_model`` rebuild op
    layers, the Keras activations called on KerasTensors included, with the same outputs."""
    import ipu_gpu as ig
    from ipu_gpu import keras

    a = keras.Input((4,))
    y = keras.activations.relu(keras.layers.Dense(3)(a))
    model = keras.Model(a, ig.concat([y, y * 2.0], axis=-1))
    config = model.get_config()
    rebuilt = [keras.Model.from_config(config),
               keras.models.model_from_config({"class_name": "Functional", "config": config}),
               keras.models.clone_model(model)]
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    want = model.predict(x, verbose=0)
    for other in rebuilt:
        other.set_weights(model.get_weights())
        assert [lay.name for lay in other.layers] == [lay.name for lay in model.layers]
        np.testing.assert_array_equal(other.predict(x, verbose=0), want)
