"""keras.Model structure against tf_keras: functional models (several inputs and outputs,
shared layers, dict outputs, loss weights), Sequential (add/pop, deferred building), layer
access, summary() text, HDF5 weight files both ways, clone_model, and Keras's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ipu_gpu as tf
from ipu_gpu.keras import backend as keras_backend
from ipu_gpu.keras import layers, optimizers
from ipu_gpu.keras.engine.input_layer import Input
from ipu_gpu.keras.models import Model, Sequential, clone_model


@pytest.fixture(scope="module")
def K(real_tf):
    return pytest.importorskip("tf_keras")


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                               rtol=rtol, atol=atol)


class _Ours:
    layers = layers
    Sequential = Sequential
    Model = Model
    Input = staticmethod(Input)


def _two_tower(lib):
    """Two inputs, a shared Dense, a concatenation, two named outputs."""
    L = lib.layers
    a = lib.Input(shape=(4,), name="a")
    b = lib.Input(shape=(4,), name="b")
    shared = L.Dense(5, activation="tanh", name="shared")
    merged = L.Concatenate(name="concat")([shared(a), shared(b)])
    out1 = L.Dense(1, name="reg")(merged)
    out2 = L.Dense(3, activation="softmax", name="cls")(merged)
    return lib.Model(inputs=[a, b], outputs=[out1, out2], name="towers")


def _summary_lines(model):
    lines = []
    model.summary(print_fn=lines.append)
    return lines


def test_functional_structure_matches_tf_keras(K):
    keras_backend.clear_session()  # the same layer names whichever tests ran before
    K.backend.clear_session()
    ours, theirs = _two_tower(_Ours), _two_tower(K)
    assert [layer.name for layer in ours.layers] == [layer.name for layer in theirs.layers]
    assert ours.output_names == theirs.output_names == ["reg", "cls"]
    assert ours.input_names == ["a", "b"]
    assert [w.name for w in ours.weights] == [w.name for w in theirs.weights]
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
    assert ours.input_shape == theirs.input_shape
    assert ours.output_shape == theirs.output_shape
    assert ours.get_layer("shared") is ours.layers[2]
    assert ours.get_layer(index=0).name == "a"
    theirs.set_weights(ours.get_weights())
    rng = np.random.default_rng(0)
    xa, xb = rng.normal(size=(6, 4)).astype("float32"), rng.normal(size=(6, 4)).astype("float32")
    for o, t in zip(ours.predict([xa, xb], verbose=0), theirs.predict([xa, xb], verbose=0)):
        _close(o, t)
    # dict inputs are matched by input name
    for o, t in zip(ours({"b": xb, "a": xa}), theirs({"b": xb, "a": xa})):
        _close(o.numpy(), t.numpy())


def test_multi_output_training_matches_tf_keras(K):
    ours, theirs = _two_tower(_Ours), _two_tower(K)
    theirs.set_weights(ours.get_weights())
    rng = np.random.default_rng(1)
    xa, xb = rng.normal(size=(30, 4)).astype("float32"), rng.normal(size=(30, 4)).astype("float32")
    y1 = rng.normal(size=(30, 1)).astype("float32")
    y2 = rng.integers(0, 3, size=(30,))
    compile_args = dict(loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"},
                        loss_weights={"reg": 0.5, "cls": 2.0},
                        metrics={"cls": ["accuracy"], "reg": ["mae"]})
    ours.compile(optimizers.Adam(0.01), **compile_args)
    theirs.compile(K.optimizers.legacy.Adam(0.01), **compile_args)
    kwargs = dict(batch_size=8, epochs=2, shuffle=False, verbose=0)
    h_ours = ours.fit([xa, xb], {"reg": y1, "cls": y2}, **kwargs)
    h_theirs = theirs.fit([xa, xb], {"reg": y1, "cls": y2}, **kwargs)
    assert list(h_ours.history) == list(h_theirs.history)
    for key in h_theirs.history:
        _close(h_ours.history[key], h_theirs.history[key])
    assert ours.metrics_names == theirs.metrics_names
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        _close(a, b)


def test_summary_text_matches_tf_keras(K):
    for build in (_two_tower, _dense_stack):
        ours, theirs = build(_Ours), build(K)
        assert _summary_lines(ours) == _summary_lines(theirs)
    ours, theirs = _dense_stack(_Ours), _dense_stack(K)
    kw = dict(line_length=80, positions=[0.5, 0.8, 1.0], show_trainable=True)
    lines_o, lines_t = [], []
    ours.summary(print_fn=lines_o.append, **kw)
    theirs.summary(print_fn=lines_t.append, **kw)
    assert lines_o == lines_t


def _dense_stack(lib):
    L = lib.layers
    model = lib.Sequential(name="stack")
    model.add(lib.Input(shape=(6,), name="x"))
    model.add(L.Dense(4, name="d1"))
    model.add(L.BatchNormalization(name="bn"))
    model.add(L.Dense(2, name="d2"))
    return model


def test_hdf5_weights_round_trip_both_ways(K, tmp_path):
    ours, theirs = _dense_stack(_Ours), _dense_stack(K)
    rng = np.random.default_rng(3)
    ours.set_weights([rng.normal(size=w.shape).astype("float32") for w in ours.get_weights()])
    path = str(tmp_path / "ours.h5")
    ours.save_weights(path)
    theirs.load_weights(path)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_array_equal(a, b)
    theirs.set_weights([rng.normal(size=w.shape).astype("float32") for w in theirs.get_weights()])
    path = str(tmp_path / "theirs.h5")
    theirs.save_weights(path)
    ours.load_weights(path)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_array_equal(a, b)
    towers_o, towers_t = _two_tower(_Ours), _two_tower(K)
    towers_t.save_weights(str(tmp_path / "t.h5"))
    towers_o.load_weights(str(tmp_path / "t.h5"), by_name=True)
    for a, b in zip(towers_o.get_weights(), towers_t.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=r"Weight count mismatch for layer #1 \(named reg in the "
                                         r"current model, bn in the save file\)"):
        towers_o.load_weights(path)
    with pytest.raises(ValueError, match="Layer count mismatch when loading weights from file. "
                                         "Model expected 1 layers, found 3 saved layers."):
        Sequential([layers.Dense(2, input_shape=(6,))]).load_weights(path)


def test_sequential_building_add_and_pop():
    model = Sequential()
    model.add(layers.Dense(4))
    model.add(layers.Dense(2, name="top"))
    assert not model.built
    with pytest.raises(ValueError, match="This model has not yet been built"):
        model.summary()
    out = model(np.ones((3, 5), "float32"))
    assert tuple(out.shape) == (3, 2)
    assert model.built and model.output_shape == (None, 2)
    assert [w.shape for w in model.weights] == [(5, 4), (4,), (4, 2), (2,)]
    model.pop()
    assert [layer.name for layer in model.layers] == [model.layers[0].name]
    assert tuple(model(np.ones((3, 5), "float32")).shape) == (3, 4)
    with pytest.raises(TypeError, match="The added layer must be an instance of class Layer"):
        model.add("dense")
    with pytest.raises(ValueError, match="should have unique names"):
        model.add(layers.Dense(1, name=model.layers[0].name))
    explicit = Sequential([layers.Dense(3, input_shape=(2,))])
    assert explicit.built and explicit.input_shape == (None, 2)
    deferred = Sequential([layers.Dense(3)])
    deferred.build((None, 7))
    assert deferred.weights[0].shape == (7, 3)
    with pytest.raises(TypeError, match="There are no layers in the model"):
        Sequential().pop()


def test_get_layer_errors_and_model_call_errors():
    model = Sequential([layers.Dense(2, input_shape=(3,), name="only")])
    with pytest.raises(ValueError, match="Provide only a layer name or a layer index"):
        model.get_layer("only", 0)
    with pytest.raises(ValueError, match="Was asked to retrieve layer at index 5 but model only "
                                         "has 1 layers"):
        model.get_layer(index=5)
    with pytest.raises(ValueError, match="No such layer: nope. Existing layers are: "
                                         r"\['only'\]"):
        model.get_layer("nope")
    with pytest.raises(ValueError, match="Provide either a layer name or layer index"):
        model.get_layer()
    with pytest.raises(NotImplementedError, match="Unimplemented `tf.keras.Model.call\\(\\)`"):
        Model()(np.ones((1, 2), "float32"))
    a = Input(shape=(2,))
    b = Input(shape=(2,))
    with pytest.raises(ValueError, match="Graph disconnected"):
        Model(inputs=a, outputs=layers.Add()([a, b]))


def test_subclass_with_functional_init_and_build():
    class Wrapped(Model):
        def __init__(self):
            x = Input(shape=(3,))
            super().__init__(inputs=x, outputs=layers.Dense(2)(x))

    model = Wrapped()
    assert model._is_graph_network and model.output_shape == (None, 2)
    assert isinstance(model, Wrapped)

    class Net(Model):
        def __init__(self):
            super().__init__(name="net")
            self.d = layers.Dense(4)

        def call(self, x):
            return self.d(x)

    net = Net()
    net.build((None, 6))
    assert net.built and net.weights[0].shape == (6, 4)
    lines = []
    net.summary(print_fn=lines.append)
    assert lines[0] == 'Model: "net"' and "multiple" in lines[4]


def test_clone_model():
    model = _two_tower(_Ours)
    clone = clone_model(model)
    assert [layer.name for layer in clone.layers] == [layer.name for layer in model.layers]
    assert all(a is not b for a, b in zip(clone.weights, model.weights))
    clone.set_weights(model.get_weights())
    x = [np.ones((2, 4), "float32"), np.zeros((2, 4), "float32")]
    for o, c in zip(model.predict(x, verbose=0), clone.predict(x, verbose=0)):
        np.testing.assert_array_equal(o, c)
    seq = _dense_stack(_Ours)
    seq_clone = clone_model(seq)
    assert isinstance(seq_clone, Sequential) and seq_clone.input_shape == (None, 6)

    class Sub(Model):
        def call(self, x):
            return x

    with pytest.raises(ValueError, match="got a subclassed model instead"):
        clone_model(Sub())


def test_model_weights_order_and_trainable():
    model = _dense_stack(_Ours)
    bn = model.get_layer("bn")
    names = [w.name for w in model.weights]
    assert names == ["d1/kernel:0", "d1/bias:0", "bn/gamma:0", "bn/beta:0",
                     "bn/moving_mean:0", "bn/moving_variance:0", "d2/kernel:0", "d2/bias:0"]
    assert len(model.trainable_weights) == 6 and len(model.non_trainable_weights) == 2
    bn.trainable = False
    assert len(model.trainable_weights) == 4
    model.trainable = False
    assert model.trainable_weights == [] and len(model.non_trainable_weights) == 8
    x = tf.constant(np.ones((2, 6), "float32"))
    assert tuple(model(x).shape) == (2, 2)


def test_whole_model_hdf5_files_both_ways(K, tmp_path):
    from ipu_gpu.keras.models import load_model, model_from_json

    rng = np.random.default_rng(4)
    x = rng.normal(size=(20, 4)).astype("float32")
    y = (x.sum(axis=1) > 0).astype("int32")
    theirs = K.Sequential([K.layers.Dense(8, activation="relu", input_shape=(4,)),
                           K.layers.Dense(2)])
    theirs.compile(K.optimizers.legacy.Adam(0.01), "sparse_categorical_crossentropy",
                   metrics=["accuracy"])
    theirs.fit(x, y, epochs=1, verbose=0)
    with pytest.warns(UserWarning, match="This file format is considered legacy"):
        theirs.save(str(tmp_path / "k.h5"))
    ours = load_model(str(tmp_path / "k.h5"))
    assert isinstance(ours, Sequential) and ours._is_compiled
    assert int(ours.optimizer.iterations.numpy()) == 1
    _close(ours.predict(x, verbose=0), theirs.predict(x, verbose=0))
    for a, b in zip(ours.optimizer.get_weights(), theirs.optimizer.get_weights()):
        _close(a, b)
    ours.save(str(tmp_path / "o.h5"))
    back = K.models.load_model(str(tmp_path / "o.h5"))
    _close(back.predict(x, verbose=0), ours.predict(x, verbose=0))

    towers = _two_tower(_Ours)
    towers.compile(optimizers.SGD(0.1), loss=["mse", "sparse_categorical_crossentropy"])
    towers.save(str(tmp_path / "t.h5"))
    loaded = load_model(str(tmp_path / "t.h5"))
    assert [layer.name for layer in loaded.layers] == [layer.name for layer in towers.layers]
    xs = [x, x[::-1].copy()]
    for a, b in zip(loaded.predict(xs, verbose=0), towers.predict(xs, verbose=0)):
        np.testing.assert_array_equal(a, b)
    k_towers = K.models.load_model(str(tmp_path / "t.h5"))
    for a, b in zip(k_towers.predict(xs, verbose=0), towers.predict(xs, verbose=0)):
        _close(a, b)
    assert [layer.name for layer in model_from_json(towers.to_json()).layers] == \
        [layer.name for layer in towers.layers]

    class Sub(Model):
        def call(self, x):
            return x

    with pytest.raises(NotImplementedError, match="Saving the model to HDF5 format requires the "
                                                  "model to be a Functional model or a "
                                                  "Sequential model"):
        Sub().save(str(tmp_path / "s.h5"))
