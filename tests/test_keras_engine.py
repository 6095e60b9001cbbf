"""The Keras engine: Layer (build once, names, tracking, trainable, losses, configs, weights,
training and masks propagation, dtypes) and the functional graph (KerasTensor, Node, shared
layers, nested structures, operators), compared with tf-keras where it decides."""

from __future__ import annotations

import re

import numpy as np
import pytest

import ipu_gpu as ig
from ipu_gpu.keras import backend as K
from ipu_gpu.keras import layers as L
from ipu_gpu.keras.engine import KerasTensor, Node


@pytest.fixture(autouse=True)
def no_global_seed_left():
    """Tests that set ipu_gpu's global seed leave none behind for later tests."""
    yield
    ig.random.set_seed(None)


@pytest.fixture(scope="module")
def tfk(real_tf):
    return pytest.importorskip("tf_keras")


@pytest.fixture(autouse=True)
def fresh_names():
    K.clear_session()
    yield
    K.clear_session()


class Linear(L.Layer):
    def __init__(self, units=2, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.builds = 0

    def build(self, input_shape):
        self.builds += 1
        self.shape_seen = input_shape
        self.w = self.add_weight("w", (input_shape[-1], self.units), regularizer="l2")
        self.b = self.add_weight("b", (self.units,), initializer="ones", trainable=False)

    def call(self, x):
        return ig.matmul(x, self.w) + self.b


class Block(L.Layer):
    """Sub-layers as an attribute, in a list and in a dict."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.first = L.Dense(3)
        self.stack = [L.Dense(3), L.Dense(2)]
        self.named = {"norm": L.BatchNormalization()}

    def call(self, x, training=None):
        x = self.first(x)
        for layer in self.stack:
            x = layer(x)
        return self.named["norm"](x, training=training)


# ---- Layer ------------------------------------------------------------------------------------
def test_build_once_with_a_tensor_shape():
    layer = Linear()
    x = np.ones((4, 3), np.float32)
    layer(x)
    layer(x)
    assert layer.builds == 1 and layer.built
    assert isinstance(layer.shape_seen, ig.TensorShape) and layer.shape_seen == [4, 3]
    sym = Linear()
    sym(L.Input((5,)))
    assert sym.shape_seen.as_list() == [None, 5]


def test_names_are_unique_and_clear_session_resets_them(tfk):
    names = [L.Dense(1).name, L.Dense(1).name, L.Conv2DTranspose(1, 1).name,
             L.BatchNormalization().name, Linear().name, Linear(name="mine").name]
    tfk.backend.clear_session()
    want = [tfk.layers.Dense(1).name, tfk.layers.Dense(1).name,
            tfk.layers.Conv2DTranspose(1, 1).name, tfk.layers.BatchNormalization().name]
    assert names[:4] == want == ["dense", "dense_1", "conv2d_transpose", "batch_normalization"]
    assert names[4:] == ["linear", "mine"]
    assert L.Input((2,)).name == "input_1"
    K.clear_session()
    assert L.Dense(1).name == "dense" and L.Input((2,)).name == "input_1"
    with pytest.raises(TypeError, match="Expected `name` argument to be a string"):
        L.Dense(1, name=3)


def test_weight_names_follow_name_scopes(tfk):
    x = np.ones((2, 4), np.float32)
    block = Block()
    block(x)
    tfk.backend.clear_session()

    class TBlock(tfk.layers.Layer):
        def __init__(self):
            super().__init__(name="block")
            self.first = tfk.layers.Dense(3)
            self.stack = [tfk.layers.Dense(3), tfk.layers.Dense(2)]
            self.named = {"norm": tfk.layers.BatchNormalization()}

        def call(self, x, training=None):
            x = self.first(x)
            for layer in self.stack:
                x = layer(x)
            return self.named["norm"](x, training=training)

    theirs = TBlock()
    theirs(x)
    assert [w.name for w in block.weights] == [w.name for w in theirs.weights]
    assert block.weights[0].name == "block/dense/kernel:0"
    direct = L.Dense(2)
    direct.build((None, 3))  # built outside a call: no scope, as Keras
    assert direct.kernel.name == "kernel:0"


def test_sublayer_tracking_and_trainable_toggle():
    block = Block()
    block(np.ones((2, 4), np.float32))
    sub = list(block._flatten_layers(include_self=False))
    assert sub == [block.first, *block.stack, block.named["norm"]]
    assert len(block.trainable_weights) == 2 + 2 + 2 + 2
    assert len(block.non_trainable_weights) == 2  # moving mean and variance
    block.trainable = False
    assert all(not layer.trainable for layer in sub)
    assert block.trainable_weights == [] and len(block.non_trainable_weights) == 10
    block.stack[0].trainable = True  # only that one
    assert block.stack[0].trainable_weights and not block.trainable_weights
    block.trainable = True
    assert len(block.trainable_weights) == 8
    block.stack.append(L.Dense(1))  # appended later: still found
    assert block.stack[-1] in list(block._flatten_layers())
    assert block.count_params() == sum(int(np.prod(w.shape)) for w in block.weights)


def test_variables_assigned_as_attributes_are_weights():
    class Scale(L.Layer):
        def __init__(self):
            super().__init__()
            self.scale = ig.Variable(2.0)
            self.frozen = ig.Variable(1.0, trainable=False)

        def call(self, x):
            return x * self.scale + self.frozen

    layer = Scale()
    assert layer.trainable_weights == [layer.scale]
    assert layer.non_trainable_weights == [layer.frozen]


def test_add_weight_arguments():
    layer = L.Layer()
    v = layer.add_weight("v", (2, 3))
    assert v.dtype == np.float32 and v.trainable and v.constraint is None
    i = layer.add_weight("i", (2,), dtype="int32")
    np.testing.assert_array_equal(i.numpy(), [0, 0])
    c = layer.add_weight("c", (3,), constraint="non_neg", trainable=False)
    assert c.constraint is not None and not c.trainable
    m = layer.add_weight("m", (2,), synchronization="ON_READ")
    assert not m.trainable
    with pytest.raises(ValueError, match="ON_READ only for non-trainable"):
        layer.add_weight("bad", (2,), synchronization="ON_READ", trainable=True)
    with pytest.raises(TypeError, match="Unknown keyword argument"):
        layer.add_weight("bad", (2,), foo=1)
    assert layer.weights == [v, i, c, m]


def test_losses_from_calls_callables_and_regularizers():
    class WithLoss(L.Layer):
        def call(self, x):
            self.add_loss(ig.reduce_sum(x))
            return x

    inner = WithLoss()
    outer = L.Dense(2, kernel_regularizer="l1", activity_regularizer="l2")
    x = np.ones((2, 3), np.float32)
    inner(x)
    assert [float(v) for v in inner.losses] == [6.0]
    inner(x)
    assert len(inner.losses) == 1  # cleared at each outermost call
    y = outer(x)
    kernel = outer.kernel.numpy()
    losses = [float(v) for v in outer.losses]
    activity = 0.01 * float(np.sum(y.numpy() ** 2)) / 2
    np.testing.assert_allclose(sorted(losses), sorted([activity, 0.01 * np.abs(kernel).sum()]),
                               rtol=1e-5)
    with ig.GradientTape() as tape:  # regularization losses are computed under the tape
        total = outer.losses[-1]
    assert tape.gradient(total, outer.kernel) is not None
    outer.add_loss(lambda: ig.constant(1.5))
    assert float(outer.losses[-1]) == 1.5
    with pytest.raises(ValueError, match="Expected a symbolic Tensors or a callable"):
        outer.add_loss(ig.constant(1.0))


def test_losses_of_earlier_calls_are_dropped_as_keras_clears_them():
    class Maybe(L.Layer):
        def call(self, x, add=True):
            if add:
                self.add_loss(ig.reduce_sum(x))
            return x

    class Outer(L.Layer):
        def __init__(self):
            super().__init__()
            self.inner = Maybe()
            self.skipped = Maybe()

        def call(self, x, add=True, skip=True):
            if not skip:
                self.skipped(x)
            return self.inner(x, add=add)

    outer, x = Outer(), np.ones((1, 2), np.float32)
    outer(x, skip=False)
    assert len(outer.losses) == 2 and len(outer.inner.losses) == 1
    outer(x)  # `skipped` not called this time: its loss is gone too
    assert len(outer.losses) == 1
    outer(x, add=False)
    assert outer.losses == []
    outer(x)
    outer.inner(x, add=False)  # an outermost call of the sub-layer clears its losses
    assert outer.losses == [] and outer.inner.losses == []


def test_add_metric_keeps_a_mean():
    class WithMetric(L.Layer):
        def call(self, x):
            self.add_metric(ig.reduce_mean(x), name="mean_x")
            return x

    layer = WithMetric()
    layer(np.ones((2, 2), np.float32))
    layer(np.full((2, 2), 3.0, np.float32))
    (metric,) = layer.metrics
    assert metric.name == "mean_x"
    np.testing.assert_allclose(float(metric.result()), 2.0)
    with pytest.raises(ValueError, match="Please provide a name"):
        layer.add_metric(ig.constant(1.0))


def _symbolic_metrics_and_losses(keras, reduce_mean):
    """A functional model with symbolic add_metric and add_loss (tf-keras or ipu_gpu's
    Keras): layer names, metric names before and after a call, the history of a fit, the
    evaluation, the layers of a model rebuilt from its config and their metric values."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    y = np.ones((4, 1), np.float32)
    inp = keras.Input((3,), name="x")
    h = keras.layers.Dense(2, kernel_initializer="ones", name="d")(inp)
    out = keras.layers.Dense(1, kernel_initializer="ones", name="o")(h)
    model = keras.Model(inp, out)
    model.add_metric(reduce_mean(h), name="mean_h")
    model.add_metric(h, name="h_raw")
    model.add_loss(0.1 * reduce_mean(h * h))
    got = [[layer.name for layer in model.layers], [m.name for m in model.metrics]]
    model(x)
    got.append([(m.name, round(float(m.result()), 5)) for m in model.metrics])
    got.append(round(float(sum(np.asarray(v) for v in model.losses)), 5))
    model.compile(keras.optimizers.SGD(0.01), "mse", metrics=["mae"])
    got.append(model.metrics_names)
    history = model.fit(x, y, epochs=2, batch_size=2, shuffle=False, verbose=0).history
    got.append({k: [round(float(v), 4) for v in vs] for k, vs in history.items()})
    got.append({k: round(float(v), 4) for k, v in model.evaluate(
        x, y, batch_size=4, verbose=0, return_dict=True).items()})
    rebuilt = keras.Model.from_config(model.get_config())
    got.append([layer.name for layer in rebuilt.layers])
    rebuilt.set_weights(model.get_weights())
    rebuilt(x)
    got.append([(m.name, round(float(m.result()), 4)) for m in rebuilt.metrics])
    got.append(round(float(sum(np.asarray(v) for v in rebuilt.losses)), 4))
    return got


def test_symbolic_add_metric_and_add_loss_on_a_functional_model_match_tf_keras(tfk, real_tf):
    ours = _symbolic_metrics_and_losses(ig.keras, ig.reduce_mean)
    theirs = _symbolic_metrics_and_losses(tfk, real_tf.reduce_mean)
    assert ours == theirs
    assert ours[0][3:6] == ["tf.math.reduce_mean", "add_metric", "add_metric_1"]
    assert ours[0][-1] == "add_loss" and ours[1] == ["mean_h", "h_raw"]


def test_symbolic_add_metric_errors_match_tf_keras(tfk, real_tf):
    def errors(keras, reduce_mean):
        inp = keras.Input((3,))
        h = keras.layers.Dense(2)(inp)
        model = keras.Model(inp, h)
        out = []
        for value, name in ((reduce_mean(h), None), (reduce_mean(keras.Input((3,))), "cut")):
            try:
                model.add_metric(value, name=name)
            except ValueError as e:
                out.append(str(e).split(" cannot obtain value")[0])
        dense = keras.layers.Dense(1)  # a layer given a symbolic value: the metric exists
        dense.add_metric(reduce_mean(h), name="on_layer")
        out.append([m.name for m in dense.metrics] + [len(model.layers)])
        return out
    assert errors(ig.keras, ig.reduce_mean) == errors(tfk, real_tf.reduce_mean)


def _unknown_rank_calls(keras, tf):
    """Layers without compute_output_shape called on a KerasTensor of unknown rank: output
    shapes and dtypes, a model run on inputs of two ranks, the error of a layer that needs a
    rank-2 input (Dense)."""
    class Twice(keras.layers.Layer):
        def call(self, x):
            return x * 2.0

    class Sum(keras.layers.Layer):
        def call(self, x):
            return tf.reduce_sum(x, axis=-1)

    class Cast(keras.layers.Layer):
        def call(self, x):
            return tf.cast(x[..., :1], "int32")

    inp = keras.Input(type_spec=tf.TensorSpec(None, tf.float32))
    got = [(str(layer()(inp).shape), getattr(layer()(inp).dtype, "name", None))
           for layer in (Twice, Sum, Cast)]
    model = keras.Model(inp, Sum()(Twice()(inp)))
    got.append([np.asarray(model(np.ones(shape, np.float32))).tolist()
                for shape in ((2, 3), (4,))])
    try:
        keras.layers.Dense(3)(inp)
    except ValueError as e:
        got.append(str(e))
    return got


def test_layers_on_a_keras_tensor_of_unknown_rank_match_tf_keras(tfk, real_tf):
    assert _unknown_rank_calls(ig.keras, ig) == _unknown_rank_calls(tfk, real_tf)


def test_get_config_of_a_layer_with_unserializable_arguments_is_keras_error(tfk):
    def message(keras):
        class Holder(keras.layers.Layer):
            def __init__(self, fn, **kwargs):
                super().__init__(**kwargs)
                self.fn = fn

        with pytest.raises(NotImplementedError) as err:
            Holder(lambda x: x).get_config()
        return str(err.value)
    assert message(ig.keras) == message(tfk)


def test_get_weights_set_weights_and_their_errors(tfk):
    dense = L.Dense(2)
    with pytest.raises(ValueError, match="isn't built"):
        dense.count_params()
    dense(np.ones((1, 3), np.float32))
    weights = [np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 2], np.float32)]
    dense.set_weights(weights)
    for a, b in zip(dense.get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    theirs = tfk.layers.Dense(2)
    theirs(np.ones((1, 3), np.float32))
    for bad in ([weights[0]], [weights[0].T, weights[1]]):
        with pytest.raises(ValueError) as want:
            theirs.set_weights(bad)
        with pytest.raises(ValueError) as got:
            dense.set_weights(bad)
        assert (re.sub(r"dense(_\d+)?", "X", str(got.value))
                == re.sub(r"dense(_\d+)?", "X", str(want.value)))
    assert dense.count_params() == theirs.count_params() == 8


def test_config_round_trips():
    dense = L.Dense(3, activation="relu", kernel_regularizer="l2", name="d", input_shape=(4,))
    config = dense.get_config()
    assert config["batch_input_shape"] == (None, 4)
    clone = L.Dense.from_config(config)
    assert clone.get_config() == config and clone.name == "d"
    custom = Linear(units=5, name="lin")
    config = custom.get_config()  # no get_config: the constructor's arguments
    assert config["units"] == 5
    assert Linear.from_config(config).units == 5

    class Opaque(L.Layer):
        def __init__(self, thing, **kwargs):
            super().__init__(**kwargs)
            self.thing = thing

    with pytest.raises(NotImplementedError, match="must override `get_config"):
        Opaque(object()).get_config()
    with pytest.raises(TypeError, match="Error when deserializing class 'Dense'"):
        L.Dense.from_config({"units": 2, "bogus": 1})


def test_training_is_propagated_as_keras_does(tfk):
    seen = []

    class Probe(L.Layer):
        def call(self, x, training=None):
            seen.append(training)
            return x

    class Outer(L.Layer):
        def __init__(self):
            super().__init__()
            self.inner = Probe()

        def call(self, x):  # takes no training argument: it is still propagated
            return self.inner(x)

    x = np.ones((1, 2), np.float32)
    outer = Outer()
    outer(x, training=True)
    outer(x)
    outer.inner(x, training=False)
    with K.learning_phase_scope(1):
        outer(x)
    assert seen == [True, None, False, True]


def test_masks_travel_with_tensors():
    seen = []

    class TakesMask(L.Layer):
        def call(self, x, mask=None):
            seen.append(None if mask is None else mask.numpy())
            return x

    emb = L.Embedding(5, 2, mask_zero=True)
    ids = np.array([[1, 0], [2, 3]], np.int32)
    out = L.Dense(2)(emb(ids))  # Dense passes the mask through
    TakesMask()(out)
    np.testing.assert_array_equal(seen[-1], ids != 0)
    sym = L.Dense(2)(emb(L.Input((None,), dtype="int32")))
    assert sym._keras_mask is not None and sym._keras_mask.shape.as_list() == [None, None]


def test_dtypes_autocast_and_policies():
    dense = L.Dense(2)
    out = dense(np.ones((1, 3), np.float16))  # cast to the layer's compute dtype
    assert out.dtype == np.float32
    d64 = L.Dense(2, dtype="float64")
    assert d64(np.ones((1, 3), np.float32)).dtype == np.float64
    assert d64.kernel.dtype == np.float64 and d64.get_config()["dtype"] == "float64"
    assert L.Dense(1, dtype=ig.float16).dtype == "float16"
    assert L.Dense(1, dtype="mixed_float16").compute_dtype == "float16"
    with pytest.raises(NotImplementedError, match="bfloat16"):  # no bfloat16 in ipu_gpu
        L.Dense(1, dtype="mixed_bfloat16")


def test_layer_errors():
    class NoSuper(L.Layer):
        def __init__(self):
            pass

    with pytest.raises(RuntimeError, match="super\\(\\).__init__\\(\\)"):
        NoSuper()(np.ones((1, 1), np.float32))
    with pytest.raises(TypeError, match="Expected `trainable` argument to be a boolean"):
        L.Dense(1, trainable="yes")
    with pytest.raises(TypeError, match="Layer input_spec must be an instance of InputSpec"):
        L.Dense(1).input_spec = 3


# ---- functional graph -----------------------------------------------------------------------
def test_input_and_keras_tensor(tfk):
    x = L.Input((3, None), batch_size=4, name="img")
    assert isinstance(x, KerasTensor) and x.shape.as_list() == [4, 3, None]
    assert x.name == "img" and x.dtype == np.float32
    assert repr(x) == "<KerasTensor: shape=(4, 3, None) dtype=float32 (created by layer 'img')>"
    (node,) = x._keras_history.layer._inbound_nodes
    assert node.is_input and node.outputs is x
    assert K.is_keras_tensor(x) and not K.is_keras_tensor(ig.constant(1.0))
    assert K.int_shape(x) == (4, 3, None)
    with pytest.raises(ValueError, match="Please provide to Input a `shape`"):
        L.Input()
    with pytest.raises(ValueError, match="Unrecognized keyword arguments"):
        L.Input((2,), foo=1)
    with pytest.raises(TypeError, match="unhashable"):
        hash(x)
    with pytest.raises(TypeError, match="Lambda"):
        np.asarray(x)
    ints = L.Input(shape=(5,), dtype="int32")
    assert ints.dtype == np.int32
    assert L.Input(batch_shape=(2, 3)).shape.as_list() == [2, 3]


def test_shared_layer_records_two_nodes():
    a, b = L.Input((4,)), L.Input((4,))
    dense = L.Dense(3)
    ya, yb = dense(a), dense(b)
    assert len(dense._inbound_nodes) == 2 and len(dense.weights) == 2
    assert ya._keras_history.node_index == 0 and yb._keras_history.node_index == 1
    node = dense._inbound_nodes[1]
    assert node.keras_inputs[0] is b and node.outputs is yb
    assert [layer for layer, *_ in node.iterate_inbound()] == [b._keras_history.layer]
    assert node.parent_nodes == [b._keras_history.layer._inbound_nodes[0]]
    assert b._keras_history.layer._outbound_nodes == [node]
    assert dense.get_input_at(1) is b and dense.get_output_at(0) is ya
    assert dense.input_shape == (None, 4) and dense.output_shape == (None, 3)
    args, kwargs = node.map_arguments(lambda kt: "value")
    assert args == ("value",) and kwargs == {}


def test_functional_graph_walk_reaches_the_inputs():
    x = L.Input((8,))
    h = L.Dense(4, activation="relu")(x)
    h = L.Dropout(0.5)(h)
    y = L.Add()([h, L.Dense(4)(x)])
    seen, stack = [], [y._keras_history.layer._inbound_nodes[y._keras_history.node_index]]
    while stack:
        node = stack.pop()
        seen.append(node.layer.name)
        stack.extend(node.parent_nodes)
    assert seen[0] == "add" and seen.count("input_1") == 2
    assert {"dense", "dense_1", "dropout"} <= set(seen)


def test_nested_inputs_and_outputs_of_a_custom_layer():
    class Split(L.Layer):
        def call(self, inputs):
            a, b = inputs["a"], inputs["b"]
            return [a * 2.0, ig.concat([a, b], axis=-1)], {"sum": ig.reduce_sum(b, axis=-1)}

    a, b = L.Input((3,)), L.Input((None, 2))
    layer = Split()
    (twice, joined), extra = layer({"a": a, "b": L.Reshape((2,))(L.Flatten()(b))})
    assert twice.shape.as_list() == [None, 3]
    assert joined.shape.as_list() == [None, 5]
    assert extra["sum"].shape.as_list() == [None]
    node = layer._inbound_nodes[0]
    assert len(node.keras_inputs) == 2
    assert [t._keras_history.tensor_index for t in (twice, joined, extra["sum"])] == [0, 1, 2]
    assert layer.losses == []


def test_probing_a_custom_layer_leaves_no_trace():
    class Stateful(L.Layer):
        def __init__(self):
            super().__init__()
            self.norm = L.BatchNormalization()

        def call(self, x):
            self.add_loss(ig.reduce_sum(x))
            return self.norm(x, training=True)

    layer = Stateful()
    y = layer(L.Input((None, 3)))
    assert y.shape.as_list() == [None, None, 3]
    assert layer.losses == []
    np.testing.assert_array_equal(layer.norm.moving_mean.numpy(), np.zeros(3))


@pytest.mark.parametrize("op", ["add", "radd", "sub", "rsub", "mul", "rmul", "div", "pow",
                                "neg", "abs", "getitem", "matmul", "gt"])
def test_operators_on_keras_tensors_match_tf_keras(tfk, real_tf, op):
    fns = {
        "add": lambda x, y: x + y, "radd": lambda x, y: 2.0 + x, "sub": lambda x, y: x - y,
        "rsub": lambda x, y: 1.0 - x, "mul": lambda x, y: x * y, "rmul": lambda x, y: 3 * x,
        "div": lambda x, y: x / y, "pow": lambda x, y: x ** 2, "neg": lambda x, y: -x,
        "abs": lambda x, y: abs(x), "getitem": lambda x, y: x[:, 1:3],
        "matmul": lambda x, y: x @ np.ones((4, 2), np.float32), "gt": lambda x, y: x > y,
    }
    fn = fns[op]
    tfk.backend.clear_session()
    ours = fn(L.Input((4,)), L.Input((4,)))
    theirs = fn(tfk.Input((4,)), tfk.Input((4,)))
    assert ours.shape.as_list() == theirs.shape.as_list()
    assert ours.dtype.name == theirs.dtype.name
    assert ours._keras_history.layer.name == theirs._keras_history.layer.name
    layer = ours._keras_history.layer
    x, y = (np.random.default_rng(0).normal(size=(2, 4)).astype(np.float32) for _ in range(2))
    args, kwargs = layer._inbound_nodes[0].map_arguments(
        lambda kt: ig.constant(x if kt._keras_history.layer.name == "input_1" else y))
    got = layer(*args, **kwargs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(fn(ig.constant(x), ig.constant(y))))


def test_activations_on_keras_tensors():
    from ipu_gpu.keras import activations

    y = activations.relu(L.Input((3,)))
    assert isinstance(y, KerasTensor) and y._keras_history.layer.name.startswith("tf.keras")


def test_node_records_call_arguments_without_framework_values():
    class TakesTraining(L.Layer):
        def call(self, x, scale=1.0, training=None):
            return x * scale

    x = L.Input((2,))
    layer = TakesTraining()
    layer(x, scale=2.0)
    node = layer._inbound_nodes[0]
    assert isinstance(node, Node)
    assert node.call_kwargs == {"scale": 2.0}  # training not recorded: the model decides it
    layer(x, training=True)
    assert layer._inbound_nodes[1].call_kwargs == {"training": True}


def test_compute_output_shape_of_custom_layers_by_probing():
    class Outer(L.Layer):
        def call(self, x):
            return ig.reshape(x, (x.shape[0], -1))[:, :5]

    assert Outer().compute_output_shape((None, 3, 4)).as_list() == [None, 5]
    assert Linear(7).compute_output_shape(ig.TensorShape([None, 2])).as_list() == [None, 7]


def test_built_in_layers_infer_shapes_and_dtypes_exactly():
    """Layers that skip the trial run of ``call`` define compute_output_shape themselves, and
    integer inputs keep their dtype through shape layers (Embedding makes floats)."""
    for name in L.__all__:
        cls = getattr(L, name)
        if isinstance(cls, type) and issubclass(cls, L.Layer) and cls._shape_inference:
            assert cls.compute_output_shape is not L.Layer.compute_output_shape, name
    ids = L.Input((4, 2), dtype="int32")
    assert L.Flatten()(ids).dtype == np.int32
    assert L.Reshape((8,))(ids).dtype == np.int32
    assert L.Concatenate()([ids, ids]).dtype == np.int32
    assert L.Embedding(5, 3)(ids).dtype == np.float32
    assert L.Rescaling(0.5)(ids).dtype == np.float32
    assert L.Dense(2)(L.Input((3,), dtype="float16")).dtype == np.float32  # autocast


@pytest.mark.parametrize("kind", ["sparse", "ragged"])
def test_sparse_and_ragged_inputs_are_a_documented_limitation(kind):
    from ipu_gpu.keras.engine.input_layer import InputLayer

    with pytest.raises(NotImplementedError, match="sparse and ragged inputs are not emulated"):
        InputLayer(input_shape=(3,), **{kind: True})
